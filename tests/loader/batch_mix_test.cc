// MixUp / CutMix (batch_mix.h): the mixed batches equal torchvision v2's formulas
// computed by torch on the same batch with the lam and box numpy draws from the
// documented batch stream; they do not depend on the worker count; bad
// configurations and labels are refused by name.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "seedloader/data_loader.h"
#include "seedloader/derive.h"
#include "seedloader/error.h"
#include "seedloader/in_memory_dataset.h"
#include "seedloader/random.h"
#include "tests/common/cross_check.h"

namespace seedloader {
namespace {

constexpr std::int64_t kChannels = 3;
constexpr std::int64_t kHeight = 5;
constexpr std::int64_t kWidth = 7;
constexpr std::int64_t kClasses = 4;
constexpr std::uint64_t kSamples = 23;

// kSamples images of 3x5x7 with fractional values, and labels 0..3.
InMemoryDataset make_dataset(DType image_dtype) {
  InMemoryDataset data(
      SampleLayout({FieldSpec{"image", image_dtype, {kChannels, kHeight, kWidth}, false},
                    FieldSpec{"label", DType::kI64, {}, false}}),
      kSamples);
  Rng rng = stream_for_key(77, {9});
  const std::size_t n = kSamples * kChannels * kHeight * kWidth;
  for (std::size_t k = 0; k < n; ++k) {
    const auto v = static_cast<float>(uniform(rng, -2.0, 2.0));
    switch (image_dtype) {
      case DType::kU8:
        data.field<std::uint8_t>(0)[k] = static_cast<std::uint8_t>(bounded(rng, 256));
        break;
      case DType::kF16:
        data.field<Float16>(0)[k] = to_float16(v);
        break;
      case DType::kBF16:
        data.field<BFloat16>(0)[k] = to_bfloat16(v);
        break;
      default:
        data.field<float>(0)[k] = v;
    }
  }
  for (std::uint64_t i = 0; i < kSamples; ++i) {
    data.field<std::int64_t>(1)[i] = static_cast<std::int64_t>((i * 7) % kClasses);
  }
  return data;
}

LoaderOptions mix_options(double mixup, double cutmix, int workers) {
  LoaderOptions o;
  o.batch_size = 5;  // 23 samples on 2 ranks: 12 each, the last batch of 2
  o.num_workers = workers;
  o.shuffle = true;
  o.seed = 4242;
  o.rank = 1;
  o.world_size = 2;
  o.mix.mixup_alpha = mixup;
  o.mix.cutmix_alpha = cutmix;
  o.mix.num_classes = kClasses;
  return o;
}

struct Mixed {
  std::vector<std::uint64_t> indices;
  std::vector<std::byte> images;
  std::vector<float> targets;
  std::vector<std::int64_t> labels;
  bool operator==(const Mixed&) const = default;
};

std::vector<Mixed> run(const Dataset& data, const LoaderOptions& o, std::uint64_t epoch) {
  DataLoader loader(data, o);
  loader.set_epoch(epoch);
  std::vector<Mixed> out;
  for (const Batch& b : loader) {
    Mixed m;
    m.indices.assign(b.indices().begin(), b.indices().end());
    auto image = b.tensor("image");
    auto bytes = image.bytes();
    m.images.assign(image.data, image.data + bytes);
    if (o.mix.enabled()) {
      auto t = b.tensor("target").values<float>();
      m.targets.assign(t.begin(), t.end());
    }
    auto l = b.tensor("label").values<std::int64_t>();
    m.labels.assign(l.begin(), l.end());
    out.push_back(std::move(m));
  }
  return out;
}

TEST(BatchMixTest, TargetsAreSoftLabelsThatSumToOne) {
  const InMemoryDataset data = make_dataset(DType::kF32);
  for (auto [mixup, cutmix] : {std::pair{0.2, 0.0}, std::pair{0.0, 1.0}}) {
    const auto batches = run(data, mix_options(mixup, cutmix, 0), 0);
    ASSERT_EQ(batches.size(), 3u);
    for (const Mixed& m : batches) {
      ASSERT_EQ(m.targets.size(), m.indices.size() * kClasses);
      for (std::size_t i = 0; i < m.indices.size(); ++i) {
        const float* row = &m.targets[i * kClasses];
        EXPECT_NEAR(row[0] + row[1] + row[2] + row[3], 1.0f, 1e-6f);
        EXPECT_GT(row[m.labels[i]], 0.0f);  // labels are kept as they were
        EXPECT_EQ(m.labels[i], static_cast<std::int64_t>((m.indices[i] * 7) % kClasses));
      }
    }
  }
}

TEST(BatchMixTest, SameBatchesForAnyWorkerCount) {
  const InMemoryDataset data = make_dataset(DType::kF32);
  const auto none = run(data, mix_options(0.4, 1.0, 0), 3);
  EXPECT_EQ(run(data, mix_options(0.4, 1.0, 2), 3), none);
  EXPECT_NE(run(data, mix_options(0.4, 1.0, 2), 4), none);  // another epoch
  LoaderOptions rank0 = mix_options(0.4, 1.0, 1);
  rank0.rank = 0;
  const auto other_rank = run(data, rank0, 3);
  ASSERT_EQ(other_rank.size(), none.size());
  EXPECT_NE(other_rank[0].targets, none[0].targets);
}

TEST(BatchMixTest, ResumingMidEpochMixesTheRestAlike) {
  const InMemoryDataset data = make_dataset(DType::kF32);
  LoaderOptions o = mix_options(0.4, 1.0, 2);
  o.world_size = 1;
  o.rank = 0;
  const auto whole = run(data, o, 5);
  ASSERT_EQ(whole.size(), 5u);
  DataLoader loader(data, o);
  loader.resume(5, 2);
  std::size_t k = 2;
  for (const Batch& b : loader) {
    ASSERT_LT(k, whole.size());
    auto t = b.tensor("target").values<float>();
    EXPECT_EQ(std::vector<float>(t.begin(), t.end()), whole[k].targets) << "batch " << k;
    auto image = b.tensor("image");
    EXPECT_EQ(std::vector<std::byte>(image.data, image.data + image.bytes()),
              whole[k].images)
        << "batch " << k;
    ++k;
  }
  EXPECT_EQ(k, whole.size());
}

TEST(BatchMixTest, BetaFollowsNumpyAndItsMoments) {
  SL_REQUIRE_PYTHON_MODULE("numpy");
  std::string expect;
  for (double a : {0.2, 0.5, 1.0}) {
    Rng rng = stream_for_key(5, {3, 1, 2});
    for (int k = 0; k < 200; ++k) {
      char text[32];
      std::snprintf(text, sizeof text, "%a\n", beta(rng, a, a));
      expect += text;
    }
  }
  const auto r = testing_util::run_python(
      "beta_draws.py",
      "import numpy as np\n"
      "for a in (0.2, 0.5, 1.0):\n"
      "    g = np.random.Generator(np.random.PCG64(np.random.SeedSequence(5, "
      "spawn_key=(3, 1, 2))))\n"
      "    for x in g.beta(a, a, size=200): print(float(x).hex())\n");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // Python's hex() and printf's %a spell the same double differently; compare values.
  auto values = [](const std::string& text) {
    std::vector<double> out;
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t end = text.find('\n', at);
      out.push_back(std::strtod(text.substr(at, end - at).c_str(), nullptr));
      at = end + 1;
    }
    return out;
  };
  const std::vector<double> ours = values(expect);
  const std::vector<double> theirs = values(r.out);
  ASSERT_EQ(ours.size(), 600u);
  EXPECT_EQ(ours, theirs);
  // Above 1 the gamma path: right mean and spread, inside [0, 1].
  Rng rng = stream_for_key(6, {3});
  double sum = 0.0;
  double squares = 0.0;
  constexpr int kDraws = 20000;
  for (int k = 0; k < kDraws; ++k) {
    const double x = beta(rng, 2.0, 2.0);
    ASSERT_GE(x, 0.0);
    ASSERT_LE(x, 1.0);
    sum += x;
    squares += x * x;
  }
  const double mean = sum / kDraws;
  EXPECT_NEAR(mean, 0.5, 0.01);
  EXPECT_NEAR(squares / kDraws - mean * mean, 0.05, 0.003);  // ab/((a+b)^2(a+b+1))
}

// The batches of one configuration, without and with the mix, for the torch
// reference: per batch, count, indices, plain images, labels, mixed images and
// targets.
void dump(std::ofstream& f, const std::vector<Mixed>& plain,
          const std::vector<Mixed>& mixed) {
  ASSERT_EQ(plain.size(), mixed.size());
  const std::uint64_t batches = plain.size();
  f.write(reinterpret_cast<const char*>(&batches), sizeof batches);
  for (std::size_t b = 0; b < plain.size(); ++b) {
    ASSERT_EQ(plain[b].indices, mixed[b].indices);
    ASSERT_EQ(plain[b].labels, mixed[b].labels);
    const std::uint64_t c = plain[b].indices.size();
    f.write(reinterpret_cast<const char*>(&c), sizeof c);
    f.write(reinterpret_cast<const char*>(plain[b].indices.data()),
            static_cast<std::streamsize>(c * 8));
    f.write(reinterpret_cast<const char*>(plain[b].images.data()),
            static_cast<std::streamsize>(plain[b].images.size()));
    f.write(reinterpret_cast<const char*>(plain[b].labels.data()),
            static_cast<std::streamsize>(c * 8));
    f.write(reinterpret_cast<const char*>(mixed[b].images.data()),
            static_cast<std::streamsize>(mixed[b].images.size()));
    f.write(reinterpret_cast<const char*>(mixed[b].targets.data()),
            static_cast<std::streamsize>(c * kClasses * 4));
  }
}

// torchvision.transforms.v2's MixUp and CutMix, step for step in torch (the
// installed torchvision predates them), with lam, the choice and the box drawn by
// numpy from the batch stream (3, epoch, rank, batch). A float16/bfloat16 tensor
// times a Python float is computed as torch >= 2.1 does on the CPU (where v2's
// MixUp exists): the factor read as float32, not first rounded to the tensor's
// dtype as torch 1.13 does.
constexpr const char* kTorchReference = R"(import sys, numpy as np, torch
seed, epoch, rank, C, H, W, K = 4242, 2, 1, 3, 5, 7, 4
configs = [line.split() for line in sys.argv[2:]]
f = open(sys.argv[1], 'rb')
def take(dtype, n):
    return np.frombuffer(f.read(np.dtype(dtype).itemsize * n), dtype=dtype)
checked = 0
def mul(t, s):
    return t.mul(s) if t.dtype == torch.float32 else (t.float() * s).to(t.dtype)
for dtype, mixup, cutmix, prob in configs:
    mixup, cutmix, prob = float(mixup), float(cutmix), float(prob)
    np_dtype = {'f32': np.float32, 'f16': np.float16, 'bf16': np.int16, 'u8': np.uint8}[dtype]
    for b in range(int(take(np.uint64, 1)[0])):
        c = int(take(np.uint64, 1)[0])
        take(np.uint64, c)
        def image():
            x = torch.from_numpy(take(np_dtype, c * C * H * W).copy()).reshape(c, C, H, W)
            return x.view(torch.bfloat16) if dtype == 'bf16' else x
        x = image()
        labels = torch.from_numpy(take(np.int64, c).copy())
        got, target = image(), torch.from_numpy(take(np.float32, c * K).copy()).reshape(c, K)
        g = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
            seed, spawn_key=(3, epoch, rank, b))))
        use_cutmix = g.random() < prob if mixup > 0 and cutmix > 0 else cutmix > 0
        alpha = cutmix if use_cutmix else mixup
        lam = float(g.beta(alpha, alpha))
        if use_cutmix:
            r_x, r_y = int(g.integers(0, W)), int(g.integers(0, H))
            r = 0.5 * np.sqrt(1.0 - lam)
            r_w_half, r_h_half = int(r * W), int(r * H)
            x1, y1 = max(r_x - r_w_half, 0), max(r_y - r_h_half, 0)
            x2, y2 = min(r_x + r_w_half, W), min(r_y + r_h_half, H)
            want = x.clone()
            want[..., y1:y2, x1:x2] = x.roll(1, 0)[..., y1:y2, x1:x2]
            lam = float(1.0 - (x2 - x1) * (y2 - y1) / (W * H))
        else:
            want = mul(x.roll(1, 0), 1.0 - lam).add_(mul(x, lam))
        one_hot = torch.nn.functional.one_hot(labels, num_classes=K).float()
        want_target = one_hot.roll(1, 0).mul_(1.0 - lam).add_(one_hot.mul(lam))
        if not torch.equal(got.view(torch.uint8), want.view(torch.uint8)):
            d = (got.float() - want.float()).abs().max().item()
            sys.exit('%s batch %d: images differ (max %g)' % (dtype, b, d))
        if not torch.equal(target, want_target):
            sys.exit('%s batch %d: targets differ: %s vs %s' % (dtype, b, target, want_target))
        checked += 1
print('checked', checked)
)";

TEST(BatchMixTest, EqualsTorchvisionV2FormulasBitForBit) {
  SL_REQUIRE_PYTHON_MODULE("torch");
  struct Config {
    const char* name;
    DType dtype;
    double mixup;
    double cutmix;
  };
  const Config configs[] = {{"f32", DType::kF32, 0.2, 0.0},
                            {"f16", DType::kF16, 0.4, 0.0},
                            {"bf16", DType::kBF16, 1.0, 0.0},
                            {"u8", DType::kU8, 0.0, 1.0},
                            {"f32", DType::kF32, 0.8, 1.0}};
  const std::string path = testing_util::process_temp_dir() + "mixed.bin";
  std::string args = path;
  std::size_t batches = 0;
  {
    std::ofstream f(path, std::ios::binary);
    for (const Config& c : configs) {
      const InMemoryDataset data = make_dataset(c.dtype);
      const auto plain = run(data, mix_options(0.0, 0.0, 0), 2);
      const auto mixed = run(data, mix_options(c.mixup, c.cutmix, 2), 2);
      dump(f, plain, mixed);
      batches += mixed.size();
      args += " '" + std::string(c.name) + " " + std::to_string(c.mixup) + " " +
              std::to_string(c.cutmix) + " 0.5'";
    }
  }
  const auto r = testing_util::run_python("mix_reference.py", kTorchReference, args);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("checked " + std::to_string(batches)), std::string::npos) << r.out;
}

TEST(BatchMixTest, RefusesWhatItCannotMix) {
  const InMemoryDataset u8 = make_dataset(DType::kU8);
  auto refused = [&](const Dataset& data, const LoaderOptions& o, const char* words) {
    try {
      DataLoader loader(data, o);
      ADD_FAILURE() << "accepted; wanted an error with: " << words;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  refused(u8, mix_options(0.2, 0.0, 0), "MixUp needs a floating image field");
  LoaderOptions o = mix_options(0.0, 1.0, 0);
  o.mix.num_classes = 0;
  refused(u8, o, "num_classes must be in [1,");
  o = mix_options(std::nan(""), 0.0, 0);
  refused(u8, o, "mixup_alpha must be a finite number");
  o = mix_options(0.0, 1.0, 0);
  o.mix.target_field = "label";
  refused(u8, o, "already has a field 'label'");
  o = mix_options(0.0, 1.0, 0);
  o.mix.image_field = "pixels";
  refused(u8, o, "pixels");
  o = mix_options(0.0, 1.0, 0);
  o.mix.cutmix_prob = 1.5;
  refused(u8, o, "cutmix_prob must be in [0, 1]");
}

TEST(BatchMixTest, LabelOutsideTheClassesNamesTheSample) {
  InMemoryDataset data = make_dataset(DType::kU8);
  data.field<std::int64_t>(1)[13] = kClasses;  // one past the last class
  for (int workers : {0, 1}) {
    LoaderOptions o = mix_options(0.0, 1.0, workers);
    o.world_size = 1;
    o.rank = 0;
    DataLoader loader(data, o);
    try {
      for (const Batch& b : loader) (void)b;
      ADD_FAILURE() << "label " << kClasses << " accepted with " << workers << " workers";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("sample 13: label 4 is outside [0, 4)"),
                std::string::npos)
          << e.what();
    }
  }
}

// Under the elastic partition a global batch is mixed as one: one draw from its
// number's stream, each sample paired with the one before it in the global batch.
// So the ranks of any world size dividing G deliver together what one rank does.
TEST(BatchMixTest, ElasticGlobalBatchesMixAlikeAtEveryWorldSize) {
  const InMemoryDataset data = make_dataset(DType::kF32);
  constexpr std::uint64_t kGlobal = 6;
  auto global = [&](std::uint64_t world, int workers, double mixup, double cutmix) {
    std::vector<Mixed> out;
    for (std::uint64_t r = 0; r < world; ++r) {
      LoaderOptions o = mix_options(mixup, cutmix, workers);
      o.partition = Partition::kElastic;
      o.seeding = SeedScope::kSample;
      o.world_size = world;
      o.rank = r;
      o.batch_size = kGlobal / world;
      const auto batches = run(data, o, 2);
      out.resize(batches.size());
      for (std::size_t k = 0; k < batches.size(); ++k) {
        Mixed& m = out[k];
        const Mixed& b = batches[k];
        m.indices.insert(m.indices.end(), b.indices.begin(), b.indices.end());
        m.images.insert(m.images.end(), b.images.begin(), b.images.end());
        m.targets.insert(m.targets.end(), b.targets.begin(), b.targets.end());
        m.labels.insert(m.labels.end(), b.labels.begin(), b.labels.end());
      }
    }
    return out;
  };
  for (auto [mixup, cutmix] : {std::pair{0.4, 0.0}, std::pair{0.0, 1.0}}) {
    const auto one = global(1, 0, mixup, cutmix);
    ASSERT_EQ(one.size(), 4u);  // 23 samples padded to 24
    for (const Mixed& m : one) ASSERT_EQ(m.indices.size(), kGlobal);
    for (std::uint64_t world : {2u, 3u, 6u}) {
      EXPECT_EQ(global(world, world == 3 ? 2 : 0, mixup, cutmix), one)
          << "world " << world << " mixup " << mixup << " cutmix " << cutmix;
    }
    // The pairing crosses ranks: some sample's target names its global neighbour.
    const Mixed& m = one[0];
    for (std::size_t i = 1; i < kGlobal; ++i) {
      const float* row = &m.targets[i * kClasses];
      if (m.labels[i] != m.labels[i - 1]) EXPECT_GT(row[m.labels[i - 1]], 0.0f);
    }
  }
}

}  // namespace
}  // namespace seedloader
