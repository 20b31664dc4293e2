"""What frameworks read of a torch.utils.data.DataLoader, with torch's kinds of
values, for a seedloader.DataLoader: its `sampler` and `batch_sampler`.

Lightning's _set_sampler_epoch calls `loader.sampler.set_epoch(epoch)` (and the
batch sampler's sampler's) at each epoch start, and its _is_dataloader_shuffled
tells a shuffled loader by a RandomSampler; accelerate's skip_first_batches reads
`loader.batch_sampler`. When the user gives neither, the loader's own order is
shown as torch's classes: a RandomSampler (shuffle) or SequentialSampler whose
iteration is this rank's order of the loader's current epoch and whose set_epoch
sets the loader's epoch, and a BatchSampler over it. They describe the loader;
the loader never iterates them (its engine draws the same order in C++).

Not a subclass of torch's DataLoader: Lightning and accelerate rebuild any
torch.utils.data.DataLoader as a torch loader of their own (Lightning's
_update_dataloader, accelerate's prepare_data_loader), which would load
seedloader's data with torch's workers and seeds; other objects they iterate as
they are, and seedloader shards by rank itself."""
import os
import sys
import time
import weakref

from seedloader import _core, _probe


def samplers(loader):
    """(sampler, batch_sampler) as torch's DataLoader holds them for `loader`'s
    arguments; (the user's, None) where torch is not importable."""
    try:
        import torch.utils.data as tud
    except ImportError:
        return loader._sampler, loader._batch_sampler
    if loader._batch_sampler is not None:
        sampler = loader._sampler or tud.SequentialSampler(loader.dataset)
        return sampler, loader._batch_sampler
    sampler = loader._sampler
    if sampler is None:
        sampler = _order_class(loader.shuffle)(loader)
    if loader._unbatched:  # batch_size=None: torch's loader has no batch sampler
        return sampler, None
    return sampler, tud.BatchSampler(sampler, loader.batch_size, loader.drop_last)


_classes: dict = {}  # shuffle -> the sampler class


def _order_class(shuffle):
    """The sampler class showing a loader's own order: a subclass of torch's
    RandomSampler or SequentialSampler, made once on first use (torch is imported
    only then)."""
    if shuffle in _classes:
        return _classes[shuffle]
    import torch.utils.data as tud
    base = tud.RandomSampler if shuffle else tud.SequentialSampler

    class LoaderOrder(base):
        """This rank's order of a seedloader.DataLoader's current epoch (iterating
        it draws that order, as the loader's engine does); set_epoch(e) is the
        loader's set_epoch(e)."""

        def __init__(self, loader):
            # Not base.__init__: the loader's order takes no generator or count.
            self.data_source = loader.dataset
            self.replacement, self._num_samples, self.generator = False, None, None
            self._loader = weakref.ref(loader)

        def _owner(self):
            loader = self._loader()
            if loader is None:
                raise ReferenceError("the seedloader.DataLoader of this sampler is gone")
            return loader

        @property
        def num_samples(self):
            return len(self)

        def set_epoch(self, epoch):
            self._owner().set_epoch(epoch)

        def __iter__(self):
            refuse_foreign_iteration()
            return iter(self._owner()._epoch_order().tolist())

        def __len__(self):
            return len(self._owner()._epoch_order())

    LoaderOrder.__name__ = LoaderOrder.__qualname__ = (
        "LoaderRandomOrder" if shuffle else "LoaderSequentialOrder")
    _classes[shuffle] = LoaderOrder
    return LoaderOrder


def refuse_foreign_iteration():
    """Raises when a torch DataLoader iterates a sampler that shows a seedloader
    loader's order: a framework built a torch loader in its place (accelerate's
    skip_first_batches does, from `batch_sampler`), which would load the data set
    with torch's workers and seeds."""
    torch_loader = sys.modules.get("torch.utils.data.dataloader")
    if torch_loader is None:
        return
    frame = sys._getframe(1)
    while frame is not None:
        owner = frame.f_locals.get("self")
        if isinstance(owner, (torch_loader.DataLoader, torch_loader._BaseDataLoaderIter)):
            from seedloader._errors import ConfigError
            raise ConfigError(
                "a torch DataLoader is iterating the sampler of a seedloader.DataLoader: "
                "it was built in the loader's place (accelerate's skip_first_batches does "
                "this) and would load the data with torch's workers and seeds. Iterate "
                "the seedloader.DataLoader itself; to skip batches, resume it with "
                "load_state_dict() (under accelerate: "
                "accelerator.register_for_checkpointing(loader); under transformers' "
                "Trainer, which calls skip_first_batches on resuming: "
                "callbacks=[seedloader.transformers.ResumeCallback()])")
        frame = frame.f_back


def gradient_state():
    """accelerate's GradientState once an Accelerator exists in this process, else
    None (nothing of accelerate is imported or created here)."""
    state = sys.modules.get("accelerate.state")
    if state is None or not getattr(state.GradientState, "_shared_state", None):
        return None
    return state.GradientState()


class _GradientStateLink:
    """What accelerate's GradientState reads of the dataloader it is in, as its own
    DataLoaderShard provides it: `end_of_dataloader` while the epoch's last batch
    is out, and `remainder`, the real samples of the last global batch, which
    gather_for_metrics keeps (-1: keep all)."""

    def __init__(self):
        self.end_of_dataloader = False
        self.remainder = -1


def accelerate_pass(loader, batches, state):
    """The pass `batches` of `loader` inside accelerate's GradientState, so that
    gather_for_metrics drops the padding of the last batch and gradient
    accumulation syncs at the epoch's end, as with accelerate's own loaders."""
    link = _GradientStateLink()
    state._add_dataloader(link)
    try:
        num_batches = None
        for batch in batches:
            if num_batches is None:  # the pass has started: rank and world size known
                num_batches, link.remainder = len(loader), loader._last_batch_samples()
            link.end_of_dataloader = batches.position.yielded >= num_batches
            yield batch
    finally:
        state._remove_dataloader(link)


class Pass(_core.Batches):
    """A pass (seedloader._core.Batches) with torch's iterator attribute `_workers`:
    the worker processes that serve it, read from its position (which outlives it,
    so the list does not keep a dropped iterator and its workers alive); the
    engine starts them with the first batch, and the list is empty before."""

    @property
    def _workers(self):
        return WorkerProcesses(self.position)


class WorkerProcesses:
    """The workers of a pass as torch's iterator lists them: objects with `pid`,
    `is_alive()` and `join(timeout)`, read when iterated."""

    def __init__(self, position):
        self._position = position

    def __iter__(self):
        return iter([WorkerProcess(pid) for pid in self._position.worker_pids])

    def __len__(self):
        return len(self._position.worker_pids)

    def __getitem__(self, i):
        return WorkerProcess(self._position.worker_pids[i])


class WorkerProcess:
    """One worker process of this process's loader, by pid."""

    def __init__(self, pid):
        self.pid = pid

    def is_alive(self):
        """Whether the process runs, as this process's child (not a zombie, not a
        later process given the same pid)."""
        state = _probe.process_state(self.pid)
        return state is not None and state[0] != "Z" and state[1] == os.getpid()

    def join(self, timeout=None):
        """Waits until the worker has ended, or `timeout` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.is_alive() and (deadline is None or time.monotonic() < deadline):
            time.sleep(0.01)

    def __repr__(self):
        return "<seedloader worker pid %d>" % self.pid
