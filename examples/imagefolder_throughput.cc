// imagefolder_throughput: writes a small ImageFolder of JPEGs with OpenCV, then
// iterates it with forked workers and the usual ImageNet-style augmentation,
// printing samples/s per epoch.
//   imagefolder_throughput [dir] [workers] [images] [spec]
// dir defaults to a fresh folder under /tmp (removed afterwards); an existing
// non-empty dir is used as it is.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>

#include "seedloader/data_loader.h"
#include "seedloader/datasets/image_folder.h"
#include "seedloader/transforms/spec.h"

namespace fs = std::filesystem;

// 10 classes of 320x240 JPEGs: smooth colour fields with a few shapes.
static void write_folder(const fs::path& root, int images) {
  cv::RNG pixels(12345);  // OpenCV's generator only paints demo pictures
  for (int i = 0; i < images; ++i) {
    const fs::path dir = root / ("class_" + std::to_string(i % 10));
    fs::create_directories(dir);
    cv::Mat image(240, 320, CV_8UC3);
    cv::rectangle(image, cv::Rect(0, 0, 320, 240),
                  cv::Scalar(pixels.uniform(0, 255), pixels.uniform(0, 255), 128),
                  cv::FILLED);
    for (int k = 0; k < 5; ++k) {
      cv::circle(image, cv::Point(pixels.uniform(0, 320), pixels.uniform(0, 240)),
                 pixels.uniform(10, 60),
                 cv::Scalar(pixels.uniform(0, 255), pixels.uniform(0, 255),
                            pixels.uniform(0, 255)),
                 cv::FILLED);
    }
    cv::imwrite((dir / (std::to_string(i) + ".jpg")).string(), image);
  }
}

int main(int argc, char** argv) {
  const bool own_dir = argc <= 1;
  const fs::path root =
      own_dir ? fs::temp_directory_path() / ("imagefolder_" + std::to_string(::getpid()))
              : fs::path(argv[1]);
  const int workers = argc > 2 ? std::atoi(argv[2]) : 2;
  const int images = argc > 3 ? std::atoi(argv[3]) : 512;
  const std::string spec =
      argc > 4 ? argv[4] : "rrc:224,hflip,jitter:0.4:0.4:0.4:0.1,normalize:imagenet";
  try {
    if (!fs::exists(root) || fs::is_empty(root)) {
      std::printf("writing %d JPEGs under %s\n", images, root.c_str());
      write_folder(root, images);
    }
    seedloader::ImageFolder dataset(root.string(),
                                    seedloader::parse_transform_spec(spec));
    seedloader::LoaderOptions opt;
    opt.batch_size = 32;
    opt.num_workers = workers;
    opt.shuffle = true;
    opt.seed = 2024;
    opt.persistent_workers = true;
    opt.timeout = std::chrono::seconds(60);
    seedloader::DataLoader loader(dataset, opt);
    std::printf("%s: %llu images, %zu classes, %d workers, transforms %s\n",
                dataset.describe().c_str(),
                static_cast<unsigned long long>(dataset.size()), dataset.classes().size(),
                workers, spec.c_str());
    for (int epoch = 0; epoch < 3; ++epoch) {
      loader.set_epoch(epoch);
      const auto start = std::chrono::steady_clock::now();
      std::uint64_t samples = 0;
      double checksum = 0;
      for (const seedloader::Batch& b : loader) {
        samples += b.size();
        checksum += b.tensor("image").values<float>()[0];
      }
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("epoch %d: %llu samples in %.2f s = %.0f samples/s (checksum %.3f)\n",
                  epoch, static_cast<unsigned long long>(samples), s, samples / s,
                  checksum);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "imagefolder_throughput: %s\n", e.what());
    if (own_dir) fs::remove_all(root);
    return 2;
  }
  if (own_dir) fs::remove_all(root);
  return 0;
}
