// seedloader._core.Loader: the DataLoader from Python (the Python class
// seedloader.DataLoader wraps it with PyTorch's argument names), and
// seedloader._core.Batches, the iterator over one of its epochs.
//
// Batches: each delivered Batch moves into a BatchHolder, a Python object that
// every exported tensor of the batch keeps alive (DLPack). When the last one is
// freed, the holder's Batch goes to the loader's return list, and the loader
// hands those slots back to the engine before it next touches it. Every one of
// these steps runs with the GIL held, so the engine is only ever used from one
// thread at a time even when tensors die in another thread.
//
// GIL and fork: start() (an epoch's first next()) may fork the workers, so it runs with
// the GIL held (the child then owns the interpreter, which enter_python_worker()
// re-initialises when the worker runs Python); waiting for later batches releases the GIL
// and checks for signals every slice, so Ctrl-C stops and reaps the workers.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <malloc.h>

#include <chrono>
#include <cmath>
#include <exception>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "python/src/arrays.h"
#include "python/src/bindings.h"
#include "python/src/errors.h"
#include "python/src/python_dataset.h"
#include "seedloader/batch_sampler.h"
#include "seedloader/data_loader.h"
#include "seedloader/derive.h"
#include "seedloader/error.h"
#include "seedloader/ledger.h"

namespace nb = nanobind;

namespace seedloader::python {
namespace {

ArrayFormat format_of(const std::string& name) {
  if (name == "torch") return ArrayFormat::kTorch;
  if (name == "numpy") return ArrayFormat::kNumpy;
  throw ConfigError("format must be 'torch' or 'numpy', not '" + name + "'");
}

// What a forked worker needs to set up Python; the child reads its own copy, as
// it was at fork time.
struct ForkState {
  std::uint64_t base_seed = 0;
  std::uint64_t epoch = 0;   // the epoch start() is starting
  bool runs_python = false;  // a Python dataset or a worker_init_fn
  bool started = false;  // this process is a worker program (serve_worker), not a fork
  PyObject* worker_init_fn = nullptr;  // borrowed from the Loader, which owns it
};

void run_in_worker(const ForkState& s, int worker, std::uint64_t rank) {
  if (!s.runs_python) return;
  // Python datasets allocate and free array-sized temporaries every sample; with
  // glibc's adaptive thresholds a fresh worker returns them to the kernel each
  // time (hundreds of page faults per sample). Keep up to 64 MB and serve blocks
  // below 32 MB from the heap.
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  if (!s.started) PyOS_AfterFork_Child();
  nb::gil_scoped_acquire gil;
  try {
    enter_python_worker(worker, worker_stream(s.base_seed, s.epoch, rank, worker));
    if (s.worker_init_fn != nullptr) nb::handle(s.worker_init_fn)(worker);
  } catch (nb::python_error& e) {
    throw Error(describe_python_error(e));
  }
}

// Pids as Python ints.
std::vector<long> pid_list(const std::vector<pid_t>& pids) {
  return {pids.begin(), pids.end()};
}

void check_signals() {
  nb::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw nb::python_error();
}

}  // namespace

class Loader;

constexpr const char* kBusy =
    "DataLoader: another thread is iterating this loader; a loader is used from one "
    "thread at a time";

// Holds `flag` (a Loader waiting for a batch, a pass inside __next__) for its
// lifetime; another thread finding it held gets kBusy. Used with the GIL held.
class Claim {
 public:
  explicit Claim(bool& flag) : flag_(flag) {
    if (flag_) throw Error(kBusy);
    flag_ = true;
  }
  ~Claim() { flag_ = false; }
  Claim(const Claim&) = delete;
  Claim& operator=(const Claim&) = delete;

 private:
  bool& flag_;
};

// One batch as Python receives it.
struct Exported {
  std::uint64_t number = 0;  // the batch's step in its epoch
  nb::dict fields;           // {field name: tensor}
  nb::object indices;        // the sample indices, native uint64 bytes
  nb::object lengths;        // {variable field: [elements per sample]}, or None
  nb::object fingerprints;   // each sample's stream fingerprint, uint64 bytes, or None
  nb::object stream_epochs;  // each sample's stream epoch, likewise (with fingerprints)
  int worker = 0;            // the worker that filled it (0 with no workers)
};

// Owns one delivered batch for as long as any tensor made from it lives.
struct BatchHolder {
  BatchHolder(Batch b, Loader* l) : batch(std::move(b)), loader(l) {}
  ~BatchHolder();
  Batch batch;
  Loader* loader;  // alive: the holder keeps the Loader's Python object
  nb::object loader_ref;
};

class Loader {
 public:
  // options: everything but worker_init and while_waiting, which the Loader
  // sets (worker_init_fn runs in each worker after the engine's own set-up),
  // batch_plan, which batch_plan (None, or epoch -> [[index]]) sets, and the
  // hand-over's callables: handoff (worker -> never returns) runs in a worker
  // that release_workers() handed over; adopt, (pids, (worker, WorkerLaunch,
  // descriptors) -> None), makes the first start adopt those processes.
  Loader(nb::object dataset, LoaderOptions options, nb::object worker_init_fn,
         const std::string& format, nb::object batch_plan, nb::object handoff,
         nb::object adopt)
      : dataset_ref_(std::move(dataset)),
        worker_init_fn_(std::move(worker_init_fn)),
        batch_plan_(std::move(batch_plan)),
        handoff_(std::move(handoff)),
        adopt_(std::move(adopt)),
        format_(format_of(format)) {
    const Dataset& ds = nb::cast<const Dataset&>(dataset_ref_);
    layout_ = &ds.layout();
    LoaderOptions o = std::move(options);
    fork_->runs_python =
        nb::isinstance<PythonDataset>(dataset_ref_) || !worker_init_fn_.is_none();
    fork_->worker_init_fn = worker_init_fn_.is_none() ? nullptr : worker_init_fn_.ptr();
    o.worker_init = [fork = fork_](int worker, std::uint64_t r) {
      run_in_worker(*fork, worker, r);
    };
    o.while_waiting = check_signals;
    o.batch_plan = nullptr;
    if (!batch_plan_.is_none()) {
      // Called by start(), which holds the GIL; the Loader owns the callable.
      o.batch_plan = [plan = batch_plan_.ptr()](std::uint64_t epoch) {
        nb::gil_scoped_acquire gil;
        return nb::cast<std::vector<std::vector<std::uint64_t>>>(nb::handle(plan)(epoch));
      };
    }
    if (!handoff_.is_none()) {
      // In the worker, which never returns from it; the Loader owns the callable.
      o.worker_handoff = [fn = handoff_.ptr()](int worker) {
        nb::gil_scoped_acquire gil;
        try {
          const nb::handle serve(fn);
          serve(worker);
        } catch (nb::python_error& e) {
          e.restore();
          PyErr_Print();
        }
      };
    }
    if (!adopt_.is_none()) {
      auto [pids, tell] = nb::cast<std::pair<std::vector<long>, nb::object>>(adopt_);
      o.adopt_workers.assign(pids.begin(), pids.end());
      // Called by start(), which holds the GIL; the Loader owns the callable.
      o.worker_adopt = [fn = tell.ptr()](int worker, const WorkerLaunch& launch,
                                         const std::vector<int>& fds) {
        nb::gil_scoped_acquire gil;
        const nb::handle tell(fn);
        tell(worker, nb::cast(launch), nb::cast(fds));
      };
    }
    loader_ = std::make_unique<DataLoader>(ds, std::move(o));
    fork_->base_seed = loader_->base_seed();
  }

  ~Loader() { release(); }

  void close() {
    if (busy_) throw Error(kBusy);
    release();
  }

  // DataLoader::serve_worker with the worker's stream set up as a fork's is,
  // in the interpreter this program started (the GIL stays with it).
  [[noreturn]] void serve_worker(const WorkerLaunch& launch) {
    fork_->epoch = launch.start_epoch;
    fork_->started = true;
    loader().serve_worker(launch);
  }

  DataLoader& loader() {
    if (!loader_) throw Error("DataLoader: closed");
    return *loader_;
  }

  // The next batch of the epoch as its {field: tensor} dict, its sample indices
  // as native uint64 bytes and {variable field: [elements per sample]} (None
  // when the batch has no variable field), and its stream fingerprints when
  // `fingerprints` (a traced pass; None otherwise); nullopt after the last.
  std::optional<Exported> next(nb::handle self, bool fingerprints) {
    const Claim waiting(busy_);
    returned_.clear();  // hands back the slots of batches Python has freed
    DataLoader& l = loader();
    if (!current_) {
      fork_->epoch = l.epoch();
      current_.emplace(l.start());  // GIL held: may fork
    }
    {
      // A failed first batch leaves the iterator going on, as a later one does.
      nb::gil_scoped_release release;
      ++*current_;
    }
    if (*current_ == DataLoader::Sentinel{}) {
      current_.reset();
      return std::nullopt;
    }
    return export_batch(self, current_->take(), fingerprints);
  }

  // Whether a thread is waiting in next() (with the GIL released).
  bool busy() const { return busy_; }

  // Passes (seedloader._core.Batches) are numbered as they start; only the
  // newest may take batches, so an older one finds itself replaced.
  std::uint64_t begin_pass() { return ++passes_; }
  std::uint64_t current_pass() const { return passes_; }
  bool closed() const { return !loader_; }

  // For the cyclic collector: a batch_plan bound to the seedloader.DataLoader
  // that owns this Loader is a cycle.
  int traverse(visitproc visit, void* arg) const {
    Py_VISIT(dataset_ref_.ptr());
    Py_VISIT(worker_init_fn_.ptr());
    Py_VISIT(batch_plan_.ptr());
    Py_VISIT(handoff_.ptr());
    Py_VISIT(adopt_.ptr());
    return 0;
  }

  void clear() {
    release();  // the engine goes first: it refers to the dataset
    fork_->worker_init_fn = nullptr;
    batch_plan_.reset();
    handoff_.reset();
    adopt_.reset();
    worker_init_fn_.reset();
    dataset_ref_.reset();
  }

  // Abandons the epoch in progress (workers stop; persistent ones stay).
  void stop() {
    if (busy_) throw Error(kBusy);
    returned_.clear();
    current_.reset();
  }

  void give_back(Batch b) { returned_.push_back(std::move(b)); }

  std::pair<std::uintptr_t, std::size_t> shared_memory() {
    auto span = loader().shared_memory();
    return {reinterpret_cast<std::uintptr_t>(span.data()), span.size()};
  }

  nb::object dataset() const { return dataset_ref_; }

 private:
  void release() {
    current_.reset();
    returned_.clear();
    loader_.reset();
  }

  Exported export_batch(nb::handle self, Batch batch, bool fingerprints) {
    auto* holder = new BatchHolder(std::move(batch), this);
    holder->loader_ref = nb::borrow(self);
    nb::object owner = nb::cast(holder, nb::rv_policy::take_ownership);
    const Batch& b = holder->batch;
    if (names_.size() != b.num_fields()) {
      // Interned once: each batch's dict shares them, and a lookup by a literal
      // name compares pointers.
      names_.clear();
      for (std::size_t f = 0; f < b.num_fields(); ++f) {
        PyObject* name = PyUnicode_FromString(b.tensor(f).name.c_str());
        if (name == nullptr) throw nb::python_error();
        PyUnicode_InternInPlace(&name);
        names_.push_back(nb::steal<nb::str>(name));
      }
    }
    Exported out{0,          nb::dict(), nb::none(), nb::none(),
                 nb::none(), nb::none(), b.worker()};
    for (std::size_t f = 0; f < b.num_fields(); ++f) {
      TensorView v = b.tensor(f);
      out.fields[names_[f]] = export_view(v, owner, format_);
      // The dataset's fields come first; a mixer's target after them is fixed.
      if (f < layout_->num_fields() && layout_->field(f).variable) {
        if (out.lengths.is_none()) out.lengths = nb::dict();
        out.lengths[names_[f]] = b.lengths(f);
      }
    }
    // The indices as their uint64 bytes: a list of Python ints is built only if
    // the caller asks for it (a loop that never looks pays one copy).
    std::span<const Index> indices = b.indices();
    out.indices = nb::bytes(indices.data(), indices.size_bytes());
    if (fingerprints) {
      std::span<const std::uint64_t> f = b.fingerprints();
      out.fingerprints = nb::bytes(f.data(), f.size_bytes());
      std::span<const std::uint64_t> e = b.stream_epochs();
      out.stream_epochs = nb::bytes(e.data(), e.size_bytes());
    }
    out.number = b.number();
    return out;
  }

  nb::object dataset_ref_;
  nb::object worker_init_fn_;
  nb::object batch_plan_;                 // None, or epoch -> [[index]]
  nb::object handoff_;                    // None, or worker -> never returns
  nb::object adopt_;                      // None, or (pids, tell)
  const SampleLayout* layout_ = nullptr;  // the dataset's, which dataset_ref_ keeps
  ArrayFormat format_;
  std::shared_ptr<ForkState> fork_ = std::make_shared<ForkState>();
  std::unique_ptr<DataLoader> loader_;
  std::optional<DataLoader::Iterator> current_;
  std::vector<Batch> returned_;  // touched only with the GIL held
  std::vector<nb::str> names_;   // the batch's field names, interned
  bool busy_ = false;            // a thread waits in next()
  std::uint64_t passes_ = 0;     // passes begun on this Loader
};

// What iter(seedloader.DataLoader) returns: one pass over an epoch. Creating it
// claims nothing; its first __next__ calls start(self), which claims the epoch
// and returns (Loader, first, replay, layout, pad): the pass then runs on
// that Loader from batch `first` (or None: the pass is empty). Its __next__ does in C++
// what a generator in the package would do, so a batch costs the main thread no
// interpreter frame of the package's own:
// - a stale pass (its Loader began a newer pass, or was closed) raises, as does a
//   call while another thread waits in the Loader;
// - the first `replay` batches are loaded and dropped (a worker-seeded resume);
// - each batch goes through layout.build(fields, lengths, pad) when a Python
//   dataset's layout is given;
// - the pass owns its position: `yielded` (batches of the epoch delivered,
//   counting from `first`) and `last_indices` follow each delivered batch;
// - an engine error goes to on_error(self), which raises it in the package's
//   terms (rethrow() hands it over); after a dataset's exception the pass goes
//   on with the next batch, as torch's iterator does;
// - the epoch stops (workers idle or go) when the pass is exhausted, fails or is
//   collected, unless its Loader has begun another pass.
// Where a pass is, in an object of its own: a DataLoader follows its newest pass
// through this without holding the pass (which holds the DataLoader while it
// runs), so an iterator dropped mid-epoch is collected at once, and its epoch
// stops, with no cycle for the collector to find; the position outlives it.
struct PassPosition {
  std::uint64_t yielded = 0;  // batches of the epoch delivered (see Batches)
  std::uint64_t first = 0;    // the epoch's batch the pass began at
  int last_worker = 0;
  nb::object last_indices = nb::none();        // native uint64 bytes, or None
  nb::object last_fingerprints = nb::none();   // likewise, once recorded
  nb::object last_stream_epochs = nb::none();  // likewise, with the fingerprints
  std::vector<int> worker_pids;  // the workers serving it, from its first batch on
  // Monotonic seconds (CLOCK_MONOTONIC, Python's time.monotonic()): when its first
  // next() was called, when it last delivered a batch, and how long next() waited
  // for the engine in all (the data stall the consumer saw).
  double began = 0;
  double last_at = 0;
  double waited = 0;
};

static double monotonic_seconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Adds the time from its making to its end (one next(), whichever way it ends:
// the pass's start and a layout pass's reads included) to the pass's waited.
class Timed {
 public:
  explicit Timed(PassPosition& pos) : pos_(pos), entered_(monotonic_seconds()) {
    if (pos_.began == 0) pos_.began = entered_;
  }
  ~Timed() {
    pos_.last_at = monotonic_seconds();
    pos_.waited += pos_.last_at - entered_;
  }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;

 private:
  PassPosition& pos_;
  double entered_;
};

// What a pass starts with, from the DataLoader's start(): the engine, the epoch's
// batch it starts at, the batches it loads and drops first (worker streams must
// advance as they did), and the builder of its batches (None: the fields as
// they are) with whether variable fields come padded.
struct PassStart {
  nb::object loader;  // a Loader
  std::uint64_t first = 0;
  std::uint64_t replay = 0;
  nb::object builder = nb::none();  // .build(fields, lengths, pad) or None
  bool pad_variable = false;
};

class Batches {
 public:
  Batches(nb::object start, nb::object on_error)
      : start_(std::move(start)),
        on_error_(std::move(on_error)),
        position_(nb::cast(PassPosition())),
        pos_(nb::inst_ptr<PassPosition>(position_)) {}

  ~Batches() {
    nb::error_scope keep;  // collected while an exception propagates: keep it
    end_quietly();
  }

  nb::object next(nb::handle self) {
    if (nb::len(failed_) > 0) {  // errors of batches read before the pass began
      const nb::object error = failed_.attr("pop")(0);
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
      throw nb::python_error();
    }
    if (done_) throw nb::stop_iteration();
    const Claim inside(running_);  // another thread inside this pass gets kBusy
    const Timed timed(*pos_);
    if (!core_.is_valid() && !begin(self)) {
      done_ = true;  // the epoch's batches were all consumed before this pass
      throw nb::stop_iteration();
    }
    Loader& loader = nb::cast<Loader&>(core_);
    if (loader.closed() || loader.current_pass() != pass_) {
      done_ = true;  // raises once, then is exhausted, as a generator would be
      throw Error(
          "DataLoader: this iterator was replaced by a newer iteration of the same "
          "loader (or the loader was closed); iterate the newer one");
    }
    if (loader.busy()) throw Error(kBusy);
    for (;;) {
      std::optional<Exported> batch;
      std::exception_ptr error;
      try {
        batch = loader.next(core_, record_fingerprints_);
      } catch (...) {
        error = std::current_exception();
      }
      if (error) fail(self, error);
      if (!batch) {
        // Every step passed, the skipped ones at the end too.
        pos_->yielded =
            std::max<std::uint64_t>(pos_->yielded, loader.loader().num_batches());
        finish();
        throw nb::stop_iteration();
      }
      if (pos_->worker_pids.empty()) {
        for (const pid_t p : loader.loader().worker_pids())
          pos_->worker_pids.push_back(p);
      }
      if (batch->number < replay_) continue;  // loaded again for the worker streams
      try {
        return deliver(std::move(*batch));
      } catch (...) {
        end_quietly();  // a batch that cannot be delivered ends the pass
        throw;
      }
    }
  }

  // Raises `errors` (exceptions) one per next() from now on, before the pass
  // goes on: the errors of an epoch's batches that failed before it began.
  void raise_later(nb::list errors) { failed_ = std::move(errors); }

  // The engine error the last next() met, raised for on_error.
  void rethrow() {
    if (!error_) throw Error("DataLoader: no batch error to raise");
    std::exception_ptr e = std::exchange(error_, nullptr);
    std::rethrow_exception(e);
  }

  // Ends the pass now, as closing a generator does.
  void close() {
    if (running_) throw Error(kBusy);
    finish();
  }

  // Whether batches export their stream fingerprints (PassPosition's
  // last_fingerprints; None before: no batch pays for them untraced).
  bool record_fingerprints() const { return record_fingerprints_; }
  void set_record_fingerprints(bool on) { record_fingerprints_ = on; }
  // Where the pass is (PassPosition).
  nb::object position() const { return position_; }

  // For the cyclic collector (a pass kept by an object its loader refers to).
  int traverse(visitproc visit, void* arg) const {
    Py_VISIT(start_.ptr());
    Py_VISIT(on_error_.ptr());
    Py_VISIT(core_.ptr());
    Py_VISIT(pad_.ptr());
    Py_VISIT(build_.ptr());
    Py_VISIT(position_.ptr());
    Py_VISIT(failed_.ptr());
    return 0;
  }

  void clear() {
    end_quietly();
    failed_ = nb::list();
    start_.reset();
    on_error_.reset();
    core_.reset();
    pad_.reset();
    build_.reset();
  }

 private:
  // The first next(): start() claims the epoch and hands over the Loader; false
  // when it returns None (nothing is left of the epoch). A start that raises
  // ends the pass, as a generator that raised is finished.
  bool begin(nb::handle self) {
    nb::object started;  // holds what `begun` points to
    PassStart* begun = nullptr;
    try {
      started = start_(self);
      if (started.is_none()) return false;
      // A TypeError now rather than at the first batch.
      begun = &nb::cast<PassStart&>(started);
      nb::cast<Loader&>(begun->loader);
    } catch (...) {
      done_ = true;
      throw;
    }
    core_ = begun->loader;
    pass_ = nb::cast<Loader&>(core_).begin_pass();
    pos_->yielded = begun->first;
    pos_->first = pos_->yielded;
    replay_ = begun->replay;
    if (!begun->builder.is_none()) build_ = begun->builder.attr("build");
    pad_ = nb::bool_(begun->pad_variable);
    return true;
  }

  // The batch as the caller receives it; the pass's position follows it.
  nb::object deliver(Exported batch) {
    nb::object out = build_.is_valid()
                         ? build_(std::move(batch.fields), std::move(batch.lengths), pad_)
                         : nb::object(std::move(batch.fields));
    pos_->last_indices = std::move(batch.indices);
    pos_->last_fingerprints = std::move(batch.fingerprints);
    pos_->last_stream_epochs = std::move(batch.stream_epochs);
    pos_->last_worker = batch.worker;
    pos_->yielded =
        batch.number + 1;  // skipped steps (LoaderOptions::skip) count as passed
    return out;
  }

  // Ends the pass; the epoch stops unless its Loader has begun another pass.
  void finish() {
    if (done_) return;
    done_ = true;
    if (!core_.is_valid()) return;  // never started: nothing was claimed
    Loader& loader = nb::cast<Loader&>(core_);
    if (!loader.closed() && loader.current_pass() == pass_) loader.stop();
  }

  // finish() where an error has nowhere to go: the pass is collected (at exit, or
  // while another thread waits in the loader) or has an error of its own to raise.
  void end_quietly() noexcept {
    try {
      finish();
    } catch (...) {
      done_ = true;
    }
  }

  // Raises `error` through on_error. A dataset's exception (a recoverable
  // WorkerError) leaves the pass going, as torch's iterator goes on after one,
  // with the failed batch counted as passed; any other error ends it.
  [[noreturn]] void fail(nb::handle self, std::exception_ptr error) {
    bool recoverable = false;
    long long failed = -1;
    try {
      std::rethrow_exception(error);
    } catch (const WorkerError& e) {
      recoverable = e.failure().recoverable;
      failed = e.failure().batch;
    } catch (...) {
    }
    // Past the failed batch: its number, as deliver() counts, where the error names it.
    if (recoverable)
      pos_->yielded = failed >= 0
                          ? std::max<std::uint64_t>(
                                pos_->yielded, static_cast<std::uint64_t>(failed) + 1)
                          : pos_->yielded + 1;
    error_ = std::move(error);
    try {
      on_error_(self);
    } catch (...) {
      error_ = nullptr;
      if (!recoverable) end_quietly();
      throw;
    }
    if (!recoverable) end_quietly();
    if (!error_) throw Error("DataLoader: on_error returned without raising");
    std::rethrow_exception(std::exchange(error_, nullptr));
  }

  nb::object start_;          // (Batches) -> PassStart, or None
  nb::object on_error_;       // (pass) -> raises the pass's error
  nb::object core_;           // the Loader this pass runs on, once started
  nb::object position_;       // its PassPosition
  PassPosition* pos_;         // position_'s
  std::uint64_t pass_ = 0;    // this pass's number in its Loader
  std::uint64_t replay_ = 0;  // batches numbered below it are loaded, not delivered
  nb::object pad_;
  nb::object build_;  // layout.build, or unset
  nb::list failed_;   // errors raise_later() raises first
  bool record_fingerprints_ = false;
  bool done_ = false;     // exhausted, failed, closed or stale
  bool running_ = false;  // a thread is in next()
  std::exception_ptr error_;
};

// The collector's slots of classes that hold Python objects.
template <typename T>
int traverse_instance(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));              // a heap type's instances refer to it
  if (!nb::inst_ready(self)) return 0;  // not constructed yet
  return nb::inst_ptr<T>(self)->traverse(visit, arg);
}

template <typename T>
int clear_instance(PyObject* self) {
  if (nb::inst_ready(self)) nb::inst_ptr<T>(self)->clear();
  return 0;
}

template <typename T>
PyType_Slot collected_slots[] = {{Py_tp_traverse, (void*)traverse_instance<T>},
                                 {Py_tp_clear, (void*)clear_instance<T>},
                                 {0, nullptr}};

BatchHolder::~BatchHolder() {
  if (loader != nullptr) loader->give_back(std::move(batch));
}

void bind_loader(nb::module_& m) {
  nb::class_<BatchHolder>(m, "_BatchHolder");

  nb::class_<PassPosition>(m, "PassPosition")
      .def_ro("yielded", &PassPosition::yielded,
              "batches of the epoch delivered (a resumed pass counts the skipped)")
      .def_ro("first", &PassPosition::first,
              "the epoch's batch the pass began at (0 before its first batch)")
      .def_ro("last_worker", &PassPosition::last_worker,
              "the worker that filled the last batch (0 with no workers)")
      .def_ro("last_indices", &PassPosition::last_indices,
              "the last batch's sample indices as native uint64 bytes, or None")
      .def_ro("last_fingerprints", &PassPosition::last_fingerprints,
              "the last batch's stream fingerprints as native uint64 bytes, or None")
      .def_ro("last_stream_epochs", &PassPosition::last_stream_epochs,
              "the epochs its samples' streams are keyed by (a mixture's: each "
              "source's), likewise")
      .def_ro("worker_pids", &PassPosition::worker_pids,
              "the pids of the workers serving the pass (empty before its first batch, "
              "and with no workers)")
      .def_ro("began", &PassPosition::began,
              "time.monotonic() when the pass's first next() was called (0 before)")
      .def_ro("last_at", &PassPosition::last_at,
              "time.monotonic() when the pass's last next() got its batch (or error)")
      .def_ro("waited", &PassPosition::waited,
              "seconds next() waited for batches in all: the data stall");

  nb::class_<WorkerLaunch>(
      m, "WorkerLaunch",
      "What a worker program serves (seedloader/data_loader.h): its worker, the "
      "shared memory's files as this process holds them, the digest it must match.")
      .def_static("parse", &WorkerLaunch::parse, nb::arg("arguments"),
                  "From the arguments a worker program is started with; ConfigError "
                  "names one that is missing, extra or not a number.")
      .def("arguments", &WorkerLaunch::arguments, "As a worker program's arguments.")
      .def_ro("worker", &WorkerLaunch::worker)
      .def_rw("region_fd", &WorkerLaunch::region_fd,
              "the shared region's memory file, as this process holds it")
      .def_rw("spares_fd", &WorkerLaunch::spares_fd,
              "the spare blocks' memory file as this process holds it, or -1")
      .def_ro("digest", &WorkerLaunch::digest);

  nb::class_<PassStart>(m, "PassStart",
                        "What a pass starts with (Batches' start() returns one).")
      .def(
          "__init__",
          [](PassStart* s, nb::object loader, std::uint64_t first, std::uint64_t replay,
             nb::object builder, bool pad_variable) {
            new (s) PassStart{std::move(loader), first, replay, std::move(builder),
                              pad_variable};
          },
          nb::arg("loader"), nb::arg("first"), nb::arg("replay"),
          nb::arg("builder").none(), nb::arg("pad_variable"))
      .def_ro("loader", &PassStart::loader, "the Loader the pass runs on")
      .def_ro("first", &PassStart::first, "the epoch's batch the pass starts at")
      .def_ro("replay", &PassStart::replay,
              "batches loaded and dropped before the first delivered")
      .def_ro("builder", &PassStart::builder,
              "what builds each batch (.build(fields, lengths, pad)), or None")
      .def_ro("pad_variable", &PassStart::pad_variable,
              "variable fields come as (padded tensor, lengths)");

  nb::class_<Batches>(m, "Batches", nb::type_slots(collected_slots<Batches>))
      .def(nb::init<nb::object, nb::object>(), nb::arg("start"), nb::arg("on_error"))
      .def("__iter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__next__",
           [](nb::handle self) { return nb::cast<Batches&>(self).next(self); })
      .def("rethrow", &Batches::rethrow)
      .def("raise_later", &Batches::raise_later, nb::arg("errors"),
           "raises these exceptions one per next(), before the pass goes on")
      .def("close", &Batches::close)
      .def_prop_rw(
          "record_fingerprints", &Batches::record_fingerprints,
          &Batches::set_record_fingerprints,
          "export each batch's stream fingerprints (position.last_fingerprints), "
          "for a trace")
      .def_prop_ro("position", &Batches::position,
                   "its PassPosition, which outlives it (what a DataLoader keeps)");

  m.attr("BUSY") = kBusy;
  m.def("draw_base_seed", &draw_base_seed, nb::arg("who"),
        "A base seed drawn from the OS and announced on stderr.");
  m.def(
      "batches_per_epoch",
      [](std::uint64_t samples, std::uint64_t batch_size, bool drop_last) {
        if (batch_size == 0) throw ConfigError("batch_size must be at least 1");
        return batches_per_epoch(
            {.samples = samples, .batch_size = batch_size, .drop_last = drop_last});
      },
      nb::arg("samples"), nb::arg("batch_size"), nb::arg("drop_last"),
      "Batches of `batch_size` that `samples` samples make (batch_sampler.h): the "
      "last one short, or dropped with drop_last.");
  m.def(
      "epoch_batches",
      [](const LoaderOptions& options, std::uint64_t size) {
        if (options.batch_size == 0) throw ConfigError("batch_size must be at least 1");
        // The sampler the engine would build (its size does not depend on the seed).
        return batches_per_epoch({.samples = make_sampler(size, options, 0)->size(),
                                  .batch_size = options.batch_size,
                                  .drop_last = options.drop_last});
      },
      nb::arg("options"), nb::arg("size"),
      "Batches per epoch on one rank under the built-in samplers (options: "
      "batch_size, drop_last, rank, world_size, partition).");
  m.def(
      "epoch_order",
      [](const LoaderOptions& options, std::uint64_t size, std::uint64_t epoch) {
        if (!options.seed) throw ConfigError("epoch_order: options.seed is not set");
        auto* order = new std::vector<Index>(
            make_sampler(size, options, *options.seed)->indices(epoch));
        nb::capsule owner(
            order, [](void* p) noexcept { delete static_cast<std::vector<Index>*>(p); });
        const std::size_t n = order->size();
        return nb::ndarray<nb::numpy, std::uint64_t, nb::ndim<1>>(order->data(), {n},
                                                                  owner);
      },
      nb::arg("options"), nb::arg("size"), nb::arg("epoch"),
      "This rank's sample order in `epoch` under the built-in samplers (options: "
      "shuffle, order, seed, rank, world_size, partition, and batch_size and "
      "drop_last for the elastic partition), before batching.");

  nb::class_<LedgerEntry>(m, "LedgerEntry",
                          "One sample of a step, as seedloader/ledger.h computes it.")
      .def_ro("epoch", &LedgerEntry::epoch)
      .def_ro("step", &LedgerEntry::step)
      .def_ro("rank", &LedgerEntry::rank)
      .def_ro("worker", &LedgerEntry::worker,
              "The worker that fills it when the epoch runs from its first batch.")
      .def_ro("slot", &LedgerEntry::slot, "Its place in the rank's batch.")
      .def_ro("index", &LedgerEntry::index)
      .def_ro("stream_epoch", &LedgerEntry::stream_epoch,
              "The epoch its stream is keyed by: epoch, or a mixture source's.")
      .def_ro("source", &LedgerEntry::source,
              "A mixture's sample: its source's position in LedgerMixture.names.")
      .def_ro("source_index", &LedgerEntry::source_index,
              "A mixture's sample: its index in its source.")
      .def_ro("stream", &LedgerEntry::stream, "The stream's spawn key (derive.h).")
      .def_ro("fingerprint", &LedgerEntry::fingerprint,
              "The stream's state before the sample (seeding=\"sample\" only).")
      .def_ro("skipped", &LedgerEntry::skipped, "Declared skipped: not delivered.");

  m.def(
      "ledger",
      [](const LoaderOptions& options, std::uint64_t size, std::uint64_t epoch,
         std::uint64_t first_step, std::uint64_t end_step,
         std::optional<std::uint64_t> rank, bool skipped_only,
         const LedgerMixture* mixture, const Dataset* dataset) {
        if (!options.seed) throw ConfigError("ledger: options.seed is not set");
        LedgerQuery q;
        q.options = options;
        q.dataset_size = size;
        if (mixture != nullptr) q.mixture = *mixture;
        // A shard order (order="shards") is computed from the shards' sizes.
        if (dataset != nullptr) q.shard_sizes = dataset->shard_sizes();
        q.seed = *options.seed;
        q.epoch = epoch;
        q.first_step = first_step;
        q.end_step = end_step;
        q.rank = rank;
        q.skipped_only = skipped_only;
        return ledger(q);
      },
      nb::arg("options"), nb::arg("size"), nb::arg("epoch"), nb::arg("first_step"),
      nb::arg("end_step"), nb::arg("rank").none() = nb::none(),
      nb::arg("skipped_only") = false, nb::arg("mixture").none() = nb::none(),
      nb::arg("dataset").none() = nb::none(),
      "seedloader/ledger.h: a LedgerEntry for each sample of steps "
      "[first_step, end_step) of `epoch`, every rank or `rank`, under the built-in "
      "samplers or a mixture's order (a LedgerMixture); skipped_only: only those "
      "declared skipped; dataset: seedloader's own data set the loader reads, whose "
      "shards a shard order (order=\"shards\") is made of.");
  m.def(
      "epoch_step_ranges",
      [](std::uint64_t first, std::uint64_t end, std::uint64_t per_epoch) {
        std::vector<std::vector<std::uint64_t>> out;
        for (const StepRange& r : epoch_step_ranges(first, end, per_epoch)) {
          out.push_back({r.epoch, r.first, r.end});
          if (r.epochs != 1) out.back().push_back(r.epochs);
        }
        return out;
      },
      nb::arg("first"), nb::arg("end"), nb::arg("per_epoch"),
      "Global steps [first, end) as at most three (epoch, first, end[, epochs]) "
      "ranges of epochs of per_epoch steps (loader_options.h's epoch_step_ranges).");

  nb::enum_<SeedScope>(m, "SeedScope")
      .value("worker", SeedScope::kWorker)
      .value("sample", SeedScope::kSample);
  nb::enum_<BadSample>(m, "BadSample")
      .value("raise_error", BadSample::kRaise)  // on_bad_sample="raise"
      .value("skip", BadSample::kSkip);
  nb::enum_<Partition>(m, "Partition")
      .value("strided", Partition::kStrided)
      .value("elastic", Partition::kElastic);
  nb::enum_<ShuffleOrder>(m, "ShuffleOrder")
      .value("numpy", ShuffleOrder::kNumpy)
      .value("torch", ShuffleOrder::kTorch)
      .value("shards", ShuffleOrder::kShards);
  // The C++ LoaderOptions by name (loader_options.h says what each means);
  // timeout in seconds, MixUp / CutMix flattened.
  nb::class_<LoaderOptions>(m, "LoaderOptions")
      .def(nb::init<>())
      .def_rw("batch_size", &LoaderOptions::batch_size)
      .def_rw("num_workers", &LoaderOptions::num_workers)
      .def_rw("prefetch", &LoaderOptions::prefetch)
      .def_rw("shuffle", &LoaderOptions::shuffle)
      .def_rw("order", &LoaderOptions::order)
      .def_rw("shuffle_block", &LoaderOptions::shuffle_block)
      .def_rw("seed", &LoaderOptions::seed, nb::arg("value").none())
      .def_rw("drop_last", &LoaderOptions::drop_last)
      .def_rw("persistent_workers", &LoaderOptions::persistent_workers)
      .def_rw("rank", &LoaderOptions::rank)
      .def_rw("world_size", &LoaderOptions::world_size)
      .def_rw("partition", &LoaderOptions::partition)
      .def_rw("canonical_nodes", &LoaderOptions::canonical_nodes)
      .def_rw("nodes", &LoaderOptions::nodes)
      .def_rw("seeding", &LoaderOptions::seeding)
      .def_rw("on_bad_sample", &LoaderOptions::on_bad_sample)
      .def_rw("worker_command", &LoaderOptions::worker_command)
      .def_rw("worker_fds", &LoaderOptions::worker_fds)
      .def_prop_rw(
          "skip_steps",
          [](const LoaderOptions& o) {
            std::vector<std::vector<std::uint64_t>> out;
            for (const StepRange& r : o.skip.steps) {
              out.push_back({r.epoch, r.first, r.end});
              if (r.epochs != 1) out.back().push_back(r.epochs);
            }
            return out;
          },
          [](LoaderOptions& o, const std::vector<std::vector<std::uint64_t>>& v) {
            std::vector<StepRange> steps;
            for (const std::vector<std::uint64_t>& r : v) {
              if (r.size() != 3 && r.size() != 4)
                throw ConfigError(
                    "skip_steps: a range is (epoch, first, end) or (epoch, first, end, "
                    "epochs), not " +
                    std::to_string(r.size()) + " numbers");
              steps.push_back({r[0], r[1], r[2], r.size() == 4 ? r[3] : 1});
            }
            o.skip.steps = std::move(steps);
          },
          "(epoch, first step, end step[, epochs]) ranges not delivered "
          "(LoaderOptions::skip): steps [first, end) of `epochs` epochs (1 when "
          "left out) from `epoch`")
      .def_prop_rw(
          "skip_samples", [](const LoaderOptions& o) { return o.skip.samples; },
          [](LoaderOptions& o, const std::vector<std::uint64_t>& v) {
            o.skip.samples = v;
          },
          "sample indices left out of their batches (LoaderOptions::skip)")
      .def_prop_rw(
          "timeout", [](const LoaderOptions& o) { return o.timeout.count() / 1000.0; },
          [](LoaderOptions& o, double seconds) {
            if (!std::isfinite(seconds) || seconds < 0) {
              throw ConfigError("timeout must be a non-negative number of seconds");
            }
            o.timeout =
                std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
          })
      .def_prop_rw(
          "mixup_alpha", [](const LoaderOptions& o) { return o.mix.mixup_alpha; },
          [](LoaderOptions& o, double v) { o.mix.mixup_alpha = v; })
      .def_prop_rw(
          "cutmix_alpha", [](const LoaderOptions& o) { return o.mix.cutmix_alpha; },
          [](LoaderOptions& o, double v) { o.mix.cutmix_alpha = v; })
      .def_prop_rw(
          "cutmix_prob", [](const LoaderOptions& o) { return o.mix.cutmix_prob; },
          [](LoaderOptions& o, double v) { o.mix.cutmix_prob = v; })
      .def_prop_rw(
          "num_classes", [](const LoaderOptions& o) { return o.mix.num_classes; },
          [](LoaderOptions& o, std::int64_t v) { o.mix.num_classes = v; });

  m.def("default_canonical_nodes", &default_canonical_nodes, nb::arg("options"),
        "The canonical nodes of a run that names none: options.nodes under partition "
        "elastic with a shuffled order 'shards' on more than one node, else 0.");
  m.def("validate", &validate, nb::arg("options"), nb::arg("dataset_size"),
        "ConfigError naming the first invalid option, as the engine checks them.");

  nb::class_<Loader>(m, "Loader", nb::type_slots(collected_slots<Loader>))
      .def(nb::init<nb::object, LoaderOptions, nb::object, const std::string&, nb::object,
                    nb::object, nb::object>(),
           nb::arg("dataset"), nb::arg("options"), nb::arg("worker_init_fn").none(),
           nb::arg("format"), nb::arg("batch_plan").none(),
           nb::arg("handoff").none() = nb::none(), nb::arg("adopt").none() = nb::none())
      .def("stop", &Loader::stop)
      .def("begin_pass", &Loader::begin_pass,
           "numbers a new pass: older ones find themselves replaced")
      .def("close", &Loader::close)
      .def("__len__", [](Loader& l) { return l.loader().num_batches(); })
      .def("set_epoch", [](Loader& l, std::uint64_t e) { l.loader().set_epoch(e); })
      .def(
          "resume",
          [](Loader& l, std::uint64_t e, std::uint64_t b,
             std::optional<std::uint64_t> end) {
            l.loader().resume(e, b, end.value_or(UINT64_MAX));
          },
          nb::arg("epoch"), nb::arg("first"), nb::arg("end").none() = nb::none(),
          "the next pass runs epoch's batches [first, end) (end None: to the epoch's "
          "end)")
      .def_prop_ro("epoch", [](Loader& l) { return l.loader().epoch(); })
      .def_prop_ro("base_seed", [](Loader& l) { return l.loader().base_seed(); })
      .def_prop_ro("skipped_samples",
                   [](Loader& l) { return l.loader().skipped_samples(); })
      .def_prop_ro("dataset", &Loader::dataset)
      .def_prop_ro("busy", &Loader::busy, "whether a thread waits in it for a batch")
      .def(
          "release_workers",
          [](Loader& l) { return pid_list(l.loader().release_workers()); },
          "hands the running workers over (each runs handoff) and returns their pids, "
          "to adopt or reap; the epoch in progress cannot go on")
      .def("worker_pids", [](Loader& l) { return pid_list(l.loader().worker_pids()); })
      .def(
          "serve_worker",
          [](Loader& l, const WorkerLaunch& launch) { l.serve_worker(launch); },
          nb::arg("launch"),
          "In a worker program (LoaderOptions.worker_command): serves the worker "
          "`launch` names, on the parent's shared memory; never returns.")
      .def("shared_memory", &Loader::shared_memory,
           "(address, bytes) of the shared region holding every slot");
}

}  // namespace seedloader::python
