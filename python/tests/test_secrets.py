"""A password in a URL never reaches a Python error: every message from the
engine goes through the one redaction, including ones Python wraps. And the
network's bounds are TarShards arguments, checked by name."""
import socket
import subprocess
import sys
import time

import pytest

import seedloader as sl


@pytest.fixture
def server(tmp_path):
    """A plain HTTP server on 127.0.0.1 over an empty folder (every GET is a 404),
    in a process of its own: TarShards reads its index holding the GIL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind",
                                "127.0.0.1", "--directory", str(tmp_path)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        yield "127.0.0.1:%d" % port
    finally:
        process.kill()
        process.wait()


def test_a_url_password_is_not_in_a_tarshards_error(server, tmp_path):
    url = "http://reader:Pa55-s3cret@%s/pack/" % server
    with pytest.raises(sl.DataError) as caught:
        sl.TarShards(url, transform="centercrop:8", cache_dir=str(tmp_path / "cache"))
    message = str(caught.value)
    assert "no index at http://%s/pack/index.json" % server in message
    assert "s3cret" not in message and "reader" not in message


def test_a_password_with_an_unencoded_slash_is_not_in_the_error_either(tmp_path):
    url = "http://reader:Pa55/s3cret@127.0.0.1:1/pack/"
    with pytest.raises(sl.ConfigError) as caught:
        sl.TarShards(url, transform="centercrop:8", cache_dir=str(tmp_path / "cache"))
    assert "s3cret" not in str(caught.value)


def test_the_network_bounds_are_settable_and_checked_by_name(server, tmp_path):
    with pytest.raises(sl.ConfigError, match="min_rate_bytes_s >= 1"):
        sl.TarShards("http://%s/pack/" % server, transform="centercrop:8",
                     cache_dir=str(tmp_path / "cache"), min_rate_bytes_s=0)
    (tmp_path / "pack").mkdir()
    (tmp_path / "pack" / "index.json").write_text("{" * 100)
    with pytest.raises(sl.DataError, match="larger than the limit of 10 bytes"):
        sl.TarShards("http://%s/pack/" % server, transform="centercrop:8",
                     cache_dir=str(tmp_path / "cache"), max_attempts=1, deadline_s=5,
                     max_index_bytes=10)
