"""seedloader.DataLoader over torch IterableDatasets (streams): torch's semantics
(replicas per worker, round-robin order, get_worker_info(), worker_init_fn,
batch_size=None, drop_last per worker, persistent workers, start methods,
exceptions with their types, len() and its warning), worker generators from
the seed, duplicated streams caught before the first batch, shard_stream, and
exact resume of stateful and stateless streams."""
import json
import os
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import seedloader as sl
from seedloader import _seeding


def worker_of():
    info = tud.get_worker_info()
    return (info.id, info.num_workers) if info is not None else (0, 1)


class Sharded(tud.IterableDataset):
    """range(n) split by worker (worker w: w, w + W, ...), each sample with draws
    from numpy's global generator, torch's and the worker's stream."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        w, workers = worker_of()
        for i in range(w, self.n, workers):
            yield torch.tensor([i, np.random.randint(1 << 30), int(torch.randint(1 << 30, ())),
                                int(sl.worker_rng().integers(1 << 30))])


class Sized(tud.IterableDataset):
    """Worker w yields range(sizes[w]) shifted by 100 * w: streams of unequal length."""

    def __init__(self, sizes):
        self.sizes = sizes

    def __iter__(self):
        w, _ = worker_of()
        return iter(range(100 * w, 100 * w + self.sizes[w]))


class Stateful(tud.IterableDataset):
    """A stream with torchdata's Stateful protocol: worker w reads its share of
    range(n) and knows its position; samples draw from numpy's generator."""

    def __init__(self, n):
        self.n, self.pos, self.loaded = n, 0, None

    def state_dict(self):
        return {"pos": self.pos}

    def load_state_dict(self, state):
        self.loaded = state["pos"]

    def __iter__(self):
        w, workers = worker_of()
        mine = list(range(w, self.n, workers))
        self.pos, self.loaded = self.loaded or 0, None
        while self.pos < len(mine):
            i = mine[self.pos]
            self.pos += 1
            yield torch.tensor([i, np.random.randint(1 << 30),
                                int(sl.worker_rng().integers(1 << 30))])


class Unsplit(tud.IterableDataset):
    """Every replica yields the same samples: the duplicate this check is for."""

    def __init__(self, n=12):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))


class Reordered(tud.IterableDataset):
    """Every replica yields the same samples, each worker in an order of its own."""

    def __iter__(self):
        return iter(sl.worker_rng().permutation(6).tolist())


def values(loader):
    return [b.tolist() for b in loader]


def round_robin(streams):
    """torch's order: a batch of each worker in turn, a finished one dropping out."""
    out, iters = [], [iter(s) for s in streams]
    while iters:
        for it in list(iters):
            try:
                out.append(next(it))
            except StopIteration:
                iters.remove(it)
    return out


def batched(xs, size, drop_last):
    out = [xs[i:i + size] for i in range(0, len(xs), size)]
    return out[:-1] if drop_last and out and len(out[-1]) < size else out


# --- torch's semantics ----------------------------------------------------------------

@pytest.mark.parametrize("workers", [0, 1, 2, 3])
@pytest.mark.parametrize("batch_size,drop_last", [(None, False), (1, False), (3, False),
                                                  (3, True)])
def test_batches_come_round_robin_a_finished_worker_dropping_out(workers, batch_size,
                                                                 drop_last):
    sizes = [7, 2, 11][:max(workers, 1)] if workers else [7]
    loader = sl.DataLoader(Sized(sizes), batch_size=batch_size, drop_last=drop_last,
                           num_workers=workers, seed=0, on_duplicate_stream="off")
    streams = [list(range(100 * w, 100 * w + n)) for w, n in enumerate(sizes)]
    if batch_size is None:
        expected = round_robin(streams)
        assert [int(b) for b in loader] == expected
    else:
        expected = round_robin([batched(s, batch_size, drop_last) for s in streams])
        assert values(loader) == expected
    if workers <= 2 and batch_size == 3:  # torch's own loader, the same batches
        theirs = tud.DataLoader(Sized(sizes), batch_size=3, drop_last=drop_last,
                                num_workers=workers)
        assert sorted(values(theirs)) == sorted(expected)


def test_get_worker_info_and_worker_init_fn_as_torch_sets_them():
    class Info(tud.IterableDataset):
        def __iter__(self):
            info = tud.get_worker_info()
            yield torch.tensor([info.id, info.num_workers, info.seed == torch.initial_seed(),
                                info.dataset is self, int(os.environ["STREAM_INIT"])])

    def init(worker_id):
        os.environ["STREAM_INIT"] = str(10 + worker_id)

    loader = sl.DataLoader(Info(), batch_size=None, num_workers=3, worker_init_fn=init, seed=1)
    assert values(loader) == [[w, 3, 1, 1, 10 + w] for w in range(3)]


def test_worker_generators_come_from_the_seed_epoch_rank_and_worker():
    def draws(**kw):
        loader = sl.DataLoader(Sharded(8), batch_size=None, num_workers=2, **kw)
        return {b[0]: b[1:] for b in values(loader)}

    first = draws(seed=5)
    assert first == draws(seed=5)
    assert first != draws(seed=6)
    assert first != draws(seed=5, rank=1, world_size=2)
    # Each worker's generators: seeded from the stream (1, epoch, rank, worker).
    for w in range(2):
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
            5, spawn_key=(1, 0, 0, w))))
        state = rng.bit_generator.state
        _seeding.seed_globals_from_stream(state)
        first_of_worker = first[w]
        assert first_of_worker[0] == np.random.randint(1 << 30)
        assert first_of_worker[1] == int(torch.randint(1 << 30, ()))
        assert first_of_worker[2] == int(rng.integers(1 << 30))
    # The next epoch draws afresh.
    loader = sl.DataLoader(Sharded(8), batch_size=None, num_workers=2, seed=5)
    epochs = [values(loader), values(loader)]
    assert [b[0] for b in epochs[0]] == [b[0] for b in epochs[1]]
    assert epochs[0] != epochs[1]


def test_a_workers_exception_is_raised_with_its_type_and_the_pass_goes_on():
    class Raises(tud.IterableDataset):
        def __init__(self, bad):
            self.bad = bad

        def __iter__(self):
            w, _ = worker_of()
            return (self._sample(w, i) for i in range(3))

        def _sample(self, w, i):
            if w == self.bad and i == 1:
                raise KeyError("sample %d of worker %d" % (i, w))
            return 10 * w + i

    got, errors = [], []
    it = iter(sl.DataLoader(Raises(1), batch_size=None, num_workers=2, seed=0))
    while True:
        try:
            got.append(int(next(it)))
        except StopIteration:
            break
        except KeyError as e:
            errors.append(e)
    assert isinstance(errors[0], sl.WorkerError) and "worker 1" in str(errors[0])
    assert "Caught KeyError in DataLoader worker process 1" in str(errors[0])
    # A generator that raised is finished: worker 1 gives nothing after it.
    assert got == [0, 10, 1, 2]
    with pytest.raises(KeyError, match="sample 1 of worker 0"):
        list(sl.DataLoader(Raises(0), batch_size=None, num_workers=0))


def test_empty_mixed_and_lying_streams_behave_as_torchs():
    class Empty(tud.IterableDataset):
        def __iter__(self):
            return iter(())

    assert values(sl.DataLoader(Empty(), batch_size=2, num_workers=2, seed=0)) == []

    class Mixed(tud.IterableDataset):
        def __iter__(self):
            return iter([1, "two"])

    with pytest.raises(TypeError):
        list(sl.DataLoader(Mixed(), batch_size=2, num_workers=0))

    class Lies(tud.IterableDataset):
        def __len__(self):
            return 2

        def __iter__(self):
            return iter(range(5))

    loader = sl.DataLoader(Lies(), batch_size=None)
    assert len(loader) == 2
    with pytest.warns(UserWarning, match="was reported to be 2"):
        assert [int(x) for x in loader] == list(range(5))

    class Endless(tud.IterableDataset):
        def __len__(self):
            return 3

        def __iter__(self):
            i = 0
            while True:
                yield i
                i += 1

    loader = sl.DataLoader(Endless(), batch_size=2, num_workers=1, seed=0)
    assert len(loader) == 2
    with pytest.warns(UserWarning, match="not properly configuring"):
        it = iter(loader)
        assert [next(it).tolist() for _ in range(4)] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    del it
    with pytest.raises(TypeError, match="has no len"):
        len(sl.DataLoader(Sharded(4)))


def test_a_collate_fn_and_pinning_are_applied_as_torchs():
    loader = sl.DataLoader(Sized([4, 3]), batch_size=2, num_workers=2, seed=0,
                           collate_fn=lambda xs: {"sum": sum(xs), "n": len(xs)})
    assert list(loader) == [{"sum": 1, "n": 2}, {"sum": 201, "n": 2}, {"sum": 5, "n": 2},
                            {"sum": 102, "n": 1}]
    one = sl.DataLoader(Sized([3]), batch_size=None, collate_fn=lambda x: x * 2)
    assert list(one) == [0, 2, 4]


def test_persistent_workers_stay_and_others_end_with_their_pass():
    loader = sl.DataLoader(Sharded(6), batch_size=2, num_workers=2, seed=0,
                           persistent_workers=True)
    it = iter(loader)
    next(it)
    pids = loader.worker_pids()
    rest = values(it)
    assert len(rest) == 3 and loader.worker_pids() == pids
    assert len(values(loader)) == 4 and loader.worker_pids() == pids
    loader.close()

    loader = sl.DataLoader(Sharded(6), batch_size=2, num_workers=2, seed=0)
    it = iter(loader)
    next(it)
    pids = loader.worker_pids()
    assert len(pids) == 2
    del it
    deadline = time.monotonic() + 10
    while any(os.path.exists("/proc/%d" % p) and _running(p) for p in pids):
        assert time.monotonic() < deadline, "a dropped iterator's workers still run"
        time.sleep(0.05)


def _running(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_spawn_and_forkserver_give_the_forked_batches(method):
    forked = values(sl.DataLoader(Sharded(9), batch_size=2, num_workers=2, seed=3))
    started = sl.DataLoader(Sharded(9), batch_size=2, num_workers=2, seed=3,
                            multiprocessing_context=method)
    assert values(started) == forked


def test_a_killed_worker_and_a_timeout_are_torchs_errors():
    class Slow(tud.IterableDataset):
        def __iter__(self):
            w, _ = worker_of()
            yield w
            time.sleep(60)
            yield w

    it = iter(sl.DataLoader(Slow(), batch_size=None, num_workers=2, seed=0))
    assert int(next(it)) == 0
    os.kill(it.loader.worker_pids()[1], signal.SIGKILL)
    assert int(next(it)) == 1  # worker 1's first, sent before it was killed
    pid = it.loader.worker_pids()[0]
    it.close()
    del it
    it = iter(sl.DataLoader(Slow(), batch_size=None, num_workers=1, seed=0, timeout=0.5))
    assert int(next(it)) == 0
    with pytest.raises(sl.TimeoutError, match="timed out after 0.5 seconds"):
        next(it)
    it.close()
    loader = sl.DataLoader(Slow(), batch_size=None, num_workers=1, seed=0)
    it = iter(loader)
    assert int(next(it)) == 0
    os.kill(loader.worker_pids()[0], signal.SIGKILL)
    with pytest.raises(sl.WorkerError, match=r"is killed by signal: Killed"):
        next(it)
    assert pid


def test_a_batch_that_does_not_pickle_is_its_error_not_a_hang():
    class Generators(tud.IterableDataset):
        def __iter__(self):
            w, _ = worker_of()
            yield (x for x in range(w))  # a generator object: it does not pickle

    loader = sl.DataLoader(Generators(), batch_size=None, num_workers=2, seed=0,
                           collate_fn=lambda x: x)
    with pytest.raises(TypeError, match="could not be sent to the main process"):
        list(loader)


def test_map_style_options_and_torchs_iterable_rules_are_refused_by_name():
    for kw, match in [({"shuffle": True}, "expected unspecified shuffle option"),
                      ({"sampler": [0, 1]}, "expected unspecified sampler option"),
                      ({"seeding": "sample"}, "seeding='sample' applies to map-style"),
                      ({"partition": "elastic"}, "partition='elastic' applies"),
                      ({"mixup_alpha": 0.2}, "mixup_alpha=0.2 applies"),
                      ({"format": "numpy"}, "format='numpy' does not apply"),
                      ({"on_duplicate_stream": "maybe"}, "must be 'error', 'warn' or 'off'"),
                      ({"stream_resume": "skip"}, "must be 'state' or 'replay'")]:
        with pytest.raises(sl.ConfigError, match=match):
            sl.DataLoader(Sharded(4), batch_size=2, **kw)
    with pytest.raises(sl.ConfigError, match="not a torch.utils.data.IterableDataset"):
        sl.DataLoader((i for i in range(3)))
    loader = sl.DataLoader(Sharded(4), batch_size=2)
    assert isinstance(loader, sl.DataLoader)
    with pytest.raises(sl.ConfigError, match="is a stream"):
        loader.skip(steps=[1])


# --- duplicated streams ---------------------------------------------------------------

def test_a_stream_every_worker_repeats_is_caught_before_the_first_batch():
    loader = sl.DataLoader(Unsplit(), batch_size=4, num_workers=2, seed=0)
    with pytest.raises(sl.DuplicateStreamError,
                       match="workers 0 and 1 of rank 0 start epoch 0 with the same samples"):
        next(iter(loader))
    with pytest.warns(UserWarning, match="shard_stream"):
        assert len(values(sl.DataLoader(Unsplit(), batch_size=4, num_workers=2, seed=0,
                                        on_duplicate_stream="warn"))) == 6
    assert len(values(sl.DataLoader(Unsplit(), batch_size=4, num_workers=2, seed=0,
                                    on_duplicate_stream="off"))) == 6

    class OnPurpose(Unsplit):
        identical_streams = True

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(values(sl.DataLoader(OnPurpose(), batch_size=4, num_workers=2,
                                        seed=0))) == 6
    # One sample per batch: the first samples compared are the first batches'.
    with pytest.raises(sl.DuplicateStreamError):
        next(iter(sl.DataLoader(Unsplit(), batch_size=None, num_workers=2, seed=0)))
    # A shuffle buffer reorders a duplicated stream: still caught.
    with pytest.raises(sl.DuplicateStreamError):
        next(iter(sl.DataLoader(Reordered(), batch_size=4, num_workers=2, seed=0)))
    # Split streams pass, unequal lengths and an empty worker too.
    assert len(list(sl.DataLoader(Sized([3, 0, 5]), batch_size=None, num_workers=3,
                                  seed=0))) == 8


RANKS = os.path.join(os.path.dirname(__file__), "stream_ranks.py")


@pytest.mark.parametrize("split", ["workers", "ranks"])
def test_ranks_that_repeat_each_other_are_caught_through_the_process_group(split, tmp_path):
    """Two gloo ranks: a stream split by worker only is a duplicate across ranks;
    one split by shard_stream over (rank, worker) reads each sample once."""
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(29600 + os.getpid() % 300),
               WORLD_SIZE="2")
    procs = [subprocess.Popen([sys.executable, RANKS, split, str(tmp_path)],
                              env=dict(env, RANK=str(r)), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for r in range(2)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    if split == "workers":
        for out in outs:
            assert "DuplicateStreamError" in out and "of rank 0 and worker" in out, out
    else:
        seen = sorted(int(x) for r in range(2)
                      for x in (tmp_path / ("rank%d" % r)).read_text().split())
        assert seen == list(range(40))


# --- shard_stream -----------------------------------------------------------------------

class Shards(tud.IterableDataset):
    """A stream of shards (each a range of 5 samples) split by shard_stream."""

    def __init__(self, shards, uneven=None):
        self.shards, self.uneven = shards, uneven

    def __iter__(self):
        for shard in sl.shard_stream(range(self.shards), uneven=self.uneven):
            yield from range(5 * shard, 5 * shard + 5)


def test_shard_stream_reads_each_shard_once_per_epoch_reshuffled_by_the_seed():
    loader = sl.DataLoader(Shards(12), batch_size=None, num_workers=3, seed=4)
    epochs = [[int(x) for x in loader] for _ in range(2)]
    for epoch in epochs:
        assert sorted(epoch) == list(range(60))
    assert epochs[0] != epochs[1]
    again = sl.DataLoader(Shards(12), batch_size=None, num_workers=3, seed=4)
    assert [int(x) for x in again] == epochs[0]
    # Over two ranks, each rank's share: the union is the epoch, once.
    ranks = [[int(x) for x in sl.DataLoader(Shards(12), batch_size=None, num_workers=2,
                                            seed=4, rank=r, world_size=2)] for r in range(2)]
    assert sorted(ranks[0] + ranks[1]) == list(range(60))
    assert not set(ranks[0]) & set(ranks[1])


def test_shard_stream_says_what_to_do_with_an_uneven_count():
    with pytest.raises(sl.WorkerError, match="uneven='pad'"):
        list(sl.DataLoader(Shards(7), batch_size=None, num_workers=2, seed=0))
    with pytest.raises(sl.ConfigError, match="uneven='pad'"):
        list(sl.DataLoader(Shards(7), batch_size=None, num_workers=0, rank=1, world_size=2,
                           seed=0))
    padded = [int(x) for x in sl.DataLoader(Shards(7, "pad"), batch_size=None,
                                            num_workers=2, seed=0)]
    assert len(padded) == 40 and set(padded) == set(range(35))
    dropped = [int(x) for x in sl.DataLoader(Shards(7, "drop"), batch_size=None,
                                             num_workers=2, seed=0)]
    assert len(dropped) == 30 and len(set(dropped)) == 30
    # Outside seedloader's loader: the seed and epoch are the caller's to give.
    with pytest.raises(sl.ConfigError, match="give both"):
        sl.shard_stream(range(4))
    assert sorted(sl.shard_stream(range(4), seed=1, epoch=0)) == [0, 1, 2, 3]
    assert sl.shard_stream(range(4), shuffle=False) == [0, 1, 2, 3]
    with pytest.raises(RuntimeError, match="while the loader iterates"):
        sl.worker_rng()


# --- resume -------------------------------------------------------------------------

@pytest.mark.parametrize("dataset,resume", [(Stateful, "state"), (Sharded, "state"),
                                            (Stateful, "replay")],
                         ids=["stateful", "fast-forward", "stateful-replayed"])
@pytest.mark.parametrize("workers", [0, 2, 3])
def test_a_resumed_stream_gives_exactly_the_rest_of_its_epoch(dataset, resume, workers):
    def loader():
        return sl.DataLoader(dataset(23), batch_size=2, num_workers=workers, seed=9,
                             prefetch_factor=3 if workers else None, stream_resume=resume)

    whole = loader()
    expected = [values(whole), values(whole)]
    for cut in (1, 5, 11):
        first = loader()
        it = iter(first)
        head = [next(it).tolist() for _ in range(cut)]
        state = first.state_dict()
        del it
        assert head == expected[0][:cut]
        kept = dataset is Stateful and resume == "state"
        assert all(("state" in w) == kept for w in state["workers"] if w["batches"])
        resumed = loader()
        resumed.load_state_dict(state)
        assert values(resumed) == expected[0][cut:]
        assert values(resumed) == expected[1]
    # A state taken at the epoch's end resumes with the next epoch.
    done = loader()
    values(done)
    state = done.state_dict()
    assert state["finished"]
    after = loader()
    after.load_state_dict(state)
    assert values(after) == expected[1]


def test_a_state_from_another_worker_count_or_a_map_style_loader_is_refused():
    loader = sl.DataLoader(Stateful(10), batch_size=2, num_workers=2, seed=0)
    it = iter(loader)
    next(it)
    state = loader.state_dict()
    assert state["workers"][0]["state"] == {"pos": 2}
    other = sl.DataLoader(Stateful(10), batch_size=2, num_workers=3, seed=0)
    with pytest.raises(sl.ConfigError, match="num_workers=2"):
        other.load_state_dict(state)
    with pytest.raises(sl.ConfigError, match="not a stream's"):
        other.load_state_dict(sl.DataLoader(list(range(4)), batch_size=2).state_dict())
    with pytest.raises(sl.ConfigError):
        sl.DataLoader(list(range(4)), batch_size=2).load_state_dict(state)


def test_a_stream_shorter_than_its_saved_position_is_an_error_not_a_repeat():
    loader = sl.DataLoader(Sharded(20), batch_size=2, num_workers=2, seed=0)
    it = iter(loader)
    for _ in range(6):
        next(it)
    state = loader.state_dict()
    del it
    shorter = sl.DataLoader(Sharded(4), batch_size=2, num_workers=2, seed=0)
    shorter.load_state_dict(state)
    with pytest.raises(sl.WorkerError, match="fast-forwarding"):
        list(shorter)


# --- the audit ----------------------------------------------------------------------

def test_a_trace_of_a_split_stream_audits_clean_and_an_unsplit_one_repeats(tmp_path):
    split = tmp_path / "split.jsonl"
    for rank in range(2):
        loader = sl.DataLoader(Shards(8), batch_size=3, num_workers=2, seed=1, rank=rank,
                               world_size=2, persistent_workers=rank == 1)
        traced = sl.audit.trace(loader, split)
        for _ in range(2):
            for _ in traced:
                pass
    lines = [json.loads(line) for line in split.read_text().splitlines()]
    assert len(lines) == 2 * 40 and {line["worker"] for line in lines} == {0, 1}
    assert sl.audit.check(split)["verdict"] == "clean"

    unsplit = tmp_path / "unsplit.jsonl"
    loader = sl.DataLoader(Unsplit(), batch_size=4, num_workers=2, seed=1,
                           on_duplicate_stream="off")
    list(sl.audit.trace(loader, unsplit))
    report = sl.audit.check(unsplit)
    assert {f["kind"]: f["count"] for f in report["findings"]} == {"content_repeat": 12}


def test_a_trace_across_a_resume_audits_clean_and_a_restart_from_the_start_does_not(
        tmp_path):
    def loader():
        return sl.DataLoader(Stateful(20), batch_size=2, num_workers=2, seed=1)

    for resume in (True, False):
        path = tmp_path / ("resumed.jsonl" if resume else "restarted.jsonl")
        first = loader()
        it = iter(sl.audit.trace(first, path, run=0))
        for _ in range(4):
            next(it)
        state = first.state_dict()
        del it
        second = loader()
        if resume:
            second.load_state_dict(state)
        list(sl.audit.trace(second, path, run=1))
        kinds = {f["kind"] for f in sl.audit.check(path)["findings"]}
        assert kinds == (set() if resume else {"resume_duplicate"}), kinds


# --- DataPipes and file descriptors ---------------------------------------------------

def test_an_iterdatapipe_is_sharded_and_shuffled_as_torchs_loader_does():
    from torch.utils.data.datapipes.iter import IterableWrapper

    def pipe():
        return IterableWrapper(range(24)).shuffle().sharding_filter()

    def epochs(**kw):
        loader = sl.DataLoader(pipe(), batch_size=None, num_workers=2, shuffle=True, **kw)
        return [[int(x) for x in loader] for _ in range(2)]

    first = epochs(seed=3)
    for epoch in first:
        assert sorted(epoch) == list(range(24))  # each sample once over the workers
    assert first[0] != first[1] and first == epochs(seed=3) and first != epochs(seed=4)
    ordered = sl.DataLoader(pipe(), batch_size=None, num_workers=2, shuffle=False, seed=3)
    assert [int(x) for x in ordered] == list(range(24))
    # Over two ranks: each rank its share, the same shuffle on both.
    ranks = [[int(x) for x in sl.DataLoader(pipe(), batch_size=None, num_workers=2,
                                            shuffle=True, seed=3, rank=r, world_size=2)]
             for r in range(2)]
    assert sorted(ranks[0] + ranks[1]) == list(range(24))
    # Without a sharding filter every worker reads the whole pipe: caught.
    with pytest.raises(sl.DuplicateStreamError):
        list(sl.DataLoader(IterableWrapper(range(8)), batch_size=2, num_workers=2, seed=0))


def test_running_out_of_file_descriptors_says_what_to_change():
    """Each kept tensor of a worker's batch holds a descriptor of its shared
    memory: under a low limit the error names `ulimit -n` and the sharing
    strategy, as torch's does."""
    script = """
import resource, sys, torch, torch.utils.data as tud
import seedloader as sl

class Random(tud.IterableDataset):
    def __iter__(self):
        return (torch.randn(2, 2) for _ in range(200))

resource.setrlimit(resource.RLIMIT_NOFILE, (100, 100))
kept = []
try:
    for t in sl.DataLoader(Random(), num_workers=1, seed=0):
        kept.append(t)
except RuntimeError as e:
    assert "ulimit -n" in str(e) and "set_sharing_strategy" in str(e), e
    print("refused")
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert out.returncode == 0 and "refused" in out.stdout, out.stderr[-2000:]
