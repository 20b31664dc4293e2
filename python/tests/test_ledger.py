"""loader.ledger(): the samples a step trains on, from the configuration alone, equal
to what each rank's loader delivers at that step."""
import pytest
import torch
import torch.utils.data as tud

import seedloader as sl


class Probe(tud.Dataset):
    """Sample i: [i, the id of the worker that read it (-1 in the main process)]."""

    def __len__(self):
        return 37

    def __getitem__(self, i):
        info = tud.get_worker_info()
        return torch.tensor([i, -1 if info is None else info.id])


@pytest.mark.filterwarnings("ignore:.*worker processes")
@pytest.mark.parametrize("workers,partition,seeding,world,drop_last", [
    (0, "strided", "worker", 1, False),
    (2, "strided", "sample", 2, True),
    (3, "elastic", "sample", 2, False),
])
def test_every_step_is_what_each_rank_trains_on(workers, partition, seeding, world,
                                                drop_last):
    steps_seen = 0
    for rank in range(world):
        loader = sl.DataLoader(Probe(), batch_size=4, shuffle=True, seed=5,
                               num_workers=workers, rank=rank, world_size=world,
                               partition=partition, seeding=seeding, drop_last=drop_last)
        loader.set_epoch(1)
        everything = loader.ledger(range(len(loader)), epoch=1)
        for step, batch in enumerate(loader):
            entries = loader.ledger(step, epoch=1, rank=rank)
            assert [e["index"] for e in entries] == batch[:, 0].tolist()
            assert [e["slot"] for e in entries] == list(range(len(batch)))
            workers_seen = {max(w, 0) for w in batch[:, 1].tolist()}
            assert workers_seen == {e["worker"] for e in entries}
            for e in entries:
                assert (e["epoch"], e["step"], e["rank"]) == (1, step, rank)
                if seeding == "sample":
                    assert e["stream"] == [2, 1, e["index"]]
                    assert isinstance(e["fingerprint"], int)
                else:
                    assert e["stream"] == [1, 1, rank, e["worker"]]
                    assert e["fingerprint"] is None
            # The whole epoch's ledger, every rank, holds this rank's step as it is.
            assert [e for e in everything if e["step"] == step and e["rank"] == rank] \
                == entries
            steps_seen += 1
    assert steps_seen > 0


def test_order_refuses_what_it_cannot_know_naming_it():
    loader = sl.DataLoader(Probe(), batch_size=4, sampler=list(range(37)), seed=1)
    with pytest.raises(sl.ConfigError, match="its own sampler or batch_sampler"):
        loader.ledger(0)
    loader = sl.DataLoader(Probe(), batch_size=4, seed=1)
    with pytest.raises(sl.ConfigError, match="10 steps"):
        loader.ledger(10)
    with pytest.raises(sl.ConfigError, match="step must be an int"):
        loader.ledger(-1)
    with pytest.raises(sl.ConfigError, match="not a non-empty range"):
        loader.ledger(range(3, 3))
    with pytest.raises(sl.ConfigError, match="rank 1 is outside a world of 1"):
        loader.ledger(0, rank=1)
