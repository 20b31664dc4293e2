#include "tools/ddp_train/rank_agreement.h"

#include <xxhash.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <vector>

#include "seedloader/error.h"

namespace seedloader::train {
namespace {

// What two ranks compare for a fact: its name and value, NUL-separated so that
// ("ab", "c") and ("a", "bc") differ.
std::string key_of(const RankFact& f) { return f.name + '\0' + f.value; }

std::int64_t hash_of(const RankFact& f) {
  const std::string k = key_of(f);
  return static_cast<std::int64_t>(XXH64(k.data(), k.size(), 0));
}

// `root`'s `s` on every rank: its length, then its bytes packed into int64 words
// (the communicator's host-integer broadcast).
std::string broadcast_string(ddp::Communicator& comm, const std::string& s, int root) {
  std::int64_t len = static_cast<std::int64_t>(s.size());
  comm.broadcast(std::span<std::int64_t>(&len, 1), root);
  std::vector<std::int64_t> words((static_cast<std::size_t>(len) + 7) / 8, 0);
  if (comm.rank() == root) std::memcpy(words.data(), s.data(), s.size());
  comm.broadcast(std::span<std::int64_t>(words), root);
  std::string out(static_cast<std::size_t>(len), '\0');
  std::memcpy(out.data(), words.data(), out.size());
  return out;
}

const char* const kHint =
    " (every rank must be started with the same options and see the same data and "
    "checkpoint)";

}  // namespace

void check_ranks_agree(ddp::Communicator& comm, std::span<const RankFact> facts) {
  // The count first: all-reduces of different lengths would not pair up. The
  // maximum of (n, -n) gives the largest and the smallest count at once.
  const auto n = static_cast<std::int64_t>(facts.size());
  std::vector<std::int64_t> counts{n, -n};
  comm.allreduce(std::span<std::int64_t>(counts), ddp::IntReduceOp::kMax);
  if (counts[0] != -counts[1])
    throw DataError("ranks disagree on what to compare: between " +
                    std::to_string(-counts[1]) + " and " + std::to_string(counts[0]) +
                    " facts (different ddp-train builds?)" + kHint);

  std::vector<std::int64_t> lo(facts.size()), hi;
  for (std::size_t i = 0; i < facts.size(); ++i) lo[i] = hash_of(facts[i]);
  hi = lo;
  comm.allreduce(std::span<std::int64_t>(lo), ddp::IntReduceOp::kMin);
  comm.allreduce(std::span<std::int64_t>(hi), ddp::IntReduceOp::kMax);
  std::size_t i = 0;
  while (i < facts.size() && lo[i] == hi[i]) ++i;
  if (i == facts.size()) return;

  // Every rank found the same i (from the same reduced hashes): now name it.
  const RankFact& mine = facts[i];
  const std::string root_key = broadcast_string(comm, key_of(mine), 0);
  std::int64_t first =
      key_of(mine) != root_key ? comm.rank() : std::numeric_limits<std::int64_t>::max();
  comm.allreduce(std::span<std::int64_t>(&first, 1), ddp::IntReduceOp::kMin);
  // Hashes differ, so some rank's key differs from rank 0's; the guard only keeps
  // the broadcast root valid should a hash ever be computed differently.
  const int r = first < comm.size() ? static_cast<int>(first) : 0;
  const std::string other = broadcast_string(comm, mine.value, r);
  const std::string root_value = root_key.substr(root_key.find('\0') + 1);
  throw DataError("ranks disagree on the " + mine.name + ": rank " + std::to_string(r) +
                  " has " + other + ", rank 0 has " + root_value + kHint);
}

void fail_together(ddp::Communicator& comm, const std::function<void()>& step) {
  std::exception_ptr error;
  std::string message;
  try {
    step();
  } catch (const std::exception& e) {
    error = std::current_exception();
    message = e.what();
  }
  // The lowest failing rank, or the maximum when none failed.
  constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();
  std::int64_t first = error ? comm.rank() : kNone;
  comm.allreduce(std::span<std::int64_t>(&first, 1), ddp::IntReduceOp::kMin);
  if (first == kNone) return;
  const std::string reason = broadcast_string(comm, message, static_cast<int>(first));
  if (error) std::rethrow_exception(error);
  throw DataError("rank " + std::to_string(first) + " stopped: " + reason);
}

}  // namespace seedloader::train
