"""End to end in a browser: ``tuiloss serve`` driven in headless Chromium through playwright.

The page is textual-serve's: xterm.js draws the viewer's screen on a canvas, so the test reads
the screen from xterm.js' own buffer (``terminal.buffer.active``, its public API): a script
loaded before the page's keeps a reference to the terminal the page creates. Every wait polls
with a deadline. A screenshot is kept: under ``$TUILOSS_ARTIFACTS`` when set, else in the
test's temporary folder (its path is printed).

Skipped, with the reason, when playwright, textual-serve or Debian's ``chromium`` is missing, or
when the server or the browser cannot start. Chromium is launched from ``/usr/bin/chromium``
(never a browser build of playwright's own), headless, for a closed network: no sandbox (root),
no GPU, QUIC, first-run, background networking, component updates or sync, a fresh profile; and
every request that is not to the server is refused (the page asks for a web font).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from serve_process import Served, free_port, processes_mentioning

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("TUILOSS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

#: Loaded before the page's own scripts: the first object given a ``terminal`` that has a buffer
#: (textual-serve's page keeps its xterm.js Terminal so) is kept as ``window.tuilossTerminal``.
KEEP_TERMINAL = """
Object.defineProperty(Object.prototype, "terminal", {
  configurable: true,
  set(value) {
    Object.defineProperty(this, "terminal", {value, writable: true, configurable: true, enumerable: true});
    if (value && value.buffer && !window.tuilossTerminal) window.tuilossTerminal = value;
  },
});
"""
#: The screen's text, one line per row (null until the terminal exists).
SCREEN_TEXT = """() => {
  const terminal = window.tuilossTerminal;
  if (!terminal) return null;
  const buffer = terminal.buffer.active, rows = [];
  for (let y = 0; y < buffer.length; y++) {
    const line = buffer.getLine(y);
    rows.push(line ? line.translateToString(true) : "");
  }
  return rows.join("\\n");
}"""


def artifact_dir(tmp_path: Path) -> Path:
    folder = Path(os.environ["TUILOSS_ARTIFACTS"]) if os.environ.get("TUILOSS_ARTIFACTS") else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def browser_page(tmp_path):
    """A page of headless Chromium (a fresh profile), or a skip saying why there is none."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"{CHROMIUM} is not installed (Debian's chromium package)")
    with sync_api.sync_playwright() as playwright:
        try:
            context = playwright.chromium.launch_persistent_context(
                str(tmp_path / "chromium-profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS,
                viewport={"width": 1400, "height": 900}, timeout=30_000,
            )
        except sync_api.Error as exc:
            pytest.skip(f"chromium did not start: {str(exc).splitlines()[0]}")
        try:
            page = context.pages[0] if context.pages else context.new_page()
            yield page
        finally:
            context.close()


def screen(page, want, seconds: float) -> str:
    """The screen once ``want(text)`` holds, polled until ``seconds`` pass (then the last text)."""
    deadline = time.monotonic() + seconds
    text = ""
    while time.monotonic() < deadline:
        text = page.evaluate(SCREEN_TEXT) or ""
        if want(text):
            return text
        page.wait_for_timeout(100)
    return text


def run_row(text: str, number: int) -> str:
    """The runs list's row of run ``number`` (its first line that starts with the number)."""
    return next((line for line in text.splitlines() if line.startswith(f" {number} ") and "finished" in line), "")


def test_serve_in_chromium(browser_page, tmp_path):
    pytest.importorskip("textual_serve", reason="textual-serve is not installed (pip install 'tuiloss[serve]')")
    # A folder name a shell would split, expand or run: it must reach `tuiloss watch` as it is.
    logs = tmp_path / "logs $HOME; echo 'it' & \"(x)\""
    shutil.copytree(REPO / "sample_logs", logs)
    port = free_port()
    served = Served([str(logs), "--linear-x", "--port", str(port)], cwd=tmp_path)
    try:
        address = f"http://127.0.0.1:{port}"
        if not served.wait_for(f"open {address}", 30):
            pytest.skip(f"tuiloss serve did not start: {served.output.strip()[-500:]}")
        page = browser_page
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(
            (address, f"ws://127.0.0.1:{port}")) else route.abort())
        page.add_init_script(KEEP_TERMINAL)
        page.goto(address + "/")

        def loaded(text: str) -> bool:
            return ("7 runs" in text and "#      run" in text and "Pre-Norm | Gradient Clip=10 | Run 1" in text
                    and "100K" in text)

        text = screen(page, loaded, 25)
        assert loaded(text), f"the viewer never showed the runs list and the chart:\n{text}\n{served.output}"
        # the chart, on the linear step axis --linear-x asked for (the same watch arguments)
        assert "loss / train_loss · step" in text and "log step" not in text
        assert "┌" in text and "┤" in text and any(ch in text for ch in "⣿⡇⢸")
        assert "■" in run_row(text, 2)

        shot = artifact_dir(tmp_path) / "tuiloss-serve.png"
        page.screenshot(path=str(shot))
        print(f"screenshot: {shot}")
        assert shot.stat().st_size > 10_000

        page.click("#terminal")
        page.keyboard.press("2")
        text = screen(page, lambda t: "6/7 runs" in t and "·" in run_row(t, 2), 10)
        assert "6/7 runs" in text and "·" in run_row(text, 2), text
        assert "■" in run_row(text, 1) and "■" in run_row(text, 3)
        page.screenshot(path=str(artifact_dir(tmp_path) / "tuiloss-serve-run2-hidden.png"))

        # Ctrl+C: the server stops, the page's viewer with it, and nothing is printed but its lines.
        assert processes_mentioning(str(logs)), "no viewer process was running for the page"
        status = served.interrupt()
        assert status == 0, served.output
        assert "Traceback" not in served.output and "Error" not in served.output, served.output
        assert served.output.strip().splitlines()[-1] == "tuiloss serve: stopped"
        deadline = time.monotonic() + 10
        while processes_mentioning(str(logs)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not processes_mentioning(str(logs)), "a viewer outlived the server"
    finally:
        served.close()
