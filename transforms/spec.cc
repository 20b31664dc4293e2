#include "seedloader/transforms/spec.h"

#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "seedloader/error.h"
#include "transforms/auto_augment.h"
#include "transforms/blur.h"
#include "transforms/color_jitter.h"
#include "transforms/crop.h"
#include "transforms/erasing.h"
#include "transforms/flip.h"
#include "transforms/rotation.h"

namespace seedloader {
namespace {

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

// One step's token and arguments; every failure names the token.
class Step {
 public:
  explicit Step(std::string_view token) : token_(token), parts_(split(token, ':')) {}
  std::string_view name() const { return parts_[0]; }
  std::size_t args() const { return parts_.size() - 1; }

  [[noreturn]] void fail(const std::string& why) const {
    throw ConfigError("transform spec: token '" + std::string(token_) + "': " + why);
  }
  void want_args(std::size_t lo, std::size_t hi) const {
    if (args() < lo || args() > hi) {
      fail("takes " +
           (lo == hi ? std::to_string(lo)
                     : std::to_string(lo) + " to " + std::to_string(hi)) +
           " arguments, got " + std::to_string(args()));
    }
  }
  double number(std::size_t i) const {
    std::string_view text = parts_[i + 1];
    double value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
      fail("bad number '" + std::string(text) + "'");
    }
    if (!std::isfinite(value)) fail("'" + std::string(text) + "' is not a finite number");
    return value;
  }
  int integer(std::size_t i) const { return integer_text(parts_[i + 1]); }
  cv::Size size(std::size_t i) const {
    std::string_view text = parts_[i + 1];
    const std::size_t x = text.find('x');
    if (x == std::string_view::npos) {
      const int n = integer_text(text);
      return {n, n};
    }
    return {integer_text(text.substr(0, x)), integer_text(text.substr(x + 1))};
  }
  bool has_x(std::size_t i) const {
    return parts_[i + 1].find('x') != std::string_view::npos;
  }
  std::string_view text(std::size_t i) const { return parts_[i + 1]; }

 private:
  int integer_text(std::string_view text) const {
    int value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
      fail("bad integer '" + std::string(text) + "'");
    }
    return value;
  }

  std::string_view token_;
  std::vector<std::string_view> parts_;
};

std::unique_ptr<Transform> image_step(const Step& s) {
  const std::string_view n = s.name();
  if (n == "rrc") {
    s.want_args(1, 5);
    if (s.args() == 2 || s.args() == 4) s.fail("scale and ratio come in pairs");
    std::pair<double, double> scale{0.08, 1.0};
    std::pair<double, double> ratio{3.0 / 4.0, 4.0 / 3.0};
    if (s.args() >= 3) scale = {s.number(1), s.number(2)};
    if (s.args() == 5) ratio = {s.number(3), s.number(4)};
    return std::make_unique<RandomResizedCrop>(s.size(0), scale, ratio);
  }
  if (n == "crop") {
    s.want_args(1, 2);
    return std::make_unique<RandomCrop>(s.size(0), s.args() == 2 ? s.integer(1) : 0);
  }
  if (n == "centercrop") {
    s.want_args(1, 1);
    return std::make_unique<CenterCrop>(s.size(0));
  }
  if (n == "resize") {
    s.want_args(1, 1);
    if (s.has_x(0)) return std::make_unique<Resize>(s.size(0));
    return std::make_unique<Resize>(Resize::shorter_side(s.integer(0)));
  }
  if (n == "hflip" || n == "vflip") {
    s.want_args(0, 1);
    const double p = s.args() == 1 ? s.number(0) : 0.5;
    return std::make_unique<RandomFlip>(
        n == "hflip" ? RandomFlip::Axis::kHorizontal : RandomFlip::Axis::kVertical, p);
  }
  if (n == "erase") {
    s.want_args(0, 6);
    if (s.args() == 2 || s.args() == 4) s.fail("scale and ratio come in pairs");
    const double p = s.args() >= 1 ? s.number(0) : 0.5;
    std::pair<double, double> scale{0.02, 0.33};
    std::pair<double, double> ratio{0.3, 3.3};
    if (s.args() >= 3) scale = {s.number(1), s.number(2)};
    if (s.args() >= 5) ratio = {s.number(3), s.number(4)};
    return std::make_unique<RandomErasing>(p, scale, ratio,
                                           s.args() == 6 ? s.number(5) : 0);
  }
  if (n == "jitter") {
    s.want_args(4, 4);
    return std::make_unique<ColorJitter>(s.number(0), s.number(1), s.number(2),
                                         s.number(3));
  }
  if (n == "rotate") {
    s.want_args(1, 1);
    return std::make_unique<RandomRotation>(s.number(0));
  }
  if (n == "trivialaugment") {
    s.want_args(0, 1);
    return std::make_unique<TrivialAugmentWide>(s.args() == 1 ? s.integer(0) : 31);
  }
  if (n == "randaugment") {
    s.want_args(0, 3);
    return std::make_unique<RandAugment>(s.args() >= 1 ? s.integer(0) : 2,
                                         s.args() >= 2 ? s.integer(1) : 9,
                                         s.args() == 3 ? s.integer(2) : 31);
  }
  if (n == "blur") {
    s.want_args(3, 3);
    return std::make_unique<GaussianBlur>(s.integer(0), s.number(1), s.number(2));
  }
  return nullptr;
}

bool is_output(std::string_view name) {
  return name == "totensor" || name == "normalize" || name == "u8";
}

ToTensor output_step(const Step& s) {
  if (s.name() == "u8") {
    s.want_args(0, 0);
    return ToTensor::uint8();
  }
  // A trailing f16 / bf16 / f32 picks the precision of a floating output.
  std::size_t args = s.args();
  ToTensor::Output precision = ToTensor::Output::kFloat32;
  if (args > 0) {
    const std::string_view last = s.text(args - 1);
    if (last == "f16" || last == "bf16" || last == "f32") {
      precision = last == "f16"    ? ToTensor::Output::kFloat16
                  : last == "bf16" ? ToTensor::Output::kBFloat16
                                   : ToTensor::Output::kFloat32;
      --args;
    }
  }
  if (s.name() == "totensor") {
    if (args != 0) s.fail("takes only a precision: f32, f16 or bf16");
    return ToTensor(std::nullopt, precision);
  }
  if (args == 1 && s.text(0) == "imagenet")
    return ToTensor(Normalize::imagenet(), precision);
  if (args != 2 && args != 6) {
    s.fail("takes 'imagenet', M:S or M0:M1:M2:S0:S1:S2, then optionally f16 or bf16");
  }
  const std::size_t c = args / 2;
  std::vector<float> mean, sd;
  for (std::size_t i = 0; i < c; ++i) mean.push_back(static_cast<float>(s.number(i)));
  for (std::size_t i = 0; i < c; ++i) sd.push_back(static_cast<float>(s.number(c + i)));
  return ToTensor(Normalize(std::move(mean), std::move(sd)), precision);
}

}  // namespace

Compose parse_transform_spec(std::string_view spec) {
  std::vector<std::unique_ptr<Transform>> steps;
  ToTensor output;
  bool have_output = false;
  if (spec.empty()) return Compose(std::move(steps), output);
  for (std::string_view token : split(spec, ',')) {
    Step step(token);
    try {
      if (step.name().empty()) step.fail("empty step");
      if (is_output(step.name())) {
        if (have_output) step.fail("a second output step");
        output = output_step(step);
        have_output = true;
        continue;
      }
      if (have_output) step.fail("an image step after the output step");
      std::unique_ptr<Transform> t = image_step(step);
      if (!t) {
        step.fail("unknown transform '" + std::string(step.name()) +
                  "' (the steps are rrc, crop, centercrop, resize, hflip, vflip, jitter, "
                  "rotate, blur, erase, trivialaugment, randaugment, then one of "
                  "totensor, normalize, u8)");
      }
      steps.push_back(std::move(t));
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      if (what.rfind("transform spec:", 0) == 0) throw;
      step.fail(what);  // a constructor's complaint, tied to the token
    }
  }
  return Compose(std::move(steps), std::move(output));
}

}  // namespace seedloader
