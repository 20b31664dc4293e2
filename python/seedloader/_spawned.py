"""Workers started as fresh interpreters: multiprocessing_context="spawn" (and
"forkserver", which starts them the same way) for a loader whose workers run
Python.

The engine forks each worker and at once executes `command(fd)` in it: nothing
of the parent runs in the child (only async-signal-safe calls between fork and
exec), so a parent with CUDA initialised or threads holding locks is safe. The
child reads from the memory file `fd` multiprocessing's preparation data (sys.path,
the main module, run as __mp_main__ as multiprocessing's spawn does, so that a
script's classes unpickle), then the engine's recipe: its data set as built in the
parent (the user's dataset, its learned layout), the options and worker_init. It
builds the same engine (no sample is read to learn anything) and serves its
worker on the parent's shared memory, whose file the engine passes
(_core.Loader.serve_worker): the same streams, slots and batches as a forked
worker. The dataset is pickled when the workers start, as torch's loader does:
each epoch without persistent_workers, once with them."""

import dataclasses
import io
import os
import pickle
import subprocess
import sys

from seedloader import _core, _plan_channel, _samples

# The LoaderOptions fields the engine's command sets; the rest travel.
_LOCAL_OPTIONS = ("worker_command", "worker_fds")


def options_state(options):
    """The LoaderOptions fields by name, as a worker program rebuilds them."""
    return {name: getattr(options, name) for name, value in vars(type(options)).items()
            if isinstance(value, property) and name not in _LOCAL_OPTIONS}


def options_from(state):
    options = _core.LoaderOptions()
    for name, value in state.items():
        setattr(options, name, value)
    return options


@dataclasses.dataclass
class PythonRecipe:
    """A Python data set as the engine reads it (_core.PythonDataset): what it
    reads (an adapter of seedloader._dataset, or the user's data set), the
    fields of the slot (as Field.as_tuple() gives them), what makes a sample's
    leaves of them (_samples.Flatten, or a collate_fn's layout) and whether its
    reads take the sample's generator."""
    dataset: object
    fields: list
    flatten: object
    takes_rng: bool

    @classmethod
    def of(cls, dataset, layout, takes_rng):
        """The recipe of `dataset` whose samples have `layout`."""
        return cls(dataset, [f.as_tuple() for f in layout.fields], _samples.Flatten(layout),
                   takes_rng)


@dataclasses.dataclass
class MixtureRecipe:
    """A Mixture of Python data sets as the engine reads it (_core.MixtureDataset):
    its sources' names and recipes (PythonRecipe, in order), the schedule
    history, samples_per_epoch and the counts a resume starts from."""
    names: list
    sources: list
    history: list
    samples_per_epoch: int
    known: list


def build_engine_dataset(recipe, replays=None):
    """The engine's data set from its recipe (PythonRecipe or MixtureRecipe);
    `replays`: one per Python data set, in order (seedloader._recording.Replay,
    or None)."""
    if isinstance(recipe, PythonRecipe):
        return _core.PythonDataset(recipe.dataset, recipe.fields, recipe.flatten,
                                   recipe.takes_rng, replays[0] if replays else None)
    replays = replays or [None] * len(recipe.sources)
    return _core.MixtureDataset(recipe.names, [build_engine_dataset(s, [r])
                                               for s, r in zip(recipe.sources, replays)],
                                recipe.history, recipe.samples_per_epoch, recipe.known)


def with_datasets(recipe, datasets):
    """`recipe` with its Python data sets, in order, replaced by `datasets`."""
    if isinstance(recipe, PythonRecipe):
        return dataclasses.replace(recipe, dataset=datasets[0])
    return dataclasses.replace(recipe, sources=[
        with_datasets(s, [d]) for s, d in zip(recipe.sources, datasets)])


class Payload:
    """The memory file a worker program reads its recipe from (close-on-exec;
    the engine keeps it open across the workers' exec). Rewritten before workers
    start; no worker reads it then."""

    def __init__(self):
        self.fd = os.memfd_create("seedloader-worker-payload", os.MFD_CLOEXEC)

    def write(self, recipe, options, worker_init, fmt, has_plan, what, handoff=None):
        """Pickles what a worker needs (`options` as options_state() gives them;
        `has_plan`: the parent's engine draws its batches from a plan, which sizes
        the slots by the batch size alone; `handoff`: the engine's, for the layout
        pass's workers, _recording.HandOver.serve); an object that does not pickle
        raises its own error with a note naming `what` it belongs to (torch's
        loader raises the same error under spawn)."""
        from multiprocessing import spawn
        preparation = spawn.get_preparation_data("seedloader-worker")
        # Plain bytes: multiprocessing pickles its key only inside its own spawn.
        preparation["authkey"] = bytes(preparation["authkey"])
        try:
            data = (pickle.dumps(preparation) +
                    pickle.dumps((recipe, options, worker_init, fmt, has_plan,
                                  "torch" in sys.modules, handoff)))
        except Exception as e:
            e.add_note("seedloader: workers started by spawn or forkserver receive %s "
                       "pickled; it could not be pickled" % what)
            raise
        _plan_channel.rewrite_file(self.fd, data)

    def close(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self):
        self.close()


def command(payload_fd):
    """The worker program: this interpreter, with its flags, running main()."""
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = ("import sys; sys.path.insert(0, %r); "
            "from seedloader._spawned import main; main()" % package_root)
    return ([sys.executable] + subprocess._args_from_interpreter_flags() +
            ["-c", code, str(payload_fd)])


def no_plan(epoch):
    """A worker's engine never begins an epoch; it only has a plan as its parent's has."""
    raise AssertionError("a worker program drew the plan of epoch %d" % epoch)


def main():
    """A worker program's body: argv is [-c, payload fd, launch arguments...]."""
    fd, launch = int(sys.argv[1]), sys.argv[2:]  # prepare() sets the parent's argv
    size = os.fstat(fd).st_size
    data, at = bytearray(), 0
    while at < size:
        chunk = os.pread(fd, size - at, at)
        if not chunk:
            break
        data += chunk
        at += len(chunk)
    os.close(fd)
    stream = io.BytesIO(bytes(data))  # two pickles, each read by its own unpickler
    from multiprocessing import process, spawn
    # As multiprocessing's own spawn: while the main script is imported again, a
    # process it would start unguarded raises multiprocessing's "bootstrapping
    # phase" error instead of starting workers of its own.
    process.current_process()._inheriting = True
    try:
        spawn.prepare(pickle.load(stream))
        recipe, options, worker_init, fmt, has_plan, had_torch, handoff = pickle.load(stream)
    finally:
        del process.current_process()._inheriting
    if had_torch:
        import torch  # noqa: F401  (seeded and given worker info as in a fork)
    loader = _core.Loader(build_engine_dataset(recipe), options_from(options), worker_init,
                          fmt, no_plan if has_plan else None, handoff=handoff)
    loader.serve_worker(_core.WorkerLaunch.parse(launch))
