// seedloader-pack: writes a data set the loader reads as WebDataset tar shards
// with an index.json, keeping encoded images as they are (raw pixels as PNG).
#include <charconv>
#include <cstdio>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "seedloader/error.h"
#include "tools/common/data_spec.h"
#include "tools/common/error_text.h"
#include "tools/common/number_checks.h"
#include "tools/seedloader_pack/pack_source.h"
#include "tools/seedloader_pack/packer.h"

int main(int argc, char** argv) {
  CLI::App app{
      "seedloader-pack: write a data set as WebDataset tar shards (000000.tar, ...) "
      "and an index.json in OUT. Images keep their encoded bytes; CIFAR-10, MNIST "
      "and synthetic pixels are stored as lossless PNG. Read the result back with "
      "tar:OUT/*.tar."};
  seedloader::tools::redact_parse_errors(app);
  std::string spec, out, shard_size_text = "1G";
  std::uint64_t shuffle_seed = 0;
  bool force = false;
  app.add_option("SPEC", spec,
                 seedloader::tools::data_spec_help() +
                     "; here tar: reads local files only: a shard pattern, a packed "
                     "folder or its index.json")
      ->required();
  app.add_option("OUT", out, "Output folder (created if missing)")->required();
  app.add_option("--shard-size", shard_size_text,
                 "Largest shard in bytes: N, or N with K, M, G or T (powers of 1024); "
                 "a sample larger than this goes alone in a shard")
      ->capture_default_str();
  CLI::Option* shuffle =
      app.add_option("--shuffle-seed", shuffle_seed,
                     "Write the samples in the order of a seeded permutation "
                     "(seedloader's shuffle of epoch 0) instead of the data set's")
          ->check(seedloader::tools::non_negative_integer());
  app.add_flag("--force", force,
               "Replace an earlier pack in OUT (its index.json and NNNNNN.tar)");
  bool jpeg_restart = false;
  app.add_flag(
      "--jpeg-restart", jpeg_restart,
      "Rewrite each baseline JPEG losslessly with restart markers that cut every "
      "MCU row into intervals of about 8 MCUs, and store the markers' offsets as "
      "the sample's .rst member: the loader then entropy-decodes only the "
      "intervals a crop needs (progressive and CMYK JPEGs are kept as they are, "
      "and counted)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  seedloader::pack::PackOptions options;
  options.force = force;
  options.jpeg_restart = jpeg_restart;
  if (shuffle->count() > 0) options.shuffle_seed = shuffle_seed;
  try {
    const std::optional<std::uint64_t> shard_bytes =
        seedloader::tools::parse_byte_size(shard_size_text);
    if (!shard_bytes) {
      throw seedloader::ConfigError("--shard-size '" + shard_size_text +
                                    "': expected a byte count such as 1073741824, "
                                    "64M or 1G");
    }
    options.shard_bytes = *shard_bytes;
    options.validate();
    const auto source = seedloader::pack::open_pack_source(spec);
    seedloader::pack::prepare_out_dir(out, options);
    const seedloader::pack::PackSummary s = seedloader::pack::pack(*source, out, options);
    std::printf("seedloader-pack: %llu samples in %llu shards, %llu bytes, in %s\n",
                static_cast<unsigned long long>(s.samples),
                static_cast<unsigned long long>(s.shards),
                static_cast<unsigned long long>(s.bytes), out.c_str());
    if (jpeg_restart) {
      const double growth = s.restart_bytes_before > 0
                                ? 100.0 *
                                      (static_cast<double>(s.restart_bytes_after) -
                                       static_cast<double>(s.restart_bytes_before)) /
                                      static_cast<double>(s.restart_bytes_before)
                                : 0.0;
      std::printf(
          "seedloader-pack: --jpeg-restart: %llu JPEGs given restart markers, %llu "
          "bytes before, %llu after (%+.2f%%, .rst members not counted)\n",
          static_cast<unsigned long long>(s.restarted),
          static_cast<unsigned long long>(s.restart_bytes_before),
          static_cast<unsigned long long>(s.restart_bytes_after), growth);
      for (const auto& [why, count] : s.kept) {
        std::printf(
            "seedloader-pack: --jpeg-restart: %llu images kept as they were (%s)\n",
            static_cast<unsigned long long>(count), why.c_str());
      }
    }
    return 0;
  } catch (const seedloader::ConfigError& e) {
    std::fprintf(stderr, "seedloader-pack: %s\n",
                 seedloader::tools::error_text(e).c_str());
    return 2;
  } catch (const seedloader::DataError& e) {
    std::fprintf(stderr, "seedloader-pack: %s\n",
                 seedloader::tools::error_text(e).c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "seedloader-pack: error: %s\n",
                 seedloader::tools::error_text(e).c_str());
    return 1;
  }
}
