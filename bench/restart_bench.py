#!/usr/bin/env python3
"""One worker's samples/s on RandomResizedCrop(224) + flip + ImageNet
normalisation (batch 64) over the same photo-like JPEGs three ways: an
ImageFolder, plain packed shards (seedloader-pack), and shards packed with
--jpeg-restart (restart markers cutting every MCU row into intervals, so a crop
entropy-decodes only the intervals around it); each against the rate at which one
core decodes the whole image (seedloader-bench --decode-reference), at 320x240,
500x375 and 1920x1080. Also what --jpeg-restart does to the size: the JPEGs' own bytes (restart
markers and their byte alignment, against Huffman tables optimised per image) and
the whole pack's (with the .rst members and their tar headers). Runs alternate
within a round; figures are medians over rounds.

Usage: build/venv/bin/python bench/restart_bench.py [--build build/default]
       [--rounds 3] [--quick]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import pybench  # noqa: E402

SIZES = [(320, 240, 1024), (500, 375, 768), (1920, 1080, 192)]
TRANSFORM = "rrc:224,hflip,normalize:imagenet"


def pack(tool, images, out, restart):
    if os.path.exists(os.path.join(out, "index.json")):
        return None
    argv = [tool, "imagefolder:" + images, out, "--shard-size", "64M"]
    if restart:
        argv.append("--jpeg-restart")
    out_text = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
    return out_text


def pack_bytes(out):
    with open(os.path.join(out, "index.json")) as f:
        return sum(shard["bytes"] for shard in json.load(f)["shards"])


def measure(bench, data, batches, reference):
    argv = [bench, "--data", data, "--transform", TRANSFORM, "--batch-size", "64",
            "--workers", "1", "--batches", str(batches), "--warmup", "2", "--json"]
    if reference:
        argv += ["--decode-reference", str(reference)]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise SystemExit("seedloader-bench failed on %s:\n%s" % (data, out.stderr))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build/default"))
    parser.add_argument("--data-dir", default=os.path.join(ROOT, "build/restart-bench"))
    pybench.add_run_options(parser, rounds=3, quick_help="1 round, 64 small images, 2 batches")
    args = parser.parse_args()
    bench, tool = pybench.built_tools(args.build, "seedloader-bench", "seedloader-pack")
    sizes = [(320, 240, 192)] if args.quick else SIZES
    rounds = 1 if args.quick else args.rounds
    growth = {}
    sources = {}
    for w, h, n in sizes:
        base = os.path.join(args.data_dir, "%dx%d-%d" % (w, h, n))
        images = os.path.join(base, "images")
        pybench.make_image_folder(images, n, width=w, height=h, texture="photo")
        pack(tool, images, os.path.join(base, "plain"), False)
        said = pack(tool, images, os.path.join(base, "restart"), True)
        if said is not None:
            with open(os.path.join(base, "restart.txt"), "w") as f:
                f.write(said)
        with open(os.path.join(base, "restart.txt")) as f:
            m = re.search(r"\(([+-][0-9.]+)%", f.read())
            growth[(w, h)] = (float(m.group(1)) if m else float("nan"),
                              100.0 * (pack_bytes(os.path.join(base, "restart")) /
                                       pack_bytes(os.path.join(base, "plain")) - 1))
        sources[(w, h)] = [("ImageFolder", "imagefolder:" + images),
                           ("plain shards", "tar:" + os.path.join(base, "plain")),
                           ("--jpeg-restart shards", "tar:" + os.path.join(base, "restart"))]
    figures = {}
    for r in range(rounds):
        for (w, h, n) in sizes:
            batches = 2 if args.quick else max(4, n // 64 - 2)
            for name, data in sources[(w, h)]:
                # The reference once per round and size, beside the ImageFolder run.
                reference = 0 if args.quick else (60 if name == "ImageFolder" else 0)
                result = measure(bench, data, batches, reference)
                figures.setdefault((w, h, name), []).append(result["samples_per_s"])
                if reference:
                    figures.setdefault((w, h, "decode"), []).append(
                        result["decode_only_per_s"])
    print("photo-like JPEGs (quality 90), %s, batch 64, one worker; median of %d rounds\n"
          % (TRANSFORM, rounds))
    print("| images | full decode only, images/s | ImageFolder | plain shards | "
          "--jpeg-restart shards | restart / full decode | restart / ImageFolder | "
          "JPEG bytes | pack bytes |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for w, h, _ in sizes:
        med = {name: statistics.median(figures[(w, h, name)])
               for name in ("ImageFolder", "plain shards", "--jpeg-restart shards")}
        decode = statistics.median(figures[(w, h, "decode")]) if not args.quick else 0
        restart = med["--jpeg-restart shards"]
        print("| %dx%d | %s | %.0f | %.0f | %.0f | %s | %.2fx | %+.2f%% | %+.2f%% |"
              % (w, h, "%.0f" % decode if decode else "-", med["ImageFolder"],
                 med["plain shards"], restart,
                 "%.2fx" % (restart / decode) if decode else "-",
                 restart / med["ImageFolder"], growth[(w, h)][0], growth[(w, h)][1]))


if __name__ == "__main__":
    main()
