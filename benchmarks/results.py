"""RESULTS.md: the rows of the latest run of each benchmark, with the machine they ran on.

Rows are kept in ``results.json`` beside it, so ``--only NAME`` refreshes one row and
keeps the others (each with the date and machine of its own run).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict

from benchmarks.measure import Row

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS_JSON = os.path.join(HERE, "results.json")
RESULTS_MD = os.path.join(HERE, "RESULTS.md")

ORDER = [
    "csv", "csv-pieces", "jsonl", "text", "tfevents", "mlflow-db", "wandb-file", "tail", "memory",
    "latency", "latency-poll", "redraw", "keys", "startup", "startup-ready", "startup-1gb", "many-runs",
    "remote-latency-sftp", "remote-latency-s3", "remote-idle", "remote-idle-tfevents", "remote-discovery",
    "tfevents-rustboard", "report", "report-memory", "watch-scale", "watch-live",
    "runs-start", "toggle-runs", "idle-cpu", "rescan-loop", "follow-cpu", "latency-terminal",
    "idle-cpu-poll", "runs-cpu", "runs-appear",
]


def load() -> dict:
    try:
        with open(RESULTS_JSON, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {"runs": {}, "rows": {}, "limits": {}, "notes": {}}


def save(state: dict) -> None:
    with open(RESULTS_JSON, "w", encoding="utf-8") as handle:
        json.dump(state, handle, indent=1, sort_keys=True)
        handle.write("\n")


def record(state: dict, run_id: str, machine: dict, quick: bool, rows: list[Row], limits: list[dict]) -> None:
    state["runs"][run_id] = {"machine": machine, "quick": quick}
    for row in rows:
        state["rows"][row.name] = {"run": run_id, **asdict(row)}
    for limit in limits:
        state["limits"][limit["format"]] = {"run": run_id, **limit}
    used = {entry["run"] for entry in state["rows"].values()} | {entry["run"] for entry in state["limits"].values()}
    state["runs"] = {key: value for key, value in state["runs"].items() if key in used}


def _figure(value: float, unit: str) -> str:
    if unit == "core":
        return f"{value:.2%}"
    if unit == "bytes":
        return f"{value:.1f} B"
    if unit not in ("s", ""):
        return f"{value:,.1f} {unit}"
    if value < 0.001:
        return f"{value * 1e6:.0f} µs"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    return f"{value:.2f} s"


def render(state: dict, bounds: dict[str, str]) -> str:
    runs = state["runs"]
    labels = {run_id: chr(ord("A") + k) for k, run_id in enumerate(sorted(runs))}
    lines = [
        "# Benchmarks",
        "",
        "`python -m benchmarks` generates its own logs (cached in `benchmarks/.data/`), measures, and",
        "writes this file. Each figure is a ratio against a baseline measured in the same run, because",
        "the machine is shared: baseline and tuiloss alternate, and the ratio is the median of the",
        "paired ratios (the range is the lowest and highest pair). `--quick` uses 1M lines instead",
        "of 10M; `--only NAME[,NAME]` refreshes some rows and keeps the others.",
        "",
        "| what | tuiloss | baseline | ratio (range) | target | | run |",
        "|---|---:|---:|---:|---|---|---|",
    ]
    rows = state["rows"]
    for name in ORDER + sorted(set(rows) - set(ORDER)):
        row = rows.get(name)
        if row is None:
            continue
        verdict = "reported" if row["passed"] is None else ("pass" if row["passed"] else "**miss**")
        low, high = row["spread"]
        spread = f" ({low:.2f}-{high:.2f})" if high > 0 else ""
        lines.append(
            f"| {row['what']} | {_figure(row['ours'], row['unit'])} | {_figure(row['baseline'], row['unit'])}"
            f" | {row['ratio']:.2f}{spread} | {row['target']} | {verdict} | {labels[row['run']]} |"
        )
    lines += ["", "Notes per row:", ""]
    for name in ORDER + sorted(set(rows) - set(ORDER)):
        row = rows.get(name)
        if row is not None and row["note"]:
            lines.append(f"- **{name}**: {row['note']}")
    limits = state["limits"]
    if limits:
        lines += [
            "",
            "## Physical limit",
            "",
            "The same files read raw (32 MiB blocks from the page cache), next to the ingest figures.",
            "",
            "| format | size | raw read | tuiloss | baseline | tuiloss / raw | baseline / raw | long-line scan | run |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for fmt in ("csv", "jsonl", "text"):
            entry = limits.get(fmt)
            if entry is None:
                continue
            lines.append(
                f"| {fmt} | {entry['bytes'] / 1e6:,.0f} MB | {_figure(entry['raw'], 's')} | {_figure(entry['ours'], 's')}"
                f" | {_figure(entry['baseline'], 's')} | {entry['ours'] / entry['raw']:.0f}x"
                f" | {entry['baseline'] / entry['raw']:.0f}x | {_figure(entry['scan'], 's')} | {labels[entry['run']]} |"
            )
    if bounds:
        lines += ["", "## What bounds the figures that miss, or pass with some pairs over the target", ""]
        for name in ORDER + sorted(set(bounds) - set(ORDER)):
            if name in bounds:
                lines.append(f"- **{name}**: {bounds[name]}")
    lines += ["", "## Machines", ""]
    for run_id in sorted(runs):
        info = runs[run_id]
        machine = info["machine"]
        lines.append(
            f"- **{labels[run_id]}** ({run_id}{', quick' if info['quick'] else ''}): {machine['cpu']},"
            f" {machine['cores']} cores, {machine['memory']}, {machine['os']}, {machine['python']};"
            f" load average at start {machine['load average']}; {machine['packages']}"
        )
    lines.append("")
    return "\n".join(lines)


def write(state: dict, bounds: dict[str, str]) -> None:
    save(state)
    with open(RESULTS_MD, "w", encoding="utf-8") as handle:
        handle.write(render(state, bounds))
