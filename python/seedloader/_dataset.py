"""Python datasets in seedloader's workers: their field layout and sample checks.

A Python dataset is any object with __len__ and __getitem__(index, rng) (or
__getitem__(index)) returning a dict {field name: array}. The layout (names,
dtypes, shapes) is declared by a `fields` attribute, {name: (shape, dtype)}, or
taken from sample 0, read once in the calling process with
np.random.default_rng(0) (the caller's random, numpy and torch generators are
restored afterwards). Every later sample must match it exactly.
"""
import contextlib
import inspect
import random
import sys

import numpy as np

from seedloader._errors import ConfigError, DataError

DTYPES = ("uint8", "int32", "int64", "float32", "float64")


def takes_rng(dataset):
    """Whether dataset.__getitem__ accepts (index, rng) rather than (index)."""
    try:
        params = inspect.signature(dataset.__getitem__).parameters.values()
    except (TypeError, ValueError):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
    return varargs or len(positional) >= 2


def fields_of(dataset):
    """[(name, dtype name, shape)] for `dataset`, declared or from sample 0."""
    declared = getattr(dataset, "fields", None)
    if declared is not None:
        return [_field(name, np.dtype(dtype), tuple(shape), "declared")
                for name, (shape, dtype) in dict(declared).items()]
    if len(dataset) == 0:
        raise ConfigError("%s is empty" % type(dataset).__name__)
    with _process_generators_kept():
        rng = np.random.default_rng(0)
        sample = dataset.__getitem__(0, rng) if takes_rng(dataset) else dataset.__getitem__(0)
    if not isinstance(sample, dict) or not sample:
        raise ConfigError("%s[0] returned %s; a sample must be a non-empty dict "
                          "{field name: array}" % (type(dataset).__name__,
                                                   type(sample).__name__))
    fields = []
    for name, value in sample.items():
        array = np.asarray(value)
        fields.append(_field(str(name), array.dtype, array.shape, "sample 0"))
    return fields


@contextlib.contextmanager
def _process_generators_kept():
    """Restores random, numpy's global state and torch's afterwards: reading sample 0
    for its layout must not move the caller's generators."""
    torch = sys.modules.get("torch")
    saved = (random.getstate(), np.random.get_state(),
             torch.get_rng_state() if torch is not None else None)
    try:
        yield
    finally:
        random.setstate(saved[0])
        np.random.set_state(saved[1])
        if torch is not None:
            torch.set_rng_state(saved[2])


def _field(name, dtype, shape, origin):
    if dtype.name not in DTYPES:
        raise ConfigError("field '%s' (%s) is %s; a batch field holds one of %s"
                          % (name, origin, dtype.name, ", ".join(DTYPES)))
    return (name, dtype.name, [int(d) for d in shape])


def sample_arrays(sample, names, dtypes, shapes, index):
    """The sample's fields as C-contiguous arrays in layout order, or DataError."""
    if not isinstance(sample, dict):
        raise DataError("sample %d is %s, not a dict {field name: array}"
                        % (index, type(sample).__name__))
    extra = [str(k) for k in sample if k not in names]
    if extra:
        raise DataError("sample %d has field '%s', which the layout (%s) does not"
                        % (index, extra[0], ", ".join(names)))
    arrays = []
    for name, dtype, shape in zip(names, dtypes, shapes):
        if name not in sample:
            raise DataError("sample %d has no field '%s' (it has %s)"
                            % (index, name, ", ".join(map(str, sample))))
        array = np.asarray(sample[name])
        if not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)
        if array.dtype.name != dtype or array.shape != tuple(shape):
            raise DataError("sample %d field '%s' is %s %s; the layout says %s %s"
                            % (index, name, array.dtype.name, tuple(array.shape), dtype,
                               tuple(shape)))
        arrays.append(array)
    return arrays
