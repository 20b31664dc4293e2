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

// Every rank's batches of one epoch under one configuration: [rank][step].
class EpochOrders {
 public:
  explicit EpochOrders(LedgerQuery base) : base_(std::move(base)) {}

  // The steps of the configuration, world size `world` (0: the configuration's).
  const std::vector<std::vector<Indices>>& of(std::uint64_t epoch,
                                              std::uint64_t world = 0) {
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
    std::vector<std::vector<Indices>> steps(q.options.world_size);
    q.epoch = epoch;
    q.first_step = 0;
    q.end_step = ledger_steps(q);
    q.rank.reset();
    q.worker.reset();
    for (const LedgerEntry& e : ledger(q)) {
      if (e.skipped) continue;  // declared: the run does not train it
      auto& rank = steps[e.rank];
      if (rank.size() <= e.step) rank.resize(e.step + 1);
      rank[e.step].push_back(e.index);
    }
    return cache_.emplace(key, std::move(steps)).first->second;
  }

  const LedgerQuery& base() const { return base_; }

 private:
  LedgerQuery base_;
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<std::vector<Indices>>>
      cache_;
  const std::vector<std::vector<Indices>> empty_;
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
  std::map<StepKey, Indices> trace;
  std::uint64_t largest = 0;
  read_trace(path, [&](const SampleRecord& r) {
    if (r.skipped) return;  // the configuration's own skips say what is left out
    trace[{r.epoch, r.batch, r.rank, r.run}].push_back(r.index);
    largest = std::max(largest, r.index);
  });
  EpochOrders orders(config);
  Finding finding{FindingKind::kOrderMismatch, 0, {}};
  checked = 0;
  for (const auto& [key, got] : trace) {
    const auto& [epoch, step, rank, run] = key;
    checked += got.size();
    const auto& mine = orders.of(epoch);
    if (rank >= mine.size()) {
      finding.count += got.size();
      if (finding.examples.size() < 3) {
        Example ex;
        ex.sample = SamplePlace{
            rank, static_cast<std::uint32_t>(epoch), {}, step, got.front(), run};
        ex.note = "rank " + std::to_string(rank) +
                  " is outside the configuration's world of " +
                  std::to_string(mine.size());
        finding.examples.push_back(std::move(ex));
      }
      continue;
    }
    const Indices* want = step < mine[rank].size() ? &mine[rank][step] : nullptr;
    if (want != nullptr && *want == got) continue;
    finding.count += got.size();
    if (finding.examples.size() >= 3) continue;
    Example ex;
    std::size_t at = 0;
    while (want != nullptr && at < got.size() && at < want->size() &&
           got[at] == (*want)[at])
      ++at;
    ex.sample = SamplePlace{rank, static_cast<std::uint32_t>(epoch), {},
                            step, got[std::min(at, got.size() - 1)], run};
    if (want != nullptr && want->empty()) {
      ex.note = "the trace has " + list_text(got) +
                " where the configuration declares the step skipped (--skip-steps): the "
                "run trained a step it should have skipped";
    } else {
      ex.note = "the trace has " + list_text(got) +
                (want != nullptr ? " where the configuration gives " + list_text(*want)
                                 : " past the epoch's " +
                                       std::to_string(mine[rank].size()) + " steps") +
                "; " + explain(orders, epoch, rank, step, got, largest);
    }
    finding.examples.push_back(std::move(ex));
  }
  if (finding.count == 0) return std::nullopt;
  return finding;
}

}  // namespace seedloader::audit
