#!/usr/bin/env python3
"""moto (PyPI moto[server]) as a real STS and S3 on 127.0.0.1, behaving as AWS
does where the remote tests need it: every request is authenticated (SigV4
signature, access key, session token, the role's policy) except
AssumeRoleWithWebIdentity, which AWS takes unsigned (the identity token is its
credential), and temporary credentials are refused once they expire.

Usage: moto_server.py PORT FOLDER TTL LOG TOKEN
Serves bucket "data" holding FOLDER's files and role
arn:aws:iam::123456789012:role/reader (may read S3), which
AssumeRoleWithWebIdentity grants for the identity token TOKEN (another is
refused, 403 AccessDenied) with credentials that live TTL seconds. Appends a
line "sts KEY SECRET SESSION_TOKEN" to LOG per credential handed out.
Run it with the interpreter of build/moto-venv (scripts/python_env.sh
--test-servers). Stops on SIGTERM.
"""
import json
import os
import signal
import socket
import sys
import threading

import boto3
from moto import settings
from moto.core import utils as moto_utils
from moto.core.authorization import ActionAuthenticatorMixin
from moto.core.exceptions import AccessDeniedError
from moto.iam import access_control
from moto.server import ThreadedMotoServer
from moto.sts import models as sts_models
from moto.sts import responses as sts_responses

ACCOUNT = "123456789012"
ROLE = "reader"


def main():
    port, folder, ttl, log_path, token = (int(sys.argv[1]), sys.argv[2], int(sys.argv[3]),
                                          sys.argv[4], sys.argv[5])
    lock = threading.Lock()

    # AWS takes AssumeRoleWithWebIdentity unsigned: the identity token is checked.
    authenticate = ActionAuthenticatorMixin._authenticate_and_authorize_action

    def authenticate_unless_web_identity(self, iam_request_cls, resource="*"):
        if self._get_action() == "AssumeRoleWithWebIdentity":
            if self._get_param("WebIdentityToken") != token:
                raise AccessDeniedError("a web identity token that is not TEST's",
                                        "sts:AssumeRoleWithWebIdentity")
            return None
        return authenticate(self, iam_request_cls, resource)

    ActionAuthenticatorMixin._authenticate_and_authorize_action = \
        authenticate_unless_web_identity

    # Credentials that live TTL seconds, logged as they are handed out.
    assumed_role_init = sts_models.AssumedRole.__init__

    def short_lived(self, *args, **kwargs):
        kwargs["duration"] = ttl
        assumed_role_init(self, *args, **kwargs)
        with lock, open(log_path, "a") as log:
            log.write("sts %s %s %s\n" % (self.access_key_id, self.secret_access_key,
                                          self.session_token))

    sts_models.AssumedRole.__init__ = short_lived

    # Expired temporary credentials are refused, as AWS refuses them.
    access_key_init = access_control.AssumedRoleAccessKey.__init__

    def refuse_expired(self, account_id, partition, access_key_id, headers):
        access_key_init(self, account_id, partition, access_key_id, headers)
        for role in sts_models.sts_backends[account_id][partition].assumed_roles:
            if role.access_key_id == access_key_id and role.expiration < moto_utils.utcnow():
                raise access_control.CreateAccessKeyFailure(reason="ExpiredToken")

    access_control.AssumedRoleAccessKey.__init__ = refuse_expired
    assert sts_responses  # imported so that its handlers exist before the server runs

    # Set up through a server of its own before authentication starts (moto
    # accepts anything until then); the backends are this process's, shared by
    # the server on PORT, which starts listening only once all is ready.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        setup_port = s.getsockname()[1]
    setup = ThreadedMotoServer(ip_address="127.0.0.1", port=setup_port, verbose=False)
    setup.start()
    client = dict(endpoint_url="http://127.0.0.1:%d" % setup_port,
                  region_name="us-east-1", aws_access_key_id="AKIAIOSFODNN7EXAMPLE",
                  aws_secret_access_key="setup")
    s3 = boto3.client("s3", **client)
    s3.create_bucket(Bucket="data")
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            s3.put_object(Bucket="data", Key=name, Body=f.read())
    iam = boto3.client("iam", **client)
    iam.create_role(RoleName=ROLE, AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Federated": "test"},
                       "Action": "sts:AssumeRoleWithWebIdentity"}]}))
    iam.put_role_policy(RoleName=ROLE, PolicyName="read", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": ["s3:GetObject", "s3:ListBucket"],
                       "Resource": "*"}]}))
    setup.stop()
    settings.INITIAL_NO_AUTH_ACTION_COUNT = 0
    ActionAuthenticatorMixin.request_count = 0
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()
    server.stop()


if __name__ == "__main__":
    main()
