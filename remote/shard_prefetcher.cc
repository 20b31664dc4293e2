#include "remote/shard_prefetcher.h"

#include <utility>

namespace seedloader::remote {

ShardPrefetcher::ShardPrefetcher(Fetch fetch)
    : fetch_(std::move(fetch)), thread_([this] { run(); }) {}

ShardPrefetcher::~ShardPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    queue_.clear();
  }
  wake_.notify_one();
  thread_.join();
}

void ShardPrefetcher::want(const std::vector<std::size_t>& shards) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.assign(shards.begin(), shards.end());
  }
  wake_.notify_one();
}

std::size_t ShardPrefetcher::fetched() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fetched_;
}

void ShardPrefetcher::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    const std::size_t shard = queue_.front();
    queue_.pop_front();
    lock.unlock();
    try {
      fetch_(shard);
    } catch (...) {
      // The read that needs this shard fetches it again and names the failure.
    }
    lock.lock();
    ++fetched_;
  }
}

}  // namespace seedloader::remote
