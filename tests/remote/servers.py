"""Start the remote tests' servers on this machine: an sshd and moto's S3 server, each on a free port.

Plain functions, so the benchmarks (``benchmarks/remote.py``) start the same servers as the
fixtures in ``conftest.py``. Each raises :class:`Unavailable` with the reason when its server
cannot start here.

``start_sshd`` runs Debian's OpenSSH server as the current user with a host key and a user key
made for it, and writes a home folder whose ``~/.ssh/config`` names three hosts (``node01``,
``node02``, ``tuiloss-test``) that all reach it: tuiloss finds them the way it finds a user's
real hosts, through asyncssh's reading of ``~/.ssh/config`` and ``~/.ssh/known_hosts``.
``start_moto`` starts moto's threaded S3 server; :data:`S3_ENV` and ``AWS_ENDPOINT_URL`` point
the AWS environment at it. ``start_gcs`` starts gcp-storage-emulator (a GCS JSON API server in
Python) in this process, reached by gcsfs through ``STORAGE_EMULATOR_HOST``; ``start_azurite``
runs Azurite's blob service (the npm package ``azurite``: ``.ci/run`` installs it into
``.ci-npm/``, or ``TUILOSS_AZURITE`` names its ``azurite-blob``), reached by adlfs through
``AZURE_STORAGE_CONNECTION_STRING`` with Azurite's well-known development account. HDFS has no
server here (a namenode needs Java and Hadoop): its tests skip and say so.
"""

from __future__ import annotations

import getpass
import importlib
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


def _end(proc: subprocess.Popen) -> None:
    """Stop a server process this module started (killed if it does not end within 10 s)."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


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
        _end(self.proc)


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
class _Served:
    """A server run from this process, reached at ``endpoint`` through the environment it names."""

    endpoint: str
    server: object

    def variables(self) -> dict[str, str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        """The environment of a tuiloss process that reaches this server."""
        return {**os.environ, **self.variables()}

    def stop(self) -> None:
        self.server.stop()


class S3(_Served):
    def variables(self) -> dict[str, str]:
        return {**S3_ENV, "AWS_ENDPOINT_URL": self.endpoint}

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id="testing", aws_secret_access_key="testing")


def _need(module: str, why: str):
    """The module, imported, or :class:`Unavailable` saying ``why`` (what to install)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise Unavailable(why) from None


def start_moto() -> S3:
    _need("s3fs", "s3fs is not installed: pip install 'tuiloss[s3]'")
    ThreadedMotoServer = _need("moto.server", "moto's server is not installed: pip install 'moto[server]'").ThreadedMotoServer
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    port = free_port()
    server = _serving("moto's S3 server", ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False), port)
    return S3(f"http://127.0.0.1:{port}", server)


def _serving(name: str, server, port: int):
    """``server`` (one served from this process) started and answering on ``port``."""
    try:
        server.start()
    except Exception as exc:  # a server that cannot start is said, with its reason
        raise Unavailable(f"{name} did not start: {exc}") from None
    if not _wait_port(port, time.monotonic() + 10):
        server.stop()
        raise Unavailable(f"{name} did not answer")
    return server


class Gcs(_Served):
    def variables(self) -> dict[str, str]:
        return {"STORAGE_EMULATOR_HOST": self.endpoint}

    def fs(self):
        from gcsfs.core import GCSFileSystem

        os.environ.setdefault("STORAGE_EMULATOR_HOST", self.endpoint)
        return GCSFileSystem(skip_instance_cache=True, endpoint_url=self.endpoint, token="anon")


def start_gcs() -> Gcs:
    _need("gcsfs", "gcsfs is not installed: pip install 'tuiloss[gcs]'")
    create_server = _need("gcp_storage_emulator.server",
                          "gcp-storage-emulator is not installed: pip install gcp-storage-emulator").create_server
    logging.getLogger("gcp_storage_emulator").setLevel(logging.ERROR)
    port = free_port()
    server = _serving("gcp-storage-emulator", create_server("127.0.0.1", port, in_memory=True), port)
    return Gcs(f"http://127.0.0.1:{port}", server)


#: Azurite's well-known development account (public: every Azurite and Azure SDK sample uses it).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def azurite_command() -> str | None:
    """Azurite's blob server: ``TUILOSS_AZURITE``, ``.ci/run``'s install, or one on the PATH."""
    named = os.environ.get("TUILOSS_AZURITE")
    if named:
        return named if os.access(named, os.X_OK) else None
    local = Path(__file__).resolve().parents[2] / ".ci-npm" / "node_modules" / ".bin" / "azurite-blob"
    if os.access(local, os.X_OK):
        return str(local)
    return shutil.which("azurite-blob")


@dataclass(frozen=True)
class Azurite:
    port: int
    proc: subprocess.Popen

    @property
    def connection_string(self) -> str:
        return (f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
                f"BlobEndpoint=http://127.0.0.1:{self.port}/{AZURITE_ACCOUNT};")

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["AZURE_STORAGE_CONNECTION_STRING"] = self.connection_string
        return env

    def fs(self):
        from adlfs import AzureBlobFileSystem

        return AzureBlobFileSystem(connection_string=self.connection_string, skip_instance_cache=True)

    def stop(self) -> None:
        _end(self.proc)


def start_azurite() -> Azurite:
    _need("adlfs", "adlfs is not installed: pip install 'tuiloss[az]'")
    command = azurite_command()
    if command is None:
        why = "no npm here" if shutil.which("npm") is None else "Azurite is not installed"
        raise Unavailable(f"{why}: npm install --prefix .ci-npm azurite (.ci/run does), or set TUILOSS_AZURITE")
    port = free_port()
    proc = subprocess.Popen([command, "--blobHost", "127.0.0.1", "--blobPort", str(port), "--inMemoryPersistence",
                             "--silent", "--skipApiVersionCheck", "--loose"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if not _wait_port(port, time.monotonic() + 30, proc):
        proc.kill()
        err = proc.stderr.read().decode(errors="replace")[-500:] if proc.stderr else ""
        raise Unavailable(f"Azurite did not start: {err}")
    return Azurite(port, proc)
