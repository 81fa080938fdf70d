"""Paths that are never training logs: procfs, sysfs and the device tree.

Its own module, importing nothing, so the command line can refuse such a path before
discovery and the parsers (numpy, pandas) load: ``tuiloss watch`` shows its first frame
without them.
"""

from __future__ import annotations

import os

SYSTEM_TREES = ("/proc", "/sys", "/dev")


def is_system_path(path: str) -> bool:
    """Whether ``path`` lies in procfs, sysfs or the device tree (after following links)."""
    real = os.path.realpath(path)
    return any(real == tree or real.startswith(tree + os.sep) for tree in SYSTEM_TREES)
