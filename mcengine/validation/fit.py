"""Fitting each precision's efficiency medians to its fit anchors (docs/sources.md#roof-calibration).

For one precision (``workload.efficiency.PRECISION``) the compute and memory efficiencies
``(c, m)`` are chosen to minimise the sum of squared log errors of the model against that
precision's ``role = "fit"`` anchors that fit them (:data:`mcengine.validation.roofline.CALIBRATION`,
``fits = ("compute", "memory")``):

    min_{c, m}  sum_a ( ln model_a(c, m) - ln measured_a )^2,   0.05 <= c, m <= 1,

then, with ``(c, m)`` fixed, the KV-read efficiency ``k`` on the anchors that fit it
(``fits = ("kv",)``: large batches over long KV caches) the same way; a precision without
such anchors reads its KV cache at ``m``. Both by ``scipy.optimize.least_squares``
(trust-region reflective) from the shipped medians, every other input at the shipped h100
medians and the anchor's own setup. ``mcengine validate`` then reports, per anchor, the
error at the shipped medians and at the refit, and checks that the shipped table's medians
are the refit within :data:`FIT_TOLERANCE`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

from ..scenario import load_scenario

#: How far a shipped table's median may sit from the refit on its fit anchors (the tables
#: are written to two decimals).
FIT_TOLERANCE = 0.02
#: Search box of the fit: efficiencies are shares of a peak.
BOUNDS = (0.05, 1.0)


@dataclass(frozen=True)
class EfficiencyFit:
    """The medians fitted for ``precision`` and the relative error of every anchor of that
    precision at them (model / measured - 1), by anchor name."""

    precision: str
    compute: float
    memory: float
    errors: dict
    kv: float | None = None


def efficiency_overrides(compute: float, memory: float, kv: float | None = None) -> tuple[str, ...]:
    """``--set`` overrides that put these efficiencies in use (the old keys win over the tables);
    ``kv`` None keeps the shipped table's KV-read efficiency."""
    out = (f"workload.compute_efficiency={float(compute)!r}", f"workload.memory_efficiency={float(memory)!r}")
    return out if kv is None else (*out, f"workload.kv_efficiency={float(kv)!r}")


def shipped_medians(precision: str) -> tuple[float, float, float | None]:
    """(compute, memory, kv) medians of the shipped h100 table of ``precision`` (kv None:
    the table reads its KV cache at its memory efficiency)."""
    table = dict(load_scenario("h100").workload.efficiency)[precision]
    return table.compute.median(), table.memory.median(), None if table.kv is None else table.kv.median()


def _least_squares(anchors, overrides, start) -> np.ndarray:
    """The efficiencies ``x`` minimising the squared log errors of ``anchors`` under ``overrides(x)``."""
    def residuals(x):
        return np.array([math.log(a.value(overrides(x)) / a.measured) for a in anchors])

    return least_squares(residuals, np.array(start), bounds=BOUNDS, diff_step=1e-4, xtol=1e-10).x


def fit_precision(precision: str, anchors) -> EfficiencyFit:
    """Least-squares fit of ``precision``'s (compute, memory) medians to its ``role = "fit"``
    anchors among ``anchors`` that fit them, then of its KV-read efficiency to those that fit
    it (none: unfitted, None); errors of all of that precision's anchors at the fit."""
    mine = [a for a in anchors if a.precision == precision]
    c0, m0, k0 = shipped_medians(precision)
    kv_on = [a for a in mine if a.role == "fit" and "kv" in a.fits]
    c, m = _least_squares([a for a in mine if a.role == "fit" and "kv" not in a.fits], lambda x: efficiency_overrides(*x, k0), (c0, m0))
    k = float(_least_squares(kv_on, lambda x: efficiency_overrides(c, m, x[0]), (k0 or m,))[0]) if kv_on else None
    errors = {a.name: a.value(efficiency_overrides(c, m, k)) / a.measured - 1.0 for a in mine}
    return EfficiencyFit(precision, float(c), float(m), errors, k)
