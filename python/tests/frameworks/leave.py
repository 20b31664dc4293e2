"""How the framework scripts end under a process group. torch 1.13's
ProcessGroupGloo destructor joins its threads while holding the GIL, and one of
them may be freeing a tensor, which needs the GIL: a rank that tears down a DDP
model's process group at the interpreter's exit can hang there, or abort
("terminate called without an active exception"). Seen here about one run in
ten. Once every rank is done and its output closed, the rank leaves without that
teardown."""
import os
import sys

import torch


def leave(*files):
    """Closes `files`; under a process group, waits for every rank and ends the
    process (status 0). Returns 0 otherwise."""
    for f in files:
        f.close()
    if not torch.distributed.is_initialized():
        return 0
    torch.distributed.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
