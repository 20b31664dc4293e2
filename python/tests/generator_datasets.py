"""Datasets the audit and seed_worker tests share: generators where real
pipelines keep them; and a sampler yielding what each epoch is given."""
import numpy as np
import torch
import torch.utils.data as tud

SIZE = 16


class Jitter:
    """An albumentations-style transform holding its own generator."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def __call__(self, x):
        return x + self.rng.random()


class NestedRng(tud.Dataset):
    """Augments with a generator nested in a transform: dataset.tf.rng."""

    def __init__(self):
        self.tf = Jitter(0)

    def __len__(self):
        return SIZE

    def __getitem__(self, i):
        return torch.tensor(self.tf(float(i)))


class Yields:
    """A sampler (or batch sampler) yielding `epochs[e]` in its e-th iteration."""

    def __init__(self, *epochs):
        self.epochs, self.calls = epochs, 0

    def __iter__(self):
        items = self.epochs[min(self.calls, len(self.epochs) - 1)]
        self.calls += 1
        return iter(items)

    def __len__(self):
        return len(self.epochs[0])
