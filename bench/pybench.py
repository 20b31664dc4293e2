"""What the Python benchmarks share: the machine line, medians of alternating
rounds, README-ready ratio lines, the results folder, seedloader's import, the
generated JPEG folders and the peak PSS of a process tree.

On a shared or noisy machine one measurement says little. Each bench runs every
contender once per round, alternating, for several rounds, and reports medians;
a ratio is the median of the per-round ratios, each taken between measurements
made seconds apart.

From the shell, for scripts that need a JPEG folder (PIL and numpy required):
  python3 bench/pybench.py make_image_folder DIR N [WIDTH HEIGHT]
"""
import json
import os
import platform
import resource
import statistics
import threading
import time

import numpy as np

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


def built_tools(build, *names):
    """The paths of the named programs of the CMake build folder `build`
    ("seedloader-bench", "seedloader-pack"), or SystemExit saying how to build them."""
    paths = []
    for name in names:
        path = os.path.join(build, "tools", name.replace("-", "_"), name)
        if not os.access(path, os.X_OK):
            raise SystemExit("%s is not built (bash scripts/build.sh default)" % path)
        paths.append(path)
    return paths


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
    Returns {"batches", "samples", "seconds", "batches_per_s", "samples_per_s",
    "main_cpu_us_per_batch"}: the last is the calling process's CPU time (user +
    system, all its threads) per timed batch, what the loop costs the trainer."""
    done = timed = samples = epoch = 0
    start = time.perf_counter()
    cpu_start = cpu_seconds()
    finished = False
    while not finished:
        for n in epoch_batches(epoch):
            done += 1
            if done == warmup:
                start = time.perf_counter()
                cpu_start = cpu_seconds()
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
    cpu = cpu_seconds() - cpu_start
    return {"batches": timed, "samples": samples, "seconds": elapsed,
            "batches_per_s": timed / elapsed, "samples_per_s": samples / elapsed,
            "main_cpu_us_per_batch": cpu / timed * 1e6}


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _photo_like(rng, width, height, grain):
    """An RGB image whose JPEG costs about what a photograph's does (2 to 2.5 bits
    per pixel at quality 90, against well under 1 for gradients alone): smooth
    colour fields at four scales, sharp-edged shapes, and sensor-like grain (one
    tile per folder, shifted per image, as drawing it per image costs more than
    all the rest)."""
    from PIL import Image, ImageDraw

    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    a, b, c = rng.random(3) * 128
    img = np.stack([(xx / width) * a, (yy / height) * b,
                    ((xx + yy) / (width + height)) * c], axis=-1)
    for cells, amplitude in ((4, 90), (16, 50), (64, 30), (max(width // 4, 1), 16)):
        field = rng.integers(0, 256, size=(max(cells * height // width, 1), cells, 3),
                             dtype=np.uint8)
        up = Image.fromarray(field).resize((width, height), Image.BICUBIC)
        img += (np.asarray(up, np.float32) - 128) * (amplitude / 128)
    canvas = Image.fromarray(np.clip(img + 64, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(canvas)
    for _ in range(12):
        x0, y0 = rng.integers(0, width), rng.integers(0, height)
        w, h = rng.integers(4, width // 3 + 5), rng.integers(4, height // 3 + 5)
        fill = tuple(int(v) for v in rng.integers(0, 256, 3))
        shape = draw.ellipse if rng.random() < 0.5 else draw.rectangle
        shape([x0, y0, x0 + w, y0 + h], fill=fill)
    dy, dx = rng.integers(0, height), rng.integers(0, width)
    noisy = np.asarray(canvas, np.int16) + np.roll(grain, (dy, dx), axis=(0, 1))
    return Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8))


def make_image_folder(root, n_images, width=320, height=240, classes=10, texture="blocks"):
    """A deterministic ImageFolder of n_images JPEGs (quality 90), made once: a
    marker file names what is there. texture "blocks": gradients plus 8x8 blocks
    of noise, cheap to decode (what compare_torch.py's published figures used);
    "photo": the entropy of a photograph (see _photo_like)."""
    from PIL import Image

    if texture not in ("blocks", "photo"):
        raise ValueError("make_image_folder: texture is 'blocks' or 'photo', not %r" % texture)
    suffix = "" if texture == "blocks" else "-" + texture
    marker = os.path.join(root, ".complete-%d-%dx%d%s" % (n_images, width, height, suffix))
    if os.path.exists(marker):
        return
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(2024)))
    if texture == "photo":
        grain = np.rint(rng.normal(0, 5, size=(height, width, 3))).astype(np.int16)
    else:
        yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    for i in range(n_images):
        d = os.path.join(root, "class_%02d" % (i % classes))
        os.makedirs(d, exist_ok=True)
        if texture == "photo":
            image = _photo_like(rng, width, height, grain)
        else:
            a, b, c = rng.random(3) * 255
            img = np.stack([(xx / width) * a, (yy / height) * b,
                            ((xx + yy) / (width + height)) * c], axis=-1)
            noise = rng.integers(0, 40, size=(height // 8, width // 8, 3))
            img += np.kron(noise, np.ones((8, 8, 1)))
            image = Image.fromarray(np.clip(img, 0, 255).astype(np.uint8))
        image.save(os.path.join(d, "%06d.jpg" % i), quality=90)
    open(marker, "w").close()


def pss_bytes(pid):
    """The process's proportional set size (its private pages plus its share of
    the pages it shares), 0 once it has gone."""
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def children(pid):
    """The process's children, whichever of its threads started them."""
    kids = []
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return kids
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                kids += [int(p) for p in f.read().split()]
        except OSError:
            pass
    return kids


def process_tree(pid):
    """pid and all its descendants alive now."""
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        tree.append(p)
        todo += children(p)
    return tree


class PeakPss:
    """The peak, over the with-block, of the summed PSS of pid's process tree
    (pid, its workers and theirs), sampled every `interval` seconds from a thread.
    Summing PSS counts a page shared by the tree once, and a library page shared
    with processes outside it only in part. Each sample walks the tree's page
    tables in the kernel, which for processes that map torch takes CPU the
    measured run would otherwise have: sample seldom where throughput is timed."""

    def __init__(self, pid, interval=0.05):
        self.pid, self.peak, self._stop = pid, 0, threading.Event()
        self.interval = interval
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while True:
            total = sum(pss_bytes(p) for p in process_tree(self.pid))
            self.peak = max(self.peak, total)
            if self._stop.wait(self.interval):
                return

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


if __name__ == "__main__":
    import sys

    if len(sys.argv) not in (4, 6) or sys.argv[1] != "make_image_folder":
        sys.exit("usage: pybench.py make_image_folder DIR N [WIDTH HEIGHT]")
    make_image_folder(sys.argv[2], int(sys.argv[3]), *map(int, sys.argv[4:]))
