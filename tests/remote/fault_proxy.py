#!/usr/bin/env python3
"""A fault-injecting HTTP proxy for the remote tests, on 127.0.0.1 only.

Usage: fault_proxy.py PORT UPSTREAM_PORT FAULT[,FAULT...]
Forwards each GET (with its Range and Authorization headers) to
127.0.0.1:UPSTREAM_PORT and answers request k with FAULTS[k % len(FAULTS)]:
  ok        the upstream's answer, unchanged
  503, 429  that status, with a short body, and nothing forwarded
  drop      the connection closed before any answer
  truncate  the upstream's headers (its full Content-Length) and half its body,
            then the connection closed
  stall     nothing for 3 s, then the connection closed
  delayMS   the upstream's answer, unchanged, MS milliseconds late (delay20: a
            round trip to a store 20 ms away)
"""
import http.client
import http.server
import itertools
import socketserver
import sys
import threading
import time


def main():
    port, upstream, faults = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(",")
    counter = itertools.count()
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            with lock:
                fault = faults[next(counter) % len(faults)]
            if fault == "drop":
                self.close_connection = True
                return
            if fault == "stall":
                time.sleep(3)
                self.close_connection = True
                return
            if fault.startswith("delay"):
                time.sleep(int(fault[5:]) / 1000)
            if fault in ("503", "429"):
                body = b"injected fault\n"
                self.send_response(int(fault))
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            conn = http.client.HTTPConnection("127.0.0.1", upstream, timeout=30)
            headers = {k: v for k, v in self.headers.items()
                       if k.lower() in ("range", "authorization")}
            conn.request("GET", self.path, headers=headers)
            answer = conn.getresponse()
            body = answer.read()
            self.send_response(answer.status)
            for k, v in answer.getheaders():
                if k.lower() in ("content-type", "content-range", "accept-ranges"):
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if fault == "truncate":
                self.wfile.write(body[:len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(body)

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True

    Server(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
