"""The fast model against the simulator, as the fit tests check it (docs/load.md#modes):
the four statistics of one cell, their standard errors, and the fit criterion."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mcengine.standalone.serve import fast_latency, latency_summary, simulate_requests

#: The fit criterion per statistic (P99 TTFT, mean TTFT, P99 TPOT, mean TPOT): 10 % on the
#: P99s, 5 % on the means (docs/load/make_fit_table.py's TOLERANCE).
CRITERION = np.array([0.10, 0.05, 0.10, 0.05])


def statistics(summary: dict, key: str = "ms") -> list[float]:
    """P99 TTFT, mean TTFT, P99 TPOT, mean TPOT (ms) of a serve summary (``key`` "sem_ms":
    their standard errors)."""
    return [summary[f"ttft_{key}"]["p99"], summary[f"ttft_{key}"]["mean"], summary[f"tpot_{key}"]["p99"], summary[f"tpot_{key}"]["mean"]]


def replicated(system, rate, requests: int, replications: int, seed: int, warmup, arrival: str, cv: float) -> tuple[np.ndarray, np.ndarray]:
    """The statistics' mean over ``replications`` independent replications of ``requests``
    requests and the standard error of that mean (the replications' spread)."""
    stats = []
    for rep in range(replications):
        df, busy = simulate_requests(system, rate, requests, seed=seed, replication=rep, arrival=arrival, arrival_cv=cv)
        stats.append(statistics(latency_summary(df, busy, system, warmup)))
    stats = np.array(stats)
    return stats.mean(axis=0), stats.std(axis=0, ddof=1) / np.sqrt(replications)


def assert_fits(system, rate, cv: float, sim: np.ndarray, sem: np.ndarray) -> None:
    """The fast model at ``rate`` requests/s within the criterion of ``sim``, widened by 4
    standard errors ``sem``."""
    fast = fast_latency(system, rate, cv, 0.99)
    model = 1e3 * np.array([fast.ttft_q_s, fast.ttft_mean_s, fast.tpot_q_s, fast.tpot_mean_s], float)
    assert np.all(np.abs(model - sim) <= CRITERION * sim + 4.0 * sem), (model, sim, sem)


def assert_block_is_committed_and_model(table, system_of) -> pd.DataFrame:
    """A docs table script's page block (``table.PAGE`` between ``table.BEGIN`` and
    ``table.END``) is ``table.render`` of its committed CSV (``table.CSV``), and the CSV's
    fast-model columns, their errors and passes are the model's now (``table.refit`` with
    ``system_of(row)``, each row's serving system, to 1e-5). Returns the committed table."""
    committed = pd.read_csv(table.CSV)
    page = table.PAGE.read_text()
    assert page[page.index(table.BEGIN) + len(table.BEGIN):page.index(table.END)].strip() == table.render(committed)
    fresh = table.refit(committed, system_of)
    for k in ("ttft_p99", "ttft_mean", "tpot_p99", "tpot_mean"):
        np.testing.assert_allclose(fresh[f"fast_{k}_ms"], committed[f"fast_{k}_ms"], rtol=1e-5)
        np.testing.assert_allclose(fresh[f"err_{k}"], committed[f"err_{k}"], rtol=1e-5, atol=1e-5)
    assert (fresh.passes == committed.passes).all()
    return committed
