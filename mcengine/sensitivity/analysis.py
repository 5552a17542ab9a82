"""Saltelli designs and Sobol' index estimators: the model-agnostic core of
:mod:`mcengine.sensitivity` (checked on the analytic test functions of
:mod:`mcengine.analytic.sensitivity`).

Design (Saltelli et al. 2010, sec. 5): one scrambled Sobol' sequence of dimension
``2d`` (:class:`scipy.stats.qmc.Sobol`, Owen scrambling seeded from the master seed)
gives the two independent ``(N, d)`` matrices A (first ``d`` columns) and B (last
``d``); ``AB_i`` is A with column ``i`` taken from B. Points are shifted to the middle of
their ``2^-30`` cell, so every unit value is strictly inside (0, 1) and a ``ppf`` never
sees 0 or 1.

**Model noise.** A stochastic model's own (aleatory) randomness is an extra input named
:data:`NOISE`, realised by the *trial index* that keys every random stream: A's rows use
trials ``[0, N)``, B's rows ``[N, 2N)``; ``AB_i`` keeps A's trials, and the extra matrix
``AB_noise`` is A's inputs on B's trials. Every block is so a contiguous trial range,
A and B have independent noise, and an input the output does not depend on has
``f(AB_i) == f(A)`` exactly: its indices are 0, not polluted by Monte Carlo noise.

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
from scipy.stats import qmc

from .errors import InputError, Problem

#: Name of the extra input that stands for the model's own randomness.
NOISE = "model_noise"
#: Smallest base sample (rows of A and B).
MIN_BASE_SAMPLES = 16
#: Bits of the Sobol' points (scipy's default; allows up to 2**30 rows).
SOBOL_BITS = 30
#: Stream id of bootstrap resample ``r`` is ``BOOTSTRAP_STREAM + r`` (stage STAGE_SENSITIVITY).
BOOTSTRAP_STREAM = 1 << 20
DEFAULT_RESAMPLES = 1000
DEFAULT_CONF_LEVEL = 0.95

#: ``evaluate(u, trial_start) -> y``: ``u`` float64 (m, d) in (0, 1), rows = trials
#: ``trial_start .. trial_start + m - 1``; ``y`` float64 (m,).
Evaluator = Callable[[np.ndarray, int], np.ndarray]


def check_base_samples(n: int, option: str = "--trials") -> int:
    """``n`` if it is a power of two >= :data:`MIN_BASE_SAMPLES` (Sobol' balance), else InputError."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < MIN_BASE_SAMPLES or n & (n - 1):
        raise InputError(Problem(option, n, f"allowed: a power of two >= {MIN_BASE_SAMPLES} (Sobol' balance), e.g. 256, 512, 1024"))
    return int(n)


def saltelli_design(d: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The (N, d) matrices A and B of unit values in (0, 1), from one 2d-dimensional
    scrambled Sobol' sequence seeded by ``(seed, STAGE_SENSITIVITY)``."""
    from .rng import STAGE_SENSITIVITY

    check_base_samples(n)
    engine = qmc.Sobol(d=2 * d, scramble=True, bits=SOBOL_BITS, rng=[int(seed), STAGE_SENSITIVITY])
    points = engine.random_base2(int(n).bit_length() - 1) + 2.0 ** -(SOBOL_BITS + 1)
    return points[:, :d], points[:, d:]


@dataclass(frozen=True)
class Block:
    """One design matrix and the first trial index of its rows."""

    name: str  # "A", "B", an input name (AB_i) or NOISE
    u: np.ndarray
    trial_start: int


def design_blocks(names: list[str], a: np.ndarray, b: np.ndarray, noise: bool) -> list[Block]:
    """A, B, every AB_i and (with ``noise``) AB_noise, with their trial ranges."""
    n = a.shape[0]
    blocks = [Block("A", a, 0), Block("B", b, n)]
    for i, name in enumerate(names):
        ab = a.copy()
        ab[:, i] = b[:, i]
        blocks.append(Block(name, ab, 0))
    if noise:
        blocks.append(Block(NOISE, a, n))
    return blocks


def evaluate_blocks(evaluate: Evaluator, blocks: list[Block], chunk: int, progress: Callable[[int, int], None] | None = None) -> list[np.ndarray]:
    """Outputs of every block, evaluated ``chunk`` rows (trials) at a time."""
    total = sum(b.u.shape[0] for b in blocks)
    done = 0
    outputs = []
    for block in blocks:
        n = block.u.shape[0]
        y = np.empty(n)
        for start in range(0, n, chunk):
            stop = min(n, start + chunk)
            y[start:stop] = evaluate(block.u[start:stop], block.trial_start + start)
            done += stop - start
            if progress:
                progress(done, total)
        outputs.append(y)
    return outputs


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
    from .rng import STAGE_SENSITIVITY, uniforms_for_trials

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
