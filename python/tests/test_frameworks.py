"""seedloader.DataLoader inside the frameworks people train with: real end-to-end
trainings of PyTorch Lightning 2.2, Hugging Face accelerate 0.31 and transformers
4.42's Trainer (pinned in python/tests/frameworks/requirements.txt, installed by
scripts/python_env.sh --frameworks), each on 1 or 2 CPU processes (gloo), with the
loader built before the framework sees it or inside its hook. Each training writes what every rank
trained on, step by step; the checks:
- every epoch trains every sample exactly once across ranks, and each rank's
  batches are exactly seedloader's own order of (seed, epoch, rank): never a torch
  loader built in its place, never a rank drawing its own seed;
- trainer epoch e reads loader epoch e, with or without set_epoch;
- a restart from the framework's own checkpoint (mid-epoch, at an epoch's end)
  trains exactly what the uninterrupted run trained after it (under the Trainer,
  with seedloader.transformers.ResumeCallback; without it, refused with advice);
- gather_for_metrics counts every evaluation sample once.
Without the frameworks the tests skip, or fail under
SEEDLOADER_REQUIRE_CROSS_CHECKS=1."""
import json
import os
import subprocess
import sys

import pytest

import seedloader as sl

from conftest import need

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "frameworks")
sys.path.insert(0, HERE)


def run(script, out, *args, launcher=(), timeout=120):
    """Runs a framework script as a user runs it (under `launcher`, a python -m
    module and its options, when given); its output on failure."""
    command = [sys.executable, *launcher, os.path.join(HERE, script), str(out),
               *map(str, args)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                          cwd=str(out.parent))
    assert done.returncode == 0, "%s failed (%d):\n%s\n%s" % (
        " ".join(command), done.returncode, done.stdout[-3000:], done.stderr[-6000:])
    return done


def steps(out, rank):
    with open(os.path.join(out, "rank%d.jsonl" % rank)) as f:
        return [json.loads(line) for line in f]


def seedloader_order(size, epoch, rank, world_size, batch_size=4, seed=7):
    """The batches seedloader itself gives (seed, epoch, rank): what every rank
    must have trained on."""
    loader = sl.DataLoader(list(range(size)), batch_size=batch_size, shuffle=True,
                           seed=seed, rank=rank, world_size=world_size)
    loader.set_epoch(epoch)
    return [b.tolist() for b in loader]


def check_epochs(out, world_size, epochs, size=64, seed=7):
    """Each trainer epoch e: every rank trained seedloader's batches of epoch e,
    the ranks together every sample once; the epochs' orders differ. seed=None:
    the loaders were made without one, so the ranks must have agreed on one (the
    steps say which), printed for the run to be repeated."""
    if seed is None:
        seeds = {s["seed"] for rank in range(world_size) for s in steps(out, rank)}
        assert len(seeds) == 1, "the ranks trained with different seeds: %s" % seeds
        seed = seeds.pop()
    orders = []
    for e in range(epochs):
        seen = []
        for rank in range(world_size):
            mine = [s for s in steps(out, rank) if s["epoch"] == e]
            assert {s["loader_epoch"] for s in mine} == {e}
            assert [s["indices"] for s in mine] == seedloader_order(size, e, rank,
                                                                    world_size, seed=seed)
            seen += [i for s in mine for i in s["indices"]]
        assert sorted(seen) == list(range(size)), "epoch %d: not every sample once" % e
        orders.append(seen)
    assert len({tuple(o) for o in orders}) == epochs, "two epochs had the same order"


# --- Lightning --------------------------------------------------------------------

@pytest.mark.parametrize("strategy,devices", [("auto", 1), ("ddp", 2), ("ddp_spawn", 2)])
@pytest.mark.parametrize("build", ["before", "hook"])
def test_lightning_trains_each_sample_once_per_epoch_on_seedloaders_order(
        tmp_path, strategy, devices, build):
    need("lightning")
    out = tmp_path / "run"
    run("lightning_train.py", out, "--strategy", strategy, "--devices", devices,
        "--build", build, "--epochs", 3, "--workers", 1 if build == "hook" else 0)
    check_epochs(out, devices, 3)


@pytest.mark.parametrize("strategy,devices", [("auto", 1), ("ddp", 2), ("ddp_spawn", 2)])
def test_lightning_without_a_seed_trains_each_sample_once_per_epoch(tmp_path, strategy,
                                                                    devices):
    need("lightning")
    out = tmp_path / "run"
    done = run("lightning_train.py", out, "--strategy", strategy, "--devices", devices,
               "--epochs", 2, "--no-seed")
    check_epochs(out, devices, 2, seed=None)
    if devices > 1:
        assert "uses rank 0's base seed" in done.stderr


def test_lightning_with_set_epoch_in_the_epoch_hook_reads_each_epoch_once(tmp_path):
    need("lightning")
    out = tmp_path / "run"
    run("lightning_train.py", out, "--strategy", "ddp", "--devices", 2, "--set-epoch",
        "--epochs", 3)
    check_epochs(out, 2, 3)


@pytest.mark.parametrize("checkpoint", [3, 8, 12], ids=["mid-epoch-0", "end-of-epoch-0",
                                                       "mid-epoch-1"])
def test_lightning_resumes_from_its_checkpoint_exactly(tmp_path, checkpoint):
    need("lightning")
    full, resumed = tmp_path / "full", tmp_path / "resumed"
    run("lightning_train.py", full, "--strategy", "ddp", "--devices", 2, "--epochs", 3,
        "--save-every-steps", checkpoint)
    run("lightning_train.py", resumed, "--strategy", "ddp", "--devices", 2, "--epochs", 3,
        "--resume", full / ("step=%d.ckpt" % checkpoint))
    for rank in range(2):
        after = [s for s in steps(full, rank) if s["step"] >= checkpoint]
        assert steps(resumed, rank) == after
        assert len(after) == 24 - checkpoint  # 8 steps an epoch per rank


# --- accelerate -------------------------------------------------------------------

def run_accelerate(out, processes, *args):
    """accelerate_train.py with one process, or under torchrun with several."""
    if processes == 1:
        return run("accelerate_train.py", out, *args)
    return torchrun("accelerate_train.py", out, processes, *args)


def torchrun(script, out, processes, *args):
    """`script` under torchrun with `processes` processes on 127.0.0.1 (the
    torchrun of Debian's torch 1.13 under Python 3.11 needs --redirects/--tee)."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    launcher = ["-m", "torch.distributed.run", "--nproc_per_node", str(processes),
                "--master_addr", "127.0.0.1", "--master_port", str(port),
                "--redirects", "1", "--tee", "1"]
    return run(script, out, *args, launcher=launcher, timeout=180)


def gathered(out):
    with open(os.path.join(out, "eval.json")) as f:
        return json.load(f)["gathered"]


@pytest.mark.parametrize("processes", [1, 2])
@pytest.mark.parametrize("build", ["before", "after"])
def test_accelerate_trains_each_sample_once_and_gathers_each_eval_sample_once(
        tmp_path, processes, build):
    need("accelerate")
    out = tmp_path / "run"
    run_accelerate(out, processes, "--build", build, "--epochs", 2)
    check_epochs(out, processes, 2)
    assert sorted(gathered(out)) == list(range(251))  # 251 on 2 ranks: one padded


@pytest.mark.parametrize("build", ["before", "after"])
def test_accelerate_without_a_seed_trains_each_sample_once_on_2_processes(tmp_path, build):
    need("accelerate")
    out = tmp_path / "run"
    done = run_accelerate(out, 2, "--build", build, "--epochs", 2, "--no-seed")
    check_epochs(out, 2, 2, seed=None)
    assert sorted(gathered(out)) == list(range(251))
    assert "uses rank 0's base seed" in done.stdout + done.stderr


def test_accelerate_gathers_an_elastic_eval_loader_once(tmp_path):
    need("accelerate")
    out = tmp_path / "run"
    run_accelerate(out, 2, "--epochs", 1, "--eval-partition", "elastic")
    assert sorted(gathered(out)) == list(range(251))


def test_accelerate_save_state_and_load_state_resume_the_loader_exactly(tmp_path):
    need("accelerate")
    full, resumed = tmp_path / "full", tmp_path / "resumed"
    run_accelerate(full, 2, "--save-at", 5)
    run_accelerate(resumed, 2, "--resume")
    for rank in range(2):
        after = [s for s in steps(full, rank) if s["step"] >= 5]
        assert steps(resumed, rank) == after and len(after) == 11


def test_accelerate_skip_first_batches_is_refused_by_name(tmp_path):
    need("accelerate")
    out = tmp_path / "run"
    run_accelerate(out, 1, "--skip", 3)
    with open(out / "skip.txt") as f:
        message = f.read()
    assert message.startswith("ConfigError: a torch DataLoader is iterating the sampler "
                              "of a seedloader.DataLoader")
    assert "skip_first_batches" in message and "register_for_checkpointing" in message


# --- torchrun ---------------------------------------------------------------------

def test_torchrun_with_the_loader_built_before_the_process_group_shards_by_rank(tmp_path):
    out = tmp_path / "run"
    torchrun("torchrun_train.py", out, 2, "--epochs", 3)
    check_epochs(out, 2, 3)


@pytest.mark.parametrize("workers", [0, 2])
def test_torchrun_without_a_seed_trains_each_sample_once_per_epoch(tmp_path, workers):
    out = tmp_path / "run"
    done = torchrun("torchrun_train.py", out, 2, "--epochs", 2, "--workers", workers,
                    "--no-seed")
    check_epochs(out, 2, 2, seed=None)
    assert "uses rank 0's base seed" in done.stdout + done.stderr


def test_torchrun_with_a_users_distributed_sampler_trains_the_samplers_order(tmp_path):
    import torch.utils.data as tud
    out = tmp_path / "run"
    torchrun("torchrun_train.py", out, 2, "--sampler", "--epochs", 3)
    for epoch in range(3):
        seen = []
        for rank in range(2):
            sampler = tud.distributed.DistributedSampler(range(64), num_replicas=2,
                                                         rank=rank, shuffle=True, seed=7)
            sampler.set_epoch(epoch)
            order = list(sampler)
            mine = [s for s in steps(out, rank) if s["epoch"] == epoch]
            assert [s["indices"] for s in mine] == [order[k:k + 4] for k in range(0, 32, 4)]
            seen += order
        assert sorted(seen) == list(range(64))


# --- transformers' Trainer --------------------------------------------------------

def run_trainer(out, processes, *args):
    """trainer_train.py with one process, or under torchrun with several."""
    if processes == 1:
        return run("trainer_train.py", out, *args)
    return torchrun("trainer_train.py", out, processes, *args)


def trainer_error(out):
    path = out / "error.txt"
    return path.read_text() if path.exists() else None


# Stopped after the 4th step of epoch 1 (16 steps an epoch on 1 process, 8 on 2).
@pytest.mark.parametrize("processes,stop", [(1, 19), (2, 11)])
def test_trainer_resumed_mid_epoch_trains_what_the_uninterrupted_run_trained(
        tmp_path, processes, stop):
    need("transformers")
    full, part = tmp_path / "full", tmp_path / "part"
    run_trainer(full, processes, "--epochs", 2)
    check_epochs(full, processes, 2)
    run_trainer(part, processes, "--save-steps", stop, "--stop-at", stop)
    assert [len(steps(part, rank)) for rank in range(processes)] == [stop] * processes
    run_trainer(part, processes, "--save-steps", stop, "--resume")
    assert trainer_error(part) is None
    for rank in range(processes):
        assert steps(part, rank) == steps(full, rank)
        assert [s["step"] for s in steps(part, rank)] == list(range(32 // processes))


def test_trainer_without_a_seed_trains_each_sample_once_per_epoch_on_2_processes(tmp_path):
    need("transformers")
    out = tmp_path / "run"
    run_trainer(out, 2, "--epochs", 2, "--no-seed")
    check_epochs(out, 2, 2, seed=None)


def test_trainer_resumes_a_loader_without_a_seed_from_a_moved_checkpoint(tmp_path):
    """The checkpoint holds the base seed the loader drew; the callback reads it
    from the folder the Trainer resumes from, wherever that is."""
    import shutil
    need("transformers")
    out, moved = tmp_path / "run", tmp_path / "moved"
    run_trainer(out, 1, "--no-seed", "--save-steps", 19, "--stop-at", 19)
    shutil.copytree(out / "trainer" / "checkpoint-19", moved)
    shutil.rmtree(out / "trainer")
    run_trainer(out, 1, "--no-seed", "--resume", moved)
    assert [s["step"] for s in steps(out, 0)] == list(range(32))
    check_epochs(out, 1, 2, seed=None)  # one seed throughout, its order


def test_trainer_resume_without_the_callback_is_refused_with_advice_that_works(tmp_path):
    need("transformers")
    out = tmp_path / "run"
    run_trainer(out, 1, "--no-callback", "--save-steps", 5, "--stop-at", 5)
    run_trainer(out, 1, "--no-callback", "--resume")
    message = trainer_error(out)
    assert message.startswith("a torch DataLoader is iterating the sampler of a "
                              "seedloader.DataLoader")
    assert "callbacks=[seedloader.transformers.ResumeCallback()]" in message
    # With the callback, that checkpoint (saved without it) is refused by name ...
    run_trainer(out, 1, "--resume")
    message = trainer_error(out)
    assert message.startswith("ResumeCallback: the Trainer resumes from ")
    assert "holds no seedloader_state.json" in message
    assert "TrainingArguments(ignore_data_skip=True)" in message
    # ... and resumed as it advises: epoch 0 starts over.
    run_trainer(out, 1, "--resume", "--ignore-data-skip")
    assert trainer_error(out) is None
    trained = steps(out, 0)
    assert [s["indices"] for s in trained[5:21]] == seedloader_order(64, 0, 0, 1)
    assert [s["step"] for s in trained] == list(range(32))
