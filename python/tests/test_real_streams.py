"""Real streams through seedloader.DataLoader: Hugging Face `datasets` (a local
Parquet folder read with load_dataset(..., streaming=True), and
Dataset.to_iterable_dataset(num_shards=8), each split with
split_dataset_by_node) and a `webdataset` pipeline over local tar shards split
by seedloader.shard_stream. At 2 workers x 2 ranks each sample comes once per
epoch, epochs are reshuffled, a mid-epoch resume gives exactly the rest of the
epoch, and the same streams built without splitting are caught as duplicated
before the first batch. Versions pinned in frameworks/requirements.txt; without
them the tests skip, or fail under SEEDLOADER_REQUIRE_CROSS_CHECKS=1."""
import os
import random
import subprocess
import sys

import numpy as np
import pytest
import torch.utils.data as tud

import seedloader as sl

from conftest import need

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROWS, SHARDS = 12, 8  # samples per shard, shards


def parquet_files(folder):
    need("datasets")
    import pyarrow as pa
    import pyarrow.parquet as pq
    files = []
    for s in range(SHARDS):
        ids = list(range(s * ROWS, (s + 1) * ROWS))
        path = os.path.join(folder, "part-%02d.parquet" % s)
        pq.write_table(pa.table({"id": ids, "x": [[float(i)] * 3 for i in ids]}), path)
        files.append(path)
    return files


def hf_parquet(files, rank, world_size, buffer_size):
    import datasets
    from datasets.distributed import split_dataset_by_node
    ds = datasets.load_dataset("parquet", data_files={"train": files}, split="train",
                               streaming=True)
    if buffer_size:
        ds = ds.shuffle(seed=3, buffer_size=buffer_size)
    if world_size:
        ds = split_dataset_by_node(ds, rank=rank, world_size=world_size)
    return ds


def hf_in_memory(rank, world_size, buffer_size):
    need("datasets")
    import datasets
    from datasets.distributed import split_dataset_by_node
    n = ROWS * SHARDS
    ds = datasets.Dataset.from_dict({"id": list(range(n)),
                                     "x": [[float(i)] * 3 for i in range(n)]})
    ds = ds.to_iterable_dataset(num_shards=SHARDS)
    if buffer_size:
        ds = ds.shuffle(seed=3, buffer_size=buffer_size)
    if world_size:
        ds = split_dataset_by_node(ds, rank=rank, world_size=world_size)
    return ds


def ids_of(loader):
    return [int(i) for batch in loader for i in batch["id"]]


def each_sample_once_per_epoch(make, reshuffled):
    """At 2 ranks x 2 workers over 2 epochs: the ranks' samples together are every
    sample once per epoch, and the second epoch's order is another (`reshuffled`)
    or the same."""
    loaders = [sl.DataLoader(make(rank), batch_size=4, num_workers=2, seed=0, rank=rank,
                             world_size=2) for rank in range(2)]
    epochs = [[ids_of(loader) for loader in loaders] for _ in range(2)]
    for ranks in epochs:
        assert sorted(ranks[0] + ranks[1]) == list(range(ROWS * SHARDS))
    assert (epochs[0] != epochs[1]) == reshuffled
    return epochs


def resumes_exactly(make, epochs, cut=5, **kw):
    """Rank 0's state after `cut` batches, loaded into a new loader: exactly the
    rest of that epoch, then the next."""
    loader = sl.DataLoader(make(0), batch_size=4, num_workers=2, seed=0, rank=0,
                           world_size=2, **kw)
    it = iter(loader)
    head = [int(i) for _ in range(cut) for i in next(it)["id"]]
    state = loader.state_dict()
    del it
    assert head == epochs[0][0][:len(head)]
    # HF's own state per worker, or (replay) the batches each worker gave.
    assert all(("state" in w) == (kw.get("stream_resume") != "replay")
               for w in state["workers"] if w["batches"])
    resumed = sl.DataLoader(make(0), batch_size=4, num_workers=2, seed=0, rank=0,
                            world_size=2, **kw)
    resumed.load_state_dict(state)
    assert ids_of(resumed) == epochs[0][0][len(head):]
    assert ids_of(resumed) == epochs[1][0]


# HF's state_dict() (datasets 2.20) keeps no shuffle buffer's content (HF says
# so when it is loaded), and under with_format("torch") it counts a whole Arrow
# table as read once its first row is: a resumed HF stream then loses samples.
# HF's state is checked on streams of rows read in order; a shuffled, torch-
# formatted stream resumes exactly with stream_resume="replay".

def test_hf_parquet_streaming_split_by_node(tmp_path):
    files = parquet_files(str(tmp_path))
    each_sample_once_per_epoch(lambda rank: hf_parquet(files, rank, 2, 16), reshuffled=True)
    epochs = each_sample_once_per_epoch(lambda rank: hf_parquet(files, rank, 2, 0),
                                        reshuffled=False)
    resumes_exactly(lambda rank: hf_parquet(files, rank, 2, 0), epochs)


def test_hf_to_iterable_dataset_split_by_node():
    each_sample_once_per_epoch(lambda rank: hf_in_memory(rank, 2, 16), reshuffled=True)
    epochs = each_sample_once_per_epoch(lambda rank: hf_in_memory(rank, 2, 0),
                                        reshuffled=False)
    resumes_exactly(lambda rank: hf_in_memory(rank, 2, 0), epochs)


def test_a_shuffled_torch_formatted_hf_stream_resumes_exactly_by_replay():
    def make(rank):
        return hf_in_memory(rank, 2, 16).with_format("torch")

    epochs = each_sample_once_per_epoch(make, reshuffled=True)
    resumes_exactly(make, epochs, stream_resume="replay")


RANKS = os.path.join(os.path.dirname(__file__), "stream_ranks.py")


def test_hf_streams_not_split_by_node_are_caught_across_ranks(tmp_path):
    """Two gloo ranks reading the whole of the same HF stream (no
    split_dataset_by_node): a DuplicateStreamError on both, before a batch."""
    need("datasets")
    env = dict(os.environ, MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(29900 + os.getpid() % 90), WORLD_SIZE="2")
    procs = [subprocess.Popen([sys.executable, RANKS, "hf", str(tmp_path)],
                              env=dict(env, RANK=str(r)), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for r in range(2)]
    outs = [p.communicate(timeout=180)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    for out in outs:
        assert "DuplicateStreamError" in out and "of rank 0 and worker" in out, out


# --- webdataset ---------------------------------------------------------------------

def tar_shards(folder):
    need("webdataset")
    import webdataset as wds
    urls = []
    for s in range(SHARDS):
        path = os.path.join(folder, "shard-%02d.tar" % s)
        with wds.TarWriter(path) as sink:
            for i in range(s * ROWS, (s + 1) * ROWS):
                sink.write({"__key__": "%06d" % i, "cls": i,
                            "x.npy": np.full(3, i, dtype=np.float32)})
        urls.append(path)
    return urls


class WebDatasetShards(tud.IterableDataset):
    """A webdataset pipeline over tar shards: with `split`, this rank's and worker's
    shards by seedloader.shard_stream (reshuffled each epoch) and a shuffle buffer
    drawing from the worker's stream; without, every shard in every replica."""

    def __init__(self, urls, split=True):
        self.urls, self.split = urls, split

    def __iter__(self):
        import webdataset as wds
        stages = [wds.SimpleShardList(sl.shard_stream(self.urls) if self.split else self.urls),
                  wds.tarfile_to_samples(), wds.decode()]
        if self.split:
            rng = random.Random(int(sl.worker_rng().integers(1 << 62)))
            stages.append(wds.shuffle(8, initial=8, rng=rng))
        stages.append(wds.map(lambda s: {"cls": s["cls"], "x": s["x.npy"]}))
        return iter(wds.DataPipeline(*stages))


def test_a_webdataset_pipeline_split_by_shard_stream(tmp_path):
    urls = tar_shards(str(tmp_path))

    def make(rank):
        return WebDatasetShards(urls)

    loaders = [sl.DataLoader(make(r), batch_size=4, num_workers=2, seed=0, rank=r,
                             world_size=2) for r in range(2)]
    epochs = [[[int(i) for b in loader for i in b["cls"]] for loader in loaders]
              for _ in range(2)]
    for ranks in epochs:
        assert sorted(ranks[0] + ranks[1]) == list(range(ROWS * SHARDS))
    assert epochs[0] != epochs[1]
    # No state of its own: resumed by fast-forwarding each worker, exactly.
    loader = sl.DataLoader(make(0), batch_size=4, num_workers=2, seed=0, rank=0,
                           world_size=2)
    it = iter(loader)
    head = [int(i) for _ in range(5) for i in next(it)["cls"]]
    state = loader.state_dict()
    del it
    resumed = sl.DataLoader(make(0), batch_size=4, num_workers=2, seed=0, rank=0,
                            world_size=2)
    resumed.load_state_dict(state)
    assert head + [int(i) for b in resumed for i in b["cls"]] == epochs[0][0]


def test_a_webdataset_pipeline_without_splitting_is_caught(tmp_path):
    urls = tar_shards(str(tmp_path))
    loader = sl.DataLoader(WebDatasetShards(urls, split=False), batch_size=4, num_workers=2,
                           seed=0)
    with pytest.raises(sl.DuplicateStreamError, match="workers 0 and 1 of rank 0"):
        next(iter(loader))
