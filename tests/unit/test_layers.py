"""The architecture holds: layers only point down, and the headless parts import no UI library.

The import-linter contracts live in ``pyproject.toml``; the headless check walks the packages
instead of naming modules, so a new module is checked the day it is added.
"""

import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import tuiloss.core

ROOT = Path(__file__).resolve().parents[2]
UI_LIBRARIES = ("textual", "rich", "plotext", "watchdog")
# The viewer's helpers that hold state or prepare data without a terminal.
HEADLESS_UI = ("tuiloss.ui.findings", "tuiloss.ui.selection", "tuiloss.ui.curves", "tuiloss.ui.runstate", "tuiloss.ui.jobs",
               "tuiloss.ui.throttle")


def _modules(package) -> list[str]:
    return sorted(info.name for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."))


def test_the_walk_finds_every_core_package():
    names = _modules(tuiloss.core)
    for expected in ("tuiloss.core.formats.csv", "tuiloss.core.sources.line", "tuiloss.core.analysis.summary",
                     "tuiloss.core.driver", "tuiloss.core.engine"):
        assert expected in names


def test_import_contracts_are_kept():
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or "lint-imports"
    done = subprocess.run([lint, "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_every_core_module_and_headless_helper_imports_no_ui_library():
    names = [*_modules(tuiloss.core), *HEADLESS_UI, "tuiloss.sample", "tuiloss.config"]
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        f"bad = [m for m in {UI_LIBRARIES!r} if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
