// The same stream gives the same pixels on any x86-64 CPU: every transform's
// output and the fused chain's samples from JPEGs (pixel_dump) are identical
// with OpenCV's AVX-512, AVX2 and AVX paths disabled in turn, down to its SSE2
// baseline, with libjpeg-turbo's SIMD off, and with the resampler's kernels at
// each of their levels. (Hue jitter differed before it left OpenCV's HSV
// conversion.)
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
  // libjpeg-turbo's SIMD off, the resampler's kernels at each level below the
  // native one, and both off together with every OpenCV level above SSE2.
  const std::string all = std::string("OPENCV_CPU_DISABLE=") + levels[3];
  for (const std::string env :
       {std::string("JSIMD_FORCENONE=1"), std::string("SEEDLOADER_SIMD=off"),
        std::string("SEEDLOADER_SIMD=sse41"), std::string("SEEDLOADER_SIMD=avx2"),
        "JSIMD_FORCENONE=1 SEEDLOADER_SIMD=off " + all}) {
    const auto r =
        testing_util::run_command(env + " " + SEEDLOADER_PIXEL_DUMP + " 2>/dev/null");
    ASSERT_EQ(r.exit_code, 0) << env;
    EXPECT_EQ(r.out, native.out) << "with " << env;
  }
}

// SEEDLOADER_SIMD picks the resampler's level, up to what this CPU has; anything
// else is refused by name.
TEST(PixelDispatchTest, SeedloaderSimdSelectsTheResamplersLevel) {
  const auto level = [](const std::string& value) {
    return testing_util::run_command("SEEDLOADER_SIMD=" + value + " " +
                                     SEEDLOADER_PIXEL_DUMP + " --simd 2>&1");
  };
  const bool sse41 = __builtin_cpu_supports("sse4.1");
  const bool avx2 = __builtin_cpu_supports("avx2");
  EXPECT_EQ(level("off").out, "off\n");
  EXPECT_EQ(level("sse41").out, sse41 ? "sse41\n" : "off\n");
  EXPECT_EQ(level("avx2").out, avx2 ? "avx2\n" : sse41 ? "sse41\n" : "off\n");
  EXPECT_EQ(level("").out, level("avx2").out);
  const auto bad = level("avx512");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.out, "pixel_dump: SEEDLOADER_SIMD=avx512: expected off, sse41 or avx2\n");
}

}  // namespace
}  // namespace seedloader
