"""What each output metric is called, its unit, and which direction is better.

Tables and figures read this one table (made from :mod:`mcengine.columns`) so that every label, axis unit and
"P(B better)" agrees: a paired document stores P(B < A) only, which means "B better"
for a cost and "B worse" for availability or tokens/s.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType

from ..columns import COLUMNS

from ..units import HOURS_PER_YEAR


@dataclass(frozen=True)
class Metric:
    label: str  #: words for a table row or an axis
    unit: str  #: unit for an axis label ("" for a share)
    better: str | None  #: "lower", "higher" or None (no direction)
    short: str  #: a few words for titles ("cheaper per token")

    def axis(self) -> str:
        """Axis label with its unit in parentheses."""
        return f"{self.label} ({self.unit})" if self.unit else self.label


#: The metrics the reports describe (:mod:`mcengine.columns`: those with a ``short`` name).
METRICS: dict[str, Metric] = {c.name: Metric(c.label, c.unit, c.better, c.short) for c in COLUMNS if c.short}

#: Words for "better" per direction, used in "P(B better: cheaper)".
BETTER_WORDS = {c.name: c.better_words for c in COLUMNS if c.better_words}


def metric(key: str) -> Metric:
    """The :class:`Metric` of ``key`` (an unknown key gets its own name and no direction)."""
    return METRICS.get(key, Metric(key.replace("_", " "), "", None, key.replace("_", " ")))


def p_better(key: str, p_b_below_a: float, p_tie: float | None = None) -> tuple[float, str]:
    """(value, words) of "B better than A" from a document's P(B < A) and P(B = A).

    Lower is better: P(B < A) itself. Higher is better: 1 − P(B < A) − P(B = A) =
    P(B > A); a tie is never "better" (two designs with the same value in every trial,
    such as the availability of two scenarios that differ only in links, have
    P(B better) 0 and P(tie) 1). A document written before ties were counted (no
    ``p_tie``) gives 1 − P(B < A) = P(B ≥ A), "B not worse". No direction: P(B < A).
    """
    m = metric(key)
    words = BETTER_WORDS.get(key, m.short)
    if m.better == "higher":
        if p_tie is None:
            return 1.0 - p_b_below_a, f"P(B not worse: {m.short} B ≥ A)"
        return max(0.0, 1.0 - p_b_below_a - p_tie), f"P(B better: {words})"
    if m.better == "lower":
        return p_b_below_a, f"P(B better: {words})"
    return p_b_below_a, "P(B < A)"


def paired_p_better(key: str, paired: dict) -> tuple[float, str]:
    """:func:`p_better` of one metric's entry of a document's ``"paired"`` (its
    ``p_b_below_a`` and, where counted, ``p_tie``)."""
    return p_better(key, paired["p_b_below_a"], paired.get("p_tie"))


#: Minutes in a year of :data:`~mcengine.units.HOURS_PER_YEAR` hours.
MINUTES_PER_YEAR = HOURS_PER_YEAR * 60.0


def downtime_minutes(availability: float) -> float:
    """Minutes a year down at an availability (a time-averaged share up): (1 − a) × 525,960."""
    return (1.0 - availability) * MINUTES_PER_YEAR


#: How each metric's value reads in every table (`run`, `compare`, `sweep`): one rounding
#: per metric; a metric not listed gets four significant digits.
METRIC_FORMATS = {
    "cost_per_mtok_usd": "{:.3f}",
    "cost_per_mtok_at_cost_usd": "{:.3f}",
    "cost_per_request_usd": "{:.3g}",
    "availability": "{:.5f}",
    "tokens_per_s": "{:,.0f}",
    "gpu_cost_usd": "{:,.0f}",
    "gpu_price_per_h100_equivalent_usd": "{:,.0f}",
    "energy_j_per_token": "{:.2f}",
    "power_w_per_h100_equivalent": "{:.0f}",
    "interruptions_per_year": "{:,.0f}",
}
#: How a paired ratio B/A reads: availabilities (near 1) with five decimals, others three.
RATIO_FORMATS = {"availability": "{:.5f}"}
RATIO_FORMAT = "{:.3f}"


def metric_format(key: str, ratio: bool = False) -> str | None:
    """The format string of ``key``'s values (``ratio``: of its paired ratios B/A), None
    for a metric without one (:func:`fmt_metric` then gives four significant digits)."""
    return RATIO_FORMATS.get(key, RATIO_FORMAT) if ratio else METRIC_FORMATS.get(key)


def fmt_metric(key: str, value: float, ratio: bool = False) -> str:
    """A value of ``key`` (``ratio``: a paired ratio B/A of it) for a table, in the one
    rounding every table uses (:data:`METRIC_FORMATS`, :data:`RATIO_FORMATS`)."""
    fmt = metric_format(key, ratio)
    return fmt.format(float(value)) if fmt else fmt_value(float(value), 4)


#: How a unit of the key metadata reads on an axis (``defects/cm^2`` → ``defects/cm²``).
_UNIT_GLYPHS = (("^2", "²"), ("^3", "³"))
#: Unit words that are spelled out on an axis.
_UNIT_WORDS = {"us": "µs"}
#: Where a key names a table of the user's (``reliability.components.die.afr``), the
#: metadata lists it under a placeholder (``reliability.components.NAME.afr``).
_NAMED_TABLES = ("reliability.components.",)
#: Longest description taken from a key's help for an axis (its first clause).
AXIS_HELP_CHARS = 60


@lru_cache(maxsize=1)
def _key_rows() -> MappingProxyType:
    """Every scenario key's metadata row by key, read once (read only, rows included)."""
    from ..scenario.keys import key_rows

    return MappingProxyType({r["key"]: MappingProxyType(r) for r in key_rows()})


def _key_row(key: str) -> MappingProxyType | None:
    """The metadata row of scenario key ``key`` (``mcengine keys``), or None."""
    rows = _key_rows()
    if key in rows:
        return rows[key]
    for table in _NAMED_TABLES:
        if key.startswith(table):
            leaf = key[len(table):].split(".", 1)[-1]
            return rows.get(f"{table}NAME.{leaf}")
    return None


def unit_text(unit: str) -> str:
    """A unit of the key metadata as it reads on an axis: ``defects/cm^2`` → ``defects/cm²``, ``us`` → ``µs``."""
    unit = _UNIT_WORDS.get(unit, unit)
    for plain, glyph in _UNIT_GLYPHS:
        unit = unit.replace(plain, glyph)
    return unit


def _help_clause(help_text: str) -> str:
    """The first clause of a key's help (up to ". ", " (", ":" or ";"), shortened for an axis."""
    import re
    import textwrap

    clause = re.split(r"\. | \(|: |; ", help_text.strip(), maxsplit=1)[0].rstrip(".")
    return textwrap.shorten(clause, AXIS_HELP_CHARS, placeholder=" …")


def key_axis(key: str) -> str:
    """Axis label of a scenario key from its metadata (``mcengine keys``): the first clause
    of its help, then the key (with any ``B:`` / ``NAME:`` target) and its unit in
    parentheses, ``dimensionless`` for a number without one. ``B:fab.optics_cost_per_gbps_usd``
    → ``Co-packaged optics per GB/s of gpu.link_gbps`` / ``B:fab.optics_cost_per_gbps_usd (USD per GB/s)``.
    A name that is no scenario key is shown as given, ``(as set in the scenario)``."""
    from ..scenario.load import split_target

    row = _key_row(split_target(key)[1])
    if row is None:
        return f"{key} (as set in the scenario)"
    unit = unit_text(row["unit"]) if row["unit"] else "dimensionless" if row["kind"] in ("number", "integer") else "choice"
    return f"{_help_clause(row['help'])}\n{key} ({unit})"


def fmt_value(value, sig: int = 4) -> str:
    """A number as a reader wants it in a table: ``sig`` significant digits, thousands
    separators from 10**(sig-1) up (``194,300``, not ``1.943e+05``), an exponent only
    below 0.001."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    a = abs(value)
    if a == 0.0:
        return "0"
    if a >= 10 ** (sig - 1):
        return f"{value:,.0f}"
    if a >= 1e-3:
        return f"{value:.{sig}g}"
    return f"{value:.{sig - 1}e}"


def reliability_references(an: dict) -> dict[str, tuple[float | None, float | None]]:
    """``{metric: (over the horizon, long-run)}``: the reliability stage's renewal
    references (its document's ``"analytic"``), the one that matches the run's horizon
    first. With a Weibull class the long-run rates (1/MTTF) differ from what a cluster
    started new sees over ``run.horizon_years``; the ``..._over_horizon`` values are the
    matching references, the long-run ones are kept for comparison (``None`` where the two
    coincide: every law exponential, or no horizon reference exists)."""
    avail = an.get("instance_availability", an.get("availability_no_stockout"))
    ample = avail is not None and avail == an.get("availability_no_stockout")  # (not the no-spares time average)
    pairs = {
        "instance_availability": (avail, an.get("availability_no_stockout_over_horizon") if ample else None),
        "capacity_availability": (an.get("capacity_availability"),
                                  an.get("availability_no_stockout_over_horizon") if ample and an.get("capacity_availability") == avail else None),
        "failures_per_year": (an.get("failures_per_year"), an.get("failures_per_year_over_horizon")),
        "interruptions_per_year": (an.get("interruptions_per_year"), an.get("interruptions_per_year_over_horizon")),
    }
    return {k: (long_run, None) if horizon is None else (horizon, long_run) for k, (long_run, horizon) in pairs.items()}
