"""``tuiloss serve`` as a process for the tests: started on a free loopback port, read with
deadlines, stopped as a terminal's Ctrl+C stops it (SIGINT to its whole process group)."""

from __future__ import annotations

import os
import selectors
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now (the kernel's pick, released for the server to take)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


class Served:
    """One ``python -m tuiloss serve ARGS`` process, its output collected as it comes."""

    def __init__(self, args: list[str], cwd: Path | None = None) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("TUILOSS_DEBUG", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tuiloss", "serve", *args], cwd=cwd, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
        )
        self.output = ""
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.process.stdout, selectors.EVENT_READ)

    def read(self, timeout: float) -> bool:
        """Collect what the server printed within ``timeout`` seconds; False once it has closed."""
        if not self._selector.get_map():
            return False
        for _ in self._selector.select(timeout):
            data = os.read(self.process.stdout.fileno(), 65536)
            if not data:
                self._selector.unregister(self.process.stdout)
                return False
            self.output += data.decode("utf-8", "replace")
        return True

    def wait_for(self, text: str, seconds: float) -> bool:
        """Whether the server printed ``text`` within ``seconds`` (False at once if it exited)."""
        deadline = time.monotonic() + seconds
        while text not in self.output:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if not self.read(min(left, 0.2)):  # its output closed: it is ending
                try:
                    self.process.wait(timeout=min(left, 0.2))
                    return text in self.output
                except subprocess.TimeoutExpired:
                    continue
        return True

    def interrupt(self, seconds: float = 15) -> int:
        """Ctrl+C as a terminal sends it (SIGINT to the process group); the exit status."""
        try:
            os.killpg(self.process.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + seconds
        while self.process.poll() is None and time.monotonic() < deadline:
            self.read(0.1)
        while self.read(0):
            pass
        return self.process.wait(timeout=max(0.1, deadline - time.monotonic()))

    def close(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        self._selector.close()
        self.process.stdout.close()


def processes_mentioning(text: str) -> list[int]:
    """Pids of the processes whose command line holds ``text`` (the viewers a server started)."""
    found = []
    needle = text.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if needle in handle.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found
