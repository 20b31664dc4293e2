#include "seedloader/datasets/cifar10.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "base/file_io.h"
#include "loader/datasets/cifar_pickle.h"
#include "loader/datasets/image_output.h"
#include "seedloader/error.h"

namespace seedloader {

namespace {

enum class Layout { kBinary, kPickled };

bool exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

bool is_dir(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

// Where the batch files are and in which layout: DIR/cifar-10-batches-bin,
// DIR/cifar-10-batches-py, or DIR itself holding either kind of file.
std::pair<std::string, Layout> find_layout(const std::string& dir) {
  if (is_dir(dir + "/cifar-10-batches-bin"))
    return {dir + "/cifar-10-batches-bin", Layout::kBinary};
  if (is_dir(dir + "/cifar-10-batches-py"))
    return {dir + "/cifar-10-batches-py", Layout::kPickled};
  for (const char* name : {"data_batch_1.bin", "test_batch.bin", "batches.meta.txt"}) {
    if (exists(dir + "/" + name)) return {dir, Layout::kBinary};
  }
  for (const char* name : {"data_batch_1", "test_batch", "batches.meta"}) {
    if (exists(dir + "/" + name)) return {dir, Layout::kPickled};
  }
  throw DataError(
      "Cifar10: " + dir +
      (is_dir(dir) ? " holds no CIFAR-10 batch files" : " is not a directory") +
      "; expected the binary layout (cifar-10-batches-bin: data_batch_1.bin .. "
      "data_batch_5.bin, test_batch.bin) or the pickled one torchvision "
      "downloads (cifar-10-batches-py: data_batch_1 .. data_batch_5, "
      "test_batch, batches.meta), either as that folder or inside it");
}

}  // namespace

struct Cifar10::State {
  State(std::string dir, Split split, Compose transform)
      : dir(std::move(dir)),
        split(split),
        output(std::move(transform), 3, {32, 32}, "Cifar10(" + this->dir + ")") {}

  std::string dir;
  Split split;
  Layout format = Layout::kBinary;
  ImageOutput output;
  SampleLayout layout;
  // Read with pread per record; the descriptors are inherited by the workers.
  std::vector<FileHandle> files;
  std::vector<std::uint64_t> starts;  // first sample of each file, then the total
  // Pickled layout: where each file's pixel rows start, and every sample's label.
  std::vector<std::uint64_t> data_offsets;
  std::vector<std::uint8_t> labels;
};

Cifar10::Cifar10(std::string dir, Split split, Compose transform) {
  auto s = std::make_unique<State>(std::move(dir), split, std::move(transform));
  s->layout = SampleLayout(
      {s->output.field("image"), FieldSpec{"label", DType::kI64, {}, false}});
  const auto [folder, format] = find_layout(s->dir);
  s->format = format;
  const std::string suffix = format == Layout::kBinary ? ".bin" : "";
  std::vector<std::string> names;
  if (split == Split::kTrain) {
    for (int i = 1; i <= 5; ++i)
      names.push_back("data_batch_" + std::to_string(i) + suffix);
  } else {
    names.push_back("test_batch" + suffix);
  }
  // torchvision reads batches.meta for the class names; a folder without a
  // valid one is not the layout it downloads.
  if (format == Layout::kPickled)
    read_cifar_pickle_meta(FileHandle(folder + "/batches.meta"));
  s->starts.push_back(0);
  s->files.reserve(names.size());
  for (const std::string& name : names) {
    s->files.emplace_back(folder + "/" + name);
    const FileHandle& file = s->files.back();
    if (format == Layout::kPickled) {
      CifarPickleBatch batch = read_cifar_pickle_batch(file);
      s->data_offsets.push_back(batch.data_offset);
      s->labels.insert(s->labels.end(), batch.labels.begin(), batch.labels.end());
      s->starts.push_back(s->starts.back() + batch.rows);
      continue;
    }
    const std::uint64_t bytes = file.size();
    if (bytes == 0 || bytes % kRecordBytes != 0) {
      throw DataError("Cifar10: " + file.path() + " holds " + std::to_string(bytes) +
                      " bytes, not a positive multiple of " +
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
           s.files[file].path() +
           (s.format == Layout::kPickled ? ", row " : ", record ") +
           std::to_string(index - starts[file]) + ")";
  };
  const std::uint64_t row = index - starts[file];
  const bool pickled = s.format == Layout::kPickled;
  // Binary records are a label byte and the row; pickled rows are the row only.
  try {
    if (pickled) {
      s.files[file].read_at(s.data_offsets[file] + row * kCifarRowBytes, kCifarRowBytes,
                            bytes);
    } else {
      s.files[file].read_at(row * kRecordBytes, kRecordBytes, bytes);
    }
  } catch (...) {
    rethrow_as_data_error(where());
  }
  const std::uint8_t label = pickled ? s.labels[index] : bytes[0];
  if (label > 9)
    throw DataError(where() + ": label byte " + std::to_string(label) +
                    " is not a class in [0, 10)");
  try {
    // Planar RGB -> interleaved HWC for the transforms.
    cv::Mat image(32, 32, CV_8UC3);
    const std::uint8_t* planes = pickled ? bytes.data() : bytes.data() + 1;
    for (int p = 0; p < 1024; ++p) {
      image.data[3 * p + 0] = planes[p];
      image.data[3 * p + 1] = planes[1024 + p];
      image.data[3 * p + 2] = planes[2048 + p];
    }
    s.output.write(std::move(image), rng, nullptr, out, 0);
    out.field<std::int64_t>(1)[0] = label;
  } catch (...) {
    rethrow_as_data_error(where());
  }
}

}  // namespace seedloader
