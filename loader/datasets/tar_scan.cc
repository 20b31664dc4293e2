#include "loader/datasets/tar_scan.h"

#include <archive.h>
#include <archive_entry.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <unordered_set>
#include <vector>

#include "loader/datasets/image_decode.h"
#include "seedloader/error.h"

namespace seedloader {
namespace {

// True when `name` is safe as a key: relative, no ".." component.
bool safe_member_name(const std::string& name) {
  if (name.empty() || name[0] == '/') return false;
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    if (name.compare(start, end - start, "..") == 0) return false;
    start = end + 1;
  }
  return true;
}

// What libarchive reads a shard through: pread from a position of its own, never
// the descriptor's offset, which forked processes holding the same descriptor
// share (and other reads may have moved). Offsets libarchive counts
// (archive_filter_bytes) are then positions in the file.
struct PreadSource {
  int fd;
  std::uint64_t at = 0;
  std::vector<char> buffer = std::vector<char>(1 << 16);

  static la_ssize_t read(archive* a, void* self, const void** out) {
    auto* s = static_cast<PreadSource*>(self);
    ssize_t n;
    do {
      n = ::pread(s->fd, s->buffer.data(), s->buffer.size(), static_cast<off_t>(s->at));
    } while (n < 0 && (errno == EINTR || errno == EAGAIN));
    if (n < 0) {
      archive_set_error(a, errno, "read failed at byte %llu: %s",
                        static_cast<unsigned long long>(s->at), std::strerror(errno));
      return -1;
    }
    s->at += static_cast<std::uint64_t>(n);
    *out = s->buffer.data();
    return n;
  }
  // Skipping is moving the position: nothing is read.
  static la_int64_t skip(archive*, void* self, la_int64_t request) {
    static_cast<PreadSource*>(self)->at += static_cast<std::uint64_t>(request);
    return request;
  }
};

}  // namespace

MemberKind member_kind(std::string_view ext, std::string_view label_ext) {
  if (ext == label_ext) return MemberKind::kLabel;
  if (ext == kRestartExt) return MemberKind::kRestart;
  if (is_image_extension(ext)) return MemberKind::kImage;
  return MemberKind::kIgnored;
}

void scan_tar_shard(const FileHandle& file, const std::string& label_ext,
                    const std::function<void(const ScannedSample&)>& sample) {
  const std::string& path = file.path();
  const std::uint64_t shard_size = file.size();
  std::unique_ptr<archive, int (*)(archive*)> a(archive_read_new(), &archive_read_free);
  archive_read_support_format_tar(a.get());
  PreadSource source{file.fd()};
  if (archive_read_open2(a.get(), &source, nullptr, &PreadSource::read,
                         &PreadSource::skip, nullptr) != ARCHIVE_OK) {
    throw DataError("shard " + path + ": " + archive_error_string(a.get()));
  }
  bool open_sample = false;
  ScannedSample current;
  std::string key, image_ext;                 // what current's views show
  bool have[3] = {false, false, false};       // image, label, restart
  std::unordered_set<std::string> seen_keys;  // keys finished in this shard

  auto finish = [&]() {
    if (!open_sample) return;
    if (!have[0] || !have[1]) {
      throw DataError("shard " + path + ": sample '" + key + "' has no " +
                      (have[0] ? "." + label_ext + " label" : "image") + " member");
    }
    current.key = key;
    current.image_ext = image_ext;
    sample(current);
    seen_keys.insert(key);
    open_sample = have[0] = have[1] = have[2] = false;
    current = ScannedSample{};
  };

  archive_entry* entry = nullptr;
  while (true) {
    const int rc = archive_read_next_header(a.get(), &entry);
    if (rc == ARCHIVE_EOF) break;
    // ARCHIVE_WARN is not fatal by itself: libarchive warns, for instance, when a
    // pax header's UTF-8 name has no spelling in the current locale (LANG=C), and
    // still hands over the entry. Everything below checks the entry anyway.
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
      throw DataError("shard " + path + ": " +
                      (archive_error_string(a.get()) ? archive_error_string(a.get())
                                                     : "unreadable tar header"));
    }
    if (archive_filter_count(a.get()) > 1) {
      throw DataError("shard " + path + " is compressed; random access needs plain tar");
    }
    // The UTF-8 name when libarchive has one (pax names are UTF-8), so keys are
    // the same in every locale; else the header's bytes as they are.
    const char* raw_name = archive_entry_pathname_utf8(entry);
    if (!raw_name) raw_name = archive_entry_pathname(entry);
    if (!raw_name) {
      throw DataError("shard " + path + ": a member's name cannot be read" +
                      (archive_error_string(a.get())
                           ? std::string(": ") + archive_error_string(a.get())
                           : std::string()));
    }
    const std::string name = raw_name;
    const auto where = [&] { return "shard " + path + ": member '" + name + "'"; };
    if (!safe_member_name(name)) {
      throw DataError(where() + ": absolute or '..' names are rejected");
    }
    if (archive_entry_filetype(entry) == AE_IFDIR) continue;
    if (archive_entry_hardlink(entry) || archive_entry_symlink(entry) ||
        archive_entry_filetype(entry) != AE_IFREG) {
      throw DataError(where() + ": links and special files are rejected");
    }
    if (archive_entry_sparse_count(entry) > 0 || !archive_entry_size_is_set(entry)) {
      throw DataError(where() + ": sparse members are rejected");
    }
    // The tar reader has consumed this member's headers: the position is where
    // its data starts.
    const auto offset = static_cast<std::uint64_t>(archive_filter_bytes(a.get(), 0));
    const auto size = static_cast<std::uint64_t>(archive_entry_size(entry));
    if (offset > shard_size || size > shard_size - offset) {
      throw DataError(where() + ": data runs past the end of the shard");
    }
    const std::size_t slash = name.rfind('/');
    const std::size_t dot = name.find('.', slash == std::string::npos ? 0 : slash + 1);
    if (dot == std::string::npos) continue;  // no extension: not part of a sample
    const std::string member_key = name.substr(0, dot);
    const std::string_view ext = std::string_view(name).substr(dot + 1);
    if (!open_sample || member_key != key) {
      finish();
      if (seen_keys.count(member_key) != 0) {
        throw DataError(where() + ": sample '" + member_key +
                        "' is split across the shard");
      }
      key = member_key;
      open_sample = true;
    }
    const MemberKind kind = member_kind(ext, label_ext);
    if (kind == MemberKind::kIgnored) continue;
    static constexpr const char* kWhat[] = {"image", "label", "restart index"};
    const int k = kind == MemberKind::kImage ? 0 : kind == MemberKind::kLabel ? 1 : 2;
    if (have[k])
      throw DataError(where() + ": a second " + kWhat[k] + " for '" + key + "'");
    have[k] = true;
    const MemberSpan span{offset, size};
    if (k == 0) {
      current.image = span;
      image_ext = ext;
    } else if (k == 1) {
      current.label = span;
    } else {
      current.restart = span;
    }
  }
  finish();
}

}  // namespace seedloader
