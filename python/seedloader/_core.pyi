from collections.abc import Mapping, Sequence
import enum
from typing import Annotated

import numpy
from numpy.typing import NDArray


class Transform:
    """A C++ transform chain from its spec, applied to one image."""

    def __init__(self, spec: str) -> None: ...

    def __call__(self, image: Annotated[NDArray, dict(device='cpu')], rng: object) -> object:
        """
        Applies the chain to an HxWxC (or HxW) uint8 RGB image, drawing from rng (a numpy Generator over PCG64, advanced in place). Returns the [C, H, W] output array.
        """

    def __repr__(self) -> str: ...

class Dataset:
    """A map-style source of samples with a fixed layout."""

    def __len__(self) -> int: ...

    @property
    def fields(self) -> list[tuple[str, str, list[int]]]:
        """[(name, dtype, shape)] of one sample"""

    def __repr__(self) -> str: ...

class ImageFolder(Dataset):
    """root/<class>/<image>, as torchvision's ImageFolder."""

    def __init__(self, root: str, transform: str, channels: int = 3, max_pixels: int = 268435456) -> None: ...

    @property
    def classes(self) -> list[str]: ...

class Cifar10(Dataset):
    """
    CIFAR-10, binary (cifar-10-batches-bin) or torchvision's pickled download (cifar-10-batches-py).
    """

    def __init__(self, dir: str, split: str = 'train', transform: str = '') -> None: ...

class Mnist(Dataset):
    """MNIST's idx files."""

    def __init__(self, dir: str, split: str = 'train', transform: str = '') -> None: ...

class TensorFile(Dataset):
    """Named tensors [N, ...] of a .safetensors file."""

    def __init__(self, path: str, names: Sequence[str] = []) -> None: ...

class TarShards(Dataset):
    """WebDataset-style tar shards."""

    def __init__(self, pattern: str, transform: str | None = None, label_ext: str = 'cls', channels: int = 3, max_pixels: int = 268435456, cache_dir: str = '', cache_limit: int = 0, verify_shards: bool = True, prefetch_shards: int = 4, cache_verify: str = 'stat', max_attempts: int = 6, stall_timeout_s: float = 30.0, min_rate_bytes_s: float = 1024.0, deadline_s: float = 0.0, max_index_bytes: int = 268435456, anonymous: bool = False, index_deadline_s: float = 60.0) -> None:
        """
        A shard pattern, a packed folder (its index.json), or the URL of one: s3://bucket/prefix/, https://host/path/ or http://...; remote shards are read through a cache in cache_dir (default $SEEDLOADER_CACHE_DIR, else ~/.cache/seedloader) bounded by cache_limit bytes, shards and their sidecars together (0: no bound), each worker downloading the shards of its next batches ahead (prefetch_shards of them; 0: none). cache_verify: how a cached shard is checked when a process first opens it: 'stat' (inode, size and modification time against those at download), 'hash' (its XXH64 in full) or 'none'; one that fails is downloaded again. max_attempts: attempts per object that make no progress; a transfer below min_rate_bytes_s over stall_timeout_s seconds is cut off (and counts as one); deadline_s bounds one object's whole read (0: none); index.json may hold at most max_index_bytes, read within index_deadline_s seconds (retries included; 0: no bound but deadline_s and the attempts'). s3:// requests are signed with credentials found as the AWS CLI finds them (none is an error listing where it looked); anonymous=True sends them unsigned (a public bucket), as AWS_NO_SIGN_REQUEST=true does.
        """

    @property
    def prefetch_errors(self) -> tuple:
        """
        (count, first message) of the downloads ahead of the reads that failed so far, in this process and its workers together (a read that needs such a shard fetches it itself, and its failure quotes these); (0, '') for local shards.
        """

class Synthetic(Dataset):
    """n generated h x w x c images."""

    def __init__(self, n: int, h: int, w: int, c: int = 3, transform: str = '', classes: int = 10) -> None: ...

class PythonDataset(Dataset):
    def __init__(self, dataset: object, fields: Sequence[tuple[str, str, Sequence[int], bool]], flatten: object, takes_rng: bool, replay: object | None = None) -> None: ...

    @property
    def dataset(self) -> object: ...

class PassPosition:
    @property
    def yielded(self) -> int:
        """batches of the epoch delivered (a resumed pass counts the skipped)"""

    @property
    def first(self) -> int:
        """the epoch's batch the pass began at (0 before its first batch)"""

    @property
    def last_worker(self) -> int:
        """the worker that filled the last batch (0 with no workers)"""

    @property
    def last_indices(self) -> object:
        """the last batch's sample indices as native uint64 bytes, or None"""

    @property
    def last_fingerprints(self) -> object:
        """the last batch's stream fingerprints as native uint64 bytes, or None"""

    @property
    def last_stream_epochs(self) -> object:
        """
        the epochs its samples' streams are keyed by (a mixture's: each source's), likewise
        """

    @property
    def worker_pids(self) -> list[int]:
        """
        the pids of the workers serving the pass (empty before its first batch, and with no workers)
        """

    @property
    def began(self) -> float:
        """time.monotonic() when the pass's first next() was called (0 before)"""

    @property
    def last_at(self) -> float:
        """time.monotonic() when the pass's last next() got its batch (or error)"""

    @property
    def waited(self) -> float:
        """seconds next() waited for batches in all: the data stall"""

class WorkerLaunch:
    """
    What a worker program serves (seedloader/data_loader.h): its worker, the shared memory's files as this process holds them, the digest it must match.
    """

    @staticmethod
    def parse(arguments: Sequence[str]) -> WorkerLaunch:
        """
        From the arguments a worker program is started with; ConfigError names one that is missing, extra or not a number.
        """

    def arguments(self) -> list[str]:
        """As a worker program's arguments."""

    @property
    def worker(self) -> int: ...

    @property
    def region_fd(self) -> int:
        """the shared region's memory file, as this process holds it"""

    @region_fd.setter
    def region_fd(self, arg: int, /) -> None: ...

    @property
    def spares_fd(self) -> int:
        """the spare blocks' memory file as this process holds it, or -1"""

    @spares_fd.setter
    def spares_fd(self, arg: int, /) -> None: ...

    @property
    def digest(self) -> int: ...

class PassStart:
    """What a pass starts with (Batches' start() returns one)."""

    def __init__(self, loader: object, first: int, replay: int, builder: object | None, pad_variable: bool) -> None: ...

    @property
    def loader(self) -> object:
        """the Loader the pass runs on"""

    @property
    def first(self) -> int:
        """the epoch's batch the pass starts at"""

    @property
    def replay(self) -> int:
        """batches loaded and dropped before the first delivered"""

    @property
    def builder(self) -> object:
        """what builds each batch (.build(fields, lengths, pad)), or None"""

    @property
    def pad_variable(self) -> bool:
        """variable fields come as (padded tensor, lengths)"""

class Batches:
    def __init__(self, start: object, on_error: object) -> None: ...

    def __iter__(self) -> object: ...

    def __next__(self) -> object: ...

    def rethrow(self) -> None: ...

    def raise_later(self, errors: list) -> None:
        """raises these exceptions one per next(), before the pass goes on"""

    def close(self) -> None: ...

    @property
    def record_fingerprints(self) -> bool:
        """
        export each batch's stream fingerprints (position.last_fingerprints), for a trace
        """

    @record_fingerprints.setter
    def record_fingerprints(self, arg: bool, /) -> None: ...

    @property
    def position(self) -> object:
        """its PassPosition, which outlives it (what a DataLoader keeps)"""

BUSY: str = ...

def draw_base_seed(who: str) -> int:
    """A base seed drawn from the OS and announced on stderr."""

def batches_per_epoch(samples: int, batch_size: int, drop_last: bool) -> int:
    """
    Batches of `batch_size` that `samples` samples make (batch_sampler.h): the last one short, or dropped with drop_last.
    """

def epoch_batches(options: LoaderOptions, size: int) -> int:
    """
    Batches per epoch on one rank under the built-in samplers (options: batch_size, drop_last, rank, world_size, partition).
    """

def epoch_order(options: LoaderOptions, size: int, epoch: int) -> Annotated[NDArray[numpy.uint64], dict(shape=(None,))]:
    """
    This rank's sample order in `epoch` under the built-in samplers (options: shuffle, order, seed, rank, world_size, partition, and batch_size and drop_last for the elastic partition), before batching.
    """

class LedgerEntry:
    """One sample of a step, as seedloader/ledger.h computes it."""

    @property
    def epoch(self) -> int: ...

    @property
    def step(self) -> int: ...

    @property
    def rank(self) -> int: ...

    @property
    def worker(self) -> int:
        """The worker that fills it when the epoch runs from its first batch."""

    @property
    def slot(self) -> int:
        """Its place in the rank's batch."""

    @property
    def index(self) -> int: ...

    @property
    def stream_epoch(self) -> int:
        """The epoch its stream is keyed by: epoch, or a mixture source's."""

    @property
    def source(self) -> int:
        """A mixture's sample: its source's position in LedgerMixture.names."""

    @property
    def source_index(self) -> int:
        """A mixture's sample: its index in its source."""

    @property
    def stream(self) -> list[int]:
        """The stream's spawn key (derive.h)."""

    @property
    def fingerprint(self) -> int | None:
        """The stream's state before the sample (seeding="sample" only)."""

    @property
    def skipped(self) -> bool:
        """Declared skipped: not delivered."""

def ledger(options: LoaderOptions, size: int, epoch: int, first_step: int, end_step: int, rank: int | None = None, skipped_only: bool = False, mixture: LedgerMixture | None = None, dataset: Dataset | None = None) -> list[LedgerEntry]:
    """
    seedloader/ledger.h: a LedgerEntry for each sample of steps [first_step, end_step) of `epoch`, every rank or `rank`, under the built-in samplers or a mixture's order (a LedgerMixture); skipped_only: only those declared skipped; dataset: seedloader's own data set the loader reads, whose shards a shard order (order="shards") is made of.
    """

def epoch_step_ranges(first: int, end: int, per_epoch: int) -> list[list[int]]:
    """
    Global steps [first, end) as at most three (epoch, first, end[, epochs]) ranges of epochs of per_epoch steps (loader_options.h's epoch_step_ranges).
    """

class SeedScope(enum.Enum):
    worker = 0

    sample = 1

class BadSample(enum.Enum):
    raise_error = 0

    skip = 1

class Partition(enum.Enum):
    strided = 0

    elastic = 1

class ShuffleOrder(enum.Enum):
    numpy = 0

    torch = 1

    shards = 2

class LoaderOptions:
    def __init__(self) -> None: ...

    @property
    def batch_size(self) -> int: ...

    @batch_size.setter
    def batch_size(self, arg: int, /) -> None: ...

    @property
    def num_workers(self) -> int: ...

    @num_workers.setter
    def num_workers(self, arg: int, /) -> None: ...

    @property
    def prefetch(self) -> int: ...

    @prefetch.setter
    def prefetch(self, arg: int, /) -> None: ...

    @property
    def shuffle(self) -> bool: ...

    @shuffle.setter
    def shuffle(self, arg: bool, /) -> None: ...

    @property
    def order(self) -> ShuffleOrder: ...

    @order.setter
    def order(self, arg: ShuffleOrder, /) -> None: ...

    @property
    def shuffle_block(self) -> int: ...

    @shuffle_block.setter
    def shuffle_block(self, arg: int, /) -> None: ...

    @property
    def seed(self) -> int | None: ...

    @seed.setter
    def seed(self, value: int | None) -> None: ...

    @property
    def drop_last(self) -> bool: ...

    @drop_last.setter
    def drop_last(self, arg: bool, /) -> None: ...

    @property
    def persistent_workers(self) -> bool: ...

    @persistent_workers.setter
    def persistent_workers(self, arg: bool, /) -> None: ...

    @property
    def rank(self) -> int: ...

    @rank.setter
    def rank(self, arg: int, /) -> None: ...

    @property
    def world_size(self) -> int: ...

    @world_size.setter
    def world_size(self, arg: int, /) -> None: ...

    @property
    def partition(self) -> Partition: ...

    @partition.setter
    def partition(self, arg: Partition, /) -> None: ...

    @property
    def canonical_nodes(self) -> int: ...

    @canonical_nodes.setter
    def canonical_nodes(self, arg: int, /) -> None: ...

    @property
    def nodes(self) -> int: ...

    @nodes.setter
    def nodes(self, arg: int, /) -> None: ...

    @property
    def seeding(self) -> SeedScope: ...

    @seeding.setter
    def seeding(self, arg: SeedScope, /) -> None: ...

    @property
    def on_bad_sample(self) -> BadSample: ...

    @on_bad_sample.setter
    def on_bad_sample(self, arg: BadSample, /) -> None: ...

    @property
    def worker_command(self) -> list[str]: ...

    @worker_command.setter
    def worker_command(self, arg: Sequence[str], /) -> None: ...

    @property
    def worker_fds(self) -> list[int]: ...

    @worker_fds.setter
    def worker_fds(self, arg: Sequence[int], /) -> None: ...

    @property
    def skip_steps(self) -> list[list[int]]:
        """
        (epoch, first step, end step[, epochs]) ranges not delivered (LoaderOptions::skip): steps [first, end) of `epochs` epochs (1 when left out) from `epoch`
        """

    @skip_steps.setter
    def skip_steps(self, arg: Sequence[Sequence[int]], /) -> None: ...

    @property
    def skip_samples(self) -> list[int]:
        """sample indices left out of their batches (LoaderOptions::skip)"""

    @skip_samples.setter
    def skip_samples(self, arg: Sequence[int], /) -> None: ...

    @property
    def timeout(self) -> float: ...

    @timeout.setter
    def timeout(self, arg: float, /) -> None: ...

    @property
    def mixup_alpha(self) -> float: ...

    @mixup_alpha.setter
    def mixup_alpha(self, arg: float, /) -> None: ...

    @property
    def cutmix_alpha(self) -> float: ...

    @cutmix_alpha.setter
    def cutmix_alpha(self, arg: float, /) -> None: ...

    @property
    def cutmix_prob(self) -> float: ...

    @cutmix_prob.setter
    def cutmix_prob(self, arg: float, /) -> None: ...

    @property
    def num_classes(self) -> int: ...

    @num_classes.setter
    def num_classes(self, arg: int, /) -> None: ...

def default_canonical_nodes(options: LoaderOptions) -> int:
    """
    The canonical nodes of a run that names none: options.nodes under partition elastic with a shuffled order 'shards' on more than one node, else 0.
    """

def validate(options: LoaderOptions, dataset_size: int) -> None:
    """
    ConfigError naming the first invalid option, as the engine checks them.
    """

class Loader:
    def __init__(self, dataset: object, options: LoaderOptions, worker_init_fn: object | None, format: str, batch_plan: object | None, handoff: object | None = None, adopt: object | None = None) -> None: ...

    def stop(self) -> None: ...

    def begin_pass(self) -> int:
        """numbers a new pass: older ones find themselves replaced"""

    def close(self) -> None: ...

    def __len__(self) -> int: ...

    def set_epoch(self, arg: int, /) -> None: ...

    def resume(self, epoch: int, first: int, end: int | None = None) -> None:
        """
        the next pass runs epoch's batches [first, end) (end None: to the epoch's end)
        """

    @property
    def epoch(self) -> int: ...

    @property
    def base_seed(self) -> int: ...

    @property
    def skipped_samples(self) -> int: ...

    @property
    def dataset(self) -> object: ...

    @property
    def busy(self) -> bool:
        """whether a thread waits in it for a batch"""

    def release_workers(self) -> list[int]:
        """
        hands the running workers over (each runs handoff) and returns their pids, to adopt or reap; the epoch in progress cannot go on
        """

    def worker_pids(self) -> list[int]: ...

    def serve_worker(self, launch: WorkerLaunch) -> None:
        """
        In a worker program (LoaderOptions.worker_command): serves the worker `launch` names, on the parent's shared memory; never returns.
        """

    def shared_memory(self) -> tuple[int, int]:
        """(address, bytes) of the shared region holding every slot"""

def check_mixture_schedule(names: Sequence[str], points: Sequence[tuple[int, Sequence[float]]], interpolate: bool = False) -> None:
    """ConfigError unless (names, [(step, weights)]) is a valid schedule."""

class MixtureState:
    """
    A mixture loader's saved position (mixture_dataset.h): state_dict()['mixture'].
    """

    @staticmethod
    def parse(text: str, where: str) -> MixtureState:
        """
        The state from its JSON (mixture_state_json.h); ConfigError naming `where` and what is wrong: not JSON, nested too deep, a field missing or of another type, a count that is not an unsigned integer, a bad history.
        """

    def json(self) -> str:
        """The state as JSON, state_dict()['mixture']'s."""

class MixtureOrder:
    """A mixture's order for one rank (mixture_dataset.h)."""

    def __init__(self, names: Sequence[str], sizes: Sequence[int], history: Sequence[tuple[int, Sequence[str], Sequence[tuple[int, Sequence[float]]], Sequence[int], bool]], samples_per_epoch: int, batch_size: int, world_size: int, rank: int, seed: int, known: Sequence[tuple[int, Sequence[int]]] = []) -> None: ...

    @property
    def steps_per_epoch(self) -> int: ...

    def order(self, epoch: int) -> tuple[Annotated[NDArray[numpy.uint64], dict(shape=(None,))], Annotated[NDArray[numpy.uint64], dict(shape=(None,))]]:
        """(indices, their source epochs) of this rank in `epoch`."""

    def consumed_at(self, step: int) -> list[int]: ...

    def check_position(self, epoch_first_step: int, step: int) -> None:
        """
        ConfigError unless a saved state could be at (its epoch's first step, step): checked before consumed_at(step) walks from the first.
        """

    def global_batch(self, step: int) -> list[tuple[int, int, int]]:
        """[(source, source epoch, index)] of global step `step`."""

    def state(self, epoch_first_step: int, step: int) -> MixtureState:
        """
        The saved position of a loader over this order's mixture whose epoch began at global step `epoch_first_step` and that has taken the steps before `step`.
        """

    def resumed(self, saved: MixtureState, epoch: int | None = None) -> tuple[list[tuple[int, list[str], list[tuple[int, list[float]]], list[int], bool]], list[tuple[int, list[int]]]]:
        """
        (history, known) of this order's mixture continuing from `saved` (resumed_history): ConfigError for a state another mixture saved (a source gone or resized, another samples_per_epoch), a position no epoch has or not `epoch`'s, counts its history does not give.
        """

    def moved_index(self, saved: MixtureState, index: int) -> int:
        """
        Index `index` of the mixture `saved` was taken of as an index of this order's: the same source's sample.
        """

class LedgerMixture:
    """A mixture's shape, whose order the ledger computes (ledger.h)."""

    def __init__(self, names: Sequence[str], sizes: Sequence[int], history: Sequence[tuple[int, Sequence[str], Sequence[tuple[int, Sequence[float]]], Sequence[int], bool]], samples_per_epoch: int, known: Sequence[tuple[int, Sequence[int]]] = []) -> None: ...

class MixtureDataset(Dataset):
    def __init__(self, names: Sequence[str], datasets: Sequence[Dataset], history: Sequence[tuple[int, Sequence[str], Sequence[tuple[int, Sequence[float]]], Sequence[int], bool]], samples_per_epoch: int, known: Sequence[tuple[int, Sequence[int]]] = []) -> None: ...

    def locate(self, index: int) -> tuple[int, int]: ...

def audit_trace(path: str, dataset_size: int | None, allow_missing: int = 0, global_batch: int | None = None, source_sizes: Mapping[str, int] = {}, mixture_state: str = '') -> str:
    """The seed audit of a trace file as the JSON report text."""
