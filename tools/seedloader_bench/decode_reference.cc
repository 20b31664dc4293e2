#include "tools/seedloader_bench/decode_reference.h"

#include <chrono>
#include <vector>

#include "base/file_io.h"
#include "loader/datasets/image_decode.h"
#include "seedloader/datasets/image_folder.h"
#include "seedloader/error.h"

namespace seedloader::bench {

DecodeReference measure_decode_reference(const Dataset& dataset, std::uint64_t count,
                                         double min_seconds) {
  const auto* folder = dynamic_cast<const ImageFolder*>(&dataset);
  if (folder == nullptr) {
    throw ConfigError("--decode-reference needs --data imagefolder:DIR, not " +
                      dataset.describe());
  }
  std::vector<std::vector<std::uint8_t>> files;
  std::vector<ImageHeader> headers;
  for (std::uint64_t i = 0; i < folder->size() && files.size() < count; ++i) {
    const std::string path = folder->path(i);
    std::vector<std::uint8_t> bytes;
    ImageHeader header;
    try {
      read_whole_file(path.c_str(), bytes);  // its errors name the file
    } catch (const DataError& e) {
      throw DataError(std::string("--decode-reference: ") + e.what());
    }
    try {
      header = probe_image(bytes, kDefaultMaxPixels);
    } catch (const DataError& e) {
      throw DataError("--decode-reference: " + path + ": " + e.what());
    }
    if (header.format != ImageFormat::kJpeg) continue;  // the reference is JPEG only
    files.push_back(std::move(bytes));
    headers.push_back(header);
  }
  if (files.empty()) {
    throw ConfigError("--decode-reference: " + dataset.describe() + " holds no JPEG");
  }
  using Clock = std::chrono::steady_clock;
  std::uint64_t decoded = 0;
  const Clock::time_point start = Clock::now();
  double seconds = 0;
  do {
    for (std::size_t f = 0; f < files.size(); ++f) {
      cv::Mat image = decode_image(files[f], headers[f], /*reduction=*/1, /*channels=*/3);
      if (image.empty()) throw DataError("--decode-reference: an empty decode");
      ++decoded;
    }
    seconds = std::chrono::duration<double>(Clock::now() - start).count();
  } while (seconds < min_seconds);
  return {files.size(), static_cast<double>(decoded) / seconds};
}

}  // namespace seedloader::bench
