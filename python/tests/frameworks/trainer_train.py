"""A tiny Hugging Face Trainer training fed by seedloader.DataLoader, recording
what each rank trained on: run by test_frameworks.py as a user runs it, alone or
under torchrun (2 CPU processes, gloo). Nothing is downloaded: the model is a
torch module whose forward returns {"loss": ...}, the data is made here.

Usage: trainer_train.py OUT [--epochs E] [--save-steps K] [--stop-at K]
         [--resume [FOLDER]] [--ignore-data-skip] [--no-callback] [--no-seed]
The loader is returned from the Trainer's get_train_dataloader(), with
seedloader.transformers.ResumeCallback among the Trainer's callbacks (not with
--no-callback). Each process appends to OUT/rank{R}.jsonl one line per training
step: {"epoch": the Trainer's, "loader_epoch", "step": the global step it trains,
"indices", "seed": the loader's base seed}. --save-steps: checkpoints
OUT/trainer/checkpoint-N every K steps; --stop-at: training stops after step K
(saved first when K is a multiple of --save-steps). --resume:
trainer.train(resume_from_checkpoint=FOLDER, or True: the last checkpoint in
OUT/trainer); --ignore-data-skip: TrainingArguments(ignore_data_skip=True). A
seedloader.ConfigError that train() raises is written to OUT/error.txt and the
script ends with status 0. --no-seed: the loader is made
without seed=, as in a one-line swap for torch's."""
import argparse
import json
import os
import sys
import warnings

import torch
import transformers

import seedloader as sl
from seedloader.transformers import ResumeCallback
from indexed import Indexed
from leave import leave


def restore_storage_on_cpu_n():
    """Debian's torch 1.13 cannot load what is mapped to torch.device("cpu", N)
    ("don't know how to restore data location of ... cpu:1"): the device
    accelerate 0.31 gives process N of a CPU run, onto which the Trainer loads the
    optimizer state when it resumes. That location is the CPU; with a torch that
    restores it, nothing changes."""
    from torch import serialization
    try:
        with warnings.catch_warnings():  # torch 2 calls TypedStorage deprecated
            warnings.simplefilter("ignore")
            serialization.default_restore_location(torch.zeros(1).storage(), "cpu:1")
    except RuntimeError:
        serialization.register_package(
            0, lambda storage: None,
            lambda storage, location: storage if location.startswith("cpu:") else None)


class Samples(Indexed):
    """Indexed's samples as dicts: the Trainer calls model(**batch)."""

    def __getitem__(self, i):
        x, index = super().__getitem__(i)
        return {"x": x, "index": index}


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def forward(self, x, index=None):
        return {"loss": self.layer(x).pow(2).mean()}


class Trainer(transformers.Trainer):
    def __init__(self, options, **kwargs):
        super().__init__(**kwargs)
        self.options, self.loader, self.steps = options, None, None

    def get_train_dataloader(self):
        if self.loader is None:
            self.loader = sl.DataLoader(Samples(), batch_size=4, shuffle=True,
                                        seed=None if self.options.no_seed else 7)
        return self.loader

    def training_step(self, model, inputs, *args, **kwargs):
        if self.steps is None:
            self.steps = open(os.path.join(self.options.out, "rank%d.jsonl"
                                           % self.args.process_index), "a")
        self.steps.write(json.dumps({"epoch": int(self.state.epoch or 0),
                                     "loader_epoch": self.loader.epoch,
                                     "step": self.state.global_step,
                                     "indices": inputs["index"].tolist(),
                                     "seed": self.loader.seed}) + "\n")
        self.steps.flush()
        return super().training_step(model, inputs, *args, **kwargs)


class StopAt(transformers.TrainerCallback):
    def __init__(self, step):
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            control.should_training_stop = True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--save-steps", type=int, default=0)
    p.add_argument("--stop-at", type=int, default=0)
    p.add_argument("--resume", nargs="?", const=True, default=None)
    p.add_argument("--ignore-data-skip", action="store_true")
    p.add_argument("--no-callback", action="store_true")
    p.add_argument("--no-seed", action="store_true")
    options = p.parse_args()
    os.makedirs(options.out, exist_ok=True)
    error = os.path.join(options.out, "error.txt")
    if os.path.exists(error):  # a previous run's
        os.remove(error)
    transformers.logging.set_verbosity_error()
    restore_storage_on_cpu_n()
    args = transformers.TrainingArguments(
        output_dir=os.path.join(options.out, "trainer"), num_train_epochs=options.epochs,
        save_strategy="steps" if options.save_steps else "no",
        save_steps=options.save_steps or 500, logging_strategy="no", report_to=[],
        ignore_data_skip=options.ignore_data_skip, use_cpu=True, disable_tqdm=True,
        ddp_find_unused_parameters=False, learning_rate=0.01, seed=7)
    callbacks = [] if options.no_callback else [ResumeCallback()]
    if options.stop_at:
        callbacks.append(StopAt(options.stop_at))
    trainer = Trainer(options, model=Model(), args=args, callbacks=callbacks)
    try:
        trainer.train(resume_from_checkpoint=options.resume)
    except sl.ConfigError as e:
        with open(error, "w") as f:
            f.write(str(e))
    return leave(*[f for f in (trainer.steps,) if f is not None])


if __name__ == "__main__":
    sys.exit(main())
