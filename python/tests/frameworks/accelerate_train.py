"""A tiny accelerate training and evaluation fed by seedloader.DataLoader,
recording what each process trained on: run by test_frameworks.py with 1 process
or under torchrun with 2, as users run accelerate scripts.

Usage: accelerate_train.py OUT [--build before|after] [--epochs E]
         [--save-at STEP] [--resume] [--skip N] [--eval-partition strided|elastic]
         [--no-seed]
--build: the loaders made before Accelerator() (and so before the process group)
or after it. Each process writes OUT/rank{R}.jsonl, one line per training step
({"epoch", "loader_epoch", "step", "indices", "seed": the training loader's base
seed}); process 0 writes OUT/eval.json
(what gather_for_metrics returned over the evaluation loader). --save-at: after
that step, accelerator.save_state(OUT/state) with the loader registered for
checkpointing; --resume: load_state(OUT/state) first and continue. --skip:
accelerator.skip_first_batches(loader, N), iterated; OUT/skip.txt gets the error.
--no-seed: the loaders are made without seed=, as in a one-line swap for torch's."""
import argparse
import json
import os
import sys

import torch
from accelerate import Accelerator

import seedloader as sl
from indexed import Indexed
from leave import leave


TRAIN, EVAL = 64, 251


def loaders(args):
    seed = None if args.no_seed else 7
    train = sl.DataLoader(Indexed(TRAIN), batch_size=4, shuffle=True, seed=seed)
    evaluation = sl.DataLoader(Indexed(EVAL), batch_size=4, seed=seed,
                               partition=args.eval_partition,
                               seeding="sample" if args.eval_partition == "elastic"
                               else "worker")
    return train, evaluation


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--build", choices=("before", "after"), default="before")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--save-at", type=int, default=-1)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--skip", type=int, default=0)
    p.add_argument("--eval-partition", default="strided")
    p.add_argument("--no-seed", action="store_true")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.build == "before":
        train, evaluation = loaders(args)
    accelerator = Accelerator(cpu=True)
    if args.build == "after":
        train, evaluation = loaders(args)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    model, optimizer, train, evaluation = accelerator.prepare(model, optimizer, train,
                                                              evaluation)
    accelerator.register_for_checkpointing(train)
    state_dir = os.path.join(args.out, "..", "state")
    if args.resume:
        accelerator.load_state(state_dir)
    if args.skip:
        try:
            for _ in accelerator.skip_first_batches(train, args.skip):
                pass
            message = "no error"
        except sl.ConfigError as e:
            message = "ConfigError: %s" % e
        with open(os.path.join(args.out, "skip.txt"), "w") as f:
            f.write(message)
        return 0
    rank = accelerator.process_index
    log = open(os.path.join(args.out, "rank%d.jsonl" % rank), "a")
    step = train.epoch * len(train) + train.state_dict()["_num_yielded"]
    for epoch in range(train.epoch, args.epochs):
        for x, index in train:
            log.write(json.dumps({"epoch": epoch, "loader_epoch": train.epoch,
                                  "step": step, "indices": index.tolist(),
                                  "seed": train.seed}) + "\n")
            loss = model(x).pow(2).mean()
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            step += 1
            if step == args.save_at:
                accelerator.save_state(state_dir)
    gathered = []
    for x, index in evaluation:
        gathered += accelerator.gather_for_metrics(index).tolist()
    if accelerator.is_main_process:
        with open(os.path.join(args.out, "eval.json"), "w") as f:
            json.dump({"gathered": gathered}, f)
    return leave(log)


if __name__ == "__main__":
    sys.exit(main())
