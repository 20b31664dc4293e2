#include "remote/shard_prefetcher.h"

#include <algorithm>
#include <exception>
#include <utility>

namespace seedloader::remote {

ShardPrefetcher::ShardPrefetcher(Fetch fetch, Failed failed, int threads)
    : fetch_(std::move(fetch)), failed_(std::move(failed)) {
  for (int t = 0; t < std::max(1, threads); ++t) threads_.emplace_back([this] { run(); });
}

ShardPrefetcher::~ShardPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    queue_.clear();
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ShardPrefetcher::want(const std::vector<std::size_t>& shards) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.clear();
    for (const std::size_t shard : shards) {
      if (std::find(busy_.begin(), busy_.end(), shard) == busy_.end())
        queue_.push_back(shard);
    }
  }
  wake_.notify_all();
}

void ShardPrefetcher::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    const std::size_t shard = queue_.front();
    queue_.pop_front();
    busy_.push_back(shard);
    lock.unlock();
    try {
      fetch_(shard);
    } catch (const std::exception& e) {
      failed_(shard, e.what());
    } catch (...) {
      failed_(shard, "an exception of an unknown type");
    }
    lock.lock();
    busy_.erase(std::find(busy_.begin(), busy_.end(), shard));
  }
}

}  // namespace seedloader::remote
