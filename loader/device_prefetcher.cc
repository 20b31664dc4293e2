#include "seedloader/device_prefetcher.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>

#include "base/cuda_check.h"
#include "base/cuda_handles.h"
#include "seedloader/error.h"

namespace seedloader {

namespace {

// Destructors cannot throw: report and carry on.
void warn_cuda(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) {
    std::fprintf(stderr, "seedloader: %s: %s\n", what, cudaGetErrorString(rc));
  }
}

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() {
    if (p_) warn_cuda(cudaFree(p_), "cudaFree");
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void allocate(std::size_t bytes) {
    if (bytes <= bytes_) return;
    if (p_) SL_CHECK_CUDA(cudaFree(p_));
    p_ = nullptr;
    SL_CHECK_CUDA(cudaMalloc(&p_, bytes));
    bytes_ = bytes;
  }
  std::byte* get() const { return static_cast<std::byte*>(p_); }

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

// Pins host memory for the lifetime of the object.
class HostRegistration {
 public:
  explicit HostRegistration(std::span<std::byte> region) : p_(region.data()) {
    SL_CHECK_CUDA(
        cudaHostRegister(region.data(), region.size(), cudaHostRegisterDefault));
    // Workers forked later must still inherit the region: it is MAP_SHARED,
    // so there is no copy-on-write hazard that DONTFORK would guard against.
    madvise(region.data(), region.size(), MADV_DOFORK);
  }
  ~HostRegistration() { warn_cuda(cudaHostUnregister(p_), "cudaHostUnregister"); }
  HostRegistration(const HostRegistration&) = delete;
  HostRegistration& operator=(const HostRegistration&) = delete;

 private:
  void* p_;
};

struct Stage {
  DeviceBatch batch;
  DeviceBuffer buffer;
  // Recorded on the copy stream after the copy.
  detail::CudaEvent copied{cudaEventDisableTiming};
  // Recorded on the compute stream when the batch is handed back.
  detail::CudaEvent consumed{cudaEventDisableTiming};
  bool valid = false;
};

}  // namespace

struct DevicePrefetcher::Impl {
  Impl(DataLoader& l, int device, cudaStream_t c) : loader(l), compute(c) {
    // Batch k is held while k+1 is copied: the loader needs two slots at least.
    const LoaderOptions& o = loader.options();
    const int slots = std::max(o.num_workers, 1) * o.prefetch;
    if (slots < 2) {
      throw ConfigError(
          "DevicePrefetcher needs at least 2 batch slots (num_workers x "
          "prefetch is " +
          std::to_string(slots) + "); raise prefetch");
    }
    SL_CHECK_CUDA(cudaSetDevice(device));
    pinned.emplace(loader.shared_memory());
    copy.emplace(cudaStreamNonBlocking);
    for (auto& s : stages) s.emplace();
  }

  // Takes the iterator's batch and queues its copy into stage b.
  void queue(int b) {
    Stage& s = *stages[b];
    if (advance) ++*it;
    advance = true;
    s.valid = !(*it == loader.end());
    if (!s.valid) return;
    s.batch.host = it->take();
    std::span<const std::byte> src = s.batch.host.slot_bytes();
    s.buffer.allocate(src.size());
    // The compute stream must be done with this buffer's previous batch.
    SL_CHECK_CUDA(cudaStreamWaitEvent(copy->get(), s.consumed.get(), 0));
    SL_CHECK_CUDA(cudaMemcpyAsync(s.buffer.get(), src.data(), src.size(),
                                  cudaMemcpyHostToDevice, copy->get()));
    SL_CHECK_CUDA(cudaEventRecord(s.copied.get(), copy->get()));
    s.batch.fields.clear();
    for (std::size_t f = 0; f < s.batch.host.num_fields(); ++f) {
      const std::size_t offset =
          static_cast<std::size_t>(s.batch.host.tensor(f).data - src.data());
      s.batch.fields.push_back(s.buffer.get() + offset);
    }
  }

  // Hands stage b back: the slot returns to the loader once its copy is done.
  void retire(int b) {
    Stage& s = *stages[b];
    SL_CHECK_CUDA(cudaEventRecord(s.consumed.get(), compute));
    if (!s.batch.host.empty()) {
      // The copy was queued a whole batch ago, so this rarely waits.
      SL_CHECK_CUDA(cudaEventSynchronize(s.copied.get()));
      s.batch.host.reset();
    }
  }

  DataLoader& loader;
  cudaStream_t compute;
  std::optional<HostRegistration> pinned;
  std::optional<detail::CudaStream> copy;
  std::optional<Stage> stages[2];
  std::optional<DataLoader::Iterator> it;
  bool advance = false;
  int current = -1;
};

DevicePrefetcher::DevicePrefetcher(DataLoader& loader, int device, cudaStream_t compute)
    : impl_(std::make_unique<Impl>(loader, device, compute)) {}

DevicePrefetcher::~DevicePrefetcher() {
  warn_cuda(cudaStreamSynchronize(impl_->copy->get()), "cudaStreamSynchronize");
  for (auto& s : impl_->stages) s->batch.host.reset();
  impl_->it.reset();
}

void DevicePrefetcher::start_epoch(std::uint64_t epoch, std::uint64_t first_batch) {
  SL_CHECK_CUDA(cudaStreamSynchronize(impl_->copy->get()));
  for (auto& s : impl_->stages) {
    s->batch.host.reset();
    s->valid = false;
  }
  impl_->it.reset();
  impl_->loader.resume(epoch, first_batch);
  impl_->it.emplace(impl_->loader.begin());
  impl_->advance = false;
  impl_->current = -1;
  impl_->queue(0);
}

const DeviceBatch* DevicePrefetcher::next() {
  Impl& m = *impl_;
  if (!m.it) return nullptr;
  int nxt = 0;
  if (m.current >= 0) {
    m.retire(m.current);
    nxt = 1 - m.current;
  }
  Stage& s = *m.stages[nxt];
  if (!s.valid) {
    m.current = -1;
    m.it.reset();
    return nullptr;
  }
  SL_CHECK_CUDA(cudaStreamWaitEvent(m.compute, s.copied.get(), 0));
  m.queue(1 - nxt);  // overlaps the consumer's use of this batch
  m.current = nxt;
  return &s.batch;
}

}  // namespace seedloader
