"""How a sample of any structure crosses a shared slot, and comes back as the
batch torch.utils.data.default_collate would build.

A sample is a tree: dicts (any Mapping), namedtuples, tuples and lists, nested,
with leaves that are torch tensors, numpy arrays, numpy scalars or Python
bool / int / float. The tree is learned once (Layout.learn, from the first
samples), and each leaf becomes one field of the slot, named by its path
(`[0]`, `['image']`, `[1]['boxes']`). In a worker, Flatten turns each sample
into its leaves' arrays in field order; in the main process, Layout.build puts
the collated field tensors back into the tree:

    Mapping     -> the same Mapping type (a dict if it cannot be built from one)
    namedtuple  -> the same namedtuple type
    tuple       -> list (as default_collate does)
    list        -> the same list type
    leaf        -> a tensor [batch, ...]: Python int -> int64, float -> float64,
                   bool -> bool, arrays and tensors keep their dtype

A field whose shape differs between samples (boxes, token ids) is variable: its
leading dimension may vary up to a byte budget, the rest of its shape may not.
It comes back as a list of per-sample tensors over the slot, or, with
pad_variable, as (padded [batch, longest, ...] tensor, int64 lengths).
"""
import collections.abc
import sys

import numpy as np

from seedloader._errors import ConfigError, DataError

# How messages name a sample that is one leaf (a bare tensor or number).
ROOT = "(the whole sample)"
# A variable field's budget per sample when none is given (variable_bytes).
DEFAULT_VARIABLE_BYTES = 65536
# Every dtype numpy and torch share, and torch's bfloat16.
DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
          "float32", "float64")


class Leaf:
    __slots__ = ("field",)

    def __init__(self, field):
        self.field = field


class Node:
    """An inner node: kind is "map", "namedtuple", "tuple" or "list"; keys are the
    mapping's keys or range(len) for sequences."""
    __slots__ = ("kind", "type", "keys", "children")

    def __init__(self, kind, type_, keys, children):
        self.kind, self.type, self.keys, self.children = kind, type_, keys, children


class Field:
    """One leaf's slot field: path, numpy/torch dtype name, shape (the maximum for a
    variable field), whether it is variable, and the Python type (int, float,
    bool, str, bytes) the leaf was in the first sample, or None for arrays. A str
    or bytes leaf crosses as a variable uint8 field of its UTF-8 (or raw) bytes."""
    __slots__ = ("path", "name", "dtype", "shape", "variable", "python")

    def __init__(self, path, name, dtype, shape, variable=False, python=None):
        self.path, self.name, self.dtype = path, name, dtype
        self.shape, self.variable, self.python = tuple(shape), variable, python

    def as_tuple(self):
        return (self.name, self.dtype, list(self.shape), self.variable)


def _kind(value):
    if isinstance(value, collections.abc.Mapping):
        return "map"
    if isinstance(value, tuple):
        return "namedtuple" if hasattr(value, "_fields") else "tuple"
    if isinstance(value, list):
        return "list"
    return None


def _child_path(path, key):
    return "%s[%r]" % (path, key)


def leaf_array(value, where, error=DataError):
    """(C-contiguous numpy array, dtype name) of one leaf, or `error` naming `where`.
    A bfloat16 tensor comes back as its int16 bits."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        if value.device.type != "cpu":
            raise error("%s is a tensor on %s; a sample's tensors must be on the CPU"
                        % (where, value.device))
        name = str(value.dtype).replace("torch.", "")
        if name not in DTYPES:
            raise error("%s is a %s tensor; a batch field holds one of %s"
                        % (where, name, ", ".join(DTYPES)))
        value = value.detach().contiguous()
        if name == "bfloat16":
            value = value.view(torch.int16)
        return value.numpy(), name
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)  # (ascontiguousarray would make a scalar 1-d)
        if not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)
    elif isinstance(value, bool):
        array = np.asarray(value, dtype=np.bool_)
    elif isinstance(value, int):
        try:
            array = np.asarray(value, dtype=np.int64)
        except OverflowError:
            raise error("%s is the int %d, beyond int64" % (where, value)) from None
    elif isinstance(value, float):
        array = np.asarray(value, dtype=np.float64)
    elif isinstance(value, (str, bytes)):
        # Over a bytearray: the engine takes writable arrays only.
        raw = bytearray(value.encode("utf-8") if isinstance(value, str) else value)
        array = np.frombuffer(raw, dtype=np.uint8)
    else:
        raise error("%s is a %s; a batch field holds tensors, numpy arrays, numbers and "
                    "strings (other objects cannot be collated into shared memory: "
                    "encode them as arrays, keep them out of the sample, or pass a "
                    "collate_fn that turns them into tensors)"
                    % (where, type(value).__name__))
    name = array.dtype.name
    if name not in DTYPES:
        raise error("%s is a %s array; a batch field holds one of %s"
                    % (where, name, ", ".join(DTYPES)))
    return array, name


def _walk(value, path, leaves):
    """The tree of `value`, appending (path, value) for each leaf."""
    kind = _kind(value)
    if kind is None:
        leaves.append((path, value))
        return Leaf(len(leaves) - 1)
    if kind == "map":
        keys = list(value.keys())
        children = [_walk(value[k], _child_path(path, k), leaves) for k in keys]
    else:
        keys = list(range(len(value)))
        children = [_walk(v, _child_path(path, i), leaves) for i, v in enumerate(value)]
    return Node(kind, type(value), keys, children)


class Layout:
    """A learned (or declared) sample tree and its fields."""

    def __init__(self, tree, fields):
        self.tree, self.fields = tree, fields
        self.names = [f.name for f in fields]
        # default_collate returns a batch of strings as it found it: the tuple zip
        # made of a sequence's items, the list of a mapping's values (or the root's).
        self._string_tuples = set()
        nodes = [tree]
        while nodes:
            node = nodes.pop()
            if isinstance(node, Node):
                for child in node.children:
                    if isinstance(child, Leaf) and node.kind != "map":
                        self._string_tuples.add(child.field)
                    nodes.append(child)

    @classmethod
    def learn(cls, samples, variable_paths=(), variable_bytes=DEFAULT_VARIABLE_BYTES,
              unbatched=False):
        """From samples [(index, sample)] read in order: the tree of the first; a
        field is variable when its path is in variable_paths or its shape differs
        between the samples (`unbatched`: see settled()). ConfigError names the
        sample and the path."""
        layout = cls.of_sample(*samples[0])
        seen = [[f.shape] for f in layout.fields]
        for index, sample in samples[1:]:
            for shapes, shape in zip(seen, layout.shapes(sample, index)):
                shapes.append(shape)
        return layout.settled([i for i, _ in samples], seen, variable_paths,
                              variable_bytes, unbatched)

    @classmethod
    def of_sample(cls, index, sample, noun="sample"):
        """The tree and fields of one sample (a collate_fn's output: `noun`
        "batch"), each field with that sample's shape (none variable yet:
        settled() decides)."""
        leaves = []
        tree = _walk(sample, "", leaves)
        # A dict's own leaves keep their key as the field name (batch["image"]), so
        # engine features that look fields up by name (MixUp) find them.
        names = {}
        if isinstance(tree, Node) and tree.kind == "map":
            names = {child.field: key for key, child in zip(tree.keys, tree.children)
                     if isinstance(child, Leaf) and isinstance(key, str)}
        fields = []
        for i, (path, value) in enumerate(leaves):
            path = path or ROOT
            array, dtype = leaf_array(value, "%s %d %s" % (noun, index, path), ConfigError)
            python = type(value) if type(value) in _PYTHON_LEAVES else None
            fields.append(Field(path, names.get(i, path), dtype, array.shape,
                                python=python))
        return cls(tree, fields)

    def shapes(self, sample, index, noun="sample"):
        """The shapes of the sample's fields; ConfigError where its tree differs."""
        return [a.shape for a in
                self.flatten_arrays(sample, index, ConfigError, False, noun)]

    def settled(self, indices, seen, variable_paths, variable_bytes, unbatched=False):
        """This layout (of_sample's) made final from `seen`, each field's shapes in
        the samples `indices` learned from: variable where they differ, where its
        path is in variable_paths, and for strings and bytes. `unbatched`: samples
        one by one (batch_size=None), which torch's loader never stacks, so every
        array's first dimension may vary too, within variable_bytes or twice the
        largest seen."""
        fields = self.fields
        unknown = set(variable_paths) - {f.path for f in fields}
        if unknown:
            raise ConfigError("variable_fields names %s, which the sample does not have "
                              "(its fields: %s)" % (", ".join(sorted(unknown)),
                                                    ", ".join(f.path for f in fields)))
        for f, shapes in zip(fields, seen):
            if f.path in variable_paths or len(set(shapes)) > 1 or f.python in (str, bytes):
                _make_variable(f, indices, shapes, variable_bytes)
            elif unbatched and f.shape:
                largest = max(int(np.prod(s, dtype=np.int64)) for s in shapes)
                _make_variable(f, indices, shapes,
                               max(variable_bytes, 2 * largest * _itemsize(f.dtype)))
        return self

    @classmethod
    def declared(cls, fields):
        """From a dataset's `fields` attribute: {name: (shape, dtype)} or
        {name: (shape, dtype, "variable")} for dict samples; a variable field's
        shape is its largest."""
        keys, children, specs = [], [], []
        for name, spec in dict(fields).items():
            spec = tuple(spec)
            if len(spec) not in (2, 3) or (len(spec) == 3 and spec[2] != "variable"):
                raise ConfigError("fields['%s'] is %r; declare (shape, dtype) or (shape, "
                                  "dtype, \"variable\")" % (name, spec))
            dtype = str(np.dtype(spec[1]).name if spec[1] != "bfloat16" else spec[1])
            if dtype not in DTYPES:
                raise ConfigError("fields['%s'] is %s; a batch field holds one of %s"
                                  % (name, dtype, ", ".join(DTYPES)))
            keys.append(name)
            children.append(Leaf(len(specs)))
            specs.append(Field(_child_path("", name), str(name), dtype,
                               tuple(int(d) for d in spec[0]), len(spec) == 3))
        return cls(Node("map", dict, keys, children), specs)

    def flatten_arrays(self, sample, index, error=DataError, check_shapes=True,
                       noun="sample"):
        """The sample's leaf arrays in field order; `error` names the index (as
        `noun` index) and path where the sample differs from the layout."""
        out = []
        self._flatten(self.tree, sample, "", "%s %d" % (noun, index), out, error)
        if check_shapes:
            for f, array in zip(self.fields, out):
                _check_shape(f, array, index)
        return out

    def _flatten(self, node, value, path, where, out, error):
        if isinstance(node, Leaf):
            f = self.fields[node.field]
            array, dtype = leaf_array(value, "%s %s" % (where, f.path), error)
            if dtype != f.dtype:
                raise error("%s %s is %s; the layout says %s" % (where, f.path, dtype, f.dtype))
            out.append(array)
            return
        kind = _kind(value)
        if kind != node.kind or len(value) != len(node.keys) or (
                kind == "map" and any(k not in value for k in node.keys)):
            raise error("%s %s is %s; the layout (from the first ones) has %s"
                        % (where, path or ROOT, _shape_of(value), _shape_of_node(node)))
        for key, child in zip(node.keys, node.children):
            self._flatten(child, value[key], _child_path(path, key), where, out, error)

    def build(self, tensors, lengths, pad_variable):
        """The batch from {field name: collated tensor} and {variable field name:
        [elements per sample]}, shaped as default_collate shapes it."""
        leaves = []
        for k, f in enumerate(self.fields):
            t = tensors[f.name]
            if f.python in (str, bytes):  # as default_collate gives a batch of strings
                t = [_text(f, row) for row in _variable_leaf(f, t, lengths[f.name], False)]
                if k in self._string_tuples:
                    t = tuple(t)
            elif f.variable:
                t = _variable_leaf(f, t, lengths[f.name], pad_variable)
            leaves.append(t)
        batch = _build(self.tree, leaves)
        if isinstance(batch, dict):  # engine fields beyond the sample (MixUp's target)
            for name, t in tensors.items():
                if name not in self.names:
                    batch[name] = t
        return batch

    def build_one(self, tensors, lengths):
        """The sample of a batch of one, as torch's default_convert gives a sample
        (batch_size=None): each leaf without the batch dimension (a view), a Python
        number back as that number, a tuple as a list (torch's way too)."""
        leaves = []
        for f in self.fields:
            t = tensors[f.name]
            if f.variable:
                t = _variable_leaf(f, t, lengths[f.name], False)[0]
            else:
                t = t[0]
            if f.python in (str, bytes):
                t = _text(f, t)
            elif f.python is not None:
                t = f.python(t.item())
            leaves.append(t)
        return _build(self.tree, leaves)


# Python leaves rebuilt as themselves (numbers only under batch_size=None).
_PYTHON_LEAVES = (bool, int, float, str, bytes)


def _text(f, row):
    """A str or bytes leaf back from its row of bytes in the slot."""
    raw = row.numpy().tobytes() if hasattr(row, "numpy") else row.tobytes()
    return raw.decode("utf-8") if f.python is str else raw


def _check_shape(f, array, index):
    if not f.variable:
        if array.shape != f.shape:
            raise DataError("sample %d %s is %s %s; the layout says %s %s (a field whose "
                            "shape varies between samples needs variable_fields=[%r])"
                            % (index, f.path, f.dtype, array.shape, f.dtype, f.shape,
                               f.path))
        return
    if array.ndim != len(f.shape) or array.shape[1:] != f.shape[1:]:
        raise DataError("sample %d %s is %s %s; the variable field's shape is (n, %s)"
                        % (index, f.path, f.dtype, array.shape,
                           ", ".join(map(str, f.shape[1:]))))
    if array.shape[0] > f.shape[0]:
        raise DataError("sample %d %s holds %d bytes (shape %s), over the field's budget "
                        "of %d bytes (variable_bytes)" % (
                            index, f.path, array.nbytes, array.shape,
                            int(np.prod(f.shape)) * _itemsize(f.dtype)))


def _itemsize(dtype):
    return 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize


def _make_variable(f, indices, shapes, budget):
    ranks = {len(s) for s in shapes}
    if ranks != {len(f.shape)} or not f.shape or len({s[1:] for s in shapes}) > 1:
        raise ConfigError("%s has shapes %s in the first samples; a variable field may "
                          "vary in its first dimension only" % (f.path, sorted(set(shapes))))
    row = int(np.prod(f.shape[1:], dtype=np.int64)) * _itemsize(f.dtype)
    longest = max(s[0] for s in shapes)
    if f.variable:  # declared with its largest shape
        return
    capacity = budget // row if row else 0
    if capacity < max(longest, 1):
        index = indices[[s[0] for s in shapes].index(longest)]
        raise ConfigError("sample %d %s needs %d bytes (shape %s) but variable_bytes is "
                          "%d" % (index, f.path, longest * row, (longest,) + f.shape[1:],
                                  budget))
    f.shape = (capacity,) + f.shape[1:]
    f.variable = True


def _variable_leaf(f, t, lengths, pad_variable):
    inner = int(np.prod(f.shape[1:], dtype=np.int64))
    rows = [n // inner if inner else 0 for n in lengths]
    if not pad_variable:
        return [t[i, :rows[i]] for i in range(len(rows))]
    longest = max(rows) if rows else 0
    padded = t[:, :longest].clone() if hasattr(t, "clone") else t[:, :longest].copy()
    for i, n in enumerate(rows):
        padded[i, n:] = 0
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(t, torch.Tensor):
        return padded, torch.tensor(rows, dtype=torch.int64)
    return padded, np.asarray(rows, dtype=np.int64)


def _build(node, leaves, exact=False):
    """The tree of `node` over `leaves`; a tuple becomes a list (default_collate's
    way) unless `exact`."""
    if isinstance(node, Leaf):
        return leaves[node.field]
    values = [_build(child, leaves, exact) for child in node.children]
    if node.kind == "map":
        content = dict(zip(node.keys, values))
        try:
            return node.type(content)
        except TypeError:
            return content
    if node.kind == "namedtuple":
        return node.type(*values)
    if node.kind == "tuple" and exact:
        return tuple(values)
    if node.kind == "tuple" or node.type is list:
        return values
    try:
        return node.type(values)
    except TypeError:
        return values


def _shape_of(value):
    kind = _kind(value)
    if kind is None:
        return "a %s" % type(value).__name__
    if kind == "map":
        return "a %s with keys %s" % (type(value).__name__, list(value.keys()))
    return "a %s of %d" % (type(value).__name__, len(value))


def _shape_of_node(node):
    if node.kind == "map":
        return "a %s with keys %s" % (node.type.__name__, node.keys)
    return "a %s of %d" % (node.type.__name__, len(node.keys))


class Flatten:
    """The worker side: flatten(sample, index) -> [array per field], DataError when
    the sample does not fit the layout. A bfloat16 leaf crosses as its int16 bits.

    Per sample, it first takes the leaves along their key paths with exact type
    checks (a few microseconds for small samples); anything unexpected, including
    a subclass or a conversion that raises, goes to Layout.flatten_arrays, which
    accepts what the layout allows and otherwise names the index and path."""

    def __init__(self, layout):
        self.layout = layout
        self._nodes = []   # (key path, type, len) of every inner node
        self._leaves = []  # key path of every leaf, in field order
        self._walk(layout.tree, ())
        self._expect = [(f.dtype, None if f.variable else f.shape, f)
                        for f in layout.fields]

    def _walk(self, node, path):
        if isinstance(node, Leaf):
            self._leaves.append(path)
            return
        self._nodes.append((path, node.type, len(node.keys)))
        for key, child in zip(node.keys, node.children):
            self._walk(child, path + (key,))

    def __call__(self, sample, index):
        try:
            arrays = self._fast(sample, index)
        except DataError:
            raise
        except Exception:  # noqa: BLE001 (the careful path says what is wrong)
            arrays = None
        if arrays is None:
            return self.layout.flatten_arrays(sample, index)
        return arrays

    def _fast(self, sample, index):
        for path, type_, size in self._nodes:
            node = sample
            for key in path:
                node = node[key]
            if type(node) is not type_ or len(node) != size:
                return None
        out = []
        for path, (dtype, shape, field) in zip(self._leaves, self._expect):
            value = sample
            for key in path:
                value = value[key]
            kind = type(value)
            if kind is np.ndarray or isinstance(value, np.generic):
                array, name = np.asarray(value), None
            elif kind is int:
                array, name = np.asarray(value, dtype=np.int64), None
            elif kind is float:
                array, name = np.asarray(value, dtype=np.float64), None
            elif kind is bool:
                array, name = np.asarray(value, dtype=np.bool_), None
            elif kind is _tensor_type() and value.dtype is not _bfloat16():
                array, name = value.numpy(), None  # raises on CUDA or grad: careful path
            else:  # bfloat16, or something leaf_array refuses
                array, name = leaf_array(value, "sample %d %s" % (index, field.path))
            if (name or array.dtype.name) != dtype or not array.flags.c_contiguous:
                return None
            if shape is None:
                _check_shape(field, array, index)
            elif array.shape != shape:
                return None
            out.append(array)
        return out


def _tensor_type():
    torch = sys.modules.get("torch")
    return torch.Tensor if torch is not None else None


def _bfloat16():
    torch = sys.modules.get("torch")
    return torch.bfloat16 if torch is not None else None


class Collated:
    """A collate_fn's output through the slot. Its tree (learned from the first
    batches) is the same for every batch; each leaf crosses as a flat field of
    its dtype within a byte budget, with a companion int64 field holding its
    shape, so any shape comes back: the last, shorter batch, or a padding
    collate's per-batch length. The engine runs one collated batch per item,
    so every field arrives with a leading dimension of 1."""

    def __init__(self, layout, budgets):
        self.layout = layout
        self.fields = []
        self._budgets = []  # bytes, per leaf
        for f, budget in zip(layout.fields, budgets):
            elements = max(budget // _itemsize(f.dtype), 1)
            self._budgets.append(elements * _itemsize(f.dtype))
            self.fields.append(Field(f.path, f.name, f.dtype, (elements,), True))
            if f.shape:  # a scalar's shape is ()
                self.fields.append(Field(f.path + " shape", _shape_name(f), "int64",
                                         (len(f.shape),)))
        self.names = [f.name for f in self.fields]

    @property
    def tree(self):
        return self.layout.tree

    @classmethod
    def learn(cls, outputs, budget):
        """From collate_fn's outputs [(batch number, output)]: the tree of the first,
        and per leaf a budget of `budget` bytes or twice the largest seen, whichever
        is more. ConfigError when the outputs differ in tree, dtype or rank."""
        layout = Layout.learn(outputs[:1])
        seen = [[] for _ in layout.fields]
        for k, output in outputs:
            arrays = layout.flatten_arrays(output, k, ConfigError, False, "batch")
            for shapes, array in zip(seen, arrays):
                shapes.append(array.shape)
        return cls.of_shapes(layout, [k for k, _ in outputs], seen, budget)

    @classmethod
    def of_shapes(cls, layout, indices, seen, budget):
        """From the tree of the first output (`layout`, as Layout.learn gives it)
        and `seen`, each leaf's shapes in the batches `indices`: per leaf a budget
        of `budget` bytes or twice the largest seen, whichever is more.
        ConfigError when a leaf's rank differs."""
        largest = [0] * len(layout.fields)
        for i, (f, shapes) in enumerate(zip(layout.fields, seen)):
            for k, shape in zip(indices, shapes):
                _check_rank(f, len(shape), k, ConfigError)
                size = int(np.prod(shape, dtype=np.int64)) * _itemsize(f.dtype)
                largest[i] = max(largest[i], size)
        return cls(layout, [max(budget, 2 * n) for n in largest])

    def flatten(self, output, k):
        """The worker side: [flat array, shape] per leaf, or DataError naming the
        batch and the path when the output does not fit."""
        out = []
        arrays = self.layout.flatten_arrays(output, k, DataError, False, "batch")
        for i, (f, array) in enumerate(zip(self.layout.fields, arrays)):
            _check_rank(f, array.ndim, k, DataError)
            capacity = self._budgets[i]
            if array.nbytes > capacity:
                raise DataError("batch %d %s: collate_fn returned %d bytes (shape %s), over "
                                "the field's budget of %d bytes (raise variable_bytes)"
                                % (k, f.path, array.nbytes, array.shape, capacity))
            out.append(array.reshape(-1))
            if f.shape:
                out.append(np.asarray(array.shape, dtype=np.int64))
        return out

    def __call__(self, output, k):  # as PythonDataset calls its flatten
        return self.flatten(output, k)

    def build(self, tensors, lengths, pad_variable=False):
        """The collated batch from the engine's one-item batch."""
        leaves = []
        for f in self.layout.fields:
            flat = tensors[f.name][0][:lengths[f.name][0]]
            shape = [int(d) for d in tensors[_shape_name(f)][0]] if f.shape else []
            if f.python in (str, bytes):  # a str the collate_fn returned, as it was
                leaves.append(_text(f, flat))
            elif f.python is not None:
                leaves.append(f.python(flat.reshape(shape).item()))
            else:
                leaves.append(flat.reshape(shape))  # a view: the slice is contiguous
        return _build(self.layout.tree, leaves, exact=True)


def _shape_name(field):
    return field.name + " shape"


def _check_rank(f, ndim, k, error):
    if ndim != len(f.shape):
        raise error("batch %d %s: collate_fn returned a %d-dimensional array where the "
                    "first batches had %d dimensions" % (k, f.path, ndim, len(f.shape)))
