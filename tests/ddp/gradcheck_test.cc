// Every layer's and loss's backward against central finite differences, in double
// precision, on the CPU kernels the layers run.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "ddp/cpu_kernels.h"
#include "seedloader/random.h"
#include "seedloader/seed_sequence.h"

namespace seedloader::ddp {
namespace {

std::vector<double> random_vec(Rng& rng, std::size_t n, double lo = -1, double hi = 1) {
  std::vector<double> v(n);
  for (auto& x : v) x = uniform(rng, lo, hi);
  return v;
}

Rng make_rng(std::uint64_t seed) { return Rng(SeedSequence(seed)); }

// Checks d f / d v[i] == analytic[i] for every i by central differences.
void expect_gradient(std::vector<double>& v, const std::vector<double>& analytic,
                     const std::function<double()>& f, const char* what) {
  ASSERT_EQ(v.size(), analytic.size());
  const double h = 1e-6;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double saved = v[i];
    v[i] = saved + h;
    const double up = f();
    v[i] = saved - h;
    const double down = f();
    v[i] = saved;
    const double numeric = (up - down) / (2 * h);
    EXPECT_NEAR(analytic[i], numeric, 1e-6 * (1 + std::abs(numeric)))
        << what << "[" << i << "]";
  }
}

// L = sum(y * r): d L / d y = r.
double weighted_sum(const std::vector<double>& y, const std::vector<double>& r) {
  double s = 0;
  for (std::size_t i = 0; i < y.size(); ++i) s += y[i] * r[i];
  return s;
}

TEST(GradCheck, LinearBackwardMatchesFiniteDifferences) {
  Rng rng = make_rng(1);
  const int64_t n = 3, in = 5, out = 4;
  auto x = random_vec(rng, n * in), w = random_vec(rng, out * in),
       b = random_vec(rng, out);
  auto r = random_vec(rng, n * out);
  std::vector<double> y(n * out), dw(out * in, 0), db(out, 0), dx(n * in);
  auto loss = [&] {
    cpu::linear_forward(x.data(), w.data(), b.data(), y.data(), n, in, out);
    return weighted_sum(y, r);
  };
  cpu::linear_backward(x.data(), w.data(), r.data(), dw.data(), db.data(), dx.data(), n,
                       in, out);
  expect_gradient(x, dx, loss, "dx");
  expect_gradient(w, dw, loss, "dw");
  expect_gradient(b, db, loss, "db");
}

TEST(GradCheck, LinearBackwardAccumulatesParameterGradients) {
  Rng rng = make_rng(2);
  auto x = random_vec(rng, 6), w = random_vec(rng, 6), dy = random_vec(rng, 2);
  std::vector<double> dw(6, 0), db(2, 0);
  cpu::linear_backward<double>(x.data(), w.data(), dy.data(), dw.data(), db.data(),
                               nullptr, 2, 3, 1);
  auto once = dw;
  cpu::linear_backward<double>(x.data(), w.data(), dy.data(), dw.data(), db.data(),
                               nullptr, 2, 3, 1);
  for (std::size_t i = 0; i < dw.size(); ++i) EXPECT_DOUBLE_EQ(dw[i], 2 * once[i]);
}

TEST(GradCheck, ReluBackwardMatchesFiniteDifferences) {
  Rng rng = make_rng(3);
  auto x = random_vec(rng, 40);
  for (auto& v : x)
    if (std::abs(v) < 1e-3) v = 0.5;  // keep finite differences off the kink
  auto r = random_vec(rng, 40);
  std::vector<double> y(40), dx(40);
  auto loss = [&] {
    cpu::relu_forward(x.data(), y.data(), 40);
    return weighted_sum(y, r);
  };
  cpu::relu_backward(x.data(), r.data(), dx.data(), 40);
  expect_gradient(x, dx, loss, "dx");
}

void check_conv(int64_t stride, int64_t pad) {
  Rng rng = make_rng(4 + static_cast<std::uint64_t>(stride * 10 + pad));
  const int64_t n = 2;
  cpu::ConvGeometry g{2, 5, 6, 3, 3, stride, pad};
  const int64_t in_count = n * g.c_in * g.h * g.w;
  const int64_t out_count = n * g.c_out * g.h_out() * g.w_out();
  auto x = random_vec(rng, in_count), w = random_vec(rng, g.c_out * g.c_in * 9),
       b = random_vec(rng, g.c_out), r = random_vec(rng, out_count);
  std::vector<double> y(out_count), dw(w.size(), 0), db(b.size(), 0), dx(in_count);
  std::vector<double> col(g.c_in * 9 * g.h_out() * g.w_out()), dcol(col.size());
  auto loss = [&] {
    cpu::conv2d_forward(x.data(), w.data(), b.data(), y.data(), col.data(), n, g);
    return weighted_sum(y, r);
  };
  cpu::conv2d_backward(x.data(), w.data(), r.data(), dw.data(), db.data(), dx.data(),
                       col.data(), dcol.data(), n, g);
  expect_gradient(x, dx, loss, "dx");
  expect_gradient(w, dw, loss, "dw");
  expect_gradient(b, db, loss, "db");
}

TEST(GradCheck, Conv2dBackwardMatchesFiniteDifferences) { check_conv(1, 0); }
TEST(GradCheck, Conv2dWithStrideAndPaddingMatchesFiniteDifferences) { check_conv(2, 1); }

TEST(GradCheck, Conv2dForwardMatchesDirectSum) {
  Rng rng = make_rng(9);
  cpu::ConvGeometry g{2, 4, 4, 2, 3, 1, 1};
  auto x = random_vec(rng, 32), w = random_vec(rng, 36), b = random_vec(rng, 2);
  std::vector<double> y(2 * 16), col(2 * 9 * 16);
  cpu::conv2d_forward(x.data(), w.data(), b.data(), y.data(), col.data(), 1, g);
  for (int co = 0; co < 2; ++co)
    for (int oh = 0; oh < 4; ++oh)
      for (int ow = 0; ow < 4; ++ow) {
        double s = b[co];
        for (int c = 0; c < 2; ++c)
          for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) {
              int ih = oh + i - 1, iw = ow + j - 1;
              if (ih < 0 || ih >= 4 || iw < 0 || iw >= 4) continue;
              s += w[((co * 2 + c) * 3 + i) * 3 + j] * x[(c * 4 + ih) * 4 + iw];
            }
        EXPECT_NEAR(y[(co * 4 + oh) * 4 + ow], s, 1e-12);
      }
}

TEST(GradCheck, MaxPoolBackwardMatchesFiniteDifferences) {
  Rng rng = make_rng(5);
  const int64_t planes = 3, h = 4, w = 6, k = 2;
  auto x = random_vec(rng, planes * h * w);  // distinct values: no ties
  const int64_t out_count = planes * (h / k) * (w / k);
  auto r = random_vec(rng, out_count);
  std::vector<double> y(out_count), dx(x.size());
  std::vector<int64_t> argmax(out_count);
  auto loss = [&] {
    cpu::maxpool_forward(x.data(), y.data(), argmax.data(), planes, h, w, k);
    return weighted_sum(y, r);
  };
  loss();
  cpu::maxpool_backward(r.data(), argmax.data(), dx.data(), out_count,
                        static_cast<int64_t>(x.size()));
  expect_gradient(x, dx, loss, "dx");
}

TEST(GradCheck, MseLossGradientMatchesFiniteDifferences) {
  Rng rng = make_rng(6);
  auto y = random_vec(rng, 12), t = random_vec(rng, 12);
  std::vector<double> dy(12), scratch(12);
  const double value = cpu::mse_loss(y.data(), t.data(), dy.data(), 12);
  double expected = 0;
  for (int i = 0; i < 12; ++i) expected += (y[i] - t[i]) * (y[i] - t[i]) / 12;
  EXPECT_NEAR(value, expected, 1e-14);
  expect_gradient(
      y, dy, [&] { return cpu::mse_loss(y.data(), t.data(), scratch.data(), 12); }, "dy");
}

TEST(GradCheck, CrossEntropyGradientMatchesFiniteDifferences) {
  Rng rng = make_rng(7);
  const int64_t n = 4, c = 5;
  auto z = random_vec(rng, n * c, -3, 3);
  std::vector<int32_t> labels = {0, 4, 2, 2};
  std::vector<double> dz(n * c), scratch(n * c);
  const double value = cpu::cross_entropy_loss(z.data(), labels.data(), dz.data(), n, c);
  double expected = 0;
  for (int64_t s = 0; s < n; ++s) {
    double sum = 0;
    for (int64_t k = 0; k < c; ++k) sum += std::exp(z[s * c + k]);
    expected += (std::log(sum) - z[s * c + labels[s]]) / n;
  }
  EXPECT_NEAR(value, expected, 1e-12);
  expect_gradient(
      z, dz,
      [&] {
        return cpu::cross_entropy_loss(z.data(), labels.data(), scratch.data(), n, c);
      },
      "dz");
}

}  // namespace
}  // namespace seedloader::ddp
