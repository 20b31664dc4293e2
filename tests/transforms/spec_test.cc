#include "seedloader/transforms/spec.h"

#include <gtest/gtest.h>

#include "seedloader/error.h"

namespace seedloader {
namespace {

std::string config_error_of(const std::string& spec) {
  try {
    parse_transform_spec(spec);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(TransformSpecTest, ParsesTheDocumentedExample) {
  Compose chain =
      parse_transform_spec("rrc:224,hflip,jitter:0.4:0.4:0.4:0.1,normalize:imagenet");
  ASSERT_EQ(chain.steps().size(), 3u);
  EXPECT_NE(chain.steps()[0]->describe().find("RandomResizedCrop(224x224"),
            std::string::npos);
  EXPECT_NE(chain.steps()[1]->describe().find("RandomHorizontalFlip(p=0.5"),
            std::string::npos);
  EXPECT_NE(chain.steps()[2]->describe().find("ColorJitter(brightness=0.4"),
            std::string::npos);
  ASSERT_TRUE(chain.output().normalize().has_value());
  EXPECT_FLOAT_EQ(chain.output().normalize()->mean()[0], 0.485f);
  EXPECT_EQ(chain.output_size(), cv::Size(224, 224));
}

TEST(TransformSpecTest, ParsesEveryStepAndOutput) {
  Compose chain = parse_transform_spec(
      "resize:40x30,crop:24:4,centercrop:20,vflip:0.2,rotate:15,blur:5:0.1:2,"
      "rrc:16:0.5:1:0.8:1.25,normalize:0.5:0.25");
  EXPECT_EQ(chain.steps().size(), 7u);
  EXPECT_EQ(chain.output().normalize()->std()[0], 0.25f);
  EXPECT_EQ(parse_transform_spec("centercrop:8,u8").output().output(),
            ToTensor::Output::kUint8);
  EXPECT_TRUE(parse_transform_spec("").steps().empty());
}

TEST(TransformSpecTest, UnknownNameIsConfigErrorNamingTheToken) {
  EXPECT_NE(config_error_of("rrc:224,sharpen:2").find("'sharpen:2'"), std::string::npos);
  // The message lists the steps, and every step it lists is one.
  const std::string what = config_error_of("sharpen");
  const std::string head = "(the steps are ";
  const std::size_t open = what.find(head);
  ASSERT_NE(open, std::string::npos) << what;
  std::string list = what.substr(open + head.size());
  list = list.substr(0, list.find(')'));
  std::vector<std::string> names;
  for (std::size_t at = 0; at < list.size();) {
    std::size_t end = list.find_first_of(", ", at);
    if (end == std::string::npos) end = list.size();
    std::string word = list.substr(at, end - at);
    if (!word.empty() && word != "then" && word != "one" && word != "of")
      names.push_back(word);
    at = end + 1;
  }
  EXPECT_EQ(names.size(), 15u) << list;
  for (const std::string& name : names) {
    EXPECT_EQ(config_error_of(name).find("unknown transform"), std::string::npos) << name;
  }
}

TEST(TransformSpecTest, BadNumberIsConfigErrorNamingTheToken) {
  EXPECT_NE(config_error_of("rrc:22x").find("'rrc:22x'"), std::string::npos);
  EXPECT_NE(config_error_of("hflip:abc").find("'hflip:abc'"), std::string::npos);
  EXPECT_NE(config_error_of("jitter:0.4:0.4:0.4").find("'jitter:0.4:0.4:0.4'"),
            std::string::npos);
}

TEST(TransformSpecTest, InvalidValueIsConfigErrorNamingTheToken) {
  const std::string what = config_error_of("hflip:1.5");
  EXPECT_NE(what.find("'hflip:1.5'"), std::string::npos);
  EXPECT_NE(what.find("p must be in [0, 1]"), std::string::npos);
  EXPECT_NE(config_error_of("blur:4:1:2").find("'blur:4:1:2'"), std::string::npos);
}

TEST(TransformSpecTest, NonFiniteNumbersAreConfigErrorsNamingTheToken) {
  for (const char* spec : {"jitter:nan:0:0:0", "rotate:inf", "normalize:0.5:-inf"}) {
    const std::string what = config_error_of(spec);
    EXPECT_NE(what.find(std::string("'") + spec + "'"), std::string::npos) << what;
    EXPECT_NE(what.find("not a finite number"), std::string::npos) << what;
  }
}

// Every number gets a sane range at parse time: before, crop:8:2147483647 wrapped
// the padded size and crashed in copyMakeBorder and blur:2147483647 tried to
// build a 2^31-wide kernel.
TEST(TransformSpecTest, OutOfRangeNumbersAreConfigErrorsNamingTheToken) {
  for (const char* spec : {"crop:8:2147483647",
                           "crop:8:-1",
                           "crop:70000",
                           "crop:65536",
                           "centercrop:65536x65536",
                           "rrc:100000x1",
                           "resize:70000",
                           "resize:65536x65536",
                           "blur:2147483647:1:2",
                           "blur:257:1:2",
                           "blur:5:0:2",
                           "blur:5:1:1e9",
                           "blur:5:2:1",
                           "rotate:1e9",
                           "rotate:-1",
                           "jitter:-0.1:0:0:0",
                           "jitter:0:0:0:0.6",
                           "rrc:224:0.5:0.1",
                           "rrc:224:0:1",
                           "rrc:224:0.5:1:2:1",
                           "rrc:224:0.5:1:0:1",
                           "normalize:0.5:0",
                           "normalize:0.5:-1",
                           "normalize:0.5:1e39",
                           "normalize:1e39:0.5",
                           "normalize:0:0:0:1:1:1e39"}) {
    const std::string what = config_error_of(spec);
    EXPECT_NE(what.find(std::string("'") + spec + "'"), std::string::npos)
        << spec << ": " << what;
  }
}

TEST(TransformSpecTest, NumbersAtTheLimitsAreAccepted) {
  EXPECT_NO_THROW(parse_transform_spec("crop:65536x4096:65536,blur:255:0.1:1000"));
  EXPECT_NO_THROW(parse_transform_spec("rotate:360,jitter:100:0:0:0.5,resize:16384"));
}

TEST(TransformSpecTest, NonFiniteNumbersAreRejectedInEveryStep) {
  for (const char* spec :
       {"rrc:224:nan:1", "rrc:224:0.5:1:1:inf", "hflip:nan", "vflip:inf", "blur:5:1:inf",
        "blur:5:nan:1", "jitter:0:0:0:nan", "normalize:nan:1", "rotate:nan", "crop:nan",
        "resize:inf"}) {
    EXPECT_NE(config_error_of(spec).find(std::string("'") + spec + "'"),
              std::string::npos)
        << spec;
  }
}

TEST(TransformSpecTest, OutputPrecisionIsTheLastArgument) {
  EXPECT_EQ(parse_transform_spec("normalize:imagenet:bf16").output().dtype(),
            DType::kBF16);
  EXPECT_EQ(parse_transform_spec("normalize:0.5:0.25:f16").output().dtype(), DType::kF16);
  EXPECT_EQ(parse_transform_spec("totensor:f16").output().dtype(), DType::kF16);
  EXPECT_EQ(parse_transform_spec("totensor:f32").output().dtype(), DType::kF32);
  EXPECT_EQ(parse_transform_spec("normalize:imagenet").output().dtype(), DType::kF32);
  EXPECT_EQ(parse_transform_spec("u8").output().dtype(), DType::kU8);
  EXPECT_NE(config_error_of("u8:f16").find("'u8:f16'"), std::string::npos);
  EXPECT_NE(config_error_of("totensor:2").find("precision"), std::string::npos);
  EXPECT_NE(config_error_of("normalize:imagenet:f8").find("'normalize:imagenet:f8'"),
            std::string::npos);
}

TEST(TransformSpecTest, ImageStepAfterTheOutputIsRejected) {
  EXPECT_NE(config_error_of("normalize:imagenet,hflip").find("'hflip'"),
            std::string::npos);
  EXPECT_NE(config_error_of("totensor,u8").find("'u8'"), std::string::npos);
  EXPECT_NE(config_error_of("hflip,,vflip").find("empty step"), std::string::npos);
}

TEST(TransformSpecTest, AugmentPolicyTokensTakeTorchvisionsDefaults) {
  const Compose chain = parse_transform_spec(
      "trivialaugment,trivialaugment:11,randaugment,randaugment:3,randaugment:1:4,"
      "randaugment:2:14:15,u8");
  ASSERT_EQ(chain.steps().size(), 6u);
  EXPECT_EQ(chain.steps()[0]->describe(), "TrivialAugmentWide(num_magnitude_bins=31)");
  EXPECT_EQ(chain.steps()[1]->describe(), "TrivialAugmentWide(num_magnitude_bins=11)");
  EXPECT_EQ(chain.steps()[2]->describe(),
            "RandAugment(num_ops=2, magnitude=9, num_magnitude_bins=31)");
  EXPECT_EQ(chain.steps()[3]->describe(),
            "RandAugment(num_ops=3, magnitude=9, num_magnitude_bins=31)");
  EXPECT_EQ(chain.steps()[5]->describe(),
            "RandAugment(num_ops=2, magnitude=14, num_magnitude_bins=15)");
}

TEST(TransformSpecTest, BadAugmentPolicyTokensAreConfigErrorsNamingTheToken) {
  for (const char* spec : {"trivialaugment:1", "trivialaugment:1025", "trivialaugment:x",
                           "trivialaugment:3:4", "randaugment:-1", "randaugment:17",
                           "randaugment:2:31", "randaugment:2:-1", "randaugment:2:9:1",
                           "randaugment:2:9:31:1", "randaugment:2.5"}) {
    const std::string what = config_error_of(spec);
    EXPECT_NE(what.find(std::string("'") + spec + "'"), std::string::npos)
        << spec << ": " << what;
  }
  EXPECT_NE(config_error_of("randaugment:2:31").find("magnitude must be in [0, 30]"),
            std::string::npos);
}

}  // namespace
}  // namespace seedloader
