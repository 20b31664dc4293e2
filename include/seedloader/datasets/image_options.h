// Defaults shared by the options of the datasets that decode encoded images
// (ImageFolderOptions, TarShardsOptions).
#pragma once

#include <cstdint>

namespace seedloader {

// 2^28 pixels (16384 x 16384) unless a dataset is configured otherwise; checked
// on the image's header, before any pixel buffer is allocated.
inline constexpr std::uint64_t kDefaultMaxPixels = std::uint64_t{1} << 28;

}  // namespace seedloader
