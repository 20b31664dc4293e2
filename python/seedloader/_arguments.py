"""The DataLoader's arguments: PyTorch's rules for them (with its messages), the
defaults torch's loader shows for what was not given (prefetch_factor,
collate_fn), the engine's LoaderOptions by name, and the collate wrappers of
batch_size=None. Functions of their arguments alone; nothing here holds state.
"""
import importlib.util
import os
import sys
import warnings

from seedloader import _checks, _core
from seedloader._agreement import DrawnSeed
from seedloader._core import Dataset
from seedloader._errors import ConfigError


def torch_available():
    return importlib.util.find_spec("torch") is not None


# torch's DataLoader refuses to change these once built (its __setattr__).
FIXED_AFTER_INIT = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                    "persistent_workers", "seed")  # and the seed: load_state_dict sets it


CHOICES = {
    "order": {"numpy": _core.ShuffleOrder.numpy, "torch": _core.ShuffleOrder.torch,
              "shards": _core.ShuffleOrder.shards},
    "partition": {"strided": _core.Partition.strided, "elastic": _core.Partition.elastic},
    "seeding": {"worker": _core.SeedScope.worker, "sample": _core.SeedScope.sample},
    "on_bad_sample": {"raise": _core.BadSample.raise_error, "skip": _core.BadSample.skip},
}


def loader_options(**values):
    """The engine's LoaderOptions by name; a choice outside its enum is a
    ConfigError listing the valid ones."""
    options = _core.LoaderOptions()
    for name, value in values.items():
        if name in CHOICES:
            choices = CHOICES[name]
            if value not in choices:
                raise ConfigError("%s must be %s, not %r" % (
                    name, " or ".join(repr(c) for c in choices), value))
            value = choices[value]
        setattr(options, name, value)
    return options


def check_mixture_arguments(mixture, sampler, batch_sampler, unbatched, collate):
    """The history a loader over `mixture` starts with; a ConfigError for what a
    Mixture does not take."""
    if sampler is not None or batch_sampler is not None:
        raise ConfigError("DataLoader: a Mixture sets its own order; it takes no sampler "
                          "or batch_sampler")
    if unbatched:
        raise ConfigError("DataLoader: a Mixture is read in global batches; give "
                          "batch_size")
    if collate is not None:
        own = [n for n in mixture.names if isinstance(mixture.sources[n], Dataset)]
        if own:
            raise ConfigError("DataLoader: a collate_fn runs on Python data sets' samples; "
                              "the Mixture's source %r is %s, seedloader's own (its "
                              "batches are built by the engine)"
                              % (own[0], type(mixture.sources[own[0]]).__name__))
    return mixture.history()


def epoch_number(epoch, what="epoch"):
    """`epoch` as an int the engine takes (a uint64), else a ConfigError."""
    return _checks.integer(epoch, what)


def check_placement(rank, world_size):
    """ConfigError unless rank (>= 0) and world_size (>= 1) are ints or None."""
    for name, value, low in (("rank", rank, 0), ("world_size", world_size, 1)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < low):
            raise ConfigError("%s must be an int >= %d or None, got %r" % (name, low, value))


def base_seed(seed, generator):
    """A loader's base seed from its arguments: `seed` as given, else drawn from
    `generator` as torch draws its loader's, else drawn from the OS and marked a
    DrawnSeed (each process draws its own: the ranks agree on one, _agreement)."""
    if seed is not None:
        # A drawn seed stays one when a framework rebuilds the loader from vars().
        drawn = isinstance(seed, DrawnSeed)
        seed = _checks.integer(seed, "seed")
        return DrawnSeed(seed) if drawn else seed
    if generator is not None:
        # The same on every rank whose generator was seeded alike
        # (torch.Generator()'s default seed is a constant).
        return seed_from(generator)
    return DrawnSeed(_core.draw_base_seed("DataLoader"))


def seed_from(generator):
    """A base seed drawn from a torch.Generator, as torch draws its loader's."""
    import torch
    return int(torch.empty((), dtype=torch.int64).random_(generator=generator).item())


def check_torch_arguments(batch_size, shuffle, sampler, batch_sampler, num_workers,
                          collate_fn, drop_last, timeout, multiprocessing_context,
                          prefetch_factor, persistent_workers, pin_memory_device,
                          remote=None):
    """PyTorch's argument rules, as ConfigError (a ValueError, as torch raises);
    a fleet (`remote`) has workers of its own, so it takes prefetch_factor."""
    if batch_size is not None and (isinstance(batch_size, bool) or
                                   not isinstance(batch_size, int) or batch_size < 1):
        raise ConfigError("batch_size should be a positive integer value, but got "
                          "batch_size=%r" % (batch_size,))
    if not isinstance(num_workers, int) or num_workers < 0:
        raise ConfigError("num_workers option should be non-negative; use "
                          "num_workers=0 to disable multiprocessing")
    if timeout < 0:
        raise ConfigError("timeout option should be non-negative")
    if prefetch_factor is not None:
        # 2 with num_workers=0 is torch 1.13's default, which frameworks pass back.
        if num_workers == 0 and remote is None and prefetch_factor != 2:
            raise ConfigError("prefetch_factor option could only be specified in "
                              "multiprocessing: let num_workers > 0, or set "
                              "prefetch_factor to None")
        if not isinstance(prefetch_factor, int) or prefetch_factor < 1:
            raise ConfigError("prefetch_factor must be an int >= 1, got %r"
                              % (prefetch_factor,))
    if persistent_workers and num_workers == 0:
        raise ConfigError("persistent_workers option needs num_workers > 0")
    if sampler is not None and shuffle:
        raise ConfigError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None:
        if batch_size != 1 or shuffle or sampler is not None or drop_last:
            raise ConfigError("batch_sampler option is mutually exclusive with "
                              "batch_size, shuffle, sampler, and drop_last")
    if collate_fn is not None and not callable(collate_fn):
        raise ConfigError("collate_fn must be callable, got %r" % (collate_fn,))
    if batch_size is None and batch_sampler is None and drop_last:
        raise ConfigError("batch_size=None option disables auto-batching and is mutually "
                          "exclusive with drop_last")
    if multiprocessing_context is not None:
        check_start_method(multiprocessing_context, num_workers)
    if pin_memory_device not in ("", "cuda"):
        raise ConfigError("pin_memory_device=%r: seedloader pins for CUDA only"
                          % (pin_memory_device,))


def check_stream_options(on_duplicate_stream, stream_resume):
    if on_duplicate_stream not in ("error", "warn", "off"):
        raise ConfigError("on_duplicate_stream must be 'error', 'warn' or 'off', not %r"
                          % (on_duplicate_stream,))
    if stream_resume not in ("state", "replay"):
        raise ConfigError("stream_resume must be 'state' or 'replay', not %r"
                          % (stream_resume,))


def warn_if_more_workers_than_cpus(num_workers):
    """A warning, as torch's loader gives, when the workers outnumber the CPUs this
    process may run on: they then take turns, and the loader is slower, not faster."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 0
    if cpus and num_workers > cpus:
        warnings.warn("seedloader.DataLoader: num_workers=%d worker processes, but this "
                      "process may use %d CPUs; more workers than CPUs take turns, and "
                      "such excessive worker creation might get DataLoader running slow "
                      "or even freeze: lower num_workers to at most %d"
                      % (num_workers, cpus, cpus), stacklevel=3)


def torch_prefetch_default(num_workers):
    """The prefetch_factor torch's own loader shows when given none, which
    frameworks pass back to it: 2, except None without workers from torch 2.0 on
    (whose loader refuses 2 there); None without torch."""
    if not torch_available():
        return None
    if num_workers > 0:
        return 2
    import torch
    return 2 if int(torch.__version__.split(".")[0]) < 2 else None


def default_collate(unbatched=False):
    """torch's default_collate (default_convert for batch_size=None), the
    collate_fn torch's loader shows when given none (None without torch)."""
    try:
        from torch.utils.data import default_collate, default_convert
    except ImportError:
        return None
    return default_convert if unbatched else default_collate


def check_start_method(context, num_workers):
    """torch's rules for multiprocessing_context (with its messages); the start
    method it names."""
    import multiprocessing
    if num_workers == 0:
        raise ConfigError("multiprocessing_context can only be used with multi-process "
                          "loading (num_workers > 0), but got num_workers=%d" % num_workers)
    if isinstance(context, str):
        methods = multiprocessing.get_all_start_methods()
        if context not in methods:
            raise ConfigError("multiprocessing_context option should specify a valid start "
                              "method in %r, but got multiprocessing_context=%r"
                              % (methods, context))
        method = context
    elif callable(getattr(context, "get_start_method", None)):
        method = context.get_start_method()
    else:
        raise TypeError("multiprocessing_context option should be a valid context object "
                        "or a string specifying the start method, but got "
                        "multiprocessing_context=%r" % (context,))
    return method


def is_default_collate(fn):
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    collate = torch.utils.data._utils.collate
    return fn in (collate.default_collate, getattr(torch.utils.data, "default_collate", None),
                  collate.default_convert, getattr(torch.utils.data, "default_convert", None))


class OneSample:
    """A user's collate_fn under batch_size=None: torch calls it on each sample,
    the engine on a batch of one."""

    def __init__(self, collate_fn):
        self.collate_fn = collate_fn

    def __call__(self, samples):
        return self.collate_fn(samples[0])


class Unbatch:
    """The builder a pass uses under batch_size=None: each batch of one becomes
    its sample, as torch's default_convert gives it (layout.build_one), or for a
    C++ data set each field without its batch dimension (a view)."""

    def __init__(self, layout):
        self.layout = layout

    def build(self, fields, lengths, pad):
        if self.layout is None:
            return {name: t[0] for name, t in fields.items()}
        return self.layout.build_one(fields, lengths)
