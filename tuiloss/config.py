"""What the command line asked for, in one frozen value the CLI, app and tests share."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Config:
    paths: tuple[str, ...]
    format: str | None = None
    pattern: str | None = None
    metric: str | None = None
    step: str | None = None  # a metric to use as the step axis instead of the one read
    poll: float | None = None  # seconds; None chooses inotify where it works
    ascii: bool = False
    bell: bool = False
    smoothing: float = 0.0
    log_x: bool = True
    log_y: bool | None = None  # None: log when the visible data spans more than a decade
    verbose: bool = False
    group_by: tuple[str, ...] | None = None  # --group-by: config keys, () for none, None for the whole config
