// ImageFolder: root/<class>/**/<file>.{jpg,jpeg,png,ppm,bmp,pgm,tif,tiff,webp}
// (any case: torchvision's IMG_EXTENSIONS), as torchvision's. Classes are the
// sub-directories sorted by name (label = position); each class folder is walked at every
// depth, following symbolic links, in torchvision's order: directories sorted by path,
// then the files of each sorted by name. PPM/PGM and TIFF decode to the pixels PIL's
// convert("RGB") gives (see loader/datasets/pnm_tiff.h). The index is a PathIndex
// (flat arrays, shared by forked workers); get() reads the file, checks the header
// against the pixel cap, lets the transform chain plan its crop on the header's size,
// decodes (at reduced scale when the crop allows) and writes fields
//   "image" [C, H, W] (float32 or u8, as the chain's output says) and
//   "label" int64 scalar.
// Construction errors: the root missing or not a directory, no class folders, a
// class folder without any image file at any depth, a symbolic link back to a
// folder above it (DataError naming it); a chain that does
// not fix the output size (ConfigError). get() errors are DataError naming the
// dataset, the sample index and the file.
// Owns its index and transform chain (in a State defined in image_folder.cc).
// Immutable after construction; get() is safe across threads and processes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "seedloader/dataset.h"
#include "seedloader/datasets/image_options.h"
#include "seedloader/transforms/compose.h"

namespace seedloader {

struct ImageFolderOptions {
  std::uint64_t max_pixels = kDefaultMaxPixels;  // checked on the header, before decoding
  int channels = 3;                              // 3 = RGB, 1 = grey
};

class ImageFolder final : public Dataset {
 public:
  ImageFolder(std::string root, Compose transform, ImageFolderOptions options = {});
  ~ImageFolder() override;
  ImageFolder(const ImageFolder&) = delete;
  ImageFolder& operator=(const ImageFolder&) = delete;

  std::uint64_t size() const override;
  const SampleLayout& layout() const override;
  void get(std::uint64_t index, Rng& rng, SampleWriter& out) const override;
  std::string describe() const override;

  // As get(), recording the transforms' draws in `log` (may be null).
  void get_logged(std::uint64_t index, Rng& rng, SampleWriter& out,
                  TransformLog* log) const;

  // The class names, sorted; a sample's label is its class's position here.
  const std::vector<std::string>& classes() const;
  // Sample `index`'s file (root joined with its path below the root), as the
  // first element of torchvision's ImageFolder.samples[index].
  // REQUIRES: index < size().
  std::string path(std::uint64_t index) const;
  // Sample `index`'s label: its class's position in classes(), as get() writes it.
  // REQUIRES: index < size().
  std::int64_t label(std::uint64_t index) const;

 private:
  struct State;
  std::unique_ptr<const State> state_;
};

}  // namespace seedloader
