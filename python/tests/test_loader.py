"""seedloader.DataLoader from Python: batches, streams, memory, resume, errors."""
import os
import random
import signal
import subprocess
import threading
import time

import numpy as np
import pytest
import torch

import seedloader as sl


def collect(loader, field):
    return [batch[field].clone() for batch in loader]


# --- batches ---------------------------------------------------------------------

@pytest.mark.parametrize("seeding,workers,shuffle,drop_last,rank,world", [
    ("worker", 2, True, False, 0, 1),
    ("worker", 0, False, True, 0, 1),
    ("sample", 3, True, False, 1, 2),
])
def test_batches_equal_the_cpp_loaders_byte_for_byte(seeding, workers, shuffle, drop_last,
                                                     rank, world, cross_check_program):
    dump = cross_check_program("SEEDLOADER_BATCH_DUMP", "tests/python/batch_dump")
    n, h, w, c, spec, batch, seed, epochs = 50, 24, 20, 3, "rrc:16,hflip,normalize:imagenet", 4, 77, 2
    args = [dump, str(n), str(h), str(w), str(c), spec, str(batch), str(workers), str(seed),
            seeding, str(int(shuffle)), str(int(drop_last)), str(rank), str(world), str(epochs)]
    expected = subprocess.run(args, check=True, stdout=subprocess.PIPE).stdout
    loader = sl.DataLoader(sl.Synthetic(n, h, w, c, transform=spec), batch_size=batch,
                           num_workers=workers, shuffle=shuffle, drop_last=drop_last,
                           seed=seed, seeding=seeding, rank=rank, world_size=world)
    got = bytearray()
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for b in loader:
            got += b["image"].numpy().tobytes() + b["label"].numpy().tobytes()
    assert len(got) == len(expected) and bytes(got) == expected


def test_batches_are_tensors_over_the_shared_slots():
    loader = sl.DataLoader(sl.Synthetic(32, 8, 8, 3), batch_size=8, num_workers=2, seed=1)
    address, size = loader._loader.shared_memory()
    for b in loader:
        assert isinstance(b["image"], torch.Tensor)
        assert b["image"].shape == (8, 3, 8, 8) and b["image"].dtype == torch.float32
        assert b["label"].dtype == torch.int64
        for t in b.values():
            assert address <= t.data_ptr() < address + size  # no copy
    assert len(loader) == 4


def test_numpy_format_gives_numpy_arrays_over_the_slots():
    loader = sl.DataLoader(sl.Synthetic(8, 4, 4, 1), batch_size=4, seed=1, format="numpy")
    address, size = loader._loader.shared_memory()
    b = next(iter(loader))
    assert isinstance(b["image"], np.ndarray) and b["image"].shape == (4, 1, 4, 4)
    assert address <= b["image"].ctypes.data < address + size


def test_half_and_bfloat16_outputs_are_the_float32_batches_rounded():
    def batches(spec, fmt="torch"):
        loader = sl.DataLoader(sl.Synthetic(12, 10, 8, 3, transform=spec), batch_size=4,
                               num_workers=2, seed=5, format=fmt)
        return [b["image"].clone() if fmt == "torch" else b["image"].copy() for b in loader]
    f32 = batches("hflip,normalize:imagenet")
    bf16 = batches("hflip,normalize:imagenet:bf16")
    f16 = batches("hflip,normalize:imagenet:f16")
    assert bf16[0].dtype == torch.bfloat16 and f16[0].dtype == torch.float16
    for a, b, c in zip(f32, bf16, f16, strict=True):
        assert torch.equal(a.bfloat16().view(torch.int16), b.view(torch.int16))
        assert torch.equal(a.half().view(torch.int16), c.view(torch.int16))
    as_numpy = batches("hflip,normalize:imagenet:f16", "numpy")
    assert as_numpy[0].dtype == np.float16
    assert np.array_equal(as_numpy[0].view(np.int16), f16[0].view(torch.int16).numpy())
    with pytest.raises(sl.ConfigError, match="bfloat16"):
        batches("normalize:imagenet:bf16", "numpy")


def test_mixup_and_cutmix_give_soft_targets_mixed_like_the_images():
    def batches(**mix):
        loader = sl.DataLoader(sl.Synthetic(40, 6, 6, 3, transform="totensor"),
                               batch_size=8, num_workers=2, shuffle=True, seed=3, **mix)
        return [{k: v.clone() for k, v in b.items()} for b in loader]
    plain = batches()
    mixed = batches(mixup_alpha=0.4, num_classes=10)
    assert len(plain) == len(mixed) == 5
    for p, m in zip(plain, mixed, strict=True):
        assert torch.equal(p["label"], m["label"])
        t = m["target"]
        assert t.dtype == torch.float32 and t.shape == (8, 10)
        assert torch.allclose(t.sum(1), torch.ones(8))
        # lam from a sample whose neighbour has another label, then the images.
        i = next(i for i in range(8) if p["label"][i] != p["label"][i - 1])
        lam = float(t[i, p["label"][i]])
        want = p["image"] * lam + p["image"].roll(1, 0) * (1 - lam)
        assert torch.allclose(m["image"], want, atol=1e-6)
    cut = batches(cutmix_alpha=1.0, num_classes=10)
    for p, c in zip(plain, cut, strict=True):
        changed = (c["image"] != p["image"]).any(1)  # [batch, H, W]: the pasted box
        from_previous = (c["image"] == p["image"].roll(1, 0)).all(1)
        assert torch.all(from_previous[changed])
    with pytest.raises(sl.ConfigError, match="MixUp needs a floating image field"):
        sl.DataLoader(sl.Synthetic(8, 4, 4, 1, transform="u8"), batch_size=4,
                      mixup_alpha=0.2, num_classes=10)
    with pytest.raises(sl.ConfigError, match="num_classes"):
        sl.DataLoader(sl.Synthetic(8, 4, 4, 1), batch_size=4, cutmix_alpha=1.0)


def test_a_kept_batch_keeps_its_slot_and_bytes():
    loader = sl.DataLoader(sl.Synthetic(64, 8, 8, 3), batch_size=4, num_workers=2,
                           prefetch_factor=2, seed=3)
    it = iter(loader)
    first = next(it)["image"]
    copy = first.clone()
    for _ in range(4):  # worker 0's other two slots and worker 1's are refilled
        next(it)
    assert torch.equal(first, copy)


@pytest.mark.parametrize("workers", [0, 2])
def test_any_number_of_kept_batches_keep_their_bytes(workers):
    """list(loader) keeps every batch of the epoch: 32 over 4 slots (2 with
    num_workers=0); each equals what a loop that copied and dropped every batch
    saw, and the loader runs on afterwards."""
    def loader():
        return sl.DataLoader(sl.Synthetic(64, 4, 4, 1), batch_size=2,
                             num_workers=workers, prefetch_factor=1 if workers else None,
                             seed=3, pin_memory=False)
    kept = list(loader())
    copied = [{k: v.clone() for k, v in b.items()} for b in loader()]
    assert len(kept) == len(copied) == 32
    for a, b in zip(kept, copied, strict=True):
        assert all(torch.equal(a[k], b[k]) for k in b)
    again = loader()
    first = list(again)
    assert len(list(again)) == 32 and len(first) == 32


# --- Python datasets -------------------------------------------------------------

class Draws:
    """Each sample: its index, the pid that made it, rng's first draws, and the
    process-wide generators' first draws."""

    def __init__(self, n=24):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, index, rng):
        return {"index": np.int64(index), "pid": np.int64(os.getpid()),
                "draw": rng.integers(0, 2**62, size=2, dtype=np.int64),
                "np_global": np.int64(np.random.randint(0, 2**31)),
                "py_random": np.int64(random.getrandbits(31)),
                "torch": np.int64(torch.randint(0, 2**31, ()).item())}


def stream(seed, key):
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=key)))


def test_python_dataset_draws_are_numpys_for_the_worker_key():
    seed, workers = 11, 2
    loader = sl.DataLoader(Draws(), batch_size=3, num_workers=workers, shuffle=True,
                           seed=seed, persistent_workers=True)
    for epoch in range(2):
        loader.set_epoch(epoch)
        batches = [{k: v.clone() for k, v in b.items()} for b in loader]
        pids = loader.worker_pids()
        expected = {w: stream(seed, (1, epoch, 0, w)) for w in range(workers)}
        for b in batches:
            for draw, pid in zip(b["draw"].tolist(), b["pid"].tolist()):
                w = pids.index(pid)
                assert draw == expected[w].integers(0, 2**62, size=2, dtype=np.int64).tolist()


def test_python_dataset_draws_are_numpys_for_the_sample_key_with_any_worker_count():
    seed = 5
    outputs = []
    for workers in (0, 1, 3):
        loader = sl.DataLoader(Draws(), batch_size=4, num_workers=workers, shuffle=True,
                               seed=seed, seeding="sample")
        loader.set_epoch(2)
        rows = {}
        for b in loader:
            for i, draw, g, r, t in zip(b["index"].tolist(), b["draw"].tolist(),
                                        b["np_global"].tolist(), b["py_random"].tolist(),
                                        b["torch"].tolist()):
                assert draw == stream(seed, (2, 2, i)).integers(
                    0, 2**62, size=2, dtype=np.int64).tolist()
                rows[i] = (g, r, t) if workers else None
        outputs.append(rows)
    # In workers the process-wide generators follow the sample stream too.
    assert outputs[1] == outputs[2]


def test_workers_seed_random_numpy_and_torch_distinctly_and_reproducibly():
    def run():
        loader = sl.DataLoader(Draws(16), batch_size=4, num_workers=2, seed=9)
        return [(b["np_global"][0].item(), b["py_random"][0].item(), b["torch"][0].item())
                for b in loader]
    first, again = run(), run()
    assert first == again
    worker0, worker1 = first[0], first[1]  # batch k comes from worker k % 2
    assert all(a != b for a, b in zip(worker0, worker1, strict=True))


def test_the_main_process_generators_are_left_alone():
    np.random.seed(123)
    random.seed(123)
    torch.manual_seed(123)
    expected = (np.random.randint(0, 2**31), random.getrandbits(31), torch.randint(0, 2**31, ()))
    np.random.seed(123)
    random.seed(123)
    torch.manual_seed(123)
    for _ in sl.DataLoader(Draws(8), batch_size=4, num_workers=2, seed=1):  # probe + workers
        pass
    assert (np.random.randint(0, 2**31), random.getrandbits(31),
            torch.randint(0, 2**31, ())) == expected


def test_declared_fields_and_a_disagreeing_sample():
    class Shapes:
        fields = {"x": ((2,), "float32")}

        def __len__(self):
            return 8

        def __getitem__(self, index):  # no rng: legacy signature
            return {"x": np.zeros(3 if index == 5 else 2, np.float32)}
    loader = sl.DataLoader(Shapes(), batch_size=2, num_workers=2, seed=1)
    with pytest.raises(sl.WorkerError) as info:
        for _ in loader:
            pass
    assert info.value.index == 5
    assert "sample 5 ['x'] is float32 (3,); the layout says float32 (2,)" in str(info.value)


def test_a_cpp_transform_from_a_python_dataset_uses_the_stream():
    t = sl.transform("rrc:8,hflip")
    image = np.arange(16 * 12 * 3, dtype=np.uint8).reshape(16, 12, 3)
    a, b = stream(1, (1, 0, 0, 0)), stream(1, (1, 0, 0, 0))
    out_a, out_b = t(image, a), t(image, b)
    assert out_a.shape == (3, 8, 8) and out_a.dtype == np.float32
    assert np.array_equal(out_a, out_b)
    assert a.bit_generator.state == b.bit_generator.state
    assert a.bit_generator.state != stream(1, (1, 0, 0, 0)).bit_generator.state
    assert image[0, 0, 0] == 0  # the caller's image is not touched


# --- errors ----------------------------------------------------------------------

class Failing:
    def __init__(self, how):
        self.how = how

    def __len__(self):
        return 16

    def __getitem__(self, index, rng):
        if index == 6:
            if self.how == "raise":
                raise ValueError("cannot decode sample six")
            if self.how == "exit":
                os._exit(3)
            if self.how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if self.how == "data":
                raise sl.DataError("sample six is corrupt")
        return {"i": np.int64(index)}


def test_a_python_exception_in_a_worker_is_a_worker_error_with_the_message():
    with pytest.raises(sl.WorkerError) as info:
        for _ in sl.DataLoader(Failing("raise"), batch_size=2, num_workers=2, seed=1):
            pass
    e = info.value
    assert e.index == 6 and e.batch == 3 and e.worker == 1 and e.pid > 0
    assert "ValueError: cannot decode sample six" in str(e)
    assert "in __getitem__" in str(e)


class AlwaysFails:
    def __len__(self):
        return 10

    def __getitem__(self, index):
        raise NotImplementedError("no sample %d yet" % index)


@pytest.mark.parametrize("workers", [0, 2])
def test_a_dataset_that_always_raises_raises_its_own_type_before_any_batch(workers):
    # Also where the layout is still to be learned from the first samples, as
    # torch's loader raises the first batch's exception.
    with pytest.raises(NotImplementedError, match="no sample 0 yet") as info:
        next(iter(sl.DataLoader(AlwaysFails(), batch_size=2, num_workers=workers, seed=1)))
    assert isinstance(info.value, sl.WorkerError) and info.value.index == 0


@pytest.mark.parametrize("how,field,value", [("exit", "exit_code", 3),
                                             ("kill", "signal", signal.SIGKILL)])
def test_a_worker_that_dies_is_a_worker_error(how, field, value):
    loader = sl.DataLoader(Failing(how), batch_size=2, num_workers=2, seed=1)
    with pytest.raises(sl.WorkerError) as info:
        for _ in loader:
            pass
    assert getattr(info.value, field) == value and info.value.worker == 1
    assert sum(1 for _ in sl.DataLoader(Draws(8), batch_size=2, num_workers=2, seed=1)) == 4


def test_a_data_error_is_skipped_on_request():
    loader = sl.DataLoader(Failing("data"), batch_size=4, num_workers=2, seed=1,
                           on_bad_sample="skip")
    seen = [i for b in loader for i in b["i"].tolist()]
    assert 6 not in seen and seen.count(7) == 2 and len(seen) == 16


class Indices:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        return {"i": np.array(index, dtype=np.int64)}


@pytest.mark.parametrize("world,drop_last", [(1, False), (3, False), (3, True)])
def test_torch_order_visits_samples_as_torchs_distributed_sampler(world, drop_last):
    from torch.utils.data import DistributedSampler
    n, seed = 50, 2**33 + 7
    for rank in range(world):
        loader = sl.DataLoader(Indices(n), batch_size=4, num_workers=2, shuffle=True,
                               seed=seed, order="torch", rank=rank, world_size=world,
                               drop_last=drop_last)
        # As torch's DataLoader(sampler=DistributedSampler(...), drop_last=...):
        # the sampler pads, the loader drops a short last batch.
        ref = DistributedSampler(range(n), num_replicas=world, rank=rank, shuffle=True,
                                 seed=seed)
        for epoch in (0, 3):
            loader.set_epoch(epoch)
            ref.set_epoch(epoch)
            want = list(ref)
            if drop_last:
                want = want[:len(want) // 4 * 4]
            got = [i for b in loader for i in b["i"].tolist()]
            assert got == want
    numpy_order = sl.DataLoader(Indices(n), batch_size=4, shuffle=True, seed=seed)
    assert [i for b in numpy_order for i in b["i"].tolist()] != list(
        DistributedSampler(range(n), num_replicas=1, rank=0, seed=seed))


def test_config_errors_name_the_option():
    with pytest.raises(sl.ConfigError, match="order"):
        sl.DataLoader(sl.Synthetic(8, 4, 4, 1), order="jax")
    with pytest.raises(sl.ConfigError, match="seeding"):
        sl.DataLoader(sl.Synthetic(8, 4, 4, 1), seeding="rank")
    with pytest.raises(ValueError):  # ConfigError is a ValueError too
        sl.DataLoader(sl.Synthetic(8, 4, 4, 1), batch_size=0)


class Stalls:
    """Sample 5 takes a minute; `fields` declares the layout, so only the engine's
    workers read samples."""
    fields = {"i": ((), "int64")}

    def __len__(self):
        return 16

    def __getitem__(self, index, rng):
        if index == 5:
            time.sleep(60)
        return {"i": np.int64(index)}


def interrupted(loader):
    """Iterates `loader` until a SIGINT sent 0.5 s in raises KeyboardInterrupt; the
    seconds that took. Python's own SIGINT handler is installed for the while: a
    process started in the background by a shell without job control inherits
    SIGINT ignored, and Python then leaves it so."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            for _ in loader:
                pass
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    return time.monotonic() - started


def test_ctrl_c_while_waiting_stops_and_reaps_the_workers():
    loader = sl.DataLoader(Stalls(), batch_size=2, num_workers=2, seed=1)
    assert interrupted(loader) < 5
    assert loader.worker_pids() == []


def test_ctrl_c_while_the_layout_is_learned_reaps_the_probe():
    class Undeclared(Stalls):
        fields = None  # learned by a probe process that reads the first 8 samples
    before = set(os.listdir("/proc"))
    assert interrupted(sl.DataLoader(Undeclared(), batch_size=2, num_workers=2,
                                     seed=1)) < 5
    for pid in set(os.listdir("/proc")) - before:
        if pid.isdigit():
            try:
                with open("/proc/%s/stat" % pid) as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue  # gone meanwhile
            assert parent != os.getpid(), "process %s outlived the interrupt" % pid


def test_worker_init_fn_runs_in_each_worker_with_its_id(tmp_path):
    def init(worker_id):
        (tmp_path / ("w%d-%d" % (worker_id, os.getpid()))).touch()
    loader = sl.DataLoader(sl.Synthetic(8, 4, 4, 1), batch_size=2, num_workers=2, seed=1,
                           worker_init_fn=init)
    for _ in loader:
        pass
    names = sorted(p.name.split("-")[0] for p in tmp_path.iterdir())
    assert names == ["w0", "w1"]


# --- rank and resume -------------------------------------------------------------

def test_rank_and_world_size_come_from_the_launcher_environment(monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    loader = sl.DataLoader(sl.Synthetic(10, 4, 4, 1), batch_size=1, seed=1)
    assert (loader.rank, loader.world_size) == (1, 2)
    rank1 = [b["label"].item() for b in loader]
    monkeypatch.setenv("RANK", "0")
    rank0 = [b["label"].item() for b in sl.DataLoader(sl.Synthetic(10, 4, 4, 1), batch_size=1,
                                                      seed=1)]
    assert rank0 == [0, 2, 4, 6, 8] and rank1 == [1, 3, 5, 7, 9]
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("WORLD_SIZE")
    monkeypatch.setenv("SLURM_PROCID", "3")
    monkeypatch.setenv("SLURM_NTASKS", "4")
    assert sl.distributed_context()[:2] == (3, 4)


@pytest.mark.parametrize("seeding", ["worker", "sample"])
def test_state_dict_resumes_mid_epoch_exactly(seeding):
    def make():
        return sl.DataLoader(sl.Synthetic(40, 12, 12, 3, transform="rrc:8,hflip"),
                             batch_size=4, num_workers=2, shuffle=True, seed=21,
                             seeding=seeding)
    whole = make()
    whole.set_epoch(1)
    full = collect(whole, "image")
    interrupted = make()
    interrupted.set_epoch(1)
    it = iter(interrupted)
    head = [next(it)["image"].clone() for _ in range(3)]
    state = interrupted.state_dict()
    assert state["epoch"] == 1 and state["_num_yielded"] == 3
    resumed = make()
    resumed.load_state_dict(state)
    resumed.set_epoch(1)  # the usual loop calls it; the resume point stays
    tail = collect(resumed, "image")
    assert len(head) + len(tail) == len(full)
    assert all(torch.equal(a, b) for a, b in zip(head + tail, full, strict=True))


def test_sample_seeding_resume_does_not_load_the_skipped_batches():
    calls = []

    class Counted(Draws):
        # Declared, so that no sample is read to learn the layout.
        fields = {"index": ((), "int64"), "pid": ((), "int64"), "draw": ((2,), "int64"),
                  "np_global": ((), "int64"), "py_random": ((), "int64"),
                  "torch": ((), "int64")}

        def __getitem__(self, index, rng):
            calls.append(index)
            return super().__getitem__(index, rng)
    loader = sl.DataLoader(Counted(24), batch_size=4, seed=1, seeding="sample")
    loader.load_state_dict({**loader.state_dict(), "epoch": 0, "_num_yielded": 4})
    assert sum(1 for _ in loader) == 2
    assert sorted(calls) == list(range(16, 24))


def test_state_dict_from_another_world_size_is_refused():
    a = sl.DataLoader(sl.Synthetic(8, 4, 4, 1), seed=1, rank=0, world_size=2)
    b = sl.DataLoader(sl.Synthetic(8, 4, 4, 1), seed=1, rank=0, world_size=1)
    with pytest.raises(sl.ConfigError, match="world_size"):
        b.load_state_dict(a.state_dict())


def test_one_ranks_state_resumes_every_rank():
    def make(rank):
        return sl.DataLoader(sl.Synthetic(16, 4, 4, 1), batch_size=2, seed=1, rank=rank,
                             world_size=2, seeding="sample")
    rank0, rank1 = make(0), make(1)
    it = iter(rank0)
    next(it)
    rank1.load_state_dict(rank0.state_dict())  # as when every rank reads rank 0's file
    labels = [b["label"].tolist() for b in rank1]
    assert labels == [[5, 7], [9, 1], [3, 5]]  # indices 5..15 of rank 1; label = index % 10


class _SlowSamples:
    """Samples that take `seconds` each to make."""

    def __init__(self, n, seconds):
        self.n, self.seconds = n, seconds

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.seconds)
        return np.full(4, i, dtype=np.int64)


def test_stats_tell_the_batches_and_the_data_stall_of_the_newest_pass():
    loader = sl.DataLoader(_SlowSamples(24, 0.01), batch_size=4, seed=1)
    assert loader.stats() == {"epoch": 0, "batches": 0, "stall_seconds": 0.0,
                              "stall_share": 0.0}
    for _ in loader:  # the loop waits for every sample: stalled almost throughout
        pass
    stalled = loader.stats()
    assert stalled["batches"] == 6 and stalled["epoch"] == 0 and "fleet" not in stalled
    assert stalled["stall_seconds"] >= 24 * 0.01 * 0.9
    assert stalled["stall_share"] > 0.8
    for _ in loader:  # a loop slower than the data: batches wait for it
        time.sleep(0.1)
    busy = loader.stats()
    assert busy["epoch"] == 1 and busy["batches"] == 6
    assert busy["stall_share"] < stalled["stall_share"]
