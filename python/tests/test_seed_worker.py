"""seedloader.torch.seed_worker on real PyTorch DataLoaders (2 workers)."""
import pickle
import random

import numpy as np
import pytest
import torch
import torch.utils.data as tud

from seedloader.audit import trace
from seedloader.torch import seed_worker

from generator_datasets import SIZE, NestedRng


class Holder:
    pass


class Draws(tud.Dataset):
    """Reports its worker and one draw from every kind of generator."""

    def __init__(self):
        self.a = np.random.default_rng(0)
        self.tf = Holder()
        self.tf.rs = np.random.RandomState(0)
        self.tf.py = random.Random(0)
        self.tf.tg = torch.Generator().manual_seed(0)
        self.alias = {"a": self.a}  # the same generator again: seeded once

    def __len__(self):
        return SIZE

    def __getitem__(self, i):
        return {"worker": tud.get_worker_info().id,
                "a": self.a.random(), "rs": self.tf.rs.random_sample(),
                "py": self.tf.py.random(), "tg": torch.rand((), generator=self.tf.tg).item(),
                "random": random.random(), "numpy": np.random.random(),
                "torch": torch.rand(()).item(),
                "same": self.alias["a"] is self.a}


def _child(base, key, j):
    return np.random.SeedSequence(base, spawn_key=key + (j,))


def _int128(seq):
    words = seq.generate_state(4)
    return sum(int(w) << (32 * k) for k, w in enumerate(words))


def _int63(seq):
    return int(seq.generate_state(1, np.uint64)[0]) >> 1


def _expected_draws(base, key, n):
    """The draws the module docstring promises for worker stream `key`."""
    py_global = random.Random(_int128(_child(base, key, 0)))
    np_global = np.random.RandomState(np.random.MT19937(_child(base, key, 1)))
    torch_global = torch.Generator().manual_seed(_int63(_child(base, key, 2)))
    a = np.random.default_rng(_child(base, key, 3))
    rs = np.random.RandomState(np.random.MT19937(_child(base, key, 4)))
    py = random.Random(_int128(_child(base, key, 5)))
    tg = torch.Generator().manual_seed(_int63(_child(base, key, 6)))
    return [{"a": a.random(), "rs": rs.random_sample(), "py": py.random(),
             "tg": torch.rand((), generator=tg).item(), "random": py_global.random(),
             "numpy": np_global.random_sample(),
             "torch": torch.rand((), generator=torch_global).item()}
            for _ in range(n)]


def test_workers_draw_what_numpy_gives_for_the_stated_keys():
    init = seed_worker(1234, rank=3)
    init.set_epoch(5)
    assert init.worker_key(1) == (1, 5, 3, 1)
    loader = tud.DataLoader(Draws(), batch_size=2, num_workers=2, worker_init_fn=init)
    per_worker = {0: [], 1: []}
    for batch in loader:
        assert batch["same"].all()  # reseeded in place: the alias is still the generator
        for s in range(len(batch["worker"])):
            per_worker[int(batch["worker"][s])].append(
                {k: v[s].item() for k, v in batch.items() if k not in ("worker", "same")})
    for w, got in per_worker.items():
        assert got == _expected_draws(1234, (1, 5, 3, w), len(got))
    assert per_worker[0] != per_worker[1]


def _run(dataset, path, epochs, init=None, sampler=None, rank=0, set_epoch=True):
    loader = trace(tud.DataLoader(dataset, batch_size=2, sampler=sampler, num_workers=2,
                                  worker_init_fn=init), path, rank=rank)
    for epoch in range(epochs):
        if set_epoch:
            (sampler or init).set_epoch(epoch)
        for _ in loader:
            pass


def test_stock_loader_duplicates_a_nested_generator_and_seed_worker_fixes_it(tmp_path,
                                                                           audit_check):
    stock, seeded = tmp_path / "stock.jsonl", tmp_path / "seeded.jsonl"
    _run(NestedRng(), stock, 1, set_epoch=False)
    _run(NestedRng(), seeded, 2, init=seed_worker(7))
    assert audit_check(stock, SIZE) == {"worker_rng_duplicate": SIZE // 2}
    assert audit_check(seeded, SIZE) == {}


def test_epochs_repeat_when_the_seeder_is_not_told_the_epoch(tmp_path, audit_check):
    path = tmp_path / "t.jsonl"
    _run(NestedRng(), path, 2, init=seed_worker(7), set_epoch=False)
    assert audit_check(path, SIZE) == {"epoch_rng_repeat": SIZE}


@pytest.mark.parametrize("give_rank", [True, False])
def test_ranks_get_distinct_streams_only_with_their_rank(tmp_path, audit_check,
                                                          give_rank):
    path = tmp_path / "t.jsonl"
    for rank in range(2):
        ds = NestedRng()
        sampler = tud.DistributedSampler(ds, num_replicas=2, rank=rank, seed=0)
        init = seed_worker(7, rank=rank if give_rank else 0, sampler=sampler)
        _run(ds, path, 2, init=init, sampler=sampler, rank=rank)
    expected = {} if give_rank else {"rank_rng_duplicate": SIZE}
    assert audit_check(path, SIZE) == expected


def test_spawned_workers_get_the_seeder_with_rank_and_epoch_fixed(tmp_path, audit_check,
                                                                  read_trace):
    path = tmp_path / "t.jsonl"
    ds = NestedRng()
    sampler = tud.DistributedSampler(ds, num_replicas=1, rank=0, seed=0)
    loader = trace(tud.DataLoader(ds, batch_size=2, sampler=sampler, num_workers=2,
                                  worker_init_fn=seed_worker(7, sampler=sampler),
                                  multiprocessing_context="spawn"), path)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for _ in loader:
            pass
    assert {line["epoch"] for line in read_trace(path)} == {0, 1}
    assert audit_check(path, SIZE) == {}


def test_rank_comes_from_the_argument_then_the_environment(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("SLURM_PROCID", raising=False)
    assert seed_worker(1).rank == 0
    monkeypatch.setenv("SLURM_PROCID", "5")
    assert seed_worker(1).rank == 5
    monkeypatch.setenv("RANK", "3")
    assert seed_worker(1).rank == 3
    assert seed_worker(1, rank=2).rank == 2
    monkeypatch.setenv("RANK", "x")
    with pytest.raises(ValueError, match="RANK"):
        seed_worker(1).rank


def test_epoch_comes_from_the_sampler_when_given():
    sampler = tud.DistributedSampler(range(SIZE), num_replicas=2, rank=0)
    init = seed_worker(1, sampler=sampler)
    sampler.set_epoch(4)
    assert init.epoch == 4
    with pytest.raises(ValueError, match="DistributedSampler"):
        init.set_epoch(1)
    own = seed_worker(1)
    own.set_epoch(2)
    assert own.epoch == 2


def test_pickling_fixes_rank_and_epoch_and_drops_the_sampler():
    sampler = tud.DistributedSampler(range(SIZE), num_replicas=2, rank=1)
    sampler.set_epoch(6)
    copy = pickle.loads(pickle.dumps(seed_worker(9, rank=1, sampler=sampler)))
    sampler.set_epoch(7)
    assert (copy.base_seed, copy.rank, copy.epoch) == (9, 1, 6)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="base_seed"):
        seed_worker(-1)
    with pytest.raises(TypeError, match="SequentialSampler"):
        seed_worker(1, sampler=tud.SequentialSampler(range(3)))
    with pytest.raises(RuntimeError, match="worker"):
        seed_worker(1)(0)
