"""partition="elastic": every global batch (indices and bytes) is the same at any
world size dividing G and any worker count, for a Python dataset drawing from numpy's
and torch's global generators, with and without a collate_fn; a state saved at one
world size resumes at another with the same G; what cannot be resumed is refused."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import seedloader as sl

G = 12


class Augmented:
    """Draws from numpy's and torch's global generators, as a torchvision or
    albumentations pipeline would."""

    def __len__(self):
        return 29

    def __getitem__(self, index):
        noise = np.random.randint(0, 1000, 3)
        return torch.full((2,), float(index)) + torch.rand(2), int(noise[0]) + index


def ranks(world, workers=0, dataset=None, **kw):
    args = dict(batch_size=G // world, shuffle=True, seed=11, seeding="sample",
                partition="elastic", world_size=world, num_workers=workers)
    args.update(kw)
    return [sl.DataLoader(dataset or Augmented(), rank=r, **args) for r in range(world)]


def global_batches(loaders):
    """Batch k of every rank, concatenated in rank order: (indices, tensors)."""
    per_rank = []
    for loader in loaders:
        per_rank.append([(list(loader.last_indices), [t.clone() for t in batch])
                         for batch in loader])
    out = []
    for k in range(len(per_rank[0])):
        parts = [rank[k] for rank in per_rank]
        indices = [i for p in parts for i in p[0]]
        fields = [torch.cat([p[1][f] for p in parts]) for f in range(len(parts[0][1]))]
        out.append((indices, fields))
    return out


def same(a, b):
    assert len(a) == len(b)
    for (i, x), (j, y) in zip(a, b):
        assert i == j
        assert all(torch.equal(u, v) for u, v in zip(x, y))


def test_global_batches_are_the_same_at_every_world_size_and_worker_count():
    one = global_batches(ranks(1))
    assert len(one) == 3 and all(len(i) == G for i, _ in one)  # 29 padded to 36
    for world, workers in ((2, 2), (3, 1), (4, 0), (6, 2)):
        same(global_batches(ranks(world, workers)), one)
    assert sorted(set(i for b, _ in one for i in b)) == list(range(29))


def test_len_counts_global_batches():
    assert [len(l) for l in ranks(3)] == [3, 3, 3]
    assert len(ranks(2, drop_last=True)[0]) == 2  # 29 // 12


def test_a_collate_fn_sees_the_same_global_batches():
    def collate(samples):
        return torch.stack([s[0] for s in samples]), torch.tensor([s[1] for s in samples])
    one = global_batches(ranks(1, collate_fn=collate))
    same(global_batches(ranks(4, 2, collate_fn=collate)), one)
    same(global_batches(ranks(1)), one)


def test_a_state_saved_at_one_world_size_resumes_at_another():
    whole = global_batches(ranks(1, 2))
    saved = ranks(4, 2)
    for loader in saved:
        it = iter(loader)
        next(it)
        next(it)
    state = saved[1].state_dict()  # any rank's state resumes every rank
    assert state["samples"] == 2 * G and state["global_batch_size"] == G
    for world in (2, 3, 6):
        resumed = ranks(world, 1)
        for loader in resumed:
            loader.load_state_dict(state)
        same(global_batches(resumed), whole[2:])
        # Then the next epoch, as an uninterrupted run goes on.
        same(global_batches(resumed), global_batches(_epoch(ranks(1), 1)))


def _epoch(loaders, epoch):
    for loader in loaders:
        loader.set_epoch(epoch)
    return loaders


@pytest.mark.parametrize("change,message", [
    (dict(batch_size=4, world_size=2), "saved with global_batch_size=12, this loader has 8"),
    (dict(order="torch"), "saved with order='numpy', this loader has 'torch'"),
    (dict(partition="strided"), "saved with partition='elastic', this loader has 'strided'"),
    (dict(seeding="worker", partition="strided"), "partition='elastic'"),
])
def test_what_cannot_continue_the_stream_is_refused_naming_both_values(change, message):
    state = ranks(2)[0].state_dict()
    args = dict(batch_size=6, shuffle=True, seed=11, seeding="sample",
                partition="elastic", world_size=2, rank=0)
    args.update(change)
    with pytest.raises(sl.ConfigError, match=message.replace("(", r"\(")):
        sl.DataLoader(Augmented(), **args).load_state_dict(state)


def test_another_data_set_is_refused():
    class Other(Augmented):
        pass
    state = ranks(2)[0].state_dict()
    with pytest.raises(sl.ConfigError, match="saved with dataset="):
        ranks(2, dataset=Other())[0].load_state_dict(state)
    state["dataset"]["size"] = 30
    with pytest.raises(sl.ConfigError, match="'size': 30"):
        ranks(2)[0].load_state_dict(state)


def test_elastic_needs_per_sample_seeding_and_its_own_order():
    with pytest.raises(sl.ConfigError, match="partition elastic needs seeding sample"):
        sl.DataLoader(Augmented(), batch_size=2, partition="elastic", seed=1)
    with pytest.raises(sl.ConfigError, match="does not take a sampler"):
        sl.DataLoader(Augmented(), batch_size=2, partition="elastic", seeding="sample",
                      seed=1, sampler=range(29))
    with pytest.raises(sl.ConfigError, match="partition must be 'strided' or 'elastic'"):
        sl.DataLoader(Augmented(), batch_size=2, partition="blocks", seed=1)


def _steps(prefix):
    """{step: (indices, content hashes)} over every rank, in rank order."""
    rows = []
    for name in sorted(os.listdir(os.path.dirname(prefix))):
        if name.startswith(os.path.basename(prefix) + ".rank"):
            with open(os.path.join(os.path.dirname(prefix), name)) as f:
                rows += [json.loads(line) for line in f]
    out = {}
    for row in sorted(rows, key=lambda r: (r["step"], r["rank"])):
        indices, content = out.setdefault(row["step"], ([], []))
        indices += row["indices"]
        content += row["content"]
    return out


def test_the_ddp_example_resumes_at_another_world_size(tmp_path):
    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python",
                           "train_ddp.py")
    common = ["--partition", "elastic", "--global-batch-size", "16",
              "--data", str(tmp_path / "images")]

    def train(spawn, steps, name, *more):
        subprocess.run([sys.executable, example, "--spawn", str(spawn), "--steps",
                        str(steps), "--checkpoint", str(tmp_path / (name + ".pt")),
                        "--log-steps", str(tmp_path / name), *common, *more],
                       check=True, timeout=600)

    train(4, 6, "resumed", "--make-data", "160")
    train(2, 12, "resumed", "--resume")
    train(4, 12, "four")
    train(2, 12, "two")
    resumed, four, two = (_steps(str(tmp_path / n)) for n in ("resumed", "four", "two"))
    assert sorted(resumed) == list(range(1, 13))
    assert resumed == four == two  # the data of every step
    weights = [torch.load(tmp_path / (n + ".pt"))["model"]
               for n in ("resumed", "four", "two")]
    for other in weights[1:]:
        # Only the order of float sums differs (measured: up to 2e-7).
        for name, w in weights[0].items():
            assert torch.allclose(w, other[name], rtol=0, atol=1e-5), name


def test_a_restarted_elastic_run_audits_clean_with_its_global_batch(tmp_path):
    """A trace of 4 ranks for 1 global batch, then 2 ranks resuming: clean when the
    audit knows the epoch is padded to G, a finding when it assumes the world size."""
    path = tmp_path / "trace.jsonl"
    first = ranks(4)
    with open(path, "w") as out:
        def record(loaders, run, stop=None):
            for rank, loader in enumerate(loaders):
                for k, _ in enumerate(loader):
                    if k == stop:
                        break
                    for index in loader.last_indices:
                        out.write(json.dumps({"run": run, "rank": rank, "epoch": 0,
                                              "worker": 0, "batch": k, "index": index,
                                              "rng": "sample-%d" % index}) + "\n")
        record(first, 0, stop=1)
        state = first[0].state_dict()
        state.update(_num_yielded=1, samples=G)  # where every rank stopped
        resumed = ranks(2)
        for loader in resumed:
            loader.load_state_dict(state)
        record(resumed, 1)
    report = sl.audit.check(path, dataset_size=29, global_batch=G)
    assert report["verdict"] == "clean", report["findings"]
    assert report["samples"] == 36
    kinds = {f["kind"] for f in sl.audit.check(path, dataset_size=29)["findings"]}
    assert kinds, "padding to 36 passed as padding to a multiple of the world size"
    with pytest.raises(sl.ConfigError, match="global_batch must be at least 1"):
        sl.audit.check(path, dataset_size=29, global_batch=0)


# --- canonical nodes ----------------------------------------------------------------------

def test_canonical_nodes_keep_the_global_batches_and_cut_the_order_into_parts():
    # G = 12 in C = 3 parts of 12 positions (29 padded to 36): each global batch holds
    # 4 of each part, at every world size dividing G.
    want = global_batches(ranks(1, canonical_nodes=3))
    for world in (2, 3, 6):
        same(global_batches(ranks(world, canonical_nodes=3)), want)
    plain = [i for indices, _ in global_batches(ranks(1)) for i in indices]
    parts = [plain[c * 12:(c + 1) * 12] for c in range(3)]
    for g, (indices, _) in enumerate(want):
        assert indices == [i for c in range(3) for i in parts[c][4 * g:4 * g + 4]]
    # The ledger knows the split.
    loader = ranks(3, canonical_nodes=3)[1]
    loader.set_epoch(0)
    assert [e["index"] for e in loader.ledger(1, rank=1)] == want[1][0][4:8]


def test_canonical_nodes_are_kept_in_the_state_and_checked(monkeypatch):
    first = ranks(2, canonical_nodes=3)[0]
    it = iter(first)
    next(it)
    state = first.state_dict()
    assert state["canonical_nodes"] == 3
    other = ranks(2, canonical_nodes=6)[0]
    with pytest.raises(sl.ConfigError, match="canonical_nodes=3, this loader has 6"):
        other.load_state_dict(state)
    with pytest.raises(sl.ConfigError, match="needs partition='elastic'"):
        sl.DataLoader(Augmented(), batch_size=4, canonical_nodes=2)
    with pytest.raises(sl.ConfigError, match="canonical_nodes must be an int"):
        ranks(2, canonical_nodes=-1)
    with pytest.raises(sl.ConfigError, match="does not divide the global batch of 12"):
        next(iter(ranks(2, canonical_nodes=5)[0]))
    # Two ranks a node (torchrun's LOCAL_WORLD_SIZE) on 3 nodes: 3 does not divide 4.
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    assert sl.node_count(6) == 3
    with pytest.raises(sl.ConfigError, match="canonical_nodes 4 on 3 nodes of 6 ranks"):
        next(iter(ranks(6, canonical_nodes=4)[0]))
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")
    assert sl.node_count(6) == 0  # 4 a node does not divide 6: unknown


def test_canonical_nodes_default_to_one_per_node_under_order_shards(tmp_path, monkeypatch):
    from test_remote import write_packed
    write_packed(str(tmp_path / "data"), shards=6, per_shard=4)  # 24 samples
    data = sl.TarShards(str(tmp_path / "data"), transform="rrc:8")

    def shards(world, **kw):
        return ranks(world, dataset=data, order="shards", **kw)

    def steps(loaders):
        """The indices of each global batch left in the epoch."""
        per_rank = [[list(loader.last_indices) for _ in loader] for loader in loaders]
        return [[i for rank in per_rank for i in rank[k]] for k in range(len(per_rank[0]))]

    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")  # torchrun: 2 ranks a node
    two_nodes = shards(4)
    assert [loader.canonical_nodes for loader in two_nodes] == [2] * 4
    want = steps(shards(4, canonical_nodes=2))
    assert steps(two_nodes) == want
    assert want != steps(shards(4, canonical_nodes=0))  # the split is another order
    # Given, the node count needs no launcher; one that does not divide the world
    # is refused by name.
    monkeypatch.delenv("LOCAL_WORLD_SIZE")
    assert shards(4)[0].canonical_nodes == 0
    assert [loader.canonical_nodes for loader in shards(4, nodes=2)] == [2] * 4
    assert steps(shards(4, nodes=2)) == want
    with pytest.raises(sl.ConfigError, match="nodes must be an int >= 1"):
        shards(4, nodes=0)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    # No split where it would not help: one node, another order, or asked for none.
    assert shards(2)[0].canonical_nodes == 0  # 2 ranks: one node
    assert ranks(4, dataset=data)[0].canonical_nodes == 0
    assert shards(4, canonical_nodes=0)[0].canonical_nodes == 0
    # C is the run's: a state keeps it, and a loader left to its default takes it
    # on one node, where its own default is no split.
    first = shards(4)[0]
    next(iter(first))
    state = first.state_dict()
    assert state["canonical_nodes"] == 2
    resumed = shards(2)
    for loader in resumed:
        loader.load_state_dict(state)
    assert [loader.canonical_nodes for loader in resumed] == [2, 2]
    assert steps(resumed) == want[1:]
    with pytest.raises(sl.ConfigError, match="canonical_nodes=2, this loader has 3"):
        shards(2, canonical_nodes=3)[0].load_state_dict(state)
