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
