"""One base seed on every rank when the user gave none.

A loader without seed= (or generator=) draws its base seed from the OS in each
process apart, and its shuffled order is drawn from that seed: two ranks would
shard two different permutations and train overlapping samples, in silence. So a
drawn seed is marked (DrawnSeed: an int, kept when a framework rebuilds the loader
from vars() and the signature, when it is pickled, and in a state_dict() taken
before the ranks agreed), and when a pass over more than one rank starts whose
order is drawn from the seed (a shuffle, a Mixture), every rank takes rank 0's,
broadcast over torch.distributed's process group: that first pass is a collective
every rank makes, as the first batch of a DistributedDataParallel step is. Without
a process group to agree through, such a pass is refused by name: a loader cannot
tell that another process drew the same. A pass whose order does not depend on
the seed (no shuffle) keeps each rank's own: its streams are keyed by rank anyway,
and an evaluation loader that some ranks iterate alone must not wait on the others.
"""
import sys

from seedloader._errors import ConfigError


class DrawnSeed(int):
    """A base seed this process drew, not yet known to be every rank's."""
    __slots__ = ()


def agreed_seed(seed, rank, world_size, source, order_depends_on_seed):
    """The base seed a pass of rank `rank` of `world_size` (taken from `source`, as
    distributed_context() names it) runs with: `seed` itself when it was given, one
    rank runs or the order does not depend on it; rank 0's drawn seed, as a plain
    int, when torch.distributed is initialised (a collective: every rank calls it
    when its pass starts).
    REQUIRES: 0 <= rank < world_size."""
    if not isinstance(seed, DrawnSeed) or world_size == 1 or not order_depends_on_seed:
        return seed
    # "torch.distributed and arguments": rank and world size given, and agreeing
    # with the live process group (DataLoader._placement checks that).
    if not source.startswith("torch.distributed"):
        raise ConfigError(
            "DataLoader: no seed= was given, so rank %d of %d (from %s) drew its own "
            "base seed, and its shuffled order would overlap the other ranks'; there "
            "is no torch.distributed process group to agree on one through. Pass the "
            "same seed= on every rank (seed=%d repeats this rank's draw), or start "
            "iterating after torch.distributed.init_process_group()"
            % (rank, world_size, source, int(seed)))
    import torch.distributed as dist
    box = [int(seed)]
    dist.broadcast_object_list(box, src=0)
    agreed = int(box[0])
    # One write, so lines from several ranks do not run together.
    sys.stderr.write("seedloader: rank %d of %d uses rank 0's base seed %d (no seed= "
                     "given; agreed over torch.distributed); seed=%d repeats this run\n"
                     % (rank, world_size, agreed, agreed))
    return agreed
