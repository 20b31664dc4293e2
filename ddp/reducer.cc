#include "seedloader/ddp/reducer.h"

#include <string>
#include <vector>

#include "seedloader/error.h"

namespace seedloader::ddp {

namespace {
constexpr std::size_t kMaxDims = 4;
constexpr std::size_t kSigWords = kMaxDims + 1;  // ndim, then the dims
}  // namespace

Reducer::Reducer(Sequential& model, Communicator& comm, ReducerOptions options)
    : model_(model), comm_(comm) {
  if (options.first_bucket_bytes == 0 || options.bucket_bytes == 0)
    throw ConfigError("ReducerOptions: bucket caps must be positive");
  if (comm.device() != model.device())
    throw ConfigError(std::string("Reducer: the model lives on ") +
                      device_name(model.device()) + " but the communicator reduces " +
                      device_name(comm.device()) + " buffers");
  build_buckets(options);
  verify_shapes();
  comm_.broadcast(model_.parameters(), 0);
  model_.set_observer(this);
}

Reducer::~Reducer() { model_.set_observer(nullptr); }

void Reducer::build_buckets(const ReducerOptions& options) {
  const auto& info = model_.param_info();
  bucket_of_.assign(info.size(), 0);
  Bucket current;
  std::size_t bytes = 0;
  for (std::size_t i = info.size(); i-- > 0;) {
    current.params.push_back(i);
    current.offset = info[i].offset;  // reverse order: the lowest offset comes last
    current.count += info[i].count;
    bucket_of_[i] = buckets_.size();
    bytes += info[i].count * sizeof(float);
    const std::size_t cap =
        buckets_.empty() ? options.first_bucket_bytes : options.bucket_bytes;
    if (bytes >= cap || i == 0) {
      buckets_.push_back(std::move(current));
      current = Bucket{};
      bytes = 0;
    }
  }
  pending_.assign(buckets_.size(), 0);
}

void Reducer::verify_shapes() {
  const auto& info = model_.param_info();
  const int rank = comm_.rank();
  std::int64_t root_count = static_cast<std::int64_t>(info.size());
  comm_.broadcast(std::span<std::int64_t>(&root_count, 1), 0);

  // Every rank learns whether any rank disagrees, so all of them throw together.
  // Flags travel as integers (a max over ranks), on the host whatever the device.
  std::vector<std::int64_t> flags(info.size(), 0);
  std::vector<std::int64_t> sig(info.size() * kSigWords, 0);
  const bool same_count = root_count == static_cast<std::int64_t>(info.size());
  for (std::size_t i = 0; i < info.size(); ++i) {
    if (info[i].shape.size() > kMaxDims)
      throw ConfigError("Reducer: parameter '" + info[i].name + "' has more than 4 dims");
    sig[i * kSigWords] = static_cast<std::int64_t>(info[i].shape.size());
    for (std::size_t d = 0; d < info[i].shape.size(); ++d)
      sig[i * kSigWords + 1 + d] = info[i].shape[d];
  }
  std::vector<std::int64_t> root_sig = sig;
  if (comm_.any(!same_count)) {
    throw CommError("rank " + std::to_string(rank) + ": model has " +
                    std::to_string(info.size()) + " parameters; rank 0's has " +
                    std::to_string(root_count) +
                    (same_count ? " (another rank differs)" : ""));
  }
  comm_.broadcast(std::span<std::int64_t>(root_sig), 0);
  for (std::size_t i = 0; i < info.size(); ++i)
    for (std::size_t w = 0; w < kSigWords; ++w)
      if (root_sig[i * kSigWords + w] != sig[i * kSigWords + w]) flags[i] = 1;
  std::vector<std::int64_t> seen = flags;
  comm_.allreduce(std::span<std::int64_t>(seen), IntReduceOp::kMax);
  for (std::size_t i = 0; i < info.size(); ++i) {
    if (seen[i] == 0) continue;
    Shape root_shape(root_sig.begin() + static_cast<std::ptrdiff_t>(i * kSigWords + 1),
                     root_sig.begin() + static_cast<std::ptrdiff_t>(
                                            i * kSigWords + 1 + root_sig[i * kSigWords]));
    throw CommError("parameter '" + info[i].name + "' has shape " +
                    shape_string(info[i].shape) + " on rank " + std::to_string(rank) +
                    " but " + shape_string(root_shape) + " on rank 0" +
                    (flags[i] == 0 ? " (mismatch is on another rank)" : ""));
  }
}

void Reducer::on_backward_begin() {
  syncing_ = !no_sync_;
  if (!syncing_) return;
  work_.clear();
  next_launch_ = 0;
  started_early_ = 0;
  grads_left_ = model_.param_info().size();
  for (std::size_t b = 0; b < buckets_.size(); ++b)
    pending_[b] = buckets_[b].params.size();
}

void Reducer::on_grad_ready(std::size_t index) {
  if (!syncing_) return;
  std::size_t& left = pending_[bucket_of_[index]];
  if (left == 0)
    throw Error("Reducer: gradient of '" + model_.param_info()[index].name +
                "' reported ready twice in one backward");
  --left;
  --grads_left_;
  launch_ready();
  comm_.progress();
}

void Reducer::launch_ready() {
  // Strictly in bucket order, so every rank issues the same collectives in the
  // same sequence even when layers finish in a different order.
  while (next_launch_ < buckets_.size() && pending_[next_launch_] == 0) {
    const Bucket& b = buckets_[next_launch_];
    work_.push_back(comm_.iallreduce(model_.gradients().subspan(b.offset, b.count),
                                     ReduceOp::kAverage));
    ++next_launch_;
    if (grads_left_ > 0) ++started_early_;
  }
}

void Reducer::on_backward_end() {
  if (!syncing_) return;
  syncing_ = false;
  if (next_launch_ != buckets_.size())
    throw Error("Reducer: backward ended with bucket " + std::to_string(next_launch_) +
                " incomplete");
  for (auto& w : work_) w->wait();
  work_.clear();
}

}  // namespace seedloader::ddp
