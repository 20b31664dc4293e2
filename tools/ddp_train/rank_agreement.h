// check_ranks_agree: ddp-train's ranks prove, before their first gradient
// collective, that they train the same run. Each rank lists facts about its run
// (data set size, batches per epoch, layout, options a resume shares, seed,
// resume position, ...) as name and human-readable value. Ranks that disagreed
// used to pair up the wrong collectives: a rank with fewer batches reached the
// epoch's statistics while its peer still sent gradients (MPI aborts on the size
// mismatch), or, when only the sample order differed, trained without complaint.
// Cost when the ranks agree: three small int64 all-reduces (the fact count, then
// the minimum and maximum of each fact's 64-bit hash); equal minimum and maximum
// for every fact means every rank hashed the same value. Only on a difference do
// a few broadcasts carry the values, so that the error names them.
// fail_together does the same for errors: a step that issues no collective (open
// the data, load a checkpoint) may fail on one rank only, which would leave the
// others waiting in their next collective until its timeout; after it, every rank
// learns whether any rank failed, and all stop.
// Collective; not thread-safe (one thread drives the communicator).
#pragma once

#include <functional>
#include <span>
#include <string>

#include "seedloader/ddp/communicator.h"

namespace seedloader::train {

struct RankFact {
  std::string name;   // what is compared, e.g. "data set size"
  std::string value;  // this rank's value as a user reads it, e.g. "256 samples"
};

// Returns when every rank passed equal facts. Otherwise every rank throws the same
// DataError (so no rank is left waiting in a later collective), naming the first
// differing fact in list order, the lowest rank whose value differs from rank 0's,
// and both values: "ranks disagree on the data set size: rank 1 has 200 samples,
// rank 0 has 256 samples". REQUIRES: every rank lists the same names in the same
// order (a different count, say from another ddp-train build, is itself a
// DataError on every rank).
void check_ranks_agree(ddp::Communicator& comm, std::span<const RankFact> facts);

// Runs `step`, which must issue no collective, then one all-reduce tells every
// rank whether it threw anywhere. If so, every rank throws: a failing rank its
// own exception, the others a DataError "rank R stopped: MESSAGE" for the lowest
// failing rank R. REQUIRES: every rank calls it at the same point.
void fail_together(ddp::Communicator& comm, const std::function<void()>& step);

}  // namespace seedloader::train
