"""Every sentence about a finding, in one place: the report and the panel word them alike.

The detectors call the anomaly and comparison sentences when they make a finding; the
report and the insights panel call the plateau, convergence, segment and skip sentences.
Numbers read as :mod:`display` writes them. Text from logs (labels, reasons) is passed in
as the caller wants it shown (made safe or not); nothing here strips or escapes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tuiloss.core.analysis.display import (
    finite,
    fmt_step,
    fmt_value,
    format_duration,
    format_level,
    format_percent,
    format_ratio,
    format_step,
    format_value,
)

if TYPE_CHECKING:
    from tuiloss.core.analysis.plateaus import Plateau

# -- anomalies ----------------------------------------------------------------------------------


def spike(peak: float, step: float, baseline: float, end_step: float | None, relative: bool,
          higher: bool = False) -> str:
    """``spiked to 1.40 at 25.0K (7x the 0.200 baseline), recovered by 30.0K``; on a metric
    where higher is better, ``dropped to 50.0 at 3.0K (baseline 90.0), recovered by 3.1K``."""
    text = f"{'dropped' if higher else 'spiked'} to {format_value(peak)} at {format_step(step)}"
    if relative and baseline > 0 and peak > 0:
        text += f" ({format_ratio(peak / baseline)} the {format_value(baseline)} baseline)"
    else:
        text += f" (baseline {format_value(baseline)})"
    if end_step is None:
        return text + ", not recovered yet"
    return text + f", recovered by {format_step(end_step)}"


def nonfinite(step: float, end_step: float | None, what: str, before: float | None) -> str:
    """``became NaN at 5 (last finite value 0.300), finite again from 9``."""
    text = f"became {what} at {format_step(step)}"
    if before is not None:
        text += f" (last finite value {format_value(before)})"
    if end_step is None:
        return text + " and stayed non-finite to the end of the log"
    return text + f", finite again from {format_step(end_step)}"


def more_nonfinite(count: int, first_step: float, last_step: float) -> str:
    """The stretches of NaN/Inf past the ones reported one by one, in one sentence."""
    return f"{count:,} more stretches of NaN/Inf values from {format_step(first_step)} to {format_step(last_step)}"


def divergence(step: float, baseline: float, value: float, nan_step: float | None, relative: bool,
               higher: bool = False) -> str:
    """``diverged from 60.0K: rose from 0.200 to 3.10 (16x) and never came back down``; where
    higher is better, ``collapsed from 60.0K: fell from 90.0 to 10.0 and never came back up``."""
    if higher:
        text = f"collapsed from {format_step(step)}: fell from {format_value(baseline)} to {format_value(value)}"
        if nan_step is not None:
            return text + f" and became non-finite at {format_step(nan_step)}"
        return text + " and never came back up"
    text = f"diverged from {format_step(step)}: rose from {format_value(baseline)} to {format_value(value)}"
    if relative and baseline > 0 and value > 0:
        text += f" ({format_ratio(value / baseline)})"
    if nan_step is not None:
        return text + f" and became non-finite at {format_step(nan_step)}"
    return text + " and never came back down"


def drift(step: float, end_step: float, start_level: float, end_level: float, relative: bool, ongoing: bool,
          higher: bool = False, sudden: bool = False) -> str:
    """``drifted up from 0.200 to 0.260 (+30%) between 40.0K and 80.0K`` (``drifted down`` where
    higher is better); ``stepped up`` when it rose within a small part of the run (``sudden``)."""
    verb = "stepped" if sudden else "drifted"
    text = f"{verb} {'down' if higher else 'up'} from {format_value(start_level)} to {format_value(end_level)}"
    if relative and start_level > 0:
        text += f" ({format_percent(end_level / start_level - 1)})"
    if ongoing:
        return text + f" from {format_step(step)} to the end of the log ({format_step(end_step)})"
    return text + f" between {format_step(step)} and {format_step(end_step)}"


def overfitting(step: float, best_step: float, best: float, last: float, last_step: float, train_then: float,
                train_end: float, relative: bool, what: str = "eval loss") -> str:
    """``overfitting from 1.0K: eval loss rose from its best 0.321 (at 1.0K) to 0.420 (+31%) by
    5.0K while the train loss fell from 0.0500 to 0.000100``."""
    text = (f"overfitting from {format_step(step)}: {what} rose from its best {format_value(best)} "
            f"(at {format_step(best_step)}) to {format_value(last)}")
    if relative and best > 0:
        text += f" ({format_percent(last / best - 1)})"
    verb = "fell" if train_end < train_then else "stayed"
    how = f"from {format_value(train_then)} to {format_value(train_end)}" if verb == "fell" else f"at {format_value(train_end)}"
    return text + f" by {format_step(last_step)} while the train loss {verb} {how}"


def grad_norm_evidence(peak: float, ratio: float) -> str:
    """``a grad-norm spike to 1.83 (5.5x)``."""
    return f"a grad-norm spike to {format_value(peak)} ({format_ratio(ratio)})"


def drop_evidence(kind: str, before: float, after: float) -> str:
    """``the fp16 loss scale fell from 256 to 128``, ``2 more overflow-skipped iterations (8 in all)``,
    ``the learning rate dropped 10x (0.001 to 0.0001)``."""
    if kind == "loss_scale":
        return f"the fp16 loss scale fell from {format_value(before)} to {format_value(after)}"
    if kind == "skipped":
        more = after - before
        return f"{more:,.0f} more overflow-skipped iteration{'s' if more != 1 else ''} ({after:,.0f} in all)"
    if after > 0:
        return f"the learning rate dropped {format_ratio(before / after)} ({format_value(before)} to {format_value(after)})"
    return f"the learning rate dropped to {format_value(after)} (from {format_value(before)})"


def lone_grad_norm(items: list[tuple[float, float]]) -> str:
    """``grad-norm spikes with no loss finding at them: 4.2K (3.1x), 9.0K (7.5x)``."""
    shown = ", ".join(f"{format_step(step)} ({format_ratio(ratio)})" for step, ratio in items[:10])
    more = f" and {len(items) - 10} more" if len(items) > 10 else ""
    return f"grad-norm spike{'s' if len(items) > 1 else ''} with no loss finding at {'them' if len(items) > 1 else 'it'}: {shown}{more}"


def periodic(count: int, period: float, first: float, last: float) -> str:
    """``the 19 spikes recur every 1.0K steps, from 3.0K to 39.0K: one cause that repeats ...``."""
    return (f"the {count} spikes recur every {format_step(period)} steps, from {format_step(first)} to "
            f"{format_step(last)}: one cause that repeats at that interval, not {count} separate events")


def evidence(items: list[tuple[str, float]]) -> str:
    """``"; with a grad-norm spike to 1.83 (5.5x) at 7.4K"`` (the first three, and how many more)."""
    shown = ", ".join(f"{text} at {format_step(step)}" for text, step in items[:3])
    more = f" and {len(items) - 3} more" if len(items) > 3 else ""
    return f"; with {shown}{more}"


_RESET_TEXT = {
    "reset": "the step counter went back to {step} (a restart or resume)",
    "backwards": "the step counter runs backwards from step {step} (it counts down)",
    "truncated": "the log file was truncated; the series starts again at step {step}",
    "replaced": "the log file was replaced; the series starts again at step {step}",
    "rotated": "the log file was rotated; the series continues from step {step} in a new file",
    "recreated": "the log file was deleted and recreated; the series starts again at step {step}",
}


def reset(step: float, reason: str) -> str:
    """Why a new segment started, by its reason (``reset``, ``truncated``, ``rotated``...)."""
    template = _RESET_TEXT.get(reason, "the series started again at step {step} (" + str(reason) + ")")
    return template.format(step=format_step(step))


def stall(silence: float, interval: float, last_step: float) -> str:
    """``no new point for 12 min (usually one every 30 s); last at step 2.5K``."""
    return (
        f"no new point for {format_duration(silence)} (usually one every {format_duration(interval)}); "
        f"last at step {format_step(last_step)}"
    )


def run_ended(state: str, reason: str, last_step: float | None) -> str:
    """``killed (KeyboardInterrupt) after step 1.2K``: how the log ends, and where training was."""
    text = f"{state} ({reason})" if reason else state
    return text + (f" after step {format_step(last_step)}" if last_step is not None else "")


# -- across runs ----------------------------------------------------------------------------------


def only_settled(label: str, step: float) -> str:
    """The one run of several that converged."""
    return f"{label} is the only run that settled, by {format_step(step)}"


def fastest(label: str, step: float, others: list[tuple[str, float]]) -> str:
    """``A converged fastest, by 24.2K (B 29.7K, C 36.4K)``."""
    rest = ", ".join(f"{name} {format_step(at)}" for name, at in others)
    return f"{label} converged fastest, by {format_step(step)} ({rest})"


def slowest(label: str, step: float) -> str:
    """``C converged slowest, by 36.4K``."""
    return f"{label} converged slowest, by {format_step(step)}"


def not_settled(labels: list[str]) -> str:
    """``B has not settled by the end of the log``."""
    verb = "has" if len(labels) == 1 else "have"
    return f"{', '.join(labels)} {verb} not settled by the end of the log"


_NOT_SETTLED = {
    "improving": "{who} {verb} still improving at the end of the log",
    "no_progress": "{who} made no progress",
    "diverged": "{who} collapsed or diverged",
    "unsettled": "{who} {verb} inside a spike at the end of the log",
    "worsening": "{who} {verb} getting worse at the end of the log",
    "near_zero": "{who} oscillate{s} around 0",
    "too_short": "{who} {verb} too short to say",
}


def not_settled_by_verdict(groups: list[tuple[str, list[str]]]) -> str:
    """``B is still improving at the end of the log; C, D made no progress``."""
    parts = []
    for kind, labels in groups:
        many = len(labels) > 1
        template = _NOT_SETTLED.get(kind, "{who} {verb} not settled by the end of the log")
        parts.append(template.format(who=", ".join(labels), verb="are" if many else "is", s="" if many else "s"))
    return "; ".join(parts)


def lowest_final(label: str, final: float, others: list[float]) -> str:
    """``A ended lowest, at 0.180 (others 0.200-0.250)``; ``others`` in ascending order."""
    lo, hi = others[0], others[-1]
    rest = format_value(lo) if len(others) == 1 else f"{format_value(lo)}-{format_value(hi)}"
    return f"{label} ended lowest, at {format_value(final)} (others {rest})"


def most_stable(label: str, last: Plateau, spread: float) -> str:
    """The run whose last plateau is the narrowest, ``spread`` its width over its mean."""
    return (
        f"{label} is the most stable late in training: its last plateau stays within "
        f"{format_value(last.low)}-{format_value(last.high)} (±{spread * 50:.1f}%) "
        f"from {format_step(last.start_step)}"
    )


def no_anomalies(runs: int, labels: list[str] | None = None) -> str:
    """No run has an anomaly; ``labels`` names them (the runs compared, when others were not)."""
    if labels:
        return f"no anomalies in any of the {runs} runs compared here: {', '.join(labels)}"
    return f"no anomalies in any of the {runs} runs"


#: Runs named at most in a sentence; the rest are counted.
NAMED_RUNS = 6


def not_compared(labels: list[str], others_compared: bool) -> str:
    """The runs compared with no other: none shares its folder, configuration, or format and metrics."""
    why = "none shares another's folder, configuration, or format and metrics"
    if not others_compared:
        return f"no two of the {len(labels)} runs are compared: {why}"
    named = ", ".join(labels[:NAMED_RUNS])
    more = f" and {len(labels) - NAMED_RUNS} more" if len(labels) > NAMED_RUNS else ""
    which = "1 run" if len(labels) == 1 else f"{len(labels)} runs"
    return f"{which} compared with no other ({why} with it): {named}{more}"


def anomaly_counts(found: list[tuple[str, dict[str, int]]], runs: int, clean: list[str]) -> str:
    """``anomalies in 1 of 3 runs: B (1 spike, 2 spikes in val_loss); none in A, C``.

    A kind may name the series it is in (``spike in val_loss``): the kind is what is counted.
    """
    parts = []
    for label, counts in found:
        what = ", ".join(_counted(n, kind) for kind, n in sorted(counts.items(), key=lambda kv: (" in " in kv[0], kv[0])))
        parts.append(f"{label} ({what})")
    message = f"anomalies in {len(found)} of {runs} runs: " + "; ".join(parts)
    if clean:
        message += f"; none in {', '.join(clean)}"
    return message


def _counted(n: int, kind: str) -> str:
    word, sep, where = kind.partition(" in ")
    return f"{n} {word}{'s' if n > 1 else ''}{sep}{where}"


def only_reached(name: str, level: float, step: float, other: str) -> str:
    """``clip=10 reached 0.25 by 30.0K; clip=1 never did``."""
    return f"{name} reached {format_level(level)} by {format_step(step)}; {other} never did"


def reached_first(fast: str, fast_step: float, slow: str, slow_step: float, level: float, ratio: float | None) -> str:
    """``clip=10 reached 0.25 1.5x sooner than clip=1 (20.0K vs 30.0K)``; with ``ratio`` None,
    the two reached it ``at about the same step``."""
    if ratio is not None:
        text = f"{fast} reached {format_level(level)} {format_ratio(ratio)} sooner than {slow} "
    else:
        text = f"{fast} and {slow} reached {format_level(level)} at about the same step "
    return text + f"({format_step(fast_step)} vs {format_step(slow_step)})"


def lower_final(name_a: str, final_a: float, name_b: str, final_b: float) -> str:
    """``"; key=10 ended 11% lower (0.178 vs 0.201)"`` when the finals differ by 2% or more."""
    if not (final_a and final_b and final_a > 0 and final_b > 0) or abs(final_a / final_b - 1) < 0.02:
        return ""
    if final_b < final_a:
        name_a, final_a, name_b, final_b = name_b, final_b, name_a, final_a
    pct = (1 - final_a / final_b) * 100
    amount = f"{pct:.0f}%" if pct >= 10 else f"{pct:.1f}%"
    return f"; {name_a} ended {amount} lower ({format_value(final_a)} vs {format_value(final_b)})"


# -- one series, as the report and the panel list it -----------------------------------------------


def plateau(found: Plateau) -> str:
    """``plateau 60.0K-100.0K at 0.230 (0.220-0.240)``."""
    return (
        f"plateau {fmt_step(finite(found.start_step))}-{fmt_step(finite(found.end_step))} at "
        f"{fmt_value(finite(found.mean))} ({fmt_value(finite(found.low))}-{fmt_value(finite(found.high))})"
    )


def settling(verdict_message: str | None, final: str, low: str | None = None,
             convergence_step: float | None = None) -> str:
    """The verdict and the final value: ``converged at 18.0K (within 0.18-0.22); final 0.200``,
    with ``, min ...`` when ``low`` is given. ``final`` (the median of the last 1% of finite
    points, 1 to 51, the one final of the report, the panel and the comparisons) and ``low``
    come already written (how a missing final reads differs: the report says ``NaN``, the
    panel ``-``)."""
    if verdict_message is None:  # an analysis without a verdict: what its convergence step says
        verdict_message = f"converged at {fmt_step(convergence_step)}" if convergence_step is not None else "not converged"
    text = verdict_message + f"; final {final}"
    if low is not None:
        text += f", min {low}"
    return text


def verdict(kind: str, step: float | None, low: float | None, high: float | None,
            start: float | None, level: float | None, previous_best: float | None, points: int, relative: bool,
            higher: bool = False) -> str:
    """The run's verdict (see :mod:`verdicts` for what each means); the final value follows it
    (:func:`settling`).

    ``converged at 29.8K (within 0.182-0.220)``, ``still improving (6% below its best before
    the last 20% of the run)``, ``no progress (started at 1.40)``, ``collapsed / diverged from
    60.0K``, ``not settled: the log ends inside the spike from 25.0K``, ``not settled: rising since
    36.8K, to the end of the log``, ``too short to say (12 finite points)``.
    """
    if kind == "converged":
        return f"converged at {fmt_step(step)} (within {fmt_value(low)}-{fmt_value(high)})"
    if kind == "improving":
        side = "above" if higher else "below"
        if relative and level and previous_best and level > 0 and previous_best > 0:
            return f"still improving ({abs(level / previous_best - 1) * 100:.0f}% {side} its best before the last 20% of the run)"
        return f"still improving ({side} its best {fmt_value(previous_best)} before the last 20% of the run)"
    if kind == "no_progress":
        return f"no progress (started at {fmt_value(start)})"
    if kind == "diverged":
        return f"collapsed / diverged from {fmt_step(step)}"
    if kind == "unsettled":
        return f"not settled: the log ends inside the spike from {fmt_step(step)}"
    if kind == "worsening":
        return f"not settled: {'falling' if higher else 'rising'} since {fmt_step(step)}, to the end of the log"
    if kind == "near_zero":
        return "oscillates around 0: no level to converge to"
    return f"too short to say ({points:,} finite point{'s' if points != 1 else ''})"


def segment(start_step: float | None, reason: str) -> str:
    """``new segment at 200: reset``."""
    return f"new segment at {fmt_step(start_step)}: {reason}"


def skipped(lines: int, reasons: list[tuple[str, int]] | None = None) -> str:
    """``skipped 3 lines: 2 not a number, 1 no step``; without reasons, ``skipped 3 lines``."""
    if reasons is None:
        return f"skipped {lines:,} lines"
    listed = ", ".join(f"{count:,} {why}" for why, count in reasons)
    return f"skipped {lines:,} line{'s' if lines != 1 else ''}: {listed}"


def no_metrics(skipped_lines: int) -> str:
    """A run with no metric read yet."""
    return "no metrics read yet" + (f" ({skipped_lines:,} lines skipped)" if skipped_lines else "")


# -- how a run was read: its metric's direction, its step axis, its sources ------------------------


def direction(value: str) -> str:
    """``lower is better``, ``higher is better``, or ``direction unknown, no health verdicts``."""
    if value == "lower":
        return "lower is better"
    if value == "higher":
        return "higher is better"
    return "direction unknown, no health verdicts"


def coarse_axis(points: int, steps: int) -> str:
    """The step axis repeats: ``coarse step axis: 23 points on 7 steps, kept in line order``."""
    return f"coarse step axis: {points:,} points on {steps:,} distinct steps, kept in line order"


def per_step_median(points: int, steps: int, per_step: int) -> str:
    """Many values written at each step (every batch of an epoch at step = epoch): one x, many values."""
    return (f"{per_step:,} values per step ({points:,} points on {steps:,} steps), analysed as their median:"
            " the spread within a step is not a spike")


def progress(step: float | None, planned: float) -> str:
    """``at step 2.1K of 1.7M planned (0.1%)``: how far a run got of the total its log announced."""
    share = step / planned if step is not None and planned else 0.0
    shown = f"{share:.0%}" if share >= 0.01 or share == 0 else f"{share:.1%}" if share >= 0.001 else "<0.1%"
    return f"at step {fmt_step(step)} of {fmt_step(planned)} planned ({shown})"


def held_lines(count: int) -> str:
    """Lines read but not yet on the axis: an epoch-local counter whose epoch length is not known yet."""
    return (f"{count:,} line{'s' if count != 1 else ''} not placed yet: the iterations per epoch are not "
            "known until the next epoch starts")


def no_quality_metric(found: list[str]) -> str:
    """A run whose metrics are all throughput, time, counts, ...: nothing to judge."""
    shown = ", ".join(found[:8]) + (", ..." if len(found) > 8 else "")
    return f"no loss, perplexity, reward or accuracy among its metrics ({shown})"


def same_series(others: list[str]) -> str:
    """``holds the same series as logs/events...``: one training written by two loggers."""
    shown = ", ".join(others[:3]) + (f" and {len(others) - 3:,} more" if len(others) > 3 else "")
    return f"holds the same series as {shown}: one training written twice, not compared with itself"
