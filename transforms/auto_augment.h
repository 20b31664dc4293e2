// TrivialAugmentWide and RandAugment: torchvision 0.14's automatic augmentation
// policies over the ops of augment_ops.h, with its magnitude tables and its order
// of draws, each draw an integer from the sample's stream (bounded()):
//   TrivialAugmentWide: op ~ [0, 14); bin ~ [0, bins) when the op has magnitudes;
//     a sign ~ [0, 2) (1 negates) when the op is signed; then the op.
//   RandAugment: N times: op ~ [0, 14); a sign when the op is signed; the op at
//     the fixed bin M.
// Magnitude tables are torchvision's float32 torch.linspace values, bit for bit
// (see torch_linspace_at); RandAugment's translation is 150/331 of the image's
// width or height. Each op applied is logged as <step>.op (its index above) and
// <step>.magnitude (signed), with step "trivialaugment" or "randaugment".
// Immutable; safe to share across threads and processes.
#pragma once

#include "transforms/augment_ops.h"

namespace seedloader {

// torch.linspace(start, end, steps)[i] in float32 as torch 1.13's CPU kernel
// writes it with its AVX2 dispatch (the one x86-64 CPUs of the last decade run):
// fused multiply-adds from whichever end is nearer, except in blocks of 16 at the
// front, where each run of 8 adds multiples of the step to the first one's value.
// REQUIRES: 0 <= i < steps.
float torch_linspace_at(float start, float end, int steps, int i);

enum class AugmentPolicy { kTrivialAugmentWide, kRandAugment };

// Whether `op` draws a sign, and whether it has a magnitude table at all.
bool augment_op_signed(AugmentOp op);
bool augment_op_has_magnitudes(AugmentOp op);

// The magnitude of `op` at `bin` of `bins` (before the sign), as torchvision's
// _augmentation_space(bins[, (height, width)]) holds it, widened to double as
// its .item() does; 0 for the ops without a table.
// REQUIRES: 0 <= bin < bins.
double augment_magnitude(AugmentPolicy policy, AugmentOp op, int bins, int bin,
                         cv::Size image);

class TrivialAugmentWide final : public Transform {
 public:
  // Throws ConfigError unless 2 <= bins <= 1024.
  explicit TrivialAugmentWide(int bins = 31);
  cv::Mat apply(cv::Mat image, Rng& rng, TransformLog* log) const override;
  std::string describe() const override;

 private:
  int bins_;
};

class RandAugment final : public Transform {
 public:
  // Throws ConfigError unless 0 <= num_ops <= 16, 2 <= bins <= 1024 and
  // 0 <= magnitude < bins.
  RandAugment(int num_ops = 2, int magnitude = 9, int bins = 31);
  cv::Mat apply(cv::Mat image, Rng& rng, TransformLog* log) const override;
  std::string describe() const override;

 private:
  int num_ops_, magnitude_, bins_;
};

}  // namespace seedloader
