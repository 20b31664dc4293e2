// Helpers for the dataset tests: file writing (in a tests/common TempDir), and a
// SampleBuffer that gives a dataset somewhere to write one sample (one buffer per field
// of its layout), as a batch slot row would.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "seedloader/dataset.h"
#include "seedloader/error.h"
#include "seedloader/seed_sequence.h"
#include "tests/common/temp_dir.h"

namespace seedloader::testing {

using testing_util::TempDir;

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

// Makes a FIFO at `path` (nothing ever writes to it).
inline void make_fifo(const std::string& path) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0) << path << ": " << std::strerror(errno);
}

// Binds a Unix socket at `path`; the returned descriptor keeps it alive.
inline int make_socket(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0)
      << path << ": " << std::strerror(errno);
  return fd;
}

// Runs `open_it`, which must throw DataError, and returns its message. When it is
// still blocked (in an open() of `fifo`) after a few seconds, the test fails and
// a writer is opened on the FIFO to release it.
inline std::string data_error_without_waiting(const std::string& fifo,
                                              std::function<void()> open_it) {
  auto result = std::async(std::launch::async, [&]() -> std::string {
    try {
      open_it();
    } catch (const DataError& e) {
      return e.what();
    }
    return "(no DataError)";
  });
  if (result.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
    ADD_FAILURE() << "waited on the FIFO " << fifo << " for a writer";
    for (int i = 0; i < 500 && result.wait_for(std::chrono::milliseconds(0)) !=
                                   std::future_status::ready;
         ++i) {
      const int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (w >= 0) ::close(w);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  return result.get();
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace seedloader::testing
