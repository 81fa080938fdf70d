"""Configurations: runs that differ only in a seed, a run number or a timestamp are one."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from tuiloss.cli import main
from tuiloss.core.groups import Member, MemberFacts, band, group_findings, group_runs, parse_group_by, path_key


def member(source: str, **config) -> Member:
    return Member(id=f"/logs/{source}", label=os.path.dirname(source) or source, source=source, config=config)


def grouped(members, group_by=None) -> list[list[str]]:
    return [sorted(m.rsplit("/logs/", 1)[1] for m in g.run_ids) for g in group_runs(members, group_by)]


@pytest.mark.parametrize("a, b", [
    ("lightning_logs/version_0/metrics.csv", "lightning_logs/version_3/metrics.csv"),
    ("lr=0.1_seed=1/metrics.csv", "lr=0.1_seed=2/metrics.csv"),
    ("sweep/run_1/train.log", "sweep/run_2/train.log"),
    ("exp/trial-7/progress.csv", "exp/trial-12/progress.csv"),
    ("out/2024-05-01_12-00-03/log.txt", "out/2024-05-02_08-30-59/log.txt"),
    ("wandb/run-20240501_120003-abc12345/files/output.log", "wandb/run-20240502_083059-def67890/files/output.log"),
    ("base/seed3/metrics.jsonl", "base/seed11/metrics.jsonl"),
])
def test_paths_that_only_number_repetitions_are_one_configuration(a, b):
    assert path_key(a) == path_key(b)
    assert grouped([member(a, lr=0.1), member(b, lr=0.1)]) == [sorted([a, b])]


def test_seed_and_run_name_keys_do_not_tell_configurations_apart():
    runs = [member("a/metrics.csv", lr=0.1, seed=1, run_name="A 1"),
            member("a/metrics.csv", lr=0.1, seed=2, run_name="A 2")]
    runs[1] = Member("/logs/a2", "a2", "a/metrics.csv", runs[1].config)
    assert len(group_runs(runs)) == 1


def test_another_hyperparameter_the_file_name_or_the_folder_keep_runs_apart():
    assert len(group_runs([member("x/metrics.csv", lr=0.1), member("x2/metrics.csv", lr=0.1)])) == 2
    assert len(group_runs([member("a/metrics.csv", lr=0.1, seed=1),
                           member("b/metrics.csv", lr=0.2, seed=1)])) == 2
    # A text log and its CSV, side by side: two sources of one training, not two seeds.
    assert len(group_runs([member("run/train.log"), member("run/metrics.csv")])) == 2


def test_group_by_keys_and_none():
    runs = [member(f"r{k}/metrics.csv", lr=lr, wd=wd, seed=k) for k, (lr, wd) in enumerate(
        [(0.1, 0.0), (0.1, 0.01), (0.2, 0.0), (0.2, 0.01)])]
    assert [g.label for g in group_runs(runs, parse_group_by("lr"))] == ["lr=0.1", "lr=0.2"]
    assert len(group_runs(runs, parse_group_by("none"))) == 4
    assert parse_group_by(None) is None
    with pytest.raises(ValueError):
        parse_group_by(" , ")


def test_labels_name_the_keys_that_tell_configurations_apart():
    runs = [member(f"clip={c}_seed={s}/metrics.csv", clip=c, seed=s, model="m") for c in (1, 10) for s in (1, 2)]
    assert [g.label for g in group_runs(runs)] == ["clip=1", "clip=10"]


def test_band_is_median_min_max_on_the_shared_steps():
    steps = np.arange(0, 101, 10, dtype=float)
    curves = [(steps, steps * 0 + v) for v in (1.0, 2.0, 4.0)]
    curves.append((steps[2:], steps[2:] * 0 + 3.0))  # starts later: the band starts where all have points
    grid, mid, low, high = band(curves)
    assert grid[0] == 20 and grid[-1] == 100
    assert np.all(mid == 2.5) and np.all(low == 1.0) and np.all(high == 4.0)
    assert all(len(a) == 0 for a in band([(steps[:3], steps[:3]), (steps[5:], steps[5:])]))


def facts(run_id, final, convergence, *anomalies):
    return MemberFacts(run_id, run_id, final, convergence, tuple(anomalies))


def test_a_fluctuation_in_one_seed_only_is_said_and_a_shared_one_is_not():
    groups = group_runs([member(f"seed={s}/metrics.csv", lr=0.1, seed=s) for s in (1, 2, 3)])
    ids = groups[0].run_ids
    spike = ("spike", 25_000.0, 30_000.0, "spiked")
    notes = group_findings(groups, {ids[0]: facts(ids[0], 0.2, 20_000, spike), ids[1]: facts(ids[1], 0.21, 21_000),
                                    ids[2]: facts(ids[2], 0.19, 19_000)})
    deviations = [n for n in notes if n.kind == "deviation"]
    assert len(deviations) == 1 and deviations[0].runs == (ids[0],) and "25.0K-30.0K" in deviations[0].message
    shared = group_findings(groups, {i: facts(i, 0.2, 20_000, spike) for i in ids})
    assert not [n for n in shared if n.kind == "deviation"]
    final = next(n for n in notes if n.kind == "final")
    assert final.message == "seed=*: final 0.200 ± 0.0100 across 3 runs (0.190-0.210)"


def test_configurations_are_compared_only_outside_the_seed_spread():
    runs = [member(f"clip={c}_seed={s}/m.csv", clip=c, seed=s) for c in (1, 10) for s in (1, 2, 3)]
    groups = group_runs(runs)
    clip1, clip10 = groups
    apart = {i: facts(i, 0.20, 12_000 + k * 100) for k, i in enumerate(clip1.run_ids)}
    apart |= {i: facts(i, 0.18, 6_000 + k * 100) for k, i in enumerate(clip10.run_ids)}
    messages = [n.message for n in group_findings(groups, apart) if n.kind == "compare"]
    assert any(m.startswith("clip=10 converges 2.0x sooner than clip=1 across 3 runs each") for m in messages)
    assert any(m.startswith("clip=10 ends lower than clip=1") for m in messages)
    overlapping = {i: facts(i, 0.19 + 0.02 * k, 9_000 + 4_000 * k) for k, i in enumerate(clip1.run_ids)}
    overlapping |= {i: facts(i, 0.20 + 0.02 * k, 10_000 + 4_000 * k) for k, i in enumerate(clip10.run_ids)}
    messages = [n.message for n in group_findings(groups, overlapping) if n.kind == "compare"]
    assert messages and all("within each other's run-to-run spread" in m for m in messages)


def write_sweep(root, seeds=(1, 2, 3), spike_in=(1, 2)):
    steps = np.arange(10, 20_001, 10)
    for clip, tau in ((1, 3000), (10, 1500)):
        for seed in seeds:
            rng = np.random.default_rng(seed * 10 + clip)
            folder = root / f"clip={clip}_seed={seed}"
            folder.mkdir(parents=True)
            loss = 0.2 + 1.2 * np.exp(-steps / tau) + 0.004 * rng.standard_normal(len(steps))
            if (clip, seed) == spike_in:
                loss[(steps >= 12_000) & (steps < 12_600)] += np.linspace(1.0, 0, 60)
            (folder / "metrics.csv").write_text("step,loss\n" + "".join(f"{s},{v:.5f}\n" for s, v in zip(steps, loss)))


def test_report_groups_a_sweep_and_says_what_its_seeds_show(tmp_path, capsys):
    write_sweep(tmp_path / "sweep")
    assert main(["report", str(tmp_path / "sweep")]) == 0
    text = capsys.readouterr().out.split("Configurations\n", 1)[1]
    assert "  - clip=1: 3 runs" in text and "  - clip=10: 3 runs" in text
    assert "clip=1_seed=2 shows a spike at 12.0K" in text and text.count("shows a") == 1
    assert "clip=10 converges 1.9x sooner than clip=1 across 3 runs each" in text
    assert main(["report", str(tmp_path / "sweep"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert sorted(len(c["runs"]) for c in data["configurations"]) == [3, 3]
    assert any(f["kind"] == "deviation" for f in data["configuration_findings"])
    assert main(["report", str(tmp_path / "sweep"), "--group-by", "none"]) == 0
    ungrouped = capsys.readouterr().out
    assert "Configurations" not in ungrouped
    assert "clip=10 reached" in ungrouped  # with no configurations to compare, the seeds are compared


SECOND_SEEDS = ("postnorm_deepnorm_seed2024", "prenorm_clip1_seed2024", "prenorm_clip10/lightning_logs/version_1")


def test_runs_of_different_configurations_add_no_section(sample_logs, capsys):
    import shutil

    for folder in SECOND_SEEDS:  # the sample's first seeds alone: four configurations of one run
        shutil.rmtree(sample_logs / folder)
    assert main(["report", str(sample_logs)]) == 0
    assert "Configurations" not in capsys.readouterr().out
    assert main(["report", str(sample_logs), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["configurations"]) == 4


def test_the_sample_s_second_seeds_make_three_configurations_of_two_runs(sample_logs, capsys):
    assert main(["report", str(sample_logs), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    sizes = {c["label"]: len(c["runs"]) for c in data["configurations"]}
    assert sizes == {"Post-Norm | DeepNorm | Gradient Clip=1": 2, "Pre-Norm | Attn. Relax | Gradient Clip=1": 1,
                     "Pre-Norm | Gradient Clip=1": 2, "Pre-Norm | Gradient Clip=10": 2}
    notes = [f["message"] for f in data["configuration_findings"]]
    [deviation] = [n for n in notes if "shows a" in n]  # the spike of one Post-Norm seed, absent in the other
    assert deviation.startswith("Post-Norm | DeepNorm | Gradient Clip=1: Post-Norm | DeepNorm | Gradient Clip=1 shows a "
                                "spike at 25.0K") and "that the other run of this configuration does not" in deviation
    assert any(n.startswith("gradient_clip=10 converges") and "sooner than gradient_clip=1 across 2 runs each" in n
               for n in notes)
    assert any(n.startswith("Pre-Norm | Gradient Clip=10: final 0.178 ± ") for n in notes)


@pytest.mark.parametrize("first, again", [
    ("base/metrics.jsonl", "base_seed2/metrics.jsonl"),
    ("lr=0.1/metrics.csv", "lr=0.1-run3/metrics.csv"),
    ("run/train.log", "run/train_seed2.log"),
    ("experiments/run_seed_1337/train_log.csv", "experiments/run_seed_42/train_log.csv"),
    ("sweep/results_seed_3/metrics.csv", "sweep/results/metrics.csv"),
])
def test_a_numbered_repetition_tacked_onto_a_name_is_of_the_first_run_s_configuration(first, again):
    assert path_key(first) == path_key(again)
    assert grouped([member(first, lr=0.1, seed=1), member(again, lr=0.1, seed=2)]) == [sorted([first, again])]
    # the word alone is a name, not a repetition: "prerun" and "pre" stay apart, as do "a_seed" and "a"
    assert path_key("x/prerun2/m.csv") != path_key("x/pre/m.csv")
    assert path_key("a_seed/m.csv") != path_key("a/m.csv")


def test_a_configuration_is_named_by_what_its_runs_names_share():
    runs = [Member(f"/logs/{k}", name, f"{k}/m.csv", {"run_name": name, "clip": clip, "seed": seed})
            for k, (name, clip, seed) in enumerate([("Pre-Norm | Clip=10 | Run 1", 10, 1),
                                                    ("Pre-Norm | Clip=10 | Seed 2", 10, 2),
                                                    ("Pre-Norm | Clip=1 | Run 2", 1, 1)])]
    runs = [Member(m.id, m.label, "sweep/m.csv", m.config) for m in runs]
    assert [g.label for g in group_runs(runs)] == ["Pre-Norm | Clip=10", "Pre-Norm | Clip=1 | Run 2"]
    # without run names, the config keys that tell the configurations apart
    plain = [Member(m.id, m.label, m.source, {k: v for k, v in m.config.items() if k != "run_name"}) for m in runs]
    assert [g.label for g in group_runs(plain)] == ["clip=10", "clip=1"]


def test_seeds_of_one_configuration_are_not_compared_pairwise_across_runs(tmp_path, capsys):
    write_sweep(tmp_path / "sweep")
    assert main(["report", str(tmp_path / "sweep")]) == 0
    across = capsys.readouterr().out.split("Across runs\n", 1)[1].split("Configurations\n", 1)[0]
    assert not any(line.startswith("  - seed=") for line in across.splitlines())  # said by Configurations
    assert "clip=10" in across  # configurations are still compared with each other
