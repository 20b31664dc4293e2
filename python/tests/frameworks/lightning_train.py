"""A tiny Lightning training fed by seedloader.DataLoader, recording what each
rank trained on: run by test_frameworks.py as a user runs a script.

Usage: lightning_train.py OUT --strategy auto|ddp|ddp_spawn [--devices N]
         [--build before|hook] [--epochs E] [--set-epoch] [--workers W]
         [--resume CKPT] [--save-every-steps K] [--no-seed]
Each rank writes OUT/rank{R}.jsonl: one line per training step,
{"epoch": trainer epoch, "loader_epoch": ..., "indices": [...], "seed": the
loader's base seed}; and, with --save-every-steps, checkpoints OUT/step{N}.ckpt.
--no-seed: the loader is made without seed=, as in a one-line swap for torch's."""
import argparse
import json
import os
import sys

import torch
import lightning.pytorch as pl

import torch113_shim  # noqa: F401  (Lightning on Debian's torch 1.13)

import seedloader as sl
from indexed import Indexed
from leave import leave


def make_loader(args):
    return sl.DataLoader(Indexed(), batch_size=4, shuffle=True,
                         seed=None if args.no_seed else 7, num_workers=args.workers)


class Model(pl.LightningModule):
    def __init__(self, args, loader=None):
        super().__init__()
        self.args, self.loader = args, loader
        self.layer = torch.nn.Linear(4, 1)
        self.log_file = None

    def train_dataloader(self):
        if self.loader is None:
            self.loader = make_loader(self.args)
        return self.loader

    def on_train_epoch_start(self):
        if self.args.set_epoch:
            self.loader.set_epoch(self.current_epoch)

    def training_step(self, batch, batch_idx):
        x, index = batch
        if self.log_file is None:
            self.log_file = open(os.path.join(self.args.out, "rank%d.jsonl"
                                              % self.global_rank), "a")
        self.log_file.write(json.dumps({"epoch": self.current_epoch,
                                        "loader_epoch": self.loader.epoch,
                                        "step": self.global_step,
                                        "indices": index.tolist(),
                                        "seed": self.loader.seed}) + "\n")
        self.log_file.flush()
        return self.layer(x).pow(2).mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--strategy", default="auto")
    p.add_argument("--devices", type=int, default=1)
    p.add_argument("--build", choices=("before", "hook"), default="before")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--set-epoch", action="store_true")
    p.add_argument("--resume")
    p.add_argument("--save-every-steps", type=int, default=0)
    p.add_argument("--no-seed", action="store_true")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    loader = make_loader(args) if args.build == "before" else None
    model = Model(args, loader)
    callbacks = []
    if args.save_every_steps:
        callbacks.append(pl.callbacks.ModelCheckpoint(
            dirpath=args.out, filename="{step}", every_n_train_steps=args.save_every_steps,
            save_top_k=-1, save_on_train_epoch_end=False))
    trainer = pl.Trainer(accelerator="cpu", devices=args.devices, strategy=args.strategy,
                         max_epochs=args.epochs, logger=False, enable_progress_bar=False,
                         enable_model_summary=False, enable_checkpointing=bool(callbacks),
                         callbacks=callbacks, num_sanity_val_steps=0)
    if args.build == "before":
        trainer.fit(model, loader, ckpt_path=args.resume)
    else:
        trainer.fit(model, ckpt_path=args.resume)
    return leave()


if __name__ == "__main__":
    sys.exit(main())
