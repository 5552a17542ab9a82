"""Field-by-field checks of a saved summary state (a run's ``checkpoint.json``).

A checkpoint carries the sha256 of its own state, which catches an edit but not a forgery
that recomputes it. Whatever a resume reads is therefore also checked for what every
state mcengine writes satisfies (docs/interface.md, the resume contract), before any of it is used:
counts are non-negative integers; moments, extremes and means are finite numbers (``max``
is ``+inf`` only beside ``+inf`` values, ``min``/``max`` are ``+inf``/``-inf`` only
before the first finite value); ``min <= mean <= max``; the sum of squared deviations is
neither negative nor larger than the range allows; the moments' scale is 0 (no non-zero
value yet) or a power of two covering every value; the sketch offset is 0 or 1; each
quantile sketch has mcengine's accuracy, integer bucket indices a double can reach and
positive counts; the scramblings' counts add up to the finite values. A state that fails
one of them is refused with the field named (:func:`summary_problem`).
"""

from __future__ import annotations

import math

from .summaries import SKETCH_RELATIVE_ACCURACY, QuantileSketch, Summary

#: Slack of ``min <= mean <= max`` (relative) and of the squared deviations' bound (per
#: value, in units of the scale): the moments are merged in floating point (equal values
#: may leave a mean an ulp away and squared deviations of an ulp's square).
ROUNDING = 1e-9
#: Largest ``|log x|`` of a positive double (the smallest subnormal is about e**-744.4).
_LOG_RANGE = 745.2


def _count(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def sketch_problem(sketch: QuantileSketch, field: str) -> str:
    """What is wrong with a saved quantile sketch ('' if nothing)."""
    if not _number(sketch.alpha) or sketch.alpha != SKETCH_RELATIVE_ACCURACY:
        return f"{field}.alpha is {sketch.alpha!r}, not mcengine's sketch accuracy {SKETCH_RELATIVE_ACCURACY}"
    if not _count(sketch.zeros):
        return f"{field}.zeros is {sketch.zeros!r}, not a count"
    reach = math.ceil(_LOG_RANGE / math.log((1 + sketch.alpha) / (1 - sketch.alpha))) + 1
    for side in ("positive", "negative"):
        buckets = getattr(sketch, side)
        for key, count in buckets.items():
            if not isinstance(key, int) or abs(key) > reach:
                return f"{field}.{side} has bucket {key!r}, beyond the {reach:,} a double can reach"
            if not _count(count) or count == 0:
                return f"{field}.{side}[{key}] holds {count!r}, not a positive count"
    return ""


def summary_problem(summary: Summary, field: str, replicates: int) -> str:
    """What is wrong with a saved :class:`~mcengine.results.Summary` ('' if nothing);
    ``replicates`` the run's scramblings (0: independent trials)."""
    s = summary
    for name in ("count", "infinite", "skipped", "replicates"):
        if not _count(getattr(s, name)):
            return f"{field}.{name} is {getattr(s, name)!r}, not a count"
    for name in ("mean", "m2", "min", "max", "offset", "scale"):
        if not _number(getattr(s, name)) or math.isnan(getattr(s, name)):
            return f"{field}.{name} is {getattr(s, name)!r}, not a number"
    if s.replicates != replicates:
        return f"{field}.replicates is {s.replicates}, not the run's {replicates}"
    if s.offset not in (0.0, 1.0):
        return f"{field}.offset is {s.offset!r}; mcengine sketches with an offset of 0 or 1"
    top = math.inf if s.infinite else -math.inf  # max is +inf once a +inf value was seen
    if not s.count:
        if s.min != math.inf or s.max != top or s.mean or s.m2 or s.scale:
            return f"{field} has no finite value but min {s.min!r}, max {s.max!r}, mean {s.mean!r}, m2 {s.m2!r}, scale {s.scale!r}"
    else:
        if not (math.isfinite(s.min) and (math.isfinite(s.max) or s.max == top) and math.isfinite(s.mean) and math.isfinite(s.m2)):
            return f"{field} has min {s.min!r}, max {s.max!r}, mean {s.mean!r}, m2 {s.m2!r}: not finite numbers"
        if s.min > s.max:
            return f"{field}.min {s.min!r} is above its max {s.max!r}"
        hi = s.max if math.isfinite(s.max) else math.inf
        slack = ROUNDING * max(abs(s.min), abs(s.mean), abs(hi) if math.isfinite(hi) else 0.0)
        if not s.min - slack <= s.mean <= hi + slack:
            return f"{field}.mean {s.mean!r} is outside its min {s.min!r} and max {s.max!r}"
        if s.m2 < 0:
            return f"{field}.m2 is {s.m2!r}, a negative sum of squares"
        if math.isfinite(hi) and s.scale and s.m2 > s.count * (((hi - s.min) / s.scale) ** 2 * (1 + ROUNDING) + ROUNDING):
            return f"{field}.m2 {s.m2!r} is more than {s.count} values between its min and max can spread"
        magnitude = max(abs(s.min), abs(hi) if math.isfinite(hi) else 0.0)
        if s.scale == 0:
            if magnitude:
                return f"{field}.scale is 0, but its values reach {magnitude!r}"
        elif not (math.isfinite(s.scale) and math.frexp(s.scale)[0] == 0.5 and s.scale >= magnitude):
            return f"{field}.scale is {s.scale!r}, not a power of two covering its values (up to {magnitude!r})"
    for name in ("sketch", "low"):
        problem = sketch_problem(getattr(s, name), f"{field}.{name}")
        if problem:
            return problem
    if s.replicates:
        if s.rep_count and (len(s.rep_count) != s.replicates or len(s.rep_mean) != s.replicates):
            return f"{field} has {len(s.rep_count)} scramblings' counts and {len(s.rep_mean)} means, not {s.replicates}"
        if not all(_count(c) for c in s.rep_count) or sum(s.rep_count) != s.count:
            return f"{field}.rep_count {s.rep_count!r} does not count its {s.count} finite values"
        if not all(_number(m) and math.isfinite(m) for m in s.rep_mean):
            return f"{field}.rep_mean holds a value that is not a finite number"
    return ""
