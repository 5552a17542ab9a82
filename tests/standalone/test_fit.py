"""The chain's fast queueing model against the request-level simulator (docs/load.md#modes):
the committed validation table is the page's, and a few cells re-simulated here with
replications whose standard error sets the tolerance."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mcengine.scenario import load_scenario
from mcengine.standalone.serve import fast_latency, latency_summary, serve_summary, serving_system, simulate_requests
from tests.docs_scripts import docs_script
from tests.standalone.fit_checks import assert_fits, replicated, statistics


@pytest.fixture(scope="module")
def fit():
    return docs_script("load/make_fit_table")


def test_the_fit_table_on_the_page_is_the_committed_grid(fit):
    """docs/load.md's block is rendered from docs/load/fit-table.csv over the whole grid, and
    each row's verdict is its errors against the tolerances."""
    table = pd.read_csv(fit.CSV)
    assert len(table) == len(fit.DESIGNS) * len(fit.MODES) * len(fit.ARRIVALS) * len(fit.LOADS)
    for k, tol in fit.TOLERANCE.items():
        np.testing.assert_allclose(table[f"err_{k}"], table[f"fast_{k}_ms"] / table[f"sim_{k}_ms"] - 1.0, rtol=1e-4, atol=1e-5)
    within = np.all([table[f"err_{k}"].abs() <= tol for k, tol in fit.TOLERANCE.items()], axis=0)
    np.testing.assert_array_equal(table.passes.to_numpy(), within)
    text = fit.PAGE.read_text()
    assert text[text.index(fit.BEGIN) + len(fit.BEGIN):text.index(fit.END)].strip() == fit.render(table)


def test_the_near_capacity_table_on_the_page_is_the_committed_csv(fit):
    """docs/load.md's near-capacity block is rendered from docs/load/near-capacity.csv: every
    design and mode at the script's loads, Poisson arrivals, each verdict its errors against
    the fit table's tolerances."""
    near = docs_script("load/near_capacity")
    table = pd.read_csv(near.CSV)
    assert sorted(set(table.load)) == list(near.LOADS) and set(table.arrival) == {"poisson"}
    assert len(table) == len(near.LOADS) * len(set(table.design)) * len(set(table["mode"])) == 18
    within = np.all([table[f"err_{k}"].abs() <= tol for k, tol in fit.TOLERANCE.items()], axis=0)
    np.testing.assert_array_equal(table.passes.to_numpy(), within)
    text = near.PAGE.read_text()
    assert text[text.index(near.BEGIN) + len(near.BEGIN):text.index(near.END)].strip() == near.render(table)


def test_the_pages_prose_quotes_the_committed_tables(fit):
    """The sentences of docs/load.md that count the fit table's and the near-capacity
    table's passing cells, or quote their errors, are recomputed from the two csv files:
    a regenerated table that moves one fails here until the prose is rewritten."""
    table, near = pd.read_csv(fit.CSV), pd.read_csv(docs_script("load/near_capacity").CSV)
    page = " ".join(fit.PAGE.read_text().split())

    def passed(t, **at):
        for key, value in at.items():
            t = t[t[key] == value]
        return int(t.passes.sum())

    def pct(x):  # an error's size in whole per cent, as the page writes it
        return f"{abs(100 * x):.0f}"

    by_mode = {m: passed(table, mode=m) for m in ("static", "continuous", "disaggregated")}
    cont = {(d, a): passed(table, mode="continuous", design=d, arrival=a) for d in ("h100", "lite-h100") for a in ("poisson", "gamma")}
    static = {d: passed(table, mode="static", design=d) for d in ("h100", "lite-h100")}
    nc = near[near["mode"] == "continuous"]
    at = {x: nc[np.isclose(nc.load, x)] for x in (0.95, 0.98, 0.99)}
    late = pd.concat([at[0.98], at[0.99]])
    tpot = all((table[f"err_{k}"].abs() <= fit.TOLERANCE[k]).all() for k in ("tpot_p99", "tpot_mean"))
    quoted = [
        f"{int(table.passes.sum())} of {len(table)} cells within the tolerance.",
        f"the grid passes {int(table.passes.sum())} of {len(table)} cells: static {by_mode['static']}, continuous {by_mode['continuous']}",
        f"disaggregated {by_mode['disaggregated']} (the table above)",
        f"**Disaggregated** passes {by_mode['disaggregated']} of 36 cells (the Lite's {passed(table, mode='disaggregated', design='lite-h100')} of 18",
        f"**Continuous** passes {by_mode['continuous']} of 36 with the refills' smoothing",
        f"h100 Poisson {cont['h100', 'poisson']} of 9, h100 gamma {cont['h100', 'gamma']}, the Lite Poisson {cont['lite-h100', 'poisson']}, "
        f"the Lite gamma {cont['lite-h100', 'gamma']}; what follows",
        f"continuous mode passes **{by_mode['continuous']} of 36** cells (22 before",
        f"**Static** passes {by_mode['static']} of 36",
        f"h100 {static['h100']} of 18, the Lite {static['lite-h100']} of 18.",
        f"{int(near.passes.sum())} of {len(near)} cells within the fit table's tolerance.",
        f"{passed(near, mode='static')} of the 6 within tolerance",
        f"{pct(at[0.95].err_ttft_p99.max())}–{pct(at[0.95].err_ttft_p99.min())} % low at 0.95, "
        f"{pct(late.err_ttft_p99.max())}–{pct(late.err_ttft_p99.min())} % at 0.98–0.99, and the mean "
        f"{pct(late.err_ttft_mean.max())}–{pct(late.err_ttft_mean.min())} % low at 0.98–0.99",
    ]
    for text in quoted:
        assert text in page, text
    assert tpot and "in all 108 cells" in page and len(table) == 108


REPLICATIONS = 6


@pytest.mark.parametrize("name, mode, arrival, cv, load, requests", [
    ("h100", "disaggregated", "poisson", 1.0, 0.5, 12_000),
    ("h100", "disaggregated", "poisson", 1.0, 0.8, 12_000),
    ("h100", "disaggregated", "gamma", 2.0, 0.2, 12_000),
    ("lite-h100", "disaggregated", "gamma", 2.0, 0.5, 12_000),
    ("lite-h100", "continuous", "poisson", 1.0, 0.2, 12_000),
    ("h100", "continuous", "poisson", 1.0, 0.1, 12_000),
    ("h100", "continuous", "poisson", 1.0, 0.3, 12_000),
    ("h100", "static", "poisson", 1.0, 0.1, 12_000),
    ("h100", "static", "poisson", 1.0, 0.5, 12_000),
    ("h100", "static", "poisson", 1.0, 0.7, 12_000),
    ("h100", "static", "gamma", 2.0, 0.6, 12_000),
    ("lite-h100", "static", "poisson", 1.0, 0.5, 12_000),
    ("h100", "static", "poisson", 1.0, 0.9, 12_000),
    ("lite-h100", "static", "poisson", 1.0, 0.9, 12_000),
    ("lite-h100", "static", "gamma", 2.0, 0.8, 12_000),
])
def test_fast_model_within_tolerance_of_replicated_simulations(name, mode, arrival, cv, load, requests):
    """Cells the table passes, on 16 instances: :data:`REPLICATIONS` independent replications
    (fixed seed) of ``requests`` requests; the fast model within 10 % of the replications'
    mean P99s and 5 % of their mean means, widened by 4 standard errors of those means."""
    system = serving_system(load_scenario(name), mode, 16)
    rate = load * system.capacity_tokens_per_s / system.output_tokens
    sim, sem = replicated(system, rate, requests, REPLICATIONS, 11, 0.2, arrival, cv)
    assert_fits(system, rate, cv, sim, sem)


@pytest.mark.slow
@pytest.mark.parametrize("name, cv, load", [("h100", 2.0, 0.9), ("lite-h100", 2.0, 0.9), ("lite-h100", 1.0, 0.95)])
def test_disaggregated_near_the_prefill_pool_capacity(name, cv, load):
    """Cells where a waiting prompt queues behind more than one pass (docs/load.md#disaggregated):
    one run as the fit table's (200,000 requests, seed 0, MSER-5's warm-up left out); the
    fast model within 10 % of its P99s and 5 % of its means, widened by 4 of their standard
    errors by sectioning. Before the queue ahead was modelled the P99 TTFT was 18 %, 21 % and
    39 % low."""
    scenario = load_scenario(name)
    system = serving_system(scenario, "disaggregated", 16)
    body, _ = serve_summary(scenario, load * system.capacity_tokens_per_s, 200_000, 0, "poisson" if cv == 1.0 else "gamma", cv, "disaggregated", 16)
    assert_fits(system, load * system.capacity_tokens_per_s / system.output_tokens, cv, np.array(statistics(body)), np.array(statistics(body, "sem_ms")))


def test_the_near_capacity_model_only_refit_is_idempotent(tmp_path):
    """``near_capacity.py --model-only`` recomputes the committed near-capacity.csv's fast
    columns from the model: the committed CSV is its fixed point (the model's columns are
    the model's now, the simulated ones kept), and a rerun writes the same bytes."""
    near = docs_script("load/near_capacity")
    committed = near.CSV.read_text()
    out = tmp_path / "near.csv"
    near.refit(pd.read_csv(near.CSV)).to_csv(out, index=False, float_format="%.6g")
    assert out.read_text() == committed
    near.refit(pd.read_csv(out)).to_csv(out, index=False, float_format="%.6g")
    assert out.read_text() == committed


def test_near_capacity_refuses_an_unknown_option(capsys):
    near = docs_script("load/near_capacity")
    assert near.main(["--loads", "0.97"]) == 2
    err = capsys.readouterr().err
    assert "--loads" in err and "allowed" in err


def test_a_continuous_instance_reaches_the_roofline_capacity():
    """With the plan's steady chunk as the step's prefill budget the simulated continuous
    instances serve 0.9 of the roofline's capacity when offered it (a greedy 8,192-token
    budget saturated at 0.84 on h100); 4 instances, 15,000 requests."""
    scenario = load_scenario("h100")
    system = serving_system(scenario, "continuous", 4)
    b = system.batch_max
    assert system.chunk_tokens == pytest.approx(b * system.prompt_tokens / system.output_tokens)
    df, busy = simulate_requests(system, 0.9 * system.capacity_tokens_per_s / system.output_tokens, 15_000, seed=3)
    assert latency_summary(df, busy, system, 0.2)["utilisation"] == pytest.approx(0.9, abs=0.02)


def test_the_committed_fast_columns_are_the_fast_model_now(fit):
    """The table's fast-model columns are what the fast model gives today (to the CSV's six
    significant digits): a change to the model regenerates the table."""
    table = pd.read_csv(fit.CSV)
    for (name, mode), part in table.groupby(["design", "mode"]):
        system = serving_system(load_scenario(name), mode, fit.INSTANCES)
        rate = part.load.to_numpy() * system.capacity_tokens_per_s / system.output_tokens
        fast = fast_latency(system, rate, part.cv.to_numpy(), 0.99)
        for k, v in (("ttft_p99", fast.ttft_q_s), ("ttft_mean", fast.ttft_mean_s), ("tpot_p99", fast.tpot_q_s), ("tpot_mean", fast.tpot_mean_s)):
            np.testing.assert_allclose(1e3 * v, part[f"fast_{k}_ms"], rtol=1e-5, err_msg=f"{name} {mode} {k}")


@pytest.mark.parametrize("argv", [["--mode", "continuous,batched"], ["--design", "a100"], ["--loads", "0.5,1.2"], ["--arrival", "poisson,weibull"],
                                  ["--model-only", "--mode", "static"]])
def test_a_part_of_the_grid_outside_it_is_refused(fit, argv, capsys):
    """``--mode``, ``--design``, ``--arrival`` and ``--loads`` take subsets of the grid; anything else exits 2
    naming the option and what is allowed, before a cell is simulated."""
    with pytest.raises(SystemExit) as stop:
        fit.main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert argv[0] in err and "allowed" in err


def test_a_continuous_point_is_the_mean_of_its_runs(fit, monkeypatch):
    """A continuous cell's simulated columns are the mean of :data:`RUNS`'s independent runs
    (seeds 0 ..) and their standard error the runs' spread over the square root of their
    count (docs/load.md#estimates); a given length is one run with its sectioning errors.
    Here three runs of 2,000 requests on 4 instances, checked against serve_summary's own."""
    monkeypatch.setitem(fit.RUNS, "continuous", (2_000, 0.5, 3))
    scenario = load_scenario("h100")
    system = serving_system(scenario, "continuous", 4)
    row = fit.point(scenario, system, 0.5, "poisson", 1.0)
    bodies = [serve_summary(scenario, 0.5 * system.capacity_tokens_per_s, 2_000, s, "poisson", 1.0, "continuous", 4, warmup=0.5)[0] for s in range(3)]
    p99 = np.array([b["ttft_ms"]["p99"] for b in bodies])
    assert row["sim_ttft_p99_ms"] == pytest.approx(p99.mean(), rel=1e-12)
    assert row["sim_ttft_p99_sem_ms"] == pytest.approx(p99.std(ddof=1) / np.sqrt(3), rel=1e-12)
    assert row["sim_tpot_mean_ms"] == pytest.approx(np.mean([b["tpot_ms"]["mean"] for b in bodies]), rel=1e-12)
    one = fit.point(scenario, system, 0.5, "poisson", 1.0, requests=2_000)
    assert one["sim_ttft_p99_ms"] == bodies[0]["ttft_ms"]["p99"] and one["sim_ttft_p99_sem_ms"] == bodies[0]["ttft_sem_ms"]["p99"]
