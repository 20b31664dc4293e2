// The same stream gives the same pixels on any x86-64 CPU: every transform's
// output and the fused chain's samples from JPEGs (pixel_dump) are identical
// with OpenCV's AVX-512, AVX2 and AVX paths disabled in turn, down to its SSE2
// baseline, with libjpeg-turbo's SIMD off, and with the resampler's SSE4.1
// kernels off. (Hue jitter differed before it
// left OpenCV's HSV conversion.)
#include <gtest/gtest.h>

#include <string>

#include "tests/common/run_command.h"

namespace seedloader {
namespace {

TEST(PixelDispatchTest, EveryTransformGivesTheSameBytesAtEveryDispatchLevel) {
  const char* levels[] = {
      "AVX512-SKX",
      "AVX512-SKX,AVX2,FMA3",
      "AVX512-SKX,AVX2,FMA3,AVX,FP16",
      "AVX512-SKX,AVX2,FMA3,AVX,FP16,SSE4.2,SSE4.1,POPCNT,SSSE3,SSE3",
  };
  const auto native = testing_util::run_command(std::string(SEEDLOADER_PIXEL_DUMP));
  ASSERT_EQ(native.exit_code, 0);
  ASSERT_NE(native.out.find("jitter:0:0:0:0.5 "), std::string::npos) << native.out;
  ASSERT_NE(native.out.find("randaugment:4:30:31 "), std::string::npos) << native.out;
  ASSERT_NE(native.out.find("fused rrc:224,hflip,normalize:imagenet "), std::string::npos)
      << native.out;
  for (const char* disabled : levels) {
    const auto r =
        testing_util::run_command(std::string("OPENCV_CPU_DISABLE=") + disabled + " " +
                                  SEEDLOADER_PIXEL_DUMP + " 2>/dev/null");
    ASSERT_EQ(r.exit_code, 0) << disabled;
    EXPECT_EQ(r.out, native.out) << "with " << disabled << " disabled";
  }
  // libjpeg-turbo's SIMD and the resampler's vector kernels, off one at a time
  // and then together with every OpenCV level above SSE2.
  const std::string all = std::string("OPENCV_CPU_DISABLE=") + levels[3];
  for (const std::string env :
       {std::string("JSIMD_FORCENONE=1"), std::string("SEEDLOADER_SIMD=off"),
        "JSIMD_FORCENONE=1 SEEDLOADER_SIMD=off " + all}) {
    const auto r =
        testing_util::run_command(env + " " + SEEDLOADER_PIXEL_DUMP + " 2>/dev/null");
    ASSERT_EQ(r.exit_code, 0) << env;
    EXPECT_EQ(r.out, native.out) << "with " << env;
  }
}

}  // namespace
}  // namespace seedloader
