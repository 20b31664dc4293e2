"""Trains the PyTorch twin of a ddp-train run and compares final weights.

usage: torch_reference.py DATA INIT CHECKPOINT BATCH STEPS LR
DATA holds x [N, 10] and y [N, 5]; INIT the initial weights of
nn.Sequential(Linear(10, 10), ReLU(), Linear(10, 5)); CHECKPOINT is ddp-train's.
Trains with SGD(lr) and MSE on batches of BATCH rows taken in order (wrapping at
the end of the data), STEPS steps, and prints "max_abs_diff D" against the
checkpoint's weights, which must load strictly into the same nn.Sequential (no
tensor more or less). Files are read with a small safetensors reader (numpy), so
the safetensors package is not needed.
"""
import json
import struct
import sys

import numpy as np
import torch


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    kinds = {"F32": np.float32, "I64": np.int64}
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        begin, end = t["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], dtype=kinds[t["dtype"]]).reshape(t["shape"])
    return out


def main():
    data_path, init_path, ckpt_path = sys.argv[1:4]
    batch, steps, lr = int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
    data = read_safetensors(data_path)
    x, y = torch.tensor(data["x"].copy()), torch.tensor(data["y"].copy())
    model = torch.nn.Sequential(torch.nn.Linear(10, 10), torch.nn.ReLU(), torch.nn.Linear(10, 5))
    init = read_safetensors(init_path)
    model.load_state_dict({k: torch.tensor(v.copy()) for k, v in init.items()})
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    n = x.shape[0]
    per_epoch = n // batch
    for step in range(steps):
        k = step % per_epoch
        xb, yb = x[k * batch:(k + 1) * batch], y[k * batch:(k + 1) * batch]
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(xb), yb).backward()
        opt.step()
    ours = read_safetensors(ckpt_path)
    # The checkpoint holds this model's state dict and nothing else: strict loading.
    twin = torch.nn.Sequential(torch.nn.Linear(10, 10), torch.nn.ReLU(), torch.nn.Linear(10, 5))
    twin.load_state_dict({k: torch.tensor(v.copy()) for k, v in ours.items()}, strict=True)
    diff = max(float(np.abs(v.detach().numpy() - ours[k]).max())
               for k, v in model.state_dict().items())
    print("max_abs_diff %.3g" % diff)


if __name__ == "__main__":
    main()
