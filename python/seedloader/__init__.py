"""seedloader: a parallel data loader with random streams you can trust.

    import seedloader as sl
    ds = sl.ImageFolder("/data/train", transform="rrc:224,hflip,normalize:imagenet")
    loader = sl.DataLoader(ds, batch_size=64, num_workers=8, shuffle=True, seed=1234,
                           drop_last=True, persistent_workers=True)
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for batch in loader:
            x, y = batch["image"], batch["label"]      # torch.Tensor, no copy
            x = x.to("cuda", non_blocking=True)

Workers are processes forked by the C++ engine; batches are written by them into
shared memory and reach Python as tensors over that memory (DLPack). Every random
stream is numpy's PCG64(SeedSequence(seed, spawn_key=KEY)) for a key of (epoch,
rank, worker) or (epoch, sample): see docs/design.md, "Randomness contract".
"""
import importlib as _importlib
import importlib.metadata as _metadata

from seedloader._errors import (CommError, ConfigError, DataError, DuplicateStreamError, Error,
                                TimeoutError, WorkerError)
from seedloader._core import Dataset, Transform
from seedloader._native import Cifar10, ImageFolder, Mnist, Synthetic, TarShards, TensorFile
from seedloader._loader import DataLoader
from seedloader._mixture import Mixture
from seedloader._placement import distributed_context, node_count
from seedloader._stream_reader import shard_stream, worker_rng

__all__ = [
    "Cifar10", "CommError", "ConfigError", "DataError", "DataLoader", "Dataset",
    "DuplicateStreamError", "Error", "ImageFolder", "Mixture", "Mnist", "Synthetic",
    "TarShards", "TensorFile", "TimeoutError", "Transform", "WorkerError",
    "distributed_context", "node_count", "shard_stream", "transform", "worker_rng",
]


def _version():
    """The installed distribution's version: pyproject.toml is its one source."""
    try:
        return _metadata.version("seedloader")
    except _metadata.PackageNotFoundError:  # imported from a build tree
        return "0+unknown"


__version__ = _version()


def __getattr__(name):
    """seedloader.torch, .audit, .checkpoint, .ray and .transformers, imported on
    first use, so that
    `import seedloader as sl; sl.torch.seed_worker` works without importing torch
    up front."""
    if name in _SUBMODULES:
        return _importlib.import_module("seedloader." + name)
    raise AttributeError("module 'seedloader' has no attribute %r" % name)


_SUBMODULES = ("audit", "checkpoint", "ray", "torch", "transformers")


def transform(spec):
    """The C++ transform chain of `spec` ("rrc:224,hflip,normalize:imagenet"):
    call it as t(image_hwc_uint8, rng) with the numpy Generator a dataset is given."""
    return Transform(spec)
