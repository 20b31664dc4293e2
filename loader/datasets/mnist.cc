#include "loader/datasets/mnist.h"

#include <cstdio>

#include "loader/datasets/byte_order.h"
#include "rng/error.h"

namespace seedloader {
namespace {

// Checks the magic and header length; returns the first dimension (the count).
std::uint32_t check_idx(const MappedFile& f, std::uint32_t magic, std::uint64_t header) {
  if (f.size() < header) {
    throw DataError("Mnist: " + f.path() + " is shorter than its IDX header");
  }
  const std::uint32_t got = load_be32(f.bytes().data());
  if (got != magic) {
    char text[64];
    std::snprintf(text, sizeof text, "wrong IDX magic 0x%08x (expected 0x%08x)", got,
                  magic);
    throw DataError("Mnist: " + f.path() + ": " + text);
  }
  return load_be32(f.bytes().data() + 4);
}

std::string prefix(bool train) { return train ? "train" : "t10k"; }

}  // namespace

cv::Size Mnist::image_size(const MappedFile& images) {
  check_idx(images, 0x00000803, 16);
  const std::uint32_t rows = load_be32(images.bytes().data() + 8);
  const std::uint32_t cols = load_be32(images.bytes().data() + 12);
  if (rows == 0 || cols == 0 || rows > 4096 || cols > 4096) {
    throw DataError("Mnist: " + images.path() + ": image size " + std::to_string(rows) +
                    "x" + std::to_string(cols) + " out of range");
  }
  return {static_cast<int>(cols), static_cast<int>(rows)};
}

Mnist::Mnist(std::string dir, bool train, Compose transform)
    : dir_(std::move(dir)),
      train_(train),
      images_(dir_ + "/" + prefix(train) + "-images-idx3-ubyte"),
      labels_(dir_ + "/" + prefix(train) + "-labels-idx1-ubyte"),
      output_(std::move(transform), 1, image_size(images_), "Mnist(" + dir_ + ")") {
  layout_ =
      SampleLayout({output_.field("image"), FieldSpec{"label", DType::kI64, {}, false}});
  const cv::Size size = image_size(images_);
  rows_ = size.height;
  cols_ = size.width;
  const std::uint64_t n_images = check_idx(images_, 0x00000803, 16);
  const std::uint64_t n_labels = check_idx(labels_, 0x00000801, 8);
  const std::uint64_t per_image = static_cast<std::uint64_t>(rows_) * cols_;
  if (n_images > (images_.size() - 16) / per_image) {
    throw DataError("Mnist: " + images_.path() + " claims " + std::to_string(n_images) +
                    " images but holds bytes for " +
                    std::to_string((images_.size() - 16) / per_image));
  }
  if (n_labels > labels_.size() - 8) {
    throw DataError("Mnist: " + labels_.path() + " claims " + std::to_string(n_labels) +
                    " labels but holds " + std::to_string(labels_.size() - 8));
  }
  if (n_images != n_labels) {
    throw DataError("Mnist: " + images_.path() + " has " + std::to_string(n_images) +
                    " images but " + labels_.path() + " has " + std::to_string(n_labels) +
                    " labels");
  }
  count_ = n_images;
}

std::string Mnist::describe() const {
  return "Mnist(" + dir_ + (train_ ? ", train)" : ", test)");
}

void Mnist::get(std::uint64_t index, Rng& rng, SampleWriter& out) const {
  if (index >= size()) {
    throw DataError(describe() + ": sample " + std::to_string(index) + " out of range");
  }
  const std::uint64_t per_image = static_cast<std::uint64_t>(rows_) * cols_;
  try {
    // A copy, since the mapping is read-only and a transform may work in place.
    const cv::Mat view(
        rows_, cols_, CV_8UC1,
        const_cast<std::uint8_t*>(images_.bytes().data() + 16 + index * per_image));
    output_.write(view.clone(), rng, nullptr, out, 0);
    out.field<std::int64_t>(1)[0] = labels_.bytes()[8 + index];
  } catch (...) {
    rethrow_as_data_error(describe() + ": sample " + std::to_string(index) + " (" +
                          images_.path() + ")");
  }
}

}  // namespace seedloader
