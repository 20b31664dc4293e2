#!/usr/bin/env python3
"""Side-by-side throughput: PyTorch's DataLoader vs seedloader on one JPEG pipeline.

Generates a deterministic ImageFolder of JPEGs, then, in one invocation and
alternating between the two loaders, measures samples/s for W = 0, 1, 2, ... workers
on RandomResizedCrop(224) + RandomHorizontalFlip + ToTensor + Normalize(imagenet),
batch 64. Prints a table, writes bench/results/compare_torch.json and
bench/results/compare_torch.png (samples/s vs workers, both loaders, and the ideal
line W x the single-process rate).

Run with Debian's Python: /usr/bin/python3 bench/compare_torch.py [--images 2000]
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def make_image_folder(root, n_images, width=320, height=240, classes=10):
    """Deterministic JPEGs: smooth gradients plus blocks, per-index seeds."""
    from PIL import Image

    marker = os.path.join(root, ".complete-%d-%dx%d" % (n_images, width, height))
    if os.path.exists(marker):
        return
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(2024)))
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    for i in range(n_images):
        cls = i % classes
        d = os.path.join(root, "class_%02d" % cls)
        os.makedirs(d, exist_ok=True)
        a, b, c = rng.random(3) * 255
        img = np.stack([(xx / width) * a, (yy / height) * b,
                        ((xx + yy) / (width + height)) * c], axis=-1)
        noise = rng.integers(0, 40, size=(height // 8, width // 8, 3))
        img += np.kron(noise, np.ones((8, 8, 1)))
        Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(
            os.path.join(d, "%06d.jpg" % i), quality=90)
    open(marker, "w").close()


def pss_bytes(pid):
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


class PeakMemory:
    """Samples main RSS-equivalent PSS plus the workers' PSS every 50 ms."""

    def __init__(self, pid):
        self.pid, self.peak, self._stop = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            total = pss_bytes(self.pid) + sum(pss_bytes(c) for c in children(self.pid))
            self.peak = max(self.peak, total)
            time.sleep(0.05)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def run_torch(root, workers, batches, warmup, batch_size):
    import torch
    import torchvision
    from torchvision import transforms as T

    torch.manual_seed(0)
    tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                    T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    ds = torchvision.datasets.ImageFolder(root, transform=tf)
    loader = torch.utils.data.DataLoader(
        ds, batch_size=batch_size, shuffle=True, num_workers=workers,
        persistent_workers=workers > 0, drop_last=True)
    done, seen, start = 0, 0, None
    with PeakMemory(os.getpid()) as mem:
        while done < warmup + batches:
            for images, _ in loader:
                done += 1
                if done == warmup:
                    start = time.perf_counter()
                elif done > warmup:
                    seen += images.shape[0]
                if done >= warmup + batches:
                    break
        elapsed = time.perf_counter() - start
    return {"samples_per_s": seen / elapsed, "peak_memory_bytes": mem.peak}


def run_seedloader(binary, root, workers, batches, warmup, batch_size):
    cmd = [binary, "--data", "imagefolder:" + root,
           "--transform", "rrc:224,hflip,normalize:imagenet",
           "--batch-size", str(batch_size), "--workers", str(workers),
           "--batches", str(batches), "--warmup", str(warmup), "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def plot(results, cores, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ws = sorted({r["workers"] for r in results})
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, marker in (("torch", "o"), ("seedloader", "s")):
        ys = [next(r[name]["samples_per_s"] for r in results if r["workers"] == w) for w in ws]
        ax.plot(ws, ys, marker=marker, label=name)
    base = next(r["seedloader"]["samples_per_s"] for r in results if r["workers"] == 0)
    ideal = [base * max(w, 1) for w in ws]
    ax.plot(ws, ideal, linestyle="--", color="grey", label="ideal (W x single process)")
    ax.set_xlabel("workers")
    ax.set_ylabel("samples/s")
    ax.set_xticks(ws)
    ax.set_title("RRC(224)+flip+normalize, batch 64, %d cores" % cores)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--images", type=int, default=2000)
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--max-workers", type=int, default=max(2, os.cpu_count() or 2))
    p.add_argument("--data-dir", default=os.path.join(ROOT, "build", "compare-imagefolder"))
    p.add_argument("--binary", default=os.path.join(ROOT, "build", "default", "tools",
                                                    "seedloader_bench", "seedloader-bench"))
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    args = p.parse_args()
    if not os.path.exists(args.binary):
        sys.exit("compare_torch: %s not found; build first (scripts/build.sh)" % args.binary)
    make_image_folder(args.data_dir, args.images)
    os.makedirs(args.out, exist_ok=True)
    results = []
    for w in range(0, args.max_workers + 1):
        torch_r = run_torch(args.data_dir, w, args.batches, args.warmup, args.batch_size)
        sl_r = run_seedloader(args.binary, args.data_dir, w, args.batches, args.warmup,
                              args.batch_size)
        results.append({"workers": w, "torch": torch_r, "seedloader": sl_r})
        print("W=%d  torch %8.1f samples/s  seedloader %8.1f samples/s  ratio %.2fx" %
              (w, torch_r["samples_per_s"], sl_r["samples_per_s"],
               sl_r["samples_per_s"] / torch_r["samples_per_s"]), flush=True)
    machine = "%s, %d cores, %s" % (cpu_model(), os.cpu_count() or 0, platform.platform())
    print("\n| workers | PyTorch samples/s | seedloader samples/s | ratio | peak MB torch | peak MB seedloader |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in results:
        print("| %d | %.0f | %.0f | %.2fx | %.0f | %.0f |" % (
            r["workers"], r["torch"]["samples_per_s"], r["seedloader"]["samples_per_s"],
            r["seedloader"]["samples_per_s"] / r["torch"]["samples_per_s"],
            r["torch"]["peak_memory_bytes"] / 2**20,
            r["seedloader"].get("peak_memory_bytes", 0) / 2**20))
    print("\nmachine: " + machine)
    with open(os.path.join(args.out, "compare_torch.json"), "w") as f:
        json.dump({"machine": machine, "images": args.images, "batch_size": args.batch_size,
                   "results": results}, f, indent=1)
    plot(results, os.cpu_count() or 0, os.path.join(args.out, "compare_torch.png"))
    print("wrote %s/compare_torch.json and compare_torch.png" % args.out)


if __name__ == "__main__":
    main()
