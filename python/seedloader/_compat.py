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
import weakref


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
            return iter(self._owner()._epoch_order().tolist())

        def __len__(self):
            return len(self._owner()._epoch_order())

    LoaderOrder.__name__ = LoaderOrder.__qualname__ = (
        "LoaderRandomOrder" if shuffle else "LoaderSequentialOrder")
    _classes[shuffle] = LoaderOrder
    return LoaderOrder
