#include "loader/datasets/image_folder.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "loader/datasets/file_io.h"
#include "rng/error.h"

namespace seedloader {
namespace fs = std::filesystem;

ImageFolder::ImageFolder(std::string root, Compose transform, ImageFolderOptions options)
    : root_(std::move(root)),
      options_(options),
      output_(std::move(transform), options.channels, {0, 0},
              "ImageFolder(" + root_ + ")") {
  layout_ =
      SampleLayout({output_.field("image"), FieldSpec{"label", DType::kI64, {}, false}});
  std::error_code ec;
  if (!fs::is_directory(root_, ec)) {
    throw DataError("ImageFolder: root " + root_ +
                    " does not exist or is not a directory");
  }
  for (const fs::directory_entry& entry : fs::directory_iterator(root_, ec)) {
    if (entry.is_directory()) classes_.push_back(entry.path().filename().string());
  }
  if (ec) throw DataError("ImageFolder: cannot list " + root_ + ": " + ec.message());
  if (classes_.empty()) throw DataError("ImageFolder: no class folders under " + root_);
  std::sort(classes_.begin(), classes_.end());

  std::vector<std::string> files;
  for (std::size_t label = 0; label < classes_.size(); ++label) {
    const fs::path dir = fs::path(root_) / classes_[label];
    files.clear();
    for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
      if (!entry.is_directory() &&
          is_image_extension(entry.path().extension().string())) {
        files.push_back(entry.path().string());
      }
    }
    if (ec)
      throw DataError("ImageFolder: cannot list " + dir.string() + ": " + ec.message());
    if (files.empty()) {
      throw DataError("ImageFolder: class folder " + dir.string() +
                      " holds no image file (jpg, jpeg, png, bmp, webp)");
    }
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) index_.add(f, static_cast<std::int32_t>(label));
  }
  index_.shrink_to_fit();
}

void ImageFolder::get(std::uint64_t index, Rng& rng, SampleWriter& out) const {
  get_logged(index, rng, out, nullptr);
}

void ImageFolder::get_logged(std::uint64_t index, Rng& rng, SampleWriter& out,
                             TransformLog* log) const {
  if (index >= size()) {
    throw DataError(describe() + ": sample " + std::to_string(index) + " out of range (" +
                    std::to_string(size()) + " samples)");
  }
  thread_local std::vector<std::uint8_t> bytes;
  try {
    read_whole_file(index_.path(index), bytes);
    const EncodedImage source(bytes, options_.max_pixels, options_.channels);
    output_.write(source, rng, log, out, 0);
    out.field<std::int64_t>(1)[0] = index_.label(index);
  } catch (...) {
    rethrow_as_data_error(describe() + ": sample " + std::to_string(index) + " (" +
                          index_.path(index) + ")");
  }
}

}  // namespace seedloader
