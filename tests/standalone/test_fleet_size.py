"""The static mode's fast model across pool sizes (docs/load.md#fleet-size): the committed
fleet-size table is the page's and the model's now, a few of its passing cells off the fit
table's 16 instances re-simulated with replications whose standard error sets the
tolerance, and the pool-size terms by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mcengine.analytic import queue_static as qs
from mcengine.standalone.serve import fast_latency
from tests.docs_scripts import docs_script
from tests.standalone.fit_checks import assert_fits, replicated


@pytest.fixture(scope="module")
def fleet():
    return docs_script("load/fleet_size")


def test_the_fleet_size_table_on_the_page_is_the_committed_grid(fleet):
    """docs/load.md's block is rendered from docs/load/fleet-size-table.csv over every pool,
    design, arrival and load, each verdict its errors against the fit table's tolerances, and
    its 16-instance rows are the fit table's static cells (the same runs)."""
    table = pd.read_csv(fleet.CSV)
    assert len(table) == len(fleet.POOLS) * len(fleet.DESIGNS) * len(fleet.ARRIVALS) * len(fleet.LOADS)
    within = np.all([table[f"err_{k}"].abs() <= tol for k, tol in fleet.TOLERANCE.items()], axis=0)
    np.testing.assert_array_equal(table.passes.to_numpy(), within)
    text = fleet.PAGE.read_text()
    assert text[text.index(fleet.BEGIN) + len(fleet.BEGIN):text.index(fleet.END)].strip() == fleet.render(table)
    fit = pd.read_csv(docs_script("load/make_fit_table").CSV)
    fit = fit[fit["mode"] == "static"].reset_index(drop=True)
    ours = table[table.instances == 16].reset_index(drop=True)
    for col in ("sim_ttft_p99_ms", "sim_ttft_mean_ms", "fast_ttft_p99_ms", "fast_ttft_mean_ms"):
        np.testing.assert_allclose(ours[col], fit[col], rtol=1e-5, err_msg=col)



def _span(errors, low=False) -> str:
    """The page's range of relative errors in whole percent, rounded to nearest: ``−13 to
    +5`` (``low``: the magnitudes of errors all below 0, ``39–56``)."""
    x = np.round(100.0 * np.asarray(errors, float).ravel()).astype(int)
    if low:
        return f"{-x.max()}–{-x.min()}"
    return f"{x.min():+d} to {x.max():+d}".replace("-", "−")


def test_the_counts_and_ranges_in_the_prose_are_the_tables(fleet):
    """The #fleet-size prose's numbers recomputed from docs/load/fleet-size-table.csv: h100
    at loads 0.4-0.9 on 64 and 128 instances (its range over P99 and mean TTFT, the cells
    within), the platoons' mean TTFT at 0.2-0.3 there, the Lite's tail at 0.4-0.9, the 4
    instances' mean and P99, and the cells whose TPOT is out; the table's count by pool;
    #static-cycles' fit, near capacity and length table counts from their CSVs."""
    table, text = pd.read_csv(fleet.CSV), " ".join(fleet.PAGE.read_text().split())
    by_pool = " / ".join(str(int(n)) for n in table.groupby("instances").passes.sum())
    assert f"the model passes {table.passes.sum()} of {len(table)} cells (by pool {by_pool} on 4 / 8 / 16 / 32 / 64 / 128;" in text
    big = table[table.instances.isin([64, 128])]
    h100 = big[(big.design == "h100") & (big.load >= 0.4)]
    assert (f"within {_span(h100[['err_ttft_p99', 'err_ttft_mean']])} % (P99 and mean), {h100.passes.sum()} of {len(h100)} pass") in text
    platoons = big[big.load.isin([0.2, 0.3])]

    def mean_of(design, arrival):
        return platoons[(platoons.design == design) & (platoons.arrival == arrival)].err_ttft_mean

    assert (f"The model is {_span(mean_of('h100', 'poisson'), low=True)} % low on h100 Poisson's mean there (loads 0.2–0.3, 64–128 "
            f"instances), the Lite's {_span(mean_of('lite-h100', 'poisson'), low=True)} %, h100 gamma CV 2's "
            f"{_span(mean_of('h100', 'gamma'), low=True)} % (the Lite's {_span(mean_of('lite-h100', 'gamma'))} %)") in text
    lite = big[(big.design == "lite-h100") & (big.load >= 0.4)]
    assert f"within {_span(lite.err_ttft_mean)} % but the P99 {_span(lite.err_ttft_p99, low=True)} % low" in text
    four = table[table.instances == 4]
    assert f"The mean TTFT is within {_span(four.err_ttft_mean)} % on 4 instances, but the P99 {_span(-four.err_ttft_p99, low=True)} % high" in text
    tpot = table[(table.err_tpot_p99.abs() > fleet.TOLERANCE["tpot_p99"]) | (table.err_tpot_mean.abs() > fleet.TOLERANCE["tpot_mean"])]
    assert sorted(zip(tpot.design, tpot.arrival, tpot.instances, tpot.load)) == [("h100", "poisson", 64, 0.3), ("h100", "poisson", 128, 0.2),
                                                                                   ("h100", "poisson", 128, 0.3)]
    assert f"0.2–0.3 on 128 (mean {_span(tpot.err_tpot_mean, low=True)} % low" in text
    fit = pd.read_csv(docs_script("load/make_fit_table").CSV)
    length = pd.read_csv(docs_script("load/make_length_table").CSV)
    near = pd.read_csv(docs_script("load/near_capacity").CSV)
    static = fit[fit["mode"] == "static"]
    assert (f"The fit table {fit.passes.sum()} of {len(fit)} with it, static {static.passes.sum()} of {len(static)} ({fit.passes.sum() - 2} and 29 without); near "
            f"capacity {near.passes.sum()} of {len(near)} (disaggregated) and the length table {length.passes.sum()} of {len(length)} either way") in text
    both = (length[["err_ttft_p99", "err_tpot_p99"]].abs() <= 0.10).all(axis=1).sum()
    assert (f"Near capacity {near.passes.sum()} of {len(near)} and the length table {length.passes.sum()} of {len(length)} either way, but "
            f"{both} of its cells within on both P99s") in text

def test_the_committed_fast_columns_are_the_fast_model_now(fleet):
    """The table's fast-model columns are what the fast model gives today (to the CSV's six
    significant digits): a change to the model reruns ``fleet_size.py --model-only``."""
    table = pd.read_csv(fleet.CSV)
    for (name, c), part in table.groupby(["design", "instances"]):
        system = fleet.pool_system(name, int(c))
        rate = part.load.to_numpy() * system.capacity_tokens_per_s / system.output_tokens
        fast = fast_latency(system, rate, part.cv.to_numpy(), 0.99)
        np.testing.assert_allclose(1e3 * fast.ttft_q_s, part.fast_ttft_p99_ms, rtol=1e-5, err_msg=f"{name} {c}")
        np.testing.assert_allclose(1e3 * fast.ttft_mean_s, part.fast_ttft_mean_ms, rtol=1e-5, err_msg=f"{name} {c}")


def test_pool_bunching_is_neutral_on_the_reference_pool_and_follows_the_phases_off_it():
    """On :data:`~mcengine.analytic.queue_static.STATIC_GAP_POOL` instances the terms are the fitted
    model's, ``min(1, 1/A)`` and no shift; off it the shift is the independent phases'
    ``(c - 1)/(c + 1) - 15/17`` (4 instances: 3/5 - 15/17 = -24/85), the damping is read at
    the reference pool's ``A 16/c`` and a smaller pool keeps ``c/16`` of the bunching (4
    instances, ``A = 0.1``: ``min(1, 1/0.4) x 1/4 = 1/4``; 64 instances, ``A = 8``: ``min(1,
    1/2) = 1/2``; 128 instances, ``A = 2``: nothing damped)."""
    amplify = np.array([0.5, 3.0, 8.0])
    kept, phases = qs._pool_bunching(16.0, amplify)
    np.testing.assert_array_equal(kept, np.minimum(1.0, 1.0 / amplify))
    assert float(phases) == 0.0
    kept, phases = qs._pool_bunching(4.0, 0.1)
    assert float(kept) == pytest.approx(0.25, rel=1e-12) and float(phases) == pytest.approx(-24.0 / 85.0, rel=1e-12)
    kept, phases = qs._pool_bunching(64.0, 8.0)
    assert float(kept) == pytest.approx(0.5, rel=1e-12) and float(phases) == pytest.approx(63 / 65 - 15 / 17, rel=1e-12)
    assert float(qs._pool_bunching(128.0, 2.0)[0]) == 1.0


def test_one_instance_keeps_the_exponential_cycle():
    """The shift is weighted by ``1 - 1/c``: one instance's bunched gaps stay the
    M/M^[1,inf]/1 chain's exponential cycle (``c_g^2 = 1``)."""
    assert 1.0 / qs.completion_gaps(1.5, 1, 2.0, 2.0, 10**6).shape == pytest.approx(1.0, rel=1e-12)


REPLICATIONS = 6


@pytest.mark.parametrize("name, instances, arrival, cv, load", [
    ("lite-h100", 8, "gamma", 2.0, 0.4),
    ("h100", 8, "gamma", 2.0, 0.5),
    ("h100", 32, "poisson", 1.0, 0.7),
    ("h100", 32, "gamma", 2.0, 0.6),
    pytest.param("h100", 64, "gamma", 2.0, 0.7, marks=pytest.mark.slow),
    pytest.param("h100", 128, "poisson", 1.0, 0.7, marks=pytest.mark.slow),
    pytest.param("lite-h100", 128, "gamma", 2.0, 0.1, marks=pytest.mark.slow),
])
def test_fast_model_within_tolerance_off_sixteen_instances(fleet, name, instances, arrival, cv, load):
    """Cells the fleet-size table passes off the fit table's pool: :data:`REPLICATIONS`
    independent replications (fixed seed) of 1,500 requests an instance (at least 12,000),
    the first 20 % left out; the fast model within 10 % of the replications' mean P99s and 5 %
    of their mean means, widened by 4 standard errors of those means."""
    system = fleet.pool_system(name, instances)
    rate = load * system.capacity_tokens_per_s / system.output_tokens
    sim, sem = replicated(system, rate, max(12_000, 1_500 * instances), REPLICATIONS, 11, 0.2, arrival, cv)
    assert_fits(system, rate, cv, sim, sem)
