// The ddp and ddp-mp modes (see train_model.h), and the factory for all modes.
#include <memory>

#include "seedloader/ddp/reducer.h"
#include "seedloader/error.h"
#include "seedloader/seed_sequence.h"
#include "tools/ddp_train/data_parallel_model.h"
#include "tools/ddp_train/gradient_tap.h"
#include "tools/ddp_train/model_spec.h"
#include "tools/ddp_train/train_model.h"

#if defined(SEEDLOADER_HAS_CUDA) && defined(SEEDLOADER_HAS_MPI)
#include "seedloader/ddp/nccl_communicator.h"
#endif

namespace seedloader::train {
namespace {

using Layers = std::vector<std::unique_ptr<ddp::Layer>>;

ddp::ReducerOptions reducer_options(const TrainOptions& o) {
  ddp::ReducerOptions r;
  r.bucket_bytes = static_cast<std::size_t>(o.bucket_mb * 1024 * 1024);
  r.first_bucket_bytes = std::min(r.first_bucket_bytes, r.bucket_bytes);
  return r;
}

// NCCL collectives must follow the model's compute stream.
void follow_stream(ddp::Communicator& comm, const ddp::Sequential& model) {
#if defined(SEEDLOADER_HAS_CUDA) && defined(SEEDLOADER_HAS_MPI)
  if (auto* nccl = dynamic_cast<ddp::NcclCommunicator*>(&comm))
    nccl->set_compute_stream(model.context().gpu->stream());
#else
  (void)comm;
  (void)model;
#endif
}

class DdpModel final : public TrainModel {
 public:
  DdpModel(const TrainOptions& o, Layers layers, ddp::Device device,
           ddp::Communicator& comm, Rng& rng)
      : loss_(o.loss),
        model_(std::move(layers), device, rng),
        optimizer_(make_optimizer(o, model_)),
        reducer_(model_, comm, reducer_options(o)) {
    follow_stream(comm, model_);
  }

  StepStats step(const float* x, const ddp::Shape& x_shape, const Target& t) override {
    model_.zero_grad();
    const float* y = model_.forward(x, x_shape);
    grad_.set_device(model_.device());
    grad_.resize(static_cast<std::size_t>(ddp::element_count(model_.output_shape())));
    StepStats s = apply_loss(loss_, model_.context(), y, model_.output_shape(), t,
                             grad_.data(), 1.0f);
    model_.backward(grad_.data());
    optimizer_->step();
    return s;
  }
  std::vector<Stage> stages() override { return {{&model_, optimizer_.get(), 0}}; }
  ddp::Device device() const override { return model_.device(); }

 private:
  Loss loss_;
  ddp::Sequential model_;
  std::unique_ptr<ddp::Optimizer> optimizer_;
  ddp::Reducer reducer_;
  ddp::DeviceArray<float> grad_;
};

class PipelineModel final : public TrainModel {
 public:
  PipelineModel(const TrainOptions& o, Layers layers, ddp::Device device,
                ddp::Communicator& comm, Rng& rng)
      : loss_(o.loss), split_(o.split) {
    if (static_cast<std::size_t>(o.split) >= layers.size())
      throw ConfigError("--split " + std::to_string(o.split) + ": the model has only " +
                        std::to_string(layers.size()) + " layers");
    Layers first, second;
    auto tap = std::make_unique<GradientTap>();
    tap_ = tap.get();
    second.push_back(std::move(tap));
    for (std::size_t i = 0; i < layers.size(); ++i)
      (static_cast<int>(i) < o.split ? first : second).push_back(std::move(layers[i]));
    // Both stages draw their initial weights from one stream, layer after layer,
    // exactly as the unsplit model would.
    s0_ = std::make_unique<ddp::Sequential>(std::move(first), device, rng);
    s1_ = std::make_unique<ddp::Sequential>(std::move(second), device, rng);
    o0_ = make_optimizer(o, *s0_);
    o1_ = make_optimizer(o, *s1_);
    r1_ = std::make_unique<ddp::Reducer>(*s1_, comm, reducer_options(o));
    r0_ = std::make_unique<ddp::Reducer>(*s0_, comm, reducer_options(o));
    follow_stream(comm, *s0_);
  }

  StepStats step(const float* x, const ddp::Shape& x_shape, const Target& t) override {
    s0_->zero_grad();
    s1_->zero_grad();
    const float* a = s0_->forward(x, x_shape);
    const float* y = s1_->forward(a, s0_->output_shape());
    grad_.set_device(s1_->device());
    grad_.resize(static_cast<std::size_t>(ddp::element_count(s1_->output_shape())));
    StepStats s =
        apply_loss(loss_, s1_->context(), y, s1_->output_shape(), t, grad_.data(), 1.0f);
    s1_->backward(grad_.data());
    s0_->backward(tap_->input_gradient());
    o0_->step();
    o1_->step();
    return s;
  }
  std::vector<Stage> stages() override {
    return {{s0_.get(), o0_.get(), 0}, {s1_.get(), o1_.get(), split_ - 1}};
  }
  ddp::Device device() const override { return s0_->device(); }

 private:
  Loss loss_;
  int split_;
  GradientTap* tap_ = nullptr;
  std::unique_ptr<ddp::Sequential> s0_, s1_;
  std::unique_ptr<ddp::Optimizer> o0_, o1_;
  std::unique_ptr<ddp::Reducer> r1_, r0_;
  ddp::DeviceArray<float> grad_;
};

}  // namespace

std::unique_ptr<TrainModel> make_train_model(const TrainOptions& o,
                                             const ddp::Shape& sample, ddp::Device device,
                                             ddp::Communicator* comm,
                                             std::uint64_t seed) {
  // Purpose tag 3: model initialisation, apart from the loader's tags 0-2.
  Rng rng{SeedSequence(seed, {3})};
  const Mode mode = o.mode;
  if (mode == Mode::kDataParallel)
    return std::make_unique<DataParallelModel>(o, sample, seed);
  if (!comm) throw ConfigError("ddp modes need a communicator");
  Layers layers = build_layers(o.model, sample);
  if (mode == Mode::kModelParallel)
    return std::make_unique<PipelineModel>(o, std::move(layers), device, *comm, rng);
  return std::make_unique<DdpModel>(o, std::move(layers), device, *comm, rng);
}

}  // namespace seedloader::train
