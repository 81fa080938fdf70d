"""pandas is imported without pyarrow (~60 MB resident and ~0.1 s it never uses), and pyarrow
stays importable for whatever needs it afterwards (an HDFS root's client)."""

import json
import os
import subprocess
import sys
import textwrap


def _fake_pyarrow(tmp_path):
    """A ``pyarrow`` package on a path of its own that notes each import of it in a file."""
    package = tmp_path / "site" / "pyarrow"
    package.mkdir(parents=True)
    marker = tmp_path / "pyarrow-imported"
    (package / "__init__.py").write_text(textwrap.dedent(f"""
        __version__ = "25.0.1"
        with open({str(marker)!r}, "a") as handle:
            handle.write("imported\\n")
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")]))
    return env, marker


def test_a_csv_log_read_through_pandas_does_not_import_pyarrow(tmp_path):
    env, marker = _fake_pyarrow(tmp_path)
    log = tmp_path / "run" / "metrics.csv"
    log.parent.mkdir()
    rows = [f"{step},{1 / step:.6f}" if step != 7 else "7,nan" for step in range(1, 301)]  # a text cell: pandas reads it
    log.write_text("step,loss\n" + "\n".join(rows) + "\n")
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import json, sys
        sys.argv = ["tuiloss", "report", {str(log.parent)!r}, "--json"]
        from tuiloss.cli import main
        try:
            main()
        finally:
            print(json.dumps({{"pandas": "pandas" in sys.modules}}), file=sys.stderr)
    """)], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stderr.strip().splitlines()[-1]) == {"pandas": True}  # the read went through pandas
    report = json.loads(result.stdout)
    loss = report["runs"][0]["metrics"]["loss"]
    assert loss["points"] == 300 and [a["kind"] for a in loss["anomalies"]] == ["nan"]  # the nan too: kept, and said
    assert not marker.exists()


def test_pyarrow_is_importable_after_pandas_was_loaded_without_it(tmp_path):
    env, marker = _fake_pyarrow(tmp_path)
    code = textwrap.dedent("""
        import sys
        from tuiloss.core.pandas_import import load_pandas
        pd = load_pandas()
        assert "pyarrow" not in sys.modules
        assert pd.read_csv is not None and load_pandas() is pd
        import pyarrow  # what an HDFS client does
        print(pyarrow.__version__)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "25.0.1"
    assert marker.read_text() == "imported\n"

