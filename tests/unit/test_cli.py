"""`tuiloss report`: the table, the JSON schema, exit codes, messages instead of tracebacks."""

import json
import os

import pytest
import subprocess
import sys


from tuiloss.cli import main
from tuiloss.sample import LOG_EVERY, TOTAL_STEPS

LABELS = {
    "Pre-Norm | Gradient Clip=10 | Run 1": ("csv", "train_loss"),
    "Pre-Norm | Gradient Clip=1 | Run 2": ("jsonl", "loss"),
    "Post-Norm | DeepNorm | Gradient Clip=1": ("text", "loss"),
    "Pre-Norm | Attn. Relax | Gradient Clip=1": ("hf_trainer", "loss"),
    # the second seeds: the same trainer's format as the first seed of their configuration
    "Pre-Norm | Gradient Clip=10 | Seed 2024": ("csv", "train_loss"),
    "Pre-Norm | Gradient Clip=1 | Seed 2024": ("jsonl", "loss"),
    "Post-Norm | DeepNorm | Gradient Clip=1 | Seed 2024": ("text", "loss"),
}


def run_json(capsys, *args):
    assert main(["report", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_sample_logs_report_has_the_seven_runs_with_exact_counts(capsys, sample_logs):
    report = run_json(capsys, str(sample_logs))
    runs = {run["label"]: run for run in report["runs"]}
    assert set(runs) == set(LABELS)
    for label, (fmt, metric) in LABELS.items():
        run = runs[label]
        assert run["format"] == fmt and run["primary_metric"] == metric
        facts = run["metrics"][metric]
        assert facts["points"] == TOTAL_STEPS // LOG_EVERY
        assert run["skipped"]["lines"] == 0
        assert [s["reason"] for s in run["segments"]] == ["start"]
        assert not run["source"].startswith("/")
    assert runs["Pre-Norm | Gradient Clip=10 | Run 1"]["config"]["gradient_clip"] == 10
    assert runs["Pre-Norm | Gradient Clip=10 | Seed 2024"]["source"] == "prenorm_clip10/lightning_logs/version_1/metrics.csv"
    assert {run["config"]["seed"] for run in report["runs"]} == {1234, 2024}


def test_text_report_lists_labels_and_counts(capsys, sample_logs):
    assert main(["report", str(sample_logs)]) == 0
    out = capsys.readouterr().out
    for label in LABELS:
        assert label in out
    assert "1,000" in out


def test_report_leaves_the_collector_as_it_found_it(capsys, tmp_path):
    """The collector is held off while report imports the engine, then runs again (a one-shot
    report of thousands of runs still frees its cycles); one held off by the caller stays off."""
    import gc

    (tmp_path / "metrics.csv").write_text("step,loss\n1,2.0\n2,1.5\n")
    assert gc.isenabled()
    assert main(["report", str(tmp_path)]) == 0
    assert gc.isenabled()
    gc.disable()
    try:
        assert main(["report", str(tmp_path)]) == 0
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert "2 points of the primary metric" in capsys.readouterr().out


def test_json_has_no_nan_tokens(capsys, tmp_path):
    (tmp_path / "a.jsonl").write_text('{"step": 1, "loss": NaN}\n{"step": 2, "loss": Infinity}\n')
    report = run_json(capsys, str(tmp_path))
    facts = report["runs"][0]["metrics"]["loss"]
    assert facts["points"] == 2 and facts["final"] is None


def test_metric_override(capsys, sample_logs):
    report = run_json(capsys, str(sample_logs), "--metric", "grad_norm")
    assert {run["primary_metric"] for run in report["runs"]} >= {"grad_norm"}


def test_missing_path_is_exit_2_with_a_message(capsys, tmp_path):
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_bad_pattern_is_exit_2(capsys, tmp_path):
    assert main(["report", str(tmp_path), "--pattern", "(unclosed"]) == 2
    assert "not a valid regex" in capsys.readouterr().err


def test_verbose_lists_passed_over_files(capsys, tmp_path):
    (tmp_path / "model.pt").write_bytes(b"\x00")
    (tmp_path / "a.jsonl").write_text('{"step": 1, "loss": 1}\n')
    assert main(["report", str(tmp_path), "--verbose"]) == 0
    out = capsys.readouterr().out
    assert "model.pt" in out and "not a log" in out


def test_python_dash_m_and_usage_errors():
    result = subprocess.run([sys.executable, "-m", "tuiloss", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "watch" in result.stdout
    result = subprocess.run([sys.executable, "-m", "tuiloss", "report"], capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr


@pytest.mark.parametrize("extra, code", [((), 0), (("--fail-on", "spike"), 3)])
def test_the_command_prints_the_whole_report_and_its_exit_code(capsys, sample_logs, extra, code):
    """The command leaves at once after a report: what it printed, to a pipe, is all there."""
    assert main(["report", str(sample_logs), "--json", *extra]) == code
    printed = capsys.readouterr().out
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # its output buffered, as it is by default
    result = subprocess.run([sys.executable, "-m", "tuiloss", "report", str(sample_logs), "--json", *extra],
                            capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == code
    ours, theirs = json.loads(result.stdout), json.loads(printed)
    for data in (ours, theirs):
        for run in data["runs"]:
            run.pop("state", None)  # the logs' age moves on between the two
    assert ours == theirs
    assert "Traceback" not in result.stderr


def test_markdown_report_is_a_table(capsys, sample_logs):
    assert main(["report", str(sample_logs), "--markdown"]) == 0
    out = capsys.readouterr().out
    assert "| # | run | format |" in out
    assert "| Pre-Norm \\| Gradient Clip=10 \\| Run 1 |" in out
    assert "### 5. Pre-Norm | Gradient Clip=10 | Run 1" in out  # in discovery order, after the Post-Norm seeds
    assert "## Configurations" in out and "| Gradient Clip=10: 2 runs" in out


def test_empty_folder_says_so(capsys, tmp_path):
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no training logs found" in err and "no files there" in err


def test_a_folder_of_no_logs_says_what_was_passed_over_and_why(capsys, tmp_path):
    (tmp_path / "notes.txt").write_text("hello world\nnothing to see\n")
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no training logs found" in err and "passed over 1 file (notes.txt:" in err


def test_usage_errors_print_the_commands_own_usage(capsys, tmp_path):
    with pytest.raises(SystemExit) as exited:
        main(["report", str(tmp_path), "--json", "--markdown"])
    assert exited.value.code == 2 and "not allowed with argument --json" in capsys.readouterr().err
    for seconds in ("-5", "0", "nan", "inf", "soon"):
        with pytest.raises(SystemExit) as exited:
            main(["demo", "--seconds", seconds])
        assert exited.value.code == 2 and "--seconds" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["watch", str(tmp_path), "--bogus"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.startswith("usage: tuiloss watch") and "--bogus" in err


def test_text_report_never_writes_escape_sequences_from_logs(capsys, tmp_path):
    folder = tmp_path / "\x1b]0;pwned\x07run\x1b[31m"
    folder.mkdir()
    (folder / "log.jsonl").write_text('{"step": 1, "loss": 1.0}\n{"step": 2, "\\u001b[2Jloss": 0.5}\n')
    assert main(["report", str(tmp_path), "--metric", "\x1b[2Jloss"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "run" in out


def test_unknown_metric_is_a_usage_error_listing_the_metrics(capsys, tmp_path):
    (tmp_path / "a.jsonl").write_text('{"step": 1, "loss": 1, "acc": 0.5}\n{"step": 2, "loss": 0.5, "acc": 0.7}\n')
    for command in ("report", "watch"):
        assert main([command, str(tmp_path), "--metric", "nosuchmetric"]) == 2
        err = capsys.readouterr().err
        assert "--metric nosuchmetric" in err and "acc, loss" in err


def test_unknown_step_is_a_usage_error_and_a_known_one_re_keys(capsys, tmp_path):
    rows = "".join(f'{{"step": {i}, "epoch": {i // 4}, "loss": {2 - i / 10}}}\n' for i in range(1, 13))
    (tmp_path / "a.jsonl").write_text(rows)
    assert main(["report", str(tmp_path), "--step", "nosuchkey"]) == 2
    assert "--step nosuchkey" in capsys.readouterr().err
    report = run_json(capsys, str(tmp_path), "--step", "epoch")
    facts = report["runs"][0]["metrics"]["loss"]
    assert facts["first_step"] == 0 and facts["last_step"] == 3 and facts["points"] == 12


def test_watch_takes_step_as_report_does(capsys, tmp_path, monkeypatch):
    rows = "".join(f'{{"step": {i}, "epoch": {i // 4}, "loss": {2 - i / 10}}}\n' for i in range(1, 13))
    (tmp_path / "a.jsonl").write_text(rows)
    assert main(["watch", str(tmp_path), "--step", "nosuchkey"]) == 2
    err = capsys.readouterr().err
    assert "--step nosuchkey: no such metric" in err and "epoch, loss" in err
    started = []

    class Viewer:
        def __init__(self, config, **_):
            self.config = config

        def run(self):
            started.append(self.config)

    import tuiloss.ui.app

    monkeypatch.setattr(tuiloss.ui.app, "make_app", Viewer)
    assert main(["watch", str(tmp_path), "--step", "epoch"]) == 0
    assert [config.step for config in started] == ["epoch"]
    assert main(["watch", str(tmp_path), "--step", "global_step"]) == 0  # a step key the readers know
    assert main(["watch", str(tmp_path)]) == 0 and started[-1].step is None


def test_the_primary_metric_and_its_direction_are_in_the_report(capsys, tmp_path):
    lines = "".join(f"[2024-01-01 10:00:00,000 INFO] Step {i * 50}/100000; acc: {12 + i * 2.5:.2f}; "
                    f"ppl: {30 / i:.2f}; xent: {3.3 / i:.3f}; lr: 1.00e+00; 4352/5120 tok/s;\n" for i in range(1, 33))
    (tmp_path / "nmt").mkdir()
    (tmp_path / "nmt" / "train.log").write_text(lines)
    report = run_json(capsys, str(tmp_path))
    (run,) = report["runs"]
    assert run["label"] == "nmt" and run["primary_metric"] == "xent"
    assert run["metrics"]["xent"]["direction"] == "lower"
    assert run["metrics"]["acc"]["direction"] == "higher"


def test_a_missing_optional_extra_is_said_in_the_text_report(capsys, tmp_path, monkeypatch):
    from tuiloss.core.formats import tfevents

    monkeypatch.setattr(tfevents, "load_event_class", lambda: None)
    (tmp_path / "runs" / "a").mkdir(parents=True)
    (tmp_path / "runs" / "a" / "events.out.tfevents.1700000000.host.1.0").write_bytes(b"\x00" * 64)
    assert main(["report", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "tuiloss[tensorboard]" in out


def test_the_command_asks_blas_for_one_thread_before_numpy_loads_unless_the_user_chose():
    code = ("import os, sys; from tuiloss import cli; assert 'numpy' not in sys.modules; cli.one_blas_thread();"
            " print(os.environ['OPENBLAS_NUM_THREADS'])")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**env, "OPENBLAS_NUM_THREADS": "4"})
    assert result.stdout.strip() == "4"
