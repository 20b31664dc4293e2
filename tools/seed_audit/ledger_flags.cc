#include "tools/seed_audit/ledger_flags.h"

#include <memory>

#include "base/json_depth.h"
#include "seedloader/error.h"
#include "seedloader/mixture_dataset.h"
#include "seedloader/mixture_state_json.h"
#include "tools/common/data_spec.h"
#include "tools/common/enum_option.h"
#include "tools/common/input_file.h"
#include "tools/common/loader_flags.h"
#include "tools/common/number_checks.h"

namespace seedloader::audit {

void add_ledger_flags(CLI::App& app, LedgerFlags& f, const std::string& epoch_help) {
  f.options.batch_size = 32;
  f.options.num_workers = 2;
  f.data_option = app.add_option("--data", f.data, tools::data_spec_help());
  f.size_option =
      app.add_option("--size", f.size, "A data set size alone, instead of --data")
          ->check(tools::non_negative_integer());
  f.data_option->excludes(f.size_option);
  app.add_option("--seed", f.seed, "Base seed of the run")
      ->check(tools::non_negative_integer())
      ->required();
  app.add_option("--batch-size", f.options.batch_size, "Batch size per rank")
      ->check(tools::non_negative_integer())
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--workers", f.options.num_workers, "Workers per rank")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  app.add_option("--world-size", f.options.world_size, "Ranks")
      ->check(tools::non_negative_integer())
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  tools::add_partition_option(app, f.options.partition);
  tools::add_canonical_nodes_option(app, f.options.canonical_nodes);
  app.add_flag("--shuffle", f.options.shuffle, "The run shuffles");
  tools::add_order_option(app, f.options.order, &f.options.shuffle_block);
  app.add_flag("--drop-last", f.options.drop_last, "The run drops the last, short batch");
  static const tools::EnumNames<SeedScope> seedings{{"full", SeedScope::kWorker},
                                                    {"sample", SeedScope::kSample}};
  tools::add_enum_option(app, "--seeding", f.options.seeding, seedings,
                         "full (worker streams) or sample (a stream per sample)");
  app.add_option("--skip-steps", f.skip_steps,
                 "The run's declared skips: global steps A to B-1 (A:B; repeatable), "
                 "a global step being epoch x steps per epoch + the step (any span: "
                 "it is kept as at most three ranges)")
      ->type_name("A:B")
      ->take_all();
  app.add_option("--skip-samples", f.skip_samples,
                 "The run's declared sample skips: a file of sample indices, one a line "
                 "('#' starts a comment; needs --seeding sample): a regular file of at "
                 "most " +
                     std::to_string(tools::kMaxSampleListBytes >> 20) + " MiB");
  app.add_option("--mixture", f.mixture_state,
                 "For a mixture in --data whose run was resumed with other weights: the "
                 "state it saved last (state_dict()['mixture'] as JSON, or ddp-train's "
                 "checkpoint metadata 'mixture'), whose history of weights and counts "
                 "the order follows: a regular file of at most " +
                     std::to_string(tools::kMaxJsonFileBytes >> 20) +
                     " MiB, its JSON nested at most " + std::to_string(kMaxJsonDepth) +
                     " deep");
  if (!epoch_help.empty()) {
    app.add_option("--epoch", f.epoch, epoch_help)
        ->check(tools::non_negative_integer())
        ->capture_default_str();
  }
}

void require_data(const LedgerFlags& f) {
  if (f.data_option->count() == 0 && f.size_option->count() == 0)
    throw CLI::RequiredError("--data or --size");
}

LedgerQuery ledger_query(const LedgerFlags& f, std::string& what) {
  LedgerQuery q;
  q.options = f.options;
  q.seed = f.seed;
  q.epoch = f.epoch;
  if (f.size) {
    if (!f.mixture_state.empty())
      throw ConfigError("--mixture " + f.mixture_state + " needs the mixture in --data");
    q.dataset_size = *f.size;
    what = std::to_string(*f.size) + " samples";
  } else {
    // No transform: the order does not depend on pixels.
    const std::unique_ptr<Dataset> data = tools::open_dataset_for_order(f.data);
    q.dataset_size = data->size();
    q.shard_sizes = data->shard_sizes();
    if (const auto* mixture = dynamic_cast<const MixtureDataset*>(data.get())) {
      q.mixture = ledger_mixture(*mixture);  // its own order
      if (!f.mixture_state.empty()) {
        const std::string where = "--mixture " + f.mixture_state;
        const MixtureState saved = parse_mixture_state(
            where,
            tools::read_input_file(where, f.mixture_state, tools::kMaxJsonFileBytes));
        q.mixture = ledger_mixture(resumed_mixture(
            *mixture, saved, f.options.batch_size * f.options.world_size, f.seed));
      }
    } else if (!f.mixture_state.empty()) {
      throw ConfigError("--mixture " + f.mixture_state + ": --data " + f.data +
                        " is not a mixture");
    }
    what = data->describe();
  }
  for (const StepRange& r :
       tools::epoch_step_ranges(tools::parse_skip_steps(f.skip_steps), ledger_steps(q)))
    q.options.skip.steps.push_back(r);
  if (!f.skip_samples.empty())
    q.options.skip.samples = tools::read_sample_list("--skip-samples", f.skip_samples);
  return q;
}

}  // namespace seedloader::audit
