"""Step counters that restart every epoch, turned into one global step.

mmdetection writes ``Epoch [6][1050/3750]`` and ``{"epoch": 6, "iter": 1050}``;
the PyTorch tutorials write ``Epoch [3/50], Step [100/500]``. The inner counter
starts again at every epoch: that is not a reset of the run. The global step is
``(epoch - base) * per_epoch + inner``, where ``base`` is the first epoch's
number (0 or 1) and ``per_epoch`` comes from the line (``[i/N]``) or is learnt
from the data (the largest inner count of an epoch, seen when the next epoch
starts).

While ``per_epoch`` is unknown, points of any epoch but the first are held and
given out once it is learnt (a log resumed at epoch 5 learns it when epoch 6
starts); the parsers say how many wait in ``Batch.meta["held"]``. A counter presumed to restart that turns out to keep counting across an
epoch change is read as global from then on.
"""

from __future__ import annotations

import re
from typing import Any

#: ``max_epochs=12`` in an mmcv/mmengine config dump: the planned epochs.
MAX_EPOCHS = re.compile(r"\bmax_epochs\s*=\s*(\d+)")


class EpochCounter:
    """Global steps from ``(epoch, inner)`` pairs, in file order."""

    def __init__(self) -> None:
        self.per_epoch: float | None = None  # given by a line: wins over what is learnt
        self.learnt: float | None = None
        self.base: float | None = None
        self.epoch: float | None = None
        self.last: float | None = None  # the inner count of the latest point
        self.peak = 0.0  # the largest inner count of the current epoch
        self.restarts = True  # presumed; False once the counter kept counting across epochs
        self.held: list[tuple[float, float | None, Any]] = []

    @property
    def size(self) -> float | None:
        """Inner steps in one epoch, when known."""
        return self.per_epoch if self.per_epoch is not None else self.learnt

    def add(self, epoch: float, inner: float | None, payload: Any, total: float | None = None) -> list[tuple[float, Any]]:
        """Points that can be placed now, ``(global step, payload)``, in file order.

        ``inner`` None means the end of ``epoch`` (a validation line).
        """
        if total is not None and total > 0:
            self.per_epoch = float(total)
        if self.base is None:
            self.base = 0.0 if epoch == 0 else 1.0
        if inner is not None:
            self._observe(epoch, inner)
        out: list[tuple[float, Any]] = []
        known = self.size is not None or not self.restarts
        if self.held and known:
            for held_epoch, held_inner, held_payload in self.held:
                out.append((self._place(held_epoch, held_inner), held_payload))
            self.held = []
        if not known and (epoch != self.base or inner is None):
            if inner is None and epoch == self.base and self.epoch == epoch and self.peak > 0:
                out.append((self.peak, payload))  # the first epoch's end, as far as it is known
                return out
            self.held.append((epoch, inner, payload))
            return out
        out.append((self._place(epoch, inner), payload))
        return out

    def _observe(self, epoch: float, inner: float) -> None:
        if self.epoch is not None and epoch > self.epoch:
            if self.last is not None and inner > self.last and self.restarts:
                self.restarts = False  # it kept counting: a global counter
            elif self.restarts and self.per_epoch is None:
                self.learnt = max(self.learnt or 0.0, self.peak)
            self.peak = 0.0
        self.epoch = epoch
        self.last = inner
        self.peak = max(self.peak, inner)

    def _place(self, epoch: float, inner: float | None) -> float:
        size = self.size or 0.0
        if not self.restarts:
            return inner if inner is not None else (self.last or 0.0)
        assert self.base is not None
        if inner is None:
            return (epoch - self.base + 1) * size
        return (epoch - self.base) * size + inner


def note_repeats(batch) -> None:
    """Say in ``batch.meta`` when a metric holds many values at one step.

    YOLO-style logs write every batch loss of an epoch at step = epoch: one x with
    many values, whose spread is not a spike. ``repeated_steps`` tells the layers
    above; the points are kept as they are, in file order.
    """
    import numpy as np

    if batch.meta.get("repeated_steps"):
        return
    for steps, _ in batch.series.values():
        if len(steps) >= 3 and np.count_nonzero(np.diff(steps) == 0) >= 2:
            batch.meta["repeated_steps"] = True
            return
