"""`mcengine serve`'s steadiness test (docs/serve.md#statistics): von Neumann's ratio of
the sectioning batches' means, its null law, and the warning it raises in the table on a
short continuous run that has not settled, not on one that has."""

from __future__ import annotations

import io

import numpy as np
import pytest
from rich.console import Console

from mcengine.report.serve import render_serve
from mcengine.scenario import load_scenario
from mcengine.standalone.serve import _with_sem
from mcengine.standalone.serve import SEM_BATCHES, TOO_FEW, batch_correlation, correlation_widening, serve_summary, serving_system, steady_limit


def _text(doc: dict) -> str:
    out = io.StringIO()
    Console(file=out, width=400).print(render_serve(doc))
    return out.getvalue()


def test_the_batch_correlation_of_independent_batches_has_von_neumanns_mean_and_variance():
    """4,000 series of 200 independent normal values (20 batches of 10): the statistic's
    mean is 0 and its variance (k - 2) / (k^2 - 1) = 18/399, each within 4 standard errors;
    the share above the limit is below the 1 % level (its normal approximation is
    conservative at 20 batches: 0.77 % in 200,000 series); a trend gives a statistic near 1."""
    rng = np.random.default_rng(3)
    c = np.array([_with_sem(x)[2] for x in rng.standard_normal((4000, 200))])
    k = SEM_BATCHES
    variance = (k - 2) / (k * k - 1)
    assert abs(c.mean()) < 4 * np.sqrt(variance / c.size)
    assert abs(c.var(ddof=1) - variance) < 4 * variance * np.sqrt(2 / (c.size - 1))
    assert steady_limit() == pytest.approx(2.3263478740 * np.sqrt(variance), rel=1e-9)
    assert (c > steady_limit()).mean() < 0.01 + 4 * np.sqrt(0.01 * 0.99 / c.size)
    assert _with_sem(np.linspace(1.0, 2.0, 2000) + 0.01 * rng.standard_normal(2000))[2] > 0.9
    assert _with_sem(np.ones(39))[2] is None and batch_correlation(None) is None and _with_sem(np.ones(40))[2] == 0.0
    # equal batch means whose mean rounds an ulp away from them: correlation 0, the SEM rounding alone (not widened)
    value, sem, correlation = _with_sem(np.full(400, 0.5067563518880339))
    assert correlation == 0.0 and 0.0 <= sem["mean"] < 1e-10


def test_correlated_batches_widen_the_standard_error_as_an_ar1_mean():
    """The standard error of a mean of an AR(1) series of lag-1 correlation ``C`` over that
    of independent values: ``sqrt((1 + C) / (1 - C))``, 2 at ``C = 0.6`` and 3 at ``C = 0.8``;
    never narrowed (1 at ``C <= 0``) and 1 where there is no statistic."""
    assert correlation_widening(0.6) == pytest.approx(2.0, rel=1e-12)
    assert correlation_widening(0.8) == pytest.approx(3.0, rel=1e-12)
    assert correlation_widening(0.0) == correlation_widening(-0.3) == correlation_widening(None) == 1.0
    # the sum of an AR(1)'s autocorrelations, 1 + 2 sum_j C^j, is the factor squared
    c = 0.6
    assert 1.0 + 2.0 * sum(c ** j for j in range(1, 200)) == pytest.approx(correlation_widening(c) ** 2, rel=1e-12)


@pytest.mark.parametrize("lengths, steady", [("fixed", False), ("geometric", True)])
def test_the_table_warns_of_a_continuous_run_that_has_not_settled(lengths, steady):
    """h100 continuous at half load on 16 instances, 100,000 requests, seed 0: with fixed
    output lengths the mean TTFT still climbs over about 400,000 requests
    (docs/load.md#estimates), and the run's TTFT batches are correlated (0.76 against the
    limit 0.49): the table warns, though the run turned over 101 times (a rule of 10
    turnovers would not); with geometric lengths, flat from 20,000 requests, they are not
    (-0.21, TPOT 0.05) and it does not."""
    h100 = load_scenario("h100")
    system = serving_system(h100, "continuous", 16)
    doc, _ = serve_summary(h100, 0.5 * system.capacity_tokens_per_s, requests=100_000, seed=0, mode="continuous", instances=16, lengths=lengths)
    assert doc["requests_measured"] > 90 * doc["in_flight_mean"]
    assert doc["steady"] is steady and doc["batch_correlation_limit"] == steady_limit()
    assert doc["steadiness"] == ("steady" if steady else "unsteady")
    assert (max(doc["batch_correlation"].values()) > steady_limit()) is not steady
    assert ("not steady, its batches are correlated" in _text(doc)) is not steady


def test_a_run_too_short_to_test_says_so_not_that_it_is_unsteady():
    """h100, 8 instances, no warm-up: 39 measured requests are fewer than two in each of the
    20 batches, so there is no test: ``steadiness`` "too_few_requests" (``steady`` false,
    the correlations null, as before) and the table says there are too few requests, not
    that the batches are correlated; 40 are tested."""
    h100 = load_scenario("h100")
    few, _ = serve_summary(h100, 20_000.0, requests=2 * SEM_BATCHES - 1, seed=5, instances=8, warmup=0.0)
    assert few["requests_measured"] == 39 and few["steady"] is False and few["steadiness"] == TOO_FEW
    assert set(few["batch_correlation"].values()) == {None}
    text = _text(few)
    assert "too few requests to test steadiness" in text and "correlated" not in text
    enough, _ = serve_summary(h100, 20_000.0, requests=2 * SEM_BATCHES, seed=5, instances=8, warmup=0.0)
    assert enough["requests_measured"] == 40 and enough["steadiness"] in ("steady", "unsteady")
    assert enough["steady"] is (enough["steadiness"] == "steady") and "too few requests" not in _text(enough)
