#include "tools/seedloader_pack/pack_source.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "base/file_io.h"
#include "seedloader/datasets/image_folder.h"
#include "seedloader/error.h"
#include "seedloader/seed_sequence.h"
#include "seedloader/transforms/spec.h"
#include "tools/common/data_spec.h"

namespace seedloader::pack {
namespace {

std::vector<std::uint8_t> text_bytes(const std::string& text) {
  return {text.begin(), text.end()};
}

// The files of an ImageFolder, copied as they are.
class ImageFolderSource final : public PackSource {
 public:
  // ImageFolder insists on a chain that fixes the output size; this one is never
  // run, since the packer reads paths and labels only.
  explicit ImageFolderSource(const std::string& root)
      : folder_(root, parse_transform_spec("centercrop:1")) {}

  std::uint64_t size() const override { return folder_.size(); }
  std::string describe() const override { return folder_.describe(); }

  void read(std::uint64_t index, std::vector<Member>& members) const override {
    const std::string path = folder_.path(index);
    std::string ext = std::filesystem::path(path).extension().string().substr(1);
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    members.resize(2);
    members[0].ext = std::move(ext);
    try {
      read_whole_file(path.c_str(), members[0].bytes);
    } catch (const DataError& e) {
      throw DataError(describe() + ": sample " + std::to_string(index) + ": " + e.what());
    }
    members[1] = {"cls", text_bytes(std::to_string(folder_.label(index)))};
  }

 private:
  ImageFolder folder_;
};

// A data set of raw pixels (CIFAR-10, MNIST, Synthetic), read through the chain
// "u8" — the untouched pixels as CHW uint8 — and stored as PNG, which keeps them
// exactly.
class PixelSource final : public PackSource {
 public:
  explicit PixelSource(std::unique_ptr<Dataset> dataset)
      : dataset_(std::move(dataset)), layout_(dataset_->layout()) {
    if (layout_.num_fields() != 2 || layout_.field(0).name != "image" ||
        layout_.field(0).dtype != DType::kU8 || layout_.field(0).shape.size() != 3 ||
        layout_.field(1).name != "label" || layout_.field(1).dtype != DType::kI64) {
      throw ConfigError(describe() +
                        ": expected the fields image (u8 [C, H, W]) and label (int64)");
    }
    for (std::size_t f = 0; f < layout_.num_fields(); ++f) {
      storage_.emplace_back(layout_.field(f).bytes());
      pointers_.push_back(storage_.back().data());
    }
    lengths_.resize(layout_.num_fields());
  }

  std::uint64_t size() const override { return dataset_->size(); }
  std::string describe() const override { return dataset_->describe(); }

  void read(std::uint64_t index, std::vector<Member>& members) const override {
    SampleWriter writer(layout_, pointers_, lengths_, index);
    // "u8" draws nothing; a stream is needed all the same.
    Rng rng{SeedSequence(0)};
    dataset_->get(index, rng, writer);
    const std::vector<std::int64_t>& shape = layout_.field(kImage).shape;
    const int c = static_cast<int>(shape[0]), h = static_cast<int>(shape[1]),
              w = static_cast<int>(shape[2]);
    const std::uint8_t* chw = writer.field<std::uint8_t>(kImage).data();
    // PNG through OpenCV wants HWC with the channels in BGR order.
    cv::Mat hwc(h, w, c == 3 ? CV_8UC3 : CV_8UC1);
    for (int y = 0; y < h; ++y) {
      std::uint8_t* row = hwc.ptr<std::uint8_t>(y);
      for (int x = 0; x < w; ++x) {
        for (int k = 0; k < c; ++k) {
          row[x * c + (c - 1 - k)] = chw[(static_cast<std::size_t>(k) * h + y) * w + x];
        }
      }
    }
    members.resize(2);
    members[0].ext = "png";
    if (!cv::imencode(".png", hwc, members[0].bytes)) {
      throw DataError(describe() + ": sample " + std::to_string(index) +
                      ": PNG encoding failed");
    }
    members[1] = {"cls",
                  text_bytes(std::to_string(writer.field<std::int64_t>(kLabel)[0]))};
  }

 private:
  std::unique_ptr<Dataset> dataset_;
  const SampleLayout& layout_;
  static constexpr std::size_t kImage = 0, kLabel = 1;
  // One sample's rows; read() is single-threaded, so one set serves every call.
  mutable std::vector<std::vector<std::byte>> storage_;
  std::vector<std::byte*> pointers_;
  mutable std::vector<std::uint64_t> lengths_;
};

}  // namespace

std::unique_ptr<PackSource> open_pack_source(const std::string& spec) {
  const std::size_t colon = spec.find(':');
  if (colon == std::string::npos || colon + 1 == spec.size()) {
    throw ConfigError("data spec '" + spec + "': expected KIND:ARG (" +
                      tools::data_spec_help() + ")");
  }
  const std::string kind = spec.substr(0, colon), arg = spec.substr(colon + 1);
  if (kind == "imagefolder") return std::make_unique<ImageFolderSource>(arg);
  if (kind == "tar") return open_tar_source(arg);
  return std::make_unique<PixelSource>(tools::open_dataset(spec, "u8"));
}

}  // namespace seedloader::pack
