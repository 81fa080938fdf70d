"""What the command line and discovery accept: bad values are refused with a reason, never looped on."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tuiloss.cli import main
from tuiloss.core.discover import discover
from tuiloss.core.engine import load


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "0", "1e9", "soon"])
def test_poll_outside_its_range_is_refused(value, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["watch", "--poll", value, "."])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--poll" in err and ("0.1 to 3600" in err or "not a number" in err)


def test_poll_in_range_is_taken():
    from tuiloss.cli import build_parser

    assert build_parser().parse_args(["watch", "--poll", "0.5", "."]).poll == 0.5
    assert build_parser().parse_args(["watch", ".", "--poll"]).poll == 1.0


def test_fifo_and_device_paths_exit_2_like_a_missing_one(tmp_path, capsys):
    fifo = tmp_path / "pipe.log"
    os.mkfifo(fifo)
    for command in ("report", "watch"):  # watch /proc: refused before the viewer starts, never a hang
        for path in (str(fifo), "/dev/null", "/proc", "/sys/kernel", str(tmp_path / "missing.log")):
            assert main([command, path]) == 2, (command, path)
            assert capsys.readouterr().err.startswith(f"tuiloss: {path}: ")


def test_report_of_proc_ends_and_a_link_into_it_is_never_read(tmp_path):
    """``/proc/kmsg`` blocks a reader forever: nothing below /proc, /sys or /dev is opened."""
    (tmp_path / "kmsg.log").symlink_to("/proc/kmsg")
    (tmp_path / "train.log").write_text("iter 1: loss 0.5, time 1.00ms\n")
    done = subprocess.run([sys.executable, "-m", "tuiloss", "report", str(tmp_path)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and "1 run in" in done.stdout and "1 points" in done.stdout
    found = discover([str(tmp_path)])
    assert [spec.source for spec in found.runs] == ["train.log"]
    assert any("kernel file" in why for _, why in found.ignored)
    assert any("kernel" in notice.message for notice in discover(["/proc"]).notices)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads everything")
def test_unreadable_log_says_permission_denied(tmp_path):
    log = tmp_path / "metrics.csv"
    log.write_text("step,loss\n1,0.5\n")
    log.chmod(0)
    found = discover([str(tmp_path)])
    assert any("permission denied" in notice.message for notice in found.notices)


def test_unreadable_sniff_is_a_notice_not_a_silent_pass(tmp_path, monkeypatch):
    """Whoever runs the suite (root reads everything), a log that cannot be opened is named."""
    import builtins

    log = tmp_path / "train.log"
    log.write_text("iter 1: loss 0.5, time 1.00ms\n")
    real_open = builtins.open

    def denied(path, *args, **kwargs):
        if os.fspath(path) == str(log):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", denied)
    found = discover([str(tmp_path)])
    assert [n.message for n in found.notices] == [f"{log}: permission denied"]


@pytest.mark.parametrize("name, body", [
    ("metrics.csv", "step,loss\n1,0.5\n2,0.25\n"),
    ("log.jsonl", '{"step": 1, "loss": 0.5}\n{"step": 2, "loss": 0.25}\n'),
    ("train.log", "iter 1: loss 0.5, time 1.00ms\niter 2: loss 0.25, time 1.00ms\n"),
])
def test_a_utf8_byte_order_mark_loses_no_record(tmp_path, name, body):
    (tmp_path / name).write_bytes(b"\xef\xbb\xbf" + body.encode())
    store, _, _ = load([str(tmp_path)])
    run = store.runs[str(tmp_path / name)]
    assert run.series["loss"].values.view.tolist() == [0.5, 0.25]
    assert run.skipped_lines == 0


def test_a_pattern_that_backtracks_without_end_is_refused_as_too_slow(tmp_path, capsys):
    import time

    (tmp_path / "train.log").write_text("iter 1: loss 0.5\n" + "a" * 5000 + "\n")
    began = time.monotonic()
    assert main(["report", "--pattern", "(a+)+$", str(tmp_path)]) == 2
    assert time.monotonic() - began < 30
    assert "--pattern is too slow" in capsys.readouterr().err
    assert main(["report", "--pattern", r"iter (?P<step>\d+): loss (?P<loss>[\d.]+)", str(tmp_path)]) == 0
    assert "1 run in" in capsys.readouterr().out


def test_steps_counting_down_are_one_finding_not_thousands_of_resets(tmp_path):
    from tuiloss.core.report import build_report

    (tmp_path / "metrics.csv").write_text("step,loss\n" + "".join(f"{s},{1 + s / 5000:.5f}\n"
                                                                  for s in range(5000, 0, -1)))
    store, _, _ = load([str(tmp_path)])
    run = store.runs[str(tmp_path / "metrics.csv")]
    assert len(run.series["loss"]) == 5000
    assert [s.reason for s in run.series["loss"].segments] == ["start", "backwards"]
    (metric,) = [m for entry in build_report(store).runs for name, m in entry.metrics.items() if name == "loss"]
    said = [a.message for a in metric.analysis.anomalies if a.kind == "reset"]
    assert len(said) == 1 and said[0].startswith("the step counter runs backwards from step 5.0K")
