"""seedloader.DataLoader under Hugging Face transformers' Trainer: ResumeCallback
keeps the loader's position in the Trainer's checkpoints and resumes the loader
there, so a run resumed mid-epoch trains exactly the batches the uninterrupted
run trained.

    class Trainer(transformers.Trainer):
        def get_train_dataloader(self):
            return loader                       # a seedloader.DataLoader
    trainer = Trainer(model, args, callbacks=[seedloader.transformers.ResumeCallback()])
    trainer.train(resume_from_checkpoint=...)

Saving: the Trainer calls on_save after writing checkpoint-N; the callback adds
seedloader_state.json there, {"global_step": N, "state": loader.state_dict()}
(the position is global, so one state resumes every rank; it is written by the
processes that write the Trainer's own files, args.should_save).

Resuming: on_train_begin reads that file from the folder the Trainer resumes
from and loads it: the loader continues the epoch after the batches it had
delivered, with the saved base seed (a loader made without seed= too), sampler
draws and skips. The Trainer then calls set_epoch(epoch), which keeps that
position, and accelerate's skip_first_batches(loader, n), which would build a
torch DataLoader over the loader's sampler (refused: it would load the data with
torch's workers and seeds); for a loader resumed here the Trainer's
skip_first_batches hands the loader back as it is, already past those batches.
The first step after the resume checks that the Trainer's epoch is the loader's.
TrainingArguments(ignore_data_skip=True) asks the Trainer not to restore the data
position: the callback then loads nothing, and the epoch starts over."""
import json
import os
import sys
import weakref

import transformers
import transformers.trainer
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from seedloader import DataLoader
from seedloader._errors import ConfigError

STATE_NAME = "seedloader_state.json"

# Loaders a ResumeCallback resumed from a checkpoint: the only ones the Trainer's
# skip_first_batches hands back as they are; everything else goes to accelerate's.
_resumed: "weakref.WeakSet[DataLoader]" = weakref.WeakSet()
_accelerate_skip = None  # accelerate's skip_first_batches, once replaced


class ResumeCallback(transformers.TrainerCallback):
    """Saves the train loader's state_dict() in each checkpoint folder and loads it
    when the Trainer resumes from one (the module's docstring says how). The
    Trainer's train loader must be a seedloader.DataLoader: return it from
    get_train_dataloader()."""

    def __init__(self):
        self._resume = None  # (checkpoint folder, epoch) until the first step checks it

    def on_train_begin(self, args, state, control, train_dataloader=None, **kwargs):
        loader = _train_loader(train_dataloader)
        self._resume = None
        if state.global_step == 0 or args.ignore_data_skip:
            return
        folder = _resume_folder(args, state)
        path = os.path.join(folder, STATE_NAME)
        if not os.path.exists(path):
            raise ConfigError(
                "ResumeCallback: the Trainer resumes from %s (global step %d), which "
                "holds no %s: the checkpoint was saved without ResumeCallback. Resume "
                "from a checkpoint saved with it, or set "
                "TrainingArguments(ignore_data_skip=True) to start the resumed epoch "
                "over" % (folder, state.global_step, STATE_NAME))
        with open(path) as f:
            saved = json.load(f)
        if saved.get("global_step") != state.global_step:
            raise ConfigError(
                "ResumeCallback: %s was saved at global step %r, the Trainer resumes "
                "at %d: the folder holds files of different saves"
                % (path, saved.get("global_step"), state.global_step))
        loader.load_state_dict(saved["state"])
        _hand_back_resumed_loaders()
        _resumed.add(loader)
        self._resume = (folder, loader.epoch)

    def on_step_begin(self, args, state, control, train_dataloader=None, **kwargs):
        if self._resume is None:
            return
        (folder, epoch), self._resume = self._resume, None
        loader = _train_loader(train_dataloader)
        _resumed.discard(loader)  # resumed at an epoch's start, the Trainer skips none
        # Under another epoch set_epoch() dropped the loaded position: the Trainer
        # counted the steps of an epoch otherwise than the batches (transformers
        # before 4.46 counts len(loader) // gradient_accumulation_steps).
        if loader.epoch != epoch:
            raise ConfigError(
                "ResumeCallback: the Trainer resumed in epoch %d, the loader's state "
                "in %s is in epoch %d: with gradient_accumulation_steps=%d, an epoch of "
                "len(loader)=%d batches is not a whole number of steps. Use a "
                "gradient_accumulation_steps that divides len(loader), or set "
                "TrainingArguments(ignore_data_skip=True) to start the resumed epoch "
                "over" % (loader.epoch, folder, epoch, args.gradient_accumulation_steps,
                          len(loader)))

    def on_save(self, args, state, control, train_dataloader=None, **kwargs):
        if not args.should_save:
            return
        loader = _train_loader(train_dataloader)
        folder = os.path.join(args.output_dir,
                              "%s-%d" % (PREFIX_CHECKPOINT_DIR, state.global_step))
        if not os.path.isdir(folder):
            raise ConfigError("ResumeCallback: the Trainer saved step %d, but %s is not "
                              "a folder (a checkpoint outside output_dir, as a "
                              "hyperparameter search writes, is not supported)"
                              % (state.global_step, folder))
        path = os.path.join(folder, STATE_NAME)
        # Renamed into place, so a checkpoint never holds half a state.
        with open(path + ".tmp", "w") as f:
            json.dump({"global_step": state.global_step, "state": loader.state_dict()}, f)
        os.replace(path + ".tmp", path)


def _train_loader(loader):
    if not isinstance(loader, DataLoader):
        raise ConfigError("ResumeCallback keeps the position of a seedloader.DataLoader; "
                          "the Trainer's train loader is a %s: return the "
                          "seedloader.DataLoader from the Trainer's get_train_dataloader()"
                          % type(loader).__name__)
    return loader


def _resume_folder(args, state):
    """The folder the Trainer resumes from: the resume_from_checkpoint of its
    _inner_training_loop, which calls on_train_begin (the Trainer hands it to no
    callback); else where the Trainer saves global step N, output_dir/checkpoint-N."""
    frame = sys._getframe(1)
    while frame is not None:
        if (frame.f_code.co_name == "_inner_training_loop" and
                isinstance(frame.f_locals.get("self"), transformers.Trainer)):
            folder = frame.f_locals.get("resume_from_checkpoint")
            if isinstance(folder, (str, os.PathLike)):
                return os.fspath(folder)
            break
        frame = frame.f_back
    return os.path.join(args.output_dir, "%s-%d" % (PREFIX_CHECKPOINT_DIR, state.global_step))


def _hand_back_resumed_loaders():
    """Replaces the skip_first_batches the Trainer calls (transformers.trainer's
    import of accelerate's) by _skip_first_batches, once."""
    global _accelerate_skip
    skip = getattr(transformers.trainer, "skip_first_batches", None)
    if skip is None or skip is _skip_first_batches:
        return
    _accelerate_skip = skip
    transformers.trainer.skip_first_batches = _skip_first_batches


def _skip_first_batches(dataloader, num_batches=0):
    """A loader ResumeCallback resumed, as it is: its loaded position is past the
    batches the Trainer skips. Any other loader: accelerate's skip_first_batches."""
    if dataloader in _resumed:
        _resumed.discard(dataloader)
        resumed_at = dataloader.state_dict()["_num_yielded"]
        if num_batches != resumed_at:
            raise ConfigError(
                "ResumeCallback: the Trainer skips %d batches of epoch %d, but the "
                "loader's saved state resumes after %d: the checkpoint's steps and the "
                "loader's batches disagree (a gradient_accumulation_steps that does not "
                "divide len(loader)?); set TrainingArguments(ignore_data_skip=True) to "
                "start the resumed epoch over" % (num_batches, dataloader.epoch,
                                                  resumed_at))
        return dataloader
    assert _accelerate_skip is not None  # set before this replaces it
    return _accelerate_skip(dataloader, num_batches)
