// BatchMix: MixUp and CutMix over whole batches, done by the worker that fills the
// batch, with labels turned into soft targets — what torchvision.transforms.v2's
// MixUp and CutMix do to a collated batch, with the pairing PyTorch uses (each
// sample mixed with the one before it in the batch, the first with the last).
//
// For batch b of an epoch on a rank, a stream (3, epoch, rank, b) (derive.h)
// draws, in order: which of the two to apply when both are on (CutMix with
// probability cutmix_prob), lam ~ Beta(alpha, alpha) (random.h's beta: numpy's
// Generator.beta, draw for draw, for alpha <= 1), and for CutMix the box centre
// (integers(0, W), then integers(0, H)). So a batch's mixing depends on the seed,
// epoch, rank and batch index only: not on the worker count or the order
// batches are filled, and mid-epoch resume gives the same batches. Under
// Partition::kElastic the global batch is mixed as one: every rank draws from
// (3, epoch, 0, b), and its first sample is paired with the one before it in the
// global batch (the last of the global batch for rank 0), so the mixed global batch
// is the same at every world size.
//
//   MixUp:  image[i] = lam * image[i] + (1 - lam) * image[i-1]
//   CutMix: half-sides r = 0.5 * sqrt(1 - lam) times W and H around the centre,
//           clipped to the image; image[i][box] = image[i-1][box]; lam becomes
//           1 - box area / image area.
//   target[i] = lam * one_hot(label[i]) + (1 - lam) * one_hot(label[i-1])
//
// The image field is CHW (or HW) as the transforms write it; MixUp needs a
// floating dtype (float32, float16, bfloat16: each product computed in float32
// with the factor as a float32 and rounded to the dtype, then the sum, as torch
// >= 2.1's CPU mul/add do; torch 1.13 first rounds the factor to float16), CutMix
// also takes uint8.
// The target field, float32 [num_classes], is added to the batch's layout; the
// label field is left as it was.
#pragma once

#include <cstdint>
#include <string>

namespace seedloader {

struct BatchMix {
  double mixup_alpha = 0.0;   // > 0 turns MixUp on
  double cutmix_alpha = 0.0;  // > 0 turns CutMix on
  double cutmix_prob = 0.5;   // both on: the chance a batch gets CutMix
  std::int64_t num_classes = 0;
  std::string image_field = "image";
  std::string label_field = "label";
  std::string target_field = "target";

  bool enabled() const { return mixup_alpha > 0.0 || cutmix_alpha > 0.0; }
};

}  // namespace seedloader
