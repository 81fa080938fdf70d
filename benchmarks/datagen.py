"""Deterministic training logs of any length, written the way trainers write them.

Files are cached under ``benchmarks/.data/`` (gitignored) by name and size, so a
second run measures without regenerating them.
"""

from __future__ import annotations

import json
import os

import numpy as np

DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".data")
_CHUNK = 200_000
_VERSION = 1  # bump when a generator's output changes


def _curves(start: int, stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    steps = np.arange(start, stop, dtype=np.int64)
    rng = np.random.default_rng(start)
    loss = 0.2 + 2.0 / (1.0 + steps * 1e-4) + 0.01 * rng.standard_normal(len(steps))
    lr = 3e-4 * (0.1 + 0.9 * 0.5 * (1 + np.cos(np.pi * steps / 1e7)))
    return steps, loss, lr


def csv_lines(start: int, stop: int) -> str:
    steps, loss, lr = _curves(start, stop)
    return "".join(f"{s},{v:.6f},{r:.6e}\n" for s, v, r in zip(steps.tolist(), loss.tolist(), lr.tolist()))


def jsonl_lines(start: int, stop: int) -> str:
    steps, loss, lr = _curves(start, stop)
    return "".join(
        f'{{"step": {s}, "loss": {v:.6f}, "lr": {r:.6e}}}\n'
        for s, v, r in zip(steps.tolist(), loss.tolist(), lr.tolist())
    )


def nanogpt_lines(start: int, stop: int) -> str:
    steps, loss, _ = _curves(start, stop)
    rng = np.random.default_rng(stop)
    dt = 200 + 20 * rng.random(len(steps))
    mfu = 30 + rng.random(len(steps))
    return "".join(
        f"iter {s}: loss {v:.4f}, time {t:.2f}ms, mfu {m:.2f}%\n"
        for s, v, t, m in zip(steps.tolist(), loss.tolist(), dt.tolist(), mfu.tolist())
    )


FORMATS = {
    "csv": ("metrics.csv", "step,loss,lr\n", csv_lines),
    "jsonl": ("metrics.jsonl", "", jsonl_lines),
    "text": ("train.log", "", nanogpt_lines),
}


def write_log(path: str, fmt: str, lines: int, start: int = 0) -> None:
    """Write ``lines`` records of ``fmt`` to ``path`` (a header first for CSV)."""
    _, header, render = FORMATS[fmt]
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(header)
        for begin in range(start, start + lines, _CHUNK):
            handle.write(render(begin, min(begin + _CHUNK, start + lines)))


def cached_log(fmt: str, lines: int) -> str:
    """A log of ``lines`` records, generated once and kept in the data folder."""
    name, _, _ = FORMATS[fmt]
    folder = os.path.join(DATA_DIR, f"v{_VERSION}-{fmt}-{lines}")
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        os.makedirs(folder, exist_ok=True)
        partial = path + ".part"
        write_log(partial, fmt, lines)
        os.replace(partial, path)
    return path


def appended_line(fmt: str, step: int) -> bytes:
    """One more record for a log of ``fmt``."""
    _, _, render = FORMATS[fmt]
    return render(step, step + 1).encode()


def record_count_check(fmt: str, text: str) -> int:
    """Lines of data in ``text`` (for tests of the generators)."""
    if fmt == "jsonl":
        return sum(1 for line in text.splitlines() if json.loads(line))
    return text.count("\n") - (1 if fmt == "csv" else 0)
