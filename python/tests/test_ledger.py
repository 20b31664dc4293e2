"""loader.ledger(): the samples a step trains on, from the configuration alone, equal
to what each rank's loader delivers at that step."""
import json

import pytest
import torch
import torch.utils.data as tud

import seedloader as sl


class Probe(tud.Dataset):
    """Sample i: [i, the id of the worker that read it (-1 in the main process)]."""

    def __len__(self):
        return 37

    def __getitem__(self, i):
        info = tud.get_worker_info()
        return torch.tensor([i, -1 if info is None else info.id])


@pytest.mark.filterwarnings("ignore:.*worker processes")
@pytest.mark.parametrize("workers,partition,seeding,world,drop_last", [
    (0, "strided", "worker", 1, False),
    (2, "strided", "sample", 2, True),
    (3, "elastic", "sample", 2, False),
])
def test_every_step_is_what_each_rank_trains_on(workers, partition, seeding, world,
                                                drop_last):
    steps_seen = 0
    for rank in range(world):
        loader = sl.DataLoader(Probe(), batch_size=4, shuffle=True, seed=5,
                               num_workers=workers, rank=rank, world_size=world,
                               partition=partition, seeding=seeding, drop_last=drop_last)
        loader.set_epoch(1)
        everything = loader.ledger(range(len(loader)), epoch=1)
        for step, batch in enumerate(loader):
            entries = loader.ledger(step, epoch=1, rank=rank)
            assert [e["index"] for e in entries] == batch[:, 0].tolist()
            assert [e["slot"] for e in entries] == list(range(len(batch)))
            workers_seen = {max(w, 0) for w in batch[:, 1].tolist()}
            assert workers_seen == {e["worker"] for e in entries}
            for e in entries:
                assert (e["epoch"], e["step"], e["rank"]) == (1, step, rank)
                if seeding == "sample":
                    assert e["stream"] == [2, 1, e["index"]]
                    assert isinstance(e["fingerprint"], int)
                else:
                    assert e["stream"] == [1, 1, rank, e["worker"]]
                    assert e["fingerprint"] is None
            # The whole epoch's ledger, every rank, holds this rank's step as it is.
            assert [e for e in everything if e["step"] == step and e["rank"] == rank] \
                == entries
            steps_seen += 1
    assert steps_seen > 0


def test_order_refuses_what_it_cannot_know_naming_it():
    loader = sl.DataLoader(Probe(), batch_size=4, sampler=list(range(37)), seed=1)
    with pytest.raises(sl.ConfigError, match="its own sampler or batch_sampler"):
        loader.ledger(0)
    loader = sl.DataLoader(Probe(), batch_size=4, seed=1)
    with pytest.raises(sl.ConfigError, match="10 steps"):
        loader.ledger(10)
    with pytest.raises(sl.ConfigError, match="step must be an int"):
        loader.ledger(-1)
    with pytest.raises(sl.ConfigError, match="not a non-empty range"):
        loader.ledger(range(3, 3))
    with pytest.raises(sl.ConfigError, match="rank 1 is outside a world of 1"):
        loader.ledger(0, rank=1)


# --- declared skips --------------------------------------------------------------------

def _pass(loader, epoch=None):
    """[(step, indices, pixels)] of one pass; epoch sets the epoch first."""
    if epoch is not None:
        loader.set_epoch(epoch)
    out = []
    for batch in loader:
        out.append((loader.state_dict()["_num_yielded"] - 1, batch[:, 0].tolist()))
    return out


@pytest.mark.parametrize("workers,seeding", [(0, "worker"), (2, "worker"), (2, "sample")])
def test_skipped_steps_are_not_delivered_and_every_other_step_is_as_it_was(workers,
                                                                          seeding):
    def make():
        return sl.DataLoader(Probe(), batch_size=4, shuffle=True, seed=3,
                             num_workers=workers, seeding=seeding)
    reference = make()
    want = {e: _pass(reference, e) for e in range(3)}
    loader = make()
    per_epoch = len(loader)  # 10
    loader.skip(steps=[(per_epoch + 2, per_epoch + 4), (2 * per_epoch - 1, 2 * per_epoch)])
    assert _pass(loader, 0) == want[0]
    got = _pass(loader, 1)
    assert got == [b for b in want[1] if b[0] not in (2, 3, per_epoch - 1)]
    assert loader.state_dict()["_finished"]  # the skipped last step counts as passed
    assert _pass(loader, 2) == want[2]
    marked = {e["step"] for e in loader.ledger(range(per_epoch), epoch=1) if e["skipped"]}
    assert marked == {2, 3, per_epoch - 1}


def test_the_skip_list_travels_with_the_state_and_a_resume_adds_to_it():
    def make(rank=0, world=1, batch=4):
        return sl.DataLoader(Probe(), batch_size=batch, shuffle=True, seed=3,
                             seeding="sample", partition="elastic", rank=rank,
                             world_size=world)
    first = make()
    first.skip(steps=[(5, 7)], samples=[11])
    first.set_epoch(0)
    it = iter(first)
    for _ in range(3):
        next(it)
    state = first.state_dict()
    assert state["skip"] == {"steps": [[0, 5, 7]], "samples": [11]}
    uninterrupted = make()
    uninterrupted.skip(steps=[(5, 7)], samples=[11])
    want = [b for b in _pass(uninterrupted, 0) if b[0] >= 3]
    # Resumed at 2 ranks of 2 (the same global batch): the skips hold on each rank.
    got = {}
    for rank in range(2):
        resumed = make(rank, 2, 2)
        resumed.load_state_dict(state)
        assert resumed.state_dict()["skip"] == state["skip"]
        for step, indices in _pass(resumed):
            got.setdefault(step, []).extend(indices)
    assert sorted(got.items()) == want
    # A resume adds: the state's skips and the new ones.
    more = make()
    more.load_state_dict(state)
    more.skip(steps=[(8, 9)])
    assert more.state_dict()["skip"]["steps"] == [[0, 5, 7], [0, 8, 9]]


def test_skips_are_checked_naming_what_is_wrong():
    loader = sl.DataLoader(Probe(), batch_size=4, seed=1)
    with pytest.raises(sl.ConfigError, match="needs seeding=\"sample\""):
        loader.skip(samples=[3])
    with pytest.raises(sl.ConfigError, match=r"steps \(4, 4\) are empty"):
        loader.skip(steps=[(4, 4)])
    with pytest.raises(sl.ConfigError, match="must be \\(first, end\\) pairs"):
        loader.skip(steps=[5])
    state = loader.state_dict()
    state["skip"] = {"steps": [[0, 3]]}
    with pytest.raises(sl.ConfigError, match=r"\[epoch, first, end\] triples"):
        loader.load_state_dict(state)
    state["skip"] = {"samples": [2]}
    with pytest.raises(sl.ConfigError, match="the state skips samples"):
        loader.load_state_dict(state)


def test_a_skip_declared_during_a_pass_leaves_that_pass_running():
    loader = sl.DataLoader(Probe(), batch_size=4, shuffle=True, seed=3, num_workers=2,
                           seeding="sample")
    reference = sl.DataLoader(Probe(), batch_size=4, shuffle=True, seed=3, num_workers=2,
                              seeding="sample")
    want = _pass(reference, 0) + _pass(reference, 1)
    loader.set_epoch(0)
    got = []
    for batch in loader:
        got.append((loader.state_dict()["_num_yielded"] - 1, batch[:, 0].tolist()))
        if len(got) == 2:
            loader.skip(steps=[(len(loader) + 1, len(loader) + 3)])  # in epoch 1
    assert got == want[:len(loader)]
    assert _pass(loader, 1) == [b for b in want[len(loader):] if b[0] not in (1, 2)]


def test_sample_skips_under_a_collate_fn_are_refused():
    loader = sl.DataLoader(Probe(), batch_size=4, seed=1, seeding="sample",
                           collate_fn=lambda items: torch.stack(items))
    with pytest.raises(sl.ConfigError, match="under a collate_fn"):
        loader.skip(samples=[3])


# --- traced loaders: what was delivered and what was declared skipped -------------------

def _elastic(rank, world, batch, workers=2):
    return sl.DataLoader(Probe(), batch_size=batch, shuffle=True, seed=3, seeding="sample",
                         partition="elastic", rank=rank, world_size=world,
                         num_workers=workers)


@pytest.mark.filterwarnings("ignore:.*worker processes")
def test_a_traced_run_resumed_at_another_world_size_audits_its_skips_as_declared(
        tmp_path, read_trace):
    path = tmp_path / "t.jsonl"
    # Run 0 at 2 ranks x 4 (G = 8, 5 steps an epoch over 37 samples): steps 2 and 3
    # and sample 11 skipped; it stops after step 1 of epoch 1.
    for rank in range(2):
        loader = _elastic(rank, 2, 4)
        loader.skip(steps=[(2, 4)], samples=[11])
        traced = sl.audit.trace(loader, path, run=0)
        for _ in traced:
            pass
        for step, _ in enumerate(traced):
            if step == 1:
                break
        state = loader.state_dict()
    # Run 1 at 4 ranks x 2 resumes from that state and skips epoch 1's step 3 too.
    for rank in range(4):
        loader = _elastic(rank, 4, 2)
        loader.load_state_dict(state)
        loader.skip(steps=[(8, 9)])
        for _ in sl.audit.trace(loader, path, run=1):
            pass
    lines = read_trace(path)
    # Every line is the ledger's: the trained ones with their stream fingerprints.
    reference = _elastic(0, 1, 8, workers=0)
    reference.skip(steps=[(2, 4), (8, 9)], samples=[11])
    entries = [e for epoch in (0, 1) for e in reference.ledger(range(5), epoch=epoch)]
    ledger = {(e["epoch"], e["step"], e["index"]): e for e in entries}
    skipped = [x for x in lines if x.get("skipped")]
    trained = [x for x in lines if not x.get("skipped")]
    for x in trained:
        e = ledger[(x["epoch"], x["batch"], x["index"])]
        assert not e["skipped"]
        assert x["rng"] == "%016x" % e["fingerprint"]
    for x in skipped:
        assert ledger[(x["epoch"], x["batch"], x["index"])]["skipped"], x
        assert "rng" not in x and "worker" not in x
    assert {x["run"] for x in skipped} == {0, 1}
    # Every skipped entry exactly once: (epoch, step, index) as the ledger has them.
    assert sorted((x["epoch"], x["batch"], x["index"]) for x in skipped) == \
        sorted((e["epoch"], e["step"], e["index"]) for e in entries if e["skipped"])
    want_skipped = {(e["epoch"], e["index"]) for e in entries if e["skipped"]}
    # The two runs trained every step of epochs 0 and 1 once, padding included.
    assert sorted((x["epoch"], x["batch"], x["index"]) for x in trained) == \
        sorted((e["epoch"], e["step"], e["index"]) for e in entries if not e["skipped"])
    # The audit: clean, the skips reported as declared; without them, a gap.
    report = sl.audit.check(path, dataset_size=37, global_batch=8)
    assert report["verdict"] == "clean", report["findings"]
    assert [(i["kind"], i["count"]) for i in report["information"]] == \
        [("declared_skip", len(want_skipped))]
    undeclared = tmp_path / "undeclared.jsonl"
    undeclared.write_text("".join(json.dumps(x) + "\n" for x in trained))
    kinds = {f["kind"] for f in sl.audit.check(undeclared, dataset_size=37,
                                                global_batch=8)["findings"]}
    assert "resume_gap" in kinds


def test_a_traced_loader_is_refused_what_it_cannot_record(tmp_path):
    loader = sl.DataLoader(Probe(), batch_size=4, seed=1, rank=0, world_size=2)
    with pytest.raises(ValueError, match="runs as rank 0"):
        next(iter(sl.audit.trace(loader, tmp_path / "t.jsonl", rank=1)))
    with pytest.raises(ValueError, match="record_content are for torch DataLoaders"):
        sl.audit.trace(loader, tmp_path / "t.jsonl", record_content=True)
    collated = sl.DataLoader(Probe(), batch_size=4, seed=1,
                             collate_fn=lambda items: torch.stack(items))
    with pytest.raises(ValueError, match="has a collate_fn"):
        sl.audit.trace(collated, tmp_path / "t.jsonl")
    own = sl.DataLoader(Probe(), batch_size=4, sampler=list(range(37)), seed=1)
    own.skip(steps=[(1, 2)])
    with pytest.raises(sl.ConfigError, match="its own sampler"):
        next(iter(sl.audit.trace(own, tmp_path / "t.jsonl")))


def test_a_traced_pass_whose_remaining_steps_are_all_skipped_still_declares_them(tmp_path,
                                                                                read_trace):
    path = tmp_path / "t.jsonl"
    loader = _elastic(0, 1, 8, workers=0)  # 5 steps an epoch
    for step, _ in enumerate(sl.audit.trace(loader, path, run=0)):
        if step == 2:
            break
    resumed = _elastic(0, 1, 8, workers=0)
    resumed.load_state_dict(loader.state_dict())
    resumed.skip(steps=[(3, 5)])  # the rest of epoch 0
    assert list(sl.audit.trace(resumed, path, run=1)) == []
    skipped = [(x["batch"], x["index"]) for x in read_trace(path) if x.get("skipped")]
    assert sorted(skipped) == sorted((e["step"], e["index"]) for e in resumed.ledger(
        range(3, 5), epoch=0, rank=0))
    report = sl.audit.check(path, dataset_size=37, global_batch=8)
    assert report["verdict"] == "clean", report["findings"]
