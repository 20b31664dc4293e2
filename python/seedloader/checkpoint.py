"""ddp-train's checkpoints in PyTorch: load_checkpoint reads one (weights, optimizer
state, trainer state) checked whole; save_checkpoint writes PyTorch's state in the
same format, for ddp-train to resume. Also reachable as seedloader.torch.*.

A ddp-train --save writes two safetensors files (docs/training.md, "Checkpoints in PyTorch"):
  PATH          the weights alone, nn.Sequential names, so that
                model.load_state_dict(safetensors.torch.load_file(PATH), strict=True)
                works; the trainer state in its __metadata__
  PATH.optim    the optimizer state ("<param>.momentum_buffer", "<param>.exp_avg",
                "<param>.exp_avg_sq", "step") with its hyperparameters and the
                parameters' order in __metadata__
Each file carries XXH64 checksums (seed 0, 16 hex digits) of every tensor's bytes
and one over its other metadata entries (ascending key order, "key NUL value NUL");
PATH records the companion's metadata checksum, so the two cannot be mixed up
between saves. load_checkpoint checks all of it; save_checkpoint writes the same.
"""
import os

import torch

from seedloader._errors import ConfigError, DataError

CHECKPOINT_VERSION = 3
OPTIMIZER_SUFFIX = ".optim"
_MODEL_FORMAT = "seedloader.ddp-train"
_OPTIMIZER_FORMAT = "seedloader.ddp-train.optimizer"
_WRAPPED_PREFIX = "module."
# Trainer-state entries of PATH's metadata that are integers.
_TRAINER_INTS = ("base_seed", "epoch", "epoch_samples", "global_step", "world_size",
                 "workers", "dataset_size")
# Per-parameter state, in the order ddp-train's optimizers keep it.
_STATE_NAMES = {"sgd": ("momentum_buffer",), "adamw": ("exp_avg", "exp_avg_sq")}


def optimizer_file(path):
    """The companion of checkpoint `path`: its optimizer state."""
    return os.fspath(path) + OPTIMIZER_SUFFIX


def load_checkpoint(path):
    """Reads a ddp-train checkpoint and its companion, checked whole.

    Returns a dict:
      "model":     the state dict (an OrderedDict of float32 CPU tensors) for
                   model.load_state_dict(..., strict=True)
      "optimizer": torch.optim.SGD(...) or torch.optim.AdamW(...).state_dict() form
                   (one param group, parameters in the model's order), for
                   optimizer.load_state_dict(...)
      "trainer":   epoch, epoch_samples (samples one rank consumed in `epoch`),
                   global_step, base_seed, world_size, workers, dataset_size (ints),
                   dataset_fingerprint (hex str) and config (the ddp-train options a
                   resume must share, a dict)
    Raises seedloader.DataError naming the file for a missing companion, a failed
    checksum, a companion from another save or anything else out of place.
    """
    from collections import OrderedDict

    path = os.fspath(path)
    companion = optimizer_file(path)
    tensors, meta = _read_sealed(path, _MODEL_FORMAT)
    if not os.path.exists(companion):
        raise DataError("checkpoint %s: is missing: checkpoint %s keeps its optimizer "
                        "state there (one save writes both; copy or move them together)"
                        % (companion, path))
    opt_tensors, opt_meta = _read_sealed(companion, _OPTIMIZER_FORMAT)
    if meta.get("optimizer_checksum") != opt_meta["metadata_checksum"]:
        raise DataError("checkpoint %s: belongs to another save than %s (its "
                        "metadata_checksum %s is not the %s that %s records)"
                        % (companion, path, opt_meta["metadata_checksum"],
                           meta.get("optimizer_checksum"), path))
    trainer = {}
    for key in _TRAINER_INTS:
        trainer[key] = _meta_int(path, meta, key)
    trainer["dataset_fingerprint"] = _meta_get(path, meta, "dataset_fingerprint")
    trainer["config"] = _meta_json(path, meta, "config")
    names = _meta_json(companion, opt_meta, "params")
    hyper = _meta_json(companion, opt_meta, "optimizer")
    if sorted(names) != sorted(tensors):
        raise DataError("checkpoint %s: its tensors %s are not the parameters %s that %s "
                        "lists" % (path, sorted(tensors), names, companion))
    model = OrderedDict((name, tensors[name]) for name in names)
    step = opt_tensors.get("step")
    if step is None or step.dtype != torch.int64 or tuple(step.shape) != (1,):
        raise DataError("checkpoint %s: no I64 [1] tensor 'step'" % companion)
    return {"model": model,
            "optimizer": _torch_optimizer_state(companion, hyper, names, opt_tensors,
                                                int(step[0])),
            "trainer": trainer}


def save_checkpoint(path, model, optimizer, trainer):
    """Writes a checkpoint that `ddp-train --resume path` continues from.

    model: the nn.Module (or its state dict; a "module." prefix of a wrapped model is
    dropped) of the nn.Sequential that ddp-train's --model names. optimizer: the
    torch.optim.SGD or AdamW (or its state_dict()) over model.parameters(), one
    param group. trainer: the "trainer" dict of load_checkpoint(), with epoch,
    epoch_samples and global_step set to where ddp-train continues (ddp-train checks
    them against its schedule); its config must hold the optimizer's lr, momentum
    and weight_decay. Writes path.optim and then path, each through a .tmp file that
    is fsynced and renamed, and removed if anything fails.
    """
    import json

    path = os.fspath(path)
    state = model.state_dict() if isinstance(model, torch.nn.Module) else dict(model)
    if state and all(k.startswith(_WRAPPED_PREFIX) for k in state):
        state = {k[len(_WRAPPED_PREFIX):]: v for k, v in state.items()}
    weights = {}
    for name, t in state.items():
        if not isinstance(t, torch.Tensor) or t.dtype != torch.float32:
            raise ConfigError("save_checkpoint: %s is not a float32 tensor; ddp-train "
                              "models hold float32 parameters only" % name)
        weights[name] = t.detach().to("cpu").contiguous()
    names = list(weights)
    opt_state = optimizer.state_dict() if isinstance(optimizer, torch.optim.Optimizer) \
        else optimizer
    kind, hyper = _ddp_hyperparameters(optimizer, opt_state, trainer)
    groups = opt_state["param_groups"]
    ids = groups[0]["params"]
    if len(ids) != len(names):
        raise ConfigError("save_checkpoint: the optimizer has %d parameters, the model %d"
                          % (len(ids), len(names)))
    opt_tensors, step = _ddp_optimizer_tensors(kind, hyper, names, ids, opt_state["state"],
                                               weights, trainer)
    opt_tensors["step"] = torch.tensor([step], dtype=torch.int64)
    opt_meta = {"optimizer": json.dumps(hyper, separators=(",", ":")),
                "params": json.dumps(names, separators=(",", ":")),
                "global_step": str(int(trainer["global_step"]))}
    opt_checksum = _seal(opt_meta, opt_tensors, _OPTIMIZER_FORMAT)
    meta = {key: str(int(trainer[key])) for key in _TRAINER_INTS}
    meta["dataset_fingerprint"] = str(trainer["dataset_fingerprint"])
    config = trainer["config"]
    meta["config"] = config if isinstance(config, str) else json.dumps(config)
    meta["optimizer_file"] = os.path.basename(optimizer_file(path))
    meta["optimizer_checksum"] = opt_checksum
    _seal(meta, weights, _MODEL_FORMAT)
    # The companion first, as ddp-train does: a PATH never names a companion older
    # than itself.
    _write_replacing(optimizer_file(path), opt_tensors, opt_meta)
    _write_replacing(path, weights, meta)


def _xxhash():
    try:
        import xxhash
    except ImportError:
        raise ImportError("seedloader.torch checkpoints need the xxhash package "
                          "(pip install xxhash safetensors)") from None
    return xxhash


def _safetensors_torch():
    try:
        import safetensors.torch
    except ImportError:
        raise ImportError("seedloader.torch checkpoints need the safetensors package "
                          "(pip install safetensors xxhash)") from None
    return safetensors.torch


def _tensor_checksum(t):
    return _xxhash().xxh64(t.contiguous().numpy().tobytes(), seed=0).hexdigest()


def _metadata_checksum(meta):
    h = _xxhash().xxh64(seed=0)
    for key in sorted(meta, key=lambda k: k.encode()):
        if key != "metadata_checksum":
            h.update(key.encode() + b"\0" + meta[key].encode() + b"\0")
    return h.hexdigest()


def _read_sealed(path, fmt):
    """(tensors, metadata) of `path`, after every check ddp-train makes."""
    import json
    import struct

    def fail(what):
        raise DataError("checkpoint %s: %s" % (path, what))

    try:
        with open(path, "rb") as f:
            head = f.read(8)
            (n,) = struct.unpack("<Q", head) if len(head) == 8 else (None,)
            if n is None or n > os.path.getsize(path) - 8:
                fail("header length past the end of the file (not safetensors?)")
            header = json.loads(f.read(n))
    except OSError as e:
        fail("cannot read: %s" % e.strerror)
    except ValueError:
        fail("header is not JSON (not safetensors?)")
    meta = header.pop("__metadata__", None) or {}
    if meta.get("format") != fmt:
        fail("not a %s (metadata 'format' is missing or not '%s')"
             % ("ddp-train checkpoint" if fmt == _MODEL_FORMAT else
                "ddp-train optimizer file", fmt))
    if meta.get("format_version") != str(CHECKPOINT_VERSION):
        fail("format version %s is not readable: this reads version %d only"
             % (meta.get("format_version"), CHECKPOINT_VERSION))
    if meta.get("metadata_checksum") != _metadata_checksum(meta):
        fail("metadata fails its checksum (edited or corrupted)")
    try:
        tensors = _safetensors_torch().load_file(path)
    except Exception as e:  # the Rust parser's own errors name no file
        fail("not readable as safetensors: %s" % e)
    end = max([t["data_offsets"][1] for t in header.values()] or [0])
    if os.path.getsize(path) - 8 - n - end != 0:
        fail("%d trailing bytes after the data section" % (os.path.getsize(path) - 8 - n - end))
    sums = _meta_json(path, meta, "checksums")
    for name, t in tensors.items():
        if name not in sums:
            fail("no checksum for tensor '%s'" % name)
        if sums[name] != _tensor_checksum(t):
            fail("tensor '%s' fails its checksum (the file is corrupted)" % name)
    return tensors, meta


def _meta_get(path, meta, key):
    if key not in meta:
        raise DataError("checkpoint %s: metadata has no '%s'" % (path, key))
    return meta[key]


def _meta_int(path, meta, key):
    value = _meta_get(path, meta, key)
    if not value.isdigit():
        raise DataError("checkpoint %s: metadata '%s' is not a number: '%s'"
                        % (path, key, value))
    return int(value)


def _meta_json(path, meta, key):
    import json

    try:
        return json.loads(_meta_get(path, meta, key))
    except ValueError:
        raise DataError("checkpoint %s: metadata '%s' is not JSON" % (path, key)) from None


def _torch_optimizer_state(path, hyper, names, tensors, step):
    """ddp-train's optimizer state as torch.optim's state_dict()."""
    kind = hyper.get("name")
    if kind not in _STATE_NAMES:
        raise DataError("checkpoint %s: optimizer %r is neither sgd nor adamw" % (path, kind))
    state = {}
    for i, name in enumerate(names):
        entry = {}
        for s in _STATE_NAMES[kind]:
            t = tensors.get(name + "." + s)
            if t is not None:
                entry[s] = t
        if entry and kind == "adamw":
            entry = {"step": torch.tensor(float(step)), **entry}
        # Before the first step ddp-train's buffers hold nothing torch would use.
        if entry and step > 0:
            state[i] = entry
    group = {k: v for k, v in hyper.items() if k != "name"}
    if kind == "adamw":
        group["betas"] = tuple(group["betas"])
        group.update(foreach=None, maximize=False, capturable=False, differentiable=False)
    else:
        group.update(maximize=False, foreach=None, differentiable=False)
    group["params"] = list(range(len(names)))
    return {"state": state, "param_groups": [group]}


def _ddp_hyperparameters(optimizer, opt_state, trainer):
    """(kind, hyperparameters as ddp-train writes them) of a torch optimizer state,
    checked against what ddp-train can run and against trainer['config']."""
    import json

    groups = opt_state["param_groups"]
    if len(groups) != 1:
        raise ConfigError("save_checkpoint: ddp-train keeps one param group, the "
                          "optimizer has %d" % len(groups))
    g = groups[0]
    if isinstance(optimizer, torch.optim.AdamW) or "betas" in g:
        kind = "adamw"
        hyper = {"name": kind, "lr": g["lr"], "betas": list(g["betas"]), "eps": g["eps"],
                 "weight_decay": g["weight_decay"], "amsgrad": bool(g.get("amsgrad"))}
        unsupported = {"amsgrad": hyper["amsgrad"], "maximize": g.get("maximize", False),
                       "betas": tuple(g["betas"]) != (0.9, 0.999), "eps": g["eps"] != 1e-8}
    else:
        kind = "sgd"
        hyper = {"name": kind, "lr": g["lr"], "momentum": g["momentum"],
                 "dampening": g["dampening"], "weight_decay": g["weight_decay"],
                 "nesterov": bool(g["nesterov"])}
        unsupported = {"dampening": g["dampening"] != 0, "nesterov": hyper["nesterov"],
                       "maximize": g.get("maximize", False)}
    bad = [k for k, v in unsupported.items() if v]
    if bad:
        raise ConfigError("save_checkpoint: ddp-train's %s has no %s other than "
                          "PyTorch's defaults" % (kind, ", ".join(bad)))
    config = trainer["config"]
    config = json.loads(config) if isinstance(config, str) else config
    if config.get("optimizer") != kind:
        raise ConfigError("save_checkpoint: trainer['config'] names optimizer %r, the "
                          "optimizer is %s" % (config.get("optimizer"), kind))
    for key in ("lr", "momentum", "weight_decay"):
        if key not in hyper:
            continue
        ours = torch.tensor(hyper[key], dtype=torch.float32).item()
        if ours != torch.tensor(config.get(key, 0.0), dtype=torch.float32).item():
            raise ConfigError("save_checkpoint: the optimizer's %s is %r, trainer['config']"
                              " says %r: ddp-train resumes with the config's options, so "
                              "set both" % (key, hyper[key], config.get(key)))
    return kind, hyper


def _ddp_optimizer_tensors(kind, hyper, names, ids, torch_state, weights, trainer):
    """The companion's state tensors and step count from torch's optimizer state."""
    out = {}
    steps = set()
    for name, pid in zip(names, ids):
        entry = torch_state.get(pid, {})
        for s in _STATE_NAMES[kind]:
            t = entry.get(s)
            if t is None:
                continue
            if tuple(t.shape) != tuple(weights[name].shape):
                raise ConfigError("save_checkpoint: %s of %s has shape %s, the parameter "
                                  "%s" % (s, name, tuple(t.shape), tuple(weights[name].shape)))
            out[name + "." + s] = t.detach().to("cpu", torch.float32).contiguous()
        if kind == "adamw" and "step" in entry:
            steps.add(int(float(entry["step"])))
    have = {k.rsplit(".", 1)[0] for k in out}
    if have and have != set(names):
        raise ConfigError("save_checkpoint: the optimizer has state for %s only, not for "
                          "every parameter" % sorted(have))
    if kind == "adamw":
        if len(steps) > 1:
            raise ConfigError("save_checkpoint: AdamW's parameters have different step "
                              "counts %s; ddp-train keeps one" % sorted(steps))
        return out, steps.pop() if steps else 0
    # torch's SGD counts no steps: its first step is the one without a momentum
    # buffer, and ddp-train's SGD uses its count only to tell that step apart.
    if hyper["momentum"] != 0 and not out:
        return out, 0
    return out, max(int(trainer["global_step"]), 1 if out else 0)


def _seal(meta, tensors, fmt):
    """Adds the format, checksums and metadata_checksum to `meta`; returns the latter."""
    import json

    meta["format"] = fmt
    meta["format_version"] = str(CHECKPOINT_VERSION)
    meta["checksums"] = json.dumps({k: _tensor_checksum(t) for k, t in tensors.items()},
                                   separators=(",", ":"))
    meta["metadata_checksum"] = _metadata_checksum(meta)
    return meta["metadata_checksum"]


def _write_replacing(path, tensors, meta):
    """Writes path.tmp, fsyncs it and renames it over `path`; removes it on failure."""
    tmp = path + ".tmp"
    try:
        _safetensors_torch().save_file(tensors, tmp, metadata=meta)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)