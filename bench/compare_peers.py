#!/usr/bin/env python3
"""seedloader beside its peers: PyTorch's DataLoader, NVIDIA DALI and tf.data on one JPEG pipeline.

Every contender runs RandomResizedCrop(224) (area 0.08-1, aspect 3/4-4/3) +
horizontal flip (p = 0.5) + normalise (ImageNet mean/std) to float32, batch 64,
shuffled, on the same generated JPEG folders (photo-like entropy, quality 90:
2,000 images of 320x240, 1,000 of 500x375 and, with --hd N, N of 1920x1080), at
W = 1 and 2 workers or threads:

  seedloader        seedloader.DataLoader from Python, W worker processes; NCHW
  seedloader_cpp    the same engine timed by seedloader-bench (no Python); NCHW
  seedloader_cpp_u8, _f16, _bf16
                    seedloader-bench with the output as uint8 (no normalise), float16
                    and bfloat16: seedloader-only rows, no ratio to a peer
  seedloader_cpp_restart
                    seedloader-bench on the same images packed into tar shards by
                    seedloader-pack --jpeg-restart (restart intervals and their
                    index, so a crop entropy-decodes only the intervals around it);
                    a seedloader-only row
  torch_pil         torchvision ImageFolder + PIL transforms, DataLoader(num_workers=W);
                    NCHW
  torch_v2          torchvision.io.decode_jpeg + transforms.v2 in the DataLoader;
                    NCHW; needs torchvision >= 0.16 (bench/setup_peers.sh --with-torch)
  dali              DALI's CPU pipeline (device_id=None, num_threads=W):
                    readers.file, decoders.image_random_crop, resize,
                    crop_mirror_normalize; NCHW
  tfdata            tf.data: read_file, stateless_sample_distorted_bounding_box,
                    decode_and_crop_jpeg, image.resize (bilinear, TF's default: no
                    antialiasing), stateless flip, normalise; map with
                    num_parallel_calls=W on a private pool of W threads; NHWC, TF's
                    natural layout

Each measurement is its own subprocess, so imports and memory do not leak from
one contender into the next, and a contender that is not installed or crashes is
reported as such. Each round runs every contender once per W, in an order that
rotates by round; figures are medians of the rounds, and a ratio is the median of
the per-round ratios of seedloader (the Python row) to the peer. Peak PSS is that
of the contender's whole process tree (interpreter, imports, workers), sampled
every 50 ms from outside it. For reference, each folder's full-size decode rate on
one core is measured with PIL (Image.open(path).load(), no draft mode, so
libjpeg-turbo decodes every pixel) and, in the seedloader_cpp runs, by
seedloader-bench --decode-reference (the loader's own libturbojpeg decoder, the
folder's first 200 images); those runs also give the main process's CPU time
per batch (its consuming thread; the workers are other processes).

Prints a README-ready markdown table, writes bench/results/compare_peers.json and
compare_peers.png (when matplotlib imports). Run it with the environment
bench/setup_peers.sh makes: build/peers-venv/bin/python bench/compare_peers.py
--quick is a smoke run (figures to build/bench-quick/).
"""
import argparse
import glob
import json
import math
import os
import signal
import subprocess
import sys
import time

import pybench

ROOT = pybench.ROOT
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
SPEC = "rrc:224,hflip,normalize:imagenet"  # seedloader's name for the pipeline
WORKERS = (1, 2)
DECODE_REFERENCE = 200  # JPEGs seedloader-bench --decode-reference decodes
# The seedloader-bench rows: name -> transform spec (the output dtype differs).
CPP_SPECS = {
    "seedloader_cpp": SPEC,
    "seedloader_cpp_u8": "rrc:224,hflip,u8",
    "seedloader_cpp_f16": SPEC + ":f16",
    "seedloader_cpp_bf16": SPEC + ":bf16",
    "seedloader_cpp_restart": SPEC,
}
# The seedloader-bench rows that read the folder's --jpeg-restart pack.
RESTART_ROWS = ("seedloader_cpp_restart",)

# name -> (label, output layout); the order is the table's.
CONTENDERS = {
    "seedloader": ("seedloader (Python)", "NCHW"),
    "seedloader_cpp": ("seedloader (C++ bench)", "NCHW"),
    "seedloader_cpp_u8": ("seedloader (C++ bench), uint8", "NCHW u8"),
    "seedloader_cpp_f16": ("seedloader (C++ bench), float16", "NCHW f16"),
    "seedloader_cpp_bf16": ("seedloader (C++ bench), bfloat16", "NCHW bf16"),
    "seedloader_cpp_restart": ("seedloader (C++ bench), --jpeg-restart shards", "NCHW"),
    "torch_pil": ("PyTorch DataLoader, PIL", "NCHW"),
    "torch_v2": ("PyTorch DataLoader, decode_jpeg + v2", "NCHW"),
    "dali": ("DALI CPU pipeline", "NCHW"),
    "tfdata": ("tf.data", "NHWC"),
}


class NotInstalled(Exception):
    pass


# ---------------------------------------------------------------------------
# The contenders, each run in a child process (--run NAME). Each returns
# (epoch_batches, version): epoch_batches(e) iterates epoch e, yielding each
# batch's sample count, as pybench.measure takes it.

def loader_seedloader(a):
    sl, missing = pybench.import_seedloader()
    if missing:
        raise NotInstalled(missing)
    ds = sl.ImageFolder(a.data, transform=SPEC)
    loader = sl.DataLoader(ds, batch_size=a.batch_size, num_workers=a.workers, shuffle=True,
                           seed=0, drop_last=True, persistent_workers=a.workers > 0)

    def epoch_batches(epoch):
        loader.set_epoch(epoch)
        for batch in loader:
            yield batch["image"].shape[0]

    return epoch_batches, "seedloader " + sl.__version__


def _import_torchvision():
    try:
        import torch
        import torchvision
    except ImportError as e:
        raise NotInstalled(str(e))
    return torch, torchvision


def _torch_loader(torch, ds, a):
    torch.manual_seed(0)
    return torch.utils.data.DataLoader(ds, batch_size=a.batch_size, shuffle=True,
                                       num_workers=a.workers, persistent_workers=True,
                                       drop_last=True)


def _batches(loader):
    def epoch_batches(epoch):
        for images, _ in loader:
            yield images.shape[0]
    return epoch_batches


def loader_torch_pil(a):
    torch, torchvision = _import_torchvision()
    from torchvision import transforms as T

    tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                    T.Normalize(MEAN, STD)])
    ds = torchvision.datasets.ImageFolder(a.data, transform=tf)
    return _batches(_torch_loader(torch, ds, a)), "torch %s, torchvision %s" % (
        torch.__version__, torchvision.__version__)


def _decode_file(path):
    """A module-level loader, so that workers can be handed it by pickling too."""
    from torchvision.io import decode_jpeg, read_file
    return decode_jpeg(read_file(path))


def loader_torch_v2(a):
    torch, torchvision = _import_torchvision()
    try:
        from torchvision.transforms import v2
        to_float = v2.ToDtype(torch.float32, scale=True)
    except (ImportError, AttributeError):
        raise NotInstalled("torchvision %s has no transforms.v2.ToDtype (0.16 and later: "
                           "bench/setup_peers.sh --with-torch)" % torchvision.__version__)
    tf = v2.Compose([v2.RandomResizedCrop(224, antialias=True), v2.RandomHorizontalFlip(),
                     to_float, v2.Normalize(MEAN, STD)])
    ds = torchvision.datasets.ImageFolder(a.data, transform=tf, loader=_decode_file)
    return _batches(_torch_loader(torch, ds, a)), "torch %s, torchvision %s" % (
        torch.__version__, torchvision.__version__)


def loader_dali(a):
    try:
        import nvidia.dali as dali
        from nvidia.dali import fn, pipeline_def, types
    except ImportError as e:
        raise NotInstalled(str(e))

    @pipeline_def(batch_size=a.batch_size, num_threads=a.workers, device_id=None, seed=0)
    def pipeline():
        jpegs, labels = fn.readers.file(file_root=a.data, random_shuffle=True, name="files")
        images = fn.decoders.image_random_crop(
            jpegs, device="cpu", output_type=types.RGB, random_area=[0.08, 1.0],
            random_aspect_ratio=[3 / 4, 4 / 3])
        images = fn.resize(images, resize_x=224, resize_y=224)
        images = fn.crop_mirror_normalize(
            images, dtype=types.FLOAT, output_layout="CHW", mean=[255 * m for m in MEAN],
            std=[255 * s for s in STD], mirror=fn.random.coin_flip())
        return images, labels

    pipe = pipeline()
    pipe.build()
    per_epoch = pipe.epoch_size("files") // a.batch_size

    def epoch_batches(epoch):
        for _ in range(per_epoch):
            images, _ = pipe.run()
            yield len(images)

    return epoch_batches, "nvidia-dali " + dali.__version__


def loader_tfdata(a):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        import tensorflow as tf
    except ImportError as e:
        raise NotInstalled(str(e))
    # W threads run the map; the ops inside one element run on one thread, as in a
    # worker process of the others.
    tf.config.threading.set_inter_op_parallelism_threads(a.workers)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    paths = sorted(glob.glob(os.path.join(a.data, "*", "*.jpg")))
    whole = tf.constant([[[0.0, 0.0, 1.0, 1.0]]])
    mean, std = tf.constant(MEAN), tf.constant(STD)

    def load(index, path):
        data = tf.io.read_file(path)
        seed = tf.stack([index, tf.constant(0, tf.int64)])
        begin, size, _ = tf.image.stateless_sample_distorted_bounding_box(
            tf.io.extract_jpeg_shape(data), whole, seed=seed, min_object_covered=0.0,
            aspect_ratio_range=(3 / 4, 4 / 3), area_range=(0.08, 1.0), max_attempts=10,
            use_image_if_no_bounding_boxes=True)
        window = tf.stack([begin[0], begin[1], size[0], size[1]])
        image = tf.io.decode_and_crop_jpeg(data, window, channels=3)
        image = tf.image.resize(image, [224, 224])
        image = tf.image.stateless_random_flip_left_right(image, seed=seed + [0, 1])
        return (image / 255.0 - mean) / std

    options = tf.data.Options()
    options.threading.private_threadpool_size = a.workers
    options.threading.max_intra_op_parallelism = 1
    # One endless stream over reshuffled epochs; its element index seeds the crop
    # and the flip, so no two elements draw alike.
    ds = (tf.data.Dataset.from_tensor_slices(paths)
          .shuffle(len(paths), seed=0, reshuffle_each_iteration=True).repeat().enumerate()
          .map(load, num_parallel_calls=a.workers)
          .batch(a.batch_size, drop_remainder=True).prefetch(1).with_options(options))
    stream = iter(ds)

    def epoch_batches(epoch):
        for images in stream:
            yield int(images.shape[0])

    return epoch_batches, "tensorflow " + tf.__version__


def decode_only(a):
    """Full-size decodes per second on this core with PIL, over the folder's first
    images (each file read beforehand, so only the decode is timed)."""
    import io

    import PIL
    from PIL import Image, features

    paths = sorted(glob.glob(os.path.join(a.data, "*", "*.jpg")))[:a.decode_images]
    blobs = [open(p, "rb").read() for p in paths]
    start = time.perf_counter()
    for blob in blobs:
        Image.open(io.BytesIO(blob)).load()
    elapsed = time.perf_counter() - start
    if features.check_feature("libjpeg_turbo"):
        jpeg = "libjpeg-turbo " + str(features.version("libjpeg_turbo"))
    else:
        jpeg = "libjpeg " + str(features.version("jpg"))
    return {"images_per_s": len(blobs) / elapsed, "images": len(blobs),
            "version": "Pillow %s, %s" % (PIL.__version__, jpeg)}


LOADERS = {"seedloader": loader_seedloader, "torch_pil": loader_torch_pil,
           "torch_v2": loader_torch_v2, "dali": loader_dali, "tfdata": loader_tfdata}


def child(a):
    """--run NAME: one measurement; prints one JSON object as the last line."""
    if a.run == "decode":
        print(json.dumps(decode_only(a)))
        return
    try:
        epoch_batches, version = LOADERS[a.run](a)
    except NotInstalled as e:
        print(json.dumps({"not_installed": str(e)}))
        return
    result = pybench.measure(epoch_batches, a.warmup, batches=a.batches)
    result["version"] = version
    print(json.dumps(result))


# ---------------------------------------------------------------------------
# The parent: runs the children, samples their memory, alternates, reports.

def run_tree(cmd, timeout):
    """Runs cmd in its own process group, sampling its tree's peak PSS. Returns
    (the last stdout line parsed as JSON, peak bytes), or raises RuntimeError with
    the reason it failed."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)
    try:
        with pybench.PeakPss(proc.pid) as mem:
            out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError("no result within %d s (killed)" % timeout)
    finally:
        # Whatever the way out (a timeout, ^C), nothing of the tree outlives its run.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    if proc.returncode != 0:
        lines = [l for l in err.strip().splitlines() if l.strip()]
        how = ("signal %d" % -proc.returncode if proc.returncode < 0
               else "exit status %d" % proc.returncode)
        raise RuntimeError("%s: %s" % (how, lines[-1] if lines else "no message"))
    lines = out.strip().splitlines()
    try:
        return json.loads(lines[-1]), mem.peak
    except (IndexError, ValueError):
        raise RuntimeError("no JSON result on stdout")


class Contender:
    """One contender on one folder: measure(w) returns a result dict with
    samples_per_s (NaN when there is no figure) and the status that says why."""

    def __init__(self, name, args, folder):
        self.name, self.args, self.folder = name, args, folder
        self.missing = None  # why it has no figure; once set, it is not tried again
        self.version = None

    def command(self, w):
        a = self.args
        if self.name in CPP_SPECS:
            data = ("tar:" + restart_pack(self.folder) if self.name in RESTART_ROWS
                    else "imagefolder:" + self.folder)
            cmd = [a.binary, "--data", data, "--transform",
                   CPP_SPECS[self.name], "--batch-size", str(a.batch_size), "--workers",
                   str(w), "--batches", str(a.batches), "--warmup", str(a.warmup), "--json"]
            if self.name == "seedloader_cpp":  # once per run is enough (>= 1 s each)
                cmd += ["--decode-reference", str(DECODE_REFERENCE)]
            return cmd
        return [sys.executable, os.path.abspath(__file__), "--run", self.name, "--data",
                self.folder, "--workers", str(w), "--batch-size", str(a.batch_size),
                "--batches", str(a.batches), "--warmup", str(a.warmup)]

    def measure(self, w):
        if self.missing:
            return {"samples_per_s": math.nan, "status": self.missing}
        if self.name in CPP_SPECS and not os.path.exists(self.args.binary):
            self.missing = "not built: %s (scripts/build.sh)" % self.args.binary
            return self.measure(w)
        try:
            result, peak = run_tree(self.command(w), self.args.timeout)
        except RuntimeError as e:
            print("  %s W=%d failed: %s" % (self.name, w, e), file=sys.stderr, flush=True)
            return {"samples_per_s": math.nan, "status": "error: %s" % e}
        if "not_installed" in result:
            self.missing = "not installed: " + result["not_installed"]
            return self.measure(w)
        self.version = result.get("version", self.version)
        r = {"samples_per_s": result["samples_per_s"], "peak_pss_bytes": peak,
             "status": "ok"}
        for k in CPP_FIELDS:  # seedloader-bench's own figures
            if k in result:
                r[k] = result[k]
        return r


# Fields of seedloader-bench's JSON kept per run (medians in the summary).
CPP_FIELDS = ("main_cpu_s_per_batch", "main_cpu_share", "decode_only_per_s",
              "per_worker_vs_decode")


def restart_pack(folder):
    return folder + "-restart"


def pack_restart(args, folder):
    """Packs the folder with seedloader-pack --jpeg-restart, once."""
    out = restart_pack(folder)
    if os.path.exists(os.path.join(out, "index.json")):
        return
    if not os.path.exists(args.pack):
        print("  no %s (scripts/build.sh): no --jpeg-restart row" % args.pack, flush=True)
        return
    subprocess.run([args.pack, "imagefolder:" + folder, out, "--shard-size", "64M",
                    "--jpeg-restart"], check=True, stdout=subprocess.DEVNULL)


def folder_bits_per_pixel(folder, width, height):
    sizes = [os.path.getsize(p) for p in glob.glob(os.path.join(folder, "*", "*.jpg"))]
    return 8 * sum(sizes) / (len(sizes) * width * height)


def finite_ratios(num, den):
    return [x for x in pybench.ratios(num, den, "samples_per_s") if math.isfinite(x)]


def summarise(name, runs):
    """A contender's figures at each W: medians of the rounds that produced one,
    else the status of the last round."""
    out = {"label": CONTENDERS[name][0], "layout": CONTENDERS[name][1]}
    for w in WORKERS:
        rs = runs[name, w]
        ok = [r for r in rs if r["status"] == "ok"]
        cell = {"samples_per_s_rounds": [r["samples_per_s"] if r["status"] == "ok" else None
                                         for r in rs]}  # null, not NaN: plain JSON
        if ok:
            cell["samples_per_s"] = pybench.median([r["samples_per_s"] for r in ok])
            cell["peak_pss_bytes"] = pybench.median([r["peak_pss_bytes"] for r in ok])
            for k in CPP_FIELDS:
                if all(k in r for r in ok):
                    cell[k] = pybench.median([r[k] for r in ok])
            if len(ok) < len(rs):
                cell["failed_rounds"] = [r["status"] for r in rs if r["status"] != "ok"]
        else:
            cell["status"] = rs[-1]["status"]
        if name != "seedloader" and (name == "seedloader_cpp" or name not in CPP_SPECS):
            ratios = finite_ratios(runs["seedloader", w], rs)
            if ratios:
                cell["seedloader_over_this"] = pybench.median(ratios)
                cell["ratio_rounds"] = len(ratios)
        out["W=%d" % w] = cell
    return out


def table(folders):
    """The README-ready markdown table."""
    head = ["images", "contender", "layout"]
    head += ["samples/s W=%d" % w for w in WORKERS]
    head += ["seedloader Python / it, W=%d" % w for w in WORKERS]
    head += ["peak PSS MB, W=%d" % w for w in WORKERS]
    head += ["main CPU/batch, W=%d" % w for w in WORKERS]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for f in folders:
        for name, c in f["contenders"].items():
            row = [f["name"], c["label"], c["layout"]]
            cells = [c["W=%d" % w] for w in WORKERS]
            if all("status" in x for x in cells):
                why = cells[-1]["status"]
                lines.append("| " + " | ".join(row + [why] + [""] * (len(head) - 4)) + " |")
                continue
            row += ["%.0f" % x["samples_per_s"] if "samples_per_s" in x else x["status"]
                    for x in cells]
            row += ["%.2fx" % x["seedloader_over_this"] if "seedloader_over_this" in x
                    else "" for x in cells]
            row += ["%.0f" % (x["peak_pss_bytes"] / 2**20) if "peak_pss_bytes" in x else ""
                    for x in cells]
            row += ["%.0f us (%.1f%%)" % (x["main_cpu_s_per_batch"] * 1e6,
                                          100 * x["main_cpu_share"])
                    if "main_cpu_share" in x else "" for x in cells]
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def plot(folders, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        print("no plot: matplotlib does not import (%s)" % e)
        return False
    fig, axes = plt.subplots(1, len(folders), figsize=(5 * len(folders), 4.2), squeeze=False)
    for ax, f in zip(axes[0], folders):
        names = [n for n, c in f["contenders"].items()
                 if any("samples_per_s" in c["W=%d" % w] for w in WORKERS)]
        width = 0.8 / len(WORKERS)
        for i, w in enumerate(WORKERS):
            ys = [f["contenders"][n]["W=%d" % w].get("samples_per_s", 0) for n in names]
            ax.bar([j + (i - (len(WORKERS) - 1) / 2) * width for j in range(len(names))], ys,
                   width, label="W=%d" % w)
        ax.axhline(f["decode_only"]["images_per_s"], color="grey", linestyle="--",
                   label="full decode only, 1 core (PIL)")
        if f.get("decode_only_cpp"):
            ax.axhline(f["decode_only_cpp"]["images_per_s"], color="black", linestyle=":",
                       label="full decode only, 1 core (seedloader)")
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels([f["contenders"][n]["label"] for n in names], rotation=30,
                           ha="right", fontsize=8)
        ax.set_ylabel("samples/s")
        ax.set_ylim(0, ax.get_ylim()[1] * 1.25)  # room for the legend above the bars
        ax.set_title("%s, %d images" % (f["name"], f["images"]))
        ax.legend(fontsize=8, loc="upper center", ncol=3)
    fig.suptitle("RRC(224)+flip+normalize, batch 64, %d cores" % (os.cpu_count() or 0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def parent(args):
    if args.quick:
        args.rounds, args.batches, args.warmup = 1, 3, 1
        args.images, args.images_large, args.hd = (min(args.images, 256),
                                                   min(args.images_large, 256),
                                                   min(args.hd, 64))
        args.decode_images = min(args.decode_images, 100)
    sizes = [(args.images, 320, 240), (args.images_large, 500, 375)]
    if args.hd:
        sizes.append((args.hd, 1920, 1080))
    for n, width, height in sizes:
        # Loaders that drop the last partial batch would never yield one.
        if n < args.batch_size:
            sys.exit("compare_peers: %d images of %dx%d make no batch of %d" % (
                n, width, height, args.batch_size))
    out = pybench.results_dir(args)
    folders = []
    for n, width, height in sizes:
        name = "%dx%d" % (width, height)
        path = os.path.join(args.data_dir, "%s-%d" % (name, n))
        print("generating %d %s JPEGs in %s (once)" % (n, name, path), flush=True)
        pybench.make_image_folder(path, n, width, height, texture="photo")
        pack_restart(args, path)
        folders.append({"name": name, "images": n, "path": path,
                        "bits_per_pixel": folder_bits_per_pixel(path, width, height)})

    machine = pybench.machine()
    versions = {}
    for f in folders:
        print("\n%s: %d images, %.2f bits/pixel" % (f["name"], f["images"],
                                                    f["bits_per_pixel"]), flush=True)
        contenders = {n: Contender(n, args, f["path"]) for n in CONTENDERS}
        runs = pybench.alternate({n: c.measure for n, c in contenders.items()}, WORKERS,
                                 args.rounds, "samples_per_s")
        decodes = []
        for _ in range(args.rounds):
            try:
                result, _ = run_tree([sys.executable, os.path.abspath(__file__), "--run",
                                      "decode", "--data", f["path"], "--decode-images",
                                      str(args.decode_images)], args.timeout)
                decodes.append(result["images_per_s"])
                versions["decode_only"] = result["version"]
            except RuntimeError as e:
                print("  decode-only reference failed: %s" % e, file=sys.stderr)
        f["decode_only"] = {"images_per_s": pybench.median(decodes), "rounds": decodes,
                            "how": "PIL Image.open(path).load() from memory, one process"}
        f["contenders"] = {n: summarise(n, runs) for n in CONTENDERS}
        cpp = [r["decode_only_per_s"] for w in WORKERS for r in runs["seedloader_cpp", w]
               if "decode_only_per_s" in r]
        if cpp:
            f["decode_only_cpp"] = {
                "images_per_s": pybench.median(cpp), "runs": cpp,  # every round and W
                "how": "seedloader-bench --decode-reference %d: the loader's libturbojpeg "
                       "decoder, full size, from memory, one thread" % DECODE_REFERENCE}
        for n, c in contenders.items():
            if c.version:
                versions[n] = c.version

    print("\nmedians of %d alternating rounds, %d timed batches of %d each (after %d "
          "untimed)\n" % (args.rounds, args.batches, args.batch_size, args.warmup))
    print(table(folders))
    print()
    for f in folders:
        cpp = f.get("decode_only_cpp")
        print("%s (%.2f bits/pixel): full-size decode only, one core, %s: %.0f images/s; "
              "seedloader (libturbojpeg): %s" % (
                  f["name"], f["bits_per_pixel"], versions.get("decode_only", "PIL"),
                  f["decode_only"]["images_per_s"],
                  "%.0f images/s" % cpp["images_per_s"] if cpp else "no figure"))
        for w in WORKERS:
            cell = f["contenders"]["seedloader_cpp"]["W=%d" % w]
            if "per_worker_vs_decode" in cell:
                print("  seedloader C++ W=%d: %.2fx the decode-only rate per worker" % (
                    w, cell["per_worker_vs_decode"]))
    for n, v in versions.items():
        print("version %s: %s" % (n, v))
    print("\nmachine: " + machine)
    pybench.write_json(out, "compare_peers", {
        "machine": machine, "versions": versions, "rounds": args.rounds,
        "batches": args.batches, "warmup": args.warmup, "batch_size": args.batch_size,
        "pipeline": "RandomResizedCrop(224) + horizontal flip + normalize(imagenet), float32",
        "folders": [{k: v for k, v in f.items() if k != "path"} for f in folders]})
    png = os.path.join(out, "compare_peers.png")
    print("wrote %s/compare_peers.json%s" % (out, " and compare_peers.png"
                                             if plot(folders, png) else ""))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--images", type=int, default=2000, help="320x240 images")
    p.add_argument("--images-large", type=int, default=1000, help="500x375 images")
    p.add_argument("--hd", type=int, default=0, help="1920x1080 images (0: no such folder)")
    p.add_argument("--batches", type=int, default=20, help="timed batches per measurement")
    p.add_argument("--warmup", type=int, default=3, help="untimed batches first")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--decode-images", type=int, default=500,
                   help="images the decode-only reference decodes per round")
    p.add_argument("--timeout", type=int, default=600,
                   help="seconds one measurement may take before it is killed")
    p.add_argument("--data-dir", default=os.path.join(ROOT, "build", "peers-imagefolders"),
                   help="where the generated folders are kept (made once)")
    p.add_argument("--binary", default=os.path.join(ROOT, "build", "default", "tools",
                                                    "seedloader_bench", "seedloader-bench"),
                   help="seedloader-bench, for the seedloader_cpp rows")
    p.add_argument("--pack", default=os.path.join(ROOT, "build", "default", "tools",
                                                  "seedloader_pack", "seedloader-pack"),
                   help="seedloader-pack, for the --jpeg-restart row")
    pybench.add_run_options(p, rounds=5, quick_help="1 round, at most 256 images a folder "
                            "(64 of 1920x1080), 3 batches")
    # A child's options: one measurement of one contender (see child()).
    p.add_argument("--run", choices=list(LOADERS) + ["decode"], help=argparse.SUPPRESS)
    p.add_argument("--data", help=argparse.SUPPRESS)
    p.add_argument("--workers", type=int, default=1, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.run:
        child(args)
    else:
        parent(args)


if __name__ == "__main__":
    main()
