// Each transform against torchvision 0.14 on PIL images (what ImageFolder
// pipelines feed it), with the same parameters given to both: the largest
// difference per transform (in uint8 steps; float for the tensor output) and the
// share of bytes that differ, held to the bound docs/datasets.md's table states. The
// parameter draws themselves are numpy's (rng/), not torch's, by design.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <opencv2/imgproc.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "seedloader/transforms/tensor.h"
#include "tests/common/cross_check.h"
#include "tests/common/run_command.h"
#include "tests/common/temp_dir.h"
#include "tests/transforms/test_images.h"
#include "transforms/blur.h"
#include "transforms/color_jitter.h"
#include "transforms/crop.h"
#include "transforms/rotation.h"

namespace seedloader {
namespace {

struct Case {
  const char* name;
  std::function<cv::Mat(const cv::Mat&)> ours;
  const char* torchvision;  // a Python expression of `img` (a PIL image)
  // The bound this test holds it to: 0 identical; 1 a rounding step; larger,
  // different by design (OpenCV's rotation, against PIL's).
  double max_diff;
};

void write_raw(const std::string& path, const void* data, std::size_t bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
}

TEST(TorchvisionAgreementTest, EachTransformIsWithinItsStatedBound) {
  SL_REQUIRE_PYTHON_MODULE("torchvision");
  const std::vector<Case> cases = {
      {"hflip",
       [](const cv::Mat& m) {
         cv::Mat o;
         cv::flip(m, o, 1);
         return o;
       },
       "F.hflip(img)", 0},
      {"vflip",
       [](const cv::Mat& m) {
         cv::Mat o;
         cv::flip(m, o, 0);
         return o;
       },
       "F.vflip(img)", 0},
      {"crop", [](const cv::Mat& m) { return m(cv::Rect(7, 5, 20, 16)).clone(); },
       "F.crop(img, 5, 7, 16, 20)", 0},
      {"centercrop",
       [](const cv::Mat& m) {
         Rng rng = testing::test_rng(1);
         return CenterCrop(cv::Size(21, 17)).apply(m, rng, nullptr);
       },
       "F.center_crop(img, [17, 21])", 0},
      {"resize_up", [](const cv::Mat& m) { return resize_to(m, cv::Size(97, 85)); },
       "F.resize(img, [85, 97])", 0},
      {"resize_down", [](const cv::Mat& m) { return resize_to(m, cv::Size(29, 23)); },
       "F.resize(img, [23, 29])", 0},
      {"brightness", [](const cv::Mat& m) { return adjust_brightness(m, 1.3); },
       "F.adjust_brightness(img, 1.3)", 1},
      {"contrast", [](const cv::Mat& m) { return adjust_contrast(m, 0.6); },
       "F.adjust_contrast(img, 0.6)", 1},
      {"saturation", [](const cv::Mat& m) { return adjust_saturation(m, 1.7); },
       "F.adjust_saturation(img, 1.7)", 1},
      {"hue", [](const cv::Mat& m) { return adjust_hue(m, 0.2); },
       "F.adjust_hue(img, 0.2)", 0},
      {"rotate", [](const cv::Mat& m) { return rotate_image(m, 17.0); },
       "F.rotate(img, 17.0, interpolation=T.InterpolationMode.BILINEAR)", 128},
      {"blur", [](const cv::Mat& m) { return gaussian_blur(m, 5, 1.2); },
       "F.gaussian_blur(img, [5, 5], [1.2, 1.2])", 1},
  };
  const std::vector<cv::Mat> images = {testing::noise_image(64, 48, 1),
                                       testing::scene_image(61, 47),
                                       testing::noise_image(33, 77, 2)};
  const std::string dir = testing_util::process_temp_dir() + "tv_agree/";
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  std::ostringstream manifest;
  for (std::size_t i = 0; i < images.size(); ++i) {
    const cv::Mat& m = images[i];
    write_raw(dir + "in" + std::to_string(i), m.data, m.total() * 3);
    manifest << "in " << i << " " << m.rows << " " << m.cols << "\n";
    for (const Case& c : cases) {
      const cv::Mat out = c.ours(m);
      ASSERT_TRUE(out.isContinuous());
      const std::string file = dir + c.name + std::to_string(i);
      write_raw(file, out.data, out.total() * 3);
      manifest << "case " << c.name << " " << i << " " << out.rows << " " << out.cols
               << " " << c.torchvision << "\n";
    }
    // ToTensor + Normalize(imagenet): CHW float32.
    ToTensor tensor(Normalize::imagenet());
    std::vector<float> f(m.total() * 3);
    tensor.write(m, f);
    write_raw(dir + "normalize" + std::to_string(i), f.data(), f.size() * sizeof(float));
  }
  write_raw(dir + "manifest", manifest.str().data(), manifest.str().size());
  const std::string script = R"(import sys, numpy as np
from PIL import Image
import torchvision.transforms as T
import torchvision.transforms.functional as F
d = sys.argv[1]
ins, worst = {}, {}
for line in open(d + 'manifest'):
    kind, rest = line.split(' ', 1)
    if kind == 'in':
        i, h, w = map(int, rest.split())
        ins[i] = np.fromfile(d + 'in%d' % i, np.uint8).reshape(h, w, 3)
        img = Image.fromarray(ins[i], 'RGB')
        want = F.normalize(F.to_tensor(img), [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]).numpy()
        got = np.fromfile(d + 'normalize%d' % i, np.float32).reshape(want.shape)
        diff = np.abs(got.astype(np.float64) - want)
        m, s = worst.get('normalize', (0.0, 0.0))
        worst['normalize'] = (max(m, diff.max()), max(s, (diff > 0).mean()))
        continue
    name, i, h, w, expr = rest.split(' ', 4)
    img = Image.fromarray(ins[int(i)], 'RGB')
    want = np.asarray(eval(expr)).astype(np.int64)
    got = np.fromfile(d + name + i, np.uint8).reshape(int(h), int(w), 3).astype(np.int64)
    if want.shape != got.shape:
        print(name, 'shape', want.shape, got.shape); continue
    diff = np.abs(got - want)
    m, s = worst.get(name, (0, 0.0))
    worst[name] = (max(m, int(diff.max())), max(s, float((diff > 0).mean())))
for name, (m, s) in worst.items():
    print(name, repr(float(m)), '%.4f' % s)
)";
  write_raw(dir + "check.py", script.data(), script.size());
  const auto r =
      testing_util::run_command("/usr/bin/python3 " + dir + "check.py " + dir + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::map<std::string, std::pair<double, double>> measured;
  std::istringstream in(r.out);
  std::string name;
  double max_diff = 0, share = 0;
  while (in >> name >> max_diff >> share) measured[name] = {max_diff, share};
  std::printf("%-12s %14s %16s %10s\n", "transform", "max |diff|", "bytes differing",
              "bound");
  for (const Case& c : cases) {
    ASSERT_TRUE(measured.count(c.name)) << c.name << " not measured:\n" << r.out;
    const auto [m, s] = measured[c.name];
    std::printf("%-12s %14.0f %15.2f%% %10.0f\n", c.name, m, 100 * s, c.max_diff);
    EXPECT_LE(m, c.max_diff) << c.name;
  }
  ASSERT_TRUE(measured.count("normalize")) << r.out;
  std::printf("%-12s %14.2g %15.2f%% %10s\n", "normalize", measured["normalize"].first,
              100 * measured["normalize"].second, "1e-6");
  EXPECT_LE(measured["normalize"].first, 1e-6);
}

}  // namespace
}  // namespace seedloader
