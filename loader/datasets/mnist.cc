#include "seedloader/datasets/mnist.h"

#include <cstdio>

#include "base/file_io.h"
#include "loader/datasets/byte_order.h"
#include "loader/datasets/image_output.h"
#include "seedloader/error.h"

namespace seedloader {
namespace {

// The first `n` bytes of `f` (n <= 16), or a DataError when it is shorter.
std::vector<std::uint8_t> read_header(const FileHandle& f, std::uint64_t n) {
  if (f.size() < n) {
    throw DataError("Mnist: " + f.path() + " is shorter than its IDX header");
  }
  std::vector<std::uint8_t> bytes;
  f.read_at(0, n, bytes);
  return bytes;
}

// Checks the magic and header length; returns the first dimension (the count).
std::uint32_t check_idx(const FileHandle& f, std::uint32_t magic, std::uint64_t header) {
  const std::vector<std::uint8_t> bytes = read_header(f, header);
  const std::uint32_t got = load_be32(bytes.data());
  if (got != magic) {
    char text[64];
    std::snprintf(text, sizeof text, "wrong IDX magic 0x%08x (expected 0x%08x)", got,
                  magic);
    throw DataError("Mnist: " + f.path() + ": " + text);
  }
  return load_be32(bytes.data() + 4);
}

std::string prefix(Split split) { return split == Split::kTrain ? "train" : "t10k"; }

cv::Size image_size(const FileHandle& images) {
  check_idx(images, 0x00000803, 16);
  const std::vector<std::uint8_t> bytes = read_header(images, 16);
  const std::uint32_t rows = load_be32(bytes.data() + 8);
  const std::uint32_t cols = load_be32(bytes.data() + 12);
  if (rows == 0 || cols == 0 || rows > 4096 || cols > 4096) {
    throw DataError("Mnist: " + images.path() + ": image size " + std::to_string(rows) +
                    "x" + std::to_string(cols) + " out of range");
  }
  return {static_cast<int>(cols), static_cast<int>(rows)};
}

}  // namespace

struct Mnist::State {
  State(std::string dir, Split split, Compose transform)
      : dir(std::move(dir)),
        split(split),
        images(this->dir + "/" + prefix(split) + "-images-idx3-ubyte"),
        labels(this->dir + "/" + prefix(split) + "-labels-idx1-ubyte"),
        output(std::move(transform), 1, image_size(images), "Mnist(" + this->dir + ")") {}

  std::string dir;
  Split split;
  // Read with pread per sample; the descriptors are inherited by the workers.
  FileHandle images;
  FileHandle labels;
  std::uint64_t count = 0;
  int rows = 0, cols = 0;
  ImageOutput output;
  SampleLayout layout;
};

Mnist::Mnist(std::string dir, Split split, Compose transform) {
  auto s = std::make_unique<State>(std::move(dir), split, std::move(transform));
  s->layout = SampleLayout(
      {s->output.field("image"), FieldSpec{"label", DType::kI64, {}, false}});
  const cv::Size size = image_size(s->images);
  s->rows = size.height;
  s->cols = size.width;
  const FileHandle& images = s->images;
  const FileHandle& labels = s->labels;
  const std::uint64_t n_images = check_idx(images, 0x00000803, 16);
  const std::uint64_t n_labels = check_idx(labels, 0x00000801, 8);
  const std::uint64_t per_image = static_cast<std::uint64_t>(s->rows) * s->cols;
  if (n_images > (images.size() - 16) / per_image) {
    throw DataError("Mnist: " + images.path() + " claims " + std::to_string(n_images) +
                    " images but holds bytes for " +
                    std::to_string((images.size() - 16) / per_image));
  }
  if (n_labels > labels.size() - 8) {
    throw DataError("Mnist: " + labels.path() + " claims " + std::to_string(n_labels) +
                    " labels but holds " + std::to_string(labels.size() - 8));
  }
  if (n_images != n_labels) {
    throw DataError("Mnist: " + images.path() + " has " + std::to_string(n_images) +
                    " images but " + labels.path() + " has " + std::to_string(n_labels) +
                    " labels");
  }
  s->count = n_images;
  state_ = std::move(s);
}

Mnist::~Mnist() = default;

std::uint64_t Mnist::size() const { return state_->count; }

const SampleLayout& Mnist::layout() const { return state_->layout; }

std::string Mnist::describe() const {
  return "Mnist(" + state_->dir +
         (state_->split == Split::kTrain ? ", train)" : ", test)");
}

void Mnist::get(std::uint64_t index, Rng& rng, SampleWriter& out) const {
  const State& s = *state_;
  if (index >= s.count) {
    throw DataError(describe() + ": sample " + std::to_string(index) + " out of range");
  }
  const std::uint64_t per_image = static_cast<std::uint64_t>(s.rows) * s.cols;
  try {
    cv::Mat image(s.rows, s.cols, CV_8UC1);
    s.images.read_at(16 + index * per_image,
                     std::span<std::uint8_t>(image.data, per_image));
    std::uint8_t label = 0;
    s.labels.read_at(8 + index, std::span<std::uint8_t>(&label, 1));
    // Checked like CIFAR's label byte: a model with 10 outputs would index past
    // its logits with anything above 9.
    if (label > 9) {
      throw DataError(describe() + ": sample " + std::to_string(index) + " (" +
                      s.labels.path() + "): label byte " + std::to_string(label) +
                      " is not a class in [0, 10)");
    }
    s.output.write(std::move(image), rng, nullptr, out, 0);
    out.field<std::int64_t>(1)[0] = label;
  } catch (...) {
    rethrow_as_data_error(describe() + ": sample " + std::to_string(index) + " (" +
                          s.images.path() + ")");
  }
}

}  // namespace seedloader
