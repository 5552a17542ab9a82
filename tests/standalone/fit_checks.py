"""The fast model against the simulator, as the fit tests check it (docs/load.md#modes):
the four statistics of one cell, their standard errors, and the fit criterion."""

from __future__ import annotations

import numpy as np

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
