// Fault 10: the parent already runs OpenCV and OpenMP thread pools, and one
// more thread of its own, when the loader forks; workers must not deadlock.
// OpenCV is capped to one thread in workers by the library itself (any image
// dataset registers the cap); OpenMP, which only this test's dataset uses, is
// capped the way a user would, through add_worker_start_hook.
#include <omp.h>

#include <atomic>
#include <mutex>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <thread>
#include <vector>

#include "loader/worker_hooks.h"
#include "seedloader/data_loader.h"
#include "seedloader/datasets/synthetic.h"
#include "tests/fault/fault_fixture.h"

namespace seedloader {
namespace {

using testing_util::FaultTest;

// Each sample blurs an image with OpenCV and sums it with OpenMP.
class ImageWorkDataset : public Dataset {
 public:
  std::uint64_t size() const override { return 24; }
  const SampleLayout& layout() const override { return layout_; }
  void get(std::uint64_t index, Rng&, SampleWriter& out) const override {
    cv::Mat img(64, 64, CV_32F, cv::Scalar(static_cast<double>(index)));
    cv::Mat blurred;
    cv::GaussianBlur(img, blurred, cv::Size(5, 5), 1.0);
    double sum = 0;
    const float* p = blurred.ptr<float>();
#pragma omp parallel for reduction(+ : sum)
    for (int i = 0; i < 64 * 64; ++i) sum += p[i];
    out.field<double>(0)[0] = sum;
    out.field<std::int64_t>(1)[0] = cv::getNumThreads();
  }
  std::string describe() const override { return "ImageWorkDataset"; }

 private:
  SampleLayout layout_{
      {{"sum", DType::kF64, {}, false}, {"cv_threads", DType::kI64, {}, false}}};
};

TEST_F(FaultTest, ParentThreadPoolsDoNotDeadlockWorkers) {
  static std::once_flag registered;
  std::call_once(registered,
                 [] { add_worker_start_hook([] { omp_set_num_threads(1); }); });
  const Synthetic registers_the_opencv_cap(1, 8, 8, 3);
  // Warm both pools in the parent, and keep a thread busy across the forks.
  cv::Mat big(1024, 1024, CV_32F, cv::Scalar(1.0));
  cv::Mat out;
  cv::GaussianBlur(big, out, cv::Size(9, 9), 2.0);
  double warm = 0;
#pragma omp parallel for reduction(+ : warm)
  for (int i = 0; i < 1 << 20; ++i) warm += i;
  ASSERT_GT(warm, 0);
  std::atomic<bool> stop{false};
  std::mutex m;
  std::thread busy([&] {
    while (!stop.load()) {
      std::lock_guard<std::mutex> lock(m);
      std::vector<int> churn(1000, 1);  // malloc under a lock, during fork
    }
  });

  ImageWorkDataset ds;
  LoaderOptions o;
  o.batch_size = 4;
  o.num_workers = 2;
  o.seed = 9;
  DataLoader loader(ds, o);  // forks per epoch: three forks under load
  for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
    loader.set_epoch(epoch);
    std::uint64_t n = 0;
    for (const Batch& b : loader) {
      auto sums = b.tensor("sum").values<double>();
      for (std::uint64_t i = 0; i < b.size(); ++i) {
        const double expected = static_cast<double>(b.indices()[i]) * 64 * 64;
        EXPECT_NEAR(sums[i], expected, 1e-5 * expected + 1e-3);  // blur rounds in f32
        EXPECT_EQ(b.tensor("cv_threads").values<std::int64_t>()[i], 1)
            << "OpenCV was not capped to one thread in the worker";
      }
      n += b.size();
    }
    EXPECT_EQ(n, 24u);
  }
  stop = true;
  busy.join();
}

}  // namespace
}  // namespace seedloader
