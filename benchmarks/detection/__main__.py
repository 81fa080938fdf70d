"""Run the labelled benchmark and write RESULTS.md.

Usage: ``python -m benchmarks.detection [--seed N] [--scale K] [--max-length N] [--arrays] [--out PATH]``
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

from benchmarks.detection import PLATEAU_LEVEL, TARGETS, VERDICT_ACCURACY
from benchmarks.detection.generate import SPIKE_SNR, make_suite
from benchmarks.detection.run import evaluate
from benchmarks.detection.states import STATE_ACCURACY, evaluate_states, render_states, state_accuracy
from benchmarks.detection.score import DRIFT_OVERLAP, KINDS, TOLERANCE, VERDICTS, Score, f1

HERE = os.path.dirname(os.path.abspath(__file__))


def render(score: Score, *, cases: int, seconds: float, seed: int, scale: int, files: bool, points: int,
           states=None) -> str:
    lines = [
        "# Detection benchmark",
        "",
        f"`python -m benchmarks.detection --seed {seed} --scale {scale}`: {cases} labelled runs "
        f"({points:,} points), {'written as CSV / JSONL / nanoGPT stdout logs and loaded with `engine.load`' if files else 'analysed from arrays'}, "
        f"analysed in {seconds:.1f} s (Python {platform.python_version()}).",
        "",
        "| kind | labelled | found | false | precision | recall | F1 | target F1 | |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for kind in KINDS:
        t = score.kinds[kind]
        target = TARGETS[kind]
        ok = f1(t) >= target
        lines.append(
            f"| {kind} | {t.tp + t.fn} | {t.tp} | {t.fp} | {t.precision:.3f} | {t.recall:.3f} | {f1(t):.3f} | {target:.2f} | {'ok' if ok else 'BELOW'} |"
        )
    acc = score.verdict_accuracy
    lines += [
        "",
        f"Verdicts: {len(score.verdicts)} runs with a clear verdict, accuracy {acc:.3f} "
        f"(target {VERDICT_ACCURACY:.2f}, {'ok' if acc >= VERDICT_ACCURACY else 'BELOW'}).",
        "",
        "| verdict | labelled | found | false | precision | recall |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for verdict in VERDICTS:
        t = score.verdict_tally(verdict)
        lines.append(f"| {verdict} | {t.tp + t.fn} | {t.tp} | {t.fp} | {t.precision:.3f} | {t.recall:.3f} |")
    dec, frac = score.convergence_decades, score.convergence_fraction
    if dec:
        lines += [
            "",
            f"Convergence step, {len(dec)} runs labelled and found converged: error median {_median(dec):.3f} decades "
            f"({_median(frac):.1%} of the run), 90th percentile {_quantile(dec, 0.9):.3f} decades "
            f"({_quantile(frac, 0.9):.1%} of the run).",
        ]
    errors = score.plateau_errors
    worst = max(errors) if errors else 0.0
    within = sum(e <= PLATEAU_LEVEL for e in errors)
    lines += [
        "",
        f"Plateaus (labelled on runs with noise sigma up to 0.12, split at spikes): {score.plateau_found} of {score.plateau_labels} labelled plateaus found (a detected plateau covering at "
        f"least half of it); level error median {_median(errors):.2%}, worst {worst:.2%}; "
        f"{within} of {len(errors)} within {PLATEAU_LEVEL:.0%}.",
        "",
        f"Negative controls (clean, warm-up, cosine and step decay, flat, very noisy runs; epoch staircases, "
        f"warmup-stable-decay, heavy-tailed and autocorrelated noise, grad-norm-only spikes, RL losses around zero, "
        f"eval series that follow train): {score.control_runs} runs, "
        f"{score.control_spikes} spikes and {score.control_other} other findings "
        f"({score.control_info} lines naming grad-norm spikes that no loss finding explains, as information).",
        "",
        "## How it is scored",
        "",
        "- A detection matches a label of the same kind when its onset is within "
        + ", ".join(f"{k} {v:.0%}" for k, v in TOLERANCE.items())
        + " of the run's step span (and at least 3 logging intervals); a spike may also be off by a quarter of its width. "
        f"A drift matches when the two intervals overlap by at least {DRIFT_OVERLAP:.0%} of the shorter one.",
        f"- Spikes are injected 1.5x-10x above the local level, 1 point to 5% of the run wide, as boxes, sharp "
        f"rises with exponential decay, and ramps. Noise is Gaussian in log space with sigma 0.005-0.1 (white or AR(1)); "
        f"a spike is only injected (and labelled) when its height is at least {SPIKE_SNR:.0f} noise sigmas in log space, "
        f"so the heights are drawn from [max(1.5, e^({SPIKE_SNR:.0f} sigma)), 10]. Very noisy controls (sigma 0.15-0.35) carry no spikes.",
        "- Divergences grow 3x-100x to the end of the log, into NaN/Inf, or jump 5x-40x and stay; the label is where "
        "the rise reaches 10%. Drifts rise 5-25% over 15-35% of the run after convergence, then stay, come back down, "
        "or continue to the end. Resets restart the step counter from an earlier checkpoint.",
        "- Run lengths: 200 to 100,000 points; logging every 1, 10 or 100 steps.",
        "- Realistic cases (`realistic.py`): noise heavy-tailed (Student t, 3 dof, clipped at 10 sigma), AR(1) with phi 0.5-0.9, or "
        "growing relative to a falling loss; LR schedules that are not anomalies (epoch staircases, step decays, "
        "warmup-stable-decay, cosine), some with a spike of 2x-10x and at least 20 noise sigmas; runs flat at the start "
        "then learning; no progress at all; collapses into a dead plateau (labelled divergence at the jump); eval "
        "series that overfit (labelled on the bottom of the clean eval, within 1% of its minimum) or spike 5-100x once; grad-norm-only spikes; RL "
        "losses oscillating around 0; runs of 5-18 points falling 3% a point; runs of 25-60 points still falling 1.5% a point. "
        "Added after those (so they keep their draws): RL losses loud and large early then around 0, about half of them with one late "
        "spike, where the loss is around 0, of 100-1000 of its noise sigmas (labelled spike); eval series that rise 5-10% over their last 3-6 evals "
        "(labelled overfitting on their bottom).",
        "- Verdicts are read off the noiseless curve: under 20 points too_short; a total fall under 10% "
        "no_progress; a fall over the last 20% of at least 5% (and 4 noise standard errors) improving; at most "
        "1.5% converged, at the step after which the noiseless curve stays within 10% of its end; a divergence or "
        "collapse diverged; anything between is not scored.",
        "",
    ]
    if states is not None:
        lines += render_states(*states)
        lines.append("")
    for kind in KINDS:
        t = score.kinds[kind]
        if t.misses or t.false:
            lines.append(f"### {kind}: misses and false detections")
            lines.append("")
            lines.extend(f"- missed: {m}" for m in t.misses[:10])
            lines.extend(f"- false: {m}" for m in t.false[:10])
            lines.append("")
    if score.verdict_notes:
        lines.append("### Verdicts that differ from the label")
        lines.append("")
        lines.extend(f"- {m}" for m in score.verdict_notes[:20])
        lines.append("")
    if score.control_notes:
        lines.append("### Findings on negative controls")
        lines.append("")
        lines.extend(f"- {m}" for m in score.control_notes[:10])
        lines.append("")
    return "\n".join(lines)


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _median(values: list[float]) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.detection", description=__doc__)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--scale", type=int, default=6, help="repeat the plan this many times")
    parser.add_argument("--max-length", type=int, default=100_000)
    parser.add_argument("--arrays", action="store_true", help="skip the log files, analyse arrays")
    parser.add_argument("--out", default=os.path.join(HERE, "RESULTS.md"))
    parser.add_argument("--no-realistic", action="store_true", help="only the first generator's cases")
    args = parser.parse_args(argv)
    cases = make_suite(seed=args.seed, scale=args.scale, max_length=args.max_length, realistic=not args.no_realistic)
    score, seconds, missing = evaluate(cases, files=not args.arrays)
    if missing:
        print(f"warning: {missing} runs were not loaded", file=sys.stderr)
    points = sum(len(c.steps) for c in cases)
    states = evaluate_states(seed=args.seed, count=20 * args.scale)
    text = render(score, cases=len(cases), seconds=seconds, seed=args.seed, scale=args.scale, files=not args.arrays,
                  points=points, states=states)
    with open(args.out, "w") as f:
        f.write(text)
    print(text)
    below = [k for k in KINDS if f1(score.kinds[k]) < TARGETS[k]]
    bad = (below or score.control_spikes or score.control_other or score.verdict_accuracy < VERDICT_ACCURACY
           or state_accuracy(states[0]) < STATE_ACCURACY)
    return 1 if bad else 0


if __name__ == "__main__":
    start = time.perf_counter()
    code = main()
    print(f"({time.perf_counter() - start:.1f} s)", file=sys.stderr)
    raise SystemExit(code)
