#!/usr/bin/env python3
"""Samples/s of one JPEG pipeline reading packed shards locally, from nginx over
HTTP on loopback, from `rclone serve s3`, and from nginx behind a proxy that adds
20 ms to every request (with each worker prefetching 4 shards, and without), each
with a cold shard cache (every shard downloaded during the run) and a warm one (the
same cache again), at 1 and 2 workers.
Everything runs on 127.0.0.1; the servers are started and stopped here.

The pipeline: an ImageFolder of JPEGs (bench/pybench.py make_image_folder)
packed by seedloader-pack into shards, RandomResizedCrop(224) + flip +
ImageNet normalisation, batch 64, order "shards", measured by seedloader-bench
over the rest of one epoch after 8 warm-up batches (more than the first shuffle
block, whose shards a cold cache must fetch before the first batch: that wait is
reported on its own, as the time to the first batch). Runs alternate sources
within a round; the figure is the median over rounds.

Usage: build/venv/bin/python bench/remote_bench.py [--build build/default]
       [--images 4000] [--rounds 3] [--quick]
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import pybench  # noqa: E402

NGINX = "/usr/sbin/nginx"
KEY, SECRET = "AKIDBENCH", "bench-secret"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, what):
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if proc.poll() is not None:
                raise SystemExit("%s exited with %d" % (what, proc.returncode))
            if time.monotonic() > deadline:
                raise SystemExit("%s did not listen on %d" % (what, port))
            time.sleep(0.05)


def start(argv, port, what, env=None, log=None):
    proc = subprocess.Popen(argv, stdout=log or subprocess.DEVNULL,
                            stderr=subprocess.STDOUT, env=env)
    wait_listening(port, proc, what)
    return proc


def start_nginx(root, work, access_log=None):
    """nginx serving `root` on 127.0.0.1: (process, base URL). access_log: a path
    to log "USER BYTES URI" per request to; None logs nothing."""
    port = free_port()
    conf = os.path.join(work, "nginx")
    os.makedirs(os.path.join(conf, "tmp"))
    temp = "".join("  %s_temp_path %s/tmp;\n" % (k, conf)
                   for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    log = ("  log_format bytes '$remote_user $body_bytes_sent $request_uri';\n"
           "  access_log %s bytes;\n" % access_log) if access_log else "  access_log off;\n"
    with open(os.path.join(conf, "nginx.conf"), "w") as f:
        f.write("daemon off;\nmaster_process off;\nerror_log %s/error.log;\n"
                "pid %s/nginx.pid;\nevents { worker_connections 256; }\nhttp {\n"
                "%s%s  server { listen 127.0.0.1:%d; root %s; }\n}\n"
                % (conf, conf, log, temp, port, root))
    proc = start([NGINX, "-p", conf, "-c", os.path.join(conf, "nginx.conf"),
                  "-e", os.path.join(conf, "error.log")], port, "nginx")
    return proc, "http://127.0.0.1:%d" % port


def packed_images(pack, work, images):
    """`images` generated JPEGs of 320x240 packed by seedloader-pack into shards
    of up to 1 MB, in WORK/www/data: (WORK/www, the number of shards)."""
    folder = os.path.join(work, "images")
    pybench.make_image_folder(folder, images)
    www = os.path.join(work, "www")
    subprocess.run([pack, "imagefolder:" + folder, os.path.join(www, "data"),
                    "--shard-size", "1M", "--shuffle-seed", "1"], check=True,
                   stdout=subprocess.DEVNULL)
    return www, len([f for f in os.listdir(os.path.join(www, "data"))
                     if f.endswith(".tar")])


def start_rclone(root, work):
    rclone = os.environ.get("SEEDLOADER_RCLONE") or os.path.join(ROOT, "build/venv/bin/rclone")
    if not os.access(rclone, os.X_OK):
        raise SystemExit("rclone is not installed: bash scripts/python_env.sh --test-servers")
    port = free_port()
    home = os.path.join(work, "rclone")
    os.makedirs(home)
    env = dict(os.environ, RCLONE_CONFIG=os.path.join(home, "rclone.conf"), HOME=home)
    proc = start([rclone, "serve", "s3", "--addr", "127.0.0.1:%d" % port,
                  "--auth-key", "%s,%s" % (KEY, SECRET), root], port, "rclone", env=env)
    return proc, "http://127.0.0.1:%d" % port


def start_proxy(upstream, delay_ms):
    port = free_port()
    proc = start(["/usr/bin/python3", os.path.join(ROOT, "tests/remote/fault_proxy.py"),
                  str(port), upstream.rsplit(":", 1)[1], "delay%d" % delay_ms],
                 port, "fault_proxy.py")
    return proc, "http://127.0.0.1:%d" % port


WARMUP = 8


def measure(bench, data, workers, batches, env):
    """(samples/s after the warm-up, seconds to the first batch)."""
    out = subprocess.run(
        [bench, "--data", "tar:" + data, "--transform", "rrc:224,hflip,normalize:imagenet",
         "--batch-size", "64", "--workers", str(workers), "--batches", str(batches),
         "--warmup", str(WARMUP), "--order", "shards", "--json"],
        capture_output=True, text=True, env=env, timeout=900)
    if out.returncode != 0:
        raise SystemExit("seedloader-bench failed on %s:\n%s" % (data, out.stderr))
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["samples_per_s"], result["first_batch_s"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build/default"))
    parser.add_argument("--images", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--delay-ms", type=int, default=20)
    parser.add_argument("--quick", action="store_true",
                        help="200 images, one round, 1 worker: that it runs, no figures")
    args = parser.parse_args()
    if args.quick:
        args.images, args.rounds = 64 * (WARMUP + 2), 1
    bench, pack = pybench.built_tools(args.build, "seedloader-bench", "seedloader-pack")
    if not os.access(NGINX, os.X_OK):
        raise SystemExit("nginx is not installed (scripts/setup.sh installs nginx-light)")
    batches = args.images // 64 - WARMUP
    if batches < 1:
        raise SystemExit("--images must be at least %d" % (64 * (WARMUP + 1)))
    work = tempfile.mkdtemp(prefix="seedloader-remote-bench-")
    servers = []
    try:
        www, shards = packed_images(pack, work, args.images)
        nginx, http = start_nginx(www, work)
        servers.append(nginx)
        rclone, s3 = start_rclone(www, work)
        servers.append(rclone)
        proxy, slow = start_proxy(http, args.delay_ms)
        servers.append(proxy)
        late = "nginx + %d ms per request" % args.delay_ms
        sources = [("local disk", os.path.join(www, "data")),
                   ("nginx, HTTP on loopback", http + "/data/"),
                   ("rclone serve s3", "s3://data/"),
                   (late, slow + "/data/"),
                   (late + ", no prefetch", slow + "/data/")]
        env = dict(os.environ, AWS_ENDPOINT_URL=s3, AWS_ACCESS_KEY_ID=KEY,
                   AWS_SECRET_ACCESS_KEY=SECRET, AWS_REGION="us-east-1")
        worker_counts = (1,) if args.quick else (1, 2)
        figures = {}  # (source, workers, "cold" | "warm") -> [(samples/s, first batch s)]
        for r in range(args.rounds):
            for workers in worker_counts:
                for name, data in sources:
                    cache = os.path.join(work, "cache-%d-%d" % (r, workers))
                    shutil.rmtree(cache, ignore_errors=True)
                    run_env = dict(env, SEEDLOADER_CACHE_DIR=cache)
                    if name.endswith("no prefetch"):
                        run_env["SEEDLOADER_PREFETCH_SHARDS"] = "0"
                    for state in ("cold", "warm"):
                        figures.setdefault((name, workers, state), []).append(
                            measure(bench, data, workers, batches, run_env))
                        if data == sources[0][1]:
                            break  # a local folder has no cache

        def median(key, what):
            return statistics.median(f[what] for f in figures[key])

        print("%d JPEGs of 320x240 in %d shards of up to 1 MB; rrc:224,hflip,"
              "normalize:imagenet, batch 64, --order shards; samples/s over the epoch "
              "after %d batches; median of %d rounds\n"
              % (args.images, shards, WARMUP, args.rounds))
        print("| source | workers | cold cache samples/s | warm cache samples/s | "
              "cold / local | warm / local | first batch, cold |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for workers in worker_counts:
            key = (sources[0][0], workers, "cold")
            local = median(key, 0)
            print("| %s | %d | %.0f | - | 1.00 | - | %.2f s |"
                  % (sources[0][0], workers, local, median(key, 1)))
            for name, _ in sources[1:]:
                cold = median((name, workers, "cold"), 0)
                warm = median((name, workers, "warm"), 0)
                print("| %s | %d | %.0f | %.0f | %.2f | %.2f | %.2f s |"
                      % (name, workers, cold, warm, cold / local, warm / local,
                         median((name, workers, "cold"), 1)))
    finally:
        for proc in servers:
            proc.terminate()
            proc.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
