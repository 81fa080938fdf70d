"""Per-rank logs of one job: which names mark a rank, when their content is one job, and a rank
that stopped while the others went on (tuiloss.core.ranks), read from small written logs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tuiloss.core.engine import load
from tuiloss.core.ranks import RankFacts, RankName, disagreement, find_jobs, rank_name
from tuiloss.core.report import build_report, render_markdown, render_text, report_json


@pytest.mark.parametrize("path, job, rank", [
    ("rank0.log", "rank*.log", 0),
    ("rank7.log", "rank*.log", 7),
    ("logs/train.rank3.out", "logs/train.rank*.out", 3),
    ("log_rank_3.txt", "log_rank_*.txt", 3),
    ("rank-12.log", "rank-*.log", 12),
    ("worker-2.log", "worker-*.log", 2),
    ("RANK_5.LOG", "RANK_*.LOG", 5),
    ("dist_test_rank4.log", "dist_test_rank*.log", 4),
    ("train_rank3.log", "train_rank*.log", 3),
    ("pretrain-worker-1.log", "pretrain-worker-*.log", 1),
    ("exp/nemo_log_globalrank-3_localrank-1.txt", "exp/nemo_log_globalrank-*_localrank-*.txt", 3),
    ("rank_3/train.log", "rank_*/train.log", 3),
    ("mpi/1/rank.2/stdout", "mpi/1/rank.*/stdout", 2),  # OpenMPI's --output-filename
    ("tr/none_x1y2/attempt_0/3/stdout.log", "tr/none_x1y2/attempt_0/*/stdout.log", 3),  # torchrun --log-dir
    ("tr/none_x1y2/attempt_1/0/stderr.log", "tr/none_x1y2/attempt_1/*/stderr.log", 0),
])
def test_names_that_mark_a_rank(path, job, rank):
    assert rank_name(path) == RankName(job, rank)


@pytest.mark.parametrize("path", [
    "run0.log", "run_7/train.log", "seed_3/log.txt", "version_2/metrics.csv", "slurm-1234_4.out",
    "slurm-1234-4.out", "trial-7.log", "crank3.log", "frankly1.log", "rank1user/train.log", "ranking3.log",
    "rank.log", "localrank-2.log", "attempt_0/3/train.log", "exp3/epoch_4.log", "lora_rank8/train.log",
    "sweep/lora-rank16.log", "low_rank4/log.txt", "num_worker4/train.log", "n_worker2.log",
])
def test_names_that_do_not(path):
    """A bare number (a run, a seed, a Slurm array task) numbers repetitions, not processes."""
    assert rank_name(path) is None


def _facts(rank: int, last: float, *, first: float = 10, spacing: float = 10, job: str = "job", **extra) -> RankFacts:
    path = f"/data/{job}/rank{rank}.log"
    values = dict(id=path, label=f"rank{rank}.log", path=path, source=f"{job}/rank{rank}.log", format="text",
                  primary="loss", first_step=first, last_step=last, spacing=spacing, planned=15000.0)
    values.update(extra)
    return RankFacts(**values)


def test_a_rank_that_stopped_while_the_others_went_on():
    jobs = find_jobs([_facts(r, 12000 if r == 3 else 15000) for r in range(8)])
    assert len(jobs) == 1
    job = jobs[0]
    assert job.label == "job/rank*.log" and [r.rank for r in job.ranks] == list(range(8))
    assert job.summary == "8 ranks (0-7), steps to 15.0K"
    assert [f.message for f in job.findings] == ["rank 3 stopped at step 12.0K while 7 ranks went on to 15.0K"]
    finding = job.findings[0]
    assert (finding.rank, finding.step, finding.others, finding.to_step) == (3, 12000, 7, 15000)


def test_ranks_in_step_are_no_finding():
    """Ranks a few logging intervals apart (one read a moment before the others) are in step."""
    jobs = find_jobs([_facts(r, 15000 - 10 * (r % 3)) for r in range(8)])
    assert jobs and not jobs[0].findings


def test_a_rank_still_growing_is_behind_not_stopped():
    facts = [_facts(r, 12000 if r == 3 else 15000) for r in range(8)]
    assert not find_jobs(facts, growing={facts[3].id})[0].findings


def test_several_stopped_ranks_and_how_one_ended():
    facts = [_facts(r, 15000) for r in range(6)]
    facts[2] = _facts(2, 9000, state="crashed", state_reason="CUDA out of memory")
    facts[5] = _facts(5, 12000)
    messages = [f.message for f in find_jobs(facts)[0].findings]
    assert messages == ["rank 2 stopped at step 9.0K (crashed: CUDA out of memory) while 5 ranks went on to 15.0K",
                        "rank 5 stopped at step 12.0K while 4 ranks went on to 15.0K"]


def test_ranks_with_nothing_read_are_members_but_not_judged():
    facts = [_facts(0, 15000)] + [_facts(r, None, first=None, spacing=None, primary=None) for r in range(1, 4)]
    job = find_jobs(facts)[0]
    assert len(job.ranks) == 4 and not job.findings and job.summary == "4 ranks (0-3), steps to 15.0K"


@pytest.mark.parametrize("odd, reason", [
    (dict(primary="reward"), "its metric is reward, the job's loss"),
    (dict(planned=100000.0), "it plans 100.0K steps, the job 15.0K"),
    (dict(spacing=50.0), "it logs every 50 steps, the job every 10"),
    (dict(first=5000.0), "its steps start at 5.0K, the job's at 10"),
    (dict(format="csv"), "it is read as csv, the job as text"),
    (dict(config={"lr": 0.1}), "its config differs"),
])
def test_a_log_named_as_a_rank_that_is_another_job_is_kept_apart(odd, reason):
    facts = [_facts(r, 15000, **(odd if r == 5 else {})) for r in range(8)]
    job = find_jobs(facts)[0]
    assert [r.rank for r in job.ranks] == [0, 1, 2, 3, 4, 6, 7]
    assert [(a.rank, a.reason) for a in job.apart] == [(5, reason)]
    assert job.apart[0].message == (f"job/rank5.log is named as rank 5 of job/rank*.log but reads as another job "
                                    f"({reason}); kept apart")


def test_the_odd_one_is_the_rank_the_others_disagree_with_even_rank_0():
    facts = [_facts(r, 15000, **({"primary": "reward"} if r == 0 else {})) for r in range(4)]
    job = find_jobs(facts)[0]
    assert [r.rank for r in job.ranks] == [1, 2, 3] and [a.rank for a in job.apart] == [0]


def test_rank_keys_and_seeds_may_differ():
    facts = [_facts(r, 15000, config={"lr": 3e-4, "rank": r, "local_rank": r % 4, "seed": 1234 + r})
             for r in range(8)]
    job = find_jobs(facts)[0]
    assert len(job.ranks) == 8 and not job.apart
    assert disagreement(facts[0], _facts(1, 15000, config={"lr": 1e-3, "rank": 1})) == "its config differs"


def test_the_same_names_under_two_roots_are_two_jobs():
    facts = []
    for node in ("node01", "node02"):
        for r in range(4):
            path = f"/{node}/scratch/run/rank{r}.log"
            facts.append(_facts(r, 15000, id=f"{node}:{path}", path=path, source=f"rank{r}.log"))
    jobs = find_jobs(facts)
    assert len(jobs) == 2 and all(len(job.ranks) == 4 for job in jobs)


def test_numbers_far_apart_are_not_ranks_of_one_job():
    """rank4, rank8, rank16, rank32: a sweep's values (a rank hyperparameter), not processes."""
    assert find_jobs([_facts(r, 15000) for r in (4, 8, 16, 32)]) == []
    assert len(find_jobs([_facts(r, 15000) for r in range(16, 24)])[0].ranks) == 8  # one node's ranks
    assert len(find_jobs([_facts(r, 15000) for r in range(0, 16, 2)])[0].ranks) == 8  # every other rank


def test_one_rank_is_no_job():
    assert find_jobs([_facts(0, 15000), _facts(1, 15000, job="other")]) == []


# -- from written logs, through the readers and the report -------------------------------------------

def _write_rank(path: Path, rank: int, last: int, *, planned: int = 15000, every: int = 10, metric: str = "loss",
                start: int = 10) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"[rank {rank}] world_size=8 starting"]
    for step in range(start, last + 1, every):
        value = 2.5 * math.exp(-step / 4000) + 0.3 + 0.001 * rank
        lines.append(f"step {step}/{planned} | {metric} {value:.4f} | lr 3.0e-04")
    path.write_text("\n".join(lines) + "\n")


def test_report_of_eight_rank_logs_with_one_stalled(tmp_path):
    for rank in range(8):
        _write_rank(tmp_path / "job" / f"rank{rank}.log", rank, 12000 if rank == 3 else 15000)
    store, _, _ = load([str(tmp_path)])
    report = build_report(store, root=str(tmp_path))
    assert len(report.runs) == 8 and len(report.jobs) == 1
    text = render_text(report)
    assert ("\nRanks\n  - job/rank*.log: one job of 8 ranks (0-7), steps to 15.0K\n"
            "  ! rank 3 stopped at step 12.0K while 7 ranks went on to 15.0K\n") in text
    assert "- rank 3 stopped at step 12.0K while 7 ranks went on to 15.0K" in render_markdown(report)
    assert report.observations == ()  # the job is one run: its ranks are not compared among themselves
    data = json.loads(json.dumps(report_json(report), allow_nan=False))
    (job,) = data["jobs"]
    assert job["label"] == "job/rank*.log" and [r["rank"] for r in job["ranks"]] == list(range(8))
    assert job["ranks"][3]["last_step"] == 12000 and job["kept_apart"] == []
    assert job["findings"] == [{"kind": "rank_stopped", "rank": 3, "id": str(tmp_path / "job" / "rank3.log"),
                                "step": 12000, "others": 7, "to_step": 15000,
                                "message": "rank 3 stopped at step 12.0K while 7 ranks went on to 15.0K"}]


def test_torchrun_log_dir(tmp_path):
    attempt = tmp_path / "torchrun" / "none_k3j2x9" / "attempt_0"
    for rank in range(4):
        _write_rank(attempt / str(rank) / "stdout.log", rank, 2000 if rank == 2 else 6000)
        (attempt / str(rank) / "stderr.log").write_text("")
    (attempt / "0" / "error.json").write_text("{}")
    store, _, _ = load([str(tmp_path / "torchrun")])
    (job,) = build_report(store).jobs
    assert job.label == "none_k3j2x9/attempt_0/*/stdout.log" and len(job.ranks) == 4
    assert [f.message for f in job.findings] == ["rank 2 stopped at step 2.0K while 3 ranks went on to 6.0K"]


def test_a_log_of_another_job_written_among_the_ranks_is_kept_apart(tmp_path):
    for rank in range(4):
        _write_rank(tmp_path / f"log_rank_{rank}.txt", rank, 6000)
    _write_rank(tmp_path / "log_rank_4.txt", 4, 90000, planned=100000, every=100)  # a different job's log
    store, _, _ = load([str(tmp_path)])
    (job,) = build_report(store).jobs
    assert [r.rank for r in job.ranks] == [0, 1, 2, 3] and not job.findings
    assert [(a.rank, a.reason) for a in job.apart] == [(4, "it plans 100.0K steps, the job 15.0K")]
    assert "log_rank_4.txt is named as rank 4 of log_rank_*.txt but reads as another job" in render_text(
        build_report(store))


def test_rank_folders_with_configs(tmp_path):
    for rank in range(4):
        _write_rank(tmp_path / f"rank_{rank}" / "train.log", rank, 6000)
        config = {"lr": 0.001 if rank != 1 else 0.01, "rank": rank, "seed": 42 + rank}
        (tmp_path / f"rank_{rank}" / "config.json").write_text(json.dumps(config))
    store, _, _ = load([str(tmp_path)])
    (job,) = build_report(store).jobs
    assert [r.rank for r in job.ranks] == [0, 2, 3]
    assert [(a.rank, a.reason) for a in job.apart] == [(1, "its config differs")]


def test_eight_unrelated_runs_are_not_ranks(tmp_path):
    """run0..run7 with different configs: a run number numbers repetitions or a sweep's points,
    not the processes of one job, and their configs differ too. No job, nothing said."""
    for number in range(8):
        folder = tmp_path / f"run{number}"
        _write_rank(folder / "train.log", number, 3000 + 1000 * number)
        (folder / "config.json").write_text(json.dumps({"lr": 10 ** -(1 + number % 4), "layers": 2 + number}))
    store, _, _ = load([str(tmp_path)])
    report = build_report(store)
    assert len(report.runs) == 8 and report.jobs == ()
    assert report.observations  # compared as the eight runs they are
    assert "Ranks" not in render_text(report) and report_json(report)["jobs"] == []


def test_no_real_log_is_taken_for_a_rank(real_logs):
    """The real logs of public projects (nanoGPT, Megatron, fairseq, Keras, Lightning, MLflow, ...)
    hold no per-rank logs: none of them may be grouped into a job."""
    store, _, _ = load([str(real_logs)])
    report = build_report(store)
    assert len(report.runs) > 10 and report.jobs == ()
    assert [run.source for run in store if rank_name(run.source)] == []


# -- a rank's two streams, written to two files ---------------------------------------------------


def _logged(step: int, rank: int, planned: int = 15000) -> str:
    """A line as Python's logging writes it to stderr (its default stream)."""
    value = 2.5 * math.exp(-step / 4000) + 0.3 + 0.001 * rank
    return f"2024-05-01 10:00:00,000 - INFO - step={step} max_steps={planned} loss={value:.4f} lr=3.0e-04"


def test_torchrun_stdout_and_stderr_of_a_rank_are_one_rank(tmp_path):
    """torchrun --log-dir with --redirects 3: each rank's stdout.log and stderr.log; the metrics are
    logged (stderr), stdout holds what was printed. One job of 8 ranks, each read from its stderr."""
    attempt = tmp_path / "logs" / "none_4bq1k2" / "attempt_0"
    for rank in range(8):
        folder = attempt / str(rank)
        folder.mkdir(parents=True)
        (folder / "stdout.log").write_text(f"rank {rank} of 8 ready\nloading shards from /data\n")
        last = 12000 if rank == 3 else 15000
        (folder / "stderr.log").write_text("\n".join(_logged(s, rank) for s in range(10, last + 1, 10)) + "\n")
    store, _, _ = load([str(tmp_path / "logs")])
    report = build_report(store)
    (job,) = report.jobs
    assert job.label == "none_4bq1k2/attempt_0/*/stderr.log" and len(job.ranks) == 8
    assert all(rank.id.endswith("stderr.log") for rank in job.ranks)
    assert [len(rank.streams) for rank in job.ranks] == [1] * 8
    assert all(rank.streams[0].endswith(f"attempt_0/{rank.rank}/stdout.log") for rank in job.ranks)
    assert [f.message for f in job.findings] == ["rank 3 stopped at step 12.0K while 7 ranks went on to 15.0K"]
    assert len(job.others) == 15  # 7 ranks and 8 stdout files, folded into rank 0's stderr
    data = report_json(report)
    assert len(data["jobs"]) == 1 and data["jobs"][0]["ranks"][0]["streams"] == [str(attempt / "0" / "stdout.log")]


def test_slurm_out_and_err_of_a_rank_are_one_rank_whichever_holds_the_metrics(tmp_path):
    """srun --output=train.rank%t.out --error=train.rank%t.err: most ranks print their metrics
    (.out), two log them (.err); each rank's metrics come from the stream that holds them."""
    for rank in range(4):
        metrics = "\n".join(_logged(s, rank, 6000) for s in range(10, 6001, 10)) + "\n"
        other = "UserWarning: TypedStorage is deprecated\n"
        out, err = (other, metrics) if rank in (1, 2) else (metrics, other)
        (tmp_path / f"train.rank{rank}.out").write_text(out)
        (tmp_path / f"train.rank{rank}.err").write_text(err)
    store, _, _ = load([str(tmp_path)])
    (job,) = build_report(store).jobs
    assert job.label == "train.rank*.{out,err}"
    assert [rank.id.rsplit(".", 1)[1] for rank in job.ranks] == ["out", "err", "err", "out"]
    assert not job.findings and len(job.others) == 7


def test_one_stream_alone_keeps_its_name_and_unrelated_out_files_stay_apart(tmp_path):
    for rank in range(4):
        (tmp_path / f"train.rank{rank}.out").write_text(
            "\n".join(_logged(s, rank, 6000) for s in range(10, 6001, 10)) + "\n")
    (tmp_path / "layout.log").write_text("step 1/10 | loss 1.0\n")
    store, _, _ = load([str(tmp_path)])
    (job,) = build_report(store).jobs
    assert job.label == "train.rank*.out" and all(not rank.streams for rank in job.ranks)


@pytest.mark.parametrize("job, key", [
    ("x/attempt_0/*/stdout.log", "x/attempt_0/*/std{out,err}.log"),
    ("x/attempt_0/*/stderr.log", "x/attempt_0/*/std{out,err}.log"),
    ("train.rank*.out", "train.rank*.{out,err}"),
    ("train.rank*.err", "train.rank*.{out,err}"),
    ("out/rank*.log", "out/rank*.log"),  # a folder named out: not a stream
    ("rank*_output.txt", "rank*_output.txt"),
])
def test_the_name_both_streams_share(job, key):
    from tuiloss.core.ranks import streamless

    assert streamless(job) == key


# -- --fail-on rank-stopped -----------------------------------------------------------------------


def test_fail_on_rank_stopped(tmp_path):
    import subprocess
    import sys

    for rank in range(8):
        _write_rank(tmp_path / "job" / f"rank{rank}.log", rank, 12000 if rank == 3 else 15000)
    done = subprocess.run([sys.executable, "-m", "tuiloss", "report", str(tmp_path), "--fail-on", "rank-stopped"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    assert done.stderr.strip().splitlines() == [
        "tuiloss: --fail-on rank-stopped: job/rank*.log: rank 3 stopped at step 12.0K while 7 ranks went on to 15.0K"]
    later = subprocess.run([sys.executable, "-m", "tuiloss", "report", str(tmp_path), "--fail-on", "rank-stopped",
                            "--since", "13000"], capture_output=True, text=True, timeout=120)
    assert later.returncode == 0 and later.stderr == ""  # it stopped before step 13,000


def test_fail_on_names_rank_stopped_among_its_kinds():
    from tuiloss.core.gate import parse_kinds

    assert "rank-stopped" in parse_kinds("any") and parse_kinds("rank_stopped") == {"rank-stopped"}
    with pytest.raises(ValueError, match="rank-stopped"):
        parse_kinds("bogus")


def test_fail_on_rank_stopped_passes_a_job_in_step(tmp_path):
    from tuiloss.core.gate import failures

    for rank in range(4):
        _write_rank(tmp_path / f"rank{rank}.log", rank, 15000)
    store, _, _ = load([str(tmp_path)])
    report = build_report(store)
    assert len(report.jobs) == 1 and failures(report, frozenset({"rank-stopped"})) == []
