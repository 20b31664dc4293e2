#!/usr/bin/env python3
"""A misbehaving HTTP server for the remote tests, on 127.0.0.1 only.

Usage: hostile_server.py PORT LOG OTHER_PORT
Appends one line per request to LOG: "PATH AUTHORIZATION TOKEN", each header's
value or "-" when absent (TOKEN: x-amz-security-token). Answers by the path:
  .../to-other/REST  307 to http://127.0.0.1:OTHER_PORT/.../landed/REST
  .../to-same/REST   307 to /.../landed/REST (a relative Location)
  .../loop/REST      302 to itself
  .../trickle/REST   200, Content-Length 1000000, then one byte every 0.2 s
  .../endless/REST   200, a chunked body of 64 KiB chunks that never ends
  .../fail-endless/  500, a chunked body that never ends
  .../one-byte/REST  200, Content-Length 1000000, one byte, then the connection closed
  .../deny/REST      403 (checked after the redirects: to-other/deny/ is denied there)
  anything else      200, the body b"payload " + PATH
"""
import http.server
import socketserver
import sys
import threading
import time


def main():
    port, log_path, other = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def redirect(self, status, location):
            self.send_response(status)
            self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self):
            path = self.path
            with lock, open(log_path, "a") as log:
                log.write("%s %s %s\n" % (
                    path, self.headers.get("Authorization", "-").replace(" ", "_"),
                    self.headers.get("x-amz-security-token", "-")))
            try:
                if "/to-other/" in path:
                    self.redirect(307, "http://127.0.0.1:%d%s"
                                  % (other, path.replace("/to-other/", "/landed/")))
                elif "/to-same/" in path:
                    self.redirect(307, path.replace("/to-same/", "/landed/"))
                elif "/loop/" in path:
                    self.redirect(302, path)
                elif "/deny/" in path:
                    self.send_response(403)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif "/one-byte/" in path:
                    self.send_response(200)
                    self.send_header("Content-Length", "1000000")
                    self.end_headers()
                    self.wfile.write(b"x")
                    self.close_connection = True
                elif "/trickle/" in path:
                    self.send_response(200)
                    self.send_header("Content-Length", "1000000")
                    self.end_headers()
                    while True:
                        self.wfile.write(b"x")
                        self.wfile.flush()
                        time.sleep(0.2)
                elif "/endless/" in path or "/fail-endless/" in path:
                    self.send_response(500 if "/fail-endless/" in path else 200)
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    chunk = b"%x\r\n%s\r\n" % (65536, b"{" * 65536)
                    while True:
                        self.wfile.write(chunk)
                else:
                    body = b"payload " + path.encode()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True

    Server(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
