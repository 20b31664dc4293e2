#!/usr/bin/env python3
"""Keeping batches: the cost per batch when each batch is dropped before the next
(the training loop) and when every batch of an epoch is kept (list(loader)),
seedloader beside PyTorch's DataLoader.

Both loaders read the same Python map dataset (sample i: a float32 [3, 64, 64]
tensor and an int, so a batch of 32 is 1.5 MiB), with 2 persistent workers and
prefetch_factor 2. seedloader has 2 x 3 slots: a kept epoch of N batches moves
N - 6 of them to private memory (one copy each), which is what keeping costs it;
with its slots pinned (shared_memory() taken before the workers fork, as pinning
for CUDA does, here without CUDA) the kept batches stay and the slots go on in
spare blocks instead, no copy. PyTorch's loader copies every batch through its
queues either way. Each round
runs the four (loader x mode) once, in a rotating order; figures are medians of
the rounds, ratios medians of per-round ratios. Prints a table and the ratio lines
docs/performance.md quotes, writes bench/results/kept_batches.json.

Run: build/venv/bin/python bench/kept_batches.py [--quick]
"""
import argparse
import sys
import time

import pybench


class Images:
    """Sample i: (a [3, 64, 64] float32 tensor of one pre-made pool, i)."""

    def __init__(self, torch, n):
        self.n = n
        self.pool = torch.rand(16, 3, 64, 64, generator=torch.Generator().manual_seed(0))

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.pool[i % 16], i


def epoch_seconds(loader, keep):
    """Seconds for one epoch, each batch's first pixel read; with keep, every batch
    stays referenced until the epoch's end (as list(loader) keeps them)."""
    kept = []
    t0 = time.perf_counter()
    count = 0
    for images, _ in loader:
        images[0, 0, 0, 0].item()
        count += 1
        if keep:
            kept.append(images)
    seconds = time.perf_counter() - t0
    del kept
    return seconds, count


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--samples", type=int, default=8192)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--workers", type=int, default=2)
    pybench.add_run_options(p, rounds=5, quick_help="1 round over 256 samples")
    args = p.parse_args()
    if args.quick:
        args.rounds, args.samples = 1, 256
    sl, missing = pybench.import_seedloader()
    if sl is None:
        sys.exit("kept_batches: seedloader is %s; run with build/venv/bin/python" % missing)
    import torch
    torch.set_num_threads(1)
    dataset = Images(torch, args.samples)
    common = dict(batch_size=args.batch_size, num_workers=args.workers,
                  persistent_workers=True, prefetch_factor=2)
    loaders = {"seedloader": sl.DataLoader(dataset, seed=0, pin_memory=False, **common),
               "seedloader, slots pinned": sl.DataLoader(dataset, seed=0, pin_memory=False,
                                                        **common),
               "PyTorch": torch.utils.data.DataLoader(dataset, **common)}
    # What pin_memory does with CUDA before any worker forks, minus the CUDA call.
    loaders["seedloader, slots pinned"]._engine().shared_memory()
    for loader in loaders.values():  # warm-up: workers started, layout learned
        epoch_seconds(loader, keep=True)
    runs = {(name, mode): [] for name in loaders for mode in ("dropped", "kept")}
    order = list(runs)
    for rnd in range(args.rounds):
        shift = rnd % len(order)
        for name, mode in order[shift:] + order[:shift]:
            seconds, count = epoch_seconds(loaders[name], keep=mode == "kept")
            runs[name, mode].append(1e3 * seconds / count)
        print("round %d/%d  " % (rnd + 1, args.rounds) + "  ".join(
            "%s %s %.3f" % (n, m, runs[n, m][-1]) for n, m in order) + " ms/batch",
            flush=True)
    for loader in loaders.values():
        getattr(loader, "close", lambda: None)()

    def ratio(a, b):
        return [x / y for x, y in zip(runs[a], runs[b])]

    batch_mib = args.batch_size * 3 * 64 * 64 * 4 / 2**20
    print("\n%d samples, batch %d (%.1f MiB), %d workers; medians of %d rounds"
          % (args.samples, args.batch_size, batch_mib, args.workers, args.rounds))
    print("| loader | ms/batch, each dropped | ms/batch, every batch kept |")
    print("| --- | --- | --- |")
    for name in loaders:
        print("| %s | %.3f | %.3f |" % (name, pybench.median(runs[name, "dropped"]),
                                        pybench.median(runs[name, "kept"])))
    lines = [
        pybench.ratio_line("seedloader kept / dropped",
                           ratio(("seedloader", "kept"), ("seedloader", "dropped"))),
        pybench.ratio_line("seedloader with slots pinned, kept / dropped",
                           ratio(("seedloader, slots pinned", "kept"),
                                 ("seedloader, slots pinned", "dropped"))),
        pybench.ratio_line("PyTorch kept / dropped",
                           ratio(("PyTorch", "kept"), ("PyTorch", "dropped"))),
        pybench.ratio_line("PyTorch / seedloader, dropped",
                           ratio(("PyTorch", "dropped"), ("seedloader", "dropped"))),
        pybench.ratio_line("PyTorch / seedloader, kept",
                           ratio(("PyTorch", "kept"), ("seedloader", "kept"))),
    ]
    print("\n".join(lines))
    path = pybench.write_json(pybench.results_dir(args), "kept_batches", {
        "machine": pybench.machine(), "samples": args.samples,
        "batch_size": args.batch_size, "workers": args.workers, "rounds": args.rounds,
        "ms_per_batch": {"%s %s" % k: v for k, v in runs.items()}, "ratios": lines})
    print("wrote", path)


if __name__ == "__main__":
    main()
