"""Where this process runs: its rank and world size (torch.distributed's, else
the launcher's environment) and the nodes the world spans; each source of them
printed once per process.
"""
import os
import sys

from seedloader._errors import ConfigError

_announced: set = set()  # the sources of rank and world size already printed


def distributed_context():
    """(rank, world_size, source): torch.distributed's when it is initialised, else
    the launcher's environment (torchrun's RANK/WORLD_SIZE, Slurm's
    SLURM_PROCID/SLURM_NTASKS, OpenMPI's OMPI_COMM_WORLD_RANK/SIZE), else (0, 1)."""
    dist = process_group()
    if dist is not None:
        return dist.get_rank(), dist.get_world_size(), "torch.distributed"
    for rank_var, size_var in (("RANK", "WORLD_SIZE"), ("SLURM_PROCID", "SLURM_NTASKS"),
                               ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")):
        if rank_var in os.environ and size_var in os.environ:
            try:
                rank, size = int(os.environ[rank_var]), int(os.environ[size_var])
            except ValueError:
                raise ConfigError("%s=%r and %s=%r are not a rank and a world size"
                                  % (rank_var, os.environ[rank_var], size_var,
                                     os.environ[size_var])) from None
            return rank, size, "%s/%s" % (rank_var, size_var)
    return 0, 1, "no torch.distributed or launcher environment"


def process_group():
    """torch.distributed when this process has initialised its process group
    (imported by someone already), else None."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist
    return None


def node_count(world_size):
    """The physical nodes a world of `world_size` ranks runs on, from the launcher:
    torchrun's LOCAL_WORLD_SIZE or OpenMPI's OMPI_COMM_WORLD_LOCAL_SIZE (ranks per
    node), else Slurm's SLURM_NNODES; 0 when none says (or the ranks per node do not
    divide the world)."""
    for variable in ("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"):
        local = os.environ.get(variable, "")
        if local.isdigit() and int(local) > 0:
            return world_size // int(local) if world_size % int(local) == 0 else 0
    nodes = os.environ.get("SLURM_NNODES", "")
    return int(nodes) if nodes.isdigit() else 0


def announce(rank, world_size, source):
    """Prints where rank and world size came from, once per source and process."""
    if source in _announced:
        return
    _announced.add(source)
    # One write, so lines from several ranks do not run together.
    sys.stderr.write("seedloader: rank %d of %d (from %s)\n" % (rank, world_size, source))
