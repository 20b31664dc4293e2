#!/usr/bin/env python3
"""One Python dataset under PyTorch's DataLoader and under seedloader.DataLoader.

JpegCrops.__getitem__ decodes a JPEG with PIL, then with numpy: a random 224 x 224
crop, a random horizontal flip, float32 CHW, normalised (imagenet mean/std). Its
random numbers come from the numpy Generator seedloader passes as `rng`, or, under
PyTorch, from a per-worker Generator that worker_init_fn seeds from torch's worker
seed (the usual recipe). Same class, same folder of JPEGs (compare_torch.py's
generator), batch 32, shuffled, drop_last, persistent workers, W = 1 and 2.
Each round runs both loaders once per W, alternating; figures are medians of the
rounds and ratios are medians of the per-round ratios. Prints a table and
README-ready ratio lines, writes bench/results/python_dataset_compare.json.

Run: build/venv/bin/python bench/python_dataset_compare.py [--quick] [--samples tuple]
(--samples tuple: the same samples as (image tensor, int) tuples, as torchvision
datasets return them, written to python_dataset_compare_tuple.json)
"""
import argparse
import os
import sys

import numpy as np
from PIL import Image

import pybench
from compare_torch import make_image_folder

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32).reshape(3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32).reshape(3, 1, 1)


class JpegCrops:
    """root/<class>/<image>.jpg as {"image": float32 [3, size, size], "label": int64}.

    __getitem__(index, rng) draws from `rng` (seedloader passes one); called as
    __getitem__(index) (PyTorch), it draws from self.rng, which
    torch_worker_init sets in each worker."""

    def __init__(self, root, size=224):
        classes = sorted(d for d in os.listdir(root)
                         if os.path.isdir(os.path.join(root, d)))
        self.samples = [(os.path.join(root, c, f), label)
                        for label, c in enumerate(classes)
                        for f in sorted(os.listdir(os.path.join(root, c)))]
        self.size = size
        self.fields = {"image": ((3, size, size), "float32"), "label": ((), "int64")}
        self.rng = np.random.default_rng(0)  # the calling process's; workers get their own

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index, rng=None):
        rng = self.rng if rng is None else rng
        path, label = self.samples[index]
        with Image.open(path) as im:
            pixels = np.asarray(im.convert("RGB"))
        h, w, _ = pixels.shape
        s = self.size
        y, x = rng.integers(0, h - s + 1), rng.integers(0, w - s + 1)
        crop = pixels[y:y + s, x:x + s]
        if rng.random() < 0.5:
            crop = crop[:, ::-1]
        chw = crop.transpose(2, 0, 1).astype(np.float32) * np.float32(1 / 255)
        return {"image": np.ascontiguousarray((chw - MEAN) / STD), "label": np.int64(label)}


class TensorTuples(JpegCrops):
    """The same samples as torchvision datasets return them: (image tensor, int
    label), with no declared layout (seedloader learns it at the first iteration)."""

    def __init__(self, root, size=224):
        super().__init__(root, size)
        self.fields = None

    def __getitem__(self, index, rng=None):
        import torch

        sample = super().__getitem__(index, rng)
        return torch.from_numpy(sample["image"]), int(sample["label"])


def batch_size_of(batch):
    return (batch["image"] if isinstance(batch, dict) else batch[0]).shape[0]


def torch_worker_init(worker_id):
    import torch

    info = torch.utils.data.get_worker_info()
    info.dataset.rng = np.random.default_rng(info.seed)


def torch_run(torch, dataset, workers, args):
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=args.batch_size, shuffle=True, num_workers=workers,
        worker_init_fn=torch_worker_init, persistent_workers=True, drop_last=True)

    def epoch_batches(epoch):
        for batch in loader:
            yield batch_size_of(batch)

    result = pybench.measure(epoch_batches, args.warmup, batches=args.batches)
    loader = None
    return result


def seedloader_run(sl, dataset, workers, args):
    loader = sl.DataLoader(dataset, batch_size=args.batch_size, shuffle=True,
                           num_workers=workers, seed=0, persistent_workers=True,
                           drop_last=True)

    def epoch_batches(epoch):
        loader.set_epoch(epoch)
        for batch in loader:
            yield batch_size_of(batch)

    try:
        return pybench.measure(epoch_batches, args.warmup, batches=args.batches)
    finally:
        loader.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--images", type=int, default=2000)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--batches", type=int, default=24, help="timed batches per measurement")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--data-dir", default=os.path.join(pybench.ROOT, "build",
                                                      "compare-imagefolder"))
    p.add_argument("--samples", choices=["dict", "tuple"], default="dict",
                   help="dict: {'image': array, 'label': int64} with a declared layout; "
                        "tuple: (image tensor, int), as torchvision datasets return")
    pybench.add_run_options(p, rounds=5, quick_help="1 round, 3 batches")
    args = p.parse_args()
    if args.quick:
        args.rounds, args.batches, args.warmup = 1, 3, 1
    out = pybench.results_dir(args)
    sl, missing = pybench.import_seedloader()
    if sl is None:
        sys.exit("python_dataset_compare: seedloader is %s; run with build/venv/bin/python"
                 % missing)
    import torch

    make_image_folder(args.data_dir, args.images)
    dataset = (TensorTuples if args.samples == "tuple" else JpegCrops)(args.data_dir)
    contenders = {"PyTorch": lambda w: torch_run(torch, dataset, w, args),
                  "seedloader": lambda w: seedloader_run(sl, dataset, w, args)}
    names = list(contenders)
    runs = pybench.alternate(contenders, args.workers, args.rounds, "samples_per_s")

    def ratios(w):
        return pybench.ratios(runs["seedloader", w], runs["PyTorch", w], "samples_per_s")

    medians = {"%s W=%d" % (n, w): pybench.median([r["samples_per_s"] for r in runs[n, w]])
               for n in names for w in args.workers}
    cpu = {"%s W=%d" % (n, w): pybench.median([r["main_cpu_us_per_batch"]
                                                for r in runs[n, w]])
           for n in names for w in args.workers}
    print("\n%s (PIL decode + numpy crop/flip/normalise) as %s samples, batch %d, %d "
          "images; medians of %d alternating rounds, %d timed batches each"
          % (type(dataset).__name__, args.samples, args.batch_size, len(dataset),
             args.rounds, args.batches))
    print("| workers | PyTorch samples/s | seedloader samples/s | seedloader/PyTorch "
          "| main CPU per batch, PyTorch | main CPU per batch, seedloader |")
    print("| --- | --- | --- | --- | --- | --- |")
    for w in args.workers:
        print("| %d | %.0f | %.0f | %.2fx | %.0f us | %.0f us |" % (
            w, medians["PyTorch W=%d" % w], medians["seedloader W=%d" % w],
            pybench.median(ratios(w)), cpu["PyTorch W=%d" % w],
            cpu["seedloader W=%d" % w]))
    print()
    for w in args.workers:
        print(pybench.ratio_line("seedloader/PyTorch, same Python dataset (%s samples), "
                                 "W=%d" % (args.samples, w), ratios(w)))
    machine = pybench.machine()
    print("\nmachine: " + machine)
    name = "python_dataset_compare" + ("_tuple" if args.samples == "tuple" else "")
    written = pybench.write_json(out, name, {
        "machine": machine, "images": len(dataset), "batch_size": args.batch_size,
        "rounds": args.rounds, "batches": args.batches, "warmup": args.warmup,
        "samples": args.samples, "samples_per_s": medians, "main_cpu_us_per_batch": cpu,
        "ratios": {"seedloader/PyTorch W=%d" % w: pybench.median(ratios(w))
                   for w in args.workers},
        "runs": {"%s W=%d" % key: value for key, value in runs.items()}})
    print("wrote " + written)


if __name__ == "__main__":
    main()
