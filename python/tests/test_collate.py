"""collate_fn= as in PyTorch: it runs in the worker on each batch's samples, and
its output (any tree of tensors, arrays and numbers, any shapes) comes back equal
to what torch's DataLoader gives with the same collate_fn; the epoch's batches
reach persistent workers; per-sample seeding still makes a random pipeline
independent of the worker count; errors name the batch and the field."""
import numpy as np
import pytest
import torch
import torch.utils.data as tud

import seedloader as sl
from test_dropin import Tuples, both, clone, random_pipeline, same, table, files  # noqa: F401


class Tokens(tud.Dataset):
    """Token id sequences of 1 to 5 ids, and a label."""

    def __len__(self):
        return 11

    def __getitem__(self, i):
        return {"ids": torch.arange(i % 5 + 1) + 10 * i, "label": i % 3}


def pad(samples):
    """A padding collate: [batch, longest] ids, a mask, int64 labels; the longest
    differs from batch to batch."""
    longest = max(len(s["ids"]) for s in samples)
    ids = torch.zeros(len(samples), longest, dtype=torch.int64)
    mask = torch.zeros(len(samples), longest, dtype=torch.bool)
    for k, s in enumerate(samples):
        ids[k, :len(s["ids"])] = s["ids"]
        mask[k, :len(s["ids"])] = True
    return {"ids": ids, "mask": mask, "label": torch.tensor([s["label"] for s in samples])}


def mix_halves(samples):
    """default_collate, then the batch's second half mixed into its first (a batch
    transform drawing from torch's generator), and a per-batch scalar."""
    images, labels, weights, flags = tud.default_collate(samples)
    lam = float(torch.rand(()))
    return images * lam + images.flip(0) * (1 - lam), labels, torch.tensor(lam), flags


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("collate,dataset", [(pad, Tokens), (mix_halves, Tuples)])
def test_batches_equal_pytorchs_with_the_same_collate_fn(workers, collate, dataset):
    expected, got = both(dataset(), batch_size=3, collate_fn=collate)
    assert len(got) == len(expected) == 4  # the last batch is short
    for k, (a, b) in enumerate(zip(expected, got)):
        same(a, b, "batch %d" % k)
    loader = sl.DataLoader(dataset(), batch_size=3, collate_fn=collate, num_workers=workers,
                           seed=7)
    for k, (a, b) in enumerate(zip(expected, loader)):
        if collate is pad:  # mix_halves draws from the generators, seeded per worker
            same(a, b, "batch %d" % k)
        assert loader.last_indices == list(range(3 * k, min(3 * k + 3, len(dataset()))))


def captions(samples):
    """Padded ids, and per batch a caption (str), a count (int) and a ratio (float)
    as plain Python values, which torch's loader hands back as they are."""
    out = pad(samples)
    return {"ids": out["ids"], "caption": "batch of %d" % len(samples),
            "count": len(samples), "ratio": len(samples) / 4}


@pytest.mark.parametrize("workers", [0, 2])
def test_python_strings_and_numbers_a_collate_fn_returns_come_back_as_themselves(workers):
    expected, _ = both(Tokens(), batch_size=4, collate_fn=captions)
    loader = sl.DataLoader(Tokens(), batch_size=4, collate_fn=captions, num_workers=workers)
    got = list(loader)
    assert [b["caption"] for b in got] == [b["caption"] for b in expected] == \
        ["batch of 4", "batch of 4", "batch of 3"]
    assert [(b["count"], b["ratio"]) for b in got] == [(4, 1.0), (4, 1.0), (3, 0.75)]
    assert all(type(b["count"]) is int and type(b["ratio"]) is float for b in got)


def test_a_per_sample_seeded_pipeline_with_a_collate_fn_is_independent_of_workers(files):
    dataset = table(files)["cifar10+random torchvision"]()
    plain = sl.DataLoader(dataset, batch_size=5, shuffle=True, seed=11, seeding="sample")
    plain.set_epoch(1)
    expected = [clone(b) for b in plain]
    for workers in (0, 1, 3):
        loader = sl.DataLoader(dataset, batch_size=5, shuffle=True, seed=11, seeding="sample",
                               num_workers=workers, collate_fn=lambda s: tud.default_collate(s))
        loader.set_epoch(1)
        got = [clone(b) for b in loader]
        assert len(got) == len(expected)
        for a, b in zip(expected, got):
            same(a, b)


class EpochBatches(tud.Sampler):
    """A batch sampler whose batches differ from epoch to epoch (and in count)."""

    def __init__(self):
        self.epoch = 0

    def __iter__(self):
        self.epoch += 1
        order = np.random.default_rng(self.epoch).permutation(10).tolist()
        size = 2 + self.epoch % 2
        return iter([order[k:k + size] for k in range(0, 10, size)])

    def __len__(self):
        return 5


def test_persistent_workers_collate_each_epochs_newly_drawn_batches():
    sampler = EpochBatches()
    loader = sl.DataLoader(Tokens(), batch_sampler=sampler, num_workers=2, seed=3,
                           persistent_workers=True, collate_fn=pad)
    pids = None
    for epoch in range(3):
        seen = []
        for batch in loader:
            assert batch["label"].tolist() == [i % 3 for i in loader.last_indices]
            assert batch["ids"][:, 0].tolist() == [10 * i for i in loader.last_indices]
            seen.append(loader.last_indices)
        assert sorted(i for b in seen for i in b) == list(range(10))
        assert pids is None or loader.worker_pids() == pids
        pids = loader.worker_pids()


def test_resume_with_a_collate_fn_continues_the_same_batches():
    def make():
        return sl.DataLoader(Tokens(), batch_size=2, shuffle=True, num_workers=2, seed=5,
                             seeding="sample", collate_fn=pad)
    full = [clone(b) for b in make()]
    first = make()
    it = iter(first)
    next(it), next(it)
    state = first.state_dict()
    resumed = make()
    resumed.load_state_dict(state)
    rest = [clone(b) for b in resumed]
    assert len(rest) == len(full) - 2
    for a, b in zip(full[2:], rest):
        same(a, b)


def test_a_batch_over_the_budget_is_a_data_error_naming_batch_field_and_remedy():
    class Growing(tud.Dataset):
        def __len__(self):
            return 12

        def __getitem__(self, i):
            return torch.zeros(1 + 40 * (i // 4))  # the first two batches are short

    loader = sl.DataLoader(Growing(), batch_size=2, seed=1, variable_bytes=64,
                           collate_fn=lambda s: torch.nn.utils.rnn.pad_sequence(s))
    with pytest.raises(sl.WorkerError, match=r"batch 2 \(the whole sample\): collate_fn "
                                             r"returned 328 bytes \(shape \(41, 2\)\), over "
                                             r"the field's budget of 64 bytes \(raise "
                                             r"variable_bytes\)"):
        for _ in loader:
            pass


def test_a_collate_fn_whose_tree_changes_is_an_error_naming_the_batch():
    loader = sl.DataLoader(Tokens(), batch_size=3, num_workers=1, seed=1,
                           collate_fn=lambda s: tuple(s))  # a tuple of 3, then of 2
    with pytest.raises(sl.WorkerError, match=r"batch 3 \(the whole sample\) is a tuple of 2"):
        for _ in loader:
            pass


class ChangesAtSample2(tud.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return np.zeros(2, np.float32 if i >= 2 else np.float64)


@pytest.mark.parametrize("workers,message", [
    (0, r"batch 1 \(the whole sample\) is float32"),
    (2, r"collate_fn's outputs differ between workers: batch 0 \(worker 0\) has "
        r".*float64.*, batch 1 \(worker 1\) has .*float32")])
def test_collate_fn_outputs_that_differ_in_the_first_batches_are_named_as_batches(
        workers, message):
    loader = sl.DataLoader(ChangesAtSample2(), batch_size=2, num_workers=workers, seed=1,
                           collate_fn=lambda s: torch.as_tensor(np.stack(s)))
    with pytest.raises(sl.ConfigError, match=message):
        next(iter(loader))


def test_a_collate_fns_exception_keeps_its_traceback():
    def broken(samples):
        raise RuntimeError("collate failed on %d samples" % len(samples))
    with pytest.raises(sl.WorkerError) as info:
        next(iter(sl.DataLoader(Tokens(), batch_size=4, num_workers=2, seed=1,
                                collate_fn=broken)))
    assert "collate failed on 4 samples" in str(info.value)
    assert "in broken" in str(info.value)


@pytest.mark.parametrize("kw,message", [
    (dict(collate_fn=3), "collate_fn must be callable"),
    (dict(collate_fn=pad, variable_fields=["['ids']"]), "do not apply with a collate_fn"),
])
def test_collate_fn_arguments_are_checked(kw, message):
    with pytest.raises(sl.ConfigError, match=message):
        sl.DataLoader(Tokens(), batch_size=2, **kw)


def test_a_cpp_dataset_refuses_a_collate_fn():
    with pytest.raises(sl.ConfigError, match="collate_fn runs on a Python dataset"):
        sl.DataLoader(sl.Synthetic(8, 4, 4, 3), batch_size=2, collate_fn=pad)
