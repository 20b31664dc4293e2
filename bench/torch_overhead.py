#!/usr/bin/python3
"""PyTorch's DataLoader on the job bench/loader_overhead_bench.cc times: a trivial
dataset of int64 samples, 256 per batch, 2 workers. Prints batches/s.
Run with /usr/bin/python3 (Debian's, which has torch)."""
import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Trivial(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batches", type=int, default=2000, help="batches per epoch")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(1)
    loader = DataLoader(Trivial(256 * args.batches), batch_size=256, shuffle=True,
                        num_workers=args.workers, persistent_workers=args.workers > 0,
                        prefetch_factor=4 if args.workers > 0 else None)
    for _ in loader:  # warm-up epoch: starts the workers
        pass
    count = 0
    t0 = time.perf_counter()
    for _ in range(args.epochs):
        for batch in loader:
            count += 1
    dt = time.perf_counter() - t0
    print(f"torch DataLoader: {args.workers} workers, 256 samples/batch: "
          f"{count / dt:.0f} batches/s")


if __name__ == "__main__":
    main()
