"""The epoch's batches, from the main process to the workers: a memory file the
plan is published to each epoch (a user's sampler's keys, a collate_fn's
batches) and every worker reads.
"""
import os
import pickle

import numpy as np

from seedloader import _checks


def rewrite_file(fd, data):
    """Makes the file `fd` (a memory file a worker reads) hold exactly `data`."""
    os.ftruncate(fd, len(data))
    view, at = memoryview(data), 0
    while at < len(data):
        at += os.pwrite(fd, view[at:], at)


class PlanChannel:
    """The epoch's batches, from the main process to the workers, persistent ones
    included (forked before the epoch was drawn): a memfd, which every fork
    inherits and which goes with the last process holding it, rewritten when an
    epoch begins (no task is in flight then) as int64 [version, epoch, number of
    batches, whether stream epochs follow, whether the items are keys,
    offsets...], then the items: int64 indices and the epoch each index's stream
    is keyed by (a Mixture's source epochs), or the pickled list of a Keyed
    epoch's keys (seedloader._checks)."""

    _HEAD = 5

    def __init__(self):
        self._fd = os.memfd_create("seedloader-batches", os.MFD_CLOEXEC)
        self._version = 0
        self._seen = None  # (version, epoch, offsets, items, stream epochs, keyed)
        self._local = None  # (pid, what current() gives) for keys kept in-process

    def publish(self, epoch, batches, stream_epochs=None, shared=True):
        """`batches`: lists of indices, or _checks.Keyed lists of keys;
        `stream_epochs`: the same lists' stream epochs, or None (every index's is
        `epoch`); `shared`: other processes read them (else a Keyed epoch's keys
        stay in this process, never pickled)."""
        self._version += 1
        keyed = isinstance(batches, _checks.Keyed)
        self._local = None
        offsets = np.zeros(len(batches) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in batches], out=offsets[1:])
        head = np.array([self._version, epoch, len(batches), stream_epochs is not None,
                         keyed], np.int64)
        if keyed and not shared:
            self._local = (os.getpid(), (epoch, offsets, batches.items(), None, True))
            data = np.concatenate([head, offsets]).tobytes()
        elif keyed:
            try:
                keys = pickle.dumps(batches.items(), pickle.HIGHEST_PROTOCOL)
            except Exception as e:
                e.add_note("seedloader: the keys a sampler yields in epoch %d reach the "
                           "workers pickled; a key that cannot be pickled needs "
                           "num_workers=0" % epoch)
                raise
            data = np.concatenate([head, offsets]).tobytes() + keys
        else:
            parts = [head, offsets]
            for lists in [batches] + ([] if stream_epochs is None else [stream_epochs]):
                parts.append(np.fromiter((i for b in lists for i in b), dtype=np.int64,
                                         count=int(offsets[-1])))
            data = np.concatenate(parts).tobytes()
        rewrite_file(self._fd, data)

    def __getstate__(self):
        # For a worker started by spawn: the descriptor, which the engine keeps
        # open across its exec (LoaderOptions.worker_fds).
        return {"fd": self._fd}

    def __setstate__(self, state):
        self._fd, self._version, self._seen, self._local = state["fd"], 0, None, None

    def current(self):
        """(epoch, offsets, items, stream epochs or None, whether the items are
        keys) of the batches published last; items: an int64 array of indices, or
        the list of keys."""
        if self._local is not None and self._local[0] == os.getpid():
            return self._local[1]
        head = np.frombuffer(os.pread(self._fd, 8 * self._HEAD, 0), np.int64)
        if self._seen is None or self._seen[0] != head[0]:
            count = int(head[2])
            size = 8 * (self._HEAD + count + 1)
            offsets = np.frombuffer(os.pread(self._fd, size, 0), np.int64)[self._HEAD:]
            n = int(offsets[-1])
            streams = None
            if head[4]:
                items = pickle.loads(os.pread(self._fd, os.fstat(self._fd).st_size - size,
                                              size))
            else:
                both = np.frombuffer(os.pread(self._fd, 16 * n, size), np.int64) \
                    if n else np.zeros(0, np.int64)
                items, streams = both[:n], (both[n:2 * n] if head[3] else None)
            self._seen = (int(head[0]), int(head[1]), offsets, items, streams, bool(head[4]))
        return self._seen[1:]

    def __del__(self):
        try:
            os.close(self._fd)
        except (OSError, AttributeError):
            pass
