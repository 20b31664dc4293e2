// ddp_make_images: writes a small, deterministic ImageFolder of JPEGs for the
// demo: DIR/class_k/img_NNNN.jpg, CLASSES classes, N images of SIZE x SIZE, each
// the Synthetic data set's image of that index (a pure function of it) blended
// with its class's colour, so the classes can be learned and every run writes the
// same files. Existing files are overwritten.
//   build/default/examples/ddp_make_images DIR [N=256] [CLASSES=4] [SIZE=48]
#include <cstdio>
#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string>

#include "seedloader/datasets/synthetic.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR [N] [CLASSES] [SIZE]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const unsigned long n = argc > 2 ? std::stoul(argv[2]) : 256;
  const int classes = argc > 3 ? std::stoi(argv[3]) : 4;
  const int size = argc > 4 ? std::stoi(argv[4]) : 48;
  seedloader::Synthetic source(n, size, size, 3, seedloader::Compose(), classes);
  for (unsigned long i = 0; i < n; ++i) {
    const std::string cls = dir + "/class_" + std::to_string(i % classes);
    std::filesystem::create_directories(cls);
    cv::Mat rgb = source.image(i), bgr;
    const int k = static_cast<int>(i % classes);
    const cv::Scalar tint((k * 97) % 256, (k * 181 + 60) % 256, (k * 53 + 120) % 256);
    cv::addWeighted(rgb, 0.5, cv::Mat(rgb.size(), rgb.type(), tint), 0.5, 0.0, rgb);
    cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
    char name[32];
    std::snprintf(name, sizeof name, "/img_%04lu.jpg", i);
    if (!cv::imwrite(cls + name, bgr, {cv::IMWRITE_JPEG_QUALITY, 90})) {
      std::fprintf(stderr, "ddp_make_images: cannot write %s%s\n", cls.c_str(), name);
      return 2;
    }
  }
  std::printf("wrote %lu JPEGs (%d classes, %dx%d) under %s\n", n, classes, size, size,
              dir.c_str());
  return 0;
}
