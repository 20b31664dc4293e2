"""What the Python benchmarks share: the machine line, medians of alternating
rounds, README-ready ratio lines, the results folder and seedloader's import.

On a shared or noisy machine one measurement says little. Each bench runs every
contender once per round, alternating, for several rounds, and reports medians;
a ratio is the median of the per-round ratios, each taken between measurements
made seconds apart.
"""
import json
import os
import platform
import statistics
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")
# --quick runs are smoke runs: their figures go here, not over the measured ones.
QUICK_RESULTS = os.path.join(ROOT, "build", "bench-quick")


def import_seedloader():
    """(module, None), or (None, why) when this interpreter cannot import it."""
    try:
        import seedloader
        return seedloader, None
    except ImportError as e:
        return None, "not installed (%s)" % e


def add_run_options(parser, rounds, quick_help):
    """--rounds, --out and --quick, as every Python bench takes them."""
    parser.add_argument("--rounds", type=int, default=rounds,
                        help="alternating rounds; every figure is their median")
    parser.add_argument("--out", default=None, help="results folder (default "
                        "bench/results; build/bench-quick with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: %s; not a measurement" % quick_help)


def results_dir(args):
    """Where a run's results go: --out, else the quick or the measured folder."""
    return args.out or (QUICK_RESULTS if args.quick else RESULTS)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def machine():
    return "%s, %d cores, %s" % (cpu_model(), os.cpu_count() or 0, platform.platform())


def median(values):
    return statistics.median(values) if values else float("nan")


def ratio_line(what, ratios):
    """'ratio WHAT = X.XX (median of N alternating rounds)'."""
    return "ratio %s = %.2f (median of %d alternating rounds)" % (
        what, median(ratios), len(ratios))


def alternate(contenders, workers, rounds, metric):
    """Runs every contender (name -> f(workers) returning a result dict) once per
    round and worker count, in an order that rotates by round, and prints each
    round's `metric`. Returns {(name, workers): [result per round]}."""
    names = list(contenders)
    runs = {(n, w): [] for n in names for w in workers}
    for rnd in range(rounds):
        for w in workers:
            shift = rnd % len(names)
            for n in names[shift:] + names[:shift]:
                runs[n, w].append(contenders[n](w))
            print("round %d/%d W=%d  " % (rnd + 1, rounds, w) + "  ".join(
                "%s %.0f" % (n, runs[n, w][-1][metric]) for n in names) + " " +
                  metric.replace("_per_s", "/s"), flush=True)
    return runs


def ratios(num_runs, den_runs, metric):
    """Per-round ratios num/den of `metric`."""
    return [a[metric] / b[metric] for a, b in zip(num_runs, den_runs)]


def write_json(out_dir, name, payload):
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, name + ".json")
    with open(path, "w") as f:
        json.dump(payload, f, indent=1)
    return path


def measure(epoch_batches, warmup, batches=None, seconds=None):
    """Times a loader after `warmup` untimed batches (which take the worker
    start-up), for `batches` batches or until `seconds` have passed, epoch after
    epoch: epoch_batches(e) iterates epoch e, yielding each batch's sample count.
    Returns {"batches", "samples", "seconds", "batches_per_s", "samples_per_s"}."""
    done = timed = samples = epoch = 0
    start = time.perf_counter()
    finished = False
    while not finished:
        for n in epoch_batches(epoch):
            done += 1
            if done == warmup:
                start = time.perf_counter()
                continue
            if done < warmup:
                continue
            timed += 1
            samples += n
            if batches is not None:
                finished = timed >= batches
            else:
                finished = time.perf_counter() - start >= seconds
            if finished:
                break
        epoch += 1
    elapsed = time.perf_counter() - start
    return {"batches": timed, "samples": samples, "seconds": elapsed,
            "batches_per_s": timed / elapsed, "samples_per_s": samples / elapsed}
