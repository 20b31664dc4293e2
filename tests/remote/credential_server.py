#!/usr/bin/env python3
"""Where cloud jobs get AWS credentials, stubbed for the remote tests on 127.0.0.1.

Usage: credential_server.py PORT LOG KEY SECRET TTL
Hands out KEY and SECRET (the S3 server's) with a new session token "token-N" each
time, expiring TTL seconds on, from:
  PUT /latest/api/token                        IMDSv2's session token "imds-session"
                                               (needs X-aws-ec2-metadata-token-ttl-seconds)
  GET /latest/meta-data/iam/security-credentials/       the role "test-role"
  GET /latest/meta-data/iam/security-credentials/test-role   its credentials (JSON)
      (both need X-aws-ec2-metadata-token: imds-session, else 401)
  GET /container                               container credentials (JSON; needs
                                               Authorization: container-auth, else 401;
                                               500 while the file LOG.fail exists)
  POST / Action=AssumeRoleWithWebIdentity&...  STS, the form in the body (XML; needs
                                               WebIdentityToken web-identity-jwt, else
                                               403 AccessDenied, whose message echoes
                                               the token, as received and as sent)
Appends one line per credential handed out to LOG: "imds", "container" or "sts".
"""
import datetime
import http.server
import json
import os
import socketserver
import sys
import threading
import urllib.parse
from xml.sax.saxutils import escape


def main():
    port, log_path, key, secret, ttl = (int(sys.argv[1]), sys.argv[2], sys.argv[3],
                                        sys.argv[4], int(sys.argv[5]))
    lock = threading.Lock()
    issued = [0]

    def credentials(kind):
        with lock:
            issued[0] += 1
            with open(log_path, "a") as log:
                log.write(kind + "\n")
            n = issued[0]
        expires = (datetime.datetime.now(datetime.timezone.utc) +
                   datetime.timedelta(seconds=ttl)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {"AccessKeyId": key, "SecretAccessKey": secret, "Token": "token-%d" % n,
                "Expiration": expires}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def answer(self, status, body, kind="application/json"):
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_PUT(self):
            if self.path == "/latest/api/token" and \
                    self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
                self.answer(200, "imds-session", "text/plain")
            else:
                self.answer(400, "", "text/plain")

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            form = self.rfile.read(length).decode()
            query = urllib.parse.parse_qs(form)
            if self.path != "/" or query.get("Action") != ["AssumeRoleWithWebIdentity"] or \
                    query.get("WebIdentityToken") != ["web-identity-jwt"]:
                # As some identity providers answer: the refused token quoted.
                sent = form.split("WebIdentityToken=")[-1].split("&")[0]
                self.answer(403, "<ErrorResponse><Error><Code>AccessDenied</Code>"
                            "<Message>Not authorized to perform "
                            "sts:AssumeRoleWithWebIdentity with the token %s (sent as %s)"
                            "</Message></Error></ErrorResponse>"
                            % (escape("".join(query.get("WebIdentityToken", []))),
                               escape(sent)), "text/xml")
                return
            c = credentials("sts")
            self.answer(200, (
                "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult>"
                "<Credentials><AccessKeyId>%s</AccessKeyId>"
                "<SecretAccessKey>%s</SecretAccessKey><SessionToken>%s</SessionToken>"
                "<Expiration>%s</Expiration></Credentials>"
                "</AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>"
            ) % (c["AccessKeyId"], c["SecretAccessKey"], c["Token"], c["Expiration"]),
                "text/xml")

        def do_GET(self):
            url = urllib.parse.urlsplit(self.path)
            base = "/latest/meta-data/iam/security-credentials/"
            if url.path.startswith(base):
                if self.headers.get("X-aws-ec2-metadata-token") != "imds-session":
                    self.answer(401, "", "text/plain")
                elif url.path == base:
                    self.answer(200, "test-role", "text/plain")
                elif url.path == base + "test-role":
                    c = credentials("imds")
                    c.update(Code="Success", Type="AWS-HMAC")
                    self.answer(200, json.dumps(c))
                else:
                    self.answer(404, "", "text/plain")
            elif url.path == "/container":
                if os.path.exists(log_path + ".fail"):
                    self.answer(500, '{"message": "agent down"}')
                elif self.headers.get("Authorization") != "container-auth":
                    self.answer(401, '{"message": "not authorized"}')
                else:
                    self.answer(200, json.dumps(credentials("container")))
            else:
                self.answer(404, "", "text/plain")

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True

    Server(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
