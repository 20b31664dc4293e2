"""PyTorch reference for torch_agreement_test.cc.

For each JSON case file given: reads the case (layers, state_dict by nn.Sequential names, input, targets),
builds the same torch.nn.Sequential, loads the parameters with load_state_dict
(strict, so names and shapes must match PyTorch's), runs forward, the loss and
backward in float64; then, from the same start, three steps (forward, backward,
step on the same batch) of SGD(momentum, nesterov, weight decay), of SGD(momentum,
dampening) and of AdamW. Prints a JSON list, one entry per case: loss, output,
grads, params after each optimizer's three steps.
"""
import json
import sys

import torch


def build(layers):
    mods = []
    for spec in layers:
        kind, a = spec["kind"], spec.get("args", [])
        if kind == "Linear":
            mods.append(torch.nn.Linear(a[0], a[1]))
        elif kind == "Conv2d":
            mods.append(torch.nn.Conv2d(a[0], a[1], a[2], stride=a[3], padding=a[4]))
        elif kind == "ReLU":
            mods.append(torch.nn.ReLU())
        elif kind == "MaxPool2d":
            mods.append(torch.nn.MaxPool2d(a[0]))
        elif kind == "Flatten":
            mods.append(torch.nn.Flatten())
        else:
            raise ValueError(kind)
    return torch.nn.Sequential(*mods).double()


STEPS = 3


def run(case, make_opt):
    model = build(case["layers"])
    state = {k: torch.tensor(v["data"], dtype=torch.float64).reshape(v["shape"])
             for k, v in case["state_dict"].items()}
    model.load_state_dict(state, strict=True)
    x = torch.tensor(case["x"], dtype=torch.float64).reshape(case["x_shape"])
    opt = make_opt(model.parameters())
    first = None
    for _ in range(STEPS):
        opt.zero_grad()
        out = model(x)
        if case["loss"] == "cross_entropy":
            loss = torch.nn.functional.cross_entropy(out, torch.tensor(case["labels"]))
        else:
            y = torch.tensor(case["y"], dtype=torch.float64).reshape(out.shape)
            loss = torch.nn.functional.mse_loss(out, y)
        loss.backward()
        if first is None:
            grads = {k: p.grad.flatten().tolist() for k, p in model.named_parameters()}
            first = (loss.item(), out.detach().flatten().tolist(), grads)
        opt.step()
    params = {k: p.detach().flatten().tolist() for k, p in model.named_parameters()}
    return first + (params,)


def main():
    results = []
    for path in sys.argv[1:]:  # one interpreter for every case: importing torch is slow
        case = json.load(open(path))
        loss, out, grads, sgd = run(case, lambda p: torch.optim.SGD(
            p, lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True))
        _, _, _, damped = run(case, lambda p: torch.optim.SGD(
            p, lr=0.1, momentum=0.9, dampening=0.5))
        _, _, _, adamw = run(case, lambda p: torch.optim.AdamW(
            p, lr=0.01, weight_decay=0.01))
        results.append({"loss": loss, "out": out, "grads": grads, "sgd": sgd,
                        "sgd_dampened": damped, "adamw": adamw})
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
