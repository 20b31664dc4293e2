#!/usr/bin/env python3
"""Tiny batches (256 ints) from Python: seedloader vs PyTorch's DataLoader.

Every batch is 256 int64 scalars (batch_size=256 of one-int samples, shuffled,
drop_last, persistent workers), iterated from Python with 2 workers, so what is
measured is each loader's cost per batch, not the data's. Four loaders over the
same N ints:
  seedloader C++     seedloader.DataLoader(seedloader.TensorFile(<N int64>.safetensors))
  seedloader Python  seedloader.DataLoader(Ints(values)), Ints a Python map dataset
  PyTorch Tensor     torch DataLoader(TensorDataset(torch.from_numpy(values)))
  PyTorch Python     torch DataLoader(Ints(values))
Each round runs the four once, alternating, each timed for --seconds after a
warm-up; figures are medians of the rounds and ratios are medians of the
per-round ratios. Prints a table and README-ready ratio lines, writes
bench/results/python_tiny_batches.json.

Run: build/venv/bin/python bench/python_tiny_batches.py [--quick]
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

import pybench


class Ints:
    """One int64 scalar per sample: {"x": values[index]}. Serves both loaders."""

    fields = {"x": ((), "int64")}  # seedloader's layout, so sample 0 is not read

    def __init__(self, values):
        self.values = values

    def __len__(self):
        return len(self.values)

    def __getitem__(self, index):
        return {"x": self.values[index]}


def write_safetensors(path, name, values):
    """One I64 tensor in the safetensors format: an 8-byte little-endian header
    length, the JSON header (padded to 8 bytes), then the data."""
    data = np.ascontiguousarray(values, dtype="<i8")
    header = json.dumps({name: {"dtype": "I64", "shape": [len(data)],
                                "data_offsets": [0, data.nbytes]}},
                        separators=(",", ":")).encode()
    header += b" " * (-len(header) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(header)))
        f.write(header)
        f.write(data.tobytes())
    os.replace(tmp, path)


def seedloader_run(sl, dataset, args):
    loader = sl.DataLoader(dataset, batch_size=args.batch_size, num_workers=args.workers,
                           shuffle=True, seed=0, drop_last=True,
                           persistent_workers=args.workers > 0)

    def epoch_batches(epoch):
        loader.set_epoch(epoch)
        for batch in loader:
            yield batch["x"].shape[0]

    try:
        return pybench.measure(epoch_batches, args.warmup, seconds=args.seconds)
    finally:
        loader.close()


def torch_run(torch, dataset, args, unpack):
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=args.batch_size, num_workers=args.workers, shuffle=True,
        drop_last=True, persistent_workers=args.workers > 0)

    def epoch_batches(epoch):
        for batch in loader:
            yield unpack(batch).shape[0]

    result = pybench.measure(epoch_batches, args.warmup, seconds=args.seconds)
    loader = None
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--samples", type=int, default=1 << 22, help="N ints in the dataset")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seconds", type=float, default=1.0, help="timed seconds per measurement")
    p.add_argument("--warmup", type=int, default=20, help="untimed batches first")
    p.add_argument("--data-dir", default=os.path.join(pybench.ROOT, "build", "tiny-ints"))
    pybench.add_run_options(p, rounds=7, quick_help="1 round of 0.1 s each")
    args = p.parse_args()
    if args.quick:
        args.rounds, args.seconds, args.warmup = 1, 0.1, 5
    out = pybench.results_dir(args)
    sl, missing = pybench.import_seedloader()
    if sl is None:
        sys.exit("python_tiny_batches: seedloader is %s; run with build/venv/bin/python"
                 % missing)
    import torch

    values = np.random.default_rng(2024).integers(0, 1 << 62, size=args.samples,
                                                  dtype=np.int64)
    os.makedirs(args.data_dir, exist_ok=True)
    path = os.path.join(args.data_dir, "ints-%d.safetensors" % args.samples)
    write_safetensors(path, "x", values)

    contenders = {
        "seedloader C++ (TensorFile)": lambda w: seedloader_run(sl, sl.TensorFile(path), args),
        "seedloader Python dataset": lambda w: seedloader_run(sl, Ints(values), args),
        "PyTorch TensorDataset": lambda w: torch_run(
            torch, torch.utils.data.TensorDataset(torch.from_numpy(values)), args,
            lambda b: b[0]),
        "PyTorch Python dataset": lambda w: torch_run(torch, Ints(values), args,
                                                    lambda b: b["x"]),
    }
    names = list(contenders)
    by_workers = pybench.alternate(contenders, [args.workers], args.rounds, "batches_per_s")
    runs = {n: by_workers[n, args.workers] for n in names}

    def ratios(num, den):
        return pybench.ratios(runs[num], runs[den], "batches_per_s")

    pairs = [("seedloader C++ (TensorFile)", "PyTorch TensorDataset"),
             ("seedloader Python dataset", "PyTorch Python dataset"),
             ("seedloader Python dataset", "PyTorch TensorDataset")]
    medians = {n: pybench.median([r["batches_per_s"] for r in runs[n]]) for n in names}
    print("\nbatch %d x int64, %d workers, %d ints; medians of %d alternating rounds, "
          "%.1f s each" % (args.batch_size, args.workers, args.samples, args.rounds,
                           args.seconds))
    print("| loader | batches/s | samples/s | us/batch |")
    print("| --- | --- | --- | --- |")
    for n in names:
        print("| %s | %.0f | %.0f | %.1f |" % (n, medians[n], medians[n] * args.batch_size,
                                             1e6 / medians[n]))
    print()
    for num, den in pairs:
        print(pybench.ratio_line("%s / %s" % (num, den), ratios(num, den)))
    machine = pybench.machine()
    print("\nmachine: " + machine)
    written = pybench.write_json(out, "python_tiny_batches", {
        "machine": machine, "samples": args.samples, "batch_size": args.batch_size,
        "workers": args.workers, "rounds": args.rounds, "seconds": args.seconds,
        "batches_per_s": medians,
        "ratios": {"%s / %s" % pair: pybench.median(ratios(*pair)) for pair in pairs},
        "runs": runs})
    print("wrote " + written)


if __name__ == "__main__":
    main()
