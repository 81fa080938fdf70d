"""What the command line asked for, in one frozen value the CLI, app and tests share."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Config:
    paths: tuple[str, ...]
    format: str | None = None
    pattern: str | None = None
    metric: str | None = None
    poll: float | None = None  # seconds; None chooses inotify where it works
    ascii: bool = False
    bell: bool = False
    smoothing: float = 0.0
    log_x: bool = True
    log_y: bool = False
    verbose: bool = False
