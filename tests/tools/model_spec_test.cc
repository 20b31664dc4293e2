// ddp-train's --model parser (tools/ddp_train/model_spec.h), without MPI.
#include "tools/ddp_train/model_spec.h"

#include <gtest/gtest.h>

#include <string>

#include "seedloader/error.h"

namespace seedloader::train {
namespace {

TEST(ModelSpecTest, MlpAndCnnBuildTheirLayers) {
  EXPECT_EQ(build_layers("mlp:784,128,10", {784}).size(), 3u);
  EXPECT_EQ(build_layers("mlp:784,10", {1, 28, 28}).size(), 2u);  // Flatten first
  EXPECT_EQ(build_layers("cnn:small:100", {3, 32, 32}).size(), 8u);
}

TEST(ModelSpecTest, ParameterCountsBeyondInt64AreAConfigError) {
  // Found by tests/fuzz (model_spec_fuzzer): a layer whose weight has more than
  // 2^63 elements, which Sequential's size arithmetic would overflow.
  EXPECT_THROW(build_layers("mlp:784,84,1221228,12217171848410", {784}), ConfigError);
  EXPECT_THROW(build_layers("cnn:small:4611686018427387904", {3, 32, 32}), ConfigError);
  EXPECT_THROW(build_layers("mlp:4,4611686018427387904,4611686018427387904", {4}),
               ConfigError);
}

TEST(ModelSpecTest, WidthsAboveInt32AreAConfigError) {
  // Found by tests/fuzz (model_spec_fuzzer): parameters that fit int64 but a width
  // of 2720222112820610614 next to a width of 1, whose activations for a batch
  // of 4 (4 x width) overflow int64.
  EXPECT_THROW(build_layers("mlp:784,1,2720222112820610614,1,10", {784}), ConfigError);
  EXPECT_THROW(build_layers("mlp:784,2147483648,10", {784}), ConfigError);
  try {
    build_layers("mlp:784,2147483648,10", {784});
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'2147483648' is above the largest layer width"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(build_layers("mlp:1,2147483647,1", {1}).size(), 3u);
}

}  // namespace
}  // namespace seedloader::train
