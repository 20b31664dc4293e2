#include "loader/datasets/path_index.h"

namespace seedloader {

void PathIndex::reserve(std::size_t entries, std::size_t path_bytes) {
  blob_.reserve(path_bytes + entries);
  offsets_.reserve(entries + 1);
  labels_.reserve(entries);
}

void PathIndex::add(std::string_view path, std::int32_t label) {
  blob_.insert(blob_.end(), path.begin(), path.end());
  blob_.push_back('\0');
  offsets_.push_back(blob_.size());
  labels_.push_back(label);
}

void PathIndex::shrink_to_fit() {
  blob_.shrink_to_fit();
  offsets_.shrink_to_fit();
  labels_.shrink_to_fit();
}

std::uint64_t PathIndex::bytes() const {
  return blob_.capacity() + offsets_.capacity() * sizeof(std::uint64_t) +
         labels_.capacity() * sizeof(std::int32_t);
}

}  // namespace seedloader
