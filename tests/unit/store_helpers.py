"""What the store tests share: the fixtures the trackers wrote, and reading a source to its end."""

from __future__ import annotations

import gzip
import importlib.util
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tuiloss.core.model import Batch

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "stores"
_spec = importlib.util.spec_from_file_location("store_fixtures", FIXTURES / "make_fixtures.py")
#: The script that wrote the fixtures: its functions give every value they hold.
made = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(made)


def unpack(gzipped: str, target: Path) -> Path:
    """A fixture database, unpacked to ``target``."""
    with gzip.open(FIXTURES / gzipped, "rb") as source, open(target, "wb") as out:
        shutil.copyfileobj(source, out)
    return target


def points_of(source) -> tuple[dict[str, tuple[list, list]], list]:
    """Every point (``{metric: (steps, values)}``) and every other item of a source read to its end."""
    points: dict[str, tuple[list, list]] = {}
    others = []
    more = True
    while more:
        items, more = source.read()
        for item in items:
            if isinstance(item, Batch):
                merge(points, {name: (s.tolist(), v.tolist()) for name, (s, v) in item.series.items()})
            else:
                others.append(item)
    return points, others


def merge(into: dict, more: dict) -> None:
    """Append the points of ``more`` to ``into``, metric by metric."""
    for name, (steps, values) in more.items():
        target = into.setdefault(name, ([], []))
        target[0].extend(steps)
        target[1].extend(values)


def follow_writer(script: str, stop: Path, make_source, *, timeout: float = 60.0, on_first=None):
    """Run ``script`` (a tracker logging ``loss`` until ``stop`` exists, then a few rows more, then
    printing how many it logged) in a child process, and read its store while it writes.

    ``make_source()`` returns the source once the store exists (None before). ``on_first(source,
    points)`` is called with the first points read, while the writer still logs. Returns every
    point read, how many were read before the writer was told to stop, and how many it logged.
    """
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    got: dict = {}
    try:
        deadline = time.monotonic() + timeout
        source = None
        while not got:
            assert time.monotonic() < deadline and child.poll() is None, "no points while the writer was logging"
            if source is None:
                source = make_source()
            elif source.changed():
                merge(got, points_of(source)[0])
            time.sleep(0.01)
        early = len(got["loss"][0])
        if on_first is not None:
            on_first(source, got)
        stop.write_text("")
        out, err = child.communicate(timeout=timeout)
        assert child.returncode == 0, err
        merge(got, points_of(source)[0])
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return got, early, int(out.split()[-1])
