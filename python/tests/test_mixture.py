"""seedloader.Mixture: the same global batches at any world size and worker count;
each sample's draws keyed by (source, source epoch, index), whatever the weights;
new weights at a resume, at another world size, with a source added, repeat and
skip nothing of any source; seed-audit order, given a saved state, names the samples
the resumed loader reads; what a Mixture cannot do is refused by name."""
import json
import os
import pickle
import re
import subprocess

import numpy as np
import pytest
import torch

import seedloader as sl

G = 12
SEED = 5


class Source:
    """Sample i of source `tag`: (tag, i) and the first uniform draw of its stream."""

    def __init__(self, size, tag):
        self.size, self.tag = size, tag

    def __len__(self):
        return self.size

    def __getitem__(self, index, rng):
        return {"x": torch.tensor([self.tag, index]), "u": torch.tensor(rng.random(), dtype=torch.float64)}


STAGED = [(0, {"small": 1, "large": 3}), (7, {"small": 1, "large": 1})]


def mixture(weights=STAGED, **extra):
    sources = {"small": Source(13, 0), "large": Source(50, 1)}
    sources.update(extra)
    if extra and isinstance(weights, dict):
        weights = dict(weights, **{name: 1 for name in extra})
    return sl.Mixture(sources, weights, samples_per_epoch=60)


def loader(m, world=1, rank=0, workers=0, **kw):
    return sl.DataLoader(m, batch_size=G // world, num_workers=workers, seed=SEED,
                         seeding="sample", partition="elastic", rank=rank,
                         world_size=world, **kw)


def rows(batch):
    return [(int(t), int(i), float(u)) for (t, i), u in zip(batch["x"], batch["u"])]


def global_batches(m, world, workers, epochs):
    out = {}
    for rank in range(world):
        dl = loader(m, world, rank, workers)
        for epoch in range(epochs):
            dl.set_epoch(epoch)
            for k, batch in enumerate(dl):
                out.setdefault((epoch, k), []).extend(rows(batch))
    return [out[key] for key in sorted(out)]


def source_key(name):
    h = 0xcbf29ce484222325
    for c in name.encode():
        h = ((h ^ c) * 0x100000001b3) % 2**64
    return h >> 1


def stream_uniform(name, source_epoch, index):
    """The first uniform of the stream (6, source_key, source epoch, index), in numpy."""
    seq = np.random.SeedSequence(SEED, spawn_key=(6, source_key(name), source_epoch, index))
    return np.random.Generator(np.random.PCG64(seq)).random()


def test_global_batches_are_the_same_at_every_world_size_and_worker_count():
    m = mixture()
    want = global_batches(m, 1, 0, 3)
    assert len(want) == 15 and all(len(b) == G for b in want)
    for world in (2, 3, 4):
        for workers in (0, 2):
            assert global_batches(m, world, workers, 3) == want, (world, workers)


def test_a_samples_draws_are_its_sources_stream_whatever_the_weights():
    seen = {}
    for weights in (STAGED, {"small": 5, "large": 1}):
        for batch in global_batches(mixture(weights), 2, 1, 2):
            for tag, index, u in batch:
                name = ("small", "large")[tag]
                # The source epoch is one of those the index can be in: the draw
                # must be that epoch's stream.
                epochs = [e for e in range(16) if stream_uniform(name, e, index) == u]
                assert len(epochs) == 1, (name, index, u)
                key = (name, index, epochs[0])
                assert seen.setdefault(key, u) == u
    assert len(seen) > 60


def test_the_steps_follow_the_weights_and_the_small_source_cycles():
    batches = global_batches(mixture({"small": 1, "large": 3}), 1, 0, 4)
    for batch in batches:
        small = sum(1 for tag, _, _ in batch if tag == 0)
        assert small == 3  # a quarter of 12, exactly, at every step
    reads = []
    for batch in batches:  # after every step: nothing repeated within a source epoch
        reads += [index for tag, index, _ in batch if tag == 0]
        assert balanced(reads, 13), np.bincount(reads)
    assert len(reads) == 60  # four epochs of the small source and a part


def balanced(reads, size):
    """Every index read floor(T / size) or one more times: nothing repeated within
    a source epoch, nothing skipped."""
    counts = np.bincount(reads, minlength=size)
    return counts.max() - counts.min() <= 1 and len(counts) == size


def test_new_weights_at_a_resume_at_another_world_size_repeat_and_skip_nothing():
    before = [loader(mixture(), 2, r, 1) for r in range(2)]
    reads = {"small": [], "large": [], "extra": []}
    names = ("small", "large", "extra")
    # Epochs 0 and 1 whole, and 3 steps of epoch 2, on both ranks.
    for epoch in range(3):
        its = [iter(dl) for dl in before]
        for k in range(5 if epoch < 2 else 3):
            for it in its:
                for tag, index, _ in rows(next(it)):
                    reads[names[tag]].append(index)
        if epoch < 2:
            for it in its:
                assert next(it, None) is None
    state = before[0].state_dict()
    assert state["mixture"]["step"] == 13
    new = sl.Mixture({"small": Source(13, 0), "large": Source(50, 1), "extra": Source(7, 2)},
                     {"small": 2, "large": 1, "extra": 1}, samples_per_epoch=60)
    after = [loader(new, 3, r, 2) for r in range(3)]
    for dl in after:
        dl.load_state_dict(pickle.loads(pickle.dumps(state)))
    for epoch in range(2, 5):
        for dl in after:
            dl.set_epoch(epoch) if epoch > 2 else None
        per_rank = [list(dl) for dl in after]
        assert len({len(p) for p in per_rank}) == 1
        for k in range(len(per_rank[0])):
            step = [row for p in per_rank for row in rows(p[k])]
            counts = [sum(1 for row in step if row[0] == t) for t in range(3)]
            assert counts == [6, 3, 3], (epoch, k)  # 2:1:1 of 12
            for tag, index, _ in step:
                reads[names[tag]].append(index)
    for name, size in (("small", 13), ("large", 50), ("extra", 7)):
        assert balanced(reads[name], size), (name, np.bincount(reads[name]))
    assert len(reads["extra"]) == 3 * (2 + 10)  # from step 13 on: epoch 2's 2, then 10
    # The new weights are a new segment of the history, from the saved step.
    history = after[0].state_dict()["mixture"]["history"]
    assert [h[0] for h in history] == [0, 13] and history[1][1] == list(names)


def test_the_loader_pickles_with_its_mixture_and_position():
    dl = loader(mixture(), 1, 0, 0)
    it = iter(dl)
    next(it), next(it)
    copy = pickle.loads(pickle.dumps(dl))
    assert [rows(b) for b in copy] == [rows(b) for b in it]


def test_what_a_mixture_cannot_do_is_refused_by_name():
    with pytest.raises(sl.ConfigError, match="leave out 'large'"):
        sl.Mixture({"small": Source(3, 0), "large": Source(3, 1)}, {"small": 1})
    with pytest.raises(sl.ConfigError, match="'huge', which is not a source"):
        sl.Mixture({"small": Source(3, 0)}, {"small": 1, "huge": 2})
    with pytest.raises(sl.ConfigError, match="source 'empty'.*is empty"):
        sl.Mixture({"small": Source(3, 0), "empty": Source(0, 1)}, {"small": 1, "empty": 1})
    with pytest.raises(sl.ConfigError, match="needs partition='elastic'"):
        len(sl.DataLoader(mixture(), batch_size=6, rank=0, world_size=2, seed=1))
    with pytest.raises(sl.ConfigError, match="takes no sampler"):
        sl.DataLoader(mixture(), batch_size=6, sampler=range(63))
    state = loader(mixture(), 1, 0, 0).state_dict()
    resized = sl.Mixture({"small": Source(14, 0), "large": Source(50, 1)}, STAGED,
                         samples_per_epoch=60)
    with pytest.raises(sl.ConfigError, match="'small' had 13 samples .* it has 14 now"):
        loader(resized).load_state_dict(state)
    gone = sl.Mixture({"large": Source(50, 1)}, {"large": 1}, samples_per_epoch=60)
    with pytest.raises(sl.ConfigError, match="source 'small' is not in this mixture"):
        loader(gone).load_state_dict(state)
    longer = sl.Mixture({"small": Source(13, 0), "large": Source(50, 1)}, STAGED,
                        samples_per_epoch=72)
    with pytest.raises(sl.ConfigError, match="samples_per_epoch 60, this mixture has 72"):
        loader(longer).load_state_dict(state)
    with pytest.raises(sl.ConfigError, match="skipped sample 63 is past the saved "
                                             "mixture's 63 samples"):
        loader(mixture()).load_state_dict(dict(state, skip={"samples": [63]}))
    with pytest.raises(sl.ConfigError, match="the state is a Mixture's"):
        sl.DataLoader(Source(63, 0), batch_size=12, seed=SEED).load_state_dict(state)
    # Counts the saved history does not give at the saved step, even with new weights
    # (which would otherwise start from them).
    dl = loader(mixture(), 1, 0, 0)
    it = iter(dl)
    next(it), next(it)
    forged = dl.state_dict()
    forged["mixture"]["sources"]["small"]["consumed"] += 1
    forged["mixture"]["sources"]["large"]["consumed"] -= 1
    with pytest.raises(sl.ConfigError, match="does not belong together"):
        loader(mixture({"small": 1, "large": 1})).load_state_dict(forged)
    plain = sl.DataLoader(Source(63, 0), batch_size=12, seed=SEED).state_dict()
    with pytest.raises(sl.ConfigError, match="no mixture section"):
        loader(mixture()).load_state_dict(plain)


def test_a_state_holding_numpy_numbers_resumes_as_one_of_python_numbers():
    # The section crosses to the engine as JSON: numpy integers and floats (a
    # state assembled from arrays) are the numbers they hold; a float count is not.
    dl = loader(mixture(), 1, 0, 0)
    it = iter(dl)
    next(it), next(it)
    state = dl.state_dict()
    saved = state["mixture"]
    numpy_state = dict(state, mixture=dict(
        saved, step=np.uint64(saved["step"]),
        sources={name: {key: np.int64(value) for key, value in info.items()}
                 for name, info in saved["sources"].items()},
        history=[[np.int64(seg[0]), seg[1], [[s, list(np.float32(w) for w in ws)]
                                             for s, ws in seg[2]], seg[3], seg[4]]
                 for seg in saved["history"]]))
    plain, numpy = loader(mixture()), loader(mixture())
    plain.load_state_dict(state)
    numpy.load_state_dict(numpy_state)
    assert numpy.state_dict()["mixture"] == saved
    assert [rows(b) for b in numpy] == [rows(b) for b in plain]
    with pytest.raises(sl.ConfigError, match="non-negative integer below 2\\^64, found 2.0"):
        loader(mixture()).load_state_dict(dict(state, mixture=dict(saved, step=2.0)))


def test_a_resume_at_a_far_epoch_continues_it_exactly_from_the_saved_counts():
    far = loader(mixture(), 2, 1, 1)
    far.set_epoch(3000)  # step 15000
    it = iter(far)
    next(it), next(it)
    state = far.state_dict()
    assert state["mixture"]["epoch_first_step"] == 15000
    assert state["mixture"]["step"] == 15002
    resumed = loader(mixture(), 2, 1, 0)
    resumed.load_state_dict(state)
    assert [rows(b) for b in resumed] == [rows(b) for b in it]


def test_the_audit_checks_a_mixture_within_each_sources_epochs(tmp_path):
    import seedloader.audit as audit
    path = tmp_path / "trace.jsonl"
    sizes = {"small": 13, "large": 50}
    before = [audit.trace(loader(mixture(), 2, r, 1), path, run=0) for r in range(2)]
    for t in before:  # epoch 0 whole
        for _ in t:
            pass
    its = [iter(t) for t in before]
    for _ in range(2):  # and 2 steps of epoch 1
        for it in its:
            next(it)
    state = before[0].state_dict()
    assert state["mixture"]["step"] == 7
    new = mixture({"small": 3, "large": 1})
    after = [loader(new, 3, r, 0) for r in range(3)]
    for dl in after:
        dl.load_state_dict(state)
    for dl in after:
        for _ in audit.trace(dl, path, run=1):
            pass
    report = audit.check(path, source_sizes=sizes)
    assert report["verdict"] == "clean", report
    # Every step drew its sources as the weights in force said: 1:3, then 3:1 from
    # the saved step (the last state's history holds both).
    last = after[0].state_dict()["mixture"]
    assert [h[0] for h in last["history"]] == [0, 7]
    report = audit.check(path, source_sizes=sizes, mixture=last, global_batch=G)
    assert report["verdict"] == "clean", report
    # Against the first weights alone, the steps after the restart are off.
    report = audit.check(path, mixture=state["mixture"], global_batch=G)
    assert [f["kind"] for f in report["findings"]] == ["mixture_composition"], report
    # Restarted from the epoch's first step instead: steps 5 and 6 trained twice.
    again = loader(new, 3, 0, 0)
    again.load_state_dict(dict(state, _num_yielded=0, samples=0))
    for _ in audit.trace(again, path, run=2):
        pass
    report = audit.check(path, source_sizes=sizes)
    kinds = {f["kind"]: f for f in report["findings"]}
    assert "resume_duplicate" in kinds, report
    example = kinds["resume_duplicate"]["examples"][0]
    assert example["source"] in sizes and "source_epoch" in example


def test_seed_audit_order_reads_a_saved_state_to_the_samples_the_resumed_loader_reads(
        tmp_path, cross_check_program):
    program = cross_check_program("SEEDLOADER_SEED_AUDIT", "build/default/tools/seed-audit")
    world, weights = 2, {"small": 3, "large": 1}
    spec = json.dumps({"sources": {"small": "synthetic:13", "large": "synthetic:50"},
                       "weights": weights, "samples_per_epoch": 60})

    def order(epoch, steps, state=None):
        """seed-audit order's samples by (epoch, step, rank): source, index and the
        first uniform of the stream its source epoch keys."""
        args = [program, "order", "--data", "mix:" + spec, "--seed", str(SEED),
                "--batch-size", str(G // world), "--world-size", str(world),
                "--partition", "elastic", "--seeding", "sample", "--workers", "1",
                "--epoch", str(epoch), "--steps", steps, "--json", "-"]
        if state is not None:
            path = tmp_path / ("state_%d.json" % state["step"])
            path.write_text(json.dumps(state))
            args += ["--mixture", str(path)]
        done = subprocess.run(args, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        out = {}
        entries = [json.loads(line) for line in done.stdout.splitlines()]
        for e in sorted(entries, key=lambda e: (e["step"], e["rank"], e["slot"])):
            out.setdefault((e["epoch"], e["step"], e["rank"]), []).append(
                (e["source"], e["source_index"],
                 stream_uniform(e["source"], e["source_epoch"], e["source_index"])))
        return out

    # Epoch 0 whole and 3 steps of epoch 1 under the staged weights, then a resume
    # with new ones: a new segment from the saved step 8.
    before = [loader(mixture(), world, r, 1) for r in range(world)]
    for epoch, steps in ((0, 5), (1, 3)):
        for dl in before:
            dl.set_epoch(epoch)
        its = [iter(dl) for dl in before]
        for _ in range(steps):
            for it in its:
                next(it)
    saved = before[0].state_dict()
    assert saved["mixture"]["step"] == 8
    after = [loader(mixture(weights), world, r, 1) for r in range(world)]
    for dl in after:
        dl.load_state_dict(saved)
    names = ("small", "large")
    read, later = {}, None
    for epoch in (1, 2):
        for rank, dl in enumerate(after):
            if epoch == 2:
                dl.set_epoch(2)
            first = 3 if epoch == 1 else 0
            for k, batch in enumerate(dl, start=first):
                read[(epoch, k, rank)] = [(names[tag], index, u) for tag, index, u in rows(batch)]
        if epoch == 1:
            later = after[0].state_dict()["mixture"]  # saved by the resumed run
    assert sorted(read) == [(e, k, r) for e, ks in ((1, range(3, 5)), (2, range(5)))
                            for k in ks for r in range(world)]
    # What the loader read: the source, the index and the stream of each sample of
    # steps 3 and 4 of epoch 1 and all of epoch 2, from the state the first run saved.
    assert {**order(1, "3:5", saved["mixture"]), **order(2, "0:5", saved["mixture"])} == read
    # And from the resumed run's own state, whose history holds both segments.
    assert [h[0] for h in later["history"]] == [0, 8]
    assert order(2, "0:5", later) == {key: v for key, v in read.items() if key[0] == 2}
    # Without the state the new weights count from step 0: other samples.
    unsaved = order(1, "3:5")
    assert all(unsaved[key] != read[key] for key in unsaved)


def test_interpolated_weights_ramp_step_by_step_and_survive_a_resume():
    ramp = [(0, {"small": 0, "large": 1}), (10, {"small": 1, "large": 0})]
    m = sl.Mixture({"small": Source(13, 0), "large": Source(50, 1)}, ramp,
                   samples_per_epoch=60, interpolate=True)
    small = [sum(1 for t, _, _ in step if t == 0) for step in global_batches(m, 1, 0, 3)]
    # Within one sample of 12 x t/10 summed over the steps so far, then all small.
    total, target = 0, 0.0
    for t, n in enumerate(small):
        total += n
        target += 12 * min(t / 10, 1.0)
        assert abs(total - target) < 1, (t, small)
    assert small[0] == 0 and small[12:] == [12] * (len(small) - 12)
    dl = loader(m, 2, 1, 0)
    it = iter(dl)
    next(it)
    state = dl.state_dict()
    assert state["mixture"]["history"][0][4] is True
    resumed = loader(m, 2, 1, 1)
    resumed.load_state_dict(state)
    assert [rows(b) for b in resumed] == [rows(b) for b in it]


def collate_rows(samples):
    """A collate_fn of one's own: the tensors stacked, and each sample's name as a
    str, which default_collate's tensors could not carry."""
    return {"x": torch.stack([s["x"] for s in samples]),
            "u": torch.stack([s["u"] for s in samples]),
            "name": ["%s-%d" % (("small", "large")[int(s["x"][0])], int(s["x"][1]))
                     for s in samples]}


def test_a_collate_fn_gets_each_sample_as_the_engine_gives_it():
    m = mixture()
    want = global_batches(m, 1, 0, 3)
    for world, workers in ((1, 0), (2, 2), (3, 1)):
        got = {}
        for rank in range(world):
            dl = loader(m, world, rank, workers, collate_fn=collate_rows)
            for epoch in range(3):
                dl.set_epoch(epoch)
                for k, batch in enumerate(dl):
                    got.setdefault((epoch, k), []).extend(rows(batch))
                    assert batch["name"] == ["%s-%d" % pair for pair in dl.last_indices]
        assert [got[key] for key in sorted(got)] == want, (world, workers)
    spawned = loader(m, 2, 1, 2, collate_fn=collate_rows, multiprocessing_context="spawn")
    assert [rows(b) for b in spawned] == [rows(b) for b in loader(m, 2, 1, 0)]
    # Its position at a resume, as without a collate_fn.
    dl = loader(m, 2, 1, 1, collate_fn=collate_rows)
    it = iter(dl)
    next(it), next(it)
    state = dl.state_dict()
    assert state["mixture"]["step"] == 2
    resumed = loader(m, 2, 1, 0, collate_fn=collate_rows)
    resumed.load_state_dict(state)
    assert [rows(b) for b in resumed] == [rows(b) for b in it]
    synthetic = sl.Mixture({"a": sl.Synthetic(8, 4, 4, 3), "b": sl.Synthetic(8, 4, 4, 3)},
                           {"a": 1, "b": 1})
    with pytest.raises(sl.ConfigError, match="source 'a' is Synthetic, seedloader's own"):
        sl.DataLoader(synthetic, batch_size=4, collate_fn=collate_rows)
    with pytest.raises(sl.ConfigError, match="its whole batch's place"):
        loader(m, collate_fn=collate_rows, on_bad_sample="skip")


class Damaged(Source):
    """Source whose samples in `bad` raise DataError, as a corrupt file does."""

    def __init__(self, size, tag, bad):
        super().__init__(size, tag)
        self.bad = bad

    def __getitem__(self, index, rng):
        if index in self.bad:
            raise sl.DataError("sample %d of source %d is damaged" % (index, self.tag))
        return super().__getitem__(index, rng)


def test_a_bad_sample_is_replaced_from_its_own_source():
    clean = global_batches(mixture(), 1, 0, 3)
    damaged = sl.Mixture({"small": Damaged(13, 0, {12}), "large": Damaged(50, 1, {49})},
                         STAGED, samples_per_epoch=60)
    for workers in (0, 2):
        dl = loader(damaged, 2, 0, workers, on_bad_sample="skip")
        got = []
        for epoch in range(3):
            dl.set_epoch(epoch)
            got.extend((t, i) for b in dl for t, i, _ in rows(b))
        want = [(t, i) for step in clean for t, i, _ in step[:6]]
        # small's last goes to small's first, large's last to large's first.
        assert got == [{(0, 12): (0, 0), (1, 49): (1, 0)}.get(r, r) for r in want], workers
        assert (0, 12) in want and (1, 49) in want


def test_mixup_pairs_across_ranks_as_in_the_whole_global_batch():
    images = sl.Mixture({"small": Images(13, 0), "large": Images(50, 1)}, STAGED,
                        samples_per_epoch=60)
    def steps(world, workers):
        out = {}
        for rank in range(world):
            dl = loader(images, world, rank, workers, mixup_alpha=0.4, num_classes=2)
            for epoch in range(3):  # the small source into its epochs 1 and 2
                dl.set_epoch(epoch)
                for k, batch in enumerate(dl):
                    out.setdefault((epoch, k), []).append(batch)
        return [(torch.cat([b["image"] for b in out[k]]), torch.cat([b["target"] for b in out[k]]))
                for k in sorted(out)]
    one = steps(1, 0)
    assert len(one) == 15
    for world, workers in ((2, 0), (3, 2), (4, 1)):
        other = steps(world, workers)
        assert len(other) == len(one)
        for (a, ta), (b, tb) in zip(one, other):
            assert torch.equal(a, b) and torch.equal(ta, tb), (world, workers)
    # Mixed: some target is neither one-hot row.
    assert any(((t > 0) & (t < 1)).any() for _, t in one)


class Images(Source):
    """A 1x2x2 float image of the sample's index plus its stream's noise, labelled
    by its source."""

    def __getitem__(self, index, rng):
        return {"image": torch.full((1, 2, 2), float(index)) + torch.tensor(rng.random((1, 2, 2)),
                                                                       dtype=torch.float32),
                "label": torch.tensor(self.tag)}


def test_the_ledger_and_declared_skips_over_a_mixture(tmp_path):
    import seedloader.audit as audit
    m = mixture()
    skipped_sample = 3  # small's sample 3 (mixture indices: small's, then large's)
    path = tmp_path / "trace.jsonl"
    for rank in range(2):
        dl = loader(m, 2, rank, 1)
        for epoch in range(3):
            dl.set_epoch(epoch)
            entries = dl.ledger(range(5), rank=rank)
            read = [(pair, u) for b in dl for pair, (_, _, u) in zip_last(dl, b)]
            # What it reads, and each sample's stream: its source's, in that source's epoch.
            assert [((e["source"], e["source_index"])) for e in entries] == \
                [pair for pair, _ in read]
            for e, (_, u) in zip(entries, read):
                assert stream_uniform(e["source"], e["source_epoch"], e["source_index"]) == u
                assert m.locate(e["index"]) == (e["source"], e["source_index"])
        # Declared skips: global step 11 (epoch 2's second) and a sample, traced.
        dl = loader(m, 2, rank, 1)
        dl.skip(steps=[(11, 12)], samples=[skipped_sample])
        marked = [e for e in dl.ledger(range(5), epoch=2, rank=rank) if e["skipped"]]
        assert {e["step"] for e in marked if e["index"] != skipped_sample} == {1}
        for epoch in range(3):
            dl.set_epoch(epoch)
            delivered = [pair for b in audit.trace(dl, path, run=0) for pair in dl.last_indices]
            assert ("small", skipped_sample) not in delivered
    report = audit.check(path, source_sizes={"small": 13, "large": 50})
    assert report["verdict"] == "clean", report
    declared = [f for f in report["information"] if f["kind"] == "declared_skip"]
    assert declared and declared[0]["count"] > 12, report
    with open(path) as f:
        lines = [json.loads(line) for line in f]
    assert all("source" in j and "source_epoch" in j for j in lines)
    assert {j["batch"] for j in lines if j.get("skipped") and j["epoch"] == 2} >= {1}


def zip_last(dl, batch):
    """(source, index) and the row of each sample of the batch just read."""
    return zip(dl.last_indices, rows(batch))


def rows_of(batch):
    return [(float(i.sum()), int(l)) for i, l in zip(batch["image"], batch["label"])]


class Pictures:
    """Python images shaped as sl.Synthetic(…, 4, 4, 3)'s samples: a dict of a
    float32 3x4x4 image (its index plus its stream's noise) and an int label."""

    def __init__(self, size, dtype=torch.float32):
        self.size, self.dtype = size, dtype

    def __len__(self):
        return self.size

    def __getitem__(self, index, rng):
        noise = torch.tensor(rng.random((3, 4, 4)), dtype=torch.float32)
        return {"image": (torch.full((3, 4, 4), float(index)) + noise).to(self.dtype),
                "label": 100 + index}


def test_seedloaders_own_and_python_sources_mix_in_one_mixture():
    synthetic = sl.Synthetic(20, 4, 4, 3)
    alone = next(iter(sl.DataLoader(synthetic, batch_size=20, seed=SEED)))
    m = sl.Mixture({"native": synthetic, "python": Pictures(9)},
                   {"native": 2, "python": 1}, samples_per_epoch=36)
    want = None
    for world, workers in ((1, 0), (2, 2), (3, 1)):
        got = {}
        for rank in range(world):
            dl = loader(m, world, rank, workers)
            for epoch in range(2):
                dl.set_epoch(epoch)
                for k, batch in enumerate(dl):
                    assert set(batch) == {"image", "label"}
                    rows = got.setdefault((epoch, k), [])
                    for (name, index), image, label in zip(dl.last_indices, batch["image"],
                                                           batch["label"]):
                        if name == "native":
                            assert torch.equal(image, alone["image"][index])
                            assert label == alone["label"][index]
                        else:
                            assert label == 100 + index
                            assert ((image - index >= 0) & (image - index < 1)).all()
                        rows.append((name, index, image.sum().item()))
        steps = [got[key] for key in sorted(got)]
        assert len(steps) == 6 and all(len(s) == G for s in steps)
        # 1 in 3 of 72: within one sample of 24 (1/3 is rounded to 2^-40 units)
        assert abs(sum(n == "python" for s in steps for n, _, _ in s) - 24) <= 1
        want = want or steps
        assert steps == want, (world, workers)
    with pytest.warns(UserWarning, match="read in forked workers too") as record:
        spawned = loader(m, 2, 1, 1, multiprocessing_context="spawn")
        assert [r for b in spawned for r in rows_of(b)] == \
            [r for b in loader(m, 2, 1, 1) for r in rows_of(b)]
    # Where the caller iterates, not a line of the package.
    assert {w.filename for w in record if "forked workers too" in str(w.message)} == \
        {__file__}
    wrong = sl.Mixture({"native": synthetic, "python": Pictures(9, torch.float64)},
                       {"native": 1, "python": 1})
    with pytest.raises(sl.WorkerError, match="float64; the layout says float32"):
        list(loader(wrong))


def test_skipped_samples_are_named_by_source_and_stay_theirs_across_a_resume():
    dl = loader(mixture(), 1, 0, 0)
    dl.skip(samples=[("large", 4), 2])  # large's sample 4, and small's sample 2
    it = iter(dl)
    next(it)
    state = dl.state_dict()
    # Resumed with a source added in front: every mixture index moves, the skipped
    # samples stay large's 4 and small's 2.
    new = sl.Mixture({"extra": Source(7, 2), "small": Source(13, 0), "large": Source(50, 1)},
                     {"extra": 1, "small": 1, "large": 3}, samples_per_epoch=60)
    resumed = loader(new)
    resumed.load_state_dict(state)
    marked, seen = set(), set()
    for epoch in range(3):
        resumed.set_epoch(epoch) if epoch else None
        marked |= {(e["source"], e["source_index"])
                   for e in resumed.ledger(range(len(resumed)), epoch=epoch) if e["skipped"]}
        for _ in resumed:
            seen |= set(resumed.last_indices)
    assert marked == {("large", 4), ("small", 2)}
    assert not seen & marked and len(seen) > 60
    with pytest.raises(sl.ConfigError, match="not a sample of this Mixture"):
        dl.skip(samples=[("huge", 1)])
    with pytest.raises(sl.ConfigError, match="'small' has 13 samples, not 14"):
        dl.skip(samples=[("small", 13)])


class CountedSource(Source):
    """Source, writing each read (pid, tag, index) to a file."""

    def __init__(self, size, tag, path):
        super().__init__(size, tag)
        self.path = path

    def __getitem__(self, index, rng):
        with open(self.path, "a") as f:
            f.write("%d %d %d\n" % (os.getpid(), self.tag, index))
        return super().__getitem__(index, rng)


class DeclaredSource(CountedSource):
    fields = {"x": ((2,), "int64"), "u": ((), "float64")}


@pytest.mark.parametrize("workers,persistent,context", [
    (0, False, None), (2, False, None), (2, True, None), (2, True, "spawn")])
def test_python_sources_layout_is_learned_by_the_pass_whose_workers_serve_it(
        tmp_path, workers, persistent, context):
    # No sample is read before the workers exist, and none twice in an epoch.
    def two_epochs(kind, name):
        path = tmp_path / name
        m = sl.Mixture({"small": kind(13, 0, path), "large": kind(50, 1, path)}, STAGED,
                       samples_per_epoch=60)
        dl = loader(m, workers=workers, persistent_workers=persistent,
                    multiprocessing_context=context)
        batches = [rows(b) for _ in range(2) for b in dl]
        return batches, [tuple(map(int, line.split()))
                         for line in path.read_text().splitlines()]

    learned, reads = two_epochs(CountedSource, "learned")
    declared, _ = two_epochs(DeclaredSource, "declared")
    assert learned == declared and len(learned) == 10
    assert sorted((t, i) for _, t, i in reads) == sorted((t, i) for b in learned
                                                        for t, i, _ in b)
    assert len({p for p, _, _ in reads}) == (1 if workers == 0 else 2 if persistent else 4)


def test_a_rebuilt_engine_keeps_the_sources_learned_layout():
    # Loading a state with another base seed rebuilds the engine; the layout the
    # first pass learned serves it (it used to be learned again, and fail).
    dl = loader(mixture(), workers=2)
    list(dl)
    state = dict(dl.state_dict(), base_seed=SEED + 1)
    dl.load_state_dict(state)
    fresh = loader(mixture(), workers=2)
    fresh.load_state_dict(state)
    assert [rows(b) for b in dl] == [rows(b) for b in fresh]


class Float32Source(Source):
    def __getitem__(self, index, rng):
        sample = super().__getitem__(index, rng)
        return dict(sample, x=sample["x"].float())


@pytest.mark.parametrize("workers", [0, 2])
def test_a_source_the_first_batches_do_not_draw_is_checked_before_the_first_batch(workers):
    # "late" has weight 0 until step 3: the layout pass never reads it, so its
    # layout comes from its first samples, and must be the others'.
    m = sl.Mixture({"early": Source(10, 0), "late": Float32Source(10, 1)},
                   [(0, {"early": 1, "late": 0}), (3, {"early": 1, "late": 1})],
                   samples_per_epoch=48)
    with pytest.raises(sl.ConfigError, match=re.escape(
            "Mixture: the sources' samples must have one layout; 'early' gives ['x'] "
            "int64 (2,), ['u'] float64 (), 'late' gives ['x'] float32 (2,)")):
        next(iter(loader(m, workers=workers)))
