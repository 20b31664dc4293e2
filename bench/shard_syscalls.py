#!/usr/bin/env python3
"""System calls per sample when TarShards reads packed shards: from a local
folder, and from a URL (nginx on 127.0.0.1) through a warm shard cache on local
disk, so that no download happens during the count.

seedloader-bench reads the packed folder with one worker, batch 64, order
"shards", under `strace -f -c`, once over half the samples and once over all of
them; the difference of the two counts, divided by the samples the second run
read more, is the cost of a sample with start-up left out. Only the calls a
sample's read can make are shown: opening, checking, marking and closing a
shard, and reading its members.

Usage: build/venv/bin/python bench/shard_syscalls.py [--build build/default]
       [--images 2048]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import pybench  # noqa: E402
import remote_bench  # noqa: E402

CALLS = ("openat", "newfstatat", "fstat", "statx", "utimensat", "close", "pread64",
         "fcntl", "flock")
BATCH = 64


def count_calls(bench, data, batches, env, work):
    """{syscall: calls} over one seedloader-bench run under strace -f -c."""
    out = os.path.join(work, "strace.txt")
    run = subprocess.run(
        ["strace", "-f", "-c", "-o", out, bench, "--data", "tar:" + data,
         "--transform", "centercrop:64", "--batch-size", str(BATCH), "--workers", "1",
         "--batches", str(batches), "--warmup", "0", "--order", "shards"],
        capture_output=True, text=True, env=env, timeout=900)
    if run.returncode != 0:
        raise SystemExit("seedloader-bench failed on %s:\n%s" % (data, run.stderr))
    calls = {}
    with open(out) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 5 and parts[-1] in CALLS and parts[3].isdigit():
                calls[parts[-1]] = int(parts[3])
    return calls


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build/default"))
    parser.add_argument("--images", type=int, default=2048)
    args = parser.parse_args()
    bench, pack = pybench.built_tools(args.build, "seedloader-bench", "seedloader-pack")
    if shutil.which("strace") is None:
        raise SystemExit("strace is not installed (apt-get install strace)")
    batches = args.images // BATCH
    if batches < 2:
        raise SystemExit("--images must be at least %d" % (2 * BATCH))
    work = tempfile.mkdtemp(prefix="seedloader-shard-syscalls-")
    nginx = None
    try:
        www, shards = remote_bench.packed_images(pack, work, args.images)
        nginx, http = remote_bench.start_nginx(www, work)
        env = dict(os.environ, SEEDLOADER_CACHE_DIR=os.path.join(work, "cache"))
        # The cache is filled by a first run, then counted warm.
        count_calls(bench, http + "/data/", batches, env, work)
        half = batches // 2
        rows = []
        for name, data in (("local folder", os.path.join(www, "data")),
                           ("URL, warm cache", http + "/data/")):
            few = count_calls(bench, data, half, env, work)
            many = count_calls(bench, data, batches, env, work)
            rows.append((name, {c: many.get(c, 0) - few.get(c, 0) for c in CALLS}))
        samples = (batches - half) * BATCH
        print("%d JPEGs of 320x240 in %d shards of up to 1 MB, 1 worker, batch %d, "
              "--order shards; calls (all processes) per sample: the difference between "
              "reading %d and %d batches, over %d samples\n"
              % (batches * BATCH, shards, BATCH, half, batches, samples))
        print("| source | " + " | ".join(CALLS) + " |")
        print("| --- |" + " --- |" * len(CALLS))
        for name, calls in rows:
            print("| %s | %s |" % (name, " | ".join(
                "%.2f" % (calls.get(c, 0) / samples) for c in CALLS)))
    finally:
        if nginx is not None:
            nginx.kill()
            nginx.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
