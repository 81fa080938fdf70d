"""Start the remote tests' servers on this machine: an sshd and moto's S3 server, each on a free port.

Plain functions, so the benchmarks (``benchmarks/remote.py``) start the same servers as the
fixtures in ``conftest.py``. Each raises :class:`Unavailable` with the reason when its server
cannot start here.

``start_sshd`` runs Debian's OpenSSH server as the current user with a host key and a user key
made for it, and writes a home folder whose ``~/.ssh/config`` names three hosts (``node01``,
``node02``, ``tuiloss-test``) that all reach it: tuiloss finds them the way it finds a user's
real hosts, through asyncssh's reading of ``~/.ssh/config`` and ``~/.ssh/known_hosts``.
``start_moto`` starts moto's threaded S3 server; :data:`S3_ENV` and ``AWS_ENDPOINT_URL`` point
the AWS environment at it.
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

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
HOSTS = ("node01", "node02", "tuiloss-test")
S3_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


class Unavailable(Exception):
    """Why a server cannot start here."""


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
    proc: subprocess.Popen

    def env(self) -> dict[str, str]:
        """The environment of a tuiloss process that reaches this server through ``~/.ssh``."""
        env = {k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"}
        env["HOME"] = str(self.home)
        return env

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def start_sshd(base: Path) -> Sshd:
    if not os.path.exists(SSHD):
        raise Unavailable("no sshd: apt-get install openssh-server (.ci/run does)")
    if shutil.which("ssh-keygen") is None:
        raise Unavailable("no ssh-keygen: apt-get install openssh-client")
    try:
        import sshfs  # noqa: F401
    except ImportError:
        raise Unavailable("sshfs is not installed: pip install 'tuiloss[ssh]'") from None
    base.mkdir(parents=True, exist_ok=True)
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
        raise Unavailable(f"sshd did not start: {err}")
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
    return Sshd(port, home, user, proc)


@dataclass(frozen=True)
class S3:
    endpoint: str
    server: object

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(S3_ENV, AWS_ENDPOINT_URL=self.endpoint)
        return env

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id="testing", aws_secret_access_key="testing")

    def stop(self) -> None:
        self.server.stop()


def start_moto() -> S3:
    try:
        import s3fs  # noqa: F401
    except ImportError:
        raise Unavailable("s3fs is not installed: pip install 'tuiloss[s3]'") from None
    try:
        from moto.server import ThreadedMotoServer
    except ImportError:
        raise Unavailable("moto's server is not installed: pip install 'moto[server]'") from None
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    try:
        server.start()
    except Exception as exc:  # a server that cannot start is said, with its reason
        raise Unavailable(f"moto's S3 server did not start: {exc}") from None
    if not _wait_port(port, time.monotonic() + 10):
        server.stop()
        raise Unavailable("moto's S3 server did not answer")
    return S3(f"http://127.0.0.1:{port}", server)
