#include "seedloader/data_loader.h"

#include <cstdio>
#include <exception>

#include "loader/engine.h"

namespace seedloader {

DataLoader::DataLoader(const Dataset& dataset, LoaderOptions options)
    : engine_(std::make_shared<Engine>(dataset, std::move(options))) {}

DataLoader::~DataLoader() { engine_->shutdown(); }

std::uint64_t DataLoader::num_batches() const { return engine_->num_batches(); }
std::uint64_t DataLoader::base_seed() const { return engine_->base_seed(); }
const LoaderOptions& DataLoader::options() const { return engine_->options(); }
std::uint64_t DataLoader::skipped_samples() const { return engine_->skipped_samples(); }
std::vector<pid_t> DataLoader::worker_pids() const { return engine_->worker_pids(); }
std::vector<pid_t> DataLoader::release_workers() { return engine_->release_workers(); }
std::vector<double> DataLoader::worker_busy_seconds() const {
  return engine_->worker_busy_seconds();
}
std::span<std::byte> DataLoader::shared_memory() const {
  return engine_->expose_region();
}
void DataLoader::serve_worker(const WorkerLaunch& launch) {
  engine_->serve_worker(launch);
}

DataLoader::Iterator DataLoader::begin() {
  Iterator it = start();
  it.load();
  return it;
}

DataLoader::Iterator DataLoader::start() {
  engine_->begin_epoch(epoch_, start_batch_, end_batch_);
  return Iterator(engine_.get(), start_batch_);
}

DataLoader::Iterator::Iterator(Engine* engine, std::uint64_t first)
    : engine_(engine), next_(first), generation_(engine->generation()) {}

DataLoader::Iterator::Iterator(Iterator&& other) noexcept
    : engine_(std::exchange(other.engine_, nullptr)),
      current_(std::move(other.current_)),
      next_(other.next_),
      generation_(other.generation_),
      done_(other.done_) {}

DataLoader::Iterator::~Iterator() {
  current_.reset();
  // An iterator left over from an earlier begin() must not stop a newer epoch.
  if (engine_ && !done_ && engine_->generation() == generation_) engine_->abandon_epoch();
}

void DataLoader::Iterator::load() {
  // A later begin() abandoned this iterator's epoch: its slots now belong to
  // another epoch (and may sit in a live Batch), so it must not touch them.
  if (engine_->generation() != generation_) {
    done_ = true;
    throw Error(
        "DataLoader: this iterator's epoch was abandoned by a later begin(); iterate "
        "the new one instead");
  }
  // A skipped step is fetched and dropped, in order, so the steps after it stay as
  // they were; its dataset errors are not delivered either.
  for (;; ++next_) {
    if (next_ >= engine_->end_batch()) {
      done_ = true;
      engine_->end_epoch();
      return;
    }
    const bool skipped = engine_->step_skipped(next_);
    try {
      Batch batch = engine_->fetch(next_);
      if (!skipped) {
        current_ = std::move(batch);
        ++next_;
        return;
      }
    } catch (const WorkerError& e) {
      const bool recoverable = e.failure().recoverable;
      if (!recoverable) {
        done_ = true;
        engine_->abandon_epoch();  // a no-op when the engine already did
      }
      if (!skipped || !recoverable) {
        ++next_;  // past the failed batch either way
        throw;
      }
    } catch (...) {
      done_ = true;
      engine_->abandon_epoch();
      throw;
    }
  }
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  current_.reset();
  load();
  return *this;
}

}  // namespace seedloader
