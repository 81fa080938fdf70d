"""Step counters that restart every epoch, turned into one global step.

mmdetection writes ``Epoch [6][1050/3750]`` and ``{"epoch": 6, "iter": 1050}``;
the PyTorch tutorials write ``Epoch [3/50], Step [100/500]``. The inner counter
starts again at every epoch: that is not a reset of the run. The global step is
``(epoch - base) * per_epoch + inner``, where ``base`` is the first epoch's
number (0 or 1) and ``per_epoch`` comes from the line (``[i/N]``) or is learnt
from the data (the largest inner count of an epoch, seen when the next epoch
starts; one more for a count a parser knows starts at 0).

While ``per_epoch`` is unknown, points of any epoch but the first are held and
given out once it is learnt (a log resumed at epoch 5 learns it when epoch 6
starts); the parsers say how many wait in ``Batch.meta["held"]``. A counter presumed to restart that turns out to keep counting across an
epoch change is read as global from then on, unless its trainer is known to restart it (MindSpore's
``cur_step_in_epoch``: a log that quotes its first and its tenth epoch only seems to count on).

A total printed beside the inner count is the epoch's size, unless the count turns out to go on
(PaddleSeg's ``epoch: 2, iter: 80/2000``: the run's 2000 iterations). A parser that cannot tell
beforehand says so (``doubt_totals``): in a log that starts after the first epoch, whether the
count restarts is only seen when the next epoch starts, and the points wait till then (placed in
an epoch of 2000, a global count would read as a resumed run at the next epoch).
"""

from __future__ import annotations

import math
import re
from typing import Any

#: ``max_epochs=12`` in an mmcv/mmengine config dump: the planned epochs.
MAX_EPOCHS = re.compile(r"\bmax_epochs\s*=\s*(\d+)")


class EpochCounter:
    """Global steps from ``(epoch, inner)`` pairs, in file order."""

    def __init__(self, from_zero: bool = False) -> None:
        # ``from_zero``: the inner count starts at 0 (a loop's ``enumerate``), so an epoch whose highest
        # count is k held k + 1 steps; learnt as k, the next epoch's count 0 would land on its last step
        self.from_zero = from_zero
        self.per_epoch: float | None = None  # given by a line: wins over what is learnt
        self.learnt: float | None = None
        self.base: float | None = None
        self.epoch: float | None = None
        self.last: float | None = None  # the inner count of the latest point
        self.peak = 0.0  # the largest inner count of the current epoch
        self.restarts = True  # presumed; False once the counter kept counting across epochs
        self.held: list[tuple[float, float | None, Any]] = []
        self.epochs: float | None = None  # the epochs planned, when the log writes them
        self.seen_peak = 0.0  # the largest inner count seen

    #: The trainer counts within epochs: the count is never read as global (set by a parser).
    always_restarts = False
    #: A total beside the count may be the run's, not the epoch's (set by a parser).
    doubt_totals = False
    #: Whether an epoch change was seen: whether the count restarts is known.
    changed = False

    @property
    def size(self) -> float | None:
        """Inner steps in one epoch, when known."""
        return self.per_epoch if self.per_epoch is not None else self.learnt

    def add(self, epoch: float, inner: float | None, payload: Any, total: float | None = None,
            epochs: float | None = None) -> list[tuple[float, Any]]:
        """Points that can be placed now, ``(global step, payload)``, in file order.

        ``inner`` None means the end of ``epoch`` (a validation line). ``total``: the count's
        total written beside it; ``epochs``: the epochs planned, written beside the epoch.
        """
        if total is not None and total > 0:
            self.per_epoch = float(total)
        if epochs is not None and epochs > 0:
            self.epochs = float(epochs)
        if self.base is None:
            self.base = 0.0 if epoch == 0 else 1.0
        if self.epoch is not None and epoch > self.epoch:
            self.changed = True
            if self.always_restarts:
                self.last = None  # the new epoch's count never goes on from the last one's
        if inner is not None:
            self._observe(epoch, inner)
        out: list[tuple[float, Any]] = []
        known = self.size is not None or not self.restarts
        if known and self.doubt_totals and self.restarts and not self.changed and epoch != self.base:
            known = False  # the first epoch the log shows is not its first: is the total the run's?
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
            if self.last is not None and inner > self.last and self.restarts and self._could_be_global():
                self.restarts = False  # it kept counting: a global counter
            elif self.restarts and self.per_epoch is None:
                self.learnt = max(self.learnt or 0.0, self.peak + (1.0 if self.from_zero else 0.0))
            self.peak = 0.0
        self.epoch = epoch
        self.last = inner
        self.peak = max(self.peak, inner)
        self.seen_peak = max(self.seen_peak, inner)

    def _could_be_global(self) -> bool:
        """Whether the count could be the run's: a count of the run, written with its total
        beside the epochs planned, reaches about ``total * epochs done / epochs`` by the end of
        an epoch. One that went past that (twice over, and by more than one) in the epochs the
        log shows counts within each epoch, where a count that went on at a new epoch means
        lines left out between them (YOLOX's ``epoch: 1/200, iter: 30/661`` and then
        ``epoch: 200/200, iter: 650/661``)."""
        if self.per_epoch is None or self.epochs is None or self.doubt_totals or self.epoch is None:
            return True
        done = self.epoch - (self.base if self.base is not None else 1.0) + 1.0
        return self.seen_peak <= 2.0 * self.per_epoch * max(done, 1.0) / self.epochs + 1.0

    def _place(self, epoch: float, inner: float | None) -> float:
        size = self.size or 0.0
        if not self.restarts:
            return inner if inner is not None else (self.last or 0.0)
        assert self.base is not None
        if inner is None:
            return (epoch - self.base + 1) * size
        return (epoch - self.base) * size + inner


#: Counters that count within an epoch and are no step on their own (the epoch beside them makes
#: them global: ``{"epoch": 2, "iter": 100}``), most preferred first.
INNER_COUNTERS = ("iter", "inner_iter", "batch", "batch_idx")
#: Step keys that may count within the epoch logged beside them (``epoch,batch,loss``).
WITHIN_EPOCH = frozenset({"step", "iteration", "iter", "it", "batch", "batch_idx", "micro_step"})


class WithinEpoch:
    """Global steps of a step column that starts again at every epoch of an epoch column.

    Whether it does is seen at the first change of epoch: a step that went down there counts
    within each epoch (and from then on, each epoch adds the highest step of the one before);
    one that went on is global and left as it is (Lightning's ``epoch,step``). Only the rows
    where the epoch changes are looked at one by one.
    """

    def __init__(self) -> None:
        self.restarts: bool | None = None
        self.epoch = math.nan  # the epoch and the step of the last row with both
        self.step = math.nan
        self.offset = 0.0  # added to the steps of the current epoch
        self.peak = -math.inf  # the current epoch's highest step

    def globalize(self, steps: "np.ndarray", epochs: "np.ndarray") -> "np.ndarray":
        """The global steps of rows of ``steps`` and ``epochs`` (arrays, in file order)."""
        import numpy as np

        if self.restarts is False:
            return steps
        both = np.flatnonzero(np.isfinite(steps) & np.isfinite(epochs))
        if not len(both):
            return steps
        e, s = epochs[both], steps[both]
        changes = np.flatnonzero(np.concatenate(([e[0] != self.epoch], e[1:] != e[:-1])))
        out = steps.copy()
        starts = list(changes) + [len(e)]
        at = 0
        for k in range(len(starts)):
            end = starts[k]
            if end > at:  # rows of the epoch under way
                self.peak = max(self.peak, float(np.max(s[at:end])))
                out[both[at:end]] = s[at:end] + self.offset
                self.step, at = float(s[end - 1]), end
            if end == len(e):
                break
            if math.isfinite(self.epoch) and e[end] > self.epoch:  # a new epoch: did the step start again?
                if self.restarts is None:
                    self.restarts = bool(s[end] < self.step)
                    if not self.restarts:
                        return steps
                if s[end] < self.step:  # counted from 0, the last epoch's highest step is one short of its size
                    self.offset += self.peak + (1.0 if s[end] <= 0 else 0.0)
                    self.peak = -math.inf
            elif math.isfinite(self.epoch) and e[end] < self.epoch:  # training started again: a reset, kept
                self.offset, self.peak = 0.0, -math.inf
            self.epoch = float(e[end])
        return out


    def one(self, step: float, epoch: float) -> float:
        """:meth:`globalize` of one row (a record of a JSON log)."""
        if self.restarts is False or not (math.isfinite(step) and math.isfinite(epoch)):
            return step
        if math.isfinite(self.epoch) and epoch > self.epoch:
            if self.restarts is None:
                self.restarts = step < self.step
                if not self.restarts:
                    return step
            if step < self.step:
                self.offset += self.peak + (1.0 if step <= 0 else 0.0)
                self.peak = -math.inf
        elif math.isfinite(self.epoch) and epoch < self.epoch:
            self.offset, self.peak = 0.0, -math.inf
        self.epoch, self.step, self.peak = epoch, step, max(self.peak, step)
        return step + self.offset


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
