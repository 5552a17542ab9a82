"""Continuous mode's fast model against settled simulations (docs/load.md#continuous,
#estimates): the gamma CV 2 cells the bursts' wait in the instance's own prefill stream
(``queue_continuous._burst_wait``) brought within the fit criterion, and the cells near capacity
the refills' smoothing of the stream's second prompt (``queue_continuous._refilled_cv2``) did."""

from __future__ import annotations

import numpy as np
import pytest

from mcengine.analytic import queue_continuous as qc
from mcengine.scenario import load_scenario
from mcengine.standalone.serve import serving_system
from tests.standalone.fit_checks import assert_fits, replicated

#: Independent replications per cell, each of the fit table's continuous run (1,600,000
#: requests, the first half left out: two relaxation times of least-loaded dispatch's
#: pattern, docs/load.md#estimates). One run's sectioning error under-states the spread,
#: so the standard error is the replications'.
REPLICATIONS, REQUESTS, WARMUP = 3, 1_600_000, 0.5


def test_burst_wait_by_hand():
    """G/D/1 (Allen-Cunneen) of the excess ``(c_a^2 - 1) / N``: c_a = 3, N = 4 gives squared
    CV 2, so at u = 0.5 and D = 0.1 s the wait's scale is ``2 / 2 x 0.1 / 0.5 = 0.2`` s, it
    waits with probability u (mean 0.1 s) and its 0.99 quantile is ``0.2 ln(0.5 / 0.01)``;
    nothing for Poisson or smoother arrivals."""
    mean, q = qc._burst_wait(0.99, 4, 0.1, 0.5, 3.0)
    assert mean == pytest.approx(0.1, rel=1e-12)
    assert q == pytest.approx(0.2 * np.log(50.0), rel=1e-12)
    for cv in (1.0, 0.5):
        assert qc._burst_wait(0.99, 4, 0.1, 0.5, cv) == (0.0, 0.0)


@pytest.mark.slow
@pytest.mark.parametrize("name, load", [("h100", 0.3), ("lite-h100", 0.6)])
def test_gamma_cells_brought_in_hold_against_settled_replications(name, load):
    """16 instances, gamma CV 2 arrivals: the fast model within 10 % of the replications'
    mean P99 TTFT and TPOT and 5 % of their means, widened by 4 standard errors (the fit
    table before the bursts' own-stream wait: P99 TTFT 14 % and 20 % low)."""
    system = serving_system(load_scenario(name), "continuous", 16)
    rate = load * system.capacity_tokens_per_s / system.output_tokens
    sim, sem = replicated(system, rate, REQUESTS, REPLICATIONS, 0, WARMUP, "gamma", 2.0)
    assert_fits(system, rate, 2.0, sim, sem)


@pytest.mark.slow
@pytest.mark.parametrize("name, arrival, cv, load", [("h100", "poisson", 1.0, 0.7), ("lite-h100", "gamma", 2.0, 0.8)])
def test_cells_near_capacity_brought_in_hold_against_settled_replications(name, arrival, cv, load):
    """16 instances: the fast model within the fit criterion of the replications, widened by
    4 standard errors (the fit table with M/D/1's second prompt in the mean: mean TTFT 6.7 %
    and 10.6 % high; docs/load.md#refill)."""
    system = serving_system(load_scenario(name), "continuous", 16)
    rate = load * system.capacity_tokens_per_s / system.output_tokens
    sim, sem = replicated(system, rate, REQUESTS, REPLICATIONS, 0, WARMUP, arrival, cv)
    assert_fits(system, rate, cv, sim, sem)
