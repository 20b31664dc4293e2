#include "seedloader/datasets/image_folder.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "base/file_io.h"
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

namespace {

// A directory's identity, to notice a symbolic link that leads back up.
struct DirId {
  dev_t dev;
  ino_t ino;
  bool operator==(const DirId&) const = default;
};

// One directory the walk visited and the image file names directly in it.
struct ImageDir {
  std::string path;
  std::vector<std::string> names;
};

// Appends `dir` and every directory below it (following symbolic links, as
// torchvision's os.walk(followlinks=True) does) to `out`. A link back to an
// ancestor is a DataError rather than an endless walk.
void walk(const fs::path& dir, std::vector<DirId>& ancestors,
          std::vector<ImageDir>& out) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    throw DataError("ImageFolder: cannot open " + dir.string() + ": " +
                    std::strerror(errno));
  }
  const DirId id{st.st_dev, st.st_ino};
  if (std::find(ancestors.begin(), ancestors.end(), id) != ancestors.end()) {
    throw DataError("ImageFolder: " + dir.string() +
                    " is a symbolic link to a folder that contains it (a cycle)");
  }
  ImageDir here{dir.string(), {}};
  std::vector<fs::path> below;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    std::error_code type_ec;
    if (entry.is_directory(type_ec)) {
      below.push_back(entry.path());
    } else if (is_image_extension(entry.path().extension().string())) {
      here.names.push_back(entry.path().filename().string());
    }
  }
  if (ec)
    throw DataError("ImageFolder: cannot list " + dir.string() + ": " + ec.message());
  out.push_back(std::move(here));
  ancestors.push_back(id);
  for (const fs::path& sub : below) walk(sub, ancestors, out);
  ancestors.pop_back();
}

}  // namespace

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

  for (std::size_t label = 0; label < classes.size(); ++label) {
    const fs::path dir = fs::path(top) / classes[label];
    std::vector<ImageDir> dirs;
    std::vector<DirId> ancestors;
    walk(dir, ancestors, dirs);
    // torchvision: sorted(os.walk(class_dir, followlinks=True)), then each
    // directory's file names sorted.
    std::sort(dirs.begin(), dirs.end(),
              [](const ImageDir& a, const ImageDir& b) { return a.path < b.path; });
    std::uint64_t found = 0;
    for (ImageDir& d : dirs) {
      std::sort(d.names.begin(), d.names.end());
      for (const std::string& name : d.names) {
        s->index.add((fs::path(d.path) / name).string(),
                     static_cast<std::int32_t>(label));
        ++found;
      }
    }
    if (found == 0) {
      throw DataError("ImageFolder: class folder " + dir.string() +
                      " holds no image file (jpg, jpeg, png, ppm, bmp, pgm, tif, tiff, "
                      "webp) at any depth");
    }
  }
  s->index.shrink_to_fit();
  state_ = std::move(s);
}

ImageFolder::~ImageFolder() = default;

std::uint64_t ImageFolder::size() const { return state_->index.size(); }

const SampleLayout& ImageFolder::layout() const { return state_->layout; }

std::string ImageFolder::describe() const { return "ImageFolder(" + state_->root + ")"; }

const std::vector<std::string>& ImageFolder::classes() const { return state_->classes; }

std::string ImageFolder::path(std::uint64_t index) const {
  return std::string(state_->index.path(index));
}

std::int64_t ImageFolder::label(std::uint64_t index) const {
  return state_->index.label(index);
}

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
