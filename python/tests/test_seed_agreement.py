"""A loader made without seed= on several ranks: the ranks agree on rank 0's drawn
seed when a pass starts (over torch.distributed), or the pass is refused by name
where there is no process group to agree through; never two ranks shuffling two
permutations and training overlapping samples."""
import json
import multiprocessing
import os
import pickle
import socket

import pytest

import seedloader as sl

LAUNCHER_VARIABLES = ("RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS",
                      "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")


@pytest.fixture(autouse=True)
def no_launcher(monkeypatch):
    for name in LAUNCHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def indices(loader):
    return [i for batch in loader for i in batch.tolist()]


def test_a_shuffled_pass_over_two_ranks_without_a_process_group_is_refused_by_name():
    loader = sl.DataLoader(list(range(20)), batch_size=4, shuffle=True, rank=1,
                           world_size=2)
    with pytest.raises(sl.ConfigError) as caught:
        next(iter(loader))
    message = str(caught.value)
    assert "no seed= was given, so rank 1 of 2" in message
    assert "seed=%d repeats this rank's draw" % loader.seed in message
    assert "init_process_group" in message


def test_ranks_from_the_launchers_environment_are_refused_too(monkeypatch):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    loader = sl.DataLoader(list(range(20)), batch_size=4, shuffle=True, num_workers=1)
    with pytest.raises(sl.ConfigError, match=r"rank 0 of 2 \(from RANK/WORLD_SIZE\)"):
        next(iter(loader))


def test_a_mixture_over_two_ranks_without_a_seed_is_refused():
    mixture = sl.Mixture({"a": list(range(10)), "b": list(range(100, 110))},
                         {"a": 0.5, "b": 0.5}, samples_per_epoch=16)
    loader = sl.DataLoader(mixture, batch_size=2, rank=0, world_size=2,
                           partition="elastic", seeding="sample")
    with pytest.raises(sl.ConfigError, match="no seed= was given"):
        next(iter(loader))


def test_an_order_that_does_not_depend_on_the_seed_needs_no_agreement():
    loader = sl.DataLoader(list(range(20)), batch_size=4, rank=1, world_size=2)
    assert indices(loader) == list(range(1, 20, 2))


def test_a_given_seed_or_a_single_rank_runs_as_before():
    seeded = sl.DataLoader(list(range(20)), batch_size=4, shuffle=True, seed=5, rank=1,
                           world_size=2)
    assert len(indices(seeded)) == 10 and seeded.seed == 5
    alone = sl.DataLoader(list(range(20)), batch_size=4, shuffle=True)
    assert sorted(indices(alone)) == list(range(20))


def test_the_drawn_mark_survives_pickling_and_a_rebuild_from_the_attributes():
    loader = sl.DataLoader(list(range(20)), batch_size=4, shuffle=True, rank=1,
                           world_size=2)
    copy = pickle.loads(pickle.dumps(loader))
    assert copy.seed == loader.seed
    # Frameworks rebuild a loader from its attributes and __init__'s signature.
    rebuilt = sl.DataLoader(loader.dataset, batch_size=4, shuffle=True, rank=1,
                            world_size=2, seed=loader.seed)
    for other in (copy, rebuilt):
        with pytest.raises(sl.ConfigError, match="no seed= was given"):
            next(iter(other))
    state = loader.state_dict()
    assert type(state["base_seed"]) is int  # a plain int in checkpoints
    assert state["base_seed_drawn"] is True  # taken before the ranks agreed
    resumed = sl.DataLoader(list(range(20)), batch_size=4, shuffle=True, rank=1,
                            world_size=2, seed=3)
    resumed.load_state_dict(state)  # the state's seed is still this rank's own draw
    assert resumed.seed == loader.seed
    with pytest.raises(sl.ConfigError, match="no seed= was given"):
        next(iter(resumed))
    state["base_seed_drawn"] = False  # a state of an agreed (or given) seed
    resumed.load_state_dict(state)
    assert len(indices(resumed)) == 10 and resumed.seed == loader.seed


def test_a_seed_from_a_generator_is_every_ranks_as_torch_draws_it():
    import torch
    loaders = [sl.DataLoader(list(range(20)), batch_size=4, shuffle=True, rank=r,
                             world_size=2, generator=torch.Generator().manual_seed(5))
               for r in range(2)]
    assert loaders[0].seed == loaders[1].seed
    both = indices(loaders[0]) + indices(loaders[1])
    assert sorted(both) == list(range(20))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_main(rank, port, out, rebuild, workers):
    """One rank: a loader without seed=, iterated for 2 epochs after the process
    group exists (with rank and world size also given when `rebuild`); writes its
    seed, indices and state. Rank 0 first reads an unshuffled loader alone, as an
    evaluation preview: its order does not depend on the seed, so it agrees
    nothing and waits on no other rank."""
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank,
                            world_size=2)
    if rank == 0:
        preview = sl.DataLoader(list(range(30)), batch_size=4)
        assert next(iter(preview)).tolist() == [0, 2, 4, 6]
    placement = dict(rank=rank, world_size=2) if rebuild else {}
    loader = sl.DataLoader(list(range(30)), batch_size=4, shuffle=True,
                           num_workers=workers, **placement)
    if rebuild:  # as Lightning re-instantiates a loader from its attributes
        loader = sl.DataLoader(loader.dataset, batch_size=4, shuffle=True,
                               num_workers=workers, seed=loader.seed, **placement)
    epochs = [indices(loader) for _ in range(2)]
    with open(os.path.join(out, "rank%d.json" % rank), "w") as f:
        json.dump({"seed": loader.seed, "epochs": epochs, "state": loader.state_dict()},
                  f)
    dist.destroy_process_group()


@pytest.mark.parametrize("rebuild,workers", [(False, 0), (True, 2)])
def test_two_ranks_without_a_seed_agree_on_rank_0s_and_train_each_sample_once(
        tmp_path, capfd, rebuild, workers):
    pytest.importorskip("torch.distributed")
    port = _free_port()
    context = multiprocessing.get_context("fork")
    ranks = [context.Process(target=_rank_main, args=(r, port, str(tmp_path), rebuild,
                                                      workers)) for r in range(2)]
    for p in ranks:
        p.start()
    for p in ranks:
        p.join(120)
        assert p.exitcode == 0, "a rank failed: %s" % capfd.readouterr().err[-3000:]
    results = []
    for r in range(2):
        with open(tmp_path / ("rank%d.json" % r)) as f:
            results.append(json.load(f))
    assert results[0]["seed"] == results[1]["seed"]
    assert not results[0]["state"]["base_seed_drawn"]  # agreed: a state holds it so
    seed = results[0]["seed"]
    for epoch in range(2):
        both = results[0]["epochs"][epoch] + results[1]["epochs"][epoch]
        assert sorted(both) == list(range(30)), "epoch %d overlapped" % epoch
        # Exactly the batches a loader given that seed gives.
        for r in range(2):
            expected = sl.DataLoader(list(range(30)), batch_size=4, shuffle=True,
                                     seed=seed, rank=r, world_size=2)
            expected.set_epoch(epoch)
            assert results[r]["epochs"][epoch] == indices(expected)
    assert results[0]["epochs"][0] != results[0]["epochs"][1]
    err = capfd.readouterr().err
    assert "rank 1 of 2 uses rank 0's base seed %d" % seed in err
    assert "seed=%d repeats this run" % seed in err
