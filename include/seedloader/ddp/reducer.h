// Reducer: PyTorch-DistributedDataParallel-style gradient averaging for a Sequential.
// Buckets are contiguous views of the flat gradient buffer, filled in reverse
// parameter order (the order backward produces them): the first bucket holds up to
// first_bucket_bytes, the others up to bucket_bytes (a parameter is never split; a
// bucket closes once it reaches its cap). During backward, each bucket's counter
// drops as its gradients become final; when a bucket is complete its non-blocking
// all-reduce starts, strictly in bucket order on every rank, so communication
// overlaps the rest of backward. When backward returns, every gradient holds the
// average over ranks.
// At construction, every rank checks its parameter shapes against rank 0's (a
// mismatch is a CommError naming the parameter) and receives rank 0's parameters.
// no_sync(): while the returned guard lives, backward only accumulates locally; the
// first backward after it synchronises the accumulated gradients.
// Registers itself as the model's observer; both must outlive training. Not
// thread-safe; copying is deleted.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "seedloader/ddp/communicator.h"
#include "seedloader/ddp/sequential.h"

namespace seedloader::ddp {

struct ReducerOptions {
  std::size_t first_bucket_bytes = std::size_t{1} << 20;
  std::size_t bucket_bytes = std::size_t{25} << 20;
};

class Reducer final : public BackwardObserver {
 public:
  struct Bucket {
    std::size_t offset = 0;  // into the flat gradient buffer, in elements
    std::size_t count = 0;
    std::vector<std::size_t> params;  // parameter indices, in the order they fill
  };

  // Collective: every rank constructs its Reducer at the same point.
  Reducer(Sequential& model, Communicator& comm, ReducerOptions options = {});
  ~Reducer() override;
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  class NoSync {
   public:
    // Restores the previous setting, so nested guards keep the outer scope local.
    explicit NoSync(Reducer& r) : r_(r), previous_(std::exchange(r.no_sync_, true)) {}
    ~NoSync() { r_.no_sync_ = previous_; }
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    Reducer& r_;
    bool previous_;
  };
  // Gradients accumulate locally while the guard lives.
  [[nodiscard]] std::unique_ptr<NoSync> no_sync() {
    return std::make_unique<NoSync>(*this);
  }

  const std::vector<Bucket>& buckets() const { return buckets_; }
  // Buckets whose all-reduce started while gradients were still being computed, in
  // the last synchronised backward (shows that communication overlapped compute).
  std::size_t buckets_started_early() const { return started_early_; }

  void on_backward_begin() override;
  void on_grad_ready(std::size_t index) override;
  void on_backward_end() override;

 private:
  void build_buckets(const ReducerOptions& options);
  void verify_shapes();
  void launch_ready();

  Sequential& model_;
  Communicator& comm_;
  std::vector<Bucket> buckets_;
  std::vector<std::size_t> bucket_of_;  // parameter index -> bucket
  std::vector<std::size_t> pending_;    // per bucket: gradients not yet final
  std::vector<std::unique_ptr<Work>> work_;
  std::size_t next_launch_ = 0;
  std::size_t grads_left_ = 0;  // in this backward, over all buckets
  std::size_t started_early_ = 0;
  bool syncing_ = false;  // this backward synchronises
  bool no_sync_ = false;
};

}  // namespace seedloader::ddp
