"""A password in a URL never reaches a Python error, nor a token a server
echoes: every message from the engine goes through the one redaction, including
ones Python wraps. And the network's bounds are TarShards arguments, checked by
name."""
import http.server
import socket
import socketserver
import subprocess
import sys
import threading
import time
import urllib.parse
from xml.sax.saxutils import escape

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


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


@pytest.fixture
def answering(request):
    """An HTTP server on 127.0.0.1 in a thread of this process (TarShards lets
    other threads run while it reads), answering with the handler class given by
    indirect parametrization; yields its base URL."""
    stop = threading.Event()
    handler = type("Handler", (request.param,), {"stop": stop})
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield "http://127.0.0.1:%d" % server.server_address[1]
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


class EchoingSts(http.server.BaseHTTPRequestHandler):
    """STS refusing every identity token and quoting it, decoded and as sent."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        form = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        token = urllib.parse.parse_qs(form).get("WebIdentityToken", [""])[0]
        sent = form.split("WebIdentityToken=")[-1].split("&")[0]
        body = ("<ErrorResponse><Error><Code>InvalidIdentityToken</Code><Message>"
                "Token %s (as sent: %s) is not valid</Message></Error></ErrorResponse>"
                % (escape(token), escape(sent))).encode()
        self.send_response(400)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


# A service account token as EKS projects it: a JSON Web Token.
JWT = ("eyJhbGciOiJSUzI1NiIsImtpZCI6IjFlMjM0NTY3ODkwIn0." +
       "eyJhdWQiOlsic3RzLmFtYXpvbmF3cy5jb20iXSwic3ViIjoic3lzdGVtOnNlcnZpY2VhY2NvdW50" * 3 +
       ".c2lnbmF0dXJlLW9mLXRoZS1rdWJlcm5ldGVzLWlzc3Vlcg-_")


@pytest.mark.parametrize("answering", [EchoingSts], indirect=True)
def test_an_identity_token_that_sts_echoes_is_not_in_the_error(answering, tmp_path,
                                                                monkeypatch):
    (tmp_path / "token").write_text(JWT + "\n")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_NO_SIGN_REQUEST", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_WEB_IDENTITY_TOKEN_FILE", str(tmp_path / "token"))
    monkeypatch.setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/reader")
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", answering)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")  # never reached
    with pytest.raises(sl.ConfigError) as caught:
        sl.TarShards("s3://data/", transform="centercrop:8", cache_dir=str(tmp_path / "c"))
    message = str(caught.value)
    assert ("web identity (role arn:aws:iam::123456789012:role/reader through STS at %s)"
            ": HTTP 400 InvalidIdentityToken: Token [redacted] (as sent: [redacted]) is "
            "not valid" % answering) in message, message
    assert not any(JWT[i:i + 16] in message for i in range(len(JWT) - 15)), message


class TricklingIndex(http.server.BaseHTTPRequestHandler):
    """index.json announced at 1000 bytes and sent a byte every half second."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "1000")
        self.end_headers()
        try:
            while not self.stop.wait(0.5):
                self.wfile.write(b"{")
                self.wfile.flush()
        except OSError:
            pass  # the reader gave up


@pytest.mark.parametrize("answering", [TricklingIndex], indirect=True)
def test_a_trickling_index_fails_within_index_deadline_s(answering, tmp_path):
    start = time.monotonic()
    with pytest.raises(sl.DataError, match=r"GET %s/pack/index\.json: not read within "
                       r"index_deadline_s 1 s" % answering):
        sl.TarShards(answering + "/pack/", transform="centercrop:8",
                     cache_dir=str(tmp_path / "cache"), index_deadline_s=1)
    assert time.monotonic() - start < 10  # ten times the deadline
    with pytest.raises(sl.ConfigError, match="index_deadline_s >= 0"):
        sl.TarShards(answering + "/pack/", transform="centercrop:8",
                     cache_dir=str(tmp_path / "cache"), index_deadline_s=-1)
