// seedloader-bench: throughput of one loader configuration — samples/s,
// batches/s, bytes/s, each worker's busy fraction, the main process's CPU per
// batch and peak memory; optionally beside the full-size JPEG decode-only rate.
#include <chrono>
#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "seedloader/data_loader.h"
#include "seedloader/datasets/tar_shards.h"
#include "seedloader/error.h"
#include "tools/common/data_spec.h"
#include "tools/common/error_text.h"
#include "tools/common/loader_flags.h"
#include "tools/common/number_checks.h"
#include "tools/seedloader_bench/decode_reference.h"
#include "tools/seedloader_bench/measure.h"

namespace {

using seedloader::bench::BenchArgs;
using seedloader::bench::DecodeReference;
using seedloader::bench::Measurement;

void print(const BenchArgs& a, const Measurement& m, const DecodeReference& ref) {
  const double s = m.seconds > 0 ? m.seconds : 1e-9;
  const double cpu_per_batch = m.batches ? m.main_cpu_seconds / m.batches : 0.0;
  const double cpu_share = m.main_cpu_seconds / s;
  // 0 workers: the calling thread is the one worker.
  const double per_worker = m.samples / s / (a.workers > 0 ? a.workers : 1);
  const double vs_decode = ref.per_s > 0 ? per_worker / ref.per_s : 0.0;
  if (a.json) {
    nlohmann::json j = {{"data", seedloader::redact_credentials(a.data)},
                        {"transform", a.transform},
                        {"batch_size", a.batch_size},
                        {"workers", a.workers},
                        {"batches", m.batches},
                        {"seconds", m.seconds},
                        {"first_batch_s", m.first_batch_seconds},
                        {"samples_per_s", m.samples / s},
                        {"batches_per_s", m.batches / s},
                        {"bytes_per_s", m.bytes / s},
                        {"worker_busy", m.worker_busy},
                        {"peak_memory_bytes", m.peak_memory_bytes},
                        {"main_cpu_s_per_batch", cpu_per_batch},
                        {"main_cpu_share", cpu_share}};
    if (ref.per_s > 0) {
      j["decode_reference_images"] = ref.images;
      j["decode_only_per_s"] = ref.per_s;
      j["per_worker_vs_decode"] = vs_decode;
    }
    if (m.prefetch_errors > 0) {
      j["prefetch_errors"] = m.prefetch_errors;
      j["first_prefetch_error"] = seedloader::redact_credentials(m.first_prefetch_error);
    }
    if (a.device) {
      j["device_bytes_per_s"] = m.device_bytes_per_s;
      j["pinned_memcpy_bytes_per_s"] = m.pinned_memcpy_bytes_per_s;
    }
    std::cout << j.dump() << "\n";
    return;
  }
  std::printf("%s | %s | batch %llu | workers %d\n",
              seedloader::redact_credentials(a.data).c_str(),
              a.transform.empty() ? "(no transform)" : a.transform.c_str(),
              static_cast<unsigned long long>(a.batch_size), a.workers);
  std::printf("  %.1f samples/s  %.2f batches/s  %.1f MB/s  (%llu batches in %.2f s)\n",
              m.samples / s, m.batches / s, m.bytes / s / 1e6,
              static_cast<unsigned long long>(m.batches), m.seconds);
  std::printf("  first batch after %.3f s\n", m.first_batch_seconds);
  std::printf("  worker busy:");
  for (double b : m.worker_busy) std::printf(" %.0f%%", 100 * b);
  std::printf("%s\n", m.worker_busy.empty() ? " (no workers)" : "");
  std::printf("  peak memory (main RSS + workers' PSS): %.1f MB\n",
              m.peak_memory_bytes / 1e6);
  std::printf("  main process: %.0f us CPU per batch (%.1f%% of one core)\n",
              cpu_per_batch * 1e6, 100 * cpu_share);
  if (m.prefetch_errors > 0) {
    std::printf("  downloads ahead that failed: %llu; the first: %s\n",
                static_cast<unsigned long long>(m.prefetch_errors),
                seedloader::redact_credentials(m.first_prefetch_error).c_str());
  }
  if (ref.per_s > 0) {
    std::printf(
        "  full-size decode only, this core: %.1f images/s (%llu JPEGs); pipeline per "
        "worker: %.1f samples/s = %.2fx\n",
        ref.per_s, static_cast<unsigned long long>(ref.images), per_worker, vs_decode);
  }
  if (a.device) {
    std::printf(
        "  H2D through DevicePrefetcher: %.2f GB/s; plain pinned cudaMemcpyAsync: "
        "%.2f GB/s\n",
        m.device_bytes_per_s / 1e9, m.pinned_memcpy_bytes_per_s / 1e9);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"seedloader-bench: measure one loader configuration's throughput."};
  seedloader::tools::redact_parse_errors(app);
  BenchArgs a;
  seedloader::tools::LoaderFlagOptions lf =
      seedloader::tools::add_loader_options(app, a, a.seeding,
                                            {{"full", seedloader::SeedScope::kWorker},
                                             {"sample", seedloader::SeedScope::kSample}},
                                            "full (worker streams) or sample");
  lf.transform->description("Transform spec, e.g. rrc:224,hflip,normalize:imagenet");
  lf.workers->description("Worker processes (0: in the calling thread)");
  app.add_option("--batches", a.batches, "Timed batches")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--warmup", a.warmup, "Untimed batches first")->capture_default_str();
  app.add_option("--seed", a.seed, "Base seed")
      ->check(seedloader::tools::non_negative_integer())
      ->capture_default_str();
  seedloader::tools::add_partition_option(app, a.partition);
  seedloader::tools::add_order_option(app, a.order, &a.shuffle_block);
  app.add_option("--world-size", a.world_size, "Ranks the data is split across")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--rank", a.rank, "The rank measured (below --world-size)")
      ->check(seedloader::tools::non_negative_integer())
      ->capture_default_str();
  app.add_flag("--device", a.device, "Copy every batch to GPU 0 (CUDA builds)");
  app.add_flag("--json", a.json, "Print one JSON object");
  app.add_option("--decode-reference", a.decode_reference,
                 "Before the timed loop, decode the first N JPEGs of an imagefolder "
                 "at full size on this thread for >= 1 s, and report samples/s per "
                 "worker against that rate (0: off)")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    std::unique_ptr<seedloader::Dataset> dataset =
        seedloader::tools::open_dataset(a.data, a.transform);
    seedloader::LoaderOptions opt;
    opt.batch_size = a.batch_size;
    opt.num_workers = a.workers;
    opt.shuffle = true;
    opt.seed = a.seed;
    opt.drop_last = true;
    opt.persistent_workers = true;
    opt.seeding = a.seeding;
    opt.partition = a.partition;
    opt.order = a.order;
    opt.shuffle_block = a.shuffle_block;
    opt.world_size = a.world_size;
    opt.rank = a.rank;
    opt.timeout = std::chrono::seconds(a.timeout_s);
    seedloader::DataLoader loader(*dataset, opt);
    if (loader.num_batches() == 0) {
      throw seedloader::ConfigError("the dataset has fewer samples than one batch");
    }
    // Before the loop and with no worker forked yet (they start at the first
    // begin()), so the reference has this core to itself.
    DecodeReference ref;
    if (a.decode_reference > 0) {
      ref = seedloader::bench::measure_decode_reference(*dataset, a.decode_reference);
    }
    Measurement m = a.device ? seedloader::bench::measure_device(loader, a)
                             : seedloader::bench::measure_host(loader, a);
    if (const auto* shards = dynamic_cast<const seedloader::TarShards*>(dataset.get())) {
      const seedloader::PrefetchErrors errors = shards->prefetch_errors();
      m.prefetch_errors = errors.count;
      m.first_prefetch_error = errors.first;
    }
    print(a, m, ref);
    return 0;
  } catch (const seedloader::ConfigError& e) {
    std::fprintf(stderr, "seedloader-bench: %s\n",
                 seedloader::tools::error_text(e).c_str());
    return 2;
  } catch (const seedloader::DataError& e) {
    std::fprintf(stderr, "seedloader-bench: %s\n",
                 seedloader::tools::error_text(e).c_str());
    return 2;
  } catch (const seedloader::TimeoutError& e) {
    std::fprintf(stderr, "seedloader-bench: %s\n",
                 seedloader::tools::error_text(e).c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "seedloader-bench: error: %s\n",
                 seedloader::tools::error_text(e).c_str());
    return 1;
  }
}
