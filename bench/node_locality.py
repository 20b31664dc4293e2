#!/usr/bin/env python3
"""What each node downloads in one epoch of a packed data set served over HTTP, with
and without canonical nodes: a real run, not a model (bench/shard_locality models it
at ImageNet's scale).

A data set packed by seedloader-pack into many small shards is served by nginx on
127.0.0.1. N simulated nodes of R ranks each (world N x R, partition "elastic",
order "shards", per-sample seeding) read one epoch through sl.TarShards, each node
with its own shard cache (bounded to a few shards) shared by its ranks; node n asks
as user "node<n>" (a URL's userinfo), so nginx's access log tells the nodes apart,
and the bytes it served each node are summed from the log. Printed per split and
node: the bytes downloaded against the data set, and against the node's share.

Usage: build/venv/bin/python bench/node_locality.py [--build build/default]
       [--samples 2048] [--nodes 4] [--ranks-per-node 2] [--cache-shards 16] [--quick]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import pybench  # noqa: E402
from remote_bench import NGINX, start_nginx  # noqa: E402


def served(log, user):
    """Bytes nginx sent to `user`, from the access log (the shards; index.json too)."""
    total = 0
    with open(log) as f:
        for line in f:
            who, sent, _ = line.split(" ", 2)
            if who == user:
                total += int(sent)
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build/default"))
    parser.add_argument("--samples", type=int, default=2048)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--ranks-per-node", type=int, default=2)
    parser.add_argument("--cache-shards", type=int, default=16)
    parser.add_argument("--quick", action="store_true",
                        help="256 samples on 2 nodes: that it runs, no figures")
    args = parser.parse_args()
    if args.quick:
        args.samples, args.nodes = 256, 2
    import seedloader as sl

    pack, = pybench.built_tools(args.build, "seedloader-pack")
    if not os.access(NGINX, os.X_OK):
        raise SystemExit("nginx is not installed (scripts/setup.sh installs nginx-light)")
    world = args.nodes * args.ranks_per_node
    global_batch = 8 * world
    with tempfile.TemporaryDirectory() as work:
        data = os.path.join(work, "www", "data")
        subprocess.run([pack, "synthetic:%d" % args.samples, data, "--shard-size", "48K"],
                       check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(data, "index.json")) as f:
            shards = json.load(f)["shards"]
        total = sum(s["bytes"] for s in shards)
        largest = max(s["bytes"] for s in shards)
        log = os.path.join(work, "access.log")
        nginx, base = start_nginx(os.path.join(work, "www"), work, access_log=log)
        port = int(base.rsplit(":", 1)[1])
        try:
            print("%d samples in %d shards (%.1f MB); %d nodes of %d ranks; a cache of %d "
                  "shards per node; global batch %d, order shards, partition elastic\n"
                  % (args.samples, len(shards), total / 1e6, args.nodes, args.ranks_per_node,
                     args.cache_shards, global_batch))
            print("| split | node | downloaded (x data set) | x its share |")
            print("| --- | --- | --- | --- |")
            for parts in (0, args.nodes):
                for node in range(args.nodes):
                    user = "node%d-%d" % (node, parts)
                    cache = os.path.join(work, "cache-%d-%d" % (parts, node))
                    loaders = []
                    for local in range(args.ranks_per_node):
                        ds = sl.TarShards("http://%s:x@127.0.0.1:%d/data/" % (user, port),
                                          transform="centercrop:16,u8", cache_dir=cache,
                                          cache_limit=args.cache_shards * largest,
                                          prefetch_shards=0)
                        loaders.append(sl.DataLoader(
                            ds, batch_size=global_batch // world, shuffle=True, seed=3,
                            seeding="sample", partition="elastic", order="shards",
                            canonical_nodes=parts, rank=node * args.ranks_per_node + local,
                            world_size=world))
                    # The node's ranks step together, as in training, through one cache.
                    for _ in zip(*loaders):
                        pass
                    got = served(log, user)
                    print("| %s | %d | %.3f | %.3f |" % (
                        "%d canonical nodes" % parts if parts else "none", node, got / total,
                        got / total * args.nodes))
        finally:
            nginx.terminate()
            nginx.wait()


if __name__ == "__main__":
    sys.exit(main())
