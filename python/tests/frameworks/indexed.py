"""The data set the framework scripts train on: sample i is (4 features drawn
from a generator seeded with i, i), so every batch says which samples it holds."""
import torch


class Indexed(torch.utils.data.Dataset):
    def __init__(self, size=64):
        self.size = size

    def __len__(self):
        return self.size

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(4, generator=g), i
