#include "loader/datasets/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "seedloader/error.h"

namespace seedloader {
namespace {

using nlohmann::json;

bool checked_mul(std::uint64_t a, std::uint64_t b, std::uint64_t& out) {
  return !__builtin_mul_overflow(a, b, &out);
}

// product(shape) * elem, or false on overflow.
bool byte_size(const std::vector<std::uint64_t>& shape, std::size_t elem,
               std::uint64_t& out) {
  out = elem;
  for (std::uint64_t d : shape) {
    if (!checked_mul(out, d, out)) return false;
  }
  return true;
}

SafetensorsTensor parse_entry(const std::string& name, const json& entry,
                              std::uint64_t data_size, const std::string& path) {
  auto bad = [&](const std::string& why) {
    return DataError("safetensors " + path + ": tensor '" + name + "': " + why);
  };
  if (!entry.is_object()) throw bad("entry is not an object");
  SafetensorsTensor t;
  t.name = name;
  const auto dtype = entry.find("dtype");
  if (dtype == entry.end() || !dtype->is_string()) throw bad("no dtype");
  t.dtype = dtype->get<std::string>();
  const std::size_t elem = safetensors_dtype_size(t.dtype);
  if (elem == 0) throw bad("unknown dtype '" + t.dtype + "'");
  const auto shape = entry.find("shape");
  if (shape == entry.end() || !shape->is_array()) throw bad("no shape");
  for (const json& d : *shape) {
    if (!d.is_number_unsigned()) throw bad("shape holds a non-integer or negative entry");
    t.shape.push_back(d.get<std::uint64_t>());
  }
  const auto offsets = entry.find("data_offsets");
  if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2 ||
      !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned()) {
    throw bad("data_offsets must be two non-negative integers");
  }
  t.begin = (*offsets)[0].get<std::uint64_t>();
  t.end = (*offsets)[1].get<std::uint64_t>();
  if (t.begin > t.end || t.end > data_size) {
    throw bad("data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
              "] fall outside the " + std::to_string(data_size) + "-byte data section");
  }
  std::uint64_t bytes = 0;
  if (!byte_size(t.shape, elem, bytes) || bytes != t.end - t.begin) {
    throw bad("shape x dtype size does not match its " + std::to_string(t.end - t.begin) +
              " bytes");
  }
  return t;
}

// An open JSON container while the header is parsed, with the items seen in it.
struct Container {
  bool array;
  std::size_t items;
};

// Containers may open at depths 0 (the header), 1 (an entry, __metadata__) and
// 2 (shape, data_offsets); nothing in the format nests deeper.
constexpr int kMaxHeaderDepth = 2;
// Items in one container below the header: an array (a shape: numpy allows 64
// dimensions) or an object (an entry's keys, __metadata__'s pairs).
constexpr std::size_t kMaxArrayItems = 64;
constexpr std::size_t kMaxObjectKeys = 4096;

void count_item(Container& c, nlohmann::json::parse_event_t event,
                const std::string& path) {
  // An object counts its keys; its values are not items of their own.
  if (c.array == (event == nlohmann::json::parse_event_t::key)) return;
  const std::size_t cap = c.array ? kMaxArrayItems : kMaxObjectKeys;
  if (++c.items > cap) {
    throw DataError("safetensors " + path + ": header " + (c.array ? "array" : "object") +
                    " holds more than " + std::to_string(cap) +
                    (c.array ? " items" : " keys"));
  }
}

}  // namespace

std::size_t safetensors_dtype_size(const std::string& d) {
  if (d == "BOOL" || d == "U8" || d == "I8" || d == "F8_E5M2" || d == "F8_E4M3") return 1;
  if (d == "I16" || d == "U16" || d == "F16" || d == "BF16") return 2;
  if (d == "I32" || d == "U32" || d == "F32") return 4;
  if (d == "I64" || d == "U64" || d == "F64") return 8;
  return 0;
}

SafetensorsFile::SafetensorsFile(const std::string& path, std::uint64_t max_header_bytes)
    : file_(path) {
  const std::uint64_t size = file_.size();
  if (size < 8) throw DataError("safetensors " + path + ": shorter than 8 bytes");
  std::vector<std::uint8_t> bytes;
  file_.read_at(0, 8, bytes);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
  if (n > size - 8 || n > max_header_bytes) {
    throw DataError("safetensors " + path + ": header length " + std::to_string(n) +
                    " exceeds the file (" + std::to_string(size) +
                    " bytes) or the cap (" + std::to_string(max_header_bytes) + ")");
  }
  data_start_ = 8 + n;
  const std::uint64_t data_size = size - data_start_;
  file_.read_at(8, n, bytes);
  // Each top-level entry is checked and dropped as soon as its closing brace is
  // read, so the parse never holds more than one entry's values, and every
  // container is bounded in depth and width: a header of nested or repeated
  // brackets costs time, not memory.
  std::vector<Container> open;
  std::string name;
  std::set<std::string> names;
  auto bad = [&](const std::string& why) {
    return DataError("safetensors " + path + ": " + why);
  };
  json::parser_callback_t check = [&](int depth, json::parse_event_t event,
                                      json& parsed) {
    using E = json::parse_event_t;
    const bool starts = event == E::object_start || event == E::array_start;
    if (starts || event == E::key || event == E::value) {
      if (open.size() > 1) count_item(open.back(), event, path);  // not the header's
    }
    if (starts) {
      if (depth > kMaxHeaderDepth)
        throw bad("header nests deeper than a safetensors header does");
      if (depth == 0 && event == E::array_start) throw bad("header is not an object");
      open.push_back({event == E::array_start, 0});
      return true;
    }
    if (event == E::object_end || event == E::array_end) open.pop_back();
    if (depth != 1) return true;
    if (event == E::key) {
      name = parsed.get<std::string>();
      if (!names.insert(name).second) throw bad("'" + name + "' appears twice");
      return true;
    }
    if (event == E::value || event == E::object_end || event == E::array_end) {
      if (name == "__metadata__") {
        if (!parsed.is_object()) throw bad("bad __metadata__");
        for (const auto& [k, v] : parsed.items()) {
          if (!v.is_string()) throw bad("__metadata__ '" + k + "' is not a string");
          metadata_[k] = v.get<std::string>();
        }
      } else {
        tensors_.push_back(parse_entry(name, parsed, data_size, path));
      }
      return false;  // checked and kept elsewhere: drop it from the parse
    }
    return true;
  };
  json header;
  try {
    header = json::parse(bytes.begin(), bytes.end(), check);
  } catch (const json::exception& e) {
    throw bad(std::string("header is not JSON: ") + e.what());
  } catch (const std::bad_alloc&) {
    throw bad("out of memory parsing the " + std::to_string(n) + "-byte header");
  }
  if (!header.is_object()) throw bad("header is not an object");
  std::sort(tensors_.begin(), tensors_.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  std::vector<const SafetensorsTensor*> by_offset;
  for (const auto& t : tensors_) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](auto* a, auto* b) { return a->begin < b->begin; });
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    if (by_offset[i]->begin < by_offset[i - 1]->end) {
      throw DataError("safetensors " + path + ": tensors '" + by_offset[i - 1]->name +
                      "' and '" + by_offset[i]->name + "' overlap");
    }
  }
  // The format has no room for bytes no tensor owns after the data: a file that
  // has them was appended to or cut from something else, so it is not read as
  // if whole.
  const std::uint64_t end = by_offset.empty() ? 0 : by_offset.back()->end;
  if (end < data_size) {
    throw bad(std::to_string(data_size - end) +
              " trailing bytes after the last tensor's data (the data section holds " +
              std::to_string(data_size) + " bytes, the tensors end at byte " +
              std::to_string(end) + ")");
  }
}

void SafetensorsFile::read(const SafetensorsTensor& t, std::uint64_t offset,
                           std::span<std::uint8_t> out) const {
  file_.read_at(data_start_ + t.begin + offset, out);
}

std::vector<std::uint8_t> SafetensorsFile::read(const SafetensorsTensor& t) const {
  std::vector<std::uint8_t> out;
  file_.read_at(data_start_ + t.begin, t.end - t.begin, out);
  return out;
}

const SafetensorsTensor* SafetensorsFile::find(const std::string& name) const {
  for (const auto& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

void write_safetensors(const std::string& path, std::span<const SafetensorsWrite> tensors,
                       const std::map<std::string, std::string>& metadata) {
  // ordered_json keeps the tensors in the given order, as their offsets are.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  std::uint64_t offset = 0;
  for (const SafetensorsWrite& t : tensors) {
    const std::size_t elem = safetensors_dtype_size(t.dtype);
    if (elem == 0)
      throw ConfigError("write_safetensors: unknown dtype '" + t.dtype + "'");
    if (!names.insert(t.name).second || t.name == "__metadata__") {
      throw ConfigError("write_safetensors: duplicate or reserved name '" + t.name + "'");
    }
    std::uint64_t bytes = 0;
    if (!byte_size(t.shape, elem, bytes) || bytes != t.data.size()) {
      throw ConfigError("write_safetensors: tensor '" + t.name + "' has " +
                        std::to_string(t.data.size()) + " bytes for its shape and dtype");
    }
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f)
    throw Error("write_safetensors: cannot create " + path + ": " + std::strerror(errno));
  std::uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<std::uint8_t>(text.size() >> (8 * i));
  bool ok = std::fwrite(len, 1, 8, f.get()) == 8 &&
            std::fwrite(text.data(), 1, text.size(), f.get()) == text.size();
  for (const SafetensorsWrite& t : tensors) {
    ok = ok && std::fwrite(t.data.data(), 1, t.data.size(), f.get()) == t.data.size();
  }
  ok = ok && std::fflush(f.get()) == 0;
  if (!ok)
    throw Error("write_safetensors: cannot write " + path + ": " + std::strerror(errno));
  if (std::fclose(f.release()) != 0)
    throw Error("write_safetensors: cannot write " + path + ": " + std::strerror(errno));
}

}  // namespace seedloader
