#!/usr/bin/env python3
"""Two closed or simple rules for a mixture's composition, against the bound the
chosen one keeps (seedloader/mixture.h: strictly within one sample of every
source's target after every step, earliest deadline first).

Over random schedules (a new point in a fifth of the steps, cubed weights, a fifth
of them 0), prints the largest distance between a source's cumulative count and
its target for:
  greedy   per sample, the source with the largest deficit (Megatron's blending);
  webster  samples in the order their source's target reaches k + 1/2, a closed
           form (a step's counts from a search, no replay).
Both exceed one sample from 4 sources on; `sampler_test --gtest_filter=Mixture*`
prints the chosen rule's largest distance (below one).

    /usr/bin/python3 bench/mixture_methods.py
"""
import random


def schedule(rng, sources, steps):
    """Per step, each source's proportion."""
    out, p = [], None
    for _ in range(steps):
        if p is None or rng.random() < 0.2:
            w = [0.0 if rng.random() < 0.2 else rng.random() ** 3 for _ in range(sources)]
            if sum(w) == 0:
                w[0] = 1.0
            p = [x / sum(w) for x in w]
        out.append(p)
    return out


def greedy(props, g):
    n = len(props[0])
    counts, targets, worst = [0] * n, [0.0] * n, 0.0
    for p in props:
        for _ in range(g):
            targets = [t + q for t, q in zip(targets, p)]
            s = max(range(n), key=lambda s: (targets[s] - counts[s], -s))
            counts[s] += 1
            worst = max(worst, max(abs(c - t) for c, t in zip(counts, targets)))
    return worst


def webster(props, g):
    n = len(props[0])
    tail = props + [props[-1]] * 8  # samples of the last steps arrive a little later
    keys = []
    for s in range(n):
        total, k = 0.0, 0
        for step, p in enumerate(tail):
            rate = p[s]
            while rate > 0 and total + rate * g >= k + 0.5:
                keys.append((step * g + (k + 0.5 - total) / rate, s))
                k += 1
            total += rate * g
    keys.sort()
    counts, targets, worst, i = [0] * n, [0.0] * n, 0.0, 0
    for p in props:
        for _ in range(g):
            targets = [t + q for t, q in zip(targets, p)]
            counts[keys[i][1]] += 1
            i += 1
            worst = max(worst, max(abs(c - t) for c, t in zip(counts, targets)))
    return worst


def main():
    print("sources  greedy  webster")
    for sources in (2, 3, 4, 6, 8):
        rng = random.Random(sources)
        runs = [(schedule(rng, sources, 200), g) for _ in range(20) for g in (1, 3, 8)]
        print("%7d  %6.3f  %7.3f" % (sources, max(greedy(p, g) for p, g in runs),
                                    max(webster(p, g) for p, g in runs)))


if __name__ == "__main__":
    main()
