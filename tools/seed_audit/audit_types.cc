#include "tools/seed_audit/audit_types.h"

namespace seedloader::audit {

const char* finding_name(FindingKind kind) {
  switch (kind) {
    case FindingKind::kWorkerRngDuplicate:
      return "worker_rng_duplicate";
    case FindingKind::kEpochRngRepeat:
      return "epoch_rng_repeat";
    case FindingKind::kRankRngDuplicate:
      return "rank_rng_duplicate";
    case FindingKind::kSampleRngRepeat:
      return "sample_rng_repeat";
    case FindingKind::kRankBatchDuplicate:
      return "rank_batch_duplicate";
    case FindingKind::kEpochOrderRepeat:
      return "epoch_order_repeat";
    case FindingKind::kCoverage:
      return "coverage";
    case FindingKind::kResumeDuplicate:
      return "resume_duplicate";
    case FindingKind::kResumeGap:
      return "resume_gap";
    case FindingKind::kContentRepeat:
      return "content_repeat";
    case FindingKind::kOrderMismatch:
      return "order_mismatch";
    case FindingKind::kMixtureComposition:
      return "mixture_composition";
    case FindingKind::kDeclaredSkip:
      return "declared_skip";
  }
  return "unknown";
}

const char* finding_hint(FindingKind kind) {
  switch (kind) {
    case FindingKind::kWorkerRngDuplicate:
      return "Workers forked with a copy of the parent's generator draw the same "
             "numbers; seed every generator in each worker from (seed, epoch, rank, "
             "worker), e.g. in worker_init_fn from torch.initial_seed() or a "
             "SeedSequence spawned per worker.";
    case FindingKind::kEpochRngRepeat:
      return "A generator restarts from the same state every epoch; mix the epoch "
             "into the seed (or keep persistent workers whose streams continue).";
    case FindingKind::kRankRngDuplicate:
      return "Every rank seeds its generators identically; mix the rank into the "
             "seed, e.g. SeedSequence(seed, spawn_key=(epoch, rank, worker)).";
    case FindingKind::kSampleRngRepeat:
      return "One worker reuses a state for different samples, so a generator is "
             "reseeded with a constant per sample; seed it from (seed, epoch, index) "
             "or not at all.";
    case FindingKind::kRankBatchDuplicate:
      return "Ranks read the same samples in an epoch, so the sampler is not "
             "sharded; use a DistributedSampler with the same seed on every rank.";
    case FindingKind::kEpochOrderRepeat:
      return "The shuffled order repeats every epoch; call sampler.set_epoch(epoch) "
             "before each epoch.";
    case FindingKind::kCoverage:
      return "An epoch misses samples or repeats more than padding to a multiple of "
             "the world size explains; check the sampler's size, drop_last and "
             "sharding.";
    case FindingKind::kResumeDuplicate:
      return "A restarted run consumed samples an earlier run of the epoch had "
             "already consumed: it restarted the epoch from its start, or resumed a "
             "per-rank batch index at another world size under the strided "
             "partition; resume at the global position reached (partition elastic, "
             "resume(epoch, global batch)) or restart at an epoch boundary.";
    case FindingKind::kResumeGap:
      return "No run consumed these samples of an epoch that a restart split: the "
             "resumed run skipped past them, e.g. a per-rank batch index resumed at "
             "a larger world size under the strided partition; resume at the global "
             "position reached (partition elastic, resume(epoch, global batch)).";
    case FindingKind::kContentRepeat:
      return "The same sample was trained twice in an epoch, at two places: workers or "
             "ranks iterating one stream each whole (split it by rank and worker: "
             "seedloader.shard_stream, or torch's get_worker_info()), or a resumed "
             "stream restarted from its start.";
    case FindingKind::kOrderMismatch:
      return "These steps are not what the expected configuration trains on (the first "
             "example says what it matches instead): run with the configuration given, "
             "or give the one the run had.";
    case FindingKind::kMixtureComposition:
      return "A mixture's global steps drew a source more or less often than its "
             "weights give (by one sample or more over the steps of a schedule "
             "segment): the loader does not compose steps by the weights given, or "
             "the trace comes from another schedule (give the state it was saved "
             "with).";
    case FindingKind::kDeclaredSkip:
      return "The run declared these samples skipped (loader.skip(), ddp-train "
             "--skip-steps or --skip-samples): not trained, by choice. They are "
             "neither missing nor a gap.";
  }
  return "";
}

}  // namespace seedloader::audit
