"""seedloader's exceptions. Every error the engine raises derives from Error.

    ConfigError   invalid options (raised when the loader or dataset is built);
                  also a ValueError
    DataError     bad input; the message names the file and the sample index.
                  Raise it from a Python dataset's __getitem__ for a sample that
                  on_bad_sample="skip" may replace.
    WorkerError   a worker failed: .worker, .pid, .signal or .exit_code, .batch,
                  .index (None where unknown) and the original message
    TimeoutError  a batch did not arrive within `timeout`; also a TimeoutError
    CommError     a collective did not complete
"""
import builtins
import traceback


class Error(Exception):
    """Base of every seedloader error."""


class ConfigError(Error, ValueError):
    """Invalid options."""


class DataError(Error):
    """Bad input: names the file and the sample index."""


class TimeoutError(Error, builtins.TimeoutError):  # noqa: A001 (the engine's name)
    """A batch did not arrive in time; names the worker."""


class CommError(Error):
    """A collective did not complete."""


class WorkerError(Error):
    """A worker failed; what is known of it is in the attributes (None: unknown)."""

    def __init__(self, message, worker=None, pid=None, signal=None, exit_code=None,
                 batch=None, index=None):
        super().__init__(message)
        self.worker = worker
        self.pid = pid
        self.signal = signal
        self.exit_code = exit_code
        self.batch = batch
        self.index = index


# The engine carries a worker's message in a 1024-byte field of the slot.
_MESSAGE_BYTES = 1000


def describe_exception(exc, budget=_MESSAGE_BYTES):
    """An exception raised in a worker, for the WorkerError the trainer sees: a first
    line "Type: message (at file:line in function)", the frame being the innermost
    one of its traceback, then as much of the formatted traceback as fits in
    `budget` bytes, innermost frames first kept, as PyTorch's workers report it."""
    text = type(exc).__name__
    if str(exc):
        text += ": " + str(exc)
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        text += " (at %s:%d in %s)" % (last.filename, last.lineno, last.name)
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
