#include "seedloader/datasets/cifar10.h"

#include <algorithm>
#include <vector>

#include "loader/datasets/file_io.h"
#include "loader/datasets/image_output.h"
#include "seedloader/error.h"

namespace seedloader {

struct Cifar10::State {
  State(std::string dir, Split split, Compose transform)
      : dir(std::move(dir)),
        split(split),
        output(std::move(transform), 3, {32, 32}, "Cifar10(" + this->dir + ")") {}

  std::string dir;
  Split split;
  ImageOutput output;
  SampleLayout layout;
  // Read with pread per record; the descriptors are inherited by the workers.
  std::vector<FileHandle> files;
  std::vector<std::uint64_t> starts;  // first sample of each file, then the total
};

Cifar10::Cifar10(std::string dir, Split split, Compose transform) {
  auto s = std::make_unique<State>(std::move(dir), split, std::move(transform));
  s->layout = SampleLayout(
      {s->output.field("image"), FieldSpec{"label", DType::kI64, {}, false}});
  std::vector<std::string> names;
  if (split == Split::kTrain) {
    for (int i = 1; i <= 5; ++i)
      names.push_back("data_batch_" + std::to_string(i) + ".bin");
  } else {
    names.push_back("test_batch.bin");
  }
  s->starts.push_back(0);
  s->files.reserve(names.size());
  for (const std::string& name : names) {
    s->files.emplace_back(s->dir + "/" + name);
    const std::uint64_t bytes = s->files.back().size();
    if (bytes == 0 || bytes % kRecordBytes != 0) {
      throw DataError("Cifar10: " + s->files.back().path() + " holds " +
                      std::to_string(bytes) + " bytes, not a positive multiple of " +
                      std::to_string(kRecordBytes));
    }
    s->starts.push_back(s->starts.back() + bytes / kRecordBytes);
  }
  state_ = std::move(s);
}

Cifar10::~Cifar10() = default;

std::uint64_t Cifar10::size() const { return state_->starts.back(); }

const SampleLayout& Cifar10::layout() const { return state_->layout; }

std::string Cifar10::describe() const {
  return "Cifar10(" + state_->dir +
         (state_->split == Split::kTrain ? ", train)" : ", test)");
}

void Cifar10::get(std::uint64_t index, Rng& rng, SampleWriter& out) const {
  const State& s = *state_;
  const std::vector<std::uint64_t>& starts = s.starts;
  if (index >= starts.back()) {
    throw DataError(describe() + ": sample " + std::to_string(index) + " out of range");
  }
  const std::size_t file = static_cast<std::size_t>(
      std::upper_bound(starts.begin(), starts.end(), index) - starts.begin() - 1);
  thread_local std::vector<std::uint8_t> bytes;
  // Built only when something fails: a CIFAR sample is a 3 KB copy, and five
  // string allocations would cost more than the sample itself.
  auto where = [&] {
    return describe() + ": sample " + std::to_string(index) + " (" +
           s.files[file].path() + ", record " + std::to_string(index - starts[file]) +
           ")";
  };
  try {
    s.files[file].read_at((index - starts[file]) * kRecordBytes, kRecordBytes, bytes);
  } catch (...) {
    rethrow_as_data_error(where());
  }
  const std::uint8_t* record = bytes.data();
  if (record[0] > 9)
    throw DataError(where() + ": label byte " + std::to_string(record[0]) +
                    " is not a class in [0, 10)");
  try {
    // Planar RGB -> interleaved HWC for the transforms.
    cv::Mat image(32, 32, CV_8UC3);
    const std::uint8_t* planes = record + 1;
    for (int p = 0; p < 1024; ++p) {
      image.data[3 * p + 0] = planes[p];
      image.data[3 * p + 1] = planes[1024 + p];
      image.data[3 * p + 2] = planes[2048 + p];
    }
    s.output.write(std::move(image), rng, nullptr, out, 0);
    out.field<std::int64_t>(1)[0] = record[0];
  } catch (...) {
    rethrow_as_data_error(where());
  }
}

}  // namespace seedloader
