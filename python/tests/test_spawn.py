"""Workers started by multiprocessing_context="spawn" or "forkserver": fresh
interpreters that receive the dataset pickled and serve the same slots as forked
workers, so every batch, stream and seeded global equals fork's."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
import torch

import seedloader as sl

# What this module's global reads in a fresh interpreter: a spawned worker does
# not see the parent's assignment below.
STATE = "as imported"


class Draws:
    """Each sample: its index, a draw from its stream, from numpy's and torch's
    global generators, the worker's torch worker info and this module's STATE."""

    def __init__(self, n=23):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i, rng):
        info = torch.utils.data.get_worker_info()  # None in the layout's probe
        return {"x": np.full(3, i, np.int64), "r": rng.random(2),
                "g": np.array([np.random.random(), torch.rand(1).item()]),
                "w": np.array([info.id, info.num_workers] if info else [-1, -1]),
                "fresh": np.array(STATE == "as imported")}


class Refuses(Draws):
    """Pickles, but a worker cannot unpickle it."""

    def __setstate__(self, state):
        raise RuntimeError("this dataset cannot be rebuilt")


class Locked(Draws):
    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()


def record_init(worker_id):
    np.random.seed(1000 + worker_id)


def epochs(context, count=2, **kw):
    """Every batch of `count` epochs, each epoch's batches all kept until it ends."""
    kw = {"batch_size": 4, "num_workers": 2, "seed": 5, "shuffle": True, **kw}
    dataset = kw.pop("dataset", None) or Draws()
    loader = sl.DataLoader(dataset, multiprocessing_context=context, **kw)
    out = []
    for _ in range(count):
        kept = list(loader)
        out += [{k: v.tolist() for k, v in b.items()} for b in kept]
    return out


@pytest.mark.parametrize("kw", [
    dict(), dict(persistent_workers=True), dict(seeding="sample"),
    dict(seeding="sample", persistent_workers=True, prefetch_factor=1),
    dict(worker_init_fn=record_init),
])
def test_spawned_workers_give_forks_batches(kw):
    global STATE
    STATE = "changed in the parent"
    try:
        forked = epochs(None, **kw)
        assert not any(b["fresh"][0] for b in forked)  # forks see the parent's state
        for context in ("spawn", "forkserver"):
            spawned = epochs(context, **kw)
            assert all(all(b["fresh"]) for b in spawned)  # a fresh interpreter
            for b in spawned:
                b.pop("fresh")
            assert spawned == [{k: v for k, v in b.items() if k != "fresh"}
                               for b in forked], context
    finally:
        STATE = "as imported"


def test_a_collate_fn_a_batch_sampler_and_a_mixture_under_spawn():
    def rows(b):
        return [b["x"].tolist(), b["r"].tolist()]

    collate = dict(collate_fn=torch.utils.data.default_collate, batch_size=3)
    sampler = dict(batch_sampler=torch.utils.data.BatchSampler(
        torch.utils.data.SequentialSampler(range(23)), 5, False), shuffle=False,
        batch_size=1)
    mixture = dict(dataset=sl.Mixture({"a": Draws(10), "b": Draws(7)}, {"a": 2, "b": 1}),
                   batch_size=3, seeding="sample")
    # A plan whose batches hold fewer samples than batch_size: the slots are
    # sized by batch_size in the parent and the worker alike.
    short = dict(dataset=Draws(5), sampler=[3, 1, 4, 0], batch_size=8)
    for kw in (collate, sampler, mixture, short):
        assert [rows(b) for b in _batches("spawn", kw)] == \
            [rows(b) for b in _batches(None, kw)]


def _batches(context, kw):
    kw = {"num_workers": 2, "seed": 5, **kw}
    loader = sl.DataLoader(kw.pop("dataset", Draws()), multiprocessing_context=context,
                           **kw)
    return [b for _ in range(2) for b in loader]


def test_seedloaders_own_datasets_are_forked_under_spawn():
    def pixels(context):
        loader = sl.DataLoader(sl.Synthetic(12, 8, 8), batch_size=4, num_workers=2,
                               seed=3, multiprocessing_context=context)
        return [b["image"].tolist() for b in loader]
    assert pixels("spawn") == pixels(None)


def test_a_dataset_that_does_not_pickle_raises_its_error_with_a_note():
    loader = sl.DataLoader(Locked(), batch_size=4, num_workers=1, seed=1,
                           multiprocessing_context="spawn")
    with pytest.raises(TypeError, match="lock") as raised:
        next(iter(loader))
    assert any("spawn or forkserver" in note for note in raised.value.__notes__)


def test_a_worker_that_cannot_rebuild_the_dataset_is_a_worker_error():
    loader = sl.DataLoader(Refuses(), batch_size=4, num_workers=1, seed=1,
                           multiprocessing_context="spawn")
    with pytest.raises(sl.WorkerError, match="exited with code 1"):
        next(iter(loader))


SCRIPT = """
import numpy as np, seedloader as sl, sys

class Script:  # a class of the script itself: __main__'s, run as __mp_main__
    def __len__(self):
        return 10
    def __getitem__(self, i):
        return np.array([i, np.random.randint(1 << 30)])

if __name__ == "__main__":
    loader = sl.DataLoader(Script(), batch_size=3, num_workers=2, seed=9,
                           multiprocessing_context=sys.argv[1] if sys.argv[1] != "fork"
                           else None)
    print([b.tolist() for b in loader])
"""


def test_a_scripts_own_dataset_class_reaches_spawned_workers(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    out = {}
    for context in ("fork", "spawn"):
        run = subprocess.run([sys.executable, str(script), context], capture_output=True,
                             text=True, timeout=120, cwd=tmp_path,
                             env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        assert run.returncode == 0, run.stderr
        out[context] = run.stdout.strip().splitlines()[-1]
    assert out["spawn"] == out["fork"]
