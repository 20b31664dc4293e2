// OutputFile: a file written under a temporary name ("OUT/.NAME.partial") and
// renamed to its final name only after its bytes are fsynced, so a final name
// always holds a complete file. The XXH64 (seed 0) of everything written is kept
// as it goes, so no file is read back to checksum it. An OutputFile that is not
// committed removes its temporary file when it goes. Every failure is an Error
// naming the file and the system's reason. Owns its descriptor; move-only by
// deletion of copies; not thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <xxhash.h>

namespace seedloader::pack {

class OutputFile {
 public:
  // Creates DIR/.NAME.partial, truncating a leftover one.
  OutputFile(std::string dir, std::string name);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(std::span<const std::uint8_t> data);
  // Bytes written so far.
  std::uint64_t size() const { return size_; }
  // Flushes, fsyncs and renames to DIR/NAME; returns the XXH64 of the contents.
  // The directory entry is made durable by fsync_dir() once all files are in.
  // REQUIRES: called once; nothing written after.
  std::uint64_t commit();
  const std::string& final_path() const { return final_path_; }

 private:
  void flush();

  std::string temp_path_, final_path_;
  int fd_ = -1;
  std::vector<std::uint8_t> buffer_;
  std::uint64_t size_ = 0;
  XXH64_state_t* hash_ = nullptr;
  bool committed_ = false;
};

// Throws Error "cannot WHAT PATH: strerror(errno)".
[[noreturn]] void fail_sys(const std::string& what, const std::string& path);

// fsyncs the directory, so renames into it survive a crash.
void fsync_dir(const std::string& dir);

}  // namespace seedloader::pack
