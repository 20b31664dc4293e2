"""seedloader.audit.trace on real PyTorch DataLoaders (2 workers), audited by check()."""
import numpy as np
import pytest
import torch
import torch.utils.data as tud

import seedloader
from seedloader._trace import find_generators, resolve
from seedloader.audit import trace

from generator_datasets import SIZE, Jitter, NestedRng


class Indexed(tud.Dataset):
    """Returns its index (plus an offset a worker_init_fn may set); draws nothing."""

    def __init__(self):
        self.offset = 0

    def __len__(self):
        return SIZE

    def __getitem__(self, i):
        return torch.tensor(i + self.offset)


class OwnRng(tud.Dataset):
    """Augments with a generator it owns (forked as-is into every worker)."""

    def __init__(self):
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return SIZE

    def __getitem__(self, i):
        return torch.tensor([i, self.rng.random()])


class TorchRand(tud.Dataset):
    """Augments with torch's default generator, which DataLoader seeds per worker."""

    def __len__(self):
        return SIZE

    def __getitem__(self, i):
        return torch.rand(2) + i


def _shard():
    info = tud.get_worker_info()
    return range(info.id, SIZE, info.num_workers) if info is not None else range(SIZE)


class Sharded(tud.IterableDataset):
    """Yields its worker's share of the samples, each with its own index."""

    def __iter__(self):
        return ({"index": i, "x": torch.tensor(float(i))} for i in _shard())


class ShardedPlain(tud.IterableDataset):
    """Yields its worker's share as bare tensors: no own index."""

    def __iter__(self):
        return (torch.tensor(i) for i in _shard())


class Unsharded(tud.IterableDataset):
    """The classic bug: every worker yields every sample."""

    def __iter__(self):
        return ({"index": i} for i in range(SIZE))


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms


class Slotted:
    __slots__ = ("gen", "unset")

    def __init__(self, gen):
        self.gen = gen


def _epochs(loader, n):
    """Iterates `loader` n times; returns the batches delivered, per epoch."""
    return [list(loader) for _ in range(n)]


def _lines_by_batch(lines, epoch):
    batches = {}
    for line in lines:
        if line["epoch"] == epoch:
            batches.setdefault(line["batch"], []).append(line)
    return batches


def test_map_style_loader_records_every_index_once_per_epoch_in_its_batch(tmp_path,
                                                                          read_trace):
    path = tmp_path / "t.jsonl"
    loader = trace(tud.DataLoader(Indexed(), batch_size=2, shuffle=True, num_workers=2),
                   path, rank=3)
    delivered = _epochs(loader, 2)
    lines = read_trace(path)
    assert len(lines) == 2 * SIZE
    assert {line["rank"] for line in lines} == {3}
    for epoch in range(2):
        batches = _lines_by_batch(lines, epoch)
        assert sorted(batches) == list(range(SIZE // 2))
        for k, got in batches.items():
            assert sorted(line["index"] for line in got) == sorted(delivered[epoch][k].tolist())
            assert {line["worker"] for line in got} == {k % 2}  # in-order round robin
        assert sorted(line["index"] for lines_k in batches.values() for line in lines_k) \
            == list(range(SIZE))


def test_traced_loader_keeps_sampler_generator_batching_and_worker_init_fn(tmp_path,
                                                                           read_trace):
    def make():
        return tud.DataLoader(Indexed(), batch_size=3, shuffle=True, drop_last=True,
                              num_workers=2, worker_init_fn=_set_offset,
                              generator=torch.Generator().manual_seed(5))

    path = tmp_path / "t.jsonl"
    traced = trace(make(), path)
    assert len(traced) == SIZE // 3
    got = [b.tolist() for b in traced]
    assert got == [b.tolist() for b in make()]
    assert all(x >= 100 for b in got for x in b)  # worker_init_fn reached the dataset
    assert len(read_trace(path)) == 3 * (SIZE // 3)


def _set_offset(worker_id):
    tud.get_worker_info().dataset.offset = 100


def test_persistent_workers_still_number_epochs(tmp_path, read_trace):
    path = tmp_path / "t.jsonl"
    loader = trace(tud.DataLoader(Indexed(), batch_size=2, num_workers=2,
                                  persistent_workers=True), path)
    _epochs(loader, 3)
    lines = read_trace(path)
    for epoch in range(3):
        assert sorted(l["index"] for l in lines if l["epoch"] == epoch) == list(range(SIZE))


def test_loader_without_automatic_batching_makes_each_sample_a_batch(tmp_path, read_trace):
    path = tmp_path / "t.jsonl"
    loader = trace(tud.DataLoader(Indexed(), batch_size=None, num_workers=2), path)
    assert [int(x) for x in loader] == list(range(SIZE))
    assert sorted((l["batch"], l["index"]) for l in read_trace(path)) == \
        [(i, i) for i in range(SIZE)]


@pytest.mark.parametrize("persistent", [False, True])
def test_iterable_dataset_records_own_indices_epochs_and_batches(tmp_path, read_trace,
                                                                 persistent):
    path = tmp_path / "t.jsonl"
    loader = trace(tud.DataLoader(Sharded(), batch_size=2, num_workers=2,
                                  persistent_workers=persistent), path, rank=1)
    delivered = _epochs(loader, 2)
    lines = read_trace(path)
    assert len(lines) == 2 * SIZE
    for epoch in range(2):
        batches = _lines_by_batch(lines, epoch)
        assert sorted(batches) == list(range(SIZE // 2))
        for k, got in batches.items():
            assert sorted(l["index"] for l in got) == delivered[epoch][k]["index"].tolist()
            assert {l["worker"] for l in got} == {k % 2}
    assert {l["rank"] for l in lines} == {1}


def test_iterable_dataset_without_own_index_records_delivery_positions(tmp_path,
                                                                       read_trace):
    path = tmp_path / "t.jsonl"
    loader = trace(tud.DataLoader(ShardedPlain(), batch_size=2, num_workers=2), path)
    delivered = [b.tolist() for b in loader]
    batches = _lines_by_batch(read_trace(path), 0)
    for k, got in batches.items():
        assert sorted(l["index"] for l in got) == [2 * k, 2 * k + 1]
        assert {l["worker"] for l in got} == {k % 2}
        assert all(x % 2 == k % 2 for x in delivered[k])  # worker k % 2's shard


def test_iterable_dataset_that_every_worker_reads_whole_repeats_samples(tmp_path,
                                                                        audit_check):
    path = tmp_path / "t.jsonl"
    for _ in trace(tud.DataLoader(Unsharded(), batch_size=2, num_workers=2), path):
        pass
    assert audit_check(path, SIZE) == {"coverage": SIZE}


def test_dataset_owned_generator_is_duplicated_across_workers(tmp_path, audit_check):
    path = tmp_path / "t.jsonl"
    for _ in trace(tud.DataLoader(OwnRng(), batch_size=2, num_workers=2), path):
        pass
    # Batches of 2 on 2 workers: worker 1's 8 samples repeat worker 0's states.
    assert audit_check(path, SIZE) == {"worker_rng_duplicate": SIZE // 2}


def test_generator_nested_in_a_transform_is_audited_without_naming_it(tmp_path,
                                                                      audit_check):
    path = tmp_path / "t.jsonl"
    for _ in trace(tud.DataLoader(NestedRng(), batch_size=2, num_workers=2), path):
        pass
    assert audit_check(path, SIZE) == {"worker_rng_duplicate": SIZE // 2}


def test_torch_randomness_seeded_by_dataloader_is_clean(tmp_path, audit_check):
    path = tmp_path / "t.jsonl"
    _epochs(trace(tud.DataLoader(TorchRand(), batch_size=2, shuffle=True, num_workers=2),
                  path), 2)
    assert audit_check(path, SIZE) == {}


def test_walk_finds_generators_in_attributes_lists_dicts_and_slots():
    a, b, c, d = (np.random.default_rng(1), np.random.RandomState(2), torch.Generator(),
                  __import__("random").Random(3))
    ds = Indexed()
    ds.tf = Compose([Jitter(0), {"inner": Slotted(b)}, (c,)])
    ds.tf.transforms[0].rng = a
    ds.more = [a, d]       # `a` again: listed once, at its first path
    ds.loop = ds           # a cycle
    found = find_generators(ds)
    assert [label for label, _, _ in found] == [
        "dataset.tf.transforms[0].rng", "dataset.tf.transforms[1]['inner'].gen",
        "dataset.tf.transforms[2][0]", "dataset.more[1]"]
    assert [g for _, _, g in found] == [a, b, c, d]
    assert all(resolve(ds, steps) is g for _, steps, g in found)


def test_walk_stops_at_its_depth_bound_and_skips_global_generators():
    ds = Indexed()
    ds.global_numpy = np.random.mtrand._rand
    ds.deep = [[[np.random.default_rng(0)]]]
    assert find_generators(ds, max_depth=3) == []
    assert [label for label, _, _ in find_generators(ds, max_depth=4)] == \
        ["dataset.deep[0][0][0]"]


def test_named_generator_must_exist(tmp_path):
    with pytest.raises(AttributeError):
        trace(tud.DataLoader(Indexed()), tmp_path / "t.jsonl", generators=["tf.rng"])


def test_trace_takes_only_an_untraced_dataloader(tmp_path):
    with pytest.raises(TypeError, match="DataLoader"):
        trace(Indexed(), tmp_path / "t.jsonl")
    traced = trace(tud.DataLoader(Indexed()), tmp_path / "t.jsonl")
    with pytest.raises(ValueError, match="already traced"):
        trace(traced, tmp_path / "t.jsonl")


def test_check_rejects_a_malformed_trace(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"rank":0}\n')
    with pytest.raises(seedloader.DataError):
        seedloader.audit.check(path, SIZE)


def test_run_is_written_on_every_line_only_when_given(tmp_path, read_trace):
    for run, path in ((2, tmp_path / "run.jsonl"), (None, tmp_path / "single.jsonl")):
        _epochs(trace(tud.DataLoader(Indexed(), batch_size=2, num_workers=2), path,
                      run=run), 1)
        lines = read_trace(path)
        assert len(lines) == SIZE
        if run is None:
            assert not any("run" in line for line in lines)
        else:
            assert {line["run"] for line in lines} == {run}


def _restarted_job(path, resume_from):
    """Run 0 consumes 3 batches of 2 (no workers, so nothing more is loaded) and
    fails; run 1 reads the epoch's indices from position `resume_from` on."""
    loader = trace(tud.DataLoader(Indexed(), batch_size=2), path, run=0)
    for k, _ in enumerate(loader):
        if k == 2:
            break
    rest = list(range(resume_from, SIZE))
    _epochs(trace(tud.DataLoader(Indexed(), batch_size=2, sampler=rest), path, run=1), 1)


def test_restarting_the_epoch_from_its_start_is_a_resume_duplicate(tmp_path, audit_check):
    path = tmp_path / "t.jsonl"
    _restarted_job(path, 0)
    assert audit_check(path, SIZE) == {"resume_duplicate": 6}
    report = seedloader.audit.check(path, SIZE)
    example = report["findings"][0]["examples"][0]
    assert (example["run"], example["same_as"]["run"], example["epoch"]) == (1, 0, 0)
    assert "restart" in report["findings"][0]["hint"]


def test_resuming_where_the_failed_run_stopped_is_clean(tmp_path, audit_check):
    _restarted_job(tmp_path / "t.jsonl", 6)
    assert audit_check(tmp_path / "t.jsonl", SIZE) == {}


def test_resuming_past_where_the_failed_run_stopped_is_a_resume_gap(tmp_path,
                                                                     audit_check):
    _restarted_job(tmp_path / "t.jsonl", 8)
    assert audit_check(tmp_path / "t.jsonl", SIZE) == {"resume_gap": 2}
    report = seedloader.audit.check(tmp_path / "t.jsonl", SIZE)
    assert sorted(e["index"] for e in report["findings"][0]["examples"]) == [6, 7]


def test_run_must_be_a_non_negative_integer(tmp_path):
    with pytest.raises(ValueError, match="run must be a non-negative integer"):
        trace(tud.DataLoader(Indexed()), tmp_path / "t.jsonl", run=-1)
    with pytest.raises(TypeError):
        trace(tud.DataLoader(Indexed()), tmp_path / "t.jsonl", run="1")
