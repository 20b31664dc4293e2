"""Checks of the integers that cross into the engine, where they are uint64: the
base seed, epochs, a state dict's counts and the sample indices a user's sampler
yields. The binding's own refusal ("incompatible function arguments",
std::bad_cast) names neither the value nor where it came from, and int() would
truncate a float; so each value is checked here first, and a bad one is a
ConfigError naming what it is and the value.

An integer is what Python indexes with (operator.index), as torch's loader lets
a sampler's indices through to dataset[i]: an int, a numpy integer (or a 0-d
integer array), an integer tensor of one element. Not a bool (True is not sample
1), nor a float, 1234.0 included: torch.save, pickle and json keep ints as ints,
so a float in a state dict or a sampler's output is a bug, and refusing it is
the only way never to truncate. Nor a string or None.

Where a Python dataset reads them, a sampler's items may also be keys: anything
else the dataset indexes with (a list of indices, a tuple, a string, a tensor),
which torch's loader passes to dataset[key] as they are. An epoch holding one is
Keyed: its items go to the dataset unchecked, read by their position in the
epoch (seedloader._dataset.KeyedSamples). None, a bool and a float are neither
an index nor a key.
"""
import itertools
import operator
import sys
from numbers import Number

import numpy as np

from seedloader._errors import ConfigError

UINT64_END = 2**64

# The types every value of which is an integer: a list holding only these is
# checked with C loops (set, map, min, max), not element by element in Python.
_INT_TYPES = frozenset([int] + [np.dtype(code).type for code in "bBhHiIlLqQ"])


def integer(value, what, low=0, end=UINT64_END):
    """`value` as an int in [low, end), else a ConfigError naming `what` (say
    "load_state_dict: base_seed") and the value."""
    number = _as_int(value)
    if number is None or not low <= number < end:
        raise ConfigError("%s must be an int in [%d, %s), got %r"
                          % (what, low, "2**64" if end == UINT64_END else end, value))
    return number


def boolean(value, what):
    """`value` as a bool when it is one (numpy's included), else a ConfigError
    naming `what` and the value."""
    if not isinstance(value, (bool, np.bool_)):
        raise ConfigError("%s must be a bool, got %r" % (what, value))
    return bool(value)


class Keyed(list):
    """The batches of an epoch holding keys, their items as the sampler gave
    them."""

    def items(self):
        """Every batch's items, in order (made once)."""
        if "_items" not in self.__dict__:
            self._items = list(itertools.chain.from_iterable(self))
        return self._items

    def start(self, k):
        """The position in the epoch of batch k's first item."""
        if "_starts" not in self.__dict__:
            self._starts = list(itertools.accumulate((len(b) for b in self), initial=0))
        return self._starts[k]


def indices(items, size, who, epoch=None, batch_size=None, keys=False):
    """`items` (what a sampler yields) as a list of ints in [0, size), or (`keys`:
    the dataset takes keys) Keyed when one is a key; a bad one is a ConfigError
    naming `who` (say "sampler MySampler"), the value and its place (the epoch,
    and its batch when `batch_size` is given)."""
    def where(k):
        if batch_size is None:
            return _place(epoch, None, k)
        return _place(epoch, k // batch_size, k % batch_size)
    listed = _listed(items)
    checked = _checked(listed, size, who, where, keys)
    return Keyed(listed) if checked is None else checked


def plan(batches, size, who, epoch=None, keys=False):
    """`batches` (iterables of sample indices: what a batch sampler yields, or a
    state's "batches") as lists of ints in [0, size), or (`keys`: the dataset
    takes keys) Keyed lists when one item is a key; a bad one is a ConfigError
    naming `who`, the value and its place."""
    try:
        batches = iter(batches)
    except TypeError:
        raise ConfigError("%s: %r is not a sequence of batches" % (who, batches)) from None
    lists = []
    for b, batch in enumerate(batches):
        try:
            lists.append(_listed(batch))
        except TypeError:
            raise ConfigError("%s: %s is %r, not a sequence of sample indices"
                              % (who, _place(epoch, b, None), batch)) from None
    chained = list(itertools.chain.from_iterable(lists))
    flat = _checked(chained, size, who, lambda k: _place(epoch, *_batch_of(lists, k)), keys)
    if flat is None:
        return Keyed(lists)
    if flat is chained:  # they were ints already
        return lists
    out, start = [], 0
    for batch in lists:
        out.append(flat[start:start + len(batch)])
        start += len(batch)
    return out


def _checked(items, size, who, where, keys=False):
    """The list `items` as ints in [0, size), else a ConfigError naming `who`, the
    value and where(its position); `items` itself when it holds ints only; None
    when `keys` are taken and one item is a key (the others then go unchecked,
    but for None, bools and floats). The lists samplers give (ints, numpy
    integers) are checked by C loops (set, map, min, max), once per epoch; only
    one holding other types (tensors, keys, or something refused) is walked in
    Python."""
    kinds = set(map(type, items))
    if kinds <= {int}:
        numbers = items
    elif kinds <= _INT_TYPES:
        numbers = list(map(operator.index, items))
    else:
        numbers = [_as_int(item) for item in items]
        if None in numbers:
            others = [k for k, n in enumerate(numbers) if n is None]
            if keys and any(_is_key(items[k]) for k in others):
                k = next((k for k in others if not _is_key(items[k])), None)
                if k is None:
                    return None
                raise ConfigError("%s: %r at %s; an item is a sample index (an int in "
                                  "[0, %d), the data set's size) or a key the data set "
                                  "takes (a list, a tuple, a string...), never None, a "
                                  "bool or a float" % (who, items[k], where(k), size))
            k = numbers.index(None)
            raise _bad_index(who, items[k], where(k), size)
    if numbers and (min(numbers) < 0 or max(numbers) >= size):
        k = next(k for k, n in enumerate(numbers) if not 0 <= n < size)
        raise _bad_index(who, items[k], where(k), size)
    return numbers


def _bad_index(who, value, where, size):
    return ConfigError("%s: %r at %s; a sample index must be an int in [0, %d), the "
                       "data set's size" % (who, value, where, size))


def _place(epoch, batch, position):
    """"epoch 2, batch 0, position 1", leaving out what is not known."""
    parts = [("epoch", epoch), ("batch", batch), ("position", position)]
    return ", ".join("%s %d" % (name, n) for name, n in parts if n is not None)


def _batch_of(lists, k):
    """(batch, position in it) of item k of the batches `lists` chained."""
    for b, batch in enumerate(lists):
        if k < len(batch):
            return b, k
        k -= len(batch)
    raise IndexError(k)


def _listed(items):
    """`items` as a list; an array or tensor through tolist(), which gives Python
    numbers at C speed (floats or bools where it holds them, refused after)."""
    if isinstance(items, np.ndarray) or _is_tensor(items):
        listed = items.tolist()
        if not isinstance(listed, list):
            raise TypeError("a zero-dimensional array is not a sequence")
        return listed
    return list(items)


def _as_int(value):
    """`value` as an int if it is an integer by the rule above, else None."""
    if type(value) in _INT_TYPES:
        return int(value)
    if _is_bool(value):
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def _is_key(value):
    """Whether `value`, not an integer, is a key: not None, a bool, a number or a
    zero-dimensional array or tensor (a float's or a bool's); an array or tensor
    of any dtype with dimensions is one (a mask too)."""
    if value is None or isinstance(value, (bool, np.bool_, Number)):
        return False
    return getattr(value, "ndim", None) != 0


def _is_bool(value):
    if isinstance(value, (bool, np.bool_)):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype.kind == "b"
    return _is_tensor(value) and value.dtype is sys.modules["torch"].bool


def _is_tensor(value):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)

