// PythonDataset: a user's Python object (len() and __getitem__(index, rng) or
// __getitem__(index)) as a seedloader Dataset, so the engine's forked workers run
// it and write its samples straight into the shared slots (copied once, never
// pickled).
//
// Per sample, with the GIL held: the engine's stream is handed to Python as an
// np.random.Generator over PCG64 at exactly the same state, __getitem__ runs,
// and the Generator's state (32-bit buffer included) goes back to the engine's
// stream, so the numbers a worker draws are those of its contract stream
// (docs/design.md, "Randomness contract") and the audit fingerprints stay right.
// In a worker process, when a new stream starts (a worker's epoch, or each
// sample with per-sample seeding), Python's `random`, numpy's global state and
// torch (when imported) are seeded from it too (seedloader/_seeding.py).
// The sample may have any structure; `flatten` (seedloader._samples.Flatten)
// turns it into one C-contiguous array per field of the layout, in layout
// order, or raises DataError naming the index and the field's path. A variable
// field's array may hold fewer bytes than its row (its length is recorded);
// every other field's array fills its row exactly. A seedloader.DataError
// raised by __getitem__ is a DataError (skippable with on_bad_sample="skip");
// any other exception fails the batch with the exception's type, message and
// innermost frame. Either is thrown as a DatasetException (seedloader/error.h)
// naming the exception's type, and in the caller's own process (num_workers=0)
// holding the exception itself: the binding raises the WorkerError as that type
// too, chained to it (python/src/errors.h).
// A replay (seedloader._recording.Replay), when given, is asked first, with the
// Generator at the stream's state: a sample it returns (one the layout pass read
// from exactly that state) is the sample, and the Generator's state as it leaves
// it goes back to the stream; the first None ends the replay for good, so the
// samples after it cost nothing more.
// Mutable per process (the hand-over Generator, the replay), as Dataset allows:
// get() is never called concurrently on one object within one process.
#pragma once

#include <nanobind/nanobind.h>

#include <optional>
#include <string>

#include "seedloader/dataset.h"

namespace seedloader::python {

class PythonDataset final : public Dataset {
 public:
  // fields: the layout; flatten(sample, index) -> [array per field];
  // takes_rng: whether __getitem__ accepts the rng; replay: None, or
  // (index, Generator) -> the sample or None.
  PythonDataset(nanobind::object dataset, SampleLayout fields, nanobind::object flatten,
                bool takes_rng, nanobind::object replay = nanobind::none());
  ~PythonDataset() override;

  std::uint64_t size() const override { return size_; }
  const SampleLayout& layout() const override { return layout_; }
  void get(std::uint64_t index, Rng& rng, SampleWriter& out) const override;
  std::string describe() const override { return describe_; }

  nanobind::handle object() const { return dataset_; }

 private:
  void seed_globals_if_new(const Rng& rng) const;
  void write_fields(nanobind::handle sample, std::uint64_t index,
                    SampleWriter& out) const;

  nanobind::object dataset_;
  nanobind::object getitem_;
  nanobind::object flatten_;
  nanobind::object seed_globals_;  // seedloader._seeding.seed_globals_from_stream
  SampleLayout layout_;
  std::uint64_t size_ = 0;
  bool takes_rng_ = true;
  std::string describe_;
  mutable nanobind::object generator_;
  mutable std::optional<Rng> after_last_;  // the stream as the last sample left it
  mutable nanobind::object replay_;        // None once the replay has ended
};

// Marks this process as worker `worker` (called first thing in a forked worker
// that runs Python), and seeds the Python generators for the stream it starts
// with; PythonDataset seeds them only in workers.
void enter_python_worker(int worker, const Rng& stream);

}  // namespace seedloader::python
