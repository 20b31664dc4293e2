"""DataLoader(remote=seedloader.ray.Fleet(...)): batches made by Ray actors on a
local cluster of three nodes are the local loader's, bit for bit, through lost,
removed, slow and added actors, resumes either way, DDP ranks and the audit.

The local loaders these compare with run in this process, which has called
ray.init(): with num_workers=0 (batches do not depend on the worker count, as
test_loader shows), since forking a Ray driver for Python workers is what Ray
does not support (docs/fleet.md); the actors' own workers are forked."""
import gc
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

import seedloader as sl

ray = pytest.importorskip("ray", reason="ray is not installed (pip install seedloader[ray])")
from ray.cluster_utils import Cluster  # noqa: E402

torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def cluster():
    """Three raylets on this machine, a CPU each."""
    c = Cluster(initialize_head=True,
                head_node_args={"num_cpus": 1, "include_dashboard": False})
    for _ in range(2):
        c.add_node(num_cpus=1)
    ray.init(address=c.address, log_to_driver=False)
    yield c
    ray.shutdown()
    c.shutdown()


@pytest.fixture
def fleets(cluster):
    """fleets(**kw) -> a Fleet, shut down after the test."""
    made = []

    def make(actors, num_workers=0, **kw):
        kw.setdefault("cpus_per_actor", 0.25)
        f = sl.ray.Fleet(actors=actors, num_workers=num_workers, **kw)
        made.append(f)
        return f
    yield make
    for f in made:
        f.shutdown()


class Noisy:
    """A Python data set with a random augmentation from the per-sample stream."""

    def __init__(self, n=90, slow_pid=None):
        self.n, self.slow_pid = n, slow_pid

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.slow_pid == os.getpid():
            time.sleep(0.2)
        return {"x": torch.rand(3, 4), "label": i}


def native():
    return sl.Synthetic(70, 6, 6, transform="hflip")


def mixture():
    return sl.Mixture({"a": sl.Synthetic(40, 4, 4), "b": sl.Synthetic(60, 4, 4)},
                      weights={"a": 0.3, "b": 0.7}, samples_per_epoch=96)


KW = dict(batch_size=8, shuffle=True, seed=11, seeding="sample")


def epoch(loader):
    """One pass, each batch's tensors copied out."""
    return [_plain(b) for b in loader]


def _plain(batch):
    if isinstance(batch, torch.Tensor):
        return batch.clone()
    if isinstance(batch, dict):
        return {k: _plain(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return [_plain(v) for v in batch]
    return batch


def assert_same(got, want):
    assert len(got) == len(want)
    for k, (a, b) in enumerate(zip(got, want)):
        _same(a, b, "batch %d" % k)


def _same(a, b, where):
    if isinstance(b, torch.Tensor):
        assert isinstance(a, torch.Tensor) and a.dtype == b.dtype, where
        assert torch.equal(a, b), where
    elif isinstance(b, dict):
        assert a.keys() == b.keys(), where
        for k in b:
            _same(a[k], b[k], "%s[%r]" % (where, k))
    elif isinstance(b, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, "%s[%d]" % (where, i))
    else:
        assert a == b, where


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("actors", [1, 2, 3])
def test_the_batches_are_the_local_loaders_for_any_fleet(fleets, actors, workers):
    fleet = fleets(actors, workers)
    # Parts of 1 batch a worker (the default), 1 (3: odd) and 3 (6), the last
    # part of an epoch cut short.
    prefetch = {1: None, 2: 3, 3: 6}[actors]
    made = 0
    for make in (Noisy, native, mixture):
        local = sl.DataLoader(make(), **KW)
        remote = sl.DataLoader(make(), remote=fleet, prefetch_factor=prefetch, **KW)
        for _ in range(2):
            assert_same(epoch(remote), epoch(local))
        stats = remote.stats()
        assert stats["batches"] == len(local) and stats["epoch"] == 1
        assert 0 <= stats["stall_share"] <= 1
        made += 2 * len(local)
        # Each batch delivered is counted once, for the actor whose copy won.
        assert sum(a["batches"] for a in stats["fleet"]["actors"]) == made


def test_a_collate_fn_mixup_and_skips_travel_with_the_loader(fleets):
    fleet = fleets(2, 1)

    def collate(samples):
        return {"x": torch.stack([s["x"] for s in samples]).sum(0),
                "labels": torch.tensor([s["label"] for s in samples]).sum()}
    for kw in (dict(collate_fn=collate), dict(mixup_alpha=0.4, num_classes=10)):
        ds = Noisy() if "collate_fn" in kw else native()
        local = sl.DataLoader(ds, **KW, **kw)
        remote = sl.DataLoader(ds, remote=fleet, **KW, **kw)
        local.skip(steps=[(2, 3)])
        remote.skip(steps=[(2, 3)])
        assert_same(epoch(remote), epoch(local))
        # The skipped step counts as passed in the position, as it does locally.
        assert remote.state_dict() == local.state_dict()


def _kill_after(loader, batches, action):
    out = []
    for k, b in enumerate(loader):
        out.append(_plain(b))
        if k == batches:
            action()
    return out


def test_an_actor_killed_mid_epoch_changes_nothing(fleets):
    fleet = fleets(3, 1)
    local = epoch(sl.DataLoader(Noisy(400), **KW))
    remote = sl.DataLoader(Noisy(400), remote=fleet, **KW)
    # Killed early, so that parts are still sent to it (how a death shows).
    got = _kill_after(remote, 1, lambda: ray.kill(fleet.actors[0]))
    assert_same(got, local)
    counts = remote.stats()["fleet"]
    assert counts["actors_lost"] == 1 and counts["leases_resent"] >= 1
    assert len(fleet.actors) == 2


def test_a_node_removed_mid_epoch_changes_nothing(cluster, fleets):
    node = cluster.add_node(num_cpus=1)
    fleet = fleets(4, 1, cpus_per_actor=1)  # one on each of the four nodes
    local = epoch(sl.DataLoader(Noisy(400), **KW))
    remote = sl.DataLoader(Noisy(400), remote=fleet, **KW)
    got = _kill_after(remote, 2, lambda: cluster.remove_node(node))
    assert_same(got, local)
    counts = remote.stats()["fleet"]
    assert counts["actors_lost"] == 1 and counts["leases_resent"] >= 1
    assert [a["state"] for a in counts["actors"]].count("lost") == 1


def test_a_straggler_is_duplicated_and_the_first_result_wins(fleets):
    fleet = fleets(2, 0, straggler_factor=2.0)
    slow = ray.get(fleet.actors[0].pid.remote())
    # Enough parts that the fast actor's times make a median early on (a part is
    # duplicated once three are known, and past a second).
    local = epoch(sl.DataLoader(Noisy(64), **KW))
    remote = sl.DataLoader(Noisy(64, slow_pid=slow), remote=fleet, **KW)
    assert_same(epoch(remote), local)
    # The slow copy of a part, if it comes back before the pass ends, is dropped.
    assert remote.stats()["fleet"]["leases_duplicated"] >= 1


def test_an_actor_added_mid_epoch_changes_nothing(fleets):
    fleet = fleets(1, 1)
    local = epoch(sl.DataLoader(native(), **KW))
    remote = sl.DataLoader(native(), remote=fleet, **KW)
    got = _kill_after(remote, 2, lambda: fleet.resize(3))
    assert_same(got, local)
    counts = remote.stats()["fleet"]
    assert counts["actors_added"] == 2
    assert sum(1 for a in counts["actors"] if a["batches"]) >= 2


@pytest.mark.parametrize("direction", ["fleet->local", "local->fleet"])
def test_a_state_resumes_between_a_fleet_and_local_workers(fleets, direction):
    fleet = fleets(3, 1)
    whole = sl.DataLoader(Noisy(), **KW)
    want = epoch(whole) + epoch(whole)

    def loader(remote):
        # Local: spawned workers (a fork of this Ray driver is not safe).
        return sl.DataLoader(Noisy(), remote=fleet if remote else None,
                             num_workers=0 if remote else 2,
                             multiprocessing_context=None if remote else "spawn", **KW)
    first = loader(direction.startswith("fleet"))
    got = []
    for k, b in enumerate(first):
        got.append(_plain(b))
        if k == 4:
            break
    state = first.state_dict()
    second = loader(direction.endswith("fleet"))
    second.load_state_dict(state)
    got += epoch(second) + epoch(second)
    assert_same(got, want)


def test_a_lease_carries_prefetch_factor_over_two_batches_a_worker():
    shape = sl.ray._remote.lease_shape
    assert shape(None, 0) == (2, 1) and shape(2, 4) == (2, 4) and shape(1, 3) == (1, 3)
    assert shape(8, 1) == (2, 4) and shape(7, 2) == (2, 6)
    for prefetch in range(1, 10):
        for workers in range(4):
            depth, size = shape(prefetch, workers)
            # Never more in flight than prefetch_factor x workers an actor.
            assert size >= max(1, workers) and depth * size <= prefetch * max(1, workers)


def test_objects_are_freed_as_batches_go_and_in_flight_ones_are_bounded(fleets):
    fleet = fleets(2, 1)
    remote = sl.DataLoader(sl.Synthetic(200, 32, 32), remote=fleet, prefetch_factor=4,
                           **KW)
    before, after, most = _objects(), [], 0
    for _ in range(5):
        for batch in remote:
            most = max(most, _objects(collect=False) - before)
        del batch  # the last batch holds its part's object, as any batch does
        after.append(_objects() - before)
    # The recipe stays; every part's object went with its batches.
    assert after == [1] * 5
    # Two parts of prefetch_factor / 2 (2) batches a worker (1) per actor, so
    # prefetch_factor x actors x workers (8) batches in flight; the recipe, and
    # the part being delivered.
    assert most <= 2 * 2 + 2


def _objects(collect=True):
    """The objects this process holds references to (what earlier tests left
    collected first: a count without it may only be higher)."""
    if collect:
        gc.collect()
    worker = ray._private.worker.global_worker
    return len(worker.core_worker.get_all_reference_counts())


def test_a_trace_of_a_fleet_run_with_an_actor_killed_audits_clean(
        fleets, tmp_path, audit_check, read_trace):
    fleet = fleets(2, 1)
    path = tmp_path / "fleet.jsonl"
    remote = sl.DataLoader(Noisy(), remote=fleet, **KW)
    traced = sl.audit.trace(remote, path)
    _kill_after(traced, 2, lambda: ray.kill(fleet.actors[0]))
    lines = read_trace(path)
    assert len(lines) == 90
    assert {line["actor"] for line in lines} >= {0, 1}
    assert audit_check(path, 90) == {}


def test_bad_input_is_a_clear_error(fleets):
    with pytest.raises(sl.ConfigError, match="actors must be an int >= 1"):
        sl.ray.Fleet(actors=0)
    fleet = fleets(1, 0)
    with pytest.raises(sl.ConfigError, match="seeding=\"sample\""):
        sl.DataLoader(Noisy(), batch_size=4, seed=1, remote=fleet)
    with pytest.raises(sl.ConfigError, match="sampler"):
        sl.DataLoader(Noisy(), batch_size=4, seed=1, seeding="sample",
                      sampler=range(90), remote=fleet)
    unpicklable = Noisy()
    unpicklable.lock = threading.Lock()
    with pytest.raises(sl.ConfigError, match="Noisy cannot be pickled"):
        sl.DataLoader(unpicklable, remote=fleet, **KW)
    with pytest.raises(TypeError, match="belongs to the process"):
        __import__("pickle").dumps(fleet)


def test_a_fleet_with_every_actor_dead_raises_naming_it(fleets):
    fleet = fleets(2, 0, timeout=2)
    remote = sl.DataLoader(Noisy(), remote=fleet, **KW)
    for a in fleet.actors:
        ray.kill(a)
    started = time.monotonic()
    with pytest.raises(sl.TimeoutError, match=r"Fleet\(actors=0.*epoch 0's batches"):
        epoch(remote)
    assert time.monotonic() - started < 30


def test_an_unreachable_address_and_a_missing_ray_are_clear_errors():
    out = _python("sl.ray.Fleet(actors=1, address='127.0.0.1:9')", sl.ConfigError)
    assert "raised: Fleet: no Ray cluster answers at 127.0.0.1:9" in out
    out = _python("sl.ray", ImportError, "import sys; sys.modules['ray'] = None")
    assert "raised: seedloader.ray needs the ray package: pip install seedloader[ray]" \
        in out


def _python(statement, error, before=""):
    """What a fresh interpreter prints running `statement` (after `before`) and
    printing the `error` it raises."""
    code = ("%s\nimport seedloader as sl\ntry:\n    %s\nexcept %s as e:\n"
            "    print('raised:', e)\n" % (before, statement, error.__name__))
    if error is sl.ConfigError:
        code = code.replace("except ConfigError", "except sl.ConfigError")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    return run.stdout + run.stderr


def test_two_ddp_ranks_with_a_fleet_each_train_the_local_global_batches(cluster,
                                                                        tmp_path):
    out = tmp_path / "ranks"
    env = dict(os.environ, SEEDLOADER_FLEET_ADDRESS=cluster.address,
               SEEDLOADER_FLEET_OUT=str(out))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # Debian's torch 1.13 under Python 3.11 needs --redirects/--tee.
    run = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
         "--master_addr=127.0.0.1", "--master_port=%d" % port, "--redirects=1", "--tee=1",
         os.path.join(HERE, "fleet_ranks.py")],
        env=env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    for rank in (0, 1):
        local = sl.DataLoader(Noisy(), batch_size=4, shuffle=True, seed=5,
                              seeding="sample", partition="elastic", rank=rank,
                              world_size=2)
        want = [[b["label"].tolist(), b["x"].numpy().tolist()] for e in range(2)
                for b in local]
        with open("%s.%d.json" % (out, rank)) as f:
            got = json.load(f)
        assert got == json.loads(json.dumps(want))
