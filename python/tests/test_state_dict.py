"""state_dict() / load_state_dict(): where a loader is, and resuming from there,
including the edges (an epoch just finished, another base seed, hostile input)."""
import pytest
import torch

import seedloader as sl


def loader(**kw):
    args = dict(batch_size=4, num_workers=2, shuffle=True, seed=3)
    args.update(kw)
    return sl.DataLoader(sl.Synthetic(24, 6, 6, 3, transform="rrc:4,hflip"), **args)


def epoch(l):
    return [(b["image"].clone(), list(l.last_indices)) for b in l]


def same(a, b):
    assert len(a) == len(b)
    for (x, i), (y, j) in zip(a, b):
        assert i == j and torch.equal(x, y)


@pytest.mark.parametrize("seeding", ["worker", "sample"])
def test_a_state_saved_after_an_epoch_continues_with_the_next(seeding):
    full = loader(seeding=seeding)
    first = epoch(full)
    state = full.state_dict()
    assert state["_finished"] and state["_num_yielded"] == len(full) == 6
    second = epoch(full)
    resumed = loader(seeding=seeding)
    resumed.load_state_dict(state)
    assert resumed.epoch == 1
    same(epoch(resumed), second)
    assert first[0][1] != second[0][1]


def test_a_state_saved_mid_epoch_is_not_finished_and_resumes_there():
    full = loader()
    it = iter(full)
    for _ in range(2):
        next(it)
    state = full.state_dict()
    assert not state["_finished"] and state["_num_yielded"] == 2
    rest = [(b["image"].clone(), list(full.last_indices)) for b in it]
    resumed = loader()
    resumed.load_state_dict(state)
    same(epoch(resumed), rest)


def test_set_epoch_to_the_resume_epoch_keeps_the_position():
    full = loader(seeding="sample")
    full.set_epoch(2)
    it = iter(full)
    next(it)
    state = full.state_dict()
    rest = [list(full.last_indices) for _ in it]
    resumed = loader(seeding="sample")
    resumed.load_state_dict(state)
    resumed.set_epoch(2)  # as a training loop calls it at the top of each epoch
    assert resumed.state_dict()["_num_yielded"] == 1
    assert [list(resumed.last_indices) for _ in resumed] == rest
    resumed.set_epoch(3)  # another epoch drops the resume point
    assert resumed.state_dict()["_num_yielded"] == 0


def test_another_base_seed_rebuilds_the_engine_with_it():
    source = loader(seed=41)
    expected = epoch(source)
    target = loader(seed=5)
    target.load_state_dict({**source.state_dict(), "epoch": 0, "_num_yielded": 0,
                            "_finished": False})
    assert target.seed == 41
    same(epoch(target), expected)


@pytest.mark.parametrize("change,message", [
    (lambda s: s.pop("epoch"), "has no epoch"),
    (lambda s: s.pop("base_seed"), "has no base_seed"),
    (lambda s: s.update(epoch=-1), r"epoch must be an int in \[0, 2\*\*64\), got -1"),
    (lambda s: s.update(epoch="3"), "epoch must be an int in .*, got '3'"),
    (lambda s: s.update(_num_yielded=7), "_num_yielded is 7; this loader has 6"),
    (lambda s: s.update(_num_yielded=-1), "_num_yielded must be an int in .*, got -1"),
    (lambda s: s.update(world_size=2), "saved with world_size=2"),
])
def test_hostile_states_are_config_errors_that_say_what_is_wrong(change, message):
    state = loader().state_dict()
    change(state)
    with pytest.raises(sl.ConfigError, match=message):
        loader().load_state_dict(state)
