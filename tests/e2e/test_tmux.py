"""End to end: install the package into a fresh venv, run ``tuiloss watch`` in tmux, drive it by keys.

Slow (a pip install); marked ``e2e``. Skipped when tmux is missing. Every wait polls the
screen with a deadline; a crash stays readable because the pane remains on exit.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tmux_session import TMUX, Tmux

REPO = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.skipif(TMUX is None, reason="tmux is not installed"),
]


@pytest.fixture(scope="module")
def tuiloss_command(tmp_path_factory) -> Path:
    """``tuiloss`` installed from this checkout into a fresh virtual environment."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    build = tmp_path_factory.mktemp("build")
    source = build / "tuiloss"
    # Copy the sources (not the checkout's build artefacts) so the install is from a clean tree.
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", ".ci-venv", "venv", "build", "*.egg-info", "__pycache__", ".pytest_cache", "__snapshots__",
        ".ci-npm", "node_modules", ".data", ".hypothesis"))  # CI's Azurite, the benchmarks' generated logs
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(source)],
                   check=True, timeout=600)
    command = venv / "bin" / "tuiloss"
    assert command.exists()
    return command


@pytest.fixture
def tmux(tmp_path):
    session = Tmux(f"tuiloss-e2e-{os.getpid()}-{tmp_path.name}", "e2e")
    yield session
    session("kill-server", check=False)


def test_watch_in_tmux(tuiloss_command, tmux, tmp_path):
    logs = tmp_path / "logs"
    shutil.copytree(REPO / "sample_logs", logs)
    workdir = tmp_path / "work"
    workdir.mkdir()
    # The shell prints the exit status after tuiloss ends (tmux's own pane status can lag).
    command = f"cd {workdir} && env -u COLUMNS -u LINES {tuiloss_command} watch {logs}; echo TUILOSS-EXIT=$?"
    # remain-on-exit is set before the program starts, in the same tmux command, so a crash stays readable.
    tmux("start-server", ";", "set-option", "-g", "remain-on-exit", "on", ";",
         "new-session", "-d", "-s", "e2e", "-x", "120", "-y", "40", command)
    try:
        tmux.wait_for("7 runs", 60)
        screen = tmux.wait_for("100K", 30)
        for text in ("Post-Norm | DeepNorm | Gradient Clip=1", "Pre-Norm | Gradient Clip=10 | Run 1", "inotify"):
            assert text in screen
        tmux.wait_for("spiked to 1.39 at 25.0K", 30)

        # A line appended to a log shows up as that run's last value.
        with open(logs / "prenorm_clip1" / "metrics.jsonl", "a") as handle:
            handle.write('{"step": 100100, "loss": 0.4321}\n')
        tmux.wait_for("0.432", 10)

        # Keys: linear steps, help, hide a run, quit.
        tmux("send-keys", "-t", "e2e", "x")
        tmux.wait_for("loss / train_loss · step", 5)
        tmux("send-keys", "-t", "e2e", "?")
        tmux.wait_for("tuiloss keys", 5)
        tmux("send-keys", "-t", "e2e", "Escape")
        deadline = time.monotonic() + 5
        while "tuiloss keys" in tmux.screen():
            assert time.monotonic() < deadline, "help did not close"
            time.sleep(0.05)
        tmux("send-keys", "-t", "e2e", "n")
        tmux.wait_for("no runs to show", 5)
        tmux("send-keys", "-t", "e2e", "q")
        deadline = time.monotonic() + 10
        while not any(m in (screen := tmux.screen(history=True)) for m in ("TUILOSS-EXIT=", "Pane is dead")):
            assert time.monotonic() < deadline, f"tuiloss did not exit:\n{screen}"
            time.sleep(0.05)
        # The shell's echo and tmux's own note both carry the status (either may be the one drawn).
        assert "TUILOSS-EXIT=0" in screen or "Pane is dead (status 0," in screen, screen
        assert "TUILOSS-EXIT=1" not in screen and "Traceback" not in screen
        assert not any(p.name.startswith("tuiloss-") for p in logs.rglob("*"))
    except AssertionError:
        print(tmux.screen())
        raise


#: An SGR sequence that sets a colour: 30-37/40-47/90-97/100-107, or 38/48 with a palette or RGB colour.
COLOUR_SGR = re.compile(rb"\x1b\[[0-9;]*?(?<![0-9])(?:3[0-7]|4[0-7]|9[0-7]|10[0-7]|38|48)(?:;[0-9;]*)?m")


def test_no_color_and_ascii_in_tmux(tuiloss_command, tmux, tmp_path):
    """NO_COLOR: not one colour code in the bytes written; --ascii: not one character past ASCII."""
    logs = tmp_path / "logs"
    shutil.copytree(REPO / "sample_logs", logs)
    raw = tmp_path / "raw.bytes"
    command = f"env -u COLUMNS -u LINES NO_COLOR=1 {tuiloss_command} watch --ascii {logs}; echo TUILOSS-EXIT=$?"
    tmux("start-server", ";", "set-option", "-g", "remain-on-exit", "on", ";",
         "new-session", "-d", "-s", "e2e", "-x", "120", "-y", "40", "sleep 0.5; " + command, ";",
         "pipe-pane", "-o", "-t", "e2e", f"cat > {raw}")
    try:
        tmux.wait_for("spiked to 1.39 at 25.0K", 60)
        screen = tmux.wait_for("100K", 30)
        tmux("send-keys", "-t", "e2e", "?")
        help_screen = tmux.wait_for("tuiloss keys", 5)
        for text in (screen, help_screen):
            assert all(ord(ch) < 127 for ch in text), sorted({ch for ch in text if ord(ch) >= 127})
        tmux("send-keys", "-t", "e2e", "Escape")
        tmux.wait_until(lambda s: "tuiloss keys" not in s, "the help to close", 5)
        tmux("send-keys", "-t", "e2e", "q")
        tmux.wait_until(lambda s: "TUILOSS-EXIT=" in s or "Pane is dead" in s, "the exit", 10)
        written = raw.read_bytes()
        assert len(written) > 10_000  # the pipe saw the screens
        colours = COLOUR_SGR.findall(written)
        assert not colours, colours[:5]
    except AssertionError:
        print(tmux.screen())
        raise


def test_a_killed_demo_leaves_no_folder_behind(tuiloss_command, tmux, tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    command = f"env -u COLUMNS -u LINES TMPDIR={temp} {tuiloss_command} demo --seconds 60; echo TUILOSS-EXIT=$?"
    tmux("start-server", ";", "set-option", "-g", "remain-on-exit", "on", ";",
         "new-session", "-d", "-s", "e2e", "-x", "100", "-y", "30", command)
    try:
        tmux.wait_for("runs", 60)
        folders = list(temp.glob("tuiloss-demo-*"))
        assert len(folders) == 1 and folders[0].is_dir()  # the replay writes its logs there
        pid = tmux("display-message", "-p", "-t", "e2e", "#{pane_pid}").strip()
        children = subprocess.run(["pgrep", "-P", pid, "-f", "tuiloss"], capture_output=True, text=True).stdout.split()
        assert children, "the demo process was not found"
        subprocess.run(["kill", "-TERM", *children], check=True)
        tmux.wait_until(lambda s: "TUILOSS-EXIT=" in s or "Pane is dead" in s, "the demo to end", 15)
        assert not list(temp.glob("tuiloss-demo-*"))
    except AssertionError:
        print(tmux.screen())
        raise


def panel(screen: str) -> str:
    """The side panel's text, its wrapped lines joined: what is right of the last vertical bar."""
    return " ".join(" ".join(line.rsplit("│", 1)[-1] for line in screen.splitlines()).split())


def _sample_in_tmux(tuiloss_command, tmux, tmp_path, width: int, height: int):
    """A copy of sample_logs watched by the installed command in a tmux session ``e2e`` of that size."""
    logs = tmp_path / "logs"
    shutil.copytree(REPO / "sample_logs", logs)
    command = f"env -u COLUMNS -u LINES {tuiloss_command} watch {logs}; echo TUILOSS-EXIT=$?"
    tmux("start-server", ";", "set-option", "-g", "remain-on-exit", "on", ";",
         "new-session", "-d", "-s", "e2e", "-x", str(width), "-y", str(height), command)
    return logs


def _quit_cleanly(tmux) -> None:
    """``q`` ends the viewer with status 0 and no traceback."""
    tmux("send-keys", "-t", "e2e", "q")
    tmux.wait_until(lambda s: "TUILOSS-EXIT=" in s or "Pane is dead" in s, "the exit", 10)
    screen = tmux.screen(history=True)
    assert "TUILOSS-EXIT=0" in screen or "Pane is dead (status 0," in screen, screen
    assert "Traceback" not in screen


def test_grouped_mode_in_tmux(tuiloss_command, tmux, tmp_path):
    """``g`` in the installed viewer: configuration rows with their run counts, the seeds' findings, and back."""
    logs = _sample_in_tmux(tuiloss_command, tmux, tmp_path, 120, 40)
    try:
        tmux.wait_for("spiked to 1.39 at 25.0K", 60)
        tmux("send-keys", "-t", "e2e", "g")
        screen = tmux.wait_until(lambda s: "Pre-Norm | Gradient Clip=10 (2 runs)" in s
                                 and "configurations: median, min-max" in s, "the grouped chart and list", 10)
        assert "└ Seed 2024" in screen
        deviation = "Gradient Clip=1 shows a spike at 25.0K-29.8K that the other run of this configuration does not"
        screen = tmux.wait_until(lambda s: deviation in panel(s), "the deviating seed in the panel", 10)
        assert "± final 0.178 ± 0.000822 across 2 runs" in screen
        # A seed switched off: the configuration has one run shown, so nothing deviates.
        tmux("send-keys", "-t", "e2e", "2")
        tmux.wait_until(lambda s: deviation not in panel(s), "the deviation to go with the seed", 10)
        tmux("send-keys", "-t", "e2e", "g")
        tmux.wait_until(lambda s: "(2 runs)" not in s and "Pre-Norm | Gradient Clip=10 | Run 1" in s, "ungrouped", 10)
        _quit_cleanly(tmux)
    except AssertionError:
        print(tmux.screen())
        raise


def test_event_marks_in_tmux(tuiloss_command, tmux, tmp_path):
    """t marks the runs' events; a checkpoint line appended to a log becomes one more, listed at the cursor."""
    logs = _sample_in_tmux(tuiloss_command, tmux, tmp_path, 80, 24)
    try:
        tmux.wait_for("7 runs", 60)
        tmux.wait_for("100K", 30)
        tmux("send-keys", "-t", "e2e", "t")
        screen = tmux.wait_for("events: ", 5)
        count = int(re.search(r"events: (\d+)", screen)[1])
        assert count > 20 and "C" in screen.splitlines()[2]  # run 1's checkpoint saves, on the top row
        with open(logs / "postnorm_deepnorm" / "train.log", "a") as handle:
            handle.write("iter 100100: loss 0.2051, time 216.00ms, mfu 31.00%\nsaving checkpoint to out-musical-mlm\n"
                         "iter 100200: loss 0.2049, time 216.00ms, mfu 31.00%\n")
        tmux.wait_for(f"events: {count + 1}", 10)
        tmux("send-keys", "-t", "e2e", "End")
        tmux.wait_for("near the cursor: 1 C checkpoint saved at 100.1K", 5)
        tmux("send-keys", "-t", "e2e", "t")
        tmux.wait_until(lambda s: "events: " not in s and "near the cursor" not in s, "the marks to go", 5)
        _quit_cleanly(tmux)
    except AssertionError:
        print(tmux.screen())
        raise
