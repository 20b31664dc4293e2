"""seedloader's exceptions. Every error the engine raises derives from Error.

    ConfigError   invalid options (raised when the loader or dataset is built);
                  also a ValueError. DuplicateStreamError, one of them: two
                  workers or ranks iterating an IterableDataset start alike
    DataError     bad input; the message names the file and the sample index.
                  Raise it from a Python dataset's __getitem__ for a sample that
                  on_bad_sample="skip" may replace.
    WorkerError   a worker failed: .worker, .pid, .signal or .exit_code, .batch,
                  .index (None where unknown) and the original message; also a
                  RuntimeError, as torch raises for a dead worker. When a
                  dataset's __getitem__ raised, .exception_type names that
                  exception's type and the error is also an instance of it
                  (as_dataset_error), as torch re-raises it.
    TimeoutError  a batch did not arrive within `timeout` (.timeout, seconds);
                  also a TimeoutError and, as torch raises for a timeout, a
                  RuntimeError
    CommError     a collective did not complete

The engine's errors come with the facts the package acts on as attributes (set by
python/src/errors.cc), never as text to parse. `.code` says what happened:
"batch_failed" (a sample's __getitem__ raised: the pass goes on),
"worker_init_failed", "worker_died", "timed_out", "slot_held" (a seedloader.Error
whose .batch cannot be loaded while a kept batch holds its slot, of .slots);
None for any other error.
"""
import builtins
import signal as _signal
import sys
import traceback


class Error(Exception):
    """Base of every seedloader error."""

    code = None  # what happened, where the engine says (see the module's text)


class ConfigError(Error, ValueError):
    """Invalid options."""


class DuplicateStreamError(ConfigError):
    """Two workers or ranks iterating an IterableDataset yield the same samples:
    the stream does not split itself over them (names them and the fix)."""


class DataError(Error):
    """Bad input: names the file and the sample index."""


class TimeoutError(Error, builtins.TimeoutError, RuntimeError):  # noqa: A001
    """A batch did not arrive in time; names the worker. The engine's message ends
    with PyTorch's words for it, which logs and tests look for."""

    def __init__(self, message="", timeout=None):
        if timeout is not None:
            message = "%s (DataLoader timed out after %g seconds)" % (message, timeout)
        super().__init__(message)
        self.timeout = timeout  # seconds waited, where the engine says


class CommError(Error):
    """A collective did not complete."""


class WorkerError(Error, RuntimeError):
    """A worker failed; what is known of it is in the attributes (None: unknown)."""

    def __init__(self, message, worker=None, pid=None, signal=None, exit_code=None,
                 batch=None, index=None, exception_type=None):
        # PyTorch's words for a worker's end, which logs and tests look for.
        if pid is not None and signal is not None:
            message = "%s (DataLoader worker (pid %d) is killed by signal: %s.)" % (
                message, pid, _signal.strsignal(signal) or signal)
        elif pid is not None and exit_code is not None:
            message = "%s (DataLoader worker (pid(s) %d) exited unexpectedly)" % (
                message, pid)
        super().__init__(message)
        self.worker = worker
        self.pid = pid
        self.signal = signal
        self.exit_code = exit_code
        self.batch = batch
        self.index = index
        self.exception_type = exception_type  # type_name() of a dataset's exception


def is_dataset_error(error):
    """Whether `error` is a batch's own failure (a dataset's exception, a bad
    sample), after which a pass goes on: not a worker's death or a timeout."""
    return isinstance(error, WorkerError) and error.signal is None and \
        error.exit_code is None


# The engine carries a worker's message in a 1024-byte field of the slot.
_MESSAGE_BYTES = 1000

_combined: dict = {}  # exception type -> its WorkerError subclass


def type_name(kind):
    """How describe_exception names an exception type: a builtin by its name,
    others as module.qualname, so the loader can find the type again."""
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return "%s.%s" % (kind.__module__, kind.__qualname__)


def _find_type(name):
    """The exception type describe_exception named `name`, among builtins and the
    modules this process has imported; None when there is none."""
    if "." not in name:
        found = getattr(builtins, name, None)
    else:
        found = None
        parts = name.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = sys.modules.get(".".join(parts[:cut]))
            if module is None:
                continue
            found = module
            for attribute in parts[cut:]:
                found = getattr(found, attribute, None)
            break
    if isinstance(found, type) and issubclass(found, Exception) and \
            not issubclass(found, Error):
        return found
    return None


def as_dataset_error(error):
    """A WorkerError for a sample whose __getitem__ raised, as an instance of both
    WorkerError (its fields kept) and the dataset's exception type, named by its
    exception_type, as torch's loader re-raises a worker's exception as its own
    type (`except KeyError:` and `except seedloader.WorkerError:` both catch it);
    None when it names none, or the type cannot be found or made so (a
    constructor that takes more than a message)."""
    kind = error.exception_type and _find_type(error.exception_type)
    if not kind:
        return None
    if kind not in _combined:
        try:
            _combined[kind] = type(kind.__name__, (WorkerError, kind), {
                "__module__": kind.__module__, "__qualname__": kind.__qualname__,
                "__doc__": "A WorkerError that is also the dataset's %s."
                           % kind.__qualname__})
        except TypeError:  # bases that cannot be combined
            _combined[kind] = None
    combined = _combined[kind]
    if combined is None:
        return None
    try:
        own = combined(str(error), worker=error.worker, pid=error.pid,
                       signal=error.signal, exit_code=error.exit_code,
                       batch=error.batch, index=error.index,
                       exception_type=error.exception_type)
    except TypeError:
        return None
    own.code = error.code
    return own


def describe_exception(exc, budget=_MESSAGE_BYTES):
    """An exception raised in a worker, for the WorkerError the trainer sees: a first
    line "Type: message (at file:line in function)", the frame being the innermost
    one of its traceback, its notes (add_note) on the lines after, then as much of
    the formatted traceback as fits in `budget` bytes, innermost frames first
    kept, as PyTorch's workers report it."""
    text = type_name(type(exc))
    if str(exc):
        text += ": " + str(exc)
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        text += " (at %s:%d in %s)" % (last.filename, last.lineno, last.name)
    notes = getattr(exc, "__notes__", None)
    if isinstance(notes, list):
        text += "".join("\n" + str(note) for note in notes)
    if not frames:
        return text
    # Frames from the innermost outwards while they fit; the exception line itself
    # is the first line already.
    head = "\n\nOriginal traceback (most recent call last):\n"
    room = budget - len(text.encode()) - len(head.encode())
    kept = []
    for frame in reversed(traceback.format_list(frames)):
        size = len(frame.encode())
        if size > room:
            kept.append("  ...\n")
            break
        kept.append(frame)
        room -= size
    if not kept or kept == ["  ...\n"]:
        return text
    return text + head + "".join(reversed(kept)).rstrip("\n")


def held_slot_error(error):
    """The engine's error for a batch whose slot an earlier, still referenced batch
    holds (code "slot_held"), in this API's terms, its code, batch and slots kept;
    None for any other error."""
    if error.code != "slot_held":
        return None
    held = Error("DataLoader: batch %d cannot be loaded: its slot is still held by an "
                 "earlier batch you keep a reference to, and the slots were pinned for "
                 "CUDA after the workers started, so the batch cannot be moved aside. The loader has %d slots "
                 "(prefetch_factor + 1 per worker; in all with num_workers=0): pass "
                 "pin_memory=False to keep any number of batches, keep fewer, "
                 ".clone() what you keep, or raise prefetch_factor"
                 % (error.batch, error.slots))
    held.code, held.batch, held.slots = error.code, error.batch, error.slots
    return held
