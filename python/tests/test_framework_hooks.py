"""What frameworks do to a loader, one behaviour at a time (test_frameworks.py runs
the frameworks themselves): probe it with iter(), read torch's attributes and set
the epoch through its sampler, pickle it into spawned processes, start the
process group after it was built, restart from a state saved at an epoch's end."""
import pickle

import pytest
import torch
import torch.utils.data as tud

import seedloader as sl


class Indexed(tud.Dataset):
    def __len__(self):
        return 12

    def __getitem__(self, i):
        return i


def batches(loader):
    return [b.tolist() for b in loader]


# --- iter() claims nothing ------------------------------------------------------------

@pytest.mark.parametrize("workers", [0, 2])
def test_iter_alone_claims_no_epoch_and_starts_no_worker(workers):
    loader = sl.DataLoader(Indexed(), batch_size=4, shuffle=True, seed=3,
                           num_workers=workers)
    probe = iter(loader)  # what Lightning does to check a loader is iterable
    assert loader.worker_pids() == [] and loader.epoch == 0
    del probe
    iter(loader)
    first = batches(loader)
    reference = sl.DataLoader(Indexed(), batch_size=4, shuffle=True, seed=3)
    assert first == batches(reference) and loader.epoch == 0
    assert batches(loader) != first and loader.epoch == 1


def test_set_epoch_between_iter_and_the_first_next_decides_the_epoch():
    loader = sl.DataLoader(Indexed(), batch_size=4, shuffle=True, seed=3)
    it = iter(loader)
    loader.set_epoch(5)
    reference = sl.DataLoader(Indexed(), batch_size=4, shuffle=True, seed=3)
    reference.set_epoch(5)
    assert [b.tolist() for b in it] == batches(reference)


def test_the_pass_that_starts_last_is_the_live_one():
    loader = sl.DataLoader(Indexed(), batch_size=4, seed=3)
    older, newer = iter(loader), iter(loader)
    assert next(newer).tolist() == [0, 1, 2, 3]
    assert next(older).tolist() == [0, 1, 2, 3]  # started later: epoch 1, live
    with pytest.raises(sl.Error, match="replaced by a newer iteration"):
        next(newer)
    assert loader.epoch == 1


# --- rank and world size when iteration starts ---------------------------------------

def test_rank_and_world_size_are_taken_when_iteration_starts(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS",
                 "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    loader = sl.DataLoader(Indexed(), batch_size=2, seed=3)  # before any launcher set-up
    assert (loader.rank, loader.world_size, len(loader)) == (0, 1, 6)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "3")
    assert len(loader) == 2
    assert batches(loader) == [[1, 4], [7, 10]]
    assert loader.state_dict()["world_size"] == 3


def test_given_values_a_process_group_contradicts_are_an_error_naming_both():
    import torch.distributed as dist
    if not dist.is_available():
        pytest.skip("this torch has no torch.distributed")
    before = sl.DataLoader(Indexed(), batch_size=2, seed=3, rank=1, world_size=2)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % _free_port(),
                            rank=0, world_size=1)
    message = (r"rank=1, world_size=2 were given, but torch.distributed's process "
               r"group is rank 0 of 1")
    try:
        with pytest.raises(sl.ConfigError, match=message):
            next(iter(before))
        with pytest.raises(sl.ConfigError, match=message):
            sl.DataLoader(Indexed(), batch_size=2, seed=3, rank=1, world_size=2)
        agreeing = sl.DataLoader(Indexed(), batch_size=2, seed=3, world_size=1)
        assert len(batches(agreeing)) == 6
    finally:
        dist.destroy_process_group()


def _free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- torch's attributes --------------------------------------------------------------

def test_torchs_attributes_hold_torchs_kinds_of_values():
    loader = sl.DataLoader(Indexed(), batch_size=4, shuffle=True, seed=3)
    assert isinstance(loader.sampler, tud.RandomSampler)
    assert isinstance(loader.batch_sampler, tud.BatchSampler)
    assert loader.batch_sampler.sampler is loader.sampler
    assert loader.collate_fn is tud.default_collate
    # torch's own loader's values: prefetch_factor 2, or None without workers
    # from torch 2.0 on (its loader then refuses 2).
    for workers in (0, 2):
        theirs = tud.DataLoader(Indexed(), batch_size=4, num_workers=workers)
        ours = sl.DataLoader(Indexed(), batch_size=4, num_workers=workers, seed=3)
        assert ours.prefetch_factor == theirs.prefetch_factor
    assert (loader.pin_memory, loader.pin_memory_device) == (False, "")
    assert loader.worker_init_fn is None and loader.multiprocessing_context is None
    assert (loader.seed, loader.shuffle) == (3, True)
    ordered = sl.DataLoader(Indexed(), batch_size=4, seed=3)
    assert isinstance(ordered.sampler, tud.SequentialSampler)
    mine = tud.SequentialSampler(range(12))
    given = sl.DataLoader(Indexed(), batch_size=4, sampler=mine, seed=3)
    assert given.sampler is mine and given.batch_sampler.sampler is mine


def test_the_sampler_shows_the_loaders_order_and_sets_its_epoch():
    loader = sl.DataLoader(Indexed(), batch_size=4, shuffle=True, seed=3, rank=1,
                           world_size=2)
    loader.sampler.set_epoch(4)  # as Lightning's _set_sampler_epoch does
    assert loader.epoch == 4
    order = list(loader.sampler)
    assert len(loader.sampler) == 6
    assert [i for b in batches(loader) for i in b] == order
    assert [list(b) for b in loader.batch_sampler] != []


def test_what_decides_the_batches_cannot_be_set_after_construction_as_in_torch():
    loader = sl.DataLoader(Indexed(), batch_size=4, seed=3)
    for name, value in (("batch_size", 2), ("sampler", None), ("drop_last", True)):
        with pytest.raises(ValueError, match="%s attribute should not be set after "
                           "DataLoader is initialized" % name):
            setattr(loader, name, value)
    loader.timeout = 5  # as torch allows


def test_prefetch_factor_2_without_workers_is_torch_113s_default_and_accepted():
    loader = sl.DataLoader(Indexed(), batch_size=4, seed=3, num_workers=0,
                           prefetch_factor=2)
    assert len(batches(loader)) == 3


def test_the_package_exports_no_module_it_imports():
    names = [n for n in dir(sl) if not n.startswith("_")]
    for module in ("os", "re", "sys", "importlib", "array"):
        assert module not in names


# --- pickling ------------------------------------------------------------------------

@pytest.mark.parametrize("workers", [0, 2])
def test_a_pickled_loader_is_a_fresh_one_with_the_same_seed_and_position(workers):
    loader = sl.DataLoader(Indexed(), batch_size=2, shuffle=True, num_workers=workers)
    it = iter(loader)
    next(it), next(it)
    copy = pickle.loads(pickle.dumps(loader))
    assert copy.seed == loader.seed and copy.worker_pids() == []
    assert copy.state_dict() == loader.state_dict()
    assert batches(copy) == [b.tolist() for b in it]


def test_a_loader_with_a_generator_pickles_with_the_seed_drawn_from_it():
    loader = sl.DataLoader(Indexed(), batch_size=3, shuffle=True,
                           generator=torch.Generator().manual_seed(11))
    copy = pickle.loads(pickle.dumps(loader))
    assert copy.seed == loader.seed and batches(copy) == batches(loader)


# --- a state saved at an epoch's end ----------------------------------------------------

def test_a_finished_epochs_state_then_set_epoch_of_that_epoch_is_an_empty_pass():
    loader = sl.DataLoader(Indexed(), batch_size=4, shuffle=True, seed=3)
    first = batches(loader)
    state = loader.state_dict()
    assert state["_finished"]
    # A plain loop continues with the next epoch.
    plain = sl.DataLoader(Indexed(), batch_size=4, shuffle=True, seed=3)
    plain.load_state_dict(state)
    second = batches(plain)
    assert plain.epoch == 1 and second != first
    # A framework that sets the finished epoch again (Lightning restarting from a
    # checkpoint of the epoch's last step) gets an empty pass, then the next epoch.
    framework = sl.DataLoader(Indexed(), batch_size=4, shuffle=True, seed=3)
    framework.load_state_dict(state)
    framework.set_epoch(0)
    assert batches(framework) == []
    assert framework.state_dict()["_finished"]
    framework.set_epoch(1)
    assert batches(framework) == second



# --- the padding gather_for_metrics drops ----------------------------------------------

@pytest.mark.parametrize("partition", ["strided", "elastic"])
def test_the_last_batch_count_drops_exactly_the_padding_or_says_it_cannot(partition):
    """For every (samples, ranks, batch size) in a range: the ranks' last batches
    gathered in rank order and cut to _last_batch_samples() (as accelerate's
    gather_for_metrics cuts them) give every sample of the epoch exactly once; -1
    (keep all) only under the strided partition, with a warning."""
    import warnings
    seeding = "sample" if partition == "elastic" else "worker"
    for n in range(1, 14):
        for ranks in (1, 2, 3, 4):
            for size in (1, 2, 3):
                loaders = [sl.DataLoader(list(range(n)), batch_size=size, seed=1,
                                         rank=r, world_size=ranks, partition=partition,
                                         seeding=seeding) for r in range(ranks)]
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    keep = loaders[0]._last_batch_samples()
                if keep == -1:
                    assert partition == "strided" and len(caught) == 1
                    assert "partition='elastic'" in str(caught[0].message)
                    continue
                per_rank = [batches(loader) for loader in loaders]
                steps = len(per_rank[0])
                seen = []
                for step in range(steps):
                    both = [i for r in range(ranks) for i in per_rank[r][step]]
                    if step == steps - 1 and keep:
                        both = both[:keep]
                    seen += both
                assert sorted(seen) == list(range(n)), (n, ranks, size, keep)


# --- kept batches --------------------------------------------------------------------

@pytest.mark.parametrize("workers", [0, 2])
def test_list_of_a_loader_over_a_python_dataset_keeps_every_batch(workers):
    class Pairs(tud.Dataset):
        def __len__(self):
            return 20

        def __getitem__(self, i):
            return torch.full((3,), float(i)), i
    kept = list(sl.DataLoader(Pairs(), batch_size=4, num_workers=workers, seed=1))
    assert [b[1].tolist() for b in kept] == [list(range(k, k + 4)) for k in range(0, 20, 4)]
    assert all(torch.equal(b[0][:, 0], b[1].float()) for b in kept)


@pytest.mark.parametrize("workers", [0, 2])
def test_pinned_slots_stay_in_place_and_any_number_of_batches_can_be_kept(workers):
    def make():
        return sl.DataLoader(sl.Synthetic(64, 4, 4, 1), batch_size=2, num_workers=workers,
                             prefetch_factor=1 if workers else None, seed=3,
                             pin_memory=False)
    expected = [b["image"].clone() for b in make()]
    loader = make()
    address, size = loader._engine().shared_memory()  # as pinning for CUDA does first
    kept = list(loader)
    assert len(kept) == len(expected) == 32
    assert all(torch.equal(b["image"], e) for b, e in zip(kept, expected))
    # Each slot's first batch stays in the pinned pages; later ones go elsewhere.
    slots = 3 if workers == 0 else 4  # prefetch_factor + 1 per worker; 3 without
    inside = [address <= b["image"].data_ptr() < address + size for b in kept]
    assert inside == [k < slots for k in range(len(kept))]
    del kept
    loader.set_epoch(0)
    assert all(torch.equal(b["image"], e) for b, e in zip(loader, expected))


def test_a_region_pinned_after_its_workers_started_refuses_naming_the_fix():
    loader = sl.DataLoader(sl.Synthetic(64, 4, 4, 1), batch_size=2, num_workers=2,
                           prefetch_factor=1, seed=3, pin_memory=False)
    it = iter(loader)
    held = [next(it)]
    loader._loader.shared_memory()  # what pinning the region for CUDA does first
    with pytest.raises(sl.Error, match=r"slots were pinned for CUDA after the workers started.*4 slots.*"
                                       r"pin_memory=False to keep any number") as info:
        for b in it:
            held.append(b)
    assert len(held) == 4
    assert (info.value.code, info.value.batch, info.value.slots) == ("slot_held", 4, 4)


# --- torch's smaller rules -------------------------------------------------------------

def test_a_dataset_exception_is_raised_as_its_own_type_and_as_a_worker_error():
    class Missing(tud.Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            if i == 5:
                raise KeyError("sample %d is gone" % i)
            return i
    for workers in (0, 2):
        with pytest.raises(KeyError, match="sample 5 is gone") as caught:
            list(sl.DataLoader(Missing(), batch_size=2, num_workers=workers, seed=1))
        assert isinstance(caught.value, sl.WorkerError) and caught.value.index == 5
        assert caught.value.exception_type == "KeyError"
        assert caught.value.code == "batch_failed"
        assert isinstance(caught.value, RuntimeError)
        assert "Original traceback" in str(caught.value)
    assert issubclass(sl.TimeoutError, RuntimeError)


def test_pin_memory_without_cuda_warns_and_loads_unpinned():
    if torch.cuda.is_available():
        pytest.skip("this check needs a machine without CUDA")
    with pytest.warns(UserWarning, match="pin_memory=True, but torch sees no CUDA") as record:
        loader = sl.DataLoader(Indexed(), batch_size=4, seed=3, pin_memory=True)
        assert len(batches(loader)) == 3
    # Where the caller iterates (batches() here), not a line of the package.
    assert [w.filename for w in record if "torch sees no CUDA" in str(w.message)] == \
        [__file__]


def test_more_workers_than_cpus_warns_naming_both():
    import os
    cpus = len(os.sched_getaffinity(0))
    with pytest.warns(UserWarning, match=r"num_workers=%d .* may use %d CPUs"
                      % (cpus + 1, cpus)):
        sl.DataLoader(Indexed(), batch_size=4, seed=3, num_workers=cpus + 1)


def test_torchs_seed_in_a_worker_fits_an_int64():
    class Seeds(tud.Dataset):
        def __len__(self):
            return 16

        def __getitem__(self, i):
            return torch.initial_seed()
    for seeding in ("worker", "sample"):
        seeds = [s for b in sl.DataLoader(Seeds(), batch_size=4, num_workers=2, seed=9,
                                          seeding=seeding) for s in b.tolist()]
        assert all(0 <= s < 2**63 for s in seeds) and len(set(seeds)) > 1


# --- batch_size=None -----------------------------------------------------------------

Point = __import__("collections").namedtuple("Point", "x y")


class Mixed(tud.Dataset):
    """Every kind of leaf default_convert meets."""

    def __len__(self):
        return 6

    def __getitem__(self, i):
        import numpy as np
        return (torch.full((2,), float(i)), i, 0.5 * i, np.ones(3) * i,
                Point(i, np.float32(i)), {"k": [i, i % 2 == 0]})


def _same(a, b):
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return type(a) is type(b) and a.keys() == b.keys() and all(_same(a[k], b[k])
                                                                   for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("workers", [0, 2])
def test_batch_size_none_gives_samples_as_torchs_default_convert(workers):
    ours = sl.DataLoader(Mixed(), batch_size=None, num_workers=workers, seed=1)
    assert ours.batch_size is None and ours.batch_sampler is None
    assert ours.collate_fn is tud.default_convert and len(ours) == 6
    theirs = tud.DataLoader(Mixed(), batch_size=None, num_workers=workers)
    for a, b in zip(ours, theirs):
        assert _same(a, b), (a, b)


def test_batch_size_none_with_a_collate_fn_calls_it_per_sample_and_shuffles():
    loader = sl.DataLoader(Indexed(), batch_size=None, shuffle=True, seed=2,
                           collate_fn=lambda sample: torch.tensor([sample, -sample]),
                           num_workers=2)
    got = [t.tolist() for t in loader]
    assert sorted(a for a, _ in got) == list(range(12)) and all(a == -b for a, b in got)
    assert [a for a, _ in got] != list(range(12))
    images = list(sl.DataLoader(sl.Synthetic(4, 4, 4, 3), batch_size=None, seed=1))
    assert [tuple(s["image"].shape) for s in images] == [(3, 4, 4)] * 4


@pytest.mark.parametrize("workers", [0, 2])
def test_zero_size_tensors_in_a_sample_come_back_as_torchs(workers):
    class Empty(tud.Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            return torch.zeros(0), torch.zeros(2, 0, 3), i
    ours = list(sl.DataLoader(Empty(), batch_size=4, num_workers=workers, seed=1))
    theirs = list(tud.DataLoader(Empty(), batch_size=4))
    assert [[tuple(t.shape) for t in b] for b in ours] == \
        [[tuple(t.shape) for t in b] for b in theirs] == [[(4, 0), (4, 2, 0, 3), (4,)],
                                                         [(2, 0), (2, 2, 0, 3), (2,)]]


def test_a_worker_init_fn_set_after_construction_runs_from_the_next_epoch(tmp_path):
    loader = sl.DataLoader(Indexed(), batch_size=4, num_workers=2, seed=3)
    assert len(batches(loader)) == 3
    marks = tmp_path / "marks"
    marks.mkdir()
    loader.worker_init_fn = lambda w: (marks / str(w)).touch()  # as Lightning sets it
    assert len(batches(loader)) == 3
    assert sorted(p.name for p in marks.iterdir()) == ["0", "1"]


def test_a_loader_rebuilt_from_vars_and_the_signature_keeps_its_seed_and_order():
    import inspect
    loader = sl.DataLoader(Indexed(), batch_size=4, shuffle=True)  # a drawn seed
    names = set(inspect.signature(sl.DataLoader.__init__).parameters) - {
        "self", "sampler", "batch_sampler"}  # the loader's own, shown as torch's
    kept = {k: v for k, v in vars(loader).items() if k in names}
    assert {"seed", "shuffle", "dataset", "batch_size"} <= set(kept)
    rebuilt = sl.DataLoader(**kept)
    assert rebuilt.seed == loader.seed and batches(rebuilt) == batches(loader)
    with pytest.raises(ValueError, match="seed attribute should not be set"):
        loader.seed = 1


@pytest.mark.parametrize("workers", [0, 2])
def test_after_a_datasets_exception_the_pass_goes_on_with_the_next_batch(workers):
    """As torch's iterator: next() raises the dataset's exception for the batch that
    held the sample, and the following next() gives the batch after it."""
    class FailsAt(tud.Dataset):
        def __len__(self):
            return 20

        def __getitem__(self, i):
            if i in (5, 13):
                raise NotImplementedError("sample %d" % i)
            return i
    loader = sl.DataLoader(FailsAt(), batch_size=4, num_workers=workers, seed=1)
    it = iter(loader)
    got, failed = [], []
    while True:
        try:
            got.append(next(it).tolist())
        except NotImplementedError as e:
            failed.append(e.index)
        except StopIteration:
            break
    assert failed == [5, 13]
    assert got == [[0, 1, 2, 3], [8, 9, 10, 11], [16, 17, 18, 19]]
    assert loader.state_dict()["_finished"]  # the failed batches count as passed
    assert next(iter(loader)).tolist() == [0, 1, 2, 3]  # and the next epoch runs
