"""A DataLoader's position as a state dict (state_dict) and its resumption
(load_state_dict): what a state records, how a loaded one is checked (every
field before anything changes, so a refused state leaves the loader as it was),
and, over a Mixture, the schedule history and source counts a resume goes on
with (the saved section is written, read and checked by the engine's own
mixture state, _core.MixtureState, as ddp-train and seed-audit read it).
Functions of the loader they are bound to (DataLoader.state_dict,
DataLoader.load_state_dict).
"""
import json
import numbers
import operator
import reprlib

from seedloader import _agreement, _arguments, _checks, _core
from seedloader._core import Dataset
from seedloader._errors import ConfigError


def state_dict(loader):
    """Where the loader is: resume with load_state_dict() on a loader built with
    the same dataset and options (the keys of torchdata's StatefulDataLoader
    state where they mean the same; "_finished": the epoch was delivered
    whole, so a loaded state continues with the next one). The position is
    global: "samples" is what every rank together consumed in the epoch, and
    under partition="elastic" any world size with the same global batch size
    resumes from it."""
    num_batches = len(loader)  # takes the rank and world size as they are now
    global_batch = (loader._batch_size or 0) * loader.world_size
    yielded = consumed(loader)
    state = {"epoch": loader._epoch, "_num_yielded": yielded,
             "_finished": loader._epoch_used and yielded >= num_batches,
             "samples": yielded * global_batch,
             "global_batch_size": global_batch,
             "base_seed": int(loader.seed),
             # Not yet agreed (no pass over several ranks began): a loaded state
             # agrees it when its first pass does.
             "base_seed_drawn": isinstance(loader.seed, _agreement.DrawnSeed),
             "seeding": loader.seeding, "order": loader.order,
             "shuffle_block": loader.shuffle_block,
             "canonical_nodes": loader.canonical_nodes,
             "partition": loader.partition, "world_size": loader.world_size,
             "rank": loader.rank, "batch_size": loader.batch_size,
             "num_batches": num_batches,
             "dataset": _dataset_fingerprint(loader.dataset),
             "skip": {"steps": [list(r) for r in sorted(loader._skip_steps)],
                      "samples": sorted(loader._skip_samples)}}
    if loader._plan is not None and loader._plan[0] == loader._epoch:
        # A user's sampler may not draw them again.
        state["batches"] = [list(b) for b in loader._plan[1]]
    if loader._mixture_history is not None:
        state["mixture"] = mixture_state(loader, num_batches, yielded)
    return state


def mixture_state(loader, num_batches, yielded):
    """state["mixture"]: the global step of the position, each source's epoch and
    consumed count there (and its count at the epoch's first step, from which a
    resume computes the epoch without going through the steps before it), and
    the history of schedules it was reached under; as the engine writes it
    (seedloader/mixture_state_json.h), a dict of JSON's types."""
    first = loader._epoch * num_batches
    return json.loads(loader._mixture_order().state(first, first + yielded).json())


def consumed(loader):
    """Batches of the current epoch consumed: the started pass's count, else the
    resume point (or 0)."""
    if loader._epoch_used and loader._pass is not None:
        return loader._pass.yielded
    return loader._yielded


def load_state_dict(loader, state):
    """The next iteration continues epoch state["epoch"] after the batches the
    state says were consumed, exactly as an uninterrupted epoch would (the next
    epoch when the state says the epoch was finished). Under
    partition="elastic" the state may come from another world size, batch size
    or worker count with the same global batch size; otherwise the world size
    and batch size must match."""
    missing = [k for k in ("epoch", "_num_yielded", "base_seed") if k not in state]
    if missing:
        raise ConfigError("load_state_dict: the state has no %s (it has %s)"
                          % (", ".join(missing), ", ".join(sorted(map(str, state)))))
    state = _checked_state(state)
    epoch = state["epoch"]
    # Not the rank: every rank is at the same position, so one rank's state
    # (say rank 0's checkpoint) resumes them all.
    mine = state_dict(loader)
    must_match = ["partition", "seeding", "order", "shuffle_block", "dataset"]
    mixture = loader._mixture_history is not None or "mixture" in state
    if mixture:
        if loader._mixture_history is None:
            raise ConfigError("load_state_dict: the state is a Mixture's; this loader "
                              "reads %s" % type(loader.dataset).__name__)
        if not isinstance(state.get("mixture"), dict):
            raise ConfigError("load_state_dict: this loader reads a Mixture; the state "
                              "has no mixture section")
        must_match.remove("dataset")  # the sources are checked one by one
    # Unset, C is the state's (a run goes on with the split it started with);
    # given, it must be the same.
    saved_parts = state.get("canonical_nodes", 0)
    if loader._canonical_default:
        if (isinstance(saved_parts, bool) or not isinstance(saved_parts, int) or
                not 0 <= saved_parts < 2**63):
            raise ConfigError("load_state_dict: canonical_nodes %r is not an int >= 0"
                              % (saved_parts,))
        if saved_parts and loader.partition != "elastic":
            raise ConfigError("load_state_dict: the state splits its order into %d "
                              "canonical nodes, which needs partition='elastic'"
                              % saved_parts)
        # Checked against this world now, not at the next iteration.
        _core.validate(loader._engine_options(canonical_nodes=saved_parts),
                       max(len(loader.dataset), 1))
        if saved_parts and mine["global_batch_size"] % saved_parts:
            raise ConfigError("load_state_dict: the state's canonical_nodes %d does "
                              "not divide this loader's global batch of %d"
                              % (saved_parts, mine["global_batch_size"]))
    else:
        must_match.append("canonical_nodes")
    must_match += (["global_batch_size"] if loader.partition == "elastic" else
                   ["world_size", "batch_size", "num_batches"])
    for key in must_match:
        saved = state.get(key, {"partition": "strided", "canonical_nodes": 0}.get(
            key, mine[key]))
        if saved != mine[key]:
            raise ConfigError("load_state_dict: the state was saved with %s=%r, this "
                              "loader has %r" % (key, saved, mine[key]))
    history = saved_mixture = None
    if mixture:  # after the global batch is known to be the same
        saved_mixture = _saved_mixture(state["mixture"])
        try:
            history, known = loader._mixture_order().resumed(saved_mixture, epoch)
        except ConfigError as e:
            raise ConfigError("load_state_dict: %s" % e) from None
    yielded = _resumed_batches(state, mine["global_batch_size"], len(loader),
                               loader.partition == "elastic")
    # Everything is checked before anything changes: a refused state leaves
    # the loader as it was.
    skips = _state_skips(state.get("skip", {}))
    if mixture and skips[1]:  # indices of the saved mixture: a source added moves them
        try:
            skips = (skips[0], {loader._mixture_order().moved_index(saved_mixture, i)
                                for i in skips[1]})
        except ConfigError as e:
            raise ConfigError("load_state_dict: the state's skipped %s" % e) from None
    outside = [i for i in skips[1] if i >= len(loader.dataset)]
    if outside:
        raise ConfigError("load_state_dict: the state skips sample %d, outside the "
                          "data set's %d samples" % (min(outside), len(loader.dataset)))
    if skips[1] and loader._collate is not None:
        raise ConfigError("load_state_dict: the state skips samples, which a loader "
                          "with a collate_fn cannot (it reads whole batches)")
    if skips[1] and loader.seeding != "sample":
        raise ConfigError("load_state_dict: the state skips samples, which needs "
                          "seeding=\"sample\"; this loader has %r" % loader.seeding)
    plan = None
    if "batches" in state:
        plan = (epoch, _checks.plan(state["batches"], len(loader.dataset),
                                    "load_state_dict: batches", epoch,
                                    not isinstance(loader.dataset, Dataset)))
    done_epoch = None
    if state["_finished"] or yielded == len(loader):
        done_epoch = epoch
        epoch = _arguments.epoch_number(
            epoch + 1, "load_state_dict: the epoch after finished epoch %d" % epoch)
        yielded = 0
    if loader._canonical_default:  # first: it may close the engine, or refuse to
        loader._set_canonical_nodes(saved_parts)
        loader._canonical_fixed = True
    seed = state["base_seed"]
    if state["base_seed_drawn"]:
        seed = _agreement.DrawnSeed(seed)
    loader._set_seed(seed)
    if plan is not None:
        loader._plan = plan
    if history is not None and (history, known) != (loader._mixture_history,
                                                    loader._mixture_known):
        loader._close_engine()  # rebuilt with the new weights from the saved step
        loader._mixture_history, loader._mixture_known = history, known
    loader._set_skips(loader._skip_steps | skips[0], loader._skip_samples | skips[1])
    loader._done_epoch = done_epoch
    loader._epoch = epoch
    loader._epoch_used = False
    loader._resume = (epoch, yielded) if yielded else None
    loader._yielded = yielded


def _saved_mixture(saved):
    """A state's "mixture" section (as state_dict() writes it) read by the engine
    (_core.MixtureState.parse, which names what is wrong); numpy integers and
    floats are taken as the ints and floats they are."""
    what = "load_state_dict: mixture"
    if not _nested_within(saved, _MAX_STATE_DEPTH):  # before json.dumps recurses
        raise ConfigError("%s is malformed: nested deeper than %d lists and dicts (a "
                          "Mixture's state nests 6)" % (what, _MAX_STATE_DEPTH))
    try:
        text = json.dumps(saved, default=_json_number, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ConfigError("%s is malformed: %s" % (what, e)) from None
    return _core.MixtureState.parse(text, "load_state_dict")


def _json_number(value):
    """`value`, a number json does not know (a numpy integer or float), as an int
    or float; a TypeError for anything else."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return operator.index(value)
    if isinstance(value, numbers.Real):
        return float(value)
    raise TypeError("%s is not JSON" % reprlib.repr(value))


# A Mixture's state nests 6 deep (its history's weights), a skip list 3; a crafted
# one nested far deeper would make every reading of it recurse that deep.
_MAX_STATE_DEPTH = 64


def _nested_within(value, limit):
    """Whether `value`'s lists, tuples and dicts nest at most `limit` deep (checked
    without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = list(item.keys()) + list(item.values())
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > limit:
            return False
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, (dict, list, tuple)))
    return True


def _dataset_fingerprint(dataset):
    """What a state records of the data set, so that a state is not loaded into a
    loader over another: its size and description (a C++ dataset's own, a Python
    dataset's class)."""
    if isinstance(dataset, Dataset):
        description = repr(dataset)
    else:
        kind = type(dataset)
        # A script's classes are __mp_main__'s in the processes spawn starts.
        module = "__main__" if kind.__module__ == "__mp_main__" else kind.__module__
        description = "%s.%s" % (module, kind.__qualname__)
    return {"size": len(dataset), "description": description}


# The integer fields of a state (as state_dict() writes them) and their least
# values; every one is below 2**64, the engine's uint64. batch_size is None for a
# loader with a batch_sampler or batch_size=None. Not the rank: no load reads it.
_STATE_INTEGERS = {"epoch": 0, "_num_yielded": 0, "samples": 0, "base_seed": 0,
                   "global_batch_size": 0, "world_size": 1, "batch_size": 1,
                   "num_batches": 0, "shuffle_block": 0, "canonical_nodes": 0}


def _state_skips(skip):
    """A state's "skip" as (a set of (epoch, first, end[, epochs]), a set of
    samples), each checked; a ConfigError names what is wrong."""
    what = "load_state_dict: skip"
    if not isinstance(skip, dict):
        raise ConfigError("%s must be a dict, got %s" % (what, reprlib.repr(skip)))
    if not _nested_within(skip, _MAX_STATE_DEPTH):
        raise ConfigError("%s is malformed: nested deeper than %d lists and dicts (a "
                          "skip list nests 3)" % (what, _MAX_STATE_DEPTH))
    steps = set()
    for r in skip.get("steps", []):
        if not isinstance(r, (list, tuple)) or len(r) not in (3, 4):
            raise ConfigError("%s: steps must be [epoch, first, end] triples (or [epoch, "
                              "first, end, epochs] over several epochs), got %s"
                              % (what, reprlib.repr(r)))
        values = tuple(_checks.integer(v, what + " steps") for v in r)
        if values[1] >= values[2] or values[3:] == (0,):
            raise ConfigError("%s: steps %r are empty" % (what, list(values)))
        # A range of one epoch is a triple, as skip() makes it.
        steps.add(values[:3] if values[3:] == (1,) else values)
    samples = {_checks.integer(i, what + " samples") for i in skip.get("samples", [])}
    return steps, samples


def _checked_state(state):
    """A copy of `state` whose integer fields are ints and whose "_finished" is a
    bool, each checked (an int or numpy integer, never a bool or a float, in
    range); the first bad one is a ConfigError naming the field and the value."""
    checked = dict(state)
    for key, low in _STATE_INTEGERS.items():
        if key in state and not (key == "batch_size" and state[key] is None):
            checked[key] = _checks.integer(state[key], "load_state_dict: " + key, low)
    dataset = state.get("dataset")
    if isinstance(dataset, dict) and "size" in dataset:
        checked["dataset"] = dict(dataset, size=_checks.integer(
            dataset["size"], "load_state_dict: dataset['size']"))
    checked["_finished"] = _checks.boolean(state.get("_finished", False),
                                           "load_state_dict: _finished")
    checked["base_seed_drawn"] = _checks.boolean(state.get("base_seed_drawn", False),
                                                 "load_state_dict: base_seed_drawn")
    return checked


def _resumed_batches(state, global_batch, num_batches, elastic):
    """The batches of the epoch a (checked) state says were consumed: its global
    sample count over the global batch size under the elastic partition, else
    _num_yielded."""
    if elastic and "samples" in state:
        samples = state["samples"]
        if samples % global_batch:
            raise ConfigError("load_state_dict: samples is %r, not a whole number of "
                              "global batches of %d" % (samples, global_batch))
        if samples // global_batch > num_batches:
            raise ConfigError("load_state_dict: samples is %d, %d global batches; this "
                              "loader has %d per epoch" % (samples, samples // global_batch,
                                                           num_batches))
        return samples // global_batch
    yielded = state["_num_yielded"]
    if yielded > num_batches:
        raise ConfigError("load_state_dict: _num_yielded is %r; this loader has %d "
                          "batches per epoch" % (yielded, num_batches))
    return yielded
