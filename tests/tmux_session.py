"""A private tmux server for tests that drive the installed command (e2e, hostile text)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

TMUX = shutil.which("tmux")


class Tmux:
    """One tmux server on its own socket; call it with tmux arguments."""

    def __init__(self, socket: str, session: str) -> None:
        self.base = [TMUX, "-L", socket, "-f", os.devnull]
        self.session = session

    def __call__(self, *args: str, check: bool = True) -> str:
        # A COLUMNS/LINES inherited from the test runner would override the pane's real size.
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TMUX", "NO_COLOR")}
        done = subprocess.run([*self.base, *args], capture_output=True, text=True, timeout=30, env=env)
        if check and done.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)} failed: {done.stderr}")
        return done.stdout

    def screen(self, history: bool = False) -> str:
        return self("capture-pane", "-p", "-t", self.session, *(("-S", "-200") if history else ()), check=False)

    def wait_until(self, predicate, what: str, timeout: float = 30.0) -> str:
        """Poll the screen until ``predicate(screen)`` holds; the screen then."""
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if predicate(screen):
                return screen
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}; screen:\n{screen}")

    def wait_for(self, text: str, timeout: float = 30.0) -> str:
        return self.wait_until(lambda screen: text in screen, repr(text), timeout)
