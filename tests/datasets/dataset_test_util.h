// Helpers for the dataset tests: a temporary directory removed at scope exit,
// file writing, and a SampleBuffer that gives a dataset somewhere to write one
// sample (one buffer per field of its layout), as a batch slot row would.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "loader/dataset.h"
#include "rng/error.h"
#include "rng/seed_sequence.h"

namespace seedloader::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / "sl_data_XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline void write_file(const std::string& path, const void* data, std::size_t size) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) throw std::runtime_error("cannot write " + path);
}
inline void write_file(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  write_file(path, bytes.data(), bytes.size());
}
inline std::vector<std::uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// One sample's storage for a layout, and a SampleWriter over it.
class SampleBuffer {
 public:
  SampleBuffer(const SampleLayout& layout, std::uint64_t index) : layout_(layout) {
    for (const FieldSpec& f : layout.fields()) {
      storage_.emplace_back(f.bytes() + 8);  // +8: never zero-sized
      pointers_.push_back(storage_.back().data());
    }
    lengths_.resize(layout.num_fields());
    writer_ = std::make_unique<SampleWriter>(layout_, pointers_, lengths_, index);
  }
  SampleWriter& writer() { return *writer_; }
  template <typename T>
  std::span<const T> field(std::size_t f) const {
    return {reinterpret_cast<const T*>(storage_[f].data()),
            static_cast<std::size_t>(layout_.field(f).elements())};
  }

 private:
  const SampleLayout& layout_;
  std::vector<std::vector<std::byte>> storage_;
  std::vector<std::byte*> pointers_;
  std::vector<std::uint64_t> lengths_;
  std::unique_ptr<SampleWriter> writer_;
};

inline Rng test_rng(std::uint64_t seed = 1) { return Rng(SeedSequence(seed)); }

// Calls dataset.get(index) and returns the DataError's message ("" if none).
inline std::string get_error(const Dataset& dataset, std::uint64_t index) {
  SampleBuffer buffer(dataset.layout(), index);
  Rng rng = test_rng();
  try {
    dataset.get(index, rng, buffer.writer());
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

}  // namespace seedloader::testing
