#include "tools/seed_audit/expected_order.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "tools/seed_audit/trace_reader.h"

namespace seedloader::audit {
namespace {

// (epoch, batch, rank, run): the order the trace is walked in.
using StepKey = std::tuple<std::uint64_t, std::uint64_t, std::uint32_t, std::uint32_t>;
using Indices = std::vector<std::uint64_t>;

// [rank][step]: the sample indices of each rank's steps.
using RankSteps = std::vector<std::vector<Indices>>;

// Every rank's batches of one epoch under one configuration.
class EpochOrders {
 public:
  explicit EpochOrders(LedgerQuery base) : base_(std::move(base)) {}

  // The steps of the configuration, world size `world` (0: the configuration's).
  const RankSteps& of(std::uint64_t epoch, std::uint64_t world = 0) {
    return steps(epoch, world).trained;
  }
  // The samples the configuration declares skipped, at its own world size.
  const RankSteps& skipped(std::uint64_t epoch) { return steps(epoch, 0).skipped; }

  const LedgerQuery& base() const { return base_; }

 private:
  struct Steps {
    RankSteps trained, skipped;
  };

  const Steps& steps(std::uint64_t epoch, std::uint64_t world) {
    LedgerQuery q = base_;
    if (world != 0) {
      // The same global batch at another world size under the elastic partition;
      // the same per-rank batch under the strided one.
      if (q.options.partition == Partition::kElastic) {
        const std::uint64_t global = q.options.batch_size * q.options.world_size;
        if (global % world != 0) return empty_;
        q.options.batch_size = global / world;
      }
      q.options.world_size = world;
    }
    const auto key = std::make_pair(epoch, q.options.world_size);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    q.epoch = epoch;
    q.first_step = 0;
    q.end_step = ledger_steps(q);
    q.rank.reset();
    q.worker.reset();
    // Every step of every rank, a skipped one empty among the trained.
    const std::vector<Indices> none(q.end_step);
    Steps steps{RankSteps(q.options.world_size, none),
                RankSteps(q.options.world_size, none)};
    for (const LedgerEntry& e : ledger(q)) {
      // Declared: the run does not train it, and says so.
      (e.skipped ? steps.skipped : steps.trained)[e.rank][e.step].push_back(e.index);
    }
    return cache_.emplace(key, std::move(steps)).first->second;
  }

  LedgerQuery base_;
  std::map<std::pair<std::uint64_t, std::uint64_t>, Steps> cache_;
  const Steps empty_;
};

std::string list_text(const Indices& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size() && i < 8; ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() > 8 ? ", ... (" + std::to_string(v.size()) + ")]" : "]");
}

// What `got`, recorded at (epoch, rank, step), is instead, in words.
// `largest` is the largest index in the whole trace.
std::string explain(EpochOrders& orders, std::uint64_t epoch, std::uint32_t rank,
                    std::uint64_t step, const Indices& got, std::uint64_t largest) {
  const LedgerQuery& q = orders.base();
  if (largest >= q.dataset_size)
    return "the trace reads index " + std::to_string(largest) +
           ", not below the configuration's " + std::to_string(q.dataset_size) +
           " samples: the data set grew, or the trace is of another data set";
  const auto& mine = orders.of(epoch);
  if (rank < mine.size()) {
    for (std::uint64_t k = 0; k < mine[rank].size(); ++k) {
      if (k != step && mine[rank][k] == got) {
        return "it is the configuration's step " + std::to_string(k) + " of rank " +
               std::to_string(rank) + ": the run's steps are numbered " +
               std::to_string(k > step ? k - step : step - k) +
               (k > step ? " behind the order" : " ahead of the order") +
               " (a wrong resume point)";
      }
    }
  }
  for (std::uint64_t world = 1; world <= 16; ++world) {
    if (world == q.options.world_size) continue;
    const auto& other = orders.of(epoch, world);
    for (std::uint64_t r = 0; r < other.size(); ++r) {
      if (step < other[r].size() && other[r][step] == got) {
        return "it is what rank " + std::to_string(r) + " of a world of " +
               std::to_string(world) + " reads at this step: the world size changed" +
               (q.options.partition == Partition::kStrided
                    ? " (under the strided partition a rank's samples depend on the "
                      "world size; the elastic partition keeps each global batch)"
                    : "");
      }
    }
  }
  for (std::uint64_t e = 0; e <= epoch + 3; ++e) {
    if (e == epoch) continue;
    const auto& other = orders.of(e);
    if (rank < other.size() && step < other[rank].size() && other[rank][step] == got)
      return "it is the configuration's epoch " + std::to_string(e) +
             " at this step: the epoch number differs (set_epoch not called?)";
  }
  return "no step of the configuration holds it: another seed, shuffle, order or "
         "batch size?";
}

}  // namespace

std::optional<Finding> check_expected_order(const std::string& path,
                                            const LedgerQuery& config,
                                            std::uint64_t& checked) {
  struct Recorded {
    Indices trained, declared;  // the samples of the step, and those declared skipped
  };
  std::map<StepKey, Recorded> trace;
  std::uint64_t largest = 0;
  read_trace(path, [&](const SampleRecord& r) {
    Recorded& step = trace[{r.epoch, r.batch, r.rank, r.run}];
    (r.skipped ? step.declared : step.trained).push_back(r.index);
    largest = std::max(largest, r.index);
  });
  EpochOrders orders(config);
  Finding finding{FindingKind::kOrderMismatch, 0, {}};
  checked = 0;
  const auto example = [&](std::uint64_t count, const StepKey& key, std::uint64_t index,
                           std::string note) {
    const auto& [epoch, step, rank, run] = key;
    finding.count += count;
    if (finding.examples.size() >= 3) return;
    Example ex;
    ex.sample =
        SamplePlace{rank, static_cast<std::uint32_t>(epoch), {}, step, index, run};
    ex.note = std::move(note);
    finding.examples.push_back(std::move(ex));
  };
  for (const auto& [key, recorded] : trace) {
    const auto& [epoch, step, rank, run] = key;
    const Indices& got = recorded.trained;
    checked += got.size() + recorded.declared.size();
    const auto& mine = orders.of(epoch);
    if (rank >= mine.size()) {
      const Indices& any = got.empty() ? recorded.declared : got;
      example(got.size() + recorded.declared.size(), key, any.front(),
              "rank " + std::to_string(rank) +
                  " is outside the configuration's world of " +
                  std::to_string(mine.size()));
      continue;
    }
    if (!recorded.declared.empty()) {
      // A skip the run declared must be one the configuration declares.
      const auto& skipped = orders.skipped(epoch);
      Indices want = step < skipped[rank].size() ? skipped[rank][step] : Indices{};
      Indices declared = recorded.declared;
      std::sort(want.begin(), want.end());
      std::sort(declared.begin(), declared.end());
      if (declared != want) {
        example(recorded.declared.size(), key, recorded.declared.front(),
                "the trace declares " + list_text(recorded.declared) +
                    " skipped where the configuration skips " + list_text(want) +
                    ": the run declared other skips than the configuration (give the "
                    "run's: --skip-steps A:B, --skip-samples FILE)");
      }
    }
    if (got.empty()) continue;
    const Indices* want = step < mine[rank].size() ? &mine[rank][step] : nullptr;
    if (want != nullptr && *want == got) continue;
    std::size_t at = 0;
    while (want != nullptr && at < got.size() && at < want->size() &&
           got[at] == (*want)[at])
      ++at;
    const std::uint64_t first_apart = got[std::min(at, got.size() - 1)];
    if (want != nullptr && want->empty()) {
      example(got.size(), key, first_apart,
              "the trace has " + list_text(got) +
                  " where the configuration declares the step skipped (--skip-steps): "
                  "the run trained a step it should have skipped");
    } else if (finding.examples.size() < 3) {
      example(got.size(), key, first_apart,
              "the trace has " + list_text(got) +
                  (want != nullptr ? " where the configuration gives " + list_text(*want)
                                   : " past the epoch's " +
                                         std::to_string(mine[rank].size()) + " steps") +
                  "; " + explain(orders, epoch, rank, step, got, largest));
    } else {
      finding.count += got.size();  // no example: explain() is not worth its queries
    }
  }
  if (finding.count == 0) return std::nullopt;
  return finding;
}

}  // namespace seedloader::audit
