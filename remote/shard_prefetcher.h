// ShardPrefetcher: background threads that fetch shards ahead of the reads of
// the process that owns them (TarShardsOptions::prefetch_shards). want() names
// the shards the next reads need, in order; the threads fetch them first to last,
// each taking the next one, by calling `fetch`, which must be thread-safe and
// cheap for a shard already at hand (ShardCache::ensure is: a stat). A shard being
// fetched is not taken again. An exception from `fetch` goes to `failed` with its
// message (the owner counts it and keeps the first, as a background error); the
// read that needs the shard then fetches it itself and reports its own error.
// Create it in the process that reads (a forked worker), never before a fork: a
// child would inherit the object without its thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace seedloader::remote {

class ShardPrefetcher {
 public:
  using Fetch = std::function<void(std::size_t shard)>;
  // Called on a fetching thread, must not throw.
  using Failed = std::function<void(std::size_t shard, const char* message)>;
  // `threads` (at least 1) fetch at once.
  ShardPrefetcher(Fetch fetch, Failed failed, int threads);
  // Stops after the fetches in progress, if any.
  ~ShardPrefetcher();
  ShardPrefetcher(const ShardPrefetcher&) = delete;
  ShardPrefetcher& operator=(const ShardPrefetcher&) = delete;

  // The shards the next reads need, in order: replaces what is still queued.
  void want(const std::vector<std::size_t>& shards);

 private:
  void run();

  Fetch fetch_;
  Failed failed_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::size_t> queue_;
  std::vector<std::size_t> busy_;  // shards being fetched
  bool stop_ = false;
  std::vector<std::thread> threads_;  // last: started once everything above exists
};

}  // namespace seedloader::remote
