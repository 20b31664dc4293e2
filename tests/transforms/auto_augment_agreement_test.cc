// The augmentation policies against torchvision 0.14 on uint8 tensors (what its
// automatic augmentations are usually fed): each op at several magnitudes of both
// policies' tables and both signs against `_apply_op`; the magnitude tables
// against `_augmentation_space` for several bin counts and image sizes; and
// whole policies against TrivialAugmentWide / RandAugment with torch.randint
// made to return the draws this engine took from its stream. Each row is held to
// the bound docs/datasets.md's table states.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "seedloader/random.h"
#include "tests/common/cross_check.h"
#include "tests/common/temp_dir.h"
#include "tests/transforms/test_images.h"
#include "transforms/auto_augment.h"

namespace seedloader {
namespace {

struct Bound {
  double max_diff;   // largest difference of one byte
  double max_share;  // share of bytes that differ
};

// Identical, except where a nearest-neighbour sample sits within float32
// rounding of a pixel boundary: torch's grid comes from a BLAS product whose
// rounding this engine's scalar loop does not reproduce step for step.
const std::map<std::string, Bound> kBounds = {
    {"Identity", {0, 0}},
    {"ShearX", {255, 0.002}},
    {"ShearY", {255, 0.002}},
    {"TranslateX", {0, 0}},
    {"TranslateY", {0, 0}},
    {"Rotate", {255, 0.002}},
    {"Brightness", {0, 0}},
    {"Color", {0, 0}},
    {"Contrast", {0, 0}},
    {"Sharpness", {0, 0}},
    {"Posterize", {0, 0}},
    {"Solarize", {0, 0}},
    {"AutoContrast", {0, 0}},
    {"Equalize", {0, 0}},
    {"TrivialAugmentWide", {255, 0.002}},
    {"RandAugment", {255, 0.002}},
};

void write_raw(const std::string& path, const cv::Mat& m) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(m.data),
          static_cast<std::streamsize>(m.total() * m.elemSize()));
}

std::string exact(double v) {
  char text[40];
  std::snprintf(text, sizeof(text), "%.17g", v);
  return text;
}

// The draws a policy takes, replayed on a copy of its stream, in torch.randint's
// order.
std::vector<std::uint64_t> trivial_draws(Rng rng, int bins) {
  std::vector<std::uint64_t> draws = {bounded(rng, kAugmentOpCount)};
  const auto op = static_cast<AugmentOp>(draws[0]);
  if (augment_op_has_magnitudes(op)) draws.push_back(bounded(rng, bins));
  if (augment_op_signed(op)) draws.push_back(bounded(rng, 2));
  return draws;
}

std::vector<std::uint64_t> rand_draws(Rng rng, int num_ops) {
  std::vector<std::uint64_t> draws;
  for (int i = 0; i < num_ops; ++i) {
    draws.push_back(bounded(rng, kAugmentOpCount));
    if (augment_op_signed(static_cast<AugmentOp>(draws.back())))
      draws.push_back(bounded(rng, 2));
  }
  return draws;
}

const char* kScript = R"(import sys, numpy as np, torch
import torchvision.transforms as T
from torchvision.transforms import InterpolationMode
from torchvision.transforms.autoaugment import _apply_op
d = sys.argv[1]
ins, worst, tables = {}, {}, [0, 0]
def tensor(i):
    return torch.from_numpy(ins[i].copy()).permute(2, 0, 1).contiguous()
def compare(name, want, f, i):
    got = np.fromfile(d + f, np.uint8).reshape(ins[i].shape).astype(np.int64)
    want = want.permute(1, 2, 0).numpy().astype(np.int64)
    diff = np.abs(got - want)
    m, s, n = worst.get(name, (0, 0.0, 0))
    worst[name] = (max(m, int(diff.max())), max(s, float((diff > 0).mean())), n + 1)
draws = []
def randint(*args, **kwargs):
    return torch.tensor([draws.pop(0)])
for line in open(d + 'manifest'):
    w = line.split()
    if w[0] == 'in':
        i, h, wd, c = map(int, w[1:])
        ins[i] = np.fromfile(d + 'in%d' % i, np.uint8).reshape(h, wd, c)
    elif w[0] == 'op':
        name, i, mag, f = w[1], int(w[2]), float(w[3]), w[4]
        compare(name, _apply_op(tensor(i), name, mag, InterpolationMode.NEAREST, None), f, i)
    elif w[0] == 'table':
        policy, bins, h, wd = w[1], int(w[2]), int(w[3]), int(w[4])
        space = (T.TrivialAugmentWide()._augmentation_space(bins) if policy == 'ta' else
                 T.RandAugment()._augmentation_space(bins, (h, wd)))
        mags = space[w[5]][0]
        for k, v in enumerate(w[6:]):
            tables[0] += 1
            if float(mags[k].item()) != float(v):
                tables[1] += 1
                print('mismatch', policy, bins, h, wd, w[5], k, float(mags[k].item()), v)
    elif w[0] == 'policy':
        i, f, args = int(w[2]), w[3], list(map(int, w[4:7]))
        draws[:] = list(map(int, w[7:]))
        real, torch.randint = torch.randint, randint
        try:
            if w[1] == 'ta':
                out, name = T.TrivialAugmentWide(args[2])(tensor(i)), 'TrivialAugmentWide'
            else:
                out, name = T.RandAugment(args[0], args[1], args[2])(tensor(i)), 'RandAugment'
        finally:
            torch.randint = real
        assert not draws, 'draws left over: %s' % draws
        compare(name, out, f, i)
for name, (m, s, n) in worst.items():
    print(name, m, '%.6f' % s, n)
print('tables', tables[0], tables[1])
)";

TEST(AutoAugmentAgreementTest, OpsTablesAndPoliciesAreWithinTheirStatedBounds) {
  SL_REQUIRE_PYTHON_MODULE("torchvision");
  // Noise, a drawn scene, one channel, and a scene of low contrast (AutoContrast
  // and Equalize have little to do on the full range of noise).
  cv::Mat dim;
  testing::scene_image(50, 41).convertTo(dim, CV_8U, 0.5, 40);
  const std::vector<cv::Mat> images = {testing::noise_image(64, 48, 1),
                                       testing::scene_image(61, 47),
                                       testing::noise_image(33, 77, 2).reshape(1), dim};
  const std::string dir = testing_util::process_temp_dir() + "aa_agree/";
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  std::ostringstream manifest;
  int files = 0;
  const auto output = [&](const cv::Mat& out) {
    const std::string name = "out" + std::to_string(files++);
    write_raw(dir + name, out);
    return name;
  };
  for (std::size_t i = 0; i < images.size(); ++i) {
    const cv::Mat& m = images[i];
    write_raw(dir + "in" + std::to_string(i), m);
    manifest << "in " << i << " " << m.rows << " " << m.cols << " " << m.channels()
             << "\n";
    for (int k = 0; k < kAugmentOpCount; ++k) {
      const auto op = static_cast<AugmentOp>(k);
      std::vector<double> magnitudes;
      for (int bin : {3, 10, 21, 30}) {
        magnitudes.push_back(
            augment_magnitude(AugmentPolicy::kTrivialAugmentWide, op, 31, bin, m.size()));
      }
      magnitudes.push_back(
          augment_magnitude(AugmentPolicy::kRandAugment, op, 31, 9, m.size()));
      if (augment_op_signed(op)) {
        for (std::size_t j = 0, n = magnitudes.size(); j < n; ++j)
          magnitudes.push_back(-magnitudes[j]);
      }
      for (double magnitude : magnitudes) {
        manifest << "op " << augment_op_name(op) << " " << i << " " << exact(magnitude)
                 << " " << output(apply_augment_op(m, op, magnitude)) << "\n";
      }
    }
    for (std::uint64_t seed = 0; seed < 40; ++seed) {
      Rng rng = testing::test_rng(seed);
      const std::vector<std::uint64_t> ta = trivial_draws(rng, 31);
      manifest << "policy ta " << i << " "
               << output(TrivialAugmentWide(31).apply(m, rng, nullptr)) << " 0 0 31";
      for (std::uint64_t v : ta) manifest << " " << v;
      manifest << "\n";
      const std::vector<std::uint64_t> ra = rand_draws(rng, 2);
      manifest << "policy ra " << i << " "
               << output(RandAugment(2, 9, 31).apply(m, rng, nullptr)) << " 2 9 31";
      for (std::uint64_t v : ra) manifest << " " << v;
      manifest << "\n";
    }
  }
  for (const cv::Size size : {cv::Size(224, 224), cv::Size(33, 97), cv::Size(375, 500)}) {
    for (int bins : {2, 3, 5, 10, 16, 17, 31, 32, 33, 50, 100}) {
      for (AugmentPolicy policy :
           {AugmentPolicy::kTrivialAugmentWide, AugmentPolicy::kRandAugment}) {
        for (int k = 0; k < kAugmentOpCount; ++k) {
          const auto op = static_cast<AugmentOp>(k);
          if (!augment_op_has_magnitudes(op)) continue;
          manifest << "table " << (policy == AugmentPolicy::kRandAugment ? "ra " : "ta ")
                   << bins << " " << size.height << " " << size.width << " "
                   << augment_op_name(op);
          for (int bin = 0; bin < bins; ++bin)
            manifest << " " << exact(augment_magnitude(policy, op, bins, bin, size));
          manifest << "\n";
        }
      }
    }
  }
  {
    std::ofstream f(dir + "manifest");
    f << manifest.str();
  }
  const std::string script = dir + "check.py";
  {
    std::ofstream f(script);
    f << kScript;
  }
  // torch's linspace rounds as its CPU dispatch level computes; the tables follow
  // its AVX2 level (see torch_linspace_at).
  const auto r = testing_util::run_command("ATEN_CPU_CAPABILITY=avx2 /usr/bin/python3 " +
                                           script + " " + dir + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::map<std::string, std::pair<double, double>> measured;
  long tables = -1, table_mismatches = -1;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string name;
    words >> name;
    if (name == "tables") {
      words >> tables >> table_mismatches;
    } else if (kBounds.count(name)) {
      double m = 0, s = 0;
      words >> m >> s;
      measured[name] = {m, s};
    }
  }
  std::printf("%-20s %10s %16s %10s\n", "op", "max |diff|", "bytes differing", "bound");
  for (const auto& [op, bound] : kBounds) {
    ASSERT_TRUE(measured.count(op)) << op << " not measured:\n" << r.out;
    const auto [m, s] = measured[op];
    std::printf("%-20s %10.0f %15.4f%% %9.2f%%\n", op.c_str(), m, 100 * s,
                100 * bound.max_share);
    EXPECT_LE(m, bound.max_diff) << op;
    EXPECT_LE(s, bound.max_share) << op;
  }
  std::printf("magnitude tables: %ld values, %ld differ\n", tables, table_mismatches);
  EXPECT_GT(tables, 10000);
  EXPECT_EQ(table_mismatches, 0) << r.out;
}

}  // namespace
}  // namespace seedloader
