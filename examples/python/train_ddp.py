"""Data-parallel training with torch DDP, fed by seedloader.

Each rank builds its own seedloader.DataLoader; once the process group is up, the
loader takes rank and world size from torch.distributed and reads its 1/world_size
share of every epoch. Two ways to start it:

    python train_ddp.py --spawn 2 --data /tmp/ddpdata --make-data 256
    python -m torch.distributed.run --nproc_per_node 2 train_ddp.py --data /tmp/ddpdata

(torchrun of torch 1.13 under Python 3.11, Debian 12's, fails parsing its default
--redirects 0; add `--redirects 1 --tee 1` there.)

Backend nccl with one GPU per rank (LOCAL_RANK) when CUDA is available, else gloo.
Rank 0 saves a checkpoint after every epoch (and every --checkpoint-every steps);
--resume continues from it.

With --partition elastic the data stream is a function of the global batch
(--global-batch-size G, G / world_size per rank), so a run saved at one world size
resumes exactly at another:

    python train_ddp.py --spawn 4 --partition elastic --global-batch-size 16 \
        --data /tmp/ddpdata --make-data 256 --steps 6 --checkpoint ck.pt
    python train_ddp.py --spawn 2 --partition elastic --global-batch-size 16 \
        --data /tmp/ddpdata --steps 12 --checkpoint ck.pt --resume
"""
import argparse
import hashlib
import json
import os
import socket

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

import seedloader


def make_images(root, n, classes=4, size=48):
    """n deterministic JPEGs: class c is a noisy image with a bright band at row c."""
    from PIL import Image
    rng = np.random.default_rng(0)
    for i in range(n):
        c = i % classes
        img = rng.integers(0, 96, (size, size, 3), dtype=np.uint8)
        img[c * size // classes:(c + 1) * size // classes, :, c % 3] = 255
        os.makedirs(os.path.join(root, "class%d" % c), exist_ok=True)
        Image.fromarray(img).save(os.path.join(root, "class%d" % c, "%05d.jpg" % i))


def small_cnn(classes=4):
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, classes))


def train(args):
    # RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT come from the launcher (torchrun,
    # or main() below before spawning): init_process_group reads them ("env://").
    cuda = torch.cuda.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if cuda:
        torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")

    if rank == 0 and args.make_data and not os.path.exists(args.data):
        make_images(args.data, args.make_data)
    dist.barrier()  # the images exist before any rank lists them

    batch_size, extra = args.batch_size, {}
    if args.partition == "elastic":
        # The global batch is fixed; each rank takes its share of every one.
        if args.global_batch_size % world:
            raise SystemExit("--global-batch-size %d is not a multiple of the %d ranks"
                             % (args.global_batch_size, world))
        batch_size = args.global_batch_size // world
        extra = dict(partition="elastic", seeding="sample")
    # No rank or world_size given: the loader asks torch.distributed.
    loader = seedloader.DataLoader(
        seedloader.ImageFolder(args.data, transform="rrc:32,hflip,normalize:imagenet"),
        batch_size=batch_size, num_workers=2, shuffle=True, seed=args.seed,
        drop_last=True, persistent_workers=True, **extra)
    torch.manual_seed(args.seed)  # the same initial weights on every rank
    model = DDP(small_cnn().to(device), device_ids=[local_rank] if cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    step = 0  # optimizer steps taken, by every rank together
    if args.resume:
        # Every rank reads rank 0's file, mapping its tensors onto this rank's device.
        ckpt = torch.load(args.checkpoint, map_location=device)
        model.module.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        # Every rank is at the same position; under the elastic partition the state
        # may come from another world size.
        loader.load_state_dict(ckpt["loader"])
        step = ckpt.get("step", 0)
        if rank == 0:
            print("resumed from %s at epoch %d, step %d"
                  % (args.checkpoint, loader.epoch, step))
    total_steps = args.steps or args.epochs * len(loader)
    log = open("%s.rank%d" % (args.log_steps, rank), "a") if args.log_steps else None

    def save():
        if rank == 0:
            ckpt = {"model": model.module.state_dict(), "step": step,
                    "optimizer": optimizer.state_dict(), "loader": loader.state_dict()}
            torch.save(ckpt, args.checkpoint + ".tmp")
            os.replace(args.checkpoint + ".tmp", args.checkpoint)  # never half-written
        dist.barrier()  # the checkpoint is complete before any rank goes on

    while step < total_steps:
        # Each iteration runs the next epoch with a new shuffle and new random
        # streams (or the rest of the epoch a resumed state stopped in).
        model.train()
        totals = torch.zeros(3, device=device)  # loss sum, correct, samples
        for batch in loader:
            x = batch["image"].to(device, non_blocking=True)
            y = batch["label"].to(device, non_blocking=True)
            out = model(x)
            loss = F.cross_entropy(out, y)
            optimizer.zero_grad()
            loss.backward()  # DDP averages the gradients across ranks here
            optimizer.step()
            totals += torch.stack([loss.detach() * len(y), (out.argmax(1) == y).sum(),
                                   torch.tensor(len(y), device=device)])
            step += 1
            if log is not None:  # what this rank trained on in this step
                log.write(json.dumps({"step": step, "epoch": loader.epoch, "rank": rank,
                                      "indices": loader.last_indices,
                                      "content": [hashlib.sha1(row.cpu().numpy().tobytes())
                                                  .hexdigest()[:16] for row in batch["image"]]})
                          + "\n")
            if step == total_steps or (args.checkpoint_every and
                                       step % args.checkpoint_every == 0):
                save()
            if step == total_steps:
                break
        dist.all_reduce(totals)  # the epoch (or its part) over all ranks, for the log
        if rank == 0:
            loss_sum, correct, n = totals.tolist()
            print("epoch %d: loss %.4f  accuracy %.3f  (%d samples, %d ranks)"
                  % (loader.epoch, loss_sum / n, correct / n, n, world), flush=True)
        if step < total_steps:
            save()
    if log is not None:
        log.close()

    loader.close()
    # Every rank past its last collective before any tears down, and DDP's reducer
    # (which holds the process group) gone first: torch 1.13's gloo group can
    # otherwise wait forever at exit for a peer that already left.
    dist.barrier()
    model = optimizer = None
    dist.destroy_process_group()


def spawned(rank, world, args):
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world))
    train(args)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="an ImageFolder (class dirs of JPEGs)")
    p.add_argument("--make-data", type=int, default=0, metavar="N",
                   help="write N small JPEGs in 4 classes to --data if it is missing")
    p.add_argument("--spawn", type=int, default=1, metavar="RANKS",
                   help="start this many ranks with torch.multiprocessing.spawn "
                        "(ignored under torchrun)")
    p.add_argument("--epochs", type=int, default=2, help="in all, resumed ones included")
    p.add_argument("--steps", type=int, default=0,
                   help="optimizer steps in all, resumed ones included (instead of --epochs)")
    p.add_argument("--batch-size", type=int, default=32, help="per rank (strided)")
    p.add_argument("--partition", choices=("strided", "elastic"), default="strided",
                   help="strided: torch's DistributedSampler split; elastic: every "
                        "global batch the same at any world size (per-sample seeding)")
    p.add_argument("--global-batch-size", type=int, default=32,
                   help="elastic: samples per step over all ranks")
    p.add_argument("--checkpoint-every", type=int, default=0, metavar="STEPS",
                   help="also save every STEPS steps (the end of each epoch always)")
    p.add_argument("--log-steps", default="", metavar="PREFIX",
                   help="each rank appends what it trained on per step to PREFIX.rankR")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--checkpoint", default="ddp_checkpoint.pt")
    p.add_argument("--resume", action="store_true", help="continue from --checkpoint")
    args = p.parse_args()

    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        train(args)  # started by torchrun: this process is one rank
        return
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    if "MASTER_PORT" not in os.environ:
        with socket.socket() as s:  # a free port for the rendezvous
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])
    mp.spawn(spawned, args=(args.spawn, args), nprocs=args.spawn)


if __name__ == "__main__":
    main()
