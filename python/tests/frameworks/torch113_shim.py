"""What Lightning 2.2 needs of torch that Debian's torch 1.13 cannot give under
Python 3.11: importing torch.distributed._shard fails there (a dataclass with a
mutable default, refused since Python 3.11), and LightningModule.__init__ imports
it to register ShardedTensor state-dict hooks. No model here holds a
ShardedTensor, so the hooks are skipped; with a torch that imports it (>= 2.1
Lightning skips them itself) this shim does nothing."""
import sys

import torch


def apply():
    try:
        import torch.distributed._shard  # noqa: F401
        return
    except ValueError:
        sys.modules.pop("torch.distributed._shard", None)
    from lightning.pytorch.core.module import LightningModule
    LightningModule._register_sharded_tensor_state_dict_hooks_if_available = (
        lambda self: None)


apply()
del torch
