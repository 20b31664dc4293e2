#!/usr/bin/env python3
"""A two-source mixture against the same total from one source: seedloader-bench's
samples/s with 2 workers, the same transform and per-sample streams, alternating
rounds. The mixture reads 3:1 from two synthetic sets of 5000 and 1000 images
(each source's own epoch permutation, the allocation, the per-step shuffle, the
per-sample stream keyed by source); the single source is one synthetic set of
6000 images under the numpy order.

  python3 bench/mixture_throughput.py [--build build/default] [--rounds 5]
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pybench  # noqa: E402

MIXTURE = json.dumps({"sources": {"large": "synthetic:5000", "small": "synthetic:1000"},
                      "weights": {"large": 3, "small": 1}, "samples_per_epoch": 6000})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(pybench.ROOT, "build", "default"))
    parser.add_argument("--batches", type=int, default=90, help="timed batches of 64")
    pybench.add_run_options(parser, rounds=5, quick_help="1 round of 20 batches")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.batches = 1, 20
    bench, = pybench.built_tools(args.build, "seedloader-bench")

    def run(data):
        def one(workers):
            out = subprocess.run(
                [bench, "--data", data, "--transform", "rrc:32,hflip,normalize:imagenet",
                 "--batch-size", "64", "--workers", str(workers), "--seeding", "sample",
                 "--batches", str(args.batches), "--warmup", "5", "--seed", "3", "--json"],
                check=True, capture_output=True, text=True).stdout
            return json.loads(out)
        return one

    print(pybench.machine())
    runs = pybench.alternate({"one source": run("synthetic:6000"),
                              "mixture": run("mix:" + MIXTURE)}, [2], args.rounds,
                             "samples_per_s")
    one, mixed = runs["one source", 2], runs["mixture", 2]
    print("one source %.0f samples/s, mixture %.0f samples/s (medians)"
          % (pybench.median([r["samples_per_s"] for r in one]),
             pybench.median([r["samples_per_s"] for r in mixed])))
    print(pybench.ratio_line("mixture / one source",
                             pybench.ratios(mixed, one, "samples_per_s")))
    path = pybench.write_json(pybench.results_dir(args), "mixture_throughput",
                              {"machine": pybench.machine(), "one_source": one,
                               "mixture": mixed})
    print("wrote", path)


if __name__ == "__main__":
    main()
