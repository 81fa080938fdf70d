"""Safe and light: nothing evaluates or unpickles log content, and `--help` loads no heavy module."""

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "tuiloss"
#: The one module whose work is the network: ``tuiloss serve`` listens where it is told.
SERVER = PACKAGE / "serve.py"


def test_help_does_not_import_heavy_modules():
    code = (
        "import sys\nfrom tuiloss.cli import build_parser\nbuild_parser()\n"
        "bad = [m for m in ('pandas', 'tensorboard', 'textual', 'numpy') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_nothing_evaluates_or_unpickles_log_content():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                owner = getattr(getattr(node.func, "value", None), "id", None)
                if name in ("eval", "exec", "literal_eval") or owner in ("pickle", "marshal", "dill"):
                    offenders.append(f"{path.name}:{node.lineno} {name}")
                if owner == "yaml" and name in ("load", "unsafe_load", "full_load"):
                    offenders.append(f"{path.name}:{node.lineno} yaml.{name}")
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                network = ("socket", "urllib", "http", "requests") if path != SERVER else ()
                if any(n.split(".")[0] in ("pickle", *network) for n in names):
                    offenders.append(f"{path.name}:{node.lineno} imports {names}")
    assert not offenders, offenders
