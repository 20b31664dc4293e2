"""A plain torch DDP training fed by seedloader.DataLoader, as people run it under
torchrun: the loader built before init_process_group, with seedloader's own
sharding or with a user's DistributedSampler (set_epoch each epoch, as torch's
docs say). Run by test_frameworks.py.

Usage: torchrun_train.py OUT [--sampler] [--epochs E] [--workers W] [--no-seed]
Each rank writes OUT/rank{R}.jsonl, one line per step ({"epoch", "loader_epoch",
"step", "indices", "seed": the loader's base seed}). --no-seed: the loader is made
without seed=, as in a one-line swap for torch's."""
import argparse
import json
import os
import sys

import torch
import torch.distributed as dist

import seedloader as sl
from indexed import Indexed
from leave import leave


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--sampler", action="store_true")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--no-seed", action="store_true")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    dataset = Indexed()
    if args.sampler:
        # The sampler needs the process group; the loader does not.
        dist.init_process_group("gloo")
        sampler = torch.utils.data.distributed.DistributedSampler(dataset, shuffle=True,
                                                                  seed=7)
        loader = sl.DataLoader(dataset, batch_size=4, sampler=sampler, seed=7,
                               num_workers=args.workers)
    else:
        loader = sl.DataLoader(dataset, batch_size=4, shuffle=True,
                               seed=None if args.no_seed else 7, num_workers=args.workers)
        dist.init_process_group("gloo")
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    log = open(os.path.join(args.out, "rank%d.jsonl" % dist.get_rank()), "w")
    step = 0
    for epoch in range(args.epochs):
        if args.sampler:
            sampler.set_epoch(epoch)
        for x, index in loader:
            log.write(json.dumps({"epoch": epoch, "loader_epoch": loader.epoch,
                                  "step": step, "indices": index.tolist(),
                                  "seed": loader.seed}) + "\n")
            loss = model(x).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
    return leave(log)


if __name__ == "__main__":
    sys.exit(main())
