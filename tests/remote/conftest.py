"""Real servers on this machine for the remote tests: an sshd and moto's S3 server, each on a free port.

``sshd`` starts Debian's OpenSSH server as the current user with a host key and a user key
made for the session, and a home folder whose ``~/.ssh/config`` names three hosts
(``node01``, ``node02``, ``tuiloss-test``) that all reach it: tuiloss finds them the way
it finds a user's real hosts, through asyncssh's reading of ``~/.ssh/config`` and
``~/.ssh/known_hosts``. ``s3`` starts ``moto``'s threaded server and points the AWS
environment (``AWS_ENDPOINT_URL``, test keys) at it. Either skips, with the reason, when it
cannot start.
"""

from __future__ import annotations

import getpass
import logging
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
HOSTS = ("node01", "node02", "tuiloss-test")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_port(port: int, deadline: float, proc: subprocess.Popen | None = None) -> bool:
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


@dataclass(frozen=True)
class Sshd:
    port: int
    home: Path  # HOME for tuiloss: .ssh/config, known_hosts and the user key
    user: str

    def env(self) -> dict[str, str]:
        """The environment of a tuiloss process that reaches this server through ``~/.ssh``."""
        env = {k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"}
        env["HOME"] = str(self.home)
        return env


@pytest.fixture(scope="session")
def sshd_server(tmp_path_factory) -> Sshd:
    if not os.path.exists(SSHD):
        pytest.skip("no sshd: apt-get install openssh-server (.ci/run does)")
    if shutil.which("ssh-keygen") is None:
        pytest.skip("no ssh-keygen: apt-get install openssh-client")
    pytest.importorskip("sshfs", reason="sshfs is not installed: pip install 'tuiloss[ssh]'")
    base = tmp_path_factory.mktemp("sshd")
    os.chmod(base, 0o700)
    for name in ("host", "client"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(base / name)], check=True)
    (base / "authorized_keys").write_text((base / "client.pub").read_text())
    port = free_port()
    user = getpass.getuser()
    config = base / "sshd_config"
    config.write_text("\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {base / 'host'}", f"PidFile {base / 'sshd.pid'}",
        f"AuthorizedKeysFile {base / 'authorized_keys'}", "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes", "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no",
        "StrictModes no", "Subsystem sftp internal-sftp", "LogLevel ERROR", "MaxSessions 64", "MaxStartups 64",
    ]) + "\n")
    os.makedirs("/run/sshd", exist_ok=True)  # its privilege-separation folder
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if not _wait_port(port, time.monotonic() + 10, proc):
        proc.kill()
        err = proc.stderr.read().decode(errors="replace")[-500:] if proc.stderr else ""
        pytest.skip(f"sshd did not start: {err}")
    home = base / "home"
    (home / ".ssh").mkdir(parents=True)
    shutil.copy(base / "client", home / ".ssh" / "id_ed25519")
    os.chmod(home / ".ssh" / "id_ed25519", 0o600)
    host_key = (base / "host.pub").read_text().split()[:2]
    names = ",".join(f"[{name}]:{port}" for name in ("127.0.0.1", *HOSTS))
    (home / ".ssh" / "known_hosts").write_text(f"{names} {' '.join(host_key)}\n")
    (home / ".ssh" / "config").write_text("".join(
        f"Host {name}\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n"
        f"  IdentityFile {home / '.ssh' / 'id_ed25519'}\n" for name in HOSTS))
    yield Sshd(port, home, user)
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture
def sshd(sshd_server: Sshd, monkeypatch) -> Sshd:
    """The sshd, with HOME pointed at its ``~/.ssh`` for this test (no agent)."""
    monkeypatch.setenv("HOME", str(sshd_server.home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return sshd_server


@dataclass(frozen=True)
class S3:
    endpoint: str

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(S3_ENV, AWS_ENDPOINT_URL=self.endpoint)
        return env

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id="testing", aws_secret_access_key="testing")


S3_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


@pytest.fixture(scope="session")
def s3_server() -> S3:
    pytest.importorskip("s3fs", reason="s3fs is not installed: pip install 'tuiloss[s3]'")
    try:
        from moto.server import ThreadedMotoServer
    except ImportError:
        pytest.skip("moto's server is not installed: pip install 'moto[server]'")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    try:
        server.start()
    except Exception as exc:  # a server that cannot start is a skip, said with its reason
        pytest.skip(f"moto's S3 server did not start: {exc}")
    if not _wait_port(port, time.monotonic() + 10):
        server.stop()
        pytest.skip("moto's S3 server did not answer")
    yield S3(f"http://127.0.0.1:{port}")
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
