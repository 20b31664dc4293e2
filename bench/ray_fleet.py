"""A fleet of Ray actors against local workers, on this machine (docs/fleet.md,
docs/performance.md).

  build/venv/bin/python bench/ray_fleet.py [--rounds 3] [--quick]

1. The same JPEG pipeline (ImageFolder, rrc:224,hflip,normalize:imagenet, batch
   32, prefetch_factor 8) through DataLoader(remote=Fleet(actors=2,
   num_workers=1)) and through DataLoader(num_workers=2), alternating, on a
   one-node Ray cluster of this machine's cores: samples/s, and the trainer
   process's CPU per batch; the same fleet at prefetch_factor 2 (one batch a
   Ray call).
2. What one batch costs to cross the object store (its bytes; ms to put and get
   it back in this process; the CPU of a put); what Ray alone costs the trainer
   per batch (two actors returning ready batches in a fleet's parts); the
   ceiling the two put on a fleet's ratio on these cores; one actor's rate.
3. A simulated cluster of three raylets on this machine: the fleet's rate at 1,
   2 and 3 actors of one worker (it grows as far as the cores allow).
Then, on paper: CPU nodes of K cores needed to feed 8 GPUs at S samples/s each.
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pybench  # noqa: E402

BATCH = 32
SPEC = "rrc:224,hflip,normalize:imagenet"
PREFETCH = 8


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    pybench.add_run_options(parser, 3, "fewer batches and images")
    parser.add_argument("--images", type=int, default=2000)
    args = parser.parse_args()
    sl, why = pybench.import_seedloader()
    if sl is None:
        raise SystemExit("seedloader " + why)
    import ray
    from ray.cluster_utils import Cluster
    out_dir = args.out or (pybench.QUICK_RESULTS if args.quick else pybench.RESULTS)
    images = 96 if args.quick else args.images
    batches = 10 if args.quick else 300
    root = os.path.join(pybench.ROOT, "build", "bench-data", "fleet-%d" % images)
    pybench.make_image_folder(root, images, texture="photo")
    cores = os.cpu_count()
    print(pybench.machine())

    # 1 and 2: one raylet with this machine's cores.
    ray.init(num_cpus=cores, include_dashboard=False, log_to_driver=False)
    dataset = sl.ImageFolder(root, transform=SPEC)
    # prefetch_factor 8 for both: a fleet's Ray call then carries 4 batches a
    # worker (seedloader._remote.lease_shape), a local loader reads 8 ahead.
    kw = dict(batch_size=BATCH, shuffle=True, seed=7, seeding="sample", drop_last=True,
              prefetch_factor=PREFETCH)
    fleet = sl.ray.Fleet(actors=2, num_workers=1, cpus_per_actor=cores / 2)
    # Forked workers of a native data set run no Python, which is what makes a
    # fork of a Ray driver unsafe (docs/fleet.md).
    local = sl.DataLoader(dataset, num_workers=2, persistent_workers=True, **kw)
    remote = sl.DataLoader(dataset, remote=fleet, **kw)
    # The same fleet at torch's default prefetch_factor: one batch a Ray call.
    single = sl.DataLoader(dataset, remote=fleet, **dict(kw, prefetch_factor=2))
    # Untimed first: Ray's store hands out pages never touched before for its
    # first gigabytes of objects, each a page fault (a put then costs 4x a warm
    # one here): a start-up cost, which the timed rounds leave out.
    for loader in (local, remote, single):
        pybench.measure(_counted(loader), warmup=0, batches=10 if args.quick else 150)
    runs = {"local": [], "fleet": [], "fleet_one_batch_a_call": []}
    for rnd in range(args.rounds):
        order = (("local", local), ("fleet", remote), ("fleet_one_batch_a_call", single))
        for name, loader in order[rnd % 3:] + order[:rnd % 3]:  # alternating
            # Warm-up: each actor's first part builds its loader and forks its workers.
            runs[name].append(pybench.measure(_counted(loader), warmup=8, batches=batches))

    def median(name, metric):
        return pybench.median([r[metric] for r in runs[name]])

    def ratio(name, metric):  # the median of the rounds' ratios to the local loader
        return pybench.median(pybench.ratios(runs[name], runs["local"], metric))

    figures = {
        "local_samples_per_s": median("local", "samples_per_s"),
        "fleet_samples_per_s": median("fleet", "samples_per_s"),
        "samples_per_s_ratio": ratio("fleet", "samples_per_s"),
        "local_main_cpu_us_per_batch": median("local", "main_cpu_us_per_batch"),
        "fleet_main_cpu_us_per_batch": median("fleet", "main_cpu_us_per_batch"),
        "main_cpu_ratio": ratio("fleet", "main_cpu_us_per_batch"),
        "one_batch_a_call_samples_per_s_ratio": ratio("fleet_one_batch_a_call",
                                                      "samples_per_s"),
        "one_batch_a_call_main_cpu_ratio": ratio("fleet_one_batch_a_call",
                                                 "main_cpu_us_per_batch")}
    print("2 actors x 1 worker vs 2 local workers, %d cores: %.0f vs %.0f samples/s, "
          "ratio %.2f; trainer CPU per batch %.0f vs %.0f us, ratio %.2f" % (
              cores, figures["fleet_samples_per_s"], figures["local_samples_per_s"],
              figures["samples_per_s_ratio"], figures["fleet_main_cpu_us_per_batch"],
              figures["local_main_cpu_us_per_batch"], figures["main_cpu_ratio"]))
    print("the same fleet at prefetch_factor 2 (one batch a Ray call): ratio %.2f, "
          "trainer CPU ratio %.2f" % (figures["one_batch_a_call_samples_per_s_ratio"],
                                      figures["one_batch_a_call_main_cpu_ratio"]))
    from seedloader import _remote
    packed = _remote.pack(next(iter(local)))  # one batch as a fleet's actor sends it
    figures.update(_crossing(ray, packed, 10 if args.quick else 150))
    figures.update(_ray_alone(ray, packed, PREFETCH // 2, 20 if args.quick else 150))
    # What no fleet on these cores gets past: the local path's CPU per batch
    # (its cores over its rate: at most what it is) against that plus what Ray
    # alone costs a batch on them (its copy into the store, the trainer's CPU),
    # all else free.
    local_ms = cores * 1e3 * BATCH / figures["local_samples_per_s"]
    ray_ms = figures["put_cpu_ms"] + figures["ray_alone_main_cpu_us_per_batch"] / 1e3
    figures["ceiling_ratio"] = local_ms / (local_ms + ray_ms)
    figures["ray_alone_main_cpu_ratio"] = (figures["ray_alone_main_cpu_us_per_batch"] /
                                           figures["local_main_cpu_us_per_batch"])
    print("Ray alone: a batch's put costs %.2f ms of CPU; 2 actors returning ready "
          "batches, %d a call, cost the trainer %.0f us a batch (%.2fx the local "
          "path's); against at most %.1f ms to make a batch on these cores, no fleet "
          "here passes a ratio of %.2f" % (
              figures["put_cpu_ms"], PREFETCH // 2,
              figures["ray_alone_main_cpu_us_per_batch"],
              figures["ray_alone_main_cpu_ratio"], local_ms, figures["ceiling_ratio"]))
    fleet.resize(1)
    one = sl.DataLoader(dataset, remote=fleet, **kw)
    figures["one_actor_samples_per_s"] = pybench.measure(
        _counted(one), warmup=8, batches=batches)["samples_per_s"]
    print("one batch: %d bytes, %.2f ms to put and get through the object store; one "
          "actor of one worker: %.0f samples/s" % (
              figures["batch_bytes"], figures["crossing_ms"],
              figures["one_actor_samples_per_s"]))
    fleet.shutdown()
    local.close()
    ray.shutdown()

    if args.quick:  # a smoke run stops here: the cluster's figures need long runs
        path = pybench.write_json(out_dir, "ray_fleet", {"machine": pybench.machine(),
                                                         "figures": figures, "runs": runs})
        print("wrote " + path)
        return
    # 3: three raylets of one CPU each, with stores of 1 GiB (Cluster's own
    # 150 MiB cannot hold two parts of 4 batches of 19 MB an actor: Ray would
    # spill them to disk, as it would on a real node whose store is too small).
    store = 1 << 30
    cluster = Cluster(initialize_head=True,
                      head_node_args={"num_cpus": 1, "include_dashboard": False,
                                      "object_store_memory": store})
    for _ in range(2):
        cluster.add_node(num_cpus=1, object_store_memory=store)
    ray.init(address=cluster.address, log_to_driver=False)
    # The same batches from sources of two sizes: a heavier decode per batch of
    # the same bytes shows what the trip between raylets takes from the cores.
    big_root = os.path.join(pybench.ROOT, "build", "bench-data",
                            "fleet-1024-%d" % (images // 4))
    pybench.make_image_folder(big_root, images // 4, width=1024, height=768,
                              texture="photo")
    for source, data in (("320x240", dataset),
                         ("1024x768", sl.ImageFolder(big_root, transform=SPEC))):
        growth = {}
        for actors in (1, 2, 3):
            fleet = sl.ray.Fleet(actors=actors, num_workers=1, cpus_per_actor=1)
            loader = sl.DataLoader(data, remote=fleet, **kw)
            growth[actors] = statistics.median(
                pybench.measure(_counted(loader), warmup=4 + 4 * actors,
                                batches=batches // 2)["samples_per_s"]
                for _ in range(max(1, args.rounds - 1)))
            fleet.shutdown()
            print("simulated cluster, %s sources, %d actor(s) of 1 worker on 3 one-CPU "
                  "raylets: %.0f samples/s" % (source, actors, growth[actors]))
        figures["cluster_samples_per_s_by_actors_" + source] = growth
    ray.shutdown()
    cluster.shutdown()

    # On paper: each actor of W workers on a K-core node makes about W x the one-
    # worker rate (the workers are independent processes).
    per_core = figures["one_actor_samples_per_s"]
    for k, per_gpu in ((32, 2000), (64, 3000)):
        nodes = 8 * per_gpu / (per_core * (k - 1))
        print("8 GPUs at %d samples/s each, from CPU nodes of %d cores (one actor of %d "
              "workers each, %.0f samples/s a core): %.1f nodes" % (
                  per_gpu, k, k - 1, per_core, nodes))
        figures["nodes_for_8_gpus_%d_cores_%d_per_gpu" % (k, per_gpu)] = nodes
    path = pybench.write_json(out_dir, "ray_fleet", {"machine": pybench.machine(),
                                                     "figures": figures, "runs": runs})
    print("wrote " + path)


def _counted(loader):
    def epoch(_):
        for batch in loader:
            yield len(batch["image"])
    return epoch


class _Ready:
    """A Ray actor (made with ray.remote in _ray_alone) that returns `size`
    ready batches a call, each its own copy: a fleet's actor without the making."""

    def __init__(self, packed, size):
        from seedloader import _remote
        batch = _remote.unpack(packed)
        # Each its own memory, as a fleet's batches are.
        self.part = [_remote.pack({k: v.clone() for k, v in batch.items()})
                     for _ in range(size)]

    def make(self):
        return self.part


def _ray_alone(ray, packed, size, parts):
    """What Ray alone costs the trainer (this process, all its threads) per batch
    from two actors of a fleet's shape (`size` copies of the packed batch a
    call, two calls in flight an actor), over `parts` parts after as many
    untimed."""
    from seedloader import _remote
    actors = [ray.remote(_Ready).remote(packed, size) for _ in range(2)]
    pending = [actors[k % 2].make.remote() for k in range(4)]
    for k in range(2 * parts):
        if k == parts:
            cpu = pybench.cpu_seconds()
        batches = _remote.unpack(ray.get(pending.pop(0)))
        del batches
        pending.append(actors[k % 2].make.remote())
    main = pybench.cpu_seconds() - cpu
    for a in actors:
        ray.kill(a)
    return {"ray_alone_main_cpu_us_per_batch": main / (parts * size) * 1e6}


def _crossing(ray, packed, warm):
    """The packed batch's bytes; the ms to put it in the object store and get it
    back (median of 20), as a fleet's batch travels; the CPU (this process, all
    its threads) of one put, four kept in flight, after `warm` untimed puts."""
    from seedloader import _remote
    size = sum(t.data.nbytes for t in packed.values())
    times = []
    for _ in range(20):
        start = time.perf_counter()
        _remote.unpack(ray.get(ray.put(packed)))
        times.append((time.perf_counter() - start) * 1e3)
    kept = []
    for k in range(warm + 40):
        if k == warm:
            cpu = pybench.cpu_seconds()
        kept = kept[-3:] + [ray.put(packed)]
    put_cpu = (pybench.cpu_seconds() - cpu) / 40 * 1e3
    return {"batch_bytes": size, "crossing_ms": statistics.median(times),
            "put_cpu_ms": put_cpu}


if __name__ == "__main__":
    main()
