"""Real servers on this machine for the remote tests (see servers.py): an sshd, moto's S3,
gcp-storage-emulator's GCS and Azurite's blob storage.

Each fixture skips, with the reason, when its server cannot start here.
"""

from __future__ import annotations

import os

import pytest

from backends import ObjectTree, S3Tree, SftpTree
from servers import S3, S3_ENV, Azurite, Gcs, Sshd, Unavailable, start_azurite, start_gcs, start_moto, start_sshd


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


def _bucket_name(request) -> str:
    return "t-" + "".join(c for c in request.node.name.lower() if c.isalnum())[:40] + f"-{os.getpid()}"


def _serve(start):
    """A session's server from ``start``, stopped at the end (skipped, with why, where it cannot start)."""
    server = _started(start)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def gcs_server() -> Gcs:
    yield from _serve(start_gcs)


@pytest.fixture
def gcs(gcs_server: Gcs, monkeypatch) -> Gcs:
    """gcp-storage-emulator, with gcsfs pointed at it for this test."""
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_server.endpoint)
    return gcs_server


@pytest.fixture
def gcs_bucket(gcs: Gcs, request) -> str:
    return _made(gcs.fs(), _bucket_name(request))


@pytest.fixture(scope="session")
def azurite_server() -> Azurite:
    yield from _serve(start_azurite)


@pytest.fixture
def azurite(azurite_server: Azurite, monkeypatch) -> Azurite:
    """Azurite, with adlfs pointed at it (its development account) for this test."""
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", azurite_server.connection_string)
    return azurite_server


@pytest.fixture
def container(azurite: Azurite, request) -> str:
    return _made(azurite.fs(), _bucket_name(request)[:63].rstrip("-"))


def _made(fs, bucket: str) -> str:
    fs.mkdir(bucket)
    return bucket


#: The remote stores every tailing test runs against (each skips, with its reason, where its server cannot start).
BACKENDS = ["sftp", "s3", "gs", "az", "hdfs"]


@pytest.fixture(params=BACKENDS)
def tree(request, tmp_path):
    """A remote tree of this test on each store: the sshd, moto's S3, the GCS emulator, Azurite, (HDFS)."""
    if request.param == "sftp":
        request.getfixturevalue("sshd")
        return SftpTree(tmp_path / "logs")
    if request.param == "s3":
        s3 = request.getfixturevalue("s3")
        return S3Tree(s3.client(), request.getfixturevalue("bucket"))
    if request.param == "gs":
        gcs = request.getfixturevalue("gcs")
        return ObjectTree(gcs.fs(), "gs", request.getfixturevalue("gcs_bucket"))
    if request.param == "az":
        azurite = request.getfixturevalue("azurite")
        return ObjectTree(azurite.fs(), "az", request.getfixturevalue("container"))
    pytest.skip("hdfs:// is wired (pyarrow's HadoopFileSystem) but has no test server here: a namenode needs "
                "Java and a Hadoop install, which this machine does not have")
