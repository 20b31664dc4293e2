// The worker program of exec_worker_test: builds the loader that test builds
// (a StreamProbeDataset and base options, from its first arguments) and serves
// one worker of its parent's engine (DataLoader::serve_worker).
// Usage: exec_worker SIZE BATCH WORKERS SAMPLE_SEEDING PERSISTENT <launch arguments>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "seedloader/data_loader.h"
#include "seedloader/error.h"
#include "seedloader/stream_probe_dataset.h"

int main(int argc, char** argv) {
  using namespace seedloader;
  constexpr int kOwn = 5;
  if (argc < 1 + kOwn) {
    std::fprintf(stderr, "exec_worker: too few arguments\n");
    return 2;
  }
  try {
    const StreamProbeDataset dataset(std::strtoull(argv[1], nullptr, 10), 3);
    LoaderOptions o;
    o.batch_size = std::strtoull(argv[2], nullptr, 10);
    o.num_workers = std::atoi(argv[3]);
    o.seeding = std::string(argv[4]) == "1" ? SeedScope::kSample : SeedScope::kWorker;
    o.persistent_workers = std::string(argv[5]) == "1";
    o.prefetch = 2;
    o.shuffle = true;
    o.seed = 1234;
    DataLoader loader(dataset, o);
    loader.serve_worker(
        WorkerLaunch::parse(std::vector<std::string>(argv + 1 + kOwn, argv + argc)));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "exec_worker: %s\n", e.what());
    return 1;
  }
}
