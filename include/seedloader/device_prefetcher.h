// DevicePrefetcher: feeds a DataLoader's batches to one GPU. It pins the
// loader's shared region once (cudaHostRegister), so each batch is copied to the
// device straight from its slot, asynchronously, in one cudaMemcpyAsync on a
// copy stream of its own. While the consumer uses batch k on its compute
// stream, batch k+1 is already being copied into the other of two device
// buffers; the compute stream waits for a copy with cudaStreamWaitEvent (never
// a host synchronise), and a buffer is reused only after the compute stream
// has passed the event recorded when its batch was handed back.
// Owns its stream, events, device buffers and the host registration (RAII);
// move-free and copy-free. Use from the thread that iterates; only with CUDA
// (the stream type is forward-declared, so including this needs no CUDA headers).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "seedloader/batch.h"
#include "seedloader/cuda_types.h"
#include "seedloader/data_loader.h"

namespace seedloader {

struct DeviceBatch {
  Batch host;                       // indices, fingerprints, shapes (host view)
  std::vector<const void*> fields;  // field f on the device, laid out as host.tensor(f)
};

class DevicePrefetcher {
 public:
  // Throws Error naming the CUDA call when pinning or allocation fails.
  // REQUIRES: `loader` outlives the prefetcher.
  DevicePrefetcher(DataLoader& loader, int device, cudaStream_t compute = nullptr);
  ~DevicePrefetcher();
  DevicePrefetcher(const DevicePrefetcher&) = delete;
  DevicePrefetcher& operator=(const DevicePrefetcher&) = delete;

  // Starts `epoch` on the loader at batch `first_batch` (DataLoader::resume: the
  // batches before it are not loaded) and queues the copy of that batch.
  void start_epoch(std::uint64_t epoch, std::uint64_t first_batch = 0);
  // The next batch on the device, or nullptr after the last. The compute stream
  // is made to wait for its copy; the following batch's copy is queued before
  // this returns. Valid until the next call.
  const DeviceBatch* next();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace seedloader
