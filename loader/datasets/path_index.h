// PathIndex: n (path, label) pairs in three flat arrays — one blob of
// NUL-terminated paths, n + 1 offsets into it, n labels — so an index of 10^7
// files is three allocations, and forked workers read the parent's pages
// instead of copying them (no per-entry objects whose reference counts or
// headers would be written to). Append-only while built, read-only after;
// reads are safe across threads and processes.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace seedloader {

class PathIndex {
 public:
  PathIndex() { offsets_.push_back(0); }

  void reserve(std::size_t entries, std::size_t path_bytes);
  void add(std::string_view path, std::int32_t label);
  // Frees the spare capacity left by growth.
  void shrink_to_fit();

  std::uint64_t size() const { return labels_.size(); }
  // REQUIRES: i < size(). NUL-terminated.
  const char* path(std::uint64_t i) const { return blob_.data() + offsets_[i]; }
  std::string_view path_view(std::uint64_t i) const {
    return {blob_.data() + offsets_[i], offsets_[i + 1] - offsets_[i] - 1};
  }
  std::int32_t label(std::uint64_t i) const { return labels_[i]; }
  // Bytes held by the three arrays.
  std::uint64_t bytes() const;

 private:
  std::vector<char> blob_;
  std::vector<std::uint64_t> offsets_;
  std::vector<std::int32_t> labels_;
};

}  // namespace seedloader
