"""The per-point work of the analysis, done once per point and kept between updates.

A :class:`Scan` holds the finite points of a series (in a log or linear space: only the
last few hundred thousand of those, see :class:`Transformed`), the local spike candidates,
the non-finite stretches and the block summary. :meth:`Scan.update`
processes only what is new, plus a fixed-size tail whose results depend on points not
yet seen; everything before that tail is final. The batch analysis builds a scan from
nothing in one call, the live analysis extends it, and both then run the same bounded
:func:`summary.finish` on it, so they agree exactly.
"""

from __future__ import annotations

import math

import numpy as np

from tuiloss.core.analysis.arrays import GrowableArray, first_min
from tuiloss.core.analysis.blocks import block_size, compute_blocks
from tuiloss.core.analysis.stats import MAD_SCALE, median, medians_in_place, row_medians, running_median

#: Half-width of the local running median (points).
LOCAL_HALF = 10
#: Points per noise chunk, and chunks on each side whose median gives the local noise.
NOISE_CHUNK = 64
NOISE_SPREAD = 4
#: A point is a local spike candidate this many noise sigmas above its running median...
LOCAL_SIGMAS = 6.0
#: ...and at least this far in log space (5%), or this fraction of the level on a linear scale.
LOCAL_FLOOR = math.log(1.05)
#: New points are processed at most this many at a time.
PIECE = 1 << 18
#: Pieces of an update but its last, and updates that nothing reads yet (a report's load), work
#: on the scales above the finest only once a scale's parent has this many groups it has not
#: taken in: each update of a scale pays a few dozen calls and its unfinished tail again.
LAZY_GROUPS = 1 << 16
#: No point before this one can be a spike: there is no history to compare it with.
FIRST_CANDIDATE = 2 * LOCAL_HALF + 1
#: The trailing median of point i is the running median centred at i - BACK.
BACK = LOCAL_HALF + 1
#: Each scale groups this many points of the one below; a scale exists once its parent
#: has this many groups' worth of points.
SCALE_FACTOR = 8
MIN_TRACK_POINTS = 64
#: At most this many candidates per scale are followed (the highest rises).
MAX_CANDIDATES = 1000
#: A rise of up to this many quanta of the logged precision is never a spike.
QUANTA = 2.5
_MAX_DECIMALS = 12
#: Values sampled to guess how many decimal places a long series needs.
_DECIMALS_SAMPLE = 4096
#: Values checked against that guess at a time.
_CHECK_PIECE = 1 << 14
#: A track forgets the medians it no longer reads once they are this many (see LocalTrack).
_FORGET_AT = 1 << 16
#: Values worked on at a time where rows of a long series go through a buffer.
_BUFFER_ELEMENTS = 1 << 17
#: Transformed values are let go (see :class:`Transformed`) this many at a time, once they
#: are behind the first one a later update reads, less :data:`HOLD_MARGIN`.
LET_GO = 1 << 18
HOLD_MARGIN = 1 << 16
#: Values transformed at a time where a series' are all worked out again.
_TRANSFORM_PIECE = 1 << 18


def decimals(values: np.ndarray) -> int:
    """Most decimal places any value needs (``_MAX_DECIMALS + 1`` for full-precision floats).

    A value needs the first ``d`` at which it is a whole number of ``10**-d``. An evenly
    spaced sample of the values says how many places to expect; the values that are whole
    at that count need no more, so only the others are tried place by place (few, unless
    the sample missed what most values need).
    """
    if len(values) > _DECIMALS_SAMPLE:
        guess = _places(_finite_size(values[:: len(values) // _DECIMALS_SAMPLE]))
        if guess > _MAX_DECIMALS:
            return guess
        # checked a cache-sized piece at a time: the check's passes then stay in cache
        others = [_not_whole(part, guess) for part in np.split(values, range(_CHECK_PIECE, len(values), _CHECK_PIECE))]
        return max(guess, _places(np.concatenate(others)))
    return _places(_finite_size(values))


def _finite_size(values: np.ndarray) -> np.ndarray:
    """``|v|`` of the finite ``values``."""
    finite = np.isfinite(values)
    return np.abs(values if finite.all() else values[finite])


def _not_whole(values: np.ndarray, d: int) -> np.ndarray:
    """``|v|`` of the finite ``values`` that are not whole numbers of ``10**-d``.

    Most pieces of a log hold none: within a millionth of a whole number (a stricter test than
    :func:`_whole`'s, which allows that much of the value besides) they all are, and only a piece
    where some value is not, or is no number, is looked at value by value.
    """
    with np.errstate(invalid="ignore", over="ignore"):  # an infinity, a value past the float range
        scaled = values * (10.0**d)
        off = np.round(scaled)
        np.subtract(scaled, off, out=off)
    np.abs(off, out=off)
    if np.max(off, initial=0.0) <= _WHOLE_SURELY:  # NaN is never at most anything
        return values[:0]
    sizes = _finite_size(values)
    return sizes[~_whole(sizes, d)]


#: A value this close to a whole number of the quantum is one by :func:`_whole` too.
_WHOLE_SURELY = 1e-6


def _whole(values: np.ndarray, d: int) -> np.ndarray:
    """Which values are (within rounding) whole numbers of ``10**-d``."""
    scaled = values * (10.0**d)
    off = np.round(scaled)
    np.subtract(scaled, off, out=off)
    np.abs(off, out=off)
    np.maximum(scaled, 1.0, out=scaled)  # the same numbers as written out, in two buffers
    scaled *= 1e-6
    scaled += 1e-9
    return off <= scaled


def _places(values: np.ndarray) -> int:
    """The most decimal places any of ``values`` (finite, not negative) needs."""
    if not len(values):
        return 0
    remaining = values
    for d in range(_MAX_DECIMALS + 1):
        remaining = remaining[~_whole(remaining, d)]
        if not len(remaining):
            return d
    return _MAX_DECIMALS + 1


class Scan:
    """Incremental per-point state of one series (see the module notes)."""

    def __init__(self) -> None:
        self.sign = 1.0  # -1: the series is mirrored (higher is better), set by its owner
        self.n = 0  # visible points consumed
        self.steps = np.empty(0)  # the visible arrays last given
        self.values = np.empty(0)
        self.key: object = None
        self.log = True  # log space until a finite value <= 0 is seen
        self.decimals = 0
        # the finite points: the given arrays while every value is finite, copies after a gap
        self.f_step: Borrowed | GrowableArray = Borrowed(np.empty(0))
        self.f_value: Borrowed | GrowableArray = Borrowed(np.empty(0))
        self.y = Transformed(log=True)  # transformed finite values
        self.nan_runs: list[list[int]] = []  # [start, end) in visible indices; end -1 while open
        self.min_i = -1  # finite index of the (first) minimum value
        # local spike detection at scales 1, 8, 64, ... points (see LocalTrack)
        self.tracks: list[LocalTrack] = []
        # blocks
        self.block_size = 1
        self.blocks: list[np.ndarray] = []  # complete blocks, see blocks.compute_blocks
        self.rebuilds = 0
        self.behind = False  # the scales above the finest wait for more points (see LAZY_GROUPS)

    # -- public ---------------------------------------------------------------

    @property
    def quantum(self) -> float:
        """The logged precision (``10**-decimals``), 0 when values carry full precision."""
        return 0.0 if self.decimals > _MAX_DECIMALS else 10.0 ** (-self.decimals)

    @property
    def nf(self) -> int:
        return len(self.y)

    def update(self, steps: np.ndarray, values: np.ndarray, key: object = None, room: int = 0,
               lazy: bool = False) -> None:
        """Catch up with the visible arrays: process new points, or start over if earlier ones changed.

        A long stretch of new points is processed in pieces (the results do not depend on
        how points are split), which keeps the temporary arrays small. ``lazy``: nothing is
        read of the scan before the next update, so the coarser scales may wait (see
        :data:`LAZY_GROUPS`); else every scale is up to date when it returns. ``room``: how many
        points the series will likely reach (its store's reserve), room made for them once;
        with ``lazy``, the blocks of the size that many points take are summed up as their points
        come, while their transformed values are held (see :meth:`complete_blocks`).
        After each piece, the transformed values no later piece reads are let go (see
        :class:`Transformed`).
        """
        steps = np.asarray(steps, dtype=np.float64)
        values = np.asarray(values, dtype=np.float64)
        n = self.n
        same = (
            key == self.key
            and len(steps) >= n
            and (n == 0 or (steps[n - 1] == self.steps[n - 1] and _same(values[n - 1], self.values[n - 1])))
            and (n == 0 or steps[0] == self.steps[0])
        )
        if not same:
            self._reset()
        self.key = key
        target = len(steps)
        if target - self.n > PIECE:
            for grow in (self.f_step, self.f_value, self.y):
                if isinstance(grow, GrowableArray):
                    grow.reserve(max(target, room))
        while self.n < target:
            end = min(target, self.n + PIECE)
            self.steps, self.values = steps[:end], values[:end]
            self._consume(lazy or end < target)
            if lazy and room:
                self._scan_blocks(block_size(max(room, self.nf)))
            self._let_go()
        if not lazy:
            self.catch_up_scales()
        self.steps, self.values = steps, values

    def finite_before_last_stretch(self) -> int:
        """How many finite points come before the last non-finite stretch (all, if none)."""
        if not self.nan_runs:
            return self.nf
        a, b = self.nan_runs[-1]
        after = 0 if b == -1 else self.n - b  # finite points after a closed last stretch
        return self.nf - after

    # -- internals ------------------------------------------------------------

    def _reset(self) -> None:
        rebuilds, sign = self.rebuilds + (self.n > 0), self.sign
        self.__init__()
        self.rebuilds, self.sign = rebuilds, sign

    def _consume(self, lazy: bool = False) -> None:
        old = self.n
        steps, values = self.steps, self.values
        new_values = values[old:]
        finite = np.isfinite(new_values)
        self._track_nans(old, ~finite)
        self.n = len(values)
        if isinstance(self.f_value, Borrowed) and finite.all():
            # every value so far is finite: the finite points are the given arrays themselves
            fv = new_values
            self.f_step, self.f_value = Borrowed(steps), Borrowed(values)
            self.y.source = self.f_value
        else:
            if isinstance(self.f_value, Borrowed):  # the first gap: keep copies from now on
                self.f_step, self.f_value = self.f_step.copy(len(values)), self.f_value.copy(len(values))
                self.y.source = self.f_value
            idx = np.flatnonzero(finite)
            fv = new_values[idx]
            self.f_step.extend(steps[old:][idx])
            self.f_value.extend(fv)
        if not len(fv):
            return
        restart = False
        if self.log and (fv <= 0).any():
            self.log = False
            restart = True
        d = decimals(fv)
        if d > self.decimals:
            self.decimals = d
            restart = restart or self.nf > 0
        first_new = self.nf
        with np.errstate(divide="ignore", invalid="ignore"):
            self.y.extend(np.log(fv) if self.log else fv)
        if restart:  # worked out again in pieces: no temporary the size of the series
            y = Transformed(len(self.f_value) + 1, log=self.log, source=self.f_value)
            for a in range(0, len(self.f_value), _TRANSFORM_PIECE):
                y.extend(y.worked_out(slice(a, min(len(self.f_value), a + _TRANSFORM_PIECE))))
            self.y = y
            self._clear_local()
            first_new = 0
        self._track_min(first_new)
        self._scan_local(lazy)

    def _track_nans(self, offset: int, bad: np.ndarray) -> None:
        if not len(bad):
            return
        open_run = bool(self.nan_runs) and self.nan_runs[-1][1] == -1
        if not open_run and not bad.any():
            return
        if open_run and not bad[0]:
            self.nan_runs[-1][1] = offset
        edges = np.diff(np.concatenate(([0], bad.view(np.int8), [0])))
        total = offset + len(bad)
        for a, b in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)):
            a, b = int(a) + offset, int(b) + offset
            end = b if b < total else -1
            if a == offset and open_run:
                self.nan_runs[-1][1] = end
            else:
                self.nan_runs.append([a, end])

    def _track_min(self, first_new: int) -> None:
        fv = self.f_value.view
        if first_new == 0:
            self.min_i = first_min(fv)
            return
        j = first_new + first_min(fv[first_new:])
        if self.min_i < 0 or fv[j] < fv[self.min_i]:
            self.min_i = j

    def _clear_local(self) -> None:
        self.tracks = []
        self.blocks = []
        self.behind = False

    def _scan_local(self, lazy: bool = False, first: int = 0) -> None:
        """Bring the local tracks from scale ``first`` on up to date (``lazy``: see :data:`LAZY_GROUPS`)."""
        if not self.tracks:
            self.tracks.append(LocalTrack(1))
        values = self.y.view
        level = first
        self.behind = False
        while level < len(self.tracks):
            track = self.tracks[level]
            if level == 0:
                track.values = values
            else:
                parent = self.tracks[level - 1].values
                if lazy and len(parent) // SCALE_FACTOR - len(track.own) < LAZY_GROUPS:
                    self.behind = True  # this scale and those above wait for more
                    break
                track.absorb(parent)
            track.scan(self)
            parent = track.values
            if level + 1 == len(self.tracks) and len(parent) >= SCALE_FACTOR * MIN_TRACK_POINTS:
                self.tracks.append(LocalTrack(track.scale * SCALE_FACTOR))
            level += 1

    def floor(self, base: np.ndarray | float) -> np.ndarray | float:
        """Smallest rise (in the analysis space) that can count as a spike above ``base``."""
        q = self.quantum
        if self.log:
            floor = LOCAL_FLOOR
            if q > 0:
                level = np.exp(base)
                floor = np.maximum(floor, np.log1p(QUANTA * q / level))
            return floor
        return np.maximum(0.05 * np.abs(base), QUANTA * q)

    def complete_blocks(self) -> tuple[int, list[np.ndarray]]:
        """The block summary of the finite values so far: ``(block_size, blocks)``.

        Worked out when asked for, not as points come: the size doubles as a series grows and
        each doubling works out every block again, so a long series read in one go (a report)
        summed up its points nearly three times over, each time at a size it did not keep.
        Where an update knew how long the series would grow (a load, see :meth:`update`), the
        blocks of that size were summed up meanwhile, and only those since are worked out here
        (all of them again, if the series ended at another size).
        """
        self._scan_blocks(block_size(self.nf))
        return self.block_size, self.blocks

    def catch_up_scales(self) -> None:
        """Bring the scales that waited for more points (see :data:`LAZY_GROUPS`) up to date."""
        if self.behind:
            self._scan_local(first=1)

    def _scan_blocks(self, size: int) -> None:
        """The complete blocks of ``size`` points so far."""
        nf = self.nf
        if size != self.block_size or not self.blocks:
            self.block_size = size
            self.blocks = list(self._compute_blocks(size, 0, nf // size))
            return
        have = len(self.blocks[0])
        done = nf // size
        if done > have:
            new = self._compute_blocks(size, have, done)
            self.blocks = [np.concatenate((old, add)) for old, add in zip(self.blocks, new)]

    def _compute_blocks(self, size: int, first: int, last: int) -> tuple[np.ndarray, ...]:
        """:func:`compute_blocks` of :attr:`y`; where its values were let go (see
        :class:`Transformed`), worked out again from the finite values a few blocks at a time."""
        if first * size >= self.y.hole:
            return compute_blocks(self.y.view, self.f_step.view, size, first, last)
        per = max(1, _BUFFER_ELEMENTS // size)
        parts = []
        for a in range(first, last, per):
            b = min(last, a + per)
            lo, hi = a * size, b * size
            level, low, high, arg, step, first_step = compute_blocks(
                self.y.worked_out(slice(lo, hi)), self.f_step.view[lo:hi], size, 0, b - a)
            parts.append((level, low, high, arg + lo, step, first_step))
        if not parts:
            return compute_blocks(self.y.view, self.f_step.view, size, first, last)
        return tuple(np.concatenate(column) for column in zip(*parts))

    def first_read(self) -> int:
        """The first transformed value a later update may read: the local tracks' unfinished
        parts. The blocks, worked out when asked for, read the finite values where these are gone."""
        if len(self.tracks) < 2:
            return 0  # the next scale, once made, reads from the start
        track = self.tracks[0]
        return max(0, min(track.med_stable - LOCAL_HALF, track.chunk_stable * NOISE_CHUNK - 1, track.cand_stable,
                          len(self.tracks[1].own) * SCALE_FACTOR))

    def _let_go(self) -> None:
        """Let go of the transformed values no later update reads."""
        stop = self.first_read() - HOLD_MARGIN
        if stop - self.y.hole >= LET_GO:
            self.y.let_go(stop)
            self.tracks[0].values = self.y.view  # the finest scale reads them there too

    def candidates(self) -> list[tuple[int, int, float]]:
        """Local candidates of every scale: ``(scale, index at that scale, baseline)``."""
        out = []
        for track in self.tracks:
            idx = np.concatenate((track.cand.view, track.tail_cand))
            if not len(idx):
                continue
            base = np.concatenate((track.cand_base.view, track.baselines(track.tail_cand)))
            if len(idx) > MAX_CANDIDATES:
                # heavy-tailed noise: follow only the highest rises (largest first is
                # a property of the data, so every way of splitting it agrees)
                rise = track.values[idx] - base
                keep = np.sort(np.argsort(-rise, kind="stable")[:MAX_CANDIDATES])
                idx, base = idx[keep], base[keep]
            out.extend((track.scale, int(i), float(b)) for i, b in zip(idx, base))
        return out


class Transformed:
    """The finite values of a scan in the analysis space (their logs, or themselves), of which
    only the last ones are held.

    The scan reads those its unfinished parts still need; the bounded part of the analysis
    reads a few thousand more, anywhere. So the values before :attr:`hole` are let go (8
    bytes a point, as much as the series' own values take: the buffer holds the last few
    hundred thousand, reused as the series grows), and :attr:`view` works them out again
    from the finite values (``source``) where they are read: the same numbers, as a
    transform of each value alone gives the same result however the values are cut (a
    test checks it).
    """

    __slots__ = ("_data", "_start", "_size", "hole", "log", "source")

    def __init__(self, capacity: int = 64, *, log: bool, source: Borrowed | GrowableArray | None = None) -> None:
        self._data = np.empty(max(capacity, 1))
        self._start = 0  # the index of the value in _data[0]
        self._size = 0
        self.hole = 0
        self.log = log
        self.source = source

    def __len__(self) -> int:
        return self._size

    @property
    def nbytes(self) -> int:
        """The memory its buffer takes."""
        return self._data.nbytes

    @property
    def view(self) -> np.ndarray | HeldBack:
        """Every value so far: an array while all are held, else read through :class:`HeldBack`.
        Like any array it holds, it reads as it is now until the next :meth:`extend`."""
        held = self._data[self.hole - self._start : self._size - self._start]
        held.flags.writeable = False
        return held if not self.hole else HeldBack(held, self.hole, self)

    def extend(self, values: np.ndarray) -> None:
        used = self._size - self._start
        if used + len(values) > len(self._data):
            # into a new buffer, holding only what is still held: earlier views keep the old one
            keep = self._size - self.hole
            grown = np.empty(int((keep + len(values)) * (2.0 if self.hole else 1.5)) + 1)
            grown[:keep] = self._data[self.hole - self._start : used]
            self._data, self._start = grown, self.hole
            used = keep
        self._data[used : used + len(values)] = values
        self._size += len(values)

    def let_go(self, stop: int) -> None:
        """The values before ``stop`` are no longer held (they go with the next move of the buffer)."""
        self.hole = max(self.hole, min(stop, self._size))

    def worked_out(self, key) -> np.ndarray:
        """The values at ``key`` (a slice, indices or a mask) worked out from the finite values.

        Always from contiguous values, as they were the first time: numpy may take another
        loop (another rounding) for a strided array.
        """
        source = self.source.view
        if isinstance(key, slice):
            start, stop, step = key.indices(len(source))
            values = source[start:stop] if step == 1 else source[np.arange(start, stop, step)]
        else:
            values = source[key]
        if not self.log:
            return values
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(values)


class HeldBack:
    """A read-only 1-D array of a scan's transformed values, of which those from ``hole`` on are
    ``held``: read by index, slice or mask, the others are worked out again (see :class:`Transformed`)."""

    __slots__ = ("_held", "_hole", "_size", "_owner")
    ndim = 1
    dtype = np.dtype(np.float64)

    def __init__(self, held: np.ndarray, hole: int, owner: Transformed) -> None:
        self._held, self._hole, self._owner = held, hole, owner
        self._size = hole + len(held)

    def __len__(self) -> int:
        return self._size

    @property
    def shape(self) -> tuple[int]:
        return (self._size,)

    @property
    def size(self) -> int:
        return self._size

    def __getitem__(self, key):
        if isinstance(key, slice):
            start, stop, step = key.indices(self._size)
            if step > 0 and start >= self._hole:
                return self._held[start - self._hole : max(stop, start) - self._hole : step]
            return self._owner.worked_out(key)
        if isinstance(key, (int, np.integer)):
            k = int(key) + (self._size if key < 0 else 0)
            if self._hole <= k < self._size:
                return self._held[k - self._hole]
            if not 0 <= k < self._size:
                raise IndexError(f"index {int(key)} is out of bounds for {self._size} values")
            return self._owner.worked_out(slice(k, k + 1))[0]
        return self._owner.worked_out(np.asarray(key))

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = self._owner.worked_out(slice(0, self._size))
        return out if dtype is None else out.astype(dtype, copy=False)


class Borrowed:
    """The finite points of a series that has no gap: the caller's arrays, not a copy."""

    __slots__ = ("view",)

    def __init__(self, array: np.ndarray) -> None:
        self.view = array

    def __len__(self) -> int:
        return len(self.view)

    def copy(self, capacity: int) -> GrowableArray:
        out = GrowableArray(capacity)
        out.extend(self.view)
        return out


class LocalTrack:
    """Local spike detection on one scale: the finite values, or medians of groups of them.

    Scale ``k`` reads medians of consecutive groups of ``k`` points (each group of the
    next scale is ``SCALE_FACTOR`` groups of this one), so a spike that builds up over
    ``k * LOCAL_HALF`` points looks sharp at scale ``k``. Only complete groups are used,
    so every value of a scale is final once it exists.
    """

    __slots__ = (
        "scale",
        "values",
        "own",
        "med",
        "med_start",
        "med_stable",
        "chunk_noise",
        "chunk_dips",
        "chunk_stable",
        "noise",
        "noise_stable",
        "cand",
        "cand_base",
        "cand_stable",
        "tail_cand",
    )

    def __init__(self, scale: int) -> None:
        self.scale = scale
        self.values = np.empty(0)
        self.own = GrowableArray()  # group medians (scales above 1)
        # running median of the points from med_start on (entries before med_stable are
        # final); earlier ones are no longer needed by the scan and are worked out again
        # when asked for (see median)
        self.med = GrowableArray()
        self.med_start = 0
        self.med_stable = 0
        self.chunk_noise = (GrowableArray(), GrowableArray())  # per chunk: centred and trailing residual noise
        #: per chunk (scale 1 only): its deepest dip below the centred median, in its own noise
        #: sigmas; the noise's tail over the whole series (see spikes.series_reach)
        self.chunk_dips = GrowableArray()
        self.chunk_stable = 0
        self.noise = (GrowableArray(), GrowableArray())  # the same, smoothed over neighbouring chunks
        self.noise_stable = 0
        self.cand = GrowableArray(dtype=np.int64)  # candidates below cand_stable (indices at this scale)
        self.cand_base = GrowableArray()  # ... and their baselines (see baselines)
        self.cand_stable = 0
        self.tail_cand = np.empty(0, np.int64)

    def absorb(self, parent: np.ndarray) -> None:
        """Append the medians of the parent's newly completed groups."""
        have = len(self.own)
        done = len(parent) // SCALE_FACTOR
        if done > have:
            groups = parent[have * SCALE_FACTOR : done * SCALE_FACTOR].reshape(-1, SCALE_FACTOR)
            self.own.extend(row_medians(groups))
        self.values = self.own.view

    def scan(self, owner: Scan) -> None:
        y = self.values
        nf = len(y)
        # running median: final where the window lies fully inside the data
        self.med.truncate(self.med_stable - self.med_start)
        self.med.extend(running_median(y, LOCAL_HALF, self.med_stable, nf))
        self.med_stable = max(self.med_stable, nf - LOCAL_HALF)
        med, m0 = self.med.view, self.med_start
        # chunk noise of both residuals: final once all medians of the chunk are
        c0 = self.chunk_stable
        lo = c0 * NOISE_CHUNK
        # the residuals from the first point whose candidates may still change (worked out once)
        r0 = min(lo, self.cand_stable)
        residuals = (r0, *_residuals(y, med, m0, r0, nf))
        centred, trailing = residuals[1][lo - r0 :], residuals[2][lo - r0 :]
        # On a steady slope the median is the middle point itself and the residuals
        # vanish; second differences still show the noise, so they set a floor.
        floor = _chunk_mad(_second_differences(y, lo, nf), centre=False) / math.sqrt(6.0)
        for track, resid in zip(self.chunk_noise, (centred, trailing)):
            track.truncate(c0)
            track.extend(np.fmax(_chunk_mad(resid), floor))
        if self.scale == 1:
            self.chunk_dips.truncate(c0)
            self.chunk_dips.extend(_chunk_dips(centred, self.chunk_noise[0].view[c0:]))
        self.chunk_stable = max(c0, self.med_stable // NOISE_CHUNK)
        # smoothed noise: median of a chunk and NOISE_SPREAD neighbours each side
        s0 = self.noise_stable
        for raw, smooth in zip(self.chunk_noise, self.noise):
            smooth.truncate(s0)
            smooth.extend(_smooth(raw.view, s0))
        self.noise_stable = max(s0, self.chunk_stable - NOISE_SPREAD)
        # candidates: final where the chunk's smoothed noise is
        stable_hi = self.noise_stable * NOISE_CHUNK
        if stable_hi > self.cand_stable:
            found = self._candidates(owner, med, m0, self.cand_stable, stable_hi, residuals)
            self.cand.extend(found)
            self.cand_base.extend(self.baselines(found))
            self.cand_stable = stable_hi
        self.tail_cand = self._candidates(owner, med, m0, self.cand_stable, nf, residuals)
        self._forget_medians()

    def baselines(self, idx: np.ndarray) -> np.ndarray:
        """The baseline of each candidate: the lower of its centred median and the one ``BACK`` before."""
        med, m0 = self.med.view, self.med_start
        base = med[idx - m0]
        back = idx - BACK
        ok = back >= 0
        base[ok] = np.minimum(base[ok], med[back[ok] - m0])
        return base

    def median(self, lo: int, hi: int) -> np.ndarray:
        """The running median of the values ``lo..hi`` (those forgotten are worked out again)."""
        kept = self.med.view[max(lo, self.med_start) - self.med_start : max(hi, self.med_start) - self.med_start]
        if lo >= self.med_start:
            return kept
        return np.concatenate((running_median(self.values, LOCAL_HALF, lo, min(hi, self.med_start)), kept))

    def _forget_medians(self) -> None:
        """Drop the medians no later update reads: those before the first point whose
        residuals may still change, less ``BACK`` (once that is many, so the copy is rare)."""
        keep = max(0, min(self.cand_stable, self.chunk_stable * NOISE_CHUNK) - BACK)
        drop = keep - self.med_start
        if drop < max(_FORGET_AT, len(self.med) - drop):
            return
        tail = GrowableArray(max(len(self.med) - drop, 1) * 2)
        tail.extend(self.med.view[drop:])
        self.med, self.med_start = tail, keep

    def _candidates(self, owner: Scan, med: np.ndarray, m0: int, lo: int, hi: int,
                    residuals: tuple[int, np.ndarray, np.ndarray]) -> np.ndarray:
        """Points well above the centred median, or above the median just before them.

        Each residual is compared with its own noise (the trailing one also carries the
        slow wander of the curve), so neither raises false alarms on correlated noise.
        ``residuals``: ``(first, centred, trailing)``, the residuals from point ``first`` on.
        """
        lo = max(lo, FIRST_CANDIDATE)
        if hi <= lo:
            return np.empty(0, np.int64)
        r0 = residuals[0]
        centred, trailing = residuals[1][lo - r0 : hi - r0], residuals[2][lo - r0 : hi - r0]
        c0, c1 = lo // NOISE_CHUNK, -(-hi // NOISE_CHUNK)
        skip = lo - c0 * NOISE_CHUNK
        found = []
        # A rise must clear both its noise and the floor: the floor is only worked out
        # where the noise is cleared, which leaves a few points of millions.
        for resid, noise, shift in ((centred, self.noise[0].view, 0), (trailing, self.noise[1].view, BACK)):
            near = _above_chunk_limits(resid, LOCAL_SIGMAS * noise[c0:c1], skip)
            if len(near):
                at = lo + near
                found.append(at[resid[near] > owner.floor(med[at - shift - m0])])
        if not found:
            return np.empty(0, np.int64)
        return np.unique(np.concatenate(found)).astype(np.int64)


def _above_chunk_limits(values: np.ndarray, limits: np.ndarray, skip: int) -> np.ndarray:
    """Indices of ``values`` above their chunk's limit: ``values[0]`` is point ``skip`` of the
    chunk of ``limits[0]``, and each chunk is ``NOISE_CHUNK`` points (a NaN is above nothing).

    The whole chunks are compared as rows against their limit, without a copy of each limit
    for each of its points."""
    n = len(values)
    head = min(n, (NOISE_CHUNK - skip) % NOISE_CHUNK)
    rows = (n - head) // NOISE_CHUNK
    found = []
    with np.errstate(invalid="ignore"):
        if head:
            found.append(np.flatnonzero(values[:head] > limits[0]))
        first = 1 if head else 0
        if rows:
            block = values[head : head + rows * NOISE_CHUNK].reshape(rows, NOISE_CHUNK)
            found.append(head + np.flatnonzero(block > limits[first : first + rows, None]))
        tail = head + rows * NOISE_CHUNK
        if tail < n:
            found.append(tail + np.flatnonzero(values[tail:] > limits[first + rows]))
    return np.concatenate(found) if len(found) > 1 else found[0] if found else np.empty(0, np.int64)


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _residuals(y: np.ndarray, med: np.ndarray, m0: int, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """Residuals of ``y[lo:hi]`` from the centred median and from the median ``BACK`` points
    earlier (so a sharp rise is measured against what preceded it even when it lasts longer
    than half the window). NaN where a median came from a shrunken window at the start.
    ``med[k]`` is the median at ``m0 + k``."""
    centred = y[lo:hi] - med[lo - m0 : hi - m0]
    centred[: max(0, LOCAL_HALF - lo)] = np.nan
    trailing = np.empty(hi - lo)
    first = min(max(lo, BACK + LOCAL_HALF), hi)
    trailing[: first - lo] = np.nan
    np.subtract(y[first:hi], med[first - BACK - m0 : hi - BACK - m0], out=trailing[first - lo :])
    return centred, trailing


def _chunk_dips(resid: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """The deepest dip of each ``NOISE_CHUNK`` of residuals (the last may be partial), in the
    chunk's ``noise`` sigmas; 0 where a chunk has no residual below 0 or no noise."""
    n = len(resid)
    full = n // NOISE_CHUNK
    low = np.zeros(full + (1 if n % NOISE_CHUNK else 0))
    with np.errstate(all="ignore"):
        if full:  # fmin passes NaN over, without a copy of the rows
            np.fmin.reduce(resid[: full * NOISE_CHUNK].reshape(full, NOISE_CHUNK), axis=1, out=low[:full])
        if len(low) > full:
            low[full] = np.fmin.reduce(resid[full * NOISE_CHUNK :])
        scale = noise[: len(low)]
        dips = np.fmax(-low, 0.0) / np.where(scale > 0, scale, np.inf)
    return np.nan_to_num(dips)


def _chunk_mad(resid: np.ndarray, centre: bool = True) -> np.ndarray:
    """Robust sigma of each ``NOISE_CHUNK`` of residuals (last chunk may be partial; NaN ignored).

    The spread is taken about the chunk's median (``centre``), so a residual that is
    biased (a median lagging behind a falling curve) still measures only the noise.
    """
    n = len(resid)
    if not n:
        return np.empty(0)
    full = n // NOISE_CHUNK
    out = np.empty(full + (1 if n % NOISE_CHUNK else 0))
    if full:
        block = resid[: full * NOISE_CHUNK].reshape(full, NOISE_CHUNK)
        out[:full] = MAD_SCALE * _mad_rows(block, centre)
    if n % NOISE_CHUNK:
        out[full] = MAD_SCALE * _mad_rows(resid[full * NOISE_CHUNK :][None, :], centre)[0]
    return out


def _mad_rows(block: np.ndarray, centre: bool) -> np.ndarray:
    """Median absolute deviation of each row (about its median if ``centre``), NaN ignored.

    Worked out a few rows at a time in one small buffer, so no temporary grows with the series.
    """
    out = np.empty(len(block))
    _mad_rows_of(block, centre, out)
    return out


def _mad_rows_of(block: np.ndarray, centre: bool, out: np.ndarray) -> None:
    """:func:`_mad_rows` on one thread, into ``out``."""
    rows, width = block.shape
    if not rows:
        return
    step = max(1, min(rows, _BUFFER_ELEMENTS // width))
    buffer = np.empty((step, width))
    for a in range(0, rows, step):
        part = buffer[: min(step, rows - a)]
        np.copyto(part, block[a : a + len(part)])
        holes = np.flatnonzero(np.isnan(np.add.reduce(part, axis=1)))  # residuals are finite or NaN
        if centre:
            part -= medians_in_place(part)[:, None]
        np.abs(part, out=part)
        out[a : a + len(part)] = medians_in_place(part)
        for k in holes + a:  # rows with gaps (where medians came from a shrunken window)
            row = block[k][~np.isnan(block[k])]
            if not len(row):
                out[k] = np.nan
                continue
            if centre:
                row = row - median(row)
            out[k] = median(np.abs(row))


def _smooth(raw: np.ndarray, start: int) -> np.ndarray:
    """Median of chunk noises ``c - NOISE_SPREAD .. c + NOISE_SPREAD`` for ``c >= start`` (NaN ignored, 0 if none)."""
    total = len(raw)
    if total <= start:
        return np.empty(0)
    spread = NOISE_SPREAD
    lo = max(0, start - spread)
    padded = np.concatenate((np.full(spread - (start - lo), np.nan), raw[lo:total], np.full(spread, np.nan)))
    width = 2 * spread + 1
    ordered = np.sort(np.lib.stride_tricks.sliding_window_view(padded, width), axis=1)  # NaN sorts last
    known = np.concatenate(([0], np.cumsum(np.isfinite(padded))))
    count = known[width:] - known[:-width]  # finite values in each window
    rows = np.arange(len(ordered))
    low = np.maximum((count - 1) // 2, 0)
    high = np.maximum(count // 2, 0)
    out = 0.5 * (ordered[rows, low] + ordered[rows, high])
    out[count == 0] = 0.0
    return out


def _second_differences(y: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """``y[i-1] - 2 y[i] + y[i+1]`` for ``i`` in ``lo..hi`` (NaN where a neighbour is missing)."""
    out = np.empty(hi - lo)
    a, b = max(lo, 1), min(hi, len(y) - 1)
    a, b = min(a, hi), max(b, a)
    out[: a - lo] = np.nan
    out[b - lo :] = np.nan
    inner = out[a - lo : b - lo]
    np.multiply(y[a:b], -2.0, out=inner)  # in the order of y[i-1] - 2 y[i] + y[i+1], to the bit
    inner += y[a - 1 : b - 1]
    inner += y[a + 1 : b + 1]
    return out
