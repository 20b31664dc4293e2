"""Records traces from real PyTorch DataLoaders (2 workers) for torch_trace_test.

usage: torch_trace_scenarios.py SCENARIO OUT.jsonl
  own_rng          a dataset keeping its own np.random.default_rng (duplicated per worker)
  seeded           the same dataset, reseeded in worker_init_fn from torch.initial_seed()
  same_seed_ranks  two simulated ranks with the same torch.manual_seed, DistributedSampler
  random_sampler   two simulated ranks, each with a RandomSampler over the whole dataset
  restart_from_start  run 0 fails after 3 batches of epoch 0; run 1 restarts the epoch
                   from its start (what a checkpoint taken per epoch leads to)
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tools"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.utils.data as tud  # noqa: E402
from torch_trace import TraceRecorder  # noqa: E402

SIZE = 16


class OwnRng(tud.Dataset):
    """Augments with a generator object it owns (forked as-is into every worker)."""

    def __init__(self):
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return SIZE

    def __getitem__(self, i):
        return torch.tensor(self.rng.random(3) + i)


class TorchRand(tud.Dataset):
    """Augments with torch's default generator."""

    def __len__(self):
        return SIZE

    def __getitem__(self, i):
        return torch.rand(3) + i


def reseed(worker_id):
    info = tud.get_worker_info()
    info.dataset.rng = np.random.default_rng(np.random.SeedSequence(torch.initial_seed()))


def run_epochs(loader, epochs, sampler=None):
    for epoch in range(epochs):
        if sampler is not None and hasattr(sampler, "set_epoch"):
            sampler.set_epoch(epoch)
        for _ in loader:
            pass


def main(scenario, out):
    if os.path.exists(out):
        os.remove(out)
    if scenario == "own_rng":
        rec = TraceRecorder(out, rank=0, generators=["rng"])
        run_epochs(rec.loader(OwnRng(), batch_size=2, num_workers=2), 1)
    elif scenario == "seeded":
        rec = TraceRecorder(out, rank=0, generators=["rng"])
        torch.manual_seed(0)
        loader = rec.loader(OwnRng(), batch_size=2, shuffle=True, num_workers=2,
                            worker_init_fn=reseed)
        run_epochs(loader, 2)
    elif scenario == "same_seed_ranks":
        for rank in range(2):
            torch.manual_seed(0)
            ds = TorchRand()
            sampler = tud.DistributedSampler(ds, num_replicas=2, rank=rank, seed=0)
            rec = TraceRecorder(out, rank=rank)
            run_epochs(rec.loader(ds, batch_size=2, sampler=sampler, num_workers=2), 2,
                       sampler)
    elif scenario == "random_sampler":
        for rank in range(2):
            torch.manual_seed(100 + rank)
            rec = TraceRecorder(out, rank=rank)
            run_epochs(rec.loader(TorchRand(), batch_size=2, shuffle=True, num_workers=2), 1)
    elif scenario == "restart_from_start":
        for run in range(2):
            torch.manual_seed(0)  # both runs start from the same checkpoint
            rec = TraceRecorder(out, rank=0, run=run)
            loader = rec.loader(TorchRand(), batch_size=2, shuffle=True, num_workers=2)
            for k, _ in enumerate(loader):
                if run == 0 and k == 2:
                    break  # the failure: batches 3 and on are never consumed
    else:
        sys.exit("unknown scenario " + scenario)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
