#include "tools/seedloader_pack/shard_writer.h"

#include <array>
#include <cstdio>
#include <cstring>

#include "seedloader/error.h"

namespace seedloader::pack {
namespace {

using Block = std::array<std::uint8_t, 512>;

// Largest size an 11-digit octal field holds.
constexpr std::uint64_t kMaxMemberBytes = (std::uint64_t{1} << 33) - 1;

// Writes `value` as `width - 1` zero-padded octal digits and a NUL at `field`.
void put_octal(std::uint8_t* field, std::size_t width, std::uint64_t value) {
  std::snprintf(reinterpret_cast<char*>(field), width, "%0*llo",
                static_cast<int>(width - 1), static_cast<unsigned long long>(value));
}

// The ustar header of a regular file (POSIX.1-1988 field offsets).
Block ustar_header(const std::string& name, std::uint64_t size) {
  Block h{};
  std::memcpy(h.data(), name.data(), name.size());  // name[100] at 0
  put_octal(h.data() + 100, 8, 0644);               // mode
  put_octal(h.data() + 108, 8, 0);                  // uid
  put_octal(h.data() + 116, 8, 0);                  // gid
  put_octal(h.data() + 124, 12, size);              // size
  put_octal(h.data() + 136, 12, 0);                 // mtime
  h[156] = '0';                                     // typeflag: regular file
  std::memcpy(h.data() + 257, "ustar", 6);          // magic, NUL-terminated
  std::memcpy(h.data() + 263, "00", 2);             // version
  // The checksum is the byte sum with its own field read as eight spaces, stored
  // as six octal digits, a NUL and a space.
  std::memset(h.data() + 148, ' ', 8);
  unsigned sum = 0;
  for (std::uint8_t b : h) sum += b;
  std::snprintf(reinterpret_cast<char*>(h.data() + 148), 7, "%06o", sum);
  h[155] = ' ';
  return h;
}

}  // namespace

ShardWriter::ShardWriter(const std::string& dir, std::string name)
    : name_(name), file_(dir, std::move(name)) {}

void ShardWriter::add_member(const std::string& name,
                             std::span<const std::uint8_t> data) {
  if (name.empty() || name.size() > 100) {
    throw Error(file_.final_path() + ": member name '" + name +
                "' does not fit a ustar header (1 to 100 bytes)");
  }
  if (data.size() > kMaxMemberBytes) {
    throw Error(file_.final_path() + ": member " + name + " has " +
                std::to_string(data.size()) + " bytes; a ustar member holds at most " +
                std::to_string(kMaxMemberBytes));
  }
  const Block header = ustar_header(name, data.size());
  file_.write(header);
  file_.write(data);
  static constexpr Block kZeros{};
  const std::size_t pad = (512 - data.size() % 512) % 512;
  file_.write(std::span(kZeros.data(), pad));
}

shards::ShardEntry ShardWriter::finish() {
  static constexpr Block kZeros{};
  file_.write(kZeros);
  file_.write(kZeros);
  shards::ShardEntry info;
  info.name = name_;
  info.bytes = file_.size();
  info.samples = samples_;
  info.xxh64 = file_.commit();
  return info;
}

}  // namespace seedloader::pack
