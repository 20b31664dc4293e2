"""Datasets the audit and seed_worker tests share: generators where real
pipelines keep them."""
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
