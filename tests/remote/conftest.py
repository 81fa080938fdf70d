"""Real servers on this machine for the remote tests (see servers.py): an sshd and moto's S3.

Each fixture skips, with the reason, when its server cannot start here.
"""

from __future__ import annotations

import os

import pytest

from servers import S3, S3_ENV, Sshd, Unavailable, start_moto, start_sshd


def _started(start, *args):
    """A server from ``start``, or the test skipped with the reason it could not start."""
    try:
        return start(*args)
    except Unavailable as why:
        pytest.skip(str(why))


@pytest.fixture(scope="session")
def sshd_server(tmp_path_factory) -> Sshd:
    server = _started(start_sshd, tmp_path_factory.mktemp("sshd"))
    yield server
    server.stop()


@pytest.fixture
def sshd(sshd_server: Sshd, monkeypatch) -> Sshd:
    """The sshd, with HOME pointed at its ``~/.ssh`` for this test (no agent)."""
    monkeypatch.setenv("HOME", str(sshd_server.home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return sshd_server


@pytest.fixture(scope="session")
def s3_server() -> S3:
    server = _started(start_moto)
    yield server
    server.stop()


@pytest.fixture
def s3(s3_server: S3, monkeypatch) -> S3:
    """moto's S3, with the AWS environment pointed at it for this test."""
    for key, value in S3_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint)
    return s3_server


@pytest.fixture
def bucket(s3: S3, request) -> str:
    """A new, empty bucket of this test."""
    name = "t-" + "".join(c for c in request.node.name.lower() if c.isalnum())[:40] + f"-{os.getpid()}"
    s3.client().create_bucket(Bucket=name)
    return name
