"""sl.TarShards over HTTP: a packed folder served by nginx on 127.0.0.1 gives the
same batches as the folder read locally, through a bounded cache in cache_dir."""
import json
import os
import socket
import subprocess
import tarfile
import time

import numpy as np
import pytest
import xxhash

import seedloader as sl
from tar_shards import write_png_shard

NGINX = "/usr/sbin/nginx"


def write_packed(folder, shards=4, per_shard=5):
    """A folder as seedloader-pack writes it: PNG samples, labels, index.json."""
    os.makedirs(folder)
    rng = np.random.default_rng(3)
    entries, k = [], 0
    for s in range(shards):
        name = "%06d.tar" % s
        write_png_shard(os.path.join(folder, name), k, per_shard, rng,
                        lambda key: (20 + key % 3, 22, 3))
        k += per_shard
        data = open(os.path.join(folder, name), "rb").read()
        entries.append({"name": name, "bytes": len(data), "samples": per_shard,
                        "xxh64": xxhash.xxh64(data).hexdigest()})
    with open(os.path.join(folder, "index.json"), "w") as f:
        json.dump({"format": "seedloader.shards", "format_version": 1, "samples": k,
                   "fields": ["cls", "png"], "shards": entries}, f)
    return entries


@pytest.fixture
def nginx(tmp_path):
    """nginx serving tmp_path/www at the returned base URL, stopped afterwards."""
    if not os.access(NGINX, os.X_OK):
        if os.environ.get("SEEDLOADER_REQUIRE_CROSS_CHECKS") == "1":
            pytest.fail("nginx is not installed (scripts/setup.sh installs nginx-light)")
        pytest.skip("nginx is not installed (scripts/setup.sh installs nginx-light)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = tmp_path / "nginx"
    (conf / "tmp").mkdir(parents=True)
    temp = "".join("  %s_temp_path %s;\n" % (k, conf / "tmp")
                   for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    (conf / "nginx.conf").write_text(
        "daemon off;\nmaster_process off;\nerror_log %s/error.log;\npid %s/nginx.pid;\n"
        "events { worker_connections 64; }\nhttp {\n  access_log off;\n%s"
        "  server { listen 127.0.0.1:%d; root %s; }\n}\n"
        % (conf, conf, temp, port, tmp_path / "www"))
    proc = subprocess.Popen([NGINX, "-p", str(conf), "-c", str(conf / "nginx.conf"),
                             "-e", str(conf / "error.log")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, (conf / "error.log").read_text()
                assert time.monotonic() < deadline, "nginx did not listen"
                time.sleep(0.02)
        yield "http://127.0.0.1:%d/" % port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def epoch_bytes(data, workers, epoch):
    loader = sl.DataLoader(data, batch_size=3, num_workers=workers, shuffle=True, seed=9,
                           seeding="sample")
    loader.set_epoch(epoch)
    return [(b["image"].numpy().tobytes(), b["label"].numpy().tobytes()) for b in loader]


def test_remote_batches_equal_local_ones(nginx, tmp_path):
    entries = write_packed(str(tmp_path / "www" / "data"))
    local = sl.TarShards(str(tmp_path / "www" / "data"), transform="rrc:16,hflip")
    largest = max(e["bytes"] for e in entries)
    remote = sl.TarShards(nginx + "data/", transform="rrc:16,hflip",
                          cache_dir=str(tmp_path / "cache"), cache_limit=2 * largest)
    assert len(remote) == len(local) == 20
    for epoch in (0, 1):
        want = epoch_bytes(local, 0, epoch)
        for workers in (0, 2):
            assert epoch_bytes(remote, workers, epoch) == want
    cached = sum(f.stat().st_size for f in (tmp_path / "cache").rglob("*") if f.is_file())
    assert cached <= 3 * largest


def test_a_missing_index_names_the_pack_command(nginx, tmp_path):
    write_packed(str(tmp_path / "www" / "data"))
    os.remove(tmp_path / "www" / "data" / "index.json")
    with pytest.raises(sl.DataError, match="seedloader-pack"):
        sl.TarShards(nginx + "data", transform="rrc:16", cache_dir=str(tmp_path / "c"))


def test_a_failed_download_ahead_is_counted_and_quoted_by_the_read_that_needs_it(
        nginx, tmp_path):
    entries = write_packed(str(tmp_path / "www" / "data"))
    assert sl.TarShards(str(tmp_path / "www" / "data"),
                        transform="rrc:16").prefetch_errors == (0, "")
    remote = sl.TarShards(nginx + "data/", transform="rrc:16",
                          cache_dir=str(tmp_path / "cache"))
    os.remove(tmp_path / "www" / "data" / entries[-1]["name"])  # the server lost it
    loader = sl.DataLoader(remote, batch_size=5, num_workers=1, shuffle=False)
    batches = iter(loader)
    next(batches)  # the worker announced the shards ahead; the last one's fetch fails
    deadline = time.monotonic() + 20
    while "HTTP 404" not in remote.prefetch_errors[1] and time.monotonic() < deadline:
        time.sleep(0.02)
    count, first = remote.prefetch_errors
    assert count >= 1  # each batch that announces the shard tries it again
    assert first.startswith("downloading shard %sdata/%s ahead: GET "
                            % (nginx, entries[-1]["name"])) and "HTTP 404" in first
    with pytest.raises(sl.WorkerError, match=r"[0-9]+ download\(s\) ahead failed before; "
                       r"the first: downloading shard .*HTTP 404"):
        list(batches)


def test_the_shard_order_is_numpys_shard_permutation_then_block_shuffles(tmp_path):
    write_packed(str(tmp_path / "data"), shards=4, per_shard=5)
    data = sl.TarShards(str(tmp_path / "data"), transform="rrc:16")
    loader = sl.DataLoader(data, batch_size=5, num_workers=2, shuffle=True, seed=21,
                           seeding="sample", order="shards", shuffle_block=5)
    for epoch in (0, 1):
        loader.set_epoch(epoch)
        got = []
        for _ in loader:
            got.extend(loader.last_indices)
        g = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
            21, spawn_key=(0, epoch))))
        order = np.concatenate([np.arange(5 * s, 5 * s + 5) for s in g.permutation(4)])
        for start in range(0, 20, 5):
            g.shuffle(order[start:start + 5])
        assert got == order.tolist()
        # A block of one shard's size here: each batch reads one shard.
        assert all(len({i // 5 for i in got[b:b + 5]}) == 1 for b in range(0, 20, 5))
    state = loader.state_dict()
    assert state["order"] == "shards" and state["shuffle_block"] == 5
    other = sl.DataLoader(data, batch_size=5, shuffle=True, seed=21, seeding="sample",
                          order="shards", shuffle_block=10)
    with pytest.raises(sl.ConfigError, match="shuffle_block=5, this loader has 10"):
        other.load_state_dict(state)
    with pytest.raises(sl.ConfigError, match="shuffle_block must be an int >= 0"):
        sl.DataLoader(data, shuffle=True, order="shards", shuffle_block=-1)


def test_a_missing_transform_is_a_config_error_that_says_so(tmp_path):
    write_packed(str(tmp_path / "data"))
    with pytest.raises(sl.ConfigError, match=r"TarShards\(.*data\): transform is missing: "
                       r"give a chain that fixes the image size"):
        sl.TarShards(str(tmp_path / "data"))
    with pytest.raises(sl.ConfigError, match="transform is missing"):
        sl.TarShards(str(tmp_path / "data"), transform=None)
    assert len(sl.TarShards(str(tmp_path / "data"), "rrc:16")) == 20


def test_the_shard_order_needs_a_data_set_in_shards():
    with pytest.raises(sl.ConfigError, match="order shards reads a data set shard by shard"):
        sl.DataLoader(sl.Synthetic(8, 4, 4, 3), shuffle=True, seed=1, order="shards")


def test_cache_verify_hash_fetches_a_changed_shard_again(nginx, tmp_path):
    write_packed(str(tmp_path / "www" / "data"))
    local = sl.TarShards(str(tmp_path / "www" / "data"), transform="rrc:16,hflip")
    cache = tmp_path / "cache"
    want = epoch_bytes(local, 0, 0)
    first = sl.TarShards(nginx + "data/", transform="rrc:16,hflip", cache_dir=str(cache))
    assert epoch_bytes(first, 0, 0) == want
    # The first label of a cached shard rewritten at the same size, with its
    # modification time put back: only a full hash can see it.
    shard = next(p for p in cache.rglob("000000.tar.*") if p.suffix not in (".stat", ".part"))
    before = shard.stat()
    with tarfile.open(shard) as tar:
        at = next(m.offset_data for m in tar.getmembers() if m.name.endswith(".cls"))
    with open(shard, "r+b") as f:
        f.seek(at)
        digit = f.read(1)
        f.seek(at)
        f.write(b"1" if digit == b"0" else b"0")
    os.utime(shard, ns=(before.st_atime_ns, before.st_mtime_ns))
    trusting = sl.TarShards(nginx + "data/", transform="rrc:16,hflip", cache_dir=str(cache),
                            cache_verify="none")
    assert epoch_bytes(trusting, 0, 0) != want
    hashing = sl.TarShards(nginx + "data/", transform="rrc:16,hflip", cache_dir=str(cache),
                           cache_verify="hash")
    assert epoch_bytes(hashing, 0, 0) == want
    with pytest.raises(sl.ConfigError, match="cache_verify"):
        sl.TarShards(nginx + "data/", transform="rrc:16", cache_dir=str(cache),
                     cache_verify="full")


def test_a_mixture_of_a_remote_and_a_local_pack_reads_both_through_their_streams(
        nginx, tmp_path):
    # Two packs, one served over HTTP through the cache (reading ahead across the
    # mixture's indices), one local: the same batches as two local packs.
    write_packed(str(tmp_path / "www" / "web"))
    write_packed(str(tmp_path / "local"), shards=2, per_shard=4)

    def mixture(web):
        return sl.Mixture({"web": web, "curated": sl.TarShards(str(tmp_path / "local"),
                                                               transform="rrc:16,hflip")},
                          {"web": 3, "curated": 1}, samples_per_epoch=24)

    def batches(data, workers):
        loader = sl.DataLoader(data, batch_size=4, num_workers=workers, seed=9,
                               seeding="sample")
        out = []
        for epoch in range(2):
            loader.set_epoch(epoch)
            out += [(b["image"].numpy().tobytes(), loader.last_indices) for b in loader]
        return out

    want = batches(mixture(sl.TarShards(str(tmp_path / "www" / "web"),
                                        transform="rrc:16,hflip")), 0)
    remote = sl.TarShards(nginx + "web/", transform="rrc:16,hflip",
                          cache_dir=str(tmp_path / "cache"))
    assert batches(mixture(remote), 2) == want
    assert {name for _, indices in want for name, _ in indices} == {"web", "curated"}
