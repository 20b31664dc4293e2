"""ddp-train checkpoints in PyTorch and back (seedloader.torch.load_checkpoint /
save_checkpoint), against the real ddp-train binary.

The models are docs/training.md's nn.Sequential definitions, executed from it,
so the documentation and the test cannot drift apart. Training runs unshuffled
(--no-shuffle, one batch after another), so PyTorch and ddp-train see the same
batches, and both continue from one checkpoint: their weights must agree within
TOLERANCE. ddp-train is found through SEEDLOADER_DDP_TRAIN or in build/default;
without it the test skips, or fails under SEEDLOADER_REQUIRE_CROSS_CHECKS=1.
"""
import os
import pathlib
import re
import subprocess

import pytest
import torch

import seedloader
import seedloader.torch as slt

safetensors_torch = pytest.importorskip("safetensors.torch")

ROOT = pathlib.Path(__file__).resolve().parents[2]
# float32 training of 10 steps from identical states; measured differences are far
# below this (printed by each test, see docs/training.md).
TOLERANCE = 1e-5
ROWS, BATCH = 48, 4
PER_EPOCH = ROWS // BATCH


@pytest.fixture(scope="module")
def ddp_train():
    path = os.environ.get("SEEDLOADER_DDP_TRAIN") or str(ROOT / "build/default/tools/ddp-train")
    if not os.access(path, os.X_OK):
        if os.environ.get("SEEDLOADER_REQUIRE_CROSS_CHECKS") == "1":
            pytest.fail("no ddp-train at %s (build it, or set SEEDLOADER_DDP_TRAIN) and "
                        "SEEDLOADER_REQUIRE_CROSS_CHECKS=1 asks for every cross-check" % path)
        pytest.skip("no ddp-train at %s" % path)

    def run(*args):
        r = subprocess.run([path, *map(str, args)], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=120)
        return r.returncode, r.stdout
    return run


@pytest.fixture(scope="module")
def readme_models():
    """docs/training.md's nn.Sequential definitions, executed."""
    text = (ROOT / "docs" / "training.md").read_text()
    m = re.search(r"```python\n(# ddp-train's --model specs as nn.Sequential.*?)```", text,
                  re.S)
    assert m, "docs/training.md lost its nn.Sequential block"
    names = {}
    exec(compile(m.group(1), "docs/training.md", "exec"), names)
    return names


# Each case: ddp-train's options, the docs/training.md model, the data, and the loss.
CASES = {
    "mlp-sgd-momentum": dict(
        args=["--model", "mlp:10,10,5", "--loss", "mse", "--lr", "0.01", "--momentum", "0.9",
              "--weight-decay", "0.001"],
        model=lambda ns: ns["mlp"](10, 10, 5),
        optimizer=lambda p: torch.optim.SGD(p, lr=0.5), x=(ROWS, 10), classes=None),
    "cnn-small-adamw": dict(
        args=["--model", "cnn:small:4", "--loss", "xent", "--optimizer", "adamw", "--lr",
              "0.001", "--weight-decay", "0.01"],
        model=lambda ns: ns["cnn_small"](3, 8, 8, classes=4),
        optimizer=lambda p: torch.optim.AdamW(p), x=(ROWS, 3, 8, 8), classes=4),
    "cnn-small-sgd": dict(
        args=["--model", "cnn:small:4", "--loss", "xent", "--lr", "0.05"],
        model=lambda ns: ns["cnn_small"](3, 8, 8, classes=4),
        optimizer=lambda p: torch.optim.SGD(p, lr=0.5), x=(ROWS, 3, 8, 8), classes=4),
}


def write_data(path, case):
    g = torch.Generator().manual_seed(5)
    x = torch.randn(case["x"], generator=g)
    if case["classes"]:
        y = torch.randint(0, case["classes"], (ROWS,), generator=g)
    else:
        y = torch.randn((ROWS, 5), generator=g)
    safetensors_torch.save_file({"x": x, "y": y}, str(path))
    return x, y


def train_in_torch(model, opt, x, y, first_step, steps, xent):
    """`steps` SGD/AdamW steps on the unshuffled batches from global step first_step."""
    for step in range(first_step, first_step + steps):
        k = step % PER_EPOCH
        xb, yb = x[k * BATCH:(k + 1) * BATCH], y[k * BATCH:(k + 1) * BATCH]
        opt.zero_grad()
        out = model(xb)
        loss = (torch.nn.functional.cross_entropy(out, yb) if xent
                else torch.nn.functional.mse_loss(out, yb))
        loss.backward()
        opt.step()


def max_weight_diff(model, path):
    ours = safetensors_torch.load_file(str(path))
    return max(float((v - ours[k]).abs().max()) for k, v in model.state_dict().items())


def position(trainer, global_step):
    trainer = dict(trainer)
    trainer["global_step"] = global_step
    trainer["epoch"] = global_step // PER_EPOCH
    trainer["epoch_samples"] = global_step % PER_EPOCH * BATCH
    return trainer


@pytest.mark.parametrize("name", sorted(CASES))
def test_pytorch_and_ddp_train_continue_each_others_checkpoints(name, tmp_path, ddp_train,
                                                                readme_models):
    case = CASES[name]
    data = tmp_path / "data.safetensors"
    x, y = write_data(data, case)
    common = ["--data", "tensors:%s" % data, "--batch-size", BATCH, "--no-shuffle",
              "--workers", 0, "--seed", 1, *case["args"]]
    k, n = 5, 10

    rc, out = ddp_train(*common, "--steps", k, "--save", tmp_path / "a.safetensors")
    assert rc == 0, out

    # Strictly, from the file alone, as any PyTorch user would.
    model = case["model"](readme_models)
    model.load_state_dict(safetensors_torch.load_file(str(tmp_path / "a.safetensors")),
                          strict=True)
    # And with the optimizer state: PyTorch continues n steps, ddp-train too.
    ckpt = slt.load_checkpoint(tmp_path / "a.safetensors")
    assert ckpt["trainer"]["global_step"] == k
    assert ckpt["trainer"]["epoch_samples"] == k * BATCH
    model.load_state_dict(ckpt["model"], strict=True)
    opt = case["optimizer"](model.parameters())
    opt.load_state_dict(ckpt["optimizer"])
    train_in_torch(model, opt, x, y, k, n, case["classes"])
    rc, out = ddp_train(*common, "--steps", k + n, "--resume", tmp_path / "a.safetensors",
                        "--save", tmp_path / "b.safetensors")
    assert rc == 0, out
    forward = max_weight_diff(model, tmp_path / "b.safetensors")
    theirs = slt.load_checkpoint(tmp_path / "b.safetensors")["optimizer"]
    # torch's SGD without momentum keeps momentum_buffer None, ddp-train nothing.
    mine = {i: st for i, st in opt.state_dict()["state"].items()
            if any(v is not None for v in st.values())}
    assert sorted(mine) == sorted(theirs["state"])
    state_diff = max([float((mine[i][s] - theirs["state"][i][s]).abs().max())
                      for i in theirs["state"] for s in theirs["state"][i] if s != "step"],
                     default=0.0)

    # The way back: PyTorch's state, written by save_checkpoint, resumed by ddp-train.
    trainer = position(ckpt["trainer"], k + n)
    slt.save_checkpoint(tmp_path / "c.safetensors", model, opt, trainer)
    rc, out = ddp_train(*common, "--steps", k + 2 * n, "--resume", tmp_path / "c.safetensors",
                        "--save", tmp_path / "d.safetensors")
    assert rc == 0, out
    assert "(%d steps)" % (PER_EPOCH - (k + n) % PER_EPOCH) in out, out
    train_in_torch(model, opt, x, y, k + n, n, case["classes"])
    backward = max_weight_diff(model, tmp_path / "d.safetensors")
    print("%s: ddp-train -> PyTorch %d steps: weights %.3g, optimizer state %.3g; "
          "PyTorch -> ddp-train %d steps: weights %.3g" % (name, n, forward, state_diff,
                                                          n, backward))
    assert forward <= TOLERANCE
    assert state_diff <= TOLERANCE
    assert backward <= TOLERANCE


def test_save_checkpoint_round_trips_bit_for_bit(tmp_path, ddp_train):
    data = tmp_path / "data.safetensors"
    write_data(data, CASES["mlp-sgd-momentum"])
    rc, out = ddp_train("--data", "tensors:%s" % data, "--batch-size", BATCH, "--workers", 0,
                        "--seed", 1, *CASES["mlp-sgd-momentum"]["args"], "--steps", 3,
                        "--save", tmp_path / "a.safetensors")
    assert rc == 0, out
    a = slt.load_checkpoint(tmp_path / "a.safetensors")
    slt.save_checkpoint(tmp_path / "b.safetensors", a["model"], a["optimizer"], a["trainer"])
    b = slt.load_checkpoint(tmp_path / "b.safetensors")
    assert b["trainer"] == a["trainer"]
    for key in a["model"]:
        assert torch.equal(a["model"][key], b["model"][key])
    for i, state in a["optimizer"]["state"].items():
        for s, t in state.items():
            assert torch.equal(t, b["optimizer"]["state"][i][s])
    assert a["optimizer"]["param_groups"] == b["optimizer"]["param_groups"]


@pytest.mark.parametrize("model,data,build,extra", [
    ("cnn:small", "synthetic:16", lambda ns: ns["cnn_small"](3, 32, 32), []),
    ("mlp:3072,16,10", "synthetic:16", lambda ns: ns["mlp"](3072, 16, 10, flatten=True), []),
])
def test_readme_models_load_every_spec_strictly(model, data, build, extra, tmp_path, ddp_train,
                                               readme_models):
    rc, out = ddp_train("--data", data, "--model", model, "--batch-size", 8, "--workers", 0,
                        "--seed", 2, "--steps", 1, *extra, "--save", tmp_path / "m.safetensors")
    assert rc == 0, out
    net = build(readme_models)
    net.load_state_dict(safetensors_torch.load_file(str(tmp_path / "m.safetensors")),
                        strict=True)
    net.load_state_dict(slt.load_checkpoint(tmp_path / "m.safetensors")["model"], strict=True)


def test_split_model_checkpoint_loads_strictly(tmp_path, ddp_train, readme_models):
    rc, out = ddp_train("--data", "synthetic:16", "--model", "cnn:small", "--batch-size", 8,
                        "--workers", 0, "--seed", 2, "--steps", 1, "--mode", "ddp-mp",
                        "--split", 4, "--momentum", 0.5, "--save", tmp_path / "m.safetensors")
    assert rc == 0, out
    net = readme_models["cnn_small"](3, 32, 32)
    ckpt = slt.load_checkpoint(tmp_path / "m.safetensors")
    net.load_state_dict(ckpt["model"], strict=True)
    opt = torch.optim.SGD(net.parameters(), lr=1.0)
    opt.load_state_dict(ckpt["optimizer"])
    assert len(opt.state_dict()["state"]) == len(list(net.parameters()))


@pytest.fixture
def saved(tmp_path, ddp_train):
    data = tmp_path / "data.safetensors"
    write_data(data, CASES["mlp-sgd-momentum"])
    common = ["--data", "tensors:%s" % data, "--batch-size", BATCH, "--workers", 0, "--seed", 1,
              *CASES["mlp-sgd-momentum"]["args"]]
    for name, steps in (("a", 2), ("b", 3)):
        rc, out = ddp_train(*common, "--steps", steps, "--save", tmp_path / (name + ".safetensors"))
        assert rc == 0, out
    return tmp_path


def test_missing_companion_is_a_data_error_naming_it(saved):
    os.remove(saved / "a.safetensors.optim")
    with pytest.raises(seedloader.DataError, match=re.escape(
            str(saved / "a.safetensors.optim") + ": is missing")):
        slt.load_checkpoint(saved / "a.safetensors")


def test_companion_of_another_save_is_refused(saved):
    os.replace(saved / "b.safetensors.optim", saved / "a.safetensors.optim")
    with pytest.raises(seedloader.DataError, match="belongs to another save than"):
        slt.load_checkpoint(saved / "a.safetensors")


@pytest.mark.parametrize("name", ["a.safetensors", "a.safetensors.optim"])
def test_flipped_byte_fails_its_checksum(saved, name):
    blob = bytearray((saved / name).read_bytes())
    blob[-12] ^= 0x20
    (saved / name).write_bytes(bytes(blob))
    with pytest.raises(seedloader.DataError, match=re.escape(str(saved / name)) +
                       ".*fails its checksum"):
        slt.load_checkpoint(saved / "a.safetensors")


def test_options_that_differ_from_the_config_are_refused(saved, readme_models):
    ckpt = slt.load_checkpoint(saved / "a.safetensors")
    model = readme_models["mlp"](10, 10, 5)
    model.load_state_dict(ckpt["model"])
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.8, weight_decay=0.001)
    with pytest.raises(seedloader.ConfigError, match="momentum"):
        slt.save_checkpoint(saved / "c.safetensors", model, opt, ckpt["trainer"])
    assert not os.path.exists(saved / "c.safetensors")
    assert not os.path.exists(saved / "c.safetensors.optim")


def test_ddp_train_refuses_a_resume_whose_companion_is_missing(saved, ddp_train):
    os.remove(saved / "b.safetensors.optim")
    rc, out = ddp_train("--data", "tensors:%s" % (saved / "data.safetensors"), "--batch-size",
                        BATCH, "--workers", 0, "--seed", 1, *CASES["mlp-sgd-momentum"]["args"],
                        "--steps", 5, "--resume", saved / "b.safetensors")
    assert rc == 2, out
    assert str(saved / "b.safetensors.optim") + ": is missing" in out
