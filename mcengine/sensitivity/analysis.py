"""The analyze phase: Sobol' first-order and total indices from the outputs of a Saltelli
design (:mod:`mcengine.sensitivity.sampling`), with bootstrap confidence intervals.

Estimators (with the output centred on the mean of A and B, Sobol' & Levitan 1999;
V the variance of A and B pooled):

* first order (Saltelli et al. 2010, Table 2 (b)): ``S1_i = mean(f_B (f_ABi - f_A)) / V``;
* total (Jansen 1999; Saltelli et al. 2010, Table 2 (f)):
  ``ST_i = mean((f_A - f_ABi)^2) / (2 V)``.

Confidence: ``R`` bootstrap resamples of the ``N`` design rows (indices from the
counter-based streams of ``mcengine.rng``, stage ``STAGE_SENSITIVITY``); ``*_conf`` is
``z_{(1+level)/2}`` x the bootstrap standard deviation, the half-width of the normal
interval (SALib's convention). For quasi-random designs this is conservative.

References
----------
A. Saltelli, P. Annoni, I. Azzini, F. Campolongo, M. Ratto, S. Tarantola (2010),
"Variance based sensitivity analysis of model output. Design and estimator for the
total sensitivity index", Comput. Phys. Commun. 181:259-270. doi:10.1016/j.cpc.2009.09.018
M. J. W. Jansen (1999), "Analysis of variance designs for model output", Comput. Phys.
Commun. 117:35-43. doi:10.1016/S0010-4655(98)00154-4
I. M. Sobol', Y. L. Levitan (1999), "On the use of variance reducing multipliers in
Monte Carlo computations of a global sensitivity index", Comput. Phys. Commun. 117:52-61.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import stats

from ..errors import InputError, Problem
from .sampling import Evaluator, check_base_samples, design_blocks, evaluate_blocks, saltelli_design

#: Stream id of bootstrap resample ``r`` is ``BOOTSTRAP_STREAM + r`` (stage STAGE_SENSITIVITY).
BOOTSTRAP_STREAM = 1 << 20
DEFAULT_RESAMPLES = 1000
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


def bootstrap_se(f_a: np.ndarray, f_b: np.ndarray, f_ab: np.ndarray, seed: int, resamples: int) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap standard deviations of S1 and ST over ``resamples`` resamples of the rows."""
    from ..rng import STAGE_SENSITIVITY, uniforms_for_trials

    n = f_a.size
    s1 = np.empty((resamples, f_ab.shape[0]))
    st = np.empty_like(s1)
    for r in range(resamples):
        u = uniforms_for_trials(np.uint64(seed), STAGE_SENSITIVITY, BOOTSTRAP_STREAM + r, 0, n)
        idx = np.minimum((u * n).astype(np.int64), n - 1)
        s1[r], st[r], _ = first_total(f_a[idx], f_b[idx], f_ab[:, idx])
    return s1.std(axis=0, ddof=1), st.std(axis=0, ddof=1)


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
    resamples: int

    @property
    def z(self) -> float:
        return float(stats.norm.ppf(0.5 + self.conf_level / 2.0))

    def indices(self) -> dict[str, dict[str, float]]:
        """``{name: {"S1", "S1_conf", "ST", "ST_conf"}}``, largest total index first."""
        order = sorted(range(len(self.names)), key=lambda i: (-self.st[i], i))
        return {
            self.names[i]: {
                "S1": float(self.s1[i]),
                "S1_conf": float(self.z * self.s1_se[i]),
                "ST": float(self.st[i]),
                "ST_conf": float(self.z * self.st_se[i]),
            }
            for i in order
        }


def sobol_indices(
    evaluate: Evaluator,
    names: list[str],
    n: int,
    seed: int,
    noise: bool = True,
    resamples: int = DEFAULT_RESAMPLES,
    conf_level: float = DEFAULT_CONF_LEVEL,
    chunk: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SobolEstimate:
    """First-order and total Sobol' indices of ``evaluate`` over ``d = len(names)``
    uniform inputs, from ``n (d + 2)`` evaluations (``n (d + 3)`` with ``noise``).

    ``evaluate(u, trial_start)`` must key any randomness of its own by the global trial
    index ``trial_start + row`` (see the module docstring); a deterministic one ignores
    it (then pass ``noise=False``).
    """
    check_base_samples(n)
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 2:
        raise InputError(Problem("resamples", resamples, "allowed: an integer >= 2"))
    if not 0.0 < conf_level < 1.0:
        raise InputError(Problem("conf_level", conf_level, "allowed: a number in (0, 1)"))
    a, b = saltelli_design(len(names), n, seed)
    blocks = design_blocks(list(names), a, b, noise)
    outputs = evaluate_blocks(evaluate, blocks, chunk or n, progress)
    f_a, f_b, f_ab = outputs[0], outputs[1], np.vstack(outputs[2:])
    s1, st, var = first_total(f_a, f_b, f_ab)
    s1_se, st_se = bootstrap_se(f_a, f_b, f_ab, seed, resamples)
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
        resamples=resamples,
    )
