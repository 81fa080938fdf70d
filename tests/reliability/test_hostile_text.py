"""Hostile text: names and values from logs are data, never terminal commands or markup.

The tree (``hostile.py``) holds folder names, metric names, run names and config
values with Rich markup, CSI and OSC sequences (title change, hyperlink,
clipboard write), C0 and C1 controls, bidi overrides and a 10,000-character
name. ``tuiloss report`` must print none of it raw (text, markdown) and keep all
of it (JSON); the viewer must show it literally, truncated, and write none of it
to the terminal: checked on the pilot's screen and, in tmux, on the raw bytes the
app sends to its pane, the pane's title and tmux's clipboard buffers.
"""

from __future__ import annotations

import asyncio
import html
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import hostile
from tmux_session import TMUX, Tmux
from tuiloss.config import Config

TUILOSS = Path(sys.executable).with_name("tuiloss")


@pytest.fixture
def tree(tmp_path) -> Path:
    root = tmp_path / "tree"
    hostile.build(root)
    return root


def run_report(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(TUILOSS), "report", *args], capture_output=True, timeout=120)


def assert_terminal_safe(raw: bytes, what: str) -> str:
    found = [marker for marker in hostile.FORBIDDEN if marker in raw]
    assert not found, f"{what} writes {found}"
    assert b"\x1b" not in raw, f"{what} writes an escape byte"
    text = raw.decode("utf-8", "surrogateescape")
    for number, line in enumerate(text.split("\n"), 1):
        bad = hostile.UNSAFE.search(line)
        assert bad is None, f"{what} line {number} holds {bad.group()!r}: {line[:120]!r}"
    return text


@pytest.mark.parametrize("flags", [[], ["-v"], ["--markdown"]])
def test_report_text_is_terminal_safe_and_truncated(tree, flags):
    done = run_report(*flags, str(tree))
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    text = assert_terminal_safe(done.stdout, "report " + " ".join(flags))
    assert_terminal_safe(done.stderr, "report's messages")
    # markup is shown as it is, not applied (markdown escapes its own brackets to show them)
    assert ("\\[bold red\\]boom" if "--markdown" in flags else "[bold red]boom") in text
    assert max(len(line) for line in text.split("\n")) < 1000  # the 10,000-character name is cut
    assert hostile.LONG not in text


def test_report_json_is_valid_and_keeps_the_data(tree):
    done = run_report("--json", str(tree))
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"\x1b" not in done.stdout  # control characters are JSON escapes
    report = json.loads(done.stdout)
    metrics = {name for run in report["runs"] for name in run["metrics"]}
    assert hostile.LONG in metrics
    assert f"{hostile.OSC_CLIP}acc" in metrics
    assert f"{hostile.CSI}val" in metrics
    configs = [run["config"] for run in report["runs"]]
    assert any(config.get("opt") == hostile.CSI for config in configs)
    assert any(config.get("lr") == hostile.LINK_MARKUP for config in configs)
    assert any(config.get("run_name") == hostile.LONG + hostile.OSC_TITLE_ST for config in configs)
    assert any(run["label"] == hostile.MARKUP + hostile.OSC_TITLE for run in report["runs"])


# -- the viewer, under the pilot -------------------------------------------------------------------------


def screen_text(app) -> str:
    """What the screen shows, as text (from Textual's own SVG export)."""
    svg = app.export_screenshot()
    return html.unescape(svg).replace("\xa0", " ")


async def wait_loaded(pilot, app, timeout: float = 30.0) -> None:
    """Until the first load is applied and its insights are drawn (deadline, no fixed sleep)."""
    deadline = time.monotonic() + timeout
    while not (app.loaded and app.report is not None):
        assert time.monotonic() < deadline, "the first load never finished"
        await pilot.pause(0.02)
    await settle(pilot, app)


async def settle(pilot, app, timeout: float = 10.0) -> None:
    """Until the app says its screen is at rest (no redraw pending, driver idle, list laid out)."""
    deadline = time.monotonic() + timeout
    while not app.settled():
        assert time.monotonic() < deadline, "the screen never settled"
        await pilot.pause(0.02)
    await pilot.pause()


def test_viewer_shows_hostile_names_literally(tree):
    from tuiloss.ui.app import make_app

    async def watch() -> tuple[list[str], str]:
        app = make_app(Config(paths=(str(tree),), poll=5.0))
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_loaded(pilot, app)
            screens = [screen_text(app)]
            await pilot.press("m")  # the metric picker lists metric names
            await settle(pilot, app)
            screens.append(screen_text(app))
            await pilot.press("escape")
            await settle(pilot, app)
            legend = app._legend_text()
            await pilot.press("q")
        return screens, legend

    screens, legend = asyncio.run(watch())
    for screen in screens + [legend]:
        bad = hostile.UNSAFE.search(screen)
        assert bad is None, f"the screen holds {bad.group()!r}"
        assert hostile.LONG not in screen
        assert "PWNED" not in screen or "\x1b" not in screen
    assert "[bold red]boom" in screens[0]  # shown literally, not styled away
    assert "[red]m[/red]" in screens[1]  # a metric name holding markup, as it is
    assert "LLLLLLLLLL…" in screens[0] or "LLLLLLLLLL…" in legend  # the long name is truncated


def test_no_socket_is_opened_while_watching(tree, monkeypatch):
    """The viewer, driven by the pilot, never opens a network socket."""
    import socket

    from tuiloss.ui.app import make_app

    async def watch() -> None:
        app = make_app(Config(paths=(str(tree),), poll=5.0))
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_loaded(pilot, app)
            points = app.store.points
            with open(next(tree.rglob("train.log")), "a") as handle:
                handle.write("iter 999: loss 0.01, time 1.00ms\n")
            deadline = time.monotonic() + 10
            while app.store.points == points:
                assert time.monotonic() < deadline, "the appended point never arrived"
                await pilot.pause(0.02)
            await settle(pilot, app)
            await pilot.press("q")

    opened: list = []
    real_socket = socket.socket

    class Refusing(real_socket):
        def __init__(self, family=-1, *args, **kwargs):
            if family in (socket.AF_INET, socket.AF_INET6):
                opened.append(family)
                raise OSError("tuiloss must not open network sockets")
            super().__init__(family, *args, **kwargs)

    monkeypatch.setattr(socket, "socket", Refusing)
    asyncio.run(watch())
    assert not opened


# -- the installed command, in tmux ----------------------------------------------------------------------


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed")
@pytest.mark.skipif(not TUILOSS.exists(), reason="the tuiloss command is not installed beside this Python")
def test_watch_in_tmux_writes_nothing_hostile_to_the_terminal(tree, tmp_path):
    tmux = Tmux(f"tuiloss-hostile-{os.getpid()}", "hostile")
    raw = tmp_path / "pane.raw"
    go = tmp_path / "go"
    status = tmp_path / "status"
    command = (f"while [ ! -e {go} ]; do sleep 0.02; done; {TUILOSS} watch {tree}; "
               f"echo $? > {status}.tmp; mv {status}.tmp {status}")
    try:
        tmux("new-session", "-d", "-x", "120", "-y", "40", "-s", "hostile", "sh", "-c", command,
             ";", "set-option", "-t", "hostile", "remain-on-exit", "on",
             ";", "set-option", "-g", "set-clipboard", "on")
        title = tmux("display", "-p", "-t", "hostile", "#{pane_title}").strip()
        tmux("pipe-pane", "-o", "-t", "hostile", f"cat >> {raw}")
        go.touch()
        tmux.wait_until(lambda s: "runs ·" in s and "loss" in s, "the runs on screen")
        tmux("send-keys", "-t", "hostile", "m")
        tmux.wait_until(lambda s: "Chart which metric?" in s, "the metric picker")
        tmux("send-keys", "-t", "hostile", "Escape")
        time.sleep(0.3)  # let a redraw after the picker reach the pane before reading it
        screen = tmux("capture-pane", "-p", "-e", "-t", "hostile")
        after = tmux("display", "-p", "-t", "hostile", "#{pane_title}").strip()
        buffers = tmux("list-buffers", check=False)
        tmux("send-keys", "-t", "hostile", "q")
        deadline = time.monotonic() + 15
        while not status.exists():
            assert time.monotonic() < deadline, "tuiloss did not exit on q"
            time.sleep(0.05)
    finally:
        tmux("kill-server", check=False)
    written = raw.read_bytes()
    assert len(written) > 1000 and b"loss" in written, "the pane's output was not captured"
    found = [marker for marker in hostile.FORBIDDEN if marker in written]
    assert not found, f"the app wrote {found} to the terminal"
    assert "PWNED" not in after and after == title, f"the window title became {after!r}"
    assert "PWNED" not in buffers, "a log wrote to the clipboard"
    assert "\u202e" not in screen
    assert status.read_text().strip() == "0", f"tuiloss exited with {status.read_text().strip()}"


def test_markdown_shows_link_image_and_html_names_literally():
    from tuiloss.core.sanitize import escape_markdown

    for name in ("![img](https://evil.example/x.png)", "[link](https://evil.example)", "<img src=x onerror=y>"):
        escaped = escape_markdown(name)
        assert "](" not in escaped and "<" not in escaped and "![" not in escaped
    assert escape_markdown("lr_1e-3 | bs 64", table=True) == "lr\\_1e-3 \\| bs 64"
    assert escape_markdown("lr_1e-3 | bs 64") == "lr\\_1e-3 | bs 64"


def test_bytes_that_are_not_utf8_never_reach_stdout_raw_and_take_one_cell():
    import os

    from tuiloss.core.sanitize import safe_label

    name = os.fsdecode(b"run\x9b31m\x9d0;title\x07-\xff")  # what a non-UTF-8 file name decodes to
    label = safe_label(name)
    assert label.encode("utf-8")  # no lone surrogate left: printable, never the raw byte 0x9b
    assert label == "run\ufffd31m\ufffd0;title-\ufffd"
    assert safe_label("a\u061cb") == "ab"  # the Arabic letter mark reorders text like the bidi controls
