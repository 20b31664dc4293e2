"""seedloader.DataLoader as a drop-in for torch.utils.data.DataLoader: the map-style
datasets people already have (torchvision's classes with torchvision transforms,
tuple, dict and namedtuple samples, every dtype, variable-size fields, plain
lists) give batches equal in structure, dtype and value to PyTorch's; and with
seeding="sample" a random torchvision pipeline gives the same batches for any
worker count."""
import collections
import gc
import hashlib
import json
import os
import pickle
import re
import threading
import time
import weakref

import numpy as np
import pytest
import torch
import torch.utils.data as tud
import torchvision
import torchvision.transforms as T
from PIL import Image

import seedloader as sl

from generator_datasets import Yields

Pair = collections.namedtuple("Pair", "x y")


# --- datasets ----------------------------------------------------------------------

class GeneratedCifar10(torchvision.datasets.CIFAR10):
    """torchvision's CIFAR10 over generated batch files: the checksums it checks are
    the real data set's, so they are replaced (write_cifar10 sets the meta file's)."""

    meta = dict(torchvision.datasets.CIFAR10.meta)

    def _check_integrity(self):
        return True


def write_cifar10(root, n=24, seed=0):
    folder = os.path.join(root, "cifar-10-batches-py")
    os.makedirs(folder, exist_ok=True)
    g = np.random.default_rng(seed)
    batch = {"data": g.integers(0, 256, (n, 3072), dtype=np.uint8),
             "labels": [int(v) for v in g.integers(0, 10, n)]}
    with open(os.path.join(folder, "test_batch"), "wb") as f:
        pickle.dump(batch, f)
    meta = pickle.dumps({"label_names": ["c%d" % i for i in range(10)]})
    with open(os.path.join(folder, "batches.meta"), "wb") as f:
        f.write(meta)
    GeneratedCifar10.meta["md5"] = hashlib.md5(meta).hexdigest()


def write_image_folder(root, n=18, seed=1):
    g = np.random.default_rng(seed)
    for i in range(n):
        folder = os.path.join(root, "class%d" % (i % 3))
        os.makedirs(folder, exist_ok=True)
        h, w = int(g.integers(20, 40)), int(g.integers(20, 40))
        pixels = g.integers(0, 256, (h, w, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(os.path.join(folder, "%02d.png" % i))


try:  # torchvision 0.15 and later
    from torchvision.transforms import v2 as T2
except ImportError:
    T2 = None
NO_V2 = pytest.mark.skipif(T2 is None, reason="torchvision %s has no transforms.v2"
                           % torchvision.__version__)


def random_pipeline_v2():
    """The same kind of pipeline in transforms.v2 (PIL in, uint8 tensor out)."""
    return T2.Compose([T2.RandomResizedCrop(16, antialias=True), T2.RandomHorizontalFlip(),
                       T2.PILToTensor(), T2.ColorJitter(0.4, 0.4, 0.4)])


def random_pipeline():
    """Random torchvision transforms drawing from torch's global generator."""
    return T.Compose([T.RandomResizedCrop(16, antialias=True), T.RandomHorizontalFlip(),
                      T.ColorJitter(0.4, 0.4, 0.4), T.ToTensor(),
                      T.Normalize((0.5, 0.5, 0.5), (0.25, 0.25, 0.25))])


class Tuples(tud.Dataset):
    """(image array, int label, float weight, bool flag) tuples."""

    def __len__(self):
        return 10

    def __getitem__(self, i):
        image = np.full((3, 4, 4), i, dtype=np.float32) + np.random.rand(3, 4, 4).astype(
            np.float32)
        return image, i % 4, i * 0.5, i % 2 == 0


class Nested(tud.Dataset):
    """Dicts holding namedtuples, lists and every dtype torch and numpy share."""

    def __len__(self):
        return 9

    def __getitem__(self, i):
        return {
            "pair": Pair(torch.full((2,), i, dtype=torch.bfloat16), np.int16(-i)),
            "list": [np.arange(3, dtype=np.int8) * i, torch.tensor(i % 3 == 0)],
            "dtypes": {name: np.full((2, 2), i, dtype=name)
                       for name in ("bool", "uint8", "int32", "int64", "float16",
                                    "float32", "float64")},
            "scalar": np.float32(i) / 3, "number": i * 1.25,
        }


def same(a, b, path="batch"):
    """Asserts a and b are equal in structure, type, dtype and value."""
    assert type(a) is type(b), "%s: %s vs %s" % (path, type(a), type(b))
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape, "%s: %s %s vs %s %s" % (
            path, a.dtype, tuple(a.shape), b.dtype, tuple(b.shape))
        assert torch.equal(a, b), path
    elif isinstance(a, dict):
        assert list(a) == list(b), path
        for k in a:
            same(a[k], b[k], "%s[%r]" % (path, k))
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, "%s[%d]" % (path, i))
    else:
        assert a == b, path


def both(dataset, **kw):
    """(torch's batches, seedloader's), each run from torch.manual_seed(0). With
    num_workers=0 both run the transforms on the caller's global generators; torch's
    iterator first draws its base seed from torch's, so seedloader's run makes the
    same draw before it starts."""
    runs = []
    for make in (tud.DataLoader, sl.DataLoader):
        torch.manual_seed(0)
        np.random.seed(0)
        extra = {}
        if make is sl.DataLoader:
            torch.empty((), dtype=torch.int64).random_()
            extra = {"seed": 7}
        runs.append([clone(b) for b in make(dataset, **kw, **extra)])
    return runs


def clone(batch):
    if isinstance(batch, torch.Tensor):
        return batch.clone()
    if isinstance(batch, dict):
        return type(batch)((k, clone(v)) for k, v in batch.items())
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*map(clone, batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(map(clone, batch))
    return batch


# --- equal to PyTorch's DataLoader ----------------------------------------------------

@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("dropin")
    write_cifar10(str(root / "cifar"))
    write_image_folder(str(root / "folder"))
    return root


def table(files):
    return {
        "cifar10+random torchvision": lambda: GeneratedCifar10(
            str(files / "cifar"), train=False, transform=random_pipeline()),
        "cifar10+random transforms.v2": lambda: GeneratedCifar10(
            str(files / "cifar"), train=False, transform=random_pipeline_v2()),
        "cifar10 plain": lambda: GeneratedCifar10(str(files / "cifar"), train=False,
                                                  transform=T.ToTensor()),
        "imagefolder+random torchvision": lambda: torchvision.datasets.ImageFolder(
            str(files / "folder"), transform=random_pipeline()),
        "tuples of numbers": Tuples,
        "nested, every dtype": Nested,
        "a plain list": lambda: [(np.arange(4) * i, float(i)) for i in range(7)],
    }


CASES = ["cifar10+random torchvision",
         pytest.param("cifar10+random transforms.v2", marks=NO_V2), "cifar10 plain", "imagefolder+random torchvision",
         "tuples of numbers", "nested, every dtype", "a plain list"]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("batch_size,drop_last", [(4, False), (5, True)])
def test_batches_equal_pytorchs_in_structure_dtype_and_value(files, case, batch_size,
                                                             drop_last):
    dataset = table(files)[case]()
    expected, got = both(dataset, batch_size=batch_size, drop_last=drop_last)
    assert len(got) == len(expected) == len(sl.DataLoader(dataset, batch_size=batch_size,
                                                          drop_last=drop_last, seed=1))
    for k, (a, b) in enumerate(zip(expected, got, strict=True)):
        same(a, b, "batch %d" % k)


def test_tuple_samples_come_back_as_default_collates_list_with_its_dtypes():
    batch = next(iter(sl.DataLoader(Tuples(), batch_size=4, num_workers=2, seed=1)))
    assert isinstance(batch, list) and len(batch) == 4
    assert [t.dtype for t in batch] == [torch.float32, torch.int64, torch.float64,
                                        torch.bool]
    assert batch[1].tolist() == [0, 1, 2, 3] and batch[3].tolist() == [True, False] * 2


def test_workers_give_the_same_structure_as_in_process(files):
    dataset = Nested()
    in_process = [clone(b) for b in sl.DataLoader(dataset, batch_size=4, seed=3)]
    forked = [clone(b) for b in sl.DataLoader(dataset, batch_size=4, num_workers=2, seed=3)]
    for a, b in zip(in_process, forked, strict=True):
        same(a, b)


@pytest.mark.parametrize("case", ["cifar10+random torchvision",
                                  pytest.param("cifar10+random transforms.v2", marks=NO_V2),
                                  "imagefolder+random torchvision"])
def test_sample_seeding_makes_a_random_torchvision_pipeline_independent_of_workers(
        files, case):
    dataset = table(files)[case]()
    runs = []
    for workers in (0, 1, 2, 3, 2):
        loader = sl.DataLoader(dataset, batch_size=4, shuffle=True, num_workers=workers,
                               seed=11, seeding="sample")
        loader.set_epoch(1)
        runs.append([clone(b) for b in loader])
    for run in runs[1:]:
        for a, b in zip(runs[0], run, strict=True):
            same(a, b)
    # Another epoch draws other augmentations.
    assert not torch.equal(runs[0][0][0], [clone(b) for b in sl.DataLoader(
        dataset, batch_size=4, shuffle=True, seed=11, seeding="sample")][0][0])


# --- samplers ---------------------------------------------------------------------

def test_a_weighted_random_sampler_is_drawn_in_the_main_process():
    def sampler():  # only samples 5..9 have weight
        return tud.WeightedRandomSampler([0.0] * 5 + [1.0] * 5, num_samples=12,
                                         generator=torch.Generator().manual_seed(4))
    np.random.seed(0)  # Tuples draws from numpy's global generator
    expected = [clone(b) for b in tud.DataLoader(Tuples(), batch_size=5, sampler=sampler())]
    np.random.seed(0)
    loader = sl.DataLoader(Tuples(), batch_size=5, sampler=sampler(), seed=2)
    assert len(loader) == 3
    got, indices = [], []
    for b in loader:
        got.append(clone(b))
        indices += loader.last_indices
    assert [len(b[1]) for b in got] == [5, 5, 2]
    assert len(set(indices)) > 1 and all(i >= 5 for i in indices)
    for a, b in zip(expected, got, strict=True):
        same(a, b)


class ClassBalanced(tud.Sampler):
    """A user's batch sampler: every batch one even and one odd index."""

    def __init__(self, n, seed):
        self.n, self.seed, self.epoch = n, seed, 0

    def __iter__(self):
        g = np.random.default_rng([self.seed, self.epoch])
        evens = g.permutation(np.arange(0, self.n, 2))
        odds = g.permutation(np.arange(1, self.n, 2))
        return iter([[int(a), int(b)] for a, b in zip(evens, odds)])

    def __len__(self):
        return self.n // 2


def test_a_batch_sampler_gives_the_batches_as_torchs_loader_does():
    sampler = ClassBalanced(10, 5)
    expected = [b[1].tolist() for b in tud.DataLoader(Tuples(), batch_sampler=sampler)]
    loader = sl.DataLoader(Tuples(), batch_sampler=sampler, num_workers=2, seed=1)
    assert [b[1].tolist() for b in loader] == expected
    assert len(loader) == 5


def test_resume_continues_a_user_samplers_epoch_without_drawing_it_again():
    def loader():
        return sl.DataLoader(Tuples(), batch_size=2, seed=1,
                             sampler=tud.RandomSampler(range(10)))  # a fresh seed each draw
    first = loader()
    it = iter(first)
    seen = [next(it)[1].tolist() for _ in range(2)]
    state = first.state_dict()
    rest = [b[1].tolist() for b in it]
    resumed = loader()
    resumed.load_state_dict(state)
    assert [b[1].tolist() for b in resumed] == rest
    assert len(seen) + len(rest) == 5


@pytest.mark.parametrize("kw,message", [
    (dict(sampler=[0, 1], shuffle=True), "mutually exclusive with shuffle"),
    (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually"),
    (dict(batch_sampler=[[0]], drop_last=True), "batch_sampler option is mutually"),
    (dict(prefetch_factor=3), "prefetch_factor option could only be specified"),
    (dict(num_workers=-1), "num_workers option should be non-negative"),
    (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
    (dict(multiprocessing_context="fork"), r"multi-process loading \(num_workers > 0\)"),
    (dict(multiprocessing_context="bad", num_workers=1), "should specify a valid start"),
    (dict(batch_size=None, drop_last=True), "mutually exclusive with drop_last"),
    (dict(collate_fn=3), "collate_fn must be callable"),
])
def test_torchs_argument_rules_are_config_errors_naming_the_argument(kw, message):
    with pytest.raises(sl.ConfigError, match=message):
        sl.DataLoader(Tuples(), **kw)


def test_a_multiprocessing_context_that_is_no_context_is_a_type_error_as_in_torch():
    with pytest.raises(TypeError, match="should be a valid context object"):
        sl.DataLoader(Tuples(), num_workers=1, multiprocessing_context=object())


def test_torchs_remaining_arguments_are_accepted():
    g = torch.Generator().manual_seed(3)
    loader = sl.DataLoader(Tuples(), 2, False, None, None, 2, tud.default_collate, False,
                           False, 0, None, "fork", g, prefetch_factor=3, in_order=False)
    again = sl.DataLoader(Tuples(), 2, generator=torch.Generator().manual_seed(3))
    assert loader.seed == again.seed  # the generator seeds the loader
    assert sum(1 for _ in loader) == 5


def test_an_iterable_dataset_gives_torchs_batches_and_a_plain_iterable_is_refused():
    class Stream(tud.IterableDataset):
        def __iter__(self):
            return iter([(i, {"x": np.full(2, i)}) for i in range(5)])
    same(list(sl.DataLoader(Stream(), batch_size=2, seed=0)),
         list(tud.DataLoader(Stream(), batch_size=2)))
    with pytest.raises(sl.ConfigError, match="not a torch.utils.data.IterableDataset"):
        sl.DataLoader(iter(range(3)))


def test_objects_are_a_config_error_naming_the_field_path():
    data = [(np.zeros(2), {"caption": None})] * 4
    with pytest.raises(sl.ConfigError, match=r"sample 0 \[1\]\['caption'\] is a NoneType"):
        next(iter(sl.DataLoader(data, batch_size=2)))


@pytest.mark.parametrize("workers", [0, 2])
def test_strings_come_back_as_default_collates_lists_of_strings(workers):
    class Captioned(tud.Dataset):
        def __len__(self):
            return 7

        def __getitem__(self, i):
            return (torch.full((2,), float(i)),
                    Pair("img%d.jpg" % i, {"caption": "ünï " * i, "raw": b"\x00\xff" * i}))
    ours = list(sl.DataLoader(Captioned(), batch_size=3, num_workers=workers, seed=1))
    theirs = list(tud.DataLoader(Captioned(), batch_size=3))
    assert len(ours) == len(theirs) == 3
    for a, b in zip(ours, theirs, strict=True):
        assert torch.equal(a[0], b[0]) and type(a[1]) is Pair
        assert a[1].x == b[1].x and a[1].y == b[1].y  # as torch: a tuple, lists
        assert type(a[1].x) is type(b[1].x) and type(a[1].y["raw"]) is type(b[1].y["raw"])
    one = next(iter(sl.DataLoader(Captioned(), batch_size=None, seed=1)))
    assert one[1].x == "img0.jpg" and one[1].y == {"caption": "", "raw": b""}


def test_a_string_over_the_variable_budget_is_a_data_error_naming_it():
    data = ["short"] * 8 + ["x" * 100]
    loader = sl.DataLoader(data, batch_size=3, variable_bytes=64)
    with pytest.raises(sl.Error, match=r"(?s)8.*100 bytes"):
        list(loader)


# --- nothing before iteration ---------------------------------------------------------

class Watched(tud.Dataset):
    def __init__(self):
        self.reads = 0
        self.scale = 1

    def __len__(self):
        return 6

    def __getitem__(self, i):
        self.reads += 1
        return torch.full((2,), float(i * self.scale))


@pytest.mark.parametrize("workers", [0, 2])
def test_no_sample_is_read_before_iteration_and_later_attributes_count(workers):
    dataset = Watched()
    loader = sl.DataLoader(dataset, batch_size=3, num_workers=workers, seed=1)
    assert dataset.reads == 0
    assert len(loader) == 2 and dataset.reads == 0
    dataset.scale = 10  # set after construction, as a user may
    batches = [b.clone() for b in loader]
    assert batches[1][:, 0].tolist() == [30.0, 40.0, 50.0]


def test_a_dataset_error_surfaces_when_iterating_not_at_construction():
    class Broken(tud.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            raise RuntimeError("the disk is gone")
    loader = sl.DataLoader(Broken(), batch_size=2, num_workers=2, seed=1)
    with pytest.raises(sl.WorkerError) as info:
        next(iter(loader))
    assert "RuntimeError" in str(info.value) and "the disk is gone" in str(info.value)
    assert "Original traceback" in str(info.value)  # the worker's, as torch keeps it


def test_a_worker_killed_while_the_layout_is_learned_is_a_worker_error_not_a_crash():
    class Crashes(tud.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            os.kill(os.getpid(), 9)
    with pytest.raises(sl.WorkerError, match="killed by signal 9") as info:
        next(iter(sl.DataLoader(Crashes(), batch_size=2, num_workers=1, seed=1)))
    assert info.value.code == "worker_died" and info.value.signal == 9


class MeetAtABarrier(tud.Dataset):
    """Each sample waits until every worker has read one, as torch's
    SynchronizedSeedDataset does; returns the worker's torch seed."""

    def __init__(self, size, workers):
        self.size, self.workers = size, workers
        self.count = torch.multiprocessing.Value("i", 0)
        self.lock = torch.multiprocessing.Lock()
        self.gate = torch.multiprocessing.Semaphore(0)

    def __len__(self):
        return self.size

    def __getitem__(self, i):
        with self.lock:
            self.count.value += 1
            if self.count.value == self.workers:
                self.gate.release()
        self.gate.acquire()
        self.gate.release()
        return torch.initial_seed()


def collated_by_torch(samples):
    """default_collate, as a collate_fn of the user's own."""
    return tud.default_collate(samples)


@pytest.mark.parametrize("collate", [None, collated_by_torch])
def test_the_layout_is_learned_in_the_workers_so_workers_that_meet_at_a_barrier_go_on(
        collate):
    # A probe reading alone would wait at the barrier for ever (the timeout says so).
    loader = sl.DataLoader(MeetAtABarrier(3, 3), num_workers=3, timeout=60, seed=5,
                           collate_fn=collate)
    seeds = [int(s) for s in loader]
    assert len(set(seeds)) == 3 and all(0 <= s < 2 ** 63 for s in seeds)


class WorkerIdInSample(tud.Dataset):
    def __init__(self):
        self.worker = None  # set by worker_init_fn, so None in any other process

    def init(self, worker):
        self.worker = worker

    def __len__(self):
        return 12

    def __getitem__(self, i):
        return self.worker, i


def test_the_layout_pass_runs_worker_init_fn_as_each_worker():
    dataset = WorkerIdInSample()
    loader = sl.DataLoader(dataset, batch_size=2, num_workers=2, worker_init_fn=dataset.init,
                           seed=1)
    batches = [(w.tolist(), i.tolist()) for w, i in loader]
    assert batches == [([k % 2] * 2, [2 * k, 2 * k + 1]) for k in range(6)]


class BadAtFirst(tud.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i < 2:
            raise KeyError(i)
        return {"x": i}


@pytest.mark.parametrize("workers", [0, 2])
def test_a_failed_first_batch_raises_its_own_error_and_the_pass_goes_on(workers):
    it = iter(sl.DataLoader(BadAtFirst(), batch_size=2, num_workers=workers, seed=1))
    with pytest.raises(KeyError, match="failed on sample 0 of batch 0"):
        next(it)
    assert [b["x"].tolist() for b in it] == [[2, 3], [4, 5], [6, 7]]


class EveryOneFails(tud.Dataset):
    def __len__(self):
        return 9

    def __getitem__(self, i):
        raise NotImplementedError("sample %d" % i)


@pytest.mark.parametrize("workers", [0, 2])
def test_an_epoch_whose_every_batch_fails_raises_each_batchs_error_in_turn(workers):
    # As torch's iterator does (its test_error): one error per batch, then the end.
    it = iter(sl.DataLoader(EveryOneFails(), batch_size=2, num_workers=workers, seed=1))
    failed = []
    for _ in range(6):
        try:
            next(it)
        except NotImplementedError as e:
            failed.append(e.batch)
        except StopIteration:
            break
    assert failed == [0, 1, 2, 3, 4]


class OnlyTheSampledOnesAreGood(tud.Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        return np.zeros(i % 3 + 1) if i >= 10 else None  # None: no layout takes it


@pytest.mark.parametrize("workers", [0, 2])
def test_the_layout_comes_from_the_samples_the_sampler_gives(workers):
    # The samples the first batches hold, read as the pass reads them: never
    # indices 0..7, which the sampler does not give (and which hold None).
    loader = sl.DataLoader(OnlyTheSampledOnesAreGood(), batch_size=3, num_workers=workers,
                           sampler=list(range(10, 16)), seed=1)
    assert [[len(x) for x in b] for b in loader] == [[2, 3, 1], [2, 3, 1]]


class ReadsInBulk(tud.Dataset):
    """torch's bulk-loading pattern: a sampler yields lists of indices, and one
    read gives them all (torch's own test_bulk_loading_nobatch)."""

    def __len__(self):
        return 35

    def __getitem__(self, indices):
        assert isinstance(indices, list), indices
        return torch.as_tensor(indices)


def bulks(seed):
    order = np.random.default_rng(seed).permutation(35).tolist()
    return [order[k:k + 4] for k in range(0, 35, 4)]


@pytest.mark.parametrize("workers,persistent", [(0, False), (2, False), (2, True)])
def test_a_samplers_keys_are_read_as_torchs_loader_reads_them(workers, persistent):
    # Items that are not sample indices go to dataset[key] as they are; the
    # samples, one by one, may differ in shape (the last bulk is shorter).
    epochs = [bulks(1), bulks(2)]
    loader = sl.DataLoader(ReadsInBulk(), batch_size=None, sampler=Yields(*epochs),
                           num_workers=workers, persistent_workers=persistent, seed=1)
    theirs = tud.DataLoader(ReadsInBulk(), batch_size=None, sampler=Yields(*epochs))
    for epoch in epochs:
        got, last = [], []
        for sample in loader:
            got.append(sample.tolist())
            last.append(loader.last_indices)
        assert got == [t.tolist() for t in theirs] == epoch
        assert last == [[key] for key in epoch]


def test_a_keyed_epoch_is_traced_by_position_and_audits_clean(tmp_path):
    import seedloader.audit
    loader = sl.DataLoader(ReadsInBulk(), batch_size=None, sampler=Yields(bulks(5)),
                           seed=1, num_workers=2, seeding="sample")
    path = tmp_path / "trace.jsonl"
    assert [s.tolist() for s in seedloader.audit.trace(loader, path)] == bulks(5)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["index"] for line in lines] == list(range(9))
    assert seedloader.audit.check(path, 9)["findings"] == []


def test_what_a_keyed_epoch_cannot_do_is_refused_or_done_as_torch_would():
    # skip() names samples by index, which keys do not have.
    loader = sl.DataLoader(ReadsInBulk(), batch_size=None, sampler=Yields(bulks(5)),
                           seed=1, seeding="sample")
    loader.skip(samples=[1])
    with pytest.raises(sl.ConfigError, match="the sampler yields keys in epoch 0"):
        next(iter(loader))
    # A bad last key is replaced by the next one round the epoch: the first.
    epoch = [[1, 2], [3], ["bad"]]
    loader = sl.DataLoader(MaskedOrLocked(), batch_size=None, sampler=Yields(epoch),
                           seed=1, on_bad_sample="skip")
    assert [s.tolist() for s in loader] == [[1, 2], [3], [1, 2]]
    assert loader.skipped_samples == 1
    # Boolean masks are keys too; and with no workers a key is never pickled.
    mask = np.arange(35) % 7 == 0
    lock = threading.Lock()
    unpicklable = [(lock, 4)]
    assert next(iter(sl.DataLoader(MaskedOrLocked(), batch_size=None, seed=1,
                                   sampler=[mask]))).tolist() == [0, 7, 14, 21, 28]
    assert next(iter(sl.DataLoader(MaskedOrLocked(), batch_size=None, seed=1,
                                   sampler=unpicklable))).tolist() == [4]
    with pytest.raises(TypeError) as error:
        next(iter(sl.DataLoader(MaskedOrLocked(), batch_size=None, seed=1,
                                sampler=unpicklable, num_workers=2)))
    assert "reach the workers pickled" in "".join(error.value.__notes__)


class MaskedOrLocked(tud.Dataset):
    """Read at a mask, a list of indices (a damaged one holds "bad"), or a pair
    (anything, n)."""

    def __len__(self):
        return 35

    def __getitem__(self, key):
        if isinstance(key, np.ndarray):
            return torch.arange(35)[torch.from_numpy(key)]
        if isinstance(key, list):
            if "bad" in key:
                raise sl.DataError("sample %r is damaged" % (key,))
            return torch.tensor(key)
        return torch.tensor([key[1]])


class KeyedByPlace(tud.Dataset):
    """Read at (index, scale) keys, as a bucketing batch sampler gives them."""

    def __len__(self):
        return 12

    def __getitem__(self, key, rng):
        index, scale = key
        return {"x": np.full(3, index * scale, np.float64) + rng.random(3), "i": index}


def test_a_batch_samplers_keys_are_batched_and_seeded_by_their_place_for_any_worker_count():
    # seeding="sample": a keyed sample's stream is keyed by its position in the
    # epoch, so the batches do not depend on the worker count.
    plan = [[(k, 1 + k % 3) for k in range(b, b + 3)] for b in (0, 6, 3, 9)]
    batches = {}
    for workers in (0, 2):
        loader = sl.DataLoader(KeyedByPlace(), batch_sampler=Yields(plan), seed=5,
                               num_workers=workers, seeding="sample")
        batches[workers] = [b["x"].numpy() for b in loader]
        assert [b["i"].tolist() for b in loader] == [[k for k, _ in b] for b in plan]
    for a, b in zip(batches[0], batches[2], strict=True):
        np.testing.assert_array_equal(a, b)
    keys = [k for b in plan for k in b]
    rngs = [np.random.Generator(np.random.PCG64(np.random.SeedSequence(
        5, spawn_key=(2, 0, p)))) for p in range(len(keys))]
    expected = [np.full(3, i * s, np.float64) + rng.random(3)
                for (i, s), rng in zip(keys, rngs)]
    np.testing.assert_array_equal(np.concatenate(batches[0]), np.stack(expected))


def test_a_keyed_epoch_resumes_from_its_state_without_drawing_the_sampler_again():
    epochs = [bulks(3), bulks(4)]
    loader = sl.DataLoader(ReadsInBulk(), batch_size=None, sampler=Yields(*epochs), seed=2)
    it = iter(loader)
    assert [next(it).tolist() for _ in range(3)] == epochs[0][:3]
    state = pickle.loads(pickle.dumps(loader.state_dict()))
    resumed = sl.DataLoader(ReadsInBulk(), batch_size=None, sampler=Yields(bulks(9)), seed=2)
    resumed.load_state_dict(state)
    assert [s.tolist() for s in resumed] == epochs[0][3:]


def test_a_collate_fn_gets_the_samples_a_samplers_keys_give():
    plan = [[(k, 2) for k in range(b, b + 4)] for b in (8, 0, 4)]
    collate = lambda samples: torch.tensor([s["i"] for s in samples])  # noqa: E731
    mine = sl.DataLoader(KeyedByPlace(), batch_sampler=Yields(plan), collate_fn=collate,
                         num_workers=2, seed=1)
    assert [b.tolist() for b in mine] == [[k for k, _ in b] for b in plan]


def test_more_keys_than_the_data_set_has_samples_are_refused_by_name():
    loader = sl.DataLoader(ReadsInBulk(), batch_size=None, seed=1,
                           sampler=Yields([[0]] * 36))
    with pytest.raises(sl.ConfigError, match=re.escape(
            "Yields yields 36 keys in epoch 0; keys are read by their position in the "
            "epoch, which must stay below the data set's len() 35")):
        next(iter(loader))


def test_keys_go_to_a_python_dataset_only():
    with pytest.raises(sl.ConfigError, match=re.escape(
            "sampler Yields: [1, 2] at epoch 0, batch 0, position 0; a sample index must "
            "be an int")):
        next(iter(sl.DataLoader(sl.Synthetic(8, 4, 4, 1), batch_size=None, seed=1,
                                sampler=Yields([[1, 2]]))))


class CountsItsReads(tud.Dataset):
    """Draws from its generator, torch's and numpy's global ones, and writes each
    read (pid, index) to a file."""

    def __init__(self, path):
        self.path = path

    def __len__(self):
        return 18

    def __getitem__(self, i, rng):
        with open(self.path, "a") as f:
            f.write("%d %d\n" % (os.getpid(), i))
        return {"x": rng.random(3), "t": torch.rand(2), "n": np.random.rand(1), "i": i}


class DeclaresItsFields(CountsItsReads):
    fields = {"x": ((3,), "float64"), "t": ((2,), "float32"), "n": ((1,), "float64"),
              "i": ((), "int64")}


def reseed_numpy(worker):
    np.random.seed(torch.initial_seed() % 2 ** 32)  # as PyTorch's docs advise


@pytest.mark.parametrize("workers,seeding,persistent,context,collate", [
    (0, "worker", False, None, None), (0, "sample", False, None, None),
    (2, "worker", False, None, None), (2, "worker", True, None, None),
    (2, "sample", False, None, None), (2, "sample", True, None, None),
    (2, "worker", False, "spawn", None), (2, "sample", True, "spawn", None),
    (0, "sample", False, None, collated_by_torch),
    (2, "worker", False, None, collated_by_torch),
    (2, "sample", True, None, collated_by_torch),
    (2, "sample", False, "spawn", collated_by_torch)])
def test_the_layout_passs_workers_serve_the_pass_and_nothing_is_read_twice(
        tmp_path, workers, seeding, persistent, context, collate):
    # With a collate_fn the layout pass learns its outputs' layout.
    def two_epochs(kind, name, collate_fn=None):
        torch.manual_seed(0)  # num_workers=0 draws from this process's generators
        np.random.seed(0)
        path = tmp_path / name
        loader = sl.DataLoader(kind(path), batch_size=3, num_workers=workers, seed=4,
                               shuffle=True, seeding=seeding, persistent_workers=persistent,
                               worker_init_fn=reseed_numpy if workers else None,
                               multiprocessing_context=context, collate_fn=collate_fn)
        batches = [{k: v.clone() for k, v in b.items()} for _ in range(2) for b in loader]
        reads = [line.split() for line in path.read_text().splitlines()]
        return batches, reads

    learned, reads = two_epochs(CountsItsReads, "learned", collate)
    declared, _ = two_epochs(DeclaresItsFields, "declared")
    assert len(learned) == len(declared) == 12
    for a, b in zip(learned, declared, strict=True):
        assert all(torch.equal(a[k], b[k]) for k in b)
    # Each epoch reads each sample once: the layout pass's reads are the pass's.
    assert sorted(int(i) for _, i in reads) == sorted(list(range(18)) * 2)
    pids = {p for p, _ in reads}
    # The layout pass's workers served epoch 0; a new pair epoch 1 unless persistent.
    assert len(pids) == (1 if workers == 0 else 2 if persistent else 4)


def test_a_resumed_pass_learns_its_layout_in_its_own_workers(tmp_path):
    # seeding="sample": the batches before the resume point are not loaded at all.
    def resumed(kind, name):
        first = sl.DataLoader(kind(tmp_path / ("first-" + name)), batch_size=3, seed=4,
                              num_workers=2, shuffle=True, seeding="sample")
        it = iter(first)
        for _ in range(2):
            next(it)
        state = first.state_dict()
        del it, first
        path = tmp_path / name
        loader = sl.DataLoader(kind(path), batch_size=3, num_workers=2, seed=4,
                               shuffle=True, seeding="sample")
        loader.load_state_dict(state)
        batches = [{k: v.clone() for k, v in b.items()} for b in loader]
        return batches, [line.split() for line in path.read_text().splitlines()]

    learned, reads = resumed(CountsItsReads, "learned")
    declared, _ = resumed(DeclaresItsFields, "declared")
    assert len(learned) == len(declared) == 4
    for a, b in zip(learned, declared, strict=True):
        assert all(torch.equal(a[k], b[k]) for k in b)
    assert sorted(int(i) for _, i in reads) == sorted(sum((b["i"].tolist()
                                                          for b in learned), []))
    assert len({p for p, _ in reads}) == 2


class StallsFromSample4(tud.Dataset):
    def __len__(self):
        return 12

    def __getitem__(self, i):
        if i >= 4:
            time.sleep(30)
        return i


def test_a_timeout_while_the_layout_is_learned_is_raised_not_learned_around():
    loader = sl.DataLoader(StallsFromSample4(), batch_size=2, num_workers=2, timeout=1,
                           seed=1)
    started = time.monotonic()
    with pytest.raises(sl.TimeoutError, match="DataLoader timed out after 1 seconds") as info:
        next(iter(loader))
    assert time.monotonic() - started < 20
    assert info.value.timeout == 1 and info.value.code == "timed_out"


class ReusesItsBuffer(tud.Dataset):
    """Writes every sample into one array it returns (an allocation-saving trick):
    only a copy taken when the sample is read holds that sample."""

    def __init__(self):
        self.buffer = np.zeros(4, np.int64)

    def __len__(self):
        return 16

    def __getitem__(self, i):
        self.buffer[:] = i
        return {"x": self.buffer}


@pytest.mark.parametrize("workers", [0, 2])
def test_samples_the_layout_pass_read_are_served_as_they_were_read(workers):
    loader = sl.DataLoader(ReusesItsBuffer(), batch_size=4, num_workers=workers, seed=1)
    assert [b["x"][:, 0].tolist() for b in loader] == [
        list(range(k, k + 4)) for k in range(0, 16, 4)]


class ImagesAndLabels(tud.Dataset):
    def __len__(self):
        return 24

    def __getitem__(self, i):
        return {"image": np.full((3, 4, 4), i, np.float32), "label": np.int64(i % 10)}


@pytest.mark.parametrize("workers", [0, 2])
def test_mixup_over_a_python_dataset_whose_layout_is_learned(workers):
    loader = sl.DataLoader(ImagesAndLabels(), batch_size=8, num_workers=workers, seed=3,
                           mixup_alpha=0.4, num_classes=10)
    batches = list(loader)
    assert len(batches) == 3
    for b in batches:
        assert b["target"].shape == (8, 10)
        assert torch.allclose(b["target"].sum(1), torch.ones(8))
    declared = sl.DataLoader(_declared(ImagesAndLabels, {
        "image": ((3, 4, 4), "float32"), "label": ((), "int64")}), batch_size=8,
        num_workers=workers, seed=3, mixup_alpha=0.4, num_classes=10)
    for a, b in zip(batches, declared, strict=True):
        assert all(torch.equal(a[k], b[k]) for k in b)


def _declared(kind, fields):
    return type(kind.__name__, (kind,), {"fields": fields})()


# --- variable-size fields ---------------------------------------------------------------

class Boxes(tud.Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, i):
        return torch.full((3, 4, 4), float(i)), torch.arange(4 * (i % 4), dtype=torch.float32
                                                             ).reshape(-1, 4)


@pytest.mark.parametrize("workers", [0, 2])
def test_variable_boxes_come_as_per_sample_tensors_over_the_slot(workers):
    loader = sl.DataLoader(Boxes(), batch_size=4, num_workers=workers, seed=1)
    for k, (images, boxes) in enumerate(loader):
        assert images.shape == (len(boxes), 3, 4, 4)
        for j, b in enumerate(boxes):
            i = k * 4 + j
            assert torch.equal(b, Boxes()[i][1])


def test_variable_fields_padded_on_request():
    loader = sl.DataLoader(Boxes(), batch_size=4, seed=1, pad_variable=True)
    _, (padded, lengths) = next(iter(loader))
    assert lengths.tolist() == [0, 1, 2, 3] and padded.shape == (4, 3, 4)
    assert torch.equal(padded[3], Boxes()[3][1]) and not padded[0].any()


def test_a_sample_over_the_variable_budget_is_a_data_error_naming_it():
    loader = sl.DataLoader(Boxes(), batch_size=4, seed=1, variable_bytes=40)
    with pytest.raises(sl.ConfigError, match=r"\[1\] needs 48 bytes"):
        next(iter(loader))
    loader = sl.DataLoader(Boxes(), batch_size=4, seed=1, variable_bytes=40,
                           variable_fields=["[1]"])
    with pytest.raises(sl.ConfigError, match="variable_bytes is 40"):
        next(iter(loader))


def test_a_shape_change_after_the_first_samples_names_the_field_and_the_remedy():
    # The layout is learned from the first batches (10 samples): sample 10 differs.
    data = [np.zeros(2)] * 10 + [np.zeros(3)]
    with pytest.raises(sl.WorkerError, match=r"sample 10 \(the whole sample\) is float64 "
                       r"\(3,\); the layout says float64 \(2,\).*variable_fields"):
        list(sl.DataLoader(data, batch_size=5))
    batches = list(sl.DataLoader(data, batch_size=5, variable_fields=["(the whole sample)"]))
    assert [len(t) for t in batches[2]] == [3]
    # Shapes that differ within the first batches make the field variable by themselves.
    batches = list(sl.DataLoader(data[1:], batch_size=5))
    assert [len(t) for t in batches[1]] == [2, 2, 2, 2, 3]


# --- the rest of the torch surface --------------------------------------------------------

def test_submodules_are_usable_after_a_plain_import():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", "import seedloader as sl; "
                          "print(callable(sl.torch.seed_worker), callable(sl.audit.trace))"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True"]


def test_the_loader_subscripts_as_a_generic_type():
    assert sl.DataLoader[int] is sl.DataLoader


def test_each_iteration_without_set_epoch_is_a_new_epoch_as_torch_reshuffles():
    loader = sl.DataLoader(Tuples(), batch_size=10, shuffle=True, seed=1)
    first, second = ([b[1].tolist() for b in loader] for _ in range(2))
    assert loader.epoch == 1 and first != second
    loader.set_epoch(0)
    assert [b[1].tolist() for b in loader] == first


def test_a_stale_iterator_raises_and_does_not_stop_the_newer_one():
    loader = sl.DataLoader(Tuples(), batch_size=2, num_workers=2, seed=1)
    old = iter(loader)
    next(old)
    new = iter(loader)
    assert next(new)[1].tolist() == [0, 1]
    with pytest.raises(sl.Error, match="replaced by a newer iteration"):
        next(old)
    del old
    assert [b[1].tolist() for b in new] == [[2, 3], [0, 1], [2, 3], [0, 1]]  # i % 4
    assert loader.last_indices == [8, 9]


def test_a_second_thread_using_the_loader_raises_rather_than_races():
    class Slow(tud.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            import time
            time.sleep(0.3)
            return i
    loader = sl.DataLoader(Slow(), batch_size=1, num_workers=1, seed=1)
    it = iter(loader)
    next(it)
    errors = []
    thread = threading.Thread(target=lambda: errors.append(next(it)))
    thread.start()
    try:
        with pytest.raises(sl.Error, match="another thread is iterating this loader"):
            next(it)
    finally:
        thread.join()


def test_stopping_or_closing_while_another_thread_waits_raises():
    class SlowAfterTheFirst(tud.Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            time.sleep(2.0 if i else 0)
            return i
    loader = sl.DataLoader(SlowAfterTheFirst(), batch_size=1, num_workers=1, seed=1)
    it = iter(loader)
    assert next(it).tolist() == [0]
    waiting = threading.Event()
    got = []
    thread = threading.Thread(target=lambda: (waiting.set(), got.append(next(it))))
    thread.start()
    try:
        waiting.wait()
        deadline = time.monotonic() + 10
        while not loader._loader.busy:  # until the thread waits in the engine for batch 1
            assert time.monotonic() < deadline, "the thread never reached the engine"
            time.sleep(0.01)
        with pytest.raises(sl.Error, match="another thread is iterating this loader"):
            iter(loader)
        with pytest.raises(sl.Error, match="another thread is iterating this loader"):
            loader.close()
    finally:
        thread.join()
    assert [b.tolist() for b in got] == [[1]]
    assert [b.tolist() for b in it] == [[2]]  # the pass goes on, undisturbed
    loader.close()


def test_a_batch_that_cannot_be_built_ends_the_pass_uncounted():
    loader = sl.DataLoader(Tuples(), batch_size=2, num_workers=1, seed=1)
    assert next(iter(loader))[1].tolist() == [0, 1]  # the layout is learned

    def broken(*args):
        raise RuntimeError("cannot build")
    loader._layout.build = broken
    loader.set_epoch(1)
    it = iter(loader)
    with pytest.raises(RuntimeError, match="cannot build"):
        next(it)
    assert list(it) == []  # the pass ended, as a generator that raised does
    assert loader.state_dict()["_num_yielded"] == 0


def test_a_loader_in_a_reference_cycle_is_collected_and_its_workers_go():
    loader = sl.DataLoader(Tuples(), batch_size=2, num_workers=2, seed=1,
                           sampler=tud.SequentialSampler(range(10)),  # Loader -> loader
                           persistent_workers=True)
    it = iter(loader)
    next(it)
    pids = loader.worker_pids()
    assert pids
    loader.pass_in_progress = it  # loader -> pass -> loader
    collected = weakref.ref(loader)
    del loader, it
    gc.collect()
    assert collected() is None
    deadline = time.monotonic() + 10
    while any(os.path.exists("/proc/%d" % p) for p in pids):
        assert time.monotonic() < deadline, "the workers outlived their loader"
        time.sleep(0.05)


def test_an_iterator_dropped_mid_epoch_stops_its_workers_without_the_collector():
    # As torch's iterator does when deleted: its workers end, and the loader stays
    # usable. The pass is no cycle: nothing waits for gc.collect().
    gc.disable()
    try:
        loader = sl.DataLoader(Tuples(), batch_size=2, num_workers=2, seed=1)
        it = iter(loader)
        workers = it._workers  # torch's iterator attribute: filled when the pass starts
        next(it)
        assert sorted(w.pid for w in workers) == sorted(loader.worker_pids())
        assert all(w.is_alive() for w in workers)
        del it
        for w in workers:
            w.join(10)
            assert not w.is_alive(), "worker %d outlived its dropped iterator" % w.pid
        assert loader._auto_collation and loader._index_sampler is loader.batch_sampler
        assert [b[1].tolist() for b in loader][:1] == [[0, 1]]
        unbatched = sl.DataLoader(Tuples(), batch_size=None, seed=1)
        assert not unbatched._auto_collation
        assert unbatched._index_sampler is unbatched.sampler
    finally:
        gc.enable()


def test_persistent_workers_go_with_their_loader_while_a_batch_is_kept():
    # torch's test_partial_workers: the loader reachable only from its iterator, the
    # last batch still held by the loop variable.
    gc.disable()
    try:
        it = iter(sl.DataLoader(Tuples(), batch_size=2, num_workers=2, seed=1,
                                persistent_workers=True))
        workers = it._workers
        for i, kept in enumerate(it):
            if i == 1:
                break
        del it
        for w in workers:
            w.join(10)
            assert not w.is_alive(), "worker %d outlived its loader" % w.pid
        assert kept[1].tolist() == [2, 3]  # the kept batch is intact
    finally:
        gc.enable()


def test_closing_an_iterator_stops_its_epoch():
    loader = sl.DataLoader(Tuples(), batch_size=2, num_workers=1, seed=1)
    it = iter(loader)
    next(it)
    it.close()
    assert list(it) == []
    assert [b[1].tolist() for b in loader] == [[0, 1], [2, 3], [0, 1], [2, 3], [0, 1]]


def test_in_process_a_datasets_exception_is_chained_with_its_traceback():
    class Raises(tud.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            if i == 2:
                raise KeyError("no such record")
            return i
    with pytest.raises(sl.WorkerError) as info:
        list(sl.DataLoader(Raises(), batch_size=2))
    cause = info.value.__cause__
    assert isinstance(cause, KeyError) and cause.__traceback__ is not None
    assert info.value.index == 2


@pytest.mark.parametrize("workers", [0, 2])
def test_a_datasets_exception_keeps_its_type_past_a_message_cut_short(workers):
    # The engine keeps a worker's message to 1024 bytes: a dataset whose name
    # fills them leaves no type in the text, and the type crosses beside it.
    Long = type("D" * 1100, (tud.Dataset,), {"__len__": lambda self: 4,
                                             "__getitem__": lambda self, i: {}[i]})
    with pytest.raises(KeyError) as info:
        list(sl.DataLoader(Long(), batch_size=2, num_workers=workers, seed=1))
    assert isinstance(info.value, sl.WorkerError) and "KeyError" not in str(info.value)
    assert info.value.exception_type == "KeyError" and info.value.code == "batch_failed"
    assert info.value.index == 0 and info.value.batch == 0
    assert isinstance(info.value.__cause__, KeyError) == (workers == 0)


def test_a_failed_worker_init_fn_is_a_worker_error_saying_so():
    def init(worker):
        raise OSError("cannot open the index")
    with pytest.raises(sl.WorkerError, match="worker_init failed: OSError: cannot open") as info:
        next(iter(sl.DataLoader(Tuples(), batch_size=2, num_workers=2, seed=1,
                                worker_init_fn=init)))
    assert info.value.code == "worker_init_failed" and info.value.exception_type is None
    assert not isinstance(info.value, OSError)


def test_a_cpp_transform_refuses_a_float_image_and_takes_a_strided_one():
    t = sl.transform("rrc:8,hflip")
    image = np.arange(16 * 12 * 3, dtype=np.uint8).reshape(16, 12, 3)
    with pytest.raises(sl.DataError, match="must be uint8.*not float32"):
        t(image.astype(np.float32), np.random.default_rng(0))
    strided = np.ascontiguousarray(image[:, ::-1])[:, ::-1]  # the same pixels, reversed twice
    view = image[::2]
    assert np.array_equal(t(view, np.random.default_rng(1)),
                          t(np.ascontiguousarray(view), np.random.default_rng(1)))
    assert np.array_equal(t(strided, np.random.default_rng(2)),
                          t(image, np.random.default_rng(2)))


def test_a_sample_type_pickle_cannot_name_is_found_in_the_parent():
    Local = collections.namedtuple("Local", "image label")  # not importable by name

    class Data(tud.Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            return Local(np.full((2,), i, np.float32), i)
    batch = next(iter(sl.DataLoader(Data(), batch_size=3, num_workers=2, seed=1)))
    assert type(batch) is Local and batch.label.tolist() == [0, 1, 2]


@pytest.mark.parametrize("kw,message", [
    (dict(rank=2, world_size=2), "rank 2 must be below world_size 2"),
    (dict(mixup_alpha=-1.0), "mixup_alpha must be a finite number"),
])
def test_engine_options_are_checked_at_construction_for_a_python_dataset(kw, message):
    dataset = Watched()
    with pytest.raises(sl.ConfigError, match=message):
        sl.DataLoader(dataset, batch_size=2, **kw)
    assert dataset.reads == 0


def test_a_workers_exception_keeps_its_formatted_traceback():
    class Deep(tud.Dataset):
        def __len__(self):
            return 8

        def decode(self, i):
            if i == 5:
                raise ValueError("cannot decode sample five")
            return i

        def __getitem__(self, i):
            return self.decode(i)
    with pytest.raises(sl.WorkerError) as info:
        list(sl.DataLoader(Deep(), batch_size=2, num_workers=2, seed=1))
    text = str(info.value)
    assert info.value.index == 5 and "ValueError: cannot decode sample five" in text
    assert "Original traceback (most recent call last):" in text
    assert 'raise ValueError("cannot decode sample five")' in text  # the source line
    frames = text.split("Original traceback")[1]
    assert frames.index("in __getitem__") < frames.index("in decode")  # outermost first


# --- behaviours PyTorch's own test_dataloader.py checks ---------------------------------

def test_timeout_a_stalled_worker_is_a_timeout_error_not_a_wait():
    class Stalls(tud.Dataset):
        def __len__(self):
            return 16

        def __getitem__(self, i):
            if i == 12:  # beyond the samples the layout is learned from
                import time
                time.sleep(30)
            return torch.tensor(i)
    loader = sl.DataLoader(Stalls(), batch_size=2, num_workers=2, timeout=1, seed=1)
    with pytest.raises(TimeoutError, match="did not deliver batch 6"):
        for _ in loader:
            pass


def test_the_generator_seeds_the_shuffle_reproducibly():
    def order(seed):
        loader = sl.DataLoader(Tuples(), batch_size=10, shuffle=True,
                               generator=torch.Generator().manual_seed(seed))
        next(iter(loader))
        return loader.last_indices
    assert order(5) == order(5)
    assert order(5) != order(6)


def test_persistent_workers_live_across_epochs_and_others_are_forked_per_epoch():
    for persistent in (True, False):
        loader = sl.DataLoader(Tuples(), batch_size=2, num_workers=2, seed=1,
                               persistent_workers=persistent)
        for _ in loader:
            pass
        first = loader.worker_pids()
        for _ in loader:
            pass
        assert (loader.worker_pids() == first and len(first) == 2) == persistent


class WorkerInfoReport(tud.Dataset):
    """Each sample: get_worker_info()'s id, num_workers, seed and whether its
    dataset is this object (-1s in the calling process, where it is None)."""

    def __len__(self):
        return 8

    def __getitem__(self, i):
        info = tud.get_worker_info()
        if info is None:
            return np.array([-1, -1, -1, -1])
        return np.array([info.id, info.num_workers, info.seed % 1000003,
                         int(info.dataset is self)])


def test_get_worker_info_is_set_in_workers_and_none_in_process():
    rows = torch.cat([b.clone() for b in sl.DataLoader(WorkerInfoReport(), batch_size=2,
                                                       num_workers=2, seed=4)])
    assert rows[:, 0].tolist() == [0, 0, 1, 1, 0, 0, 1, 1]  # batches go round the workers
    assert set(rows[:, 1].tolist()) == {2} and set(rows[:, 3].tolist()) == {1}
    seeds = {w: set(rows[rows[:, 0] == w, 2].tolist()) for w in (0, 1)}
    assert len(seeds[0]) == len(seeds[1]) == 1 and seeds[0] != seeds[1]
    again = torch.cat([b.clone() for b in sl.DataLoader(WorkerInfoReport(), batch_size=2,
                                                        num_workers=2, seed=4)])
    assert torch.equal(rows, again)  # the seed comes from the worker's stream
    in_process = torch.cat([b.clone() for b in sl.DataLoader(WorkerInfoReport(),
                                                             batch_size=2)])
    assert set(in_process.flatten().tolist()) == {-1}


@pytest.mark.parametrize("workers", [0, 2])
def test_a_dataset_that_grows_between_epochs_is_read_whole(workers):
    data = [np.full(2, i) for i in range(4)]
    loader = sl.DataLoader(data, batch_size=2, num_workers=workers, seed=1)
    assert torch.cat([b.clone() for b in loader])[:, 0].tolist() == [0, 1, 2, 3]
    data += [np.full(2, 4), np.full(2, 5), np.full(2, 6)]
    assert len(loader) == 4  # as torch's, len() follows the dataset
    assert torch.cat([b.clone() for b in loader])[:, 0].tolist() == list(range(7))
    del data[1:]
    assert torch.cat([b.clone() for b in loader])[:, 0].tolist() == [0]
