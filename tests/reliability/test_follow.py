"""``tuiloss report --follow``: the installed command prints a line per changed run after each change."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time


def lines_of(proc) -> queue.Queue:
    out: queue.Queue = queue.Queue()

    def pump():
        for line in proc.stdout:
            out.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return out


def next_line(out: queue.Queue, proc, deadline: float = 30.0) -> dict:
    try:
        return json.loads(out.get(timeout=deadline))
    except queue.Empty:
        proc.kill()
        raise AssertionError(f"no line within {deadline}s; stderr: {proc.stderr.read()[-2000:]}") from None


def as_at_a_terminal() -> None:
    """Ctrl-C's default in the command, as at a terminal, even when the suite itself runs with
    SIGINT ignored (a script's background job), which Python would otherwise pass on."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def follow(tmp_path, *extra):
    return subprocess.Popen([sys.executable, "-m", "tuiloss", "report", "--follow", "--json", *extra, str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=as_at_a_terminal)


def test_follow_json_prints_a_line_per_changed_run_until_interrupted(tmp_path):
    log = tmp_path / "metrics.csv"
    log.write_text("step,loss\n" + "".join(f"{s},{1 / (s + 1):.5f}\n" for s in range(10)))
    (tmp_path / "other.csv").write_text("step,loss\n1,0.5\n")
    proc = follow(tmp_path, "--poll", "0.2")
    out = lines_of(proc)
    try:
        first = [next_line(out, proc), next_line(out, proc)]
        by_id = {line["id"]: line for line in first}
        assert by_id[str(log)]["points"] == {"loss": 10}
        assert by_id[str(log)]["last"] == {"loss": round(1 / 10, 5)}
        with open(log, "a") as handle:
            handle.write("10,0.05\n11,50.0\n")
        line = next_line(out, proc)
        assert line["id"] == str(log) and line["points"] == {"loss": 12} and line["last"] == {"loss": 50.0}
        with open(log, "w") as handle:  # a restart: a new segment is a new finding
            handle.write("step,loss\n0,0.9\n")
        line = next_line(out, proc)
        assert line["id"] == str(log) and any("truncated" in f or "replaced" in f for f in line["new_findings"])
        assert out.empty()  # nothing for the run that did not change
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=20)
    assert code == 130


def test_follow_refuses_a_bad_poll(tmp_path):
    done = subprocess.run([sys.executable, "-m", "tuiloss", "report", "--follow", "--poll", "nan", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--poll" in done.stderr


def test_follow_as_text_names_the_run_and_its_last_value(tmp_path):
    (tmp_path / "train.log").write_text("iter 1: loss 0.5, time 1.00ms\n")
    proc = subprocess.Popen([sys.executable, "-m", "tuiloss", "report", "--follow", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=as_at_a_terminal)
    out = lines_of(proc)
    try:
        line = out.get(timeout=30)
        assert line.startswith(f"{tmp_path.name}: loss 0.5 (1 points)")  # a generic file: its folder names it
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 130


def test_follow_prints_a_restart_in_a_log_as_a_run_of_its_own(tmp_path):
    log = tmp_path / "exp" / "training.log"
    log.parent.mkdir()
    first = "".join(f"step {k} | loss: {2.0 * 0.97 ** k:.4f}\n" for k in range(1, 61))
    log.write_text(first)
    proc = follow(tmp_path, "--poll", "0.2")
    out = lines_of(proc)
    try:
        assert next_line(out, proc)["id"] == str(log)
        with open(log, "a") as handle:  # training starts again in the same file
            handle.write("".join(f"step {k} | loss: {2.1 * 0.98 ** k:.4f}\n" for k in range(1, 11)))
        lines = [next_line(out, proc)]
        while lines[-1]["id"] != f"{log}#2":
            lines.append(next_line(out, proc))
        assert lines[-1]["label"] == "exp #2" and lines[-1]["points"] == {"loss": 10}
        with open(log, "a") as handle:
            handle.write("step 11 | loss: 1.7000\n")
        line = next_line(out, proc)
        assert line["id"] == f"{log}#2" and line["points"] == {"loss": 11}
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
