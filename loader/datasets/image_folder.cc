#include "seedloader/datasets/image_folder.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "loader/datasets/file_io.h"
#include "loader/datasets/image_decode.h"
#include "loader/datasets/image_output.h"
#include "loader/datasets/path_index.h"
#include "seedloader/error.h"

namespace seedloader {
namespace fs = std::filesystem;

struct ImageFolder::State {
  State(std::string root, Compose transform, ImageFolderOptions options)
      : root(std::move(root)),
        options(options),
        output(std::move(transform), options.channels, {0, 0},
               "ImageFolder(" + this->root + ")"),
        layout({output.field("image"), FieldSpec{"label", DType::kI64, {}, false}}) {}

  std::string root;
  ImageFolderOptions options;
  ImageOutput output;
  SampleLayout layout;
  std::vector<std::string> classes;
  PathIndex index;
};

ImageFolder::ImageFolder(std::string root, Compose transform,
                         ImageFolderOptions options) {
  auto s = std::make_unique<State>(std::move(root), std::move(transform), options);
  const std::string& top = s->root;
  std::vector<std::string>& classes = s->classes;
  std::error_code ec;
  if (!fs::is_directory(top, ec)) {
    throw DataError("ImageFolder: root " + top + " does not exist or is not a directory");
  }
  for (const fs::directory_entry& entry : fs::directory_iterator(top, ec)) {
    if (entry.is_directory()) classes.push_back(entry.path().filename().string());
  }
  if (ec) throw DataError("ImageFolder: cannot list " + top + ": " + ec.message());
  if (classes.empty()) throw DataError("ImageFolder: no class folders under " + top);
  std::sort(classes.begin(), classes.end());

  std::vector<std::string> files;
  for (std::size_t label = 0; label < classes.size(); ++label) {
    const fs::path dir = fs::path(top) / classes[label];
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
    for (const std::string& f : files) s->index.add(f, static_cast<std::int32_t>(label));
  }
  s->index.shrink_to_fit();
  state_ = std::move(s);
}

ImageFolder::~ImageFolder() = default;

std::uint64_t ImageFolder::size() const { return state_->index.size(); }

const SampleLayout& ImageFolder::layout() const { return state_->layout; }

std::string ImageFolder::describe() const { return "ImageFolder(" + state_->root + ")"; }

const std::vector<std::string>& ImageFolder::classes() const { return state_->classes; }

void ImageFolder::get(std::uint64_t index, Rng& rng, SampleWriter& out) const {
  get_logged(index, rng, out, nullptr);
}

void ImageFolder::get_logged(std::uint64_t index, Rng& rng, SampleWriter& out,
                             TransformLog* log) const {
  const State& s = *state_;
  if (index >= s.index.size()) {
    throw DataError(describe() + ": sample " + std::to_string(index) + " out of range (" +
                    std::to_string(s.index.size()) + " samples)");
  }
  thread_local std::vector<std::uint8_t> bytes;
  try {
    read_whole_file(s.index.path(index), bytes);
    const EncodedImage source(bytes, s.options.max_pixels, s.options.channels);
    s.output.write(source, rng, log, out, 0);
    out.field<std::int64_t>(1)[0] = s.index.label(index);
  } catch (...) {
    rethrow_as_data_error(describe() + ": sample " + std::to_string(index) + " (" +
                          s.index.path(index) + ")");
  }
}

}  // namespace seedloader
