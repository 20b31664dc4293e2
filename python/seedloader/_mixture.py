"""seedloader.Mixture: several data sets read as one, by weight, the weights on a
schedule of global steps (docs/datasets.md, "Mixtures"; the composition and the
order are the engine's: seedloader/mixture.h, mixture_dataset.h)."""
import numbers

from seedloader import _checks
from seedloader._errors import ConfigError


class Mixture:
    """A data set to seedloader.DataLoader drawn from `sources` by weight.

    sources: {name: data set}, each a map-style data set the loader takes:
        seedloader's own (ImageFolder, TarShards, ...), Python ones, or both, with
        one sample layout (beside seedloader's own, a Python source's samples are
        dicts of their fields).
    weights: {name: weight}, or a schedule: [(global_step, {name: weight})], the
        first at step 0, each point in force until the next (piecewise constant).
        Every source is named at every point; a weight of 0 pauses a source.
    interpolate: True: the weights ramp linearly from one point to the next
        (exact per step over up to 4096 steps, in at most 4096 stairs beyond);
        False (the default): each point's weights hold until the next.
    samples_per_epoch: the loader epoch's length (default: the sum of the
        sources' sizes); the epoch holds ceil(samples_per_epoch / G) global
        batches of G = batch_size * world_size, and each source goes on where the
        last epoch left it.

    Its indices are the sources' end to end (source s's sample i is the sum of
    the sizes before s, plus i): `mixture[i]` reads that sample, `locate(i)` says
    whose it is (indexing reads Python sources; seedloader's own are read by the
    loader's engine). loader.last_indices gives (name, index) pairs.
    The loader's options work over it as over one data set: on_bad_sample="skip"
    replaces a bad sample from its own source, MixUp/CutMix pair across ranks as
    in the whole global batch, and a collate_fn (Python sources) gets each sample
    read with its source's stream. A sampler or batch_sampler is refused: a
    Mixture sets its own order."""

    def __init__(self, sources, weights, samples_per_epoch=None, interpolate=False):
        if not isinstance(sources, dict) or not sources:
            raise ConfigError("Mixture: sources must be a non-empty dict of name -> data "
                              "set, got %r" % (type(sources).__name__,))
        for name in sources:
            if not isinstance(name, str) or not name:
                raise ConfigError("Mixture: a source's name must be a non-empty str, got %r"
                                  % (name,))
        self.sources = dict(sources)
        self.names = list(self.sources)
        self.points = _schedule(weights, self.names)
        self.interpolate = _checks.boolean(interpolate, "Mixture: interpolate")
        from seedloader import _core
        _core.check_mixture_schedule(self.names, self.points, self.interpolate)
        self.sizes = []
        for name in self.names:
            dataset = self.sources[name]
            if not isinstance(dataset, _core.Dataset) and (
                    not hasattr(dataset, "__len__") or not hasattr(dataset, "__getitem__")):
                raise ConfigError("Mixture: source %r (%s) is not a map-style data set "
                                  "(len() and indexing)" % (name, type(dataset).__name__))
            size = len(dataset)
            if size == 0:
                raise ConfigError("Mixture: source %r (%s) is empty"
                                  % (name, type(dataset).__name__))
            self.sizes.append(size)
        total = sum(self.sizes)
        if samples_per_epoch is None:
            samples_per_epoch = total
        self.samples_per_epoch = _checks.integer(samples_per_epoch,
                                                 "Mixture: samples_per_epoch", 1)
        self.offsets = [0]
        for size in self.sizes:
            self.offsets.append(self.offsets[-1] + size)

    def __len__(self):
        return self.offsets[-1]

    def locate(self, index):
        """(source name, index within it) of mixture index `index`."""
        index = _checks.integer(index, "Mixture.locate: index")
        if index >= len(self):
            raise IndexError("Mixture index %d is past its %d samples" % (index, len(self)))
        s = next(s for s in range(len(self.names)) if index < self.offsets[s + 1])
        return self.names[s], index - self.offsets[s]

    def __getitem__(self, index):
        name, local = self.locate(index)
        return self.sources[name][local]

    def __repr__(self):
        return "Mixture(%s)" % ", ".join("%s: %d samples" % (n, s)
                                         for n, s in zip(self.names, self.sizes))

    def history(self):
        """The one segment of a fresh run, as the engine takes it."""
        return [(0, self.names, self.points, [], self.interpolate)]


def _schedule(weights, names):
    """[(step, [weight per source, in `names` order])] from a dict or a list of
    (step, dict) points; a ConfigError names what is wrong."""
    if isinstance(weights, dict):
        weights = [(0, weights)]
    if not isinstance(weights, (list, tuple)) or not weights:
        raise ConfigError("Mixture: weights must be a dict of name -> weight or a list of "
                          "(global_step, {name: weight}) points, got %r" % (weights,))
    points = []
    for point in weights:
        if not isinstance(point, (list, tuple)) or len(point) != 2 or \
                not isinstance(point[1], dict):
            raise ConfigError("Mixture: a schedule point must be (global_step, {name: "
                              "weight}), got %r" % (point,))
        step = _checks.integer(point[0], "Mixture: a schedule point's step")
        given = point[1]
        unknown = sorted(set(given) - set(names), key=str)
        if unknown:
            raise ConfigError("Mixture: the weights at step %d name %s, which is not a "
                              "source (the sources: %s)"
                              % (step, ", ".join(map(repr, unknown)), ", ".join(names)))
        missing = [n for n in names if n not in given]
        if missing:
            raise ConfigError("Mixture: the weights at step %d leave out %s; give every "
                              "source a weight (0 pauses it)"
                              % (step, ", ".join(map(repr, missing))))
        row = []
        for name in names:
            w = given[name]
            if isinstance(w, bool) or not isinstance(w, numbers.Real):
                raise ConfigError("Mixture: the weight of %r at step %d must be a number, "
                                  "got %r" % (name, step, w))
            row.append(float(w))
        points.append((step, row))
    return points
