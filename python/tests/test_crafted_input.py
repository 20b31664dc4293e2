"""Mixtures, the ledger, declared skips and saved states against crafted and huge
input: each is a ConfigError naming the input, or the right answer, at once and in
bounded memory. The cases that used to hang or crash the interpreter run in a
child process with a time limit, so that a regression fails instead of stopping
the suite."""
import glob
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import seedloader as sl
from tar_shards import write_png_shard


def _synthetic(n):
    return sl.Synthetic(n, 4, 4)


def _mixture(**kw):
    return sl.Mixture({"a": _synthetic(10), "b": _synthetic(20)}, {"a": 1, "b": 1}, **kw)


def _run(code, timeout=60):
    """Runs `code` in a fresh interpreter; its output, failing on a timeout or a
    crash."""
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail("did not return within %d s" % timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _nested_list(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value


def _nested_dict(depth):
    value = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def test_a_mixture_state_nested_deep_is_a_config_error_naming_it():
    loader = sl.DataLoader(_mixture(), batch_size=4, seed=1, seeding="sample")
    state = loader.state_dict()
    for key, deep in (("history", _nested_list(100000)), ("sources", _nested_dict(100000)),
                      ("step", _nested_list(100000))):
        crafted = dict(state, mixture=dict(state["mixture"], **{key: deep}))
        with pytest.raises(sl.ConfigError, match="mixture is malformed: nested deeper "
                                                 "than 64"):
            loader.load_state_dict(crafted)
    # A shallow malformed value is still named.
    crafted = dict(state, mixture=dict(state["mixture"], history=[[[1, 2]]]))
    with pytest.raises(sl.ConfigError, match="mixture history's row 0 is not "):
        loader.load_state_dict(crafted)
    crafted = dict(state, mixture=dict(state["mixture"], history=[[[1, 2], [], [], []]]))
    with pytest.raises(sl.ConfigError, match="mixture history is malformed: expected a "
                                             r"non-negative integer below 2\^64, found "
                                             r"\[1,2\]"):
        loader.load_state_dict(crafted)
    # The skip list too.
    for skip in ({"steps": [_nested_list(100000)]}, {"samples": _nested_list(100000)}):
        with pytest.raises(sl.ConfigError, match="skip is malformed: nested deeper than 64"):
            loader.load_state_dict(dict(state, skip=skip))


def test_a_mixture_state_nested_deep_is_refused_by_the_audit(tmp_path):
    # The JSON the audit's mixture check parses (audit.check(mixture=...) and
    # seed-audit trace --mixture); parsed whole it crashed the interpreter.
    trace = tmp_path / "trace.jsonl"
    trace.write_text("")
    out = _run("""
        from seedloader import _core, DataError
        deep = '{"history": ' + '[' * 100000 + ']' * 100000 + '}'
        try:
            _core.audit_trace(%r, None, 0, 4, {}, deep)
        except DataError as e:
            print(e)
        """ % str(trace))
    assert "nested deeper than 64" in out


def test_samples_per_epoch_near_2_to_64_is_counted_right_or_refused():
    most = 2**64 - 1
    # G = 4: 2^62 steps of 4 would be 2^64 samples.
    loader = sl.DataLoader(_mixture(samples_per_epoch=most), batch_size=4, seed=1,
                           seeding="sample")
    with pytest.raises(sl.ConfigError, match="samples_per_epoch 18446744073709551615"):
        len(loader)
    # G = 3 divides 2^64 - 1: the epoch is (2^64 - 1) / 3 steps, not 0.
    loader = sl.DataLoader(_mixture(samples_per_epoch=most), batch_size=3, seed=1,
                           seeding="sample")
    assert len(loader) == most // 3


def test_a_mixture_state_at_a_step_no_epoch_has_is_refused_at_once():
    out = _run("""
        import time
        import seedloader as sl
        m = sl.Mixture({"a": sl.Synthetic(10, 4, 4), "b": sl.Synthetic(20, 4, 4)},
                       {"a": 1, "b": 1})
        loader = sl.DataLoader(m, batch_size=4, seed=1, seeding="sample")
        state = loader.state_dict()
        for first, step in ((0, 2**62), (2**62, 2**62), (8, 8), (0, 9)):
            crafted = dict(state, mixture=dict(state["mixture"], step=step,
                                               epoch_first_step=first))
            start = time.monotonic()
            try:
                loader.load_state_dict(crafted)
                print("loaded", step)
            except sl.ConfigError as e:
                print("refused in %.1f s: %s" % (time.monotonic() - start, e))
        """, timeout=120)
    lines = out.splitlines()
    assert len(lines) == 4, out
    for line in lines:
        assert line.startswith("refused in 0."), out
    assert "global step 4611686018427387904" in lines[0]
    # The epoch the state names must begin at its epoch's first step.
    assert "epoch 0 of 8 steps begins at step 0" in lines[2], out


def test_a_skip_of_10_to_12_steps_returns_at_once_and_skips_them_all():
    out = _run("""
        import time
        import seedloader as sl
        loader = sl.DataLoader(sl.Synthetic(64, 4, 4), batch_size=4, seed=1,
                               seeding="sample")
        start = time.monotonic()
        loader.skip(steps=[(1, 10**12)])
        print(time.monotonic() - start)
        print(loader.state_dict()["skip"]["steps"])
        """)
    seconds, steps = out.splitlines()
    assert float(seconds) < 1.0
    # Three ranges: the rest of epoch 0, the whole epochs between, the last's part.
    assert eval(steps) == [[0, 1, 16], [1, 0, 16, 62499999998], [62499999999, 0, 16]]
    loader = sl.DataLoader(_synthetic(64), batch_size=4, seed=1, seeding="sample")
    loader.skip(steps=[(1, 10**12)])
    assert sum(1 for _ in loader) == 1  # epoch 0: step 0 alone
    loader.set_epoch(12345)
    assert list(loader) == []
    assert all(e["skipped"] for e in loader.ledger(range(16)))
    # The state's ranges load into another loader, and spans of one or two epochs
    # are the triples they always were.
    other = sl.DataLoader(_synthetic(64), batch_size=4, seed=1, seeding="sample")
    other.load_state_dict(loader.state_dict())
    assert other.state_dict()["skip"] == loader.state_dict()["skip"]
    plain = sl.DataLoader(_synthetic(64), batch_size=4, seed=1, seeding="sample")
    plain.skip(steps=[(3, 9), (14, 19)])
    assert plain.state_dict()["skip"]["steps"] == [[0, 3, 9], [0, 14, 16], [1, 0, 3]]
    state = plain.state_dict()
    state["skip"] = {"steps": [[1, 0, 16, 0]]}
    with pytest.raises(sl.ConfigError, match=r"steps \[1, 0, 16, 0\] are empty"):
        plain.load_state_dict(state)


def test_skip_names_a_sample_outside_the_data_set_and_a_malformed_argument():
    loader = sl.DataLoader(_synthetic(64), batch_size=4, seed=1, seeding="sample")
    with pytest.raises(sl.ConfigError, match="sample 1000 is outside the data set's 64 "
                                             "samples"):
        loader.skip(samples=[1000])
    assert loader.state_dict()["skip"]["samples"] == []
    loader.skip(samples=[63])
    for bad in (5, "12"):
        with pytest.raises(sl.ConfigError, match=r"DataLoader\.skip: steps must be a list of "
                                                 r"\(first, end\) pairs"):
            loader.skip(steps=bad)
        with pytest.raises(sl.ConfigError, match=r"DataLoader\.skip: samples must be a "
                                                 r"list of sample indices"):
            loader.skip(samples=bad)
    state = loader.state_dict()
    state["skip"] = {"samples": [64]}
    with pytest.raises(sl.ConfigError, match="skips sample 64, outside the data set's 64"):
        loader.load_state_dict(state)
    # Over a Mixture: its indices, and each source's.
    mixed = sl.DataLoader(_mixture(), batch_size=4, seed=1, seeding="sample")
    with pytest.raises(sl.ConfigError, match="sample 30 is outside the data set's 30"):
        mixed.skip(samples=[30])
    with pytest.raises(sl.ConfigError, match="source 'a' has 10 samples, not 11"):
        mixed.skip(samples=[("a", 10)])
    mixed.skip(samples=[29, ("a", 9)])
    assert mixed.state_dict()["skip"]["samples"] == [9, 29]


def _write_shards(folder, counts):
    os.makedirs(folder)
    rng = np.random.default_rng(7)
    first = 0
    for s, count in enumerate(counts):
        write_png_shard(os.path.join(folder, "shard-%03d.tar" % s), first, count, rng,
                        lambda key: (10, 12, 3))
        first += count


@pytest.mark.parametrize("world", [1, 2])
def test_the_ledger_of_tar_shards_read_in_shard_order_is_what_is_delivered(tmp_path,
                                                                           world):
    _write_shards(str(tmp_path / "shards"), [5, 9, 3, 7, 4])
    pattern = str(tmp_path / "shards" / "shard-*.tar")
    assert len(glob.glob(pattern)) == 5
    data = sl.TarShards(pattern, transform="rrc:8")
    for rank in range(world):
        loader = sl.DataLoader(data, batch_size=3, shuffle=True, seed=11, order="shards",
                               seeding="sample", partition="elastic", rank=rank,
                               world_size=world, canonical_nodes=0)
        loader.set_epoch(2)
        ledger = loader.ledger(range(len(loader)), rank=rank)
        delivered = []
        for step, _ in enumerate(loader):
            delivered += [(step, i) for i in loader.last_indices]
        assert [(e["step"], e["index"]) for e in ledger] == delivered
        assert len(delivered) == len(loader) * 3
