"""Mean unavailability with control variates: the same lifetimes, a smaller standard error.

A trial's unavailability ``U = 1 - instance_availability`` varies with its drawn inputs
(rates, swap and restart times) and with its lifetime's own events. Both parts follow,
nearly linearly, the counts of events of each exponential category (docs/availability-vr.md):

* **lifetime controls** ``N_k - (m_k(x) - s_k)``: the events of category ``k`` a lifetime
  counted minus their compensator, the expectation at its inputs ``x`` at full exposure,
  ``m_k(x) = rate x units x horizon`` (:func:`mcengine.stages.reliability.expected_counts`),
  less the rate x the unit-hours its units were out of place (``s_k``,
  :func:`~mcengine.stages.reliability.exposure_shortfall`): a martingale at the horizon,
  mean zero (docs/availability-vr.md);
* the **host stock-out control** (host units with an exponential host law): the
  host-hours waiting for a host each failure's repair adds, minus their expectation given
  everything but that repair (:func:`stockout_control`, mean zero; with the counts, the
  regression replaces the stock-outs' repair noise by its conditional expectation:
  conditional Monte Carlo on the failure times, docs/availability-vr.md);
* **input controls** ``m_k(x) - E[m_k(X)]``: the expectations themselves, a function of
  the inputs alone; their mean over the inputs comes from :data:`INPUT_TRIALS` further
  draws of the inputs (scrambled Sobol' points, no lifetimes: a fraction of a second),
  whose own standard error enters the estimate's.

The estimate is the regression (control-variate) estimator ``mean(U) - beta . (mean(F) -
mu)`` with ``beta`` the least-squares coefficients of ``U`` on the controls ``F``
(Glasserman 2004, Monte Carlo Methods in Financial Engineering, §4.1; Lavenberg & Welch
1981): unbiased for known ``mu`` up to the ``O(1/n)`` of an estimated ``beta``; its
variance ``Var(residual) / n`` plus ``beta_in' Cov(mu_in) beta_in``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..pipeline import reshard_capacity
from ..scenario.sampling import Sampler, draw_inputs
from ..scenario.schema import Scenario
from ..summaries import BLOCK_TRIALS
from ..units import HOURS_PER_YEAR
from ..kernels.laws import CUM_WEIGHT, KIND, P1, P2
from ..kernels.law_codes import LAW_LOGNORMAL
from ..kernels.host_stockout import stockout_control as _stockout_kernel
from ..stages.reliability import (
    COUNT_CATEGORIES, expected_counts, exposure_shortfall, host_repair_laws, host_units_exponential, lifetimes,
    observed_counts,
)

__all__ = ["INPUT_TRIALS", "INPUT_SCRAMBLINGS", "RELATIVE_CONSTANT", "LOG_SDS", "LOG_MARGIN", "GRID_MEANS",
           "ControlMoments", "controls", "host_log_size", "input_means", "stockout_control", "unavailability"]

#: Draws of the inputs for the input controls' means (:func:`input_means`, a fraction
#: of a second; their error measured in docs/availability-vr.md).
INPUT_TRIALS = 1 << 16
#: Independent scramblings of those draws' Sobol' design: the spread of their means is
#: the input means' standard error.
INPUT_SCRAMBLINGS = 16
#: A control whose standard deviation is below this share of its mean's size (at least 1)
#: is constant but for rounding (a fixed rate's expectation) and is left out.
RELATIVE_CONSTANT = 1e-9


#: A lifetime's host log holds its first ``mean + LOG_SDS sqrt(mean) + LOG_MARGIN``
#: candidate host failures (``mean`` its expected count, fixed by its inputs): a Poisson
#: count past it has odds below 1e-13; failures past it get no stock-out term (still mean
#: zero: the cut is fixed by the inputs alone).
LOG_SDS, LOG_MARGIN = 8.0, 16
#: The breakpoints of the stock-out control's weight beyond the other repairs' ends and
#: the later candidates, in means of the trial's repair law: a geometric grid (ratio
#: sqrt 2) from 1/8 to 8 means; the last is the lookahead past which later candidates
#: are not weighed (h100's repair is beyond 8 means with odds 0.006). Measured on h100
#: (docs/availability-vr.md): 1/64 to 32 means gains 9 % more at 3.7x the control's CPU.
GRID_MEANS = 2.0 ** (np.arange(-6, 7) / 2.0)


def _log_counts(scenario: Scenario, inputs) -> np.ndarray:
    """Per trial, the candidate host failures its log holds (0: no stock-out control: not
    host units with an exponential host law, or a Weibull part in the repair law)."""
    mean = expected_counts(scenario, inputs)["host_failures"]
    used = np.ceil(mean + LOG_SDS * np.sqrt(mean)).astype(np.int64) + LOG_MARGIN
    _, weibull = host_repair_laws(scenario, inputs)
    return np.where(host_units_exponential(scenario, inputs) & ~weibull & (mean > 0.0), used, 0)


def host_log_size(scenario: Scenario, inputs) -> int:
    """The ``host_log`` to ask :func:`~mcengine.stages.reliability.lifetimes` for, for
    :func:`stockout_control` on the trials ``inputs`` (0: none applies)."""
    return int(_log_counts(scenario, inputs).max(initial=0))


def stockout_control(scenario: Scenario, inputs, columns: dict[str, np.ndarray]) -> np.ndarray:
    """Per trial, the host stock-out control: the host-hours waiting for a host that each
    failure's repair adds, weighted by the odds that at least ``spare_hosts`` other hosts
    are in repair then, minus its expectation given everything but that repair
    (:func:`mcengine.kernels.host_stockout.stockout_control`; mean zero exactly). Zero
    where no log was kept (``columns`` without ``host_log``) or none applies."""
    used = _log_counts(scenario, inputs)
    if "host_log" not in columns or not used.any():
        return np.zeros(inputs.n)
    laws, _ = host_repair_laws(scenario, inputs)
    mean = np.array([_law_mean(law) for law in laws])
    horizon = inputs["run.horizon_years"] * HOURS_PER_YEAR
    return _stockout_kernel(np.ascontiguousarray(columns["host_log"]), used, horizon * np.ones(inputs.n),
                            int(scenario.cluster.spare_hosts), np.ascontiguousarray(laws), np.outer(mean, GRID_MEANS))


def _law_mean(law: np.ndarray) -> float:
    """The mean of one repair law table (fixed, exponential and lognormal parts)."""
    weights = np.diff(law[:, CUM_WEIGHT], prepend=0.0)
    means = np.where(law[:, KIND] == LAW_LOGNORMAL, law[:, P1] * np.exp(0.5 * law[:, P2] ** 2), law[:, P1])
    return float(weights @ means)


def controls(scenario: Scenario, inputs, columns: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The lifetime controls ``N_k - (m_k(x) - s_k)`` (``float64[n, len(COUNT_CATEGORIES)]``)
    then the host stock-out control (:func:`stockout_control`), and the expectations
    ``m_k(x)`` (``float64[n, len(COUNT_CATEGORIES)]``), of the trials ``inputs`` whose
    reliability stage columns are ``columns``."""
    observed, shortfall = observed_counts(scenario, inputs, columns), exposure_shortfall(scenario, inputs, columns)
    expected = _expected(scenario, inputs)
    compensator = expected - np.column_stack([shortfall[k] for k in COUNT_CATEGORIES])
    return (np.column_stack([np.column_stack([observed[k] for k in COUNT_CATEGORIES]) - compensator,
                             stockout_control(scenario, inputs, columns)]), expected)


def _expected(scenario: Scenario, inputs) -> np.ndarray:
    """:func:`~mcengine.stages.reliability.expected_counts` as ``float64[n, K]``."""
    expected = expected_counts(scenario, inputs)
    return np.column_stack([expected[k] for k in COUNT_CATEGORIES])


def input_means(scenario: Scenario, seed: int, trials: int = INPUT_TRIALS) -> tuple[np.ndarray, np.ndarray]:
    """The mean of the expectations ``m_k(X)`` over ``trials`` draws of the inputs, and the
    covariance matrix of that mean.

    The draws are randomized quasi-Monte Carlo: :data:`INPUT_SCRAMBLINGS` independent
    scramblings of a Sobol' design on the scenario's uncertain inputs (the ``run.sampler =
    "sobol"`` design, docs/model.md), from seed ``seed + 1``, so they are independent of
    the run's own inputs whatever its sampler. Each scrambling's mean is unbiased; the
    covariance comes from their spread. An expectation is a sum of one term per drawn rate,
    nearly linear in it, which Sobol' points integrate far better than random ones.
    """
    sampler = Sampler("sobol", INPUT_SCRAMBLINGS, tuple(sorted(scenario.uncertain_inputs())))
    expected = _expected(scenario, draw_inputs(scenario, (seed + 1) % 2**64, 0, trials, sampler))
    reps = np.stack([expected[r::INPUT_SCRAMBLINGS].mean(axis=0) for r in range(INPUT_SCRAMBLINGS)])
    return reps.mean(axis=0), np.atleast_2d(np.cov(reps, rowvar=False)) / INPUT_SCRAMBLINGS


@dataclass
class ControlMoments:
    """Streaming sums of ``z = (u, lifetime controls, expectations)`` (shifted by the first
    trial's ``z`` for accuracy) from which :meth:`estimate` builds the estimator: memory
    bounded whatever the trials; summed block by block of
    :data:`~mcengine.summaries.BLOCK_TRIALS` trials, so any chunks of whole blocks give
    the same numbers."""

    count: int = 0
    shift: np.ndarray | None = None
    total: np.ndarray | None = None  # sum of z - shift
    cross: np.ndarray | None = None  # sum of (z - shift)(z - shift)'

    def add(self, u: np.ndarray, lifetime: np.ndarray, expected: np.ndarray) -> "ControlMoments":
        """Add trials: their unavailability and :func:`controls`."""
        z = np.column_stack([u, lifetime, expected])
        if self.shift is None:
            self.shift, self.total, self.cross = z[0].copy(), np.zeros(z.shape[1]), np.zeros((z.shape[1],) * 2)
        z = z - self.shift
        self.count += z.shape[0]
        for start in range(0, z.shape[0], BLOCK_TRIALS):  # block by block, as a Summary adds
            block = z[start:start + BLOCK_TRIALS]
            self.total += block.sum(axis=0)
            self.cross += (block[:, :, None] * block[:, None, :]).sum(axis=0)  # (numpy's sum: no BLAS threads)
        return self

    def estimate(self, mu: np.ndarray, mu_cov: np.ndarray) -> dict:
        """The control-variate estimate of the mean unavailability.

        ``mu``, ``mu_cov``: :func:`input_means` (the expectations' mean over the inputs and
        the covariance of that mean).

        Returns
        -------
        dict
            ``mean`` and ``sem`` (the estimator's), ``plain_mean`` and ``plain_sem`` (the
            sample mean's), ``variance_reduction`` (at equal trials: the sample mean's
            variance over the estimator's, the input means' error included; 1 when
            neither varies), ``controls``
            (those that vary: a fixed rate's expectation or an absent category carries
            nothing; none with fewer trials than controls + 2) and ``trials`` (at least 2).
        """
        n = self.count
        m = self.total / n
        mean = self.shift + m
        cov = (self.cross - n * np.outer(m, m)) / (n - 1)
        k = (mean.size - 1 - mu.size)
        centre = np.concatenate([np.zeros(k), mu])
        sd = np.sqrt(np.maximum(np.diag(cov)[1:], 0.0))
        keep = sd > RELATIVE_CONSTANT * np.maximum(np.abs(mean[1:]), 1.0)
        if n < keep.sum() + 2:  # too few trials to fit the controls: the plain mean
            keep[:] = False
        idx = 1 + np.flatnonzero(keep)
        beta = np.linalg.lstsq(cov[np.ix_(idx, idx)], cov[idx, 0], rcond=None)[0]
        p = idx.size
        residual = max(cov[0, 0] - beta @ cov[idx, 0], 0.0) * (n - 1) / (n - p - 1)
        b_in = np.zeros(mean.size - 1)
        b_in[keep] = beta
        b_in = b_in[k:]
        var = residual / n + float(b_in @ mu_cov @ b_in)
        plain_var = cov[0, 0] / n
        return {"mean": float(mean[0] - beta @ (mean[idx] - centre[keep])), "sem": float(np.sqrt(var)),
                "plain_mean": float(mean[0]), "plain_sem": float(np.sqrt(plain_var)),
                "variance_reduction": float(plain_var / var) if var > 0 else (1.0 if plain_var == 0 else float("inf")),
                "controls": p, "trials": n}


def unavailability(scenario: Scenario, trials: int, seed: int, input_trials: int = INPUT_TRIALS) -> dict:
    """Mean unavailability of ``scenario`` over ``trials`` lifetimes (seed ``seed``, its
    run's trials ``0 .. trials - 1``) by :meth:`ControlMoments.estimate`, beside the plain
    sample mean (in one pass: the benchmark's and the tests' entry point)."""
    inputs = draw_inputs(scenario, seed, 0, trials)
    columns = lifetimes(scenario, inputs, seed, reshard_capacity(scenario), host_log_size(scenario, inputs))
    lifetime, expected = controls(scenario, inputs, columns)
    return ControlMoments().add(1.0 - columns["instance_availability"], lifetime, expected).estimate(
        *input_means(scenario, seed, input_trials))
