"""The streaming summaries of docs/interface.md.

Every distribution is summarised as ``{"mean", "std", "sem", "p01", "p05", "p50",
"p95", "p99", "min", "max"}``.

* :func:`summarize` summarises a sample held in memory (the stage commands): exact
  moments and exact order statistics (``numpy.quantile``, linear interpolation).
* :class:`Summary` streams a sample of any size through bounded memory (the run chain).
  Moments merge with Chan et al.'s parallel update over fixed blocks of
  :data:`BLOCK_TRIALS` consecutive trials, merged in trial order, so the float addition
  order (and so every bit of the result) does not depend on the chunk size, the thread
  count, the Dask workers or a resume point. Quantiles come from a
  :class:`QuantileSketch` of integer bucket counts: order-free, and within
  :data:`SKETCH_RELATIVE_ACCURACY` relative error of the exact order statistic
  (the DDSketch log-bucket mapping, Masson, Rim & Lee, VLDB 2019).

Moments are computed on the values divided by a power of two at least as large as the
largest magnitude seen (:func:`power_of_two_above`), and scaled back: dividing by a
power of two is exact, so the figures are bit for bit those of the plain formulas
wherever those are finite, and stay finite (no overflow of squares above ~1e154, no
underflow to a zero spread below ~1e-154) for any finite input.

With randomised quasi-Monte Carlo inputs (``run.sampler = "sobol"``,
:mod:`mcengine.scenario.sampling`) trials are not independent, so ``std / sqrt(n)`` is no
standard error. A :class:`Summary` made with ``replicates = R`` also keeps the mean of
each scrambling ``r`` (the trials ``i`` with ``i % R == r``, updated block by block in
trial order, so again independent of the chunking), and its ``sem`` is the spread of
those R independent means: ``sqrt(R / (R - 1) * sum_r w_r**2 (m_r - m)**2)`` with ``w_r``
the scrambling's share of the trials and ``m`` the pooled mean (the plain standard error
of the mean of R estimates when they are equally sized). ``std`` stays the spread of the
trials.

A :class:`Summary` also takes ``+inf`` (the cost per token of a trial that delivers no
tokens because it misses its SLOs, docs/model.md#roofline): the infinite values are
counted apart and rank above every finite one, so the quantiles stay exact order
statistics of the whole sample, while the mean, std and sem are ``inf`` as soon as one
value is.
"""

from __future__ import annotations

import itertools
import math
import operator
from dataclasses import dataclass, field

import numpy as np

from .errors import NumericalError

QUANTILES = (("p01", 0.01), ("p05", 0.05), ("p50", 0.50), ("p95", 0.95), ("p99", 0.99))
SUMMARY_KEYS = ("mean", "std", "sem", *(k for k, _ in QUANTILES), "min", "max")

#: Moments are accumulated per block of this many consecutive trials; runner chunks are
#: whole multiples of it, which makes the result independent of the chunking.
BLOCK_TRIALS = 1024

#: Relative accuracy of streamed quantiles (0.1%).
SKETCH_RELATIVE_ACCURACY = 1e-3
#: Buckets spanned by one batch of values up to which they are counted with
#: ``numpy.bincount`` (an array of this many counts) rather than sorted by ``numpy.unique``.
_BINCOUNT_SPAN = 1 << 20


def _check_finite(values: np.ndarray, name: str) -> None:
    bad = ~np.isfinite(values)
    if bad.any():
        first = int(np.argmax(bad))
        raise NumericalError(f"{name}: {int(bad.sum())} non-finite values (first at index {first}: {values[first]})")


def power_of_two_above(magnitude: float) -> float:
    """The smallest power of two >= ``magnitude`` (1 for 0), at most 2**1023."""
    if magnitude == 0.0:
        return 1.0
    mantissa, exponent = math.frexp(magnitude)
    return math.ldexp(1.0, min(exponent - (mantissa == 0.5), 1023))


def summarize(values: np.ndarray, name: str = "metric") -> dict:
    """The docs/interface.md summary of a sample held in memory (exact order statistics)."""
    values = np.asarray(values, dtype=float).ravel()
    if values.size == 0:
        raise NumericalError(f"{name}: summary of an empty sample")
    _check_finite(values, name)
    n = values.size
    scale = power_of_two_above(float(np.abs(values).max()))
    scaled = values / scale
    std = float(scaled.std(ddof=1)) * scale if n > 1 else 0.0
    out = {"mean": float(scaled.mean()) * scale, "std": std, "sem": std / math.sqrt(n)}
    qs = np.quantile(values, [q for _, q in QUANTILES])
    out.update({k: float(v) for (k, _), v in zip(QUANTILES, qs)})
    out["min"] = float(values.min())
    out["max"] = float(values.max())
    return out


def add_counts(into: dict, keys: list, counts: list) -> None:
    """``into[k] += c`` for each bucket key and count, in order (the loop in C)."""
    into.update(zip(keys, map(operator.add, map(into.get, keys, itertools.repeat(0)), counts)))


def _finite_blocks(values: np.ndarray, finite: np.ndarray | None = None):
    """The finite kept values (``finite``; None: all of them) of each block of
    :data:`BLOCK_TRIALS` trials, as 2-D arrays of blocks of equal length in trial order: all full blocks at once when
    every value is finite and kept, else one block at a time (empty ones left out)."""
    if finite is None or finite.all():
        full = values.size - values.size % BLOCK_TRIALS
        yield values[:full].reshape(-1, BLOCK_TRIALS)
        if full < values.size:
            yield values[full:][None]
        return
    for start in range(0, values.size, BLOCK_TRIALS):
        block = values[start : start + BLOCK_TRIALS][finite[start : start + BLOCK_TRIALS]]
        if block.size:
            yield block[None]


@dataclass
class QuantileSketch:
    """Log-bucket quantile sketch: value x > 0 goes to bucket ceil(log_gamma(x)).

    Counts are integers, so merging is exact and order-free. A bucket's representative
    value 2·gamma^i/(gamma + 1) is within ``alpha`` relative error of every value in it.
    """

    alpha: float = SKETCH_RELATIVE_ACCURACY
    positive: dict = field(default_factory=dict)
    negative: dict = field(default_factory=dict)
    zeros: int = 0
    #: When a list: the (negative?, bucket keys, counts) each add folded in, in order, for
    #: a checkpoint log to take (:meth:`take_journal`); None: nothing kept.
    journal: list | None = field(default=None, repr=False, compare=False)

    @property
    def _log_gamma(self) -> float:
        return math.log((1 + self.alpha) / (1 - self.alpha))

    def _bucket(self, into: dict, magnitudes: np.ndarray) -> None:
        idx = np.ceil(np.log(magnitudes) / self._log_gamma).astype(np.int64)
        lo = int(idx.min())
        if int(idx.max()) - lo < _BINCOUNT_SPAN:  # counting without a sort (the usual case)
            counts = np.bincount(idx - lo)
            keys = np.flatnonzero(counts)
            counts, keys = counts[keys], keys + lo
        else:  # values over hundreds of orders of magnitude
            keys, counts = np.unique(idx, return_counts=True)
        if self.journal is not None:
            self.journal.append((into is self.negative, keys, counts))
        add_counts(into, keys.tolist(), counts.tolist())

    def add(self, values: np.ndarray) -> None:
        if values.size and values.min() > 0:  # (the usual case: no masks, no copies)
            self._bucket(self.positive, values)
            return
        pos = values[values > 0]
        neg = values[values < 0]
        self.zeros += int(values.size - pos.size - neg.size)
        if pos.size:
            self._bucket(self.positive, pos)
        if neg.size:
            self._bucket(self.negative, -neg)

    def take_journal(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(positive keys, their counts, negative keys, their counts) added since the last
        take (int64; keys may repeat), the journal emptied."""
        taken = [[np.concatenate([part[i] for part in self.journal if part[0] == neg] or [np.zeros(0, np.int64)]).astype(np.int64)
                  for i in (1, 2)] for neg in (False, True)]
        self.journal = []
        return (*taken[0], *taken[1])

    @property
    def count(self) -> int:
        return self.zeros + sum(self.positive.values()) + sum(self.negative.values())

    def _value(self, sign: int, key: int) -> float:
        gamma = math.exp(self._log_gamma)
        return sign * 2.0 * gamma**key / (gamma + 1.0)

    def quantile(self, q: float) -> float:
        """Value at rank q·(n − 1) (rounded to the nearest rank)."""
        return self.at_rank(int(round(q * (self.count - 1))))

    def at_rank(self, rank: int) -> float:
        """Value of the ``rank``-th smallest element (0-based), to the sketch's accuracy."""
        seen = 0
        for key in sorted(self.negative, reverse=True):  # most negative first
            seen += self.negative[key]
            if seen > rank:
                return self._value(-1, key)
        seen += self.zeros
        if seen > rank:
            return 0.0
        for key in sorted(self.positive):
            seen += self.positive[key]
            if seen > rank:
                return self._value(1, key)
        raise NumericalError("quantile sketch is empty")

    def points(self) -> tuple[np.ndarray, np.ndarray]:
        """(bucket values ascending, their counts): the sketched distribution."""
        keys = [(-1, k, self.negative[k]) for k in sorted(self.negative, reverse=True)]
        keys += [(0, 0, self.zeros)] if self.zeros else []
        keys += [(1, k, self.positive[k]) for k in sorted(self.positive)]
        values = np.array([0.0 if sign == 0 else self._value(sign, k) for sign, k, _ in keys])
        return values, np.array([c for _, _, c in keys], dtype=float)

    def state(self, buckets: bool = True) -> dict:
        """The counts as JSON holds them (bucket keys as strings; :meth:`from_state` reads
        both; ``buckets=False``: without the buckets' counts)."""
        return {"alpha": self.alpha, "positive": dict(zip(map(str, self.positive), self.positive.values())) if buckets else {},
                "negative": dict(zip(map(str, self.negative), self.negative.values())) if buckets else {}, "zeros": self.zeros}

    @classmethod
    def from_state(cls, state: dict) -> "QuantileSketch":
        return cls(
            state["alpha"],
            {int(k): int(v) for k, v in state["positive"].items()},
            {int(k): int(v) for k, v in state["negative"].items()},
            int(state["zeros"]),
        )


@dataclass
class Summary:
    """Streaming summary of one metric in bounded memory (see the module docstring)."""

    count: int = 0
    mean: float = 0.0
    m2: float = 0.0
    min: float = math.inf
    max: float = -math.inf
    sketch: QuantileSketch = field(default_factory=QuantileSketch)
    #: The sketch holds ``value - offset``: an offset of 1 gives availabilities and paired
    #: ratios (which crowd near 1) their 0.1% relative accuracy on the distance from 1.
    offset: float = 0.0
    #: Moments are kept in units of this power of two (module text): ``m2`` is the sum of
    #: squared deviations divided by ``scale**2``. 0 until the first non-zero value.
    scale: float = 0.0
    #: With an offset, values below half of it are sketched as they are (relative accuracy
    #: on the value itself: an availability of 0.012 is not read on its distance from 1).
    low: QuantileSketch = field(default_factory=QuantileSketch)
    #: ``+inf`` values seen (counted apart from ``count``, the finite ones; module text).
    infinite: int = 0
    #: Independent scramblings the standard error comes from (0: independent trials;
    #: module text), and the finite values and mean of each.
    replicates: int = 0
    rep_count: list = field(default_factory=list)
    rep_mean: list = field(default_factory=list)
    #: Trials an ``add`` left out (``keep`` false): every trial added is counted once in
    #: ``count``, ``infinite`` or here, so a summary's trials can be checked on resume.
    skipped: int = 0

    def add(self, values: np.ndarray, name: str = "metric", keep: np.ndarray | None = None) -> "Summary":
        """Add the next trials (in trial order; every call but the last a whole number of
        blocks). ``+inf`` is counted apart; NaN and ``-inf`` are errors. ``keep`` (bool, one
        per trial): only those trials enter the summary (the blocks stay those of all
        trials, so the moments do not depend on the chunking)."""
        values = np.asarray(values, dtype=float).ravel()
        keep = None if keep is None else np.asarray(keep, bool).ravel()
        if (keep is None or keep.all()) and not self.replicates and np.isfinite(values).all():  # the usual case: no masks, no copies
            for blocks in _finite_blocks(values):
                self._merge_blocks(blocks)
        else:
            values = self._add_masked(values, name, keep)
        if values.size:
            self.min = min(self.min, float(values.min()))
            self.max = max(self.max, float(values.max()))
            if self.offset:
                near = values >= 0.5 * self.offset
                self.sketch.add(values[near] - self.offset)
                if not near.all():
                    self.low.add(values[~near])
            else:
                self.sketch.add(values)
        return self

    def _add_masked(self, values: np.ndarray, name: str, keep: np.ndarray | None) -> np.ndarray:
        """:meth:`add`'s moments and counters where a trial is left out (``keep``), a value is
        ``+inf`` or the scramblings' means are kept: the finite kept values returned, for the
        sketches and the extremes."""
        first_trial = self.count + self.infinite + self.skipped
        if keep is not None:
            values = np.where(keep, values, 0.0)  # left out below; 0 keeps the checks quiet
        kept = np.ones(values.size, bool) if keep is None else keep
        self.skipped += int(values.size - np.count_nonzero(kept))
        infinite = np.isposinf(values) & kept
        self.infinite += int(infinite.sum())
        _check_finite(values[~infinite], name)
        if self.replicates:
            for start in range(0, values.size, BLOCK_TRIALS):  # blocks of trials, whatever their values
                self._add_replicates(values[start : start + BLOCK_TRIALS], first_trial + start, kept[start : start + BLOCK_TRIALS])
        for blocks in _finite_blocks(values, kept & ~infinite):
            self._merge_blocks(blocks)
        if infinite.any():
            self.max = math.inf
        return values[kept & ~infinite]

    def _merge_blocks(self, blocks: np.ndarray) -> None:
        """Fold blocks of equally many values (rows, in trial order) into the moments, one
        after the other: each block's mean and squared deviations in units of the scale
        that covers it and every block before (:meth:`_rescale`), merged by Chan et al.'s
        update. The blocks' sums are made row by row in one NumPy call (the same pairwise
        sums, so the same bits, as one block at a time)."""
        magnitudes = np.abs(blocks).max(axis=1).tolist()
        scales, scale = [], self.scale
        for magnitude in magnitudes:  # the scale each block is read in, as _rescale raises it
            scale = power_of_two_above(magnitude) if magnitude > scale else scale
            scales.append(scale or 1.0)
        scaled = blocks / np.array(scales)[:, None]
        means = scaled.mean(axis=1)
        m2s = ((scaled - means[:, None]) ** 2).sum(axis=1)
        n_b = blocks.shape[1]
        for magnitude, s, mean_b, m2_b in zip(magnitudes, scales, means.tolist(), m2s.tolist()):
            self._rescale(magnitude)
            n = self.count + n_b
            delta = mean_b - self.mean / s
            self.mean += delta * n_b / n * s
            self.m2 += m2_b + delta * delta * self.count * n_b / n
            self.count = n

    def _add_replicates(self, block: np.ndarray, first_trial: int, kept: np.ndarray) -> None:
        """Fold one block's finite kept values into the means of their scramblings."""
        if not self.rep_count:
            self.rep_count, self.rep_mean = [0] * self.replicates, [0.0] * self.replicates
        finite = np.isfinite(block) & kept
        reps = (first_trial + np.flatnonzero(finite)) % self.replicates
        counts = np.bincount(reps, minlength=self.replicates)
        sums = np.bincount(reps, weights=block[finite], minlength=self.replicates)
        for r in np.flatnonzero(counts).tolist():
            n_b = int(counts[r])
            self.rep_count[r] += n_b
            self.rep_mean[r] += (float(sums[r]) / n_b - self.rep_mean[r]) * n_b / self.rep_count[r]

    def _replicate_sem(self) -> float:
        """The standard error of the mean from the scramblings' means (module text)."""
        counts = np.array(self.rep_count, dtype=float)
        means = np.array(self.rep_mean)[counts > 0]
        weights = counts[counts > 0] / counts.sum()
        k = means.size
        if k < 2:
            return math.inf
        pooled = float((weights * means).sum())
        return math.sqrt(k / (k - 1) * float((weights**2 * (means - pooled) ** 2).sum()))

    def _rescale(self, magnitude: float) -> None:
        """Raise ``scale`` to cover ``magnitude`` (the m2 held so far shrinks by an exact
        power of four; a part of it below the smallest float is negligible beside the new
        values' spread)."""
        if magnitude > self.scale:
            new = power_of_two_above(magnitude)
            if self.scale:
                self.m2 *= (self.scale / new) ** 2
            self.scale = new

    def to_dict(self) -> dict:
        """Moments, quantiles, min and max of the finite values. With ``+inf`` values (a
        cost per token in trials that serve no tokens) they describe the others and
        ``"infinite_share"`` gives the share of ``+inf`` (``max`` is then ``inf``); when
        every value is ``+inf`` every entry is."""
        if self.count + self.infinite == 0:
            raise NumericalError("summary of an empty sample")
        if not self.count:
            out = {"mean": math.inf, "std": math.inf, "sem": math.inf}
        else:
            std = math.sqrt(self.m2 / (self.count - 1)) * (self.scale or 1.0) if self.count > 1 else 0.0
            sem = self._replicate_sem() if self.replicates else std / math.sqrt(self.count)
            out = {"mean": self.mean, "std": std, "sem": sem}
        for key, q in QUANTILES:
            out[key] = min(max(self.quantile(q), self.min), self.max)
        out["min"] = self.min
        out["max"] = self.max
        if self.infinite:
            out["infinite_share"] = self.infinite / (self.count + self.infinite)
        return out

    def quantile(self, q: float) -> float:
        """The sketched value at rank q·(n − 1) of the finite values: from the low sketch,
        then the offset one (``inf`` when there are none)."""
        if not self.count:
            return math.inf
        rank = int(round(q * (self.count - 1)))
        if rank >= self.count:
            return math.inf
        below = self.low.count
        return self.low.at_rank(rank) if rank < below else self.sketch.at_rank(rank - below) + self.offset

    def cdf_points(self) -> tuple[np.ndarray, np.ndarray]:
        """(values ascending, cumulative share of the sample) from the sketches, clipped to
        the exact min and max: the step CDF a figure draws (it ends below 1 by the share
        of ``+inf`` values)."""
        low_v, low_c = self.low.points()
        high_v, high_c = self.sketch.points()
        values = np.concatenate([low_v, high_v + self.offset])
        counts = np.concatenate([low_c, high_c])
        return np.clip(values, self.min, self.max), np.cumsum(counts) / (counts.sum() + self.infinite)

    def state(self, buckets: bool = True) -> dict:
        """The summary as JSON holds it (``buckets=False``: its sketches without their bucket counts)."""
        return {"count": self.count, "mean": self.mean, "m2": self.m2, "min": self.min, "max": self.max,
                "sketch": self.sketch.state(buckets), "offset": self.offset, "scale": self.scale, "low": self.low.state(buckets),
                "infinite": self.infinite,
                **({"replicates": self.replicates, "rep_count": self.rep_count, "rep_mean": self.rep_mean} if self.replicates else {}),
                **({"skipped": self.skipped} if self.skipped else {})}

    @classmethod
    def from_state(cls, state: dict) -> "Summary":
        return cls(state["count"], state["mean"], state["m2"], state["min"], state["max"], QuantileSketch.from_state(state["sketch"]),
                   state["offset"], state.get("scale", 1.0),
                   QuantileSketch.from_state(state["low"]) if "low" in state else QuantileSketch(), int(state.get("infinite", 0)),
                   int(state.get("replicates", 0)), [int(c) for c in state.get("rep_count", [])],
                   [float(m) for m in state.get("rep_mean", [])], int(state.get("skipped", 0)))
