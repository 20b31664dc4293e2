"""One rank of test_ray_fleet's DDP check, run by torchrun: a gloo process group,
a fleet of its own on the test's Ray cluster, two epochs of the elastic
partition written to $SEEDLOADER_FLEET_OUT.<rank>.json."""
import json
import os
import sys

import ray
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seedloader as sl  # noqa: E402
from test_ray_fleet import Noisy  # noqa: E402

dist.init_process_group("gloo")
ray.init(address=os.environ["SEEDLOADER_FLEET_ADDRESS"], log_to_driver=False)
fleet = sl.ray.Fleet(actors=1, num_workers=1, cpus_per_actor=0.25)
loader = sl.DataLoader(Noisy(), batch_size=4, shuffle=True, seed=5, seeding="sample",
                       partition="elastic", remote=fleet)
got = [[b["label"].tolist(), b["x"].numpy().tolist()] for e in range(2) for b in loader]
with open("%s.%d.json" % (os.environ["SEEDLOADER_FLEET_OUT"], dist.get_rank()), "w") as f:
    json.dump(got, f)
fleet.shutdown()
dist.destroy_process_group()
