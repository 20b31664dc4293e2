"""Hostile integers at the binding's door: a state dict's fields, the seed, epochs
and the sample indices a user's sampler yields. Each bad value is a ConfigError
naming what it is and the value, before the binding (whose own refusals name
neither) and with no truncation; the integers Python indexes with (numpy
integers, one-element integer tensors) keep working."""
import re

import numpy as np
import pytest
import torch

import seedloader as sl

from generator_datasets import Yields

SIZE = 10


def loader(**kw):
    args = dict(batch_size=2, seed=3)
    args.update(kw)
    # Sample i is the number i, so a batch shows the indices it was read from.
    return sl.DataLoader([np.float32(i) for i in range(SIZE)], **args)


def read(l):
    return [b.tolist() for b in l]


def names(error, *parts):
    """The ConfigError's message is one line naming every part."""
    message = str(error.value)
    assert "\n" not in message
    for part in parts:
        assert part in message, (part, message)


HOSTILE = ["abc", None, -1, 2**64, 2**70, 1234.5, 1234.0, True, np.float64(3.0)]


STATE_INTEGERS = ["epoch", "_num_yielded", "base_seed", "samples", "global_batch_size",
                  "world_size", "batch_size", "num_batches", "shuffle_block"]


# (None is the batch_size of a loader without auto-batching: not hostile there.)
@pytest.mark.parametrize("field,value", [
    pytest.param(field, value, id="%s=%r" % (field, value))
    for field in STATE_INTEGERS for value in HOSTILE
    if not (field == "batch_size" and value is None)])
def test_every_integer_field_of_a_state_refuses_a_non_integer_by_name(field, value):
    state = loader().state_dict()
    state[field] = value
    target = loader()
    with pytest.raises(sl.ConfigError) as error:
        target.load_state_dict(state)
    names(error, "load_state_dict: %s must be an int in [" % field, "got %r" % (value,))
    assert target.seed == 3  # nothing of the state was taken


@pytest.mark.parametrize("value", [1234.5, 1234.0])
def test_a_float_base_seed_is_refused_not_truncated(value):
    state = loader().state_dict()
    state["base_seed"] = value
    target = loader()
    with pytest.raises(sl.ConfigError, match=re.escape("base_seed must be an int in "
                                                       "[0, 2**64), got %r" % value)):
        target.load_state_dict(state)
    assert target.seed == 3


def test_an_epoch_beyond_the_engines_uint64_is_refused_at_load_not_in_the_binding():
    state = loader().state_dict()
    state["epoch"] = 2**70
    with pytest.raises(sl.ConfigError, match=re.escape(
            "load_state_dict: epoch must be an int in [0, 2**64), got %d" % 2**70)):
        loader().load_state_dict(state)
    with pytest.raises(sl.ConfigError, match="epoch must be an int in .* got %d" % 2**70):
        loader().set_epoch(2**70)


def test_the_last_epoch_loads_and_a_finished_one_has_no_next():
    state = loader().state_dict()
    last = loader()
    last.load_state_dict({**state, "epoch": 2**64 - 1, "_finished": False})
    assert last.epoch == 2**64 - 1 and len(read(last)) == 5
    with pytest.raises(sl.ConfigError, match=re.escape(
            "the epoch after finished epoch %d must be an int in [0, 2**64), got %d"
            % (2**64 - 1, 2**64))):
        loader().load_state_dict({**state, "epoch": 2**64 - 1, "_finished": True})


def test_numpy_integers_in_a_state_load_as_ints():
    source = loader(shuffle=True)
    it = iter(source)
    next(it)
    state = source.state_dict()
    rest = [b.tolist() for b in it]
    as_numpy = {k: (np.int64(v) if isinstance(v, int) and not isinstance(v, bool) else v)
                for k, v in state.items()}
    as_numpy["base_seed"] = np.uint64(state["base_seed"])
    as_numpy["dataset"] = dict(state["dataset"], size=np.int32(SIZE))
    as_numpy["_finished"] = np.bool_(False)
    target = loader(shuffle=True, seed=99)
    target.load_state_dict(as_numpy)
    assert type(target.seed) is int and target.seed == 3
    assert read(target) == rest


@pytest.mark.parametrize("change,field,value", [
    (lambda s: s.update(_finished="no"), "_finished", "'no'"),
    (lambda s: s.update(_finished=1), "_finished", "1"),
    (lambda s: s["dataset"].update(size=10.0), "dataset['size']", "10.0"),
    (lambda s: s.update(batches=[[0, 0.5]]), "batches", "0.5"),
    (lambda s: s.update(batches=[[0, -1]]), "batches", "-1"),
    (lambda s: s.update(batches=[[0, SIZE]]), "batches", str(SIZE)),
    (lambda s: s.update(batches=[3]), "batches", "3"),
])
def test_other_fields_a_load_reads_are_checked_by_name(change, field, value):
    state = loader(sampler=range(SIZE)).state_dict()
    state["dataset"] = dict(state["dataset"])
    change(state)
    with pytest.raises(sl.ConfigError) as error:
        loader(sampler=range(SIZE)).load_state_dict(state)
    names(error, "load_state_dict: " + field, value)


@pytest.mark.parametrize("value", [v for v in HOSTILE if v is not None], ids=repr)
def test_the_seed_argument_refuses_what_is_not_a_uint64(value):
    with pytest.raises(sl.ConfigError) as error:
        loader(seed=value)
    names(error, "seed must be an int in [0, 2**64), got %r" % (value,))


@pytest.mark.parametrize("value", [np.uint64(2**64 - 1), np.int32(7), torch.tensor(7)],
                         ids=repr)
def test_the_seed_argument_takes_numpy_and_torch_integers(value):
    assert loader(seed=value).seed == int(value)


BAD_INDICES = [-1, 2**64 + 1, 0.5, 1.7, SIZE, True, None, np.float64(2.0),
               np.bool_(False), torch.tensor(1.0), torch.tensor(True)]
# Keys: what the data set itself is indexed with, as torch's loader does.
KEYS = ["1", np.array([1]), (1,)]


@pytest.mark.parametrize("value", BAD_INDICES, ids=repr)
def test_a_sampler_yielding_a_non_index_is_refused_with_its_name_and_place(value):
    l = loader(sampler=Yields([0, 1, 2, value, 4]))
    with pytest.raises(sl.ConfigError) as error:
        read(l)
    names(error, "DataLoader: sampler Yields: %r at epoch 0, batch 1, position 1;" % value,
          "a sample index must be an int in [0, %d)" % SIZE)


@pytest.mark.parametrize("value", BAD_INDICES, ids=repr)
def test_a_batch_sampler_yielding_a_non_index_is_refused_with_its_name_and_place(value):
    l = loader(batch_size=1, batch_sampler=Yields([[0, 1], [2], [3, value]]))
    with pytest.raises(sl.ConfigError) as error:
        read(l)
    names(error, "DataLoader: batch_sampler Yields: %r at epoch 0, batch 2, position 1;"
          % value)


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_a_key_the_data_set_cannot_take_raises_the_data_sets_own_error(key):
    # A plain list refuses a string, an array or a tuple as its index: the same
    # TypeError torch's loader raises, with the key and its place in a note.
    l = loader(sampler=Yields([0, 1, 2, key, 4]))
    with pytest.raises(TypeError) as error:
        read(l)
    assert "\nseedloader: reading key %r, item 3 of epoch 0's sampler\n" % (key,) in \
        str(error.value)


@pytest.mark.parametrize("value", [None, True, 0.5], ids=repr)
def test_an_epoch_with_keys_refuses_what_is_neither_an_index_nor_a_key(value):
    l = loader(sampler=Yields([0, "a", 2, value]))
    with pytest.raises(sl.ConfigError) as error:
        read(l)
    names(error, "DataLoader: sampler Yields: %r at epoch 0, batch 1, position 1;" % value,
          "or a key the data set takes")


def test_the_place_names_the_epoch_the_sampler_went_wrong_in():
    l = loader(sampler=Yields(range(SIZE), [0, 1, 2, 3, 4, 5.5]))
    assert read(l) == [[2 * k, 2 * k + 1] for k in range(5)]
    with pytest.raises(sl.ConfigError, match=re.escape("5.5 at epoch 1, batch 2, "
                                                       "position 1;")):
        read(l)


def test_a_batch_sampler_yielding_a_non_sequence_is_refused():
    l = loader(batch_size=1, batch_sampler=Yields([[0], 7]))
    with pytest.raises(sl.ConfigError, match=re.escape(
            "batch_sampler Yields: epoch 0, batch 1 is 7, not a sequence of sample "
            "indices")):
        read(l)


def test_a_sampler_under_a_collate_fn_is_checked_too():
    l = loader(sampler=Yields([0, 0.5]), collate_fn=lambda samples: len(samples))
    with pytest.raises(sl.ConfigError, match=re.escape("sampler Yields: 0.5 at epoch 0")):
        read(l)


INDEX_LIKE = [np.int64(3), np.uint8(3), np.int32(3), np.array(3), torch.tensor(3),
              torch.tensor([3]), torch.tensor(3, dtype=torch.uint8)]


@pytest.mark.parametrize("value", INDEX_LIKE,
                         ids=lambda v: "%s:%s" % (type(v).__name__, v))
def test_integers_python_indexes_with_still_index(value):
    assert read(loader(sampler=Yields([0, value, 9]))) == [[0, 3], [9]]
    assert read(loader(batch_size=1, batch_sampler=Yields([[value, 1], [0]]))) == \
        [[3, 1], [0]]


def test_arrays_and_tensors_of_indices_are_batches():
    batches = [np.array([4, 2]), torch.tensor([1, 0]), (9,), range(5, 7)]
    assert read(loader(batch_size=1, batch_sampler=Yields(batches))) == \
        [[4, 2], [1, 0], [9], [5, 6]]
    assert read(loader(sampler=np.arange(5)[::-1])) == [[4, 3], [2, 1], [0]]
    assert read(loader(sampler=torch.arange(3))) == [[0, 1], [2]]
    with pytest.raises(sl.ConfigError, match=re.escape(
            "sampler ndarray: 0.0 at epoch 0, batch 0, position 0")):
        read(loader(sampler=np.array([0, 0.5])))


def test_a_refused_state_leaves_the_loader_as_it_was():
    loader = sl.DataLoader(list(range(10)), batch_size=2, seed=7)
    state = loader.state_dict()
    state["base_seed"] = 8
    state["batches"] = [[0, 1], [2, 10]]  # 10 is past the data set
    with pytest.raises(sl.ConfigError, match="batches"):
        loader.load_state_dict(state)
    assert loader.seed == 7 and loader.state_dict()["base_seed"] == 7
