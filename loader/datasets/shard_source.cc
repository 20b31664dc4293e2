#include "loader/datasets/shard_source.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>

#include "seedloader/error.h"

namespace seedloader {

std::shared_ptr<const FileHandle> LocalShards::open(std::size_t shard) const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = std::find_if(kept_.begin(), kept_.end(),
                                 [&](const auto& k) { return k.first == shard; });
    if (it != kept_.end()) {
      std::rotate(kept_.begin(), it, it + 1);  // most recently used first
      return kept_.front().second;
    }
  }
  auto file = std::make_shared<const FileHandle>(paths_[shard]);
  std::lock_guard<std::mutex> lock(mutex_);
  kept_.insert(kept_.begin(), {shard, file});
  if (kept_.size() > kKept) kept_.pop_back();  // a read holding it keeps it open
  return file;
}

// The errors of downloads ahead, shared by the process that built the source and
// every process forked from it. The first message is claimed by one writer (state
// 0 -> 1), written, then published (state 2, release), and read only after an
// acquire load of state 2; each failure is counted after that (release), so a
// reader that loads the count first (acquire) and sees the failure that wrote the
// message sees the message.
struct CachedShards::SharedErrors {
  std::atomic<std::uint64_t> count;
  std::atomic<std::uint32_t> state;
  char first[1024];
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

CachedShards::CachedShards(remote::ObjectUrl index_url,
                           const std::vector<shards::ShardEntry>& entries,
                           std::unique_ptr<remote::ObjectReader> reader,
                           CachedShardsOptions options)
    : entries_(entries),
      reader_(std::move(reader)),
      prefetch_shards_(options.prefetch_shards),
      creator_(::getpid()) {
  for (const shards::ShardEntry& entry : entries_)
    locations_.push_back(index_url.sibling(entry.name).display());
  cache_ = std::make_unique<remote::ShardCache>(
      std::move(index_url),
      options.cache_dir.empty() ? remote::default_cache_dir() : options.cache_dir,
      options.cache_limit, *reader_, options.verify);
  void* page = ::mmap(nullptr, sizeof(SharedErrors), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) throw std::bad_alloc();
  errors_ = new (page) SharedErrors{};  // zeroed pages: count 0, state 0
}

CachedShards::~CachedShards() {
  prefetcher_.reset();  // its threads use everything else
  ::munmap(errors_, sizeof(SharedErrors));
}

std::shared_ptr<const FileHandle> CachedShards::open(std::size_t shard) const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Held& h : held_)
      if (h.first == shard) return h.second;
  }
  // Looked up, and downloaded when absent, outside the lock: other threads read
  // held shards meanwhile.
  auto file = std::make_shared<const FileHandle>(cache_->open(entries_[shard]));
  // Held, pinned, until will_read() no longer names it: only in a process that
  // announces its reads (a worker), which releases them. Elsewhere (the creator,
  // which may fork again, or a process reading without announcing) each read
  // looks the shard up, and checks it, again.
  if (::getpid() != announcing_ || !remote::ShardCache::hold(*file)) return file;
  std::lock_guard<std::mutex> lock(mutex_);
  held_.emplace_back(shard, file);
  return file;
}

void CachedShards::will_read(const std::vector<std::size_t>& shards) const noexcept {
  if (::getpid() == creator_) return;
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    announcing_ = ::getpid();
    // Pin the cached ones (kept from the last call, or new), so that no eviction
    // takes them before their reads; the first prefetch_shards others that no one
    // is downloading yet are fetched. held_ is replaced only once all is done: a
    // failure leaves it as it was.
    std::vector<Held> held;
    std::vector<std::size_t> missing;
    for (const std::size_t shard : shards) {
      const auto kept = std::find_if(held_.begin(), held_.end(),
                                     [&](const Held& h) { return h.first == shard; });
      // A kept pin whose file changed since its check (one fstat) is dropped:
      // the read looks the shard up, and the cache fetches it again.
      if (kept != held_.end() && cache_->unchanged(*kept->second)) {
        held.push_back(*kept);
        continue;
      }
      if (FileHandle pin = cache_->pin(entries_[shard])) {
        held.emplace_back(shard, std::make_shared<const FileHandle>(std::move(pin)));
      } else if (missing.size() < static_cast<std::size_t>(prefetch_shards_) &&
                 !cache_->downloading(entries_[shard])) {
        // One being downloaded (by another worker, often) is left to it: the
        // threads take the next ones.
        missing.push_back(shard);
      }
    }
    held_ = std::move(held);  // unpins the shards no read announced now needs
    if (!prefetcher_) {
      if (missing.empty()) return;  // no thread until one is needed
      prefetcher_ = std::make_unique<remote::ShardPrefetcher>(
          [this](std::size_t shard) {
            cache_->ensure(entries_[shard], remote::ShardCache::Need::kAhead);
          },
          [this](std::size_t shard, const char* message) {
            failed("downloading shard ", shard, " ahead: ", message);
          },
          prefetch_shards_);
    }
    prefetcher_->want(missing);
  } catch (const std::exception& e) {
    // A pin that could not be checked, no thread, no memory: the reads look
    // their shards up themselves.
    failed("pinning or fetching ahead the shards of the next reads, from shard ",
           shards.empty() ? 0 : shards.front(), ": ", e.what());
  }
}

void CachedShards::failed(const char* before, std::size_t shard, const char* after,
                          const char* message) const noexcept {
  std::uint32_t none = 0;
  if (errors_->state.compare_exchange_strong(none, 1, std::memory_order_acquire)) {
    std::string text;
    try {
      text = before + (shard < locations_.size() ? locations_[shard] : "?") + after +
             message;
    } catch (...) {
      text.clear();  // no memory: the message alone
    }
    const char* from = text.empty() ? message : text.c_str();
    const std::size_t n = std::min(std::strlen(from), sizeof errors_->first - 1);
    std::memcpy(errors_->first, from, n);
    errors_->first[n] = '\0';
    // Release: a reader that sees state 2 sees the whole message.
    errors_->state.store(2, std::memory_order_release);
  }
  // Counted after the first message is published (release): a reader that sees
  // this failure counted (acquire) sees the message, if this call wrote it.
  errors_->count.fetch_add(1, std::memory_order_release);
}

PrefetchErrors CachedShards::prefetch_errors() const {
  PrefetchErrors out;
  // The count first (acquire), then the message: a count that includes the
  // failure that wrote the message comes with it. Another process may still be
  // writing it (state 1): said so.
  out.count = errors_->count.load(std::memory_order_acquire);
  const std::uint32_t state = errors_->state.load(std::memory_order_acquire);
  if (state == 2) {
    out.first = errors_->first;
  } else if (out.count > 0) {
    out.first = "(its message is still being written)";
  }
  return out;
}

}  // namespace seedloader
