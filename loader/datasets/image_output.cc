#include "loader/datasets/image_output.h"

#include <exception>
#include <mutex>

#include "loader/worker_hooks.h"
#include "seedloader/error.h"

namespace seedloader {

ImageOutput::ImageOutput(Compose transform, int channels, cv::Size input,
                         const std::string& who)
    : transform_(std::move(transform)), channels_(channels) {
  // Workers decode one sample at a time; OpenCV's own pool would only
  // oversubscribe the cores the workers already fill.
  static std::once_flag capped;
  std::call_once(capped, [] { add_worker_start_hook([] { cv::setNumThreads(1); }); });
  if (channels != 1 && channels != 3) {
    throw ConfigError(who + ": channels must be 1 or 3");
  }
  size_ = transform_.output_size(input);
  fused_ = transform_.fuses();
  if (size_.width <= 0 || size_.height <= 0) {
    throw ConfigError(who +
                      ": the transform chain does not fix the image size; end it with a "
                      "crop, a random resized crop or an exact resize (WxH)");
  }
}

FieldSpec ImageOutput::field(std::string name) const {
  return FieldSpec{std::move(name),
                   transform_.output().dtype(),
                   {channels_, size_.height, size_.width},
                   false};
}

template <typename Fn>
void ImageOutput::with_image_field(SampleWriter& out, std::size_t f, Fn&& fn) const {
  switch (transform_.output().dtype()) {
    case DType::kU8:
      return fn(out.field<std::uint8_t>(f));
    case DType::kF16:
      return fn(out.field<Float16>(f));
    case DType::kBF16:
      return fn(out.field<BFloat16>(f));
    default:
      return fn(out.field<float>(f));
  }
}

void ImageOutput::store(const cv::Mat& image, SampleWriter& out, std::size_t f) const {
  if (image.cols != size_.width || image.rows != size_.height ||
      image.channels() != channels_) {
    throw DataError("the transform chain produced a " + std::to_string(image.channels()) +
                    "x" + std::to_string(image.rows) + "x" + std::to_string(image.cols) +
                    " image; the layout expects " + std::to_string(channels_) + "x" +
                    std::to_string(size_.height) + "x" + std::to_string(size_.width));
  }
  with_image_field(out, f, [&](auto row) { transform_.output().write(image, row); });
}

void ImageOutput::write(cv::Mat image, Rng& rng, TransformLog* log, SampleWriter& out,
                        std::size_t f) const {
  store(transform_.apply(std::move(image), rng, log), out, f);
}

void ImageOutput::write(const ImageSource& source, Rng& rng, TransformLog* log,
                        SampleWriter& out, std::size_t f) const {
  if (!fused_) return store(transform_.apply(source, rng, log), out, f);
  with_image_field(out, f,
                   [&](auto row) { transform_.write_fused(source, rng, log, row); });
}

void rethrow_as_data_error(const std::string& where) {
  try {
    throw;
  } catch (const cv::Exception& e) {
    throw DataError(where + ": OpenCV: " + e.what());
  } catch (const DataError& e) {
    throw DataError(where + ": " + e.what());
  }
  // Anything else (out of memory, a ConfigError, a logic error) says nothing
  // about the input: it propagates unchanged, so the skip policy cannot hide it.
}

}  // namespace seedloader
