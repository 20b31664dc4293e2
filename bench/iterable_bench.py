#!/usr/bin/env python3
"""A Python image stream (an IterableDataset decoding JPEGs with a random
torchvision augmentation in __iter__) through seedloader.DataLoader and through
PyTorch's DataLoader, and what seedloader's duplicate-stream check costs.

The stream splits its files by get_worker_info(), so both loaders read each
image once per epoch; each sample is PIL decode, RandomResizedCrop(224),
RandomHorizontalFlip, ToTensor and Normalize, batched 32 at a time, 2 workers,
persistent. Three contenders, each timed over whole epochs after a warm-up:
  seedloader            the default, on_duplicate_stream="error" (the check on)
  seedloader, no check  on_duplicate_stream="off"
  PyTorch               torch.utils.data.DataLoader
The check's own work is also timed apart: fingerprinting one first batch
(what each worker does once per epoch) against an epoch's time.

Run: build/venv/bin/python bench/iterable_bench.py [--quick]
"""
import argparse
import glob
import os
import sys
import time

import pybench


def image_stream(files):
    import torch.utils.data as tud
    import torchvision.transforms as T
    from PIL import Image

    class ImageStream(tud.IterableDataset):
        """JPEG files, split by worker, decoded and randomly augmented."""

        def __init__(self):
            self.files = files
            self.transform = T.Compose([
                T.RandomResizedCrop(224, antialias=True), T.RandomHorizontalFlip(),
                T.ToTensor(), T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])

        def __len__(self):
            return len(self.files)

        def __iter__(self):
            info = tud.get_worker_info()
            worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
            for i in range(worker, len(self.files), workers):
                with Image.open(self.files[i]) as image:
                    yield self.transform(image.convert("RGB")), i % 10

    return ImageStream()


def run(make_loader, epochs, warmup):
    loader = make_loader()

    def epoch_batches(epoch):
        for images, _ in loader:
            yield images.shape[0]

    batches_per_epoch = len(loader)
    result = pybench.measure(epoch_batches, warmup, batches=batches_per_epoch * epochs)
    close = getattr(loader, "close", None)
    if close is not None:
        close()
    return result


def check_cost(dataset):
    """Seconds to fingerprint the samples of a first batch that the check compares,
    its work per worker and epoch (median of 5)."""
    from seedloader import _stream_reader
    samples = []
    for sample in dataset:
        samples.append(sample)
        if len(samples) == _stream_reader.CHECKED_SAMPLES:
            break
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        [_stream_reader.fingerprint(s) for s in samples]
        times.append(time.perf_counter() - t0)
    return pybench.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--images", type=int, default=1024)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--epochs", type=int, default=2, help="timed epochs per measurement")
    p.add_argument("--data-dir", default=os.path.join(pybench.ROOT, "build", "iterable-jpegs"))
    pybench.add_run_options(p, rounds=5, quick_help="64 images, 1 round of 1 epoch")
    args = p.parse_args()
    if args.quick:
        args.images, args.rounds, args.epochs = 64, 1, 1
    out = pybench.results_dir(args)
    sl, missing = pybench.import_seedloader()
    if sl is None:
        sys.exit("iterable_bench: seedloader is %s; run with build/venv/bin/python" % missing)
    import torch

    folder = os.path.join(args.data_dir, str(args.images))
    pybench.make_image_folder(folder, args.images)
    files = sorted(glob.glob(os.path.join(folder, "*", "*.jpg")))
    dataset = image_stream(files)
    warmup = max(2, args.workers)
    common = dict(batch_size=args.batch_size, num_workers=args.workers,
                  persistent_workers=True)
    contenders = {
        "seedloader": lambda w: run(lambda: sl.DataLoader(dataset, seed=0, **common),
                                    args.epochs, warmup),
        "seedloader, no check": lambda w: run(
            lambda: sl.DataLoader(dataset, seed=0, on_duplicate_stream="off", **common),
            args.epochs, warmup),
        "PyTorch": lambda w: run(lambda: torch.utils.data.DataLoader(dataset, **common),
                                 args.epochs, warmup),
    }
    names = list(contenders)
    by_workers = pybench.alternate(contenders, [args.workers], args.rounds, "samples_per_s")
    runs = {n: by_workers[n, args.workers] for n in names}
    medians = {n: pybench.median([r["samples_per_s"] for r in runs[n]]) for n in names}
    pairs = [("seedloader", "PyTorch"), ("seedloader", "seedloader, no check")]
    ratios = {"%s / %s" % pair: pybench.ratios(runs[pair[0]], runs[pair[1]], "samples_per_s")
              for pair in pairs}
    fingerprint_s = check_cost(dataset)
    epoch_s = args.images / medians["seedloader"]
    print("\n%d JPEGs 320x240 -> 3x224x224 float32, batch %d, %d workers; medians of %d "
          "alternating rounds, %d epochs each" % (args.images, args.batch_size, args.workers,
                                                  args.rounds, args.epochs))
    print("| loader | samples/s | trainer CPU us/batch |")
    print("| --- | --- | --- |")
    for n in names:
        print("| %s | %.0f | %.0f |" % (n, medians[n], pybench.median(
            [r["main_cpu_us_per_batch"] for r in runs[n]])))
    print()
    for what, values in ratios.items():
        print(pybench.ratio_line(what, values))
    share = 100 * fingerprint_s / epoch_s
    print("check: fingerprinting a first batch's first samples %.2f ms, once per worker and epoch in the "
          "worker; %.3f%% of an epoch of %.2f s" % (fingerprint_s * 1e3, share, epoch_s))
    machine = pybench.machine()
    print("\nmachine: " + machine)
    written = pybench.write_json(out, "iterable_bench", {
        "machine": machine, "images": args.images, "batch_size": args.batch_size,
        "workers": args.workers, "rounds": args.rounds, "epochs": args.epochs,
        "samples_per_s": medians,
        "ratios": {k: pybench.median(v) for k, v in ratios.items()},
        "fingerprint_seconds_per_batch": fingerprint_s, "epoch_seconds": epoch_s,
        "runs": runs})
    print("wrote " + written)


if __name__ == "__main__":
    main()
