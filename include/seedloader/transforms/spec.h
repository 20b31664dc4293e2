// A textual transform chain for command lines, parsed into a Compose.
//
// Grammar (no spaces):
//   spec  := step ("," step)*
//   step  := name (":" arg)*
//   SIZE  := N | WxH               (N means NxN)
// Steps, in the order they run:
//   rrc:SIZE[:SMIN:SMAX[:RMIN:RMAX]]   RandomResizedCrop, default scale 0.08..1,
//                                      ratio 3/4..4/3
//   crop:SIZE[:PADDING]                RandomCrop with zero padding (default 0)
//   centercrop:SIZE                    CenterCrop
//   resize:N | resize:WxH              Resize: shorter side to N, or exact
//   hflip[:P] | vflip[:P]              RandomHorizontalFlip / RandomVerticalFlip, P = 0.5
//   jitter:B:C:S:H                     ColorJitter(brightness, contrast, saturation, hue)
//   rotate:DEG                         RandomRotation(-DEG, DEG)
//   blur:K:SMIN:SMAX                   GaussianBlur, odd kernel K, sigma ~ U(SMIN, SMAX)
//   erase[:P[:SMIN:SMAX[:RMIN:RMAX[:V]]]]  RandomErasing, P = 0.5, scale 0.02..0.33,
//                                      ratio 0.3..3.3, fill V in pixel units (0)
//   trivialaugment[:BINS]              TrivialAugmentWide, BINS = 31 (2..1024)
//   randaugment[:N[:M[:BINS]]]         RandAugment, N = 2 ops (0..16) at bin M = 9
//                                      of BINS = 31 (0 <= M < BINS)
// Output (at most one, after every image step; default float32 in [0, 1]):
//   totensor                           float32 in [0, 1]
//   normalize:imagenet | normalize:M:S | normalize:M0:M1:M2:S0:S1:S2
//   u8                                 CHW uint8, unscaled
// totensor and normalize take a last argument f16 or bf16 for a float16 or
// bfloat16 output (e.g. normalize:imagenet:bf16); f32 is the default.
// Example: "rrc:224,hflip,jitter:0.4:0.4:0.4:0.1,normalize:imagenet".
// An unknown name, a wrong argument count, a bad or non-finite number or an
// out-of-range value throws ConfigError naming the token. Ranges: sizes and
// padding at most 65536 per side and 2^28 pixels in area, blur kernel odd and at
// most 255 with 0 < sigma <= 1000, rotation 0..360 degrees, jitter strengths
// >= 0 with hue <= 0.5, scale in (0, 1] and ratio > 0 with min <= max, normalize
// std > 0; every number finite.
#pragma once

#include <string_view>

#include "seedloader/transforms/compose.h"

namespace seedloader {

Compose parse_transform_spec(std::string_view spec);

}  // namespace seedloader
