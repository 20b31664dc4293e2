#!/usr/bin/python3
"""PyTorch's side of the dataset-index memory comparison (bench/datasets_memory).

A map-style Dataset over a Python list of N path strings (the usual ImageFolder
pattern), one epoch through a DataLoader with 2 persistent workers; then each
worker's PSS and private memory from /proc/PID/smaps_rollup. Reading a Python
object writes its reference count, so copy-on-write gives every worker its own
copy of the pages it touched: the growth that flat arrays avoid.

    /usr/bin/python3 bench/torch_memory.py [N]      (default 10**7)
"""
import os
import sys
import time

import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, SequentialSampler


class PathList(Dataset):
    def __init__(self, n):
        self.paths = ["c%03d/%09d.jpg" % (i % 1000, i) for i in range(n)]
        self.labels = [i % 1000 for i in range(n)]

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, indices):  # a whole batch of indices at a time
        total = 0
        for i in indices:
            total += len(self.paths[i]) + self.labels[i]
        return torch.tensor(total)


def memory(pid):
    fields = {}
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                fields[parts[0].rstrip(":")] = int(parts[1]) * 1024
    return fields["Pss"], fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10**7
    start = time.time()
    data = PathList(n)
    pss, _ = memory(os.getpid())
    print("torch: built a list of %d paths in %.1f s; main process PSS %.1f MB" %
          (n, time.time() - start, pss / 1e6))
    sampler = BatchSampler(SequentialSampler(range(n)), 65536, drop_last=False)
    loader = DataLoader(data, sampler=sampler, batch_size=None, num_workers=2,
                        persistent_workers=True)
    start = time.time()
    total = sum(int(t) for t in loader)
    print("torch: epoch over %d samples in %.1f s (checksum %d)" % (n, time.time() - start, total))
    for w in loader._iterator._workers:
        pss, private = memory(w.pid)
        print("torch: worker %d: PSS %.1f MB, private %.1f MB" % (w.pid, pss / 1e6, private / 1e6))


if __name__ == "__main__":
    main()
