"""The layout of a Python data set's first samples where the layout pass does
not run (a pass resumed under worker seeding, a pass with no batch left): a
probe process forked for the purpose reads them, or a user's sampler's first
items, so a sample that hangs, crashes or raises does so in a child, reported
as a WorkerError with the child's traceback; with num_workers=0 the calling
process does, and its random, numpy and torch generators are restored
afterwards. Also what the layout pass shares with it: length-prefixed pickled
messages of layouts (sample types a pickle cannot name sent by reference) and
the child processes' states.
"""
import gc
import os
import pickle
import select
import signal
import time
import traceback

from seedloader import _dataset, _samples, _seeding
from seedloader._errors import (ConfigError, DataError, TimeoutError, WorkerError,
                                as_dataset_error, describe_exception, type_name)


def probe_indices(size, count=_dataset.PROBE_SAMPLES):
    return list(range(min(size, count)))


def _read_probe(dataset, with_rng, seed, epoch, seed_globals, count, report=None):
    """[(index, sample)] for the probe's indices. A DataError skips that sample;
    another exception ends the probe once it has a sample (the engine reports it at
    its batch) and is raised, as a WorkerError naming the index, before that.
    report(samples), if given, is called after each sample read."""
    samples, skipped = [], []
    for index in probe_indices(len(dataset), count):
        rng = _dataset.sample_generator(seed, epoch, index)
        if seed_globals:
            _seeding.seed_globals_from_stream(rng.bit_generator.state)
        try:
            samples.append((index, _dataset.read_sample(dataset, index, rng, with_rng)))
        except DataError as e:
            skipped.append("sample %d: %s" % (index, e))
            continue
        except Exception as e:
            if samples:
                break
            error = WorkerError("%s[%d]: %s" % (type(dataset).__name__, index,
                                                describe_exception(e)), index=index,
                                exception_type=type_name(type(e)))
            raise as_dataset_error(error) or error from e
        if report is not None:
            report(samples)
    if not samples:
        raise DataError("every sample the layout was to be learned from failed: %s"
                        % "; ".join(skipped))
    return samples


def learn_in_process(dataset, with_rng, seed, epoch, learn, count=_dataset.PROBE_SAMPLES):
    """learn([(index, sample)]), the layout, from the first `count` samples read
    here; the caller's generators are kept."""
    with _dataset.process_generators_kept():
        samples = _read_probe(dataset, with_rng, seed, epoch, False, count)
    return learn(samples)


def learn_in_child(dataset, with_rng, seed, epoch, learn, timeout, count=_dataset.PROBE_SAMPLES):
    """The layout from samples read in a forked probe process, which sends the
    layout learned so far after each sample: a probe that dies (os._exit, a signal)
    after its first sample leaves the layout of the samples before, and the engine's
    worker meets the same end at its batch. One that raises, or dies before any
    sample, is a WorkerError (worker -1) with its traceback or its end; one that
    outlives `timeout` (seconds, 0: none) a TimeoutError."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the probe: never returns
        os.close(read_end)
        out = os.fdopen(write_end, "wb")

        def send(message):
            payload = pickled(message)
            out.write(len(payload).to_bytes(8, "little") + payload)
            out.flush()

        code = 0
        try:
            _read_probe(dataset, with_rng, seed, epoch, True, count,
                        lambda samples: send(("ok", learn(samples))))
        except BaseException as e:  # noqa: B902 (everything goes back to the parent)
            try:
                send(("error", type_name(type(e.__cause__ or e)), str(e),
                      traceback.format_exc(), getattr(e, "index", None),
                      isinstance(e, (ConfigError, DataError))))
            except BaseException:  # noqa: B902
                code = 1
        os._exit(code)
    os.close(write_end)
    data = bytearray()
    deadline = time.monotonic() + timeout if timeout > 0 else None
    try:
        with os.fdopen(read_end, "rb") as source:
            while True:
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError("the probe process (pid %d) reading the first "
                                       "samples to learn the layout took more than "
                                       "timeout=%gs" % (pid, timeout))
                ready, _, _ = select.select([source], [], [], 0.05)
                if ready:
                    chunk = os.read(source.fileno(), 1 << 20)
                    if not chunk:
                        break
                    data += chunk
    except BaseException:  # noqa: B902 (a timeout, Ctrl-C: the probe must not outlive it)
        kill(pid)
        raise
    _, status = os.waitpid(pid, 0)
    messages = read_messages(bytes(data))
    if not messages:
        raise WorkerError(
            "the probe process (pid %d) reading the first samples to learn the layout %s"
            % (pid, _describe_status(status)), worker=-1, pid=pid,
            signal=os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            exit_code=os.WEXITSTATUS(status) if os.WIFEXITED(status) else None)
    result = messages[-1]
    if result[0] == "ok":
        return resolved(result[1])
    _, name, message, remote_traceback, index, ours = result
    if ours:
        raise (ConfigError if name.endswith("ConfigError") else DataError)(message)
    # The dataset's own exception type, as past the probe and as torch raises it.
    error = WorkerError("%s in the probe process (pid %d) reading the first samples to "
                        "learn the layout: %s\n\nOriginal traceback:\n%s"
                        % (name, pid, message, remote_traceback), worker=-1, pid=pid,
                        index=index, exception_type=name)
    raise as_dataset_error(error) or error


def read_messages(data):
    """The complete length-prefixed pickles in `data` (a probe that died mid-write
    leaves a partial last one)."""
    out, at = [], 0
    while at + 8 <= len(data):
        size = int.from_bytes(data[at:at + 8], "little")
        if at + 8 + size > len(data):
            break
        out.append(pickle.loads(data[at + 8:at + 8 + size]))
        at += 8 + size
    return out


def process_state(pid):
    """(state letter, parent pid) of process `pid` from /proc, or None when there
    is none."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1])
    except (OSError, ValueError, IndexError):
        return None


def is_child(pid):
    """Whether `pid` is a child of this process that has not been reaped."""
    state = process_state(pid)
    return state is not None and state[1] == os.getpid()


def kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass  # reaped already


def _describe_status(status):
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        return "was killed by signal %d (%s)" % (number, signal.Signals(number).name)
    return "exited with code %d" % os.WEXITSTATUS(status)


class _TypeRef:
    """A sample type pickle cannot name (made in a function): its id, valid in the
    parent because the probe is its fork."""

    def __init__(self, type_):
        self.id, self.name = id(type_), type_.__qualname__


def pickled(value):
    try:
        return pickle.dumps(value)
    except (pickle.PicklingError, AttributeError, TypeError):
        pass
    for node in _nodes(value[1].tree):
        try:
            pickle.dumps(node.type)
        except (pickle.PicklingError, AttributeError, TypeError):
            node.type = _TypeRef(node.type)
    return pickle.dumps(value)


def resolved(layout):
    refs = [n for n in _nodes(layout.tree) if isinstance(n.type, _TypeRef)]
    if refs:
        # type(o), not isinstance: some objects warn when their __class__ is read.
        types = {id(o): o for o in gc.get_objects() if issubclass(type(o), type)}
        for node in refs:
            found = types.get(node.type.id)
            if found is None or found.__qualname__ != node.type.name:
                raise ConfigError(
                    "the sample type %s is created inside __getitem__, so the main "
                    "process cannot build batches of it; define it once, outside"
                    % node.type.name)
            node.type = found
    return layout


def _nodes(node):
    if isinstance(node, _samples.Node):
        yield node
        for child in node.children:
            yield from _nodes(child)
