"""Labelled benchmark of configuration grouping and of the seed-deviation finding.

Usage: ``python -m benchmarks.grouping [--sweeps N] [--seed S]``

Each generated sweep is a folder of runs written the ways sweeps are laid out in the wild:

- hyperparameters in folder names (``lr=0.001_wd=0.1_seed=2/metrics.csv``),
- numbered run folders with the hyperparameters in a ``config.json`` or ``hparams.yaml`` beside the
  log (``run_3/``, ``trial-12/``, a launch timestamp ``2024-05-01_12-00-03/``),
- Lightning's ``lightning_logs/version_N/`` with ``hparams.yaml``,

with 1 to 4 seeds per configuration and 2 to 5 configurations, every run a noisy decaying loss;
in some configurations one seed carries a spike the others do not. The truth is which runs share
a configuration and which run deviates. Scored: pairwise precision and recall of "same
configuration", sweeps grouped exactly, and precision / recall of the deviation finding.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

LAYOUTS = ("folder_names", "config_json", "hparams_yaml", "lightning", "timestamps")


@dataclass
class Sweep:
    layout: str
    truth: dict[str, str] = field(default_factory=dict)  # run folder (relative) -> configuration name
    deviating: set[str] = field(default_factory=set)  # run folders with a spike their seeds lack


def write_sweep(root: str, rng: np.random.Generator, layout: str) -> Sweep:
    sweep = Sweep(layout)
    configs = int(rng.integers(2, 6))
    lrs = rng.choice([1e-4, 3e-4, 1e-3, 3e-3, 1e-2], size=configs, replace=False)
    steps = np.arange(10, 3001, 10)
    run_number = 0
    for c, lr in enumerate(lrs):
        seeds = int(rng.integers(1, 5))
        tau = 200 + 2000 * float(lr) * 100
        spiky = seeds >= 3 and rng.random() < 0.5
        for s in range(seeds):
            run_number += 1
            seed = int(rng.integers(0, 10_000))
            config = {"lr": float(lr), "model": "tiny", "seed": seed}
            if layout == "folder_names":
                rel = f"lr={lr:g}_model=tiny_seed={seed}"
            elif layout == "config_json":
                rel = f"run_{run_number}"
            elif layout == "hparams_yaml":
                rel = f"trial-{run_number + 10}"
            elif layout == "lightning":
                rel = f"lr{c}/lightning_logs/version_{s}"
            else:
                rel = f"outputs/2024-05-{1 + run_number:02d}_{int(rng.integers(0, 24)):02d}-{int(rng.integers(0, 60)):02d}-00"
            folder = os.path.join(root, rel)
            os.makedirs(folder)
            if layout in ("config_json", "timestamps"):
                with open(os.path.join(folder, "config.json"), "w") as handle:
                    json.dump(config, handle)
            elif layout in ("hparams_yaml", "lightning"):
                with open(os.path.join(folder, "hparams.yaml"), "w") as handle:
                    handle.write("".join(f"{k}: {v}\n" for k, v in config.items()))
            noise = np.random.default_rng(seed)
            loss = 0.3 + 2.0 * np.exp(-steps / tau) + 0.01 * noise.standard_normal(len(steps))
            if spiky and s == 0:
                at = (steps >= 2000) & (steps < 2100)
                loss[at] += np.linspace(1.5, 0.0, int(at.sum()))
                sweep.deviating.add(rel)
            with open(os.path.join(folder, "metrics.csv"), "w") as handle:
                handle.write("step,loss\n" + "".join(f"{a},{b:.5f}\n" for a, b in zip(steps, loss)))
            sweep.truth[rel] = f"config{c}"
    return sweep


@dataclass
class Score:
    pairs_tp: int = 0
    pairs_fp: int = 0
    pairs_fn: int = 0
    exact: int = 0
    sweeps: int = 0
    dev_tp: int = 0
    dev_fp: int = 0
    dev_fn: int = 0

    @staticmethod
    def ratio(a: int, b: int) -> float:
        return a / b if b else 1.0

    @property
    def pair_precision(self) -> float:
        return self.ratio(self.pairs_tp, self.pairs_tp + self.pairs_fp)

    @property
    def pair_recall(self) -> float:
        return self.ratio(self.pairs_tp, self.pairs_tp + self.pairs_fn)

    @property
    def deviation_precision(self) -> float:
        return self.ratio(self.dev_tp, self.dev_tp + self.dev_fp)

    @property
    def deviation_recall(self) -> float:
        return self.ratio(self.dev_tp, self.dev_tp + self.dev_fn)


def score_sweep(root: str, sweep: Sweep, score: Score) -> None:
    from tuiloss.core.engine import Options, load
    from tuiloss.core.groups import Member, MemberFacts, group_findings, group_runs
    from tuiloss.core.report import build_report

    store, _, _ = load([root], Options())
    report = build_report(store, root=root)
    members = [Member(e.id, e.label, e.source, dict(e.config)) for e in report.runs]
    groups = group_runs(members)
    folder_of = {e.id: os.path.dirname(e.source) for e in report.runs}
    found = {folder_of[i]: k for k, g in enumerate(groups) for i in g.run_ids}
    for a, b in combinations(sorted(sweep.truth), 2):
        same_truth = sweep.truth[a] == sweep.truth[b]
        same_found = a in found and b in found and found[a] == found[b]
        score.pairs_tp += same_truth and same_found
        score.pairs_fp += same_found and not same_truth
        score.pairs_fn += same_truth and not same_found
    score.sweeps += 1
    score.exact += len(groups) == len(set(sweep.truth.values())) and all(
        len({sweep.truth[folder_of[i]] for i in g.run_ids}) == 1 for g in groups)
    facts = {e.id: MemberFacts(e.id, e.label, e.primary.final, e.primary.analysis.convergence_step,
                               tuple((a.kind, a.step, a.end_step, a.message) for a in e.primary.anomalies))
             for e in report.runs if e.primary is not None and e.primary.analysis is not None}
    said = {folder_of[r] for f in group_findings(groups, facts) if f.kind == "deviation" for r in f.runs}
    score.dev_tp += len(said & sweep.deviating)
    score.dev_fp += len(said - sweep.deviating)
    score.dev_fn += len(sweep.deviating - said)


def run(sweeps: int, seed: int) -> Score:
    rng = np.random.default_rng(seed)
    score = Score()
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(sweeps):
            root = os.path.join(tmp, f"sweep{k}")
            sweep = write_sweep(root, rng, LAYOUTS[k % len(LAYOUTS)])
            score_sweep(root, sweep, score)
    return score


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    score = run(args.sweeps, args.seed)
    print(f"{score.sweeps} sweeps ({', '.join(LAYOUTS)}), seed {args.seed}")
    print(f"same-configuration pairs: precision {score.pair_precision:.3f}, recall {score.pair_recall:.3f}")
    print(f"sweeps grouped exactly: {score.exact}/{score.sweeps}")
    print(f"seed deviations: {score.dev_tp} found, {score.dev_fp} false, {score.dev_fn} missed "
          f"(precision {score.deviation_precision:.3f}, recall {score.deviation_recall:.3f})")


if __name__ == "__main__":
    main()
