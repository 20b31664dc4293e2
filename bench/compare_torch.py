#!/usr/bin/env python3
"""Side-by-side throughput: PyTorch's DataLoader vs seedloader on one JPEG pipeline.

Generates a deterministic ImageFolder of JPEGs, then, in one invocation, measures
samples/s for W = 0, 1, 2, ... workers on RandomResizedCrop(224) +
RandomHorizontalFlip + ToTensor + Normalize(imagenet), batch 64, with three
loaders: PyTorch's DataLoader, seedloader's C++ engine (seedloader-bench) and the
same engine driven from Python (seedloader.DataLoader). Each round runs every
loader once per W, alternating; figures are medians of the rounds and ratios are
medians of the per-round ratios. Prints a table and README-ready ratio lines,
writes bench/results/compare_torch.json and bench/results/compare_torch.png
(samples/s vs workers, the three loaders, and the ideal line W x the
single-process rate).

Run with the package's venv: build/venv/bin/python bench/compare_torch.py
An interpreter without seedloader still runs; the Python column reads
"not installed". --quick is a smoke run (figures to build/bench-quick/).
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

import pybench

HERE = pybench.HERE
ROOT = pybench.ROOT
make_image_folder = pybench.make_image_folder


# The peak PSS of a process and its workers (the same tree the other benches
# measure), sampled from outside it (a sampler thread inside a Python loader's
# process would take the GIL from the loop it measures) and twice a second (each
# sample's page-table walk over processes that map torch costs the run a share of
# a core).
PeakMemory = pybench.PeakPss


def _timed(epoch_batches, warmup, batches):
    """Samples/s over `batches` batches after `warmup` untimed ones (which take
    the worker start-up), epoch after epoch; epoch_batches(e) iterates epoch e and
    yields each batch's sample count."""
    done, seen, epoch = 0, 0, 0
    start, cpu = time.perf_counter(), _thread_cpu()
    while done < warmup + batches:
        for n in epoch_batches(epoch):
            done += 1
            if done == warmup:
                start, cpu = time.perf_counter(), _thread_cpu()
            elif done > warmup:
                seen += n
            if done >= warmup + batches:
                break
        epoch += 1
    # The loop's thread, as seedloader-bench reports its consumer thread.
    return {"samples_per_s": seen / (time.perf_counter() - start),
            "main_cpu_s_per_batch": (_thread_cpu() - cpu) / batches}


def _thread_cpu():
    usage = resource.getrusage(resource.RUSAGE_THREAD)
    return usage.ru_utime + usage.ru_stime


def in_child(kind, root, workers, batches, warmup, batch_size):
    """Runs the Python loader `kind` ("torch" or "seedloader_python") in a fresh
    interpreter (this script with --child) and samples its memory from here."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", kind, "--data-dir", root,
           "--child-workers", str(workers), "--batches", str(batches), "--warmup",
           str(warmup), "--batch-size", str(batch_size)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    with PeakMemory(proc.pid, interval=0.5) as mem:
        out, _ = proc.communicate()
    if proc.returncode != 0:
        sys.exit("compare_torch: the %s run (W=%d) failed with exit code %d"
                 % (kind, workers, proc.returncode))
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_memory_bytes"] = mem.peak
    return result


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

    def epoch_batches(epoch):
        for images, _ in loader:
            yield images.shape[0]

    result = _timed(epoch_batches, warmup, batches)
    loader = None  # its workers go before the next contender's memory is read
    return result


def run_seedloader(binary, root, workers, batches, warmup, batch_size):
    cmd = [binary, "--data", "imagefolder:" + root,
           "--transform", "rrc:224,hflip,normalize:imagenet",
           "--batch-size", str(batch_size), "--workers", str(workers),
           "--batches", str(batches), "--warmup", str(warmup), "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def run_seedloader_python(sl, root, workers, batches, warmup, batch_size):
    """The C++ run's pipeline and options (seed 0, shuffle, drop_last, persistent
    workers), iterated from Python through seedloader.DataLoader."""
    ds = sl.ImageFolder(root, transform="rrc:224,hflip,normalize:imagenet")
    loader = sl.DataLoader(ds, batch_size=batch_size, num_workers=workers, shuffle=True,
                           seed=0, drop_last=True, persistent_workers=workers > 0)

    def epoch_batches(epoch):
        loader.set_epoch(epoch)
        for batch in loader:
            yield batch["image"].shape[0]

    try:
        return _timed(epoch_batches, warmup, batches)
    finally:
        loader.close()


def plot(results, cores, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ws = [r["workers"] for r in results]
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, label, marker in (("torch", "PyTorch", "o"), ("seedloader", "seedloader (C++)", "s"),
                                ("seedloader_python", "seedloader (Python)", "^")):
        if not all(isinstance(r[name], dict) for r in results):
            continue  # not installed in this interpreter
        ax.plot(ws, [r[name]["samples_per_s"] for r in results], marker=marker, label=label)
    if 0 in ws:
        base = results[ws.index(0)]["seedloader"]["samples_per_s"]
        ax.plot(ws, [base * max(w, 1) for w in ws], linestyle="--", color="grey",
                label="ideal (W x single process)")
    ax.set_xlabel("workers")
    ax.set_ylabel("samples/s")
    ax.set_xticks(ws)
    ax.set_title("RRC(224)+flip+normalize, batch 64, %d cores" % cores)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def median_run(runs):
    """The run whose samples/s is the median (the upper middle one of an even count),
    with every field its loader reported."""
    return sorted(runs, key=lambda r: r["samples_per_s"])[len(runs) // 2]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--images", type=int, default=2000)
    p.add_argument("--batches", type=int, default=100, help="timed batches per measurement")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--max-workers", type=int, default=max(2, os.cpu_count() or 2))
    p.add_argument("--data-dir", default=os.path.join(ROOT, "build", "compare-imagefolder"))
    p.add_argument("--binary", default=os.path.join(ROOT, "build", "default", "tools",
                                                    "seedloader_bench", "seedloader-bench"))
    pybench.add_run_options(p, rounds=5, quick_help="1 round, W = 0 and 1, 4 batches")
    p.add_argument("--child", choices=["torch", "seedloader_python"],
                   help=argparse.SUPPRESS)  # one measurement, for in_child()
    p.add_argument("--child-workers", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        run = run_torch if args.child == "torch" else (
            lambda *a: run_seedloader_python(pybench.import_seedloader()[0], *a))
        print(json.dumps(run(args.data_dir, args.child_workers, args.batches, args.warmup,
                             args.batch_size)))
        return
    if args.quick:
        args.rounds, args.batches, args.warmup, args.max_workers = 1, 4, 1, 1
    out = pybench.results_dir(args)
    if not os.path.exists(args.binary):
        sys.exit("compare_torch: %s not found; build first (scripts/build.sh)" % args.binary)
    sl, sl_missing = pybench.import_seedloader()
    if sl_missing:
        print("seedloader (Python): %s; its column reads 'not installed'" % sl_missing,
              file=sys.stderr)
    make_image_folder(args.data_dir, args.images)
    workers = list(range(0, args.max_workers + 1))
    contenders = {
        "torch": lambda w: in_child("torch", args.data_dir, w, args.batches, args.warmup,
                                    args.batch_size),
        "seedloader": lambda w: run_seedloader(args.binary, args.data_dir, w, args.batches,
                                               args.warmup, args.batch_size),
    }
    if sl is not None:
        contenders["seedloader_python"] = lambda w: in_child(
            "seedloader_python", args.data_dir, w, args.batches, args.warmup,
            args.batch_size)
    names = list(contenders)
    runs = pybench.alternate(contenders, workers, args.rounds, "samples_per_s")

    def ratios(num, den, w):
        return pybench.ratios(runs[num, w], runs[den, w], "samples_per_s")

    results = []
    for w in workers:
        r = {"workers": w, "torch": median_run(runs["torch", w]),
             "seedloader": median_run(runs["seedloader", w]),
             "ratio_seedloader_over_torch": pybench.median(ratios("seedloader", "torch", w)),
             "samples_per_s_rounds": {n: [x["samples_per_s"] for x in runs[n, w]]
                                      for n in names}}
        if sl is None:
            r["seedloader_python"] = "not installed"
        else:
            r["seedloader_python"] = median_run(runs["seedloader_python", w])
            r["ratio_python_over_cpp"] = pybench.median(
                ratios("seedloader_python", "seedloader", w))
        results.append(r)

    def cell(r, key, fmt):
        return fmt % r[key] if key in r else "not installed"

    print("\nmedians of %d alternating rounds, %d timed batches of %d each" %
          (args.rounds, args.batches, args.batch_size))
    print("| workers | PyTorch samples/s | seedloader C++ samples/s | seedloader Python "
          "samples/s | C++/PyTorch | Python/C++ | peak MB torch | peak MB seedloader C++ "
          "| peak MB seedloader Python |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        py = r["seedloader_python"]
        print("| %d | %.0f | %.0f | %s | %.2fx | %s | %.0f | %.0f | %s |" % (
            r["workers"], r["torch"]["samples_per_s"], r["seedloader"]["samples_per_s"],
            "%.0f" % py["samples_per_s"] if isinstance(py, dict) else py,
            r["ratio_seedloader_over_torch"], cell(r, "ratio_python_over_cpp", "%.2fx"),
            r["torch"]["peak_memory_bytes"] / 2**20,
            r["seedloader"].get("peak_memory_bytes", 0) / 2**20,
            "%.0f" % (py["peak_memory_bytes"] / 2**20) if isinstance(py, dict) else py))
    print()
    for w in workers:
        print(pybench.ratio_line("seedloader C++/PyTorch, W=%d" % w,
                                 ratios("seedloader", "torch", w)))
    for w in workers:
        if sl is None:
            print("ratio seedloader Python/C++, W=%d: not installed" % w)
        else:
            print(pybench.ratio_line("seedloader Python/C++, W=%d" % w,
                                     ratios("seedloader_python", "seedloader", w)))
    for r in results:
        py = r["seedloader_python"]
        if isinstance(py, dict):
            print("main thread CPU per batch, W=%d: seedloader C++ %.0f us, from Python "
                  "%.0f us (%.2fx)" % (
                      r["workers"], r["seedloader"]["main_cpu_s_per_batch"] * 1e6,
                      py["main_cpu_s_per_batch"] * 1e6,
                      py["main_cpu_s_per_batch"] / r["seedloader"]["main_cpu_s_per_batch"]))
    machine = pybench.machine()
    print("\nmachine: " + machine)
    pybench.write_json(out, "compare_torch", {
        "machine": machine, "images": args.images, "batch_size": args.batch_size,
        "rounds": args.rounds, "batches": args.batches, "warmup": args.warmup,
        "results": results})
    plot(results, os.cpu_count() or 0, os.path.join(out, "compare_torch.png"))
    print("wrote %s/compare_torch.json and compare_torch.png" % out)


if __name__ == "__main__":
    main()
