"""The analyze phase: Sobol' first-order and total indices from the outputs of a Saltelli
design (:mod:`mcengine.sensitivity.sampling`), with confidence intervals from independent
scramblings of the design.

Estimators (with the output centred on the mean of A and B, Sobol' & Levitan 1999;
V the variance of A and B pooled):

* first order (Saltelli et al. 2010, Table 2 (b)): ``S1_i = mean(f_B (f_ABi - f_A)) / V``;
* total (Jansen 1999; Saltelli et al. 2010, Table 2 (f)):
  ``ST_i = mean((f_A - f_ABi)^2) / (2 V)``.

Confidence (randomised QMC, Owen 1997; L'Ecuyer & Lemieux 2002): the ``N`` design rows
are ``R`` independently scrambled Sobol' sequences of ``N / R`` rows each
(:func:`~mcengine.sensitivity.sampling.saltelli_design`). The indices are estimated on all
``N`` rows; their standard errors by the delete-one-scrambling jackknife over the ``R``
independent groups (Efron & Stein 1981), which also carries the uncertainty of the
variance in the estimators' denominator. ``*_conf`` is ``t_{R-1, (1+level)/2}`` x that
standard error (Student's t: ``R`` groups give ``R - 1`` degrees of freedom). A bootstrap
over the rows of one scrambled sequence, as SALib does, treats correlated quasi-random
rows as independent and overstates the error several-fold; these intervals are checked
to cover the known indices of the Ishigami function at their nominal rate
(tests/sensitivity/test_analysis.py).

References
----------
A. Saltelli, P. Annoni, I. Azzini, F. Campolongo, M. Ratto, S. Tarantola (2010),
"Variance based sensitivity analysis of model output. Design and estimator for the
total sensitivity index", Comput. Phys. Commun. 181:259-270. doi:10.1016/j.cpc.2009.09.018
M. J. W. Jansen (1999), "Analysis of variance designs for model output", Comput. Phys.
Commun. 117:35-43. doi:10.1016/S0010-4655(98)00154-4
I. M. Sobol', Y. L. Levitan (1999), "On the use of variance reducing multipliers in
Monte Carlo computations of a global sensitivity index", Comput. Phys. Commun. 117:52-61.
A. B. Owen (1997), "Scrambled net variance for integrals of smooth functions", Ann. Stat.
25:1541-1562. P. L'Ecuyer, C. Lemieux (2002), "Recent advances in randomized quasi-Monte
Carlo methods", in *Modeling Uncertainty*, Kluwer, 419-474.
B. Efron, C. Stein (1981), "The jackknife estimate of variance", Ann. Stat. 9:586-596.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import stats

from ..errors import InputError, Problem
from .sampling import DEFAULT_SCRAMBLINGS, Evaluator, check_base_samples, check_scramblings, design_blocks, evaluate_blocks, saltelli_design

DEFAULT_CONF_LEVEL = 0.95


def first_total(f_a: np.ndarray, f_b: np.ndarray, f_ab: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """(S1, ST, V): Saltelli 2010 first-order and Jansen total indices (module docstring).

    ``f_a``, ``f_b``: (N,); ``f_ab``: (k, N), one row per mixed matrix. A constant output
    (V = 0) has all indices 0.
    """
    mean = 0.5 * (f_a.mean() + f_b.mean())
    fa, fb, fab = f_a - mean, f_b - mean, f_ab - mean
    var = float(np.concatenate([fa, fb]).var())
    if var == 0.0:
        zeros = np.zeros(f_ab.shape[0])
        return zeros, zeros.copy(), 0.0
    s1 = np.mean(fb * (fab - fa), axis=1) / var
    st = 0.5 * np.mean((fa - fab) ** 2, axis=1) / var
    return s1, st, var


def scrambling_se(f_a: np.ndarray, f_b: np.ndarray, f_ab: np.ndarray, scramblings: int) -> tuple[np.ndarray, np.ndarray]:
    """Jackknife standard errors of S1 and ST over ``scramblings`` independent groups.

    The rows of ``f_a``, ``f_b`` and ``f_ab`` (shapes as :func:`first_total`) are
    ``scramblings`` consecutive groups of equal size, each from its own scrambling. With
    ``S_(-r)`` the indices of every row but group ``r``'s and ``S_(.)`` their mean, the
    delete-one-group jackknife standard error is
    ``sqrt((R - 1) / R * sum_r (S_(-r) - S_(.))^2)`` (Efron & Stein 1981).
    """
    n = f_a.size
    rows = n // scramblings
    s1 = np.empty((scramblings, f_ab.shape[0]))
    st = np.empty_like(s1)
    for r in range(scramblings):
        keep = np.ones(n, dtype=bool)
        keep[r * rows:(r + 1) * rows] = False
        s1[r], st[r], _ = first_total(f_a[keep], f_b[keep], f_ab[:, keep])
    scale = (scramblings - 1) / scramblings
    return np.sqrt(scale * ((s1 - s1.mean(axis=0)) ** 2).sum(axis=0)), np.sqrt(scale * ((st - st.mean(axis=0)) ** 2).sum(axis=0))


@dataclass(frozen=True)
class SobolEstimate:
    """Indices of every input (and of :data:`NOISE` when modelled), in design order."""

    names: tuple[str, ...]
    s1: np.ndarray
    st: np.ndarray
    s1_se: np.ndarray
    st_se: np.ndarray
    mean: float
    variance: float
    base_samples: int
    evaluations: int
    conf_level: float
    scramblings: int

    @property
    def multiplier(self) -> float:
        """Half-width of the ``conf_level`` interval in standard errors: Student's t
        quantile with ``scramblings - 1`` degrees of freedom."""
        return float(stats.t.ppf(0.5 + self.conf_level / 2.0, self.scramblings - 1))

    def indices(self) -> dict[str, dict[str, float]]:
        """``{name: {"S1", "S1_conf", "ST", "ST_conf"}}``, largest total index first."""
        order = sorted(range(len(self.names)), key=lambda i: (-self.st[i], i))
        return {
            self.names[i]: {
                "S1": float(self.s1[i]),
                "S1_conf": float(self.multiplier * self.s1_se[i]),
                "ST": float(self.st[i]),
                "ST_conf": float(self.multiplier * self.st_se[i]),
            }
            for i in order
        }


def sobol_indices(
    evaluate: Evaluator,
    names: list[str],
    n: int,
    seed: int,
    noise: bool = True,
    scramblings: int = DEFAULT_SCRAMBLINGS,
    conf_level: float = DEFAULT_CONF_LEVEL,
    chunk: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SobolEstimate:
    """First-order and total Sobol' indices of ``evaluate`` over ``d = len(names)``
    uniform inputs, from ``n (d + 2)`` evaluations (``n (d + 3)`` with ``noise``), the
    ``n`` base rows made of ``scramblings`` independent scramblings (the intervals'
    groups: module docstring).

    ``evaluate(u, trial_start)`` must key any randomness of its own by the global trial
    index ``trial_start + row`` (see the module docstring); a deterministic one ignores
    it (then pass ``noise=False``).
    """
    check_base_samples(n)
    check_scramblings(scramblings, n)
    if not 0.0 < conf_level < 1.0:
        raise InputError(Problem("conf_level", conf_level, "allowed: a number in (0, 1)"))
    a, b = saltelli_design(len(names), n, seed, scramblings)
    blocks = design_blocks(list(names), a, b, noise)
    outputs = evaluate_blocks(evaluate, blocks, chunk or n, progress)
    f_a, f_b, f_ab = outputs[0], outputs[1], np.vstack(outputs[2:])
    s1, st, var = first_total(f_a, f_b, f_ab)
    s1_se, st_se = scrambling_se(f_a, f_b, f_ab, scramblings)
    return SobolEstimate(
        names=tuple(b.name for b in blocks[2:]),
        s1=s1,
        st=st,
        s1_se=s1_se,
        st_se=st_se,
        mean=float(0.5 * (f_a.mean() + f_b.mean())),
        variance=var,
        base_samples=n,
        evaluations=sum(b.u.shape[0] for b in blocks),
        conf_level=conf_level,
        scramblings=scramblings,
    )
