"""How Python's process-wide generators are seeded from a seedloader stream.

In a seedloader worker, whenever a new stream starts (a worker's epoch, or each
sample with seeding="sample"), Python's `random`, NumPy's global state and torch
(if the process has imported it) are seeded from that stream's starting PCG64
state, so code that calls np.random.* or random.* is as reproducible and as
distinct across workers, epochs and ranks as the stream itself:

    root = np.random.SeedSequence([state & M, state >> 64, inc & M, inc >> 64])
           (state, inc: the stream's PCG64 state at its start; M = 2**64 - 1)
    random.seed(int128(child(0)))
    np.random's global RandomState = MT19937(child(1))
    torch.manual_seed(int63(child(2)))
    child(j) = np.random.SeedSequence(root.entropy, spawn_key=(j,))
    int63(c) = uint64(c) >> 1   (torch's own seeds are int64: torch.initial_seed()
                                 then fits an int64 tensor, as in torch's workers)

seedloader.torch.seed_worker() seeds a PyTorch DataLoader's workers with the same
functions (int128, uint64, reseed), from the worker's key instead.
"""
import random
import sys

import numpy as np

_M64 = (1 << 64) - 1
RANDOM, NUMPY, TORCH = 0, 1, 2


def int128(seq):
    """A 128-bit int from a SeedSequence (for random.seed)."""
    return sum(int(w) << (32 * k) for k, w in enumerate(seq.generate_state(4)))


def uint64(seq):
    """A 64-bit int from a SeedSequence (for torch's manual_seed)."""
    return int(seq.generate_state(1, np.uint64)[0])


def int63(seq):
    """A 63-bit int from a SeedSequence (for torch's manual_seed): torch's own
    worker seeds are int64s, and code stores torch.initial_seed() in one."""
    return uint64(seq) >> 1


def reseed_random_state(rs, seq):
    """Reseeds a legacy np.random.RandomState in place (no cached Gaussian)."""
    bit_generator = getattr(np.random, rs.get_state(legacy=False)["bit_generator"])
    rs.set_state({**bit_generator(seq).state, "has_gauss": 0, "gauss": 0.0})


def seed_process_generators(child):
    """Seeds random, numpy's global state and torch (if imported) from child(j)."""
    random.seed(int128(child(RANDOM)))
    reseed_random_state(np.random.mtrand._rand, child(NUMPY))
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(int63(child(TORCH)))


def seed_globals_from_stream(pcg64_state):
    """Seeds the process generators from a PCG64 `state` dict (bit_generator.state)."""
    state, inc = pcg64_state["state"]["state"], pcg64_state["state"]["inc"]
    entropy = [state & _M64, state >> 64, inc & _M64, inc >> 64]
    seed_process_generators(
        lambda j: np.random.SeedSequence(entropy, spawn_key=(j,)))
