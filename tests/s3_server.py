"""A real S3-compatible server for the object-store tests: moto's standalone server, in a process
of its own on loopback, with access checks on.

The server binds its own port (it reports it on its first line of output) and ends when its
standard input closes, so it cannot outlive the test session. Requests are signed and checked:
the server allows its first three requests without credentials, which create a user with a policy
allowing everything and its access key; every later request must be signed with that key.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
from dataclasses import dataclass
from typing import Any, Iterator

_SERVE = """
import sys
from moto.server import ThreadedMotoServer
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
print(server.get_host_and_port()[1], flush=True)
sys.stdin.read()
server.stop()
"""
_START_TIMEOUT_S = 60
_STOP_TIMEOUT_S = 10
_REGION = "us-east-1"


@dataclass(frozen=True)
class S3Server:
    """Where the server is and the key that it accepts."""

    endpoint_url: str
    key: str
    secret: str

    @property
    def storage_options(self) -> dict[str, Any]:
        """The options an fsspec/s3fs user passes (``storage_options=``)."""
        return {"key": self.key, "secret": self.secret, "endpoint_url": self.endpoint_url}

    @property
    def environment(self) -> dict[str, str]:
        """The same, as the AWS environment variables."""
        return {"AWS_ACCESS_KEY_ID": self.key, "AWS_SECRET_ACCESS_KEY": self.secret,
                "AWS_ENDPOINT_URL": self.endpoint_url, "AWS_DEFAULT_REGION": _REGION}

    def filesystem(self) -> Any:
        """An s3fs filesystem on the server, for the tests' own setup and checks."""
        import s3fs

        return s3fs.S3FileSystem(skip_instance_cache=True, **self.storage_options)


def _first_line(process: subprocess.Popen, timeout_s: float) -> str:
    ready, _, _ = select.select([process.stdout], [], [], timeout_s)
    if not ready:
        raise TimeoutError(f"moto's S3 server did not report its port within {timeout_s} s")
    line = process.stdout.readline()
    if not line.strip():
        raise RuntimeError(f"moto's S3 server exited before it started (exit code {process.poll()})")
    return line


def _access_key(endpoint_url: str) -> tuple[str, str]:
    """Create a user allowed everything, and its key, in the server's first three requests."""
    import boto3

    iam = boto3.client("iam", endpoint_url=endpoint_url, region_name=_REGION,
                       aws_access_key_id="setup", aws_secret_access_key="setup")
    iam.create_user(UserName="zoo-lite-tests")
    policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    iam.put_user_policy(UserName="zoo-lite-tests", PolicyName="everything", PolicyDocument=json.dumps(policy))
    created = iam.create_access_key(UserName="zoo-lite-tests")["AccessKey"]
    return created["AccessKeyId"], created["SecretAccessKey"]


@contextlib.contextmanager
def s3_server() -> Iterator[S3Server]:
    """Start the server, yield where it is, and stop it (also on error)."""
    environment = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="3")
    process = subprocess.Popen([sys.executable, "-c", _SERVE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, env=environment, text=True)
    try:
        port = int(_first_line(process, _START_TIMEOUT_S))
        endpoint_url = f"http://127.0.0.1:{port}"
        yield S3Server(endpoint_url, *_access_key(endpoint_url))
    finally:
        process.stdin.close()
        try:
            process.wait(_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(_STOP_TIMEOUT_S)
