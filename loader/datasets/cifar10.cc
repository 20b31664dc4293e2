#include "loader/datasets/cifar10.h"

#include <algorithm>

#include "rng/error.h"

namespace seedloader {

Cifar10::Cifar10(std::string dir, bool train, Compose transform)
    : dir_(std::move(dir)),
      train_(train),
      output_(std::move(transform), 3, {32, 32}, "Cifar10(" + dir_ + ")") {
  layout_ =
      SampleLayout({output_.field("image"), FieldSpec{"label", DType::kI64, {}, false}});
  std::vector<std::string> names;
  if (train) {
    for (int i = 1; i <= 5; ++i)
      names.push_back("data_batch_" + std::to_string(i) + ".bin");
  } else {
    names.push_back("test_batch.bin");
  }
  starts_.push_back(0);
  files_.reserve(names.size());
  for (const std::string& name : names) {
    files_.emplace_back(dir_ + "/" + name);
    const std::uint64_t bytes = files_.back().size();
    if (bytes == 0 || bytes % kRecordBytes != 0) {
      throw DataError("Cifar10: " + files_.back().path() + " holds " +
                      std::to_string(bytes) + " bytes, not a positive multiple of " +
                      std::to_string(kRecordBytes));
    }
    starts_.push_back(starts_.back() + bytes / kRecordBytes);
  }
}

std::string Cifar10::describe() const {
  return "Cifar10(" + dir_ + (train_ ? ", train)" : ", test)");
}

void Cifar10::get(std::uint64_t index, Rng& rng, SampleWriter& out) const {
  if (index >= size()) {
    throw DataError(describe() + ": sample " + std::to_string(index) + " out of range");
  }
  const std::size_t file = static_cast<std::size_t>(
      std::upper_bound(starts_.begin(), starts_.end(), index) - starts_.begin() - 1);
  const std::uint8_t* record =
      files_[file].bytes().data() + (index - starts_[file]) * kRecordBytes;
  // Built only when something fails: a CIFAR sample is a 3 KB copy, and five
  // string allocations would cost more than the sample itself.
  auto where = [&] {
    return describe() + ": sample " + std::to_string(index) + " (" + files_[file].path() +
           ", record " + std::to_string(index - starts_[file]) + ")";
  };
  if (record[0] > 9)
    throw DataError(where() + ": label byte " + std::to_string(record[0]));
  try {
    // Planar RGB -> interleaved HWC for the transforms.
    cv::Mat image(32, 32, CV_8UC3);
    const std::uint8_t* planes = record + 1;
    for (int p = 0; p < 1024; ++p) {
      image.data[3 * p + 0] = planes[p];
      image.data[3 * p + 1] = planes[1024 + p];
      image.data[3 * p + 2] = planes[2048 + p];
    }
    output_.write(std::move(image), rng, nullptr, out, 0);
    out.field<std::int64_t>(1)[0] = record[0];
  } catch (...) {
    rethrow_as_data_error(where());
  }
}

}  // namespace seedloader
