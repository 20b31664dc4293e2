"""One rank of test_streams.py's two-rank runs (gloo, from the environment):
`workers` iterates a stream split by worker but not by rank, `hf` a Hugging
Face stream not split by node, and each prints the DuplicateStreamError;
`ranks` iterates one split by shard_stream and writes the samples it read to
<dir>/rank<r>."""
import os
import sys

import torch.distributed as dist
import torch.utils.data as tud

import seedloader as sl


class ByWorker(tud.IterableDataset):
    def __iter__(self):
        info = tud.get_worker_info()
        return iter(range(info.id, 40, info.num_workers))


class ByShard(tud.IterableDataset):
    def __iter__(self):
        for shard in sl.shard_stream(range(8)):
            yield from range(5 * shard, 5 * shard + 5)


def main(split, folder):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if split == "hf":
        import datasets
        dataset = datasets.Dataset.from_dict({"id": list(range(48))}).to_iterable_dataset(
            num_shards=8).with_format("torch")
    else:
        dataset = ByWorker() if split == "workers" else ByShard()
    loader = sl.DataLoader(dataset, batch_size=2, num_workers=2)  # the seed agreed
    try:
        seen = [int(x) for batch in loader for x in (batch["id"] if split == "hf" else batch)]
    except sl.DuplicateStreamError as e:
        print("DuplicateStreamError:", e)
    else:
        with open(os.path.join(folder, "rank%d" % rank), "w") as f:
            f.write(" ".join(map(str, seen)))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:])
