"""A password in a URL never reaches a Python error: every message from the
engine goes through the one redaction, including ones Python wraps."""
import functools
import http.server
import threading

import pytest

import seedloader as sl


@pytest.fixture
def server(tmp_path):
    """A plain HTTP server on 127.0.0.1 over an empty folder: every GET is a 404."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.RequestHandlerClass.log_message = lambda *args: None
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield "127.0.0.1:%d" % httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


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
