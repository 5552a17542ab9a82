"""The per-trial choice under a demand (docs/load.md#planner): of the plans that meet both
SLO quantiles under the load, the one of least cost per served token.

Every candidate of a :class:`~.planner.CandidateTable` that serves at saturation (it fits
and meets the TPOT SLO, which its full batch bounds at any occupancy, and the unloaded
TTFT SLO) is a queue of ``B`` slots with saturated rate ``T``, holding time ``tau = B O /
T`` and unloaded TTFT ``t0`` (:mod:`mcengine.analytic.queueing`). With ``A`` the served
availability, ``D`` the mean demand, ``P`` its peak and ``k`` the trial's power weight
(:func:`~.planner.objective`: the GPUs' dynamic energy at full load over every other cost
of the cluster):

* a fixed cluster of ``I`` instances: the plan meets the SLOs at the peak when
  ``rho = P / (T I A) < 1`` and its TTFT quantile at ``rho`` is within the SLO; every such
  plan serves the whole demand, so the least cost per served token is the least
  ``1 + k u rho_mean``, ``u`` its busy fraction and ``rho_mean = D / (T I A)``: the least
  dynamic energy per token (on a tie, as with ``gpu.idle_w`` unset, the most tokens/s).
  The TTFT quantile is evaluated only where it decides: a plan
  whose unloaded TTFT misses the SLO never meets it, one whose TTFT with Erlang C taken
  as 1 (the wait's upper bound) meets it always, and a plan whose cost is above that of
  a sure one cannot win;
* a fleet bought per trial (``cluster.instances = "auto"``): ``P / (rho_slo T)`` up
  instances, ``rho_slo`` the utilisation at which its TTFT quantile meets the SLO, at the
  cost per instance of the simulated cluster, plus the dynamic energy of the tokens
  (``k u D / (T A)`` instances' worth), over the demand: the least
  ``P / (rho_slo T) + k u D / (T A)``. ``rho_slo`` is bracketed per plan (below by the
  Erlang C = 1 bound, above by 1) and narrowed, by a bisection on the trial's least cost,
  only while the plan's cost interval overlaps the best plan's; the whole-instance rounding and the failure headroom
  (:func:`mcengine.analytic.queueing.fleet_instances`), under two instances of a fleet
  and the same law for every plan of a trial, are left to the load stage.

``power_weight`` None (``workload.plan_objective = "throughput"``): the most tokens/s among
the plans meeting the SLOs on a fixed cluster, the fewest up instances for a fleet. A
trial where no plan meets them keeps the saturation choice (the load stage reports how far
it falls short). Run time: a handful of arithmetic passes over the table and Erlang C only
where it decides; the bisection at most :data:`~mcengine.analytic.queueing.BISECTION_STEPS`
steps, never more with the demand.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...analytic import queueing as qu
from ...units import MS_PER_S


#: Relative width of a plan's cost interval below which the fleet's choice stops bisecting
#: it (plans left within it of one cost are equal to the choice: the first wins).
COST_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Demand:
    """What the choice reads of the load (per trial, shape (n,) or scalars): the mean
    ``demand`` and ``peak_to_mean`` (output tokens/s), the SLO ``quantile``, the TTFT SLO
    (``ttft_slo_ms``), the arrival and service CVs, the served ``availability`` of the
    reliability stage and the fixed ``instances`` (None: a fleet bought per trial)."""

    demand: np.ndarray
    peak_to_mean: np.ndarray
    quantile: np.ndarray
    ttft_slo_ms: np.ndarray
    arrival_cv: np.ndarray
    service_cv: np.ndarray
    availability: np.ndarray
    instances: float | None


def choose(table, power_weight, demand: Demand, output_tokens, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(best, met)`` per trial: the row of ``table`` of least cost per served token among
    those meeting both SLO quantiles under ``demand`` (module docstring; the first such
    row on a tie) and whether any does."""
    served = table.served
    serving = np.isfinite(served)
    tokens = np.where(serving, served, 1.0)
    batch = table.stacked(5).astype(float)
    ttft0 = table.stacked(4) * MS_PER_S

    def trial(x):
        return np.broadcast_to(np.asarray(x, float), (n,))[None, :]

    slo, q, ca, cs, avail = (trial(x) for x in (demand.ttft_slo_ms, demand.quantile, demand.arrival_cv, demand.service_cv, demand.availability))
    mean = trial(demand.demand)
    peak = mean * trial(demand.peak_to_mean)
    slot = batch * trial(output_tokens) / tokens
    scale = (ca * ca + cs * cs) / 2.0
    tail = np.log(1.0 / (1.0 - q))  # the wait quantile's log factor with Erlang C = 1
    can = serving & (ttft0 <= slo) & (avail > 0)
    if power_weight is None:
        energy = np.zeros(served.shape)
    else:  # a block serving no trial keeps no busy fraction: it is never chosen
        busy = np.concatenate([np.zeros(block[0].shape) if block[1] is None else block[1] for block in table.blocks])
        energy = trial(power_weight) * busy * mean / (tokens * avail)
    if demand.instances is None:
        best, met = _fleet_choice(can, tokens, ttft0, batch, slot, slo, q, ca, cs, scale, tail, peak, energy)
    else:
        rho = peak / (tokens * demand.instances * avail)
        can &= rho < 1.0
        with np.errstate(divide="ignore"):
            sure = can & (ttft0 + MS_PER_S * scale * slot / (batch * (1.0 - rho)) * tail <= slo)
        value = -tokens if power_weight is None else energy / demand.instances
        best_sure = np.where(sure, value, np.inf).min(axis=0)
        check = np.nonzero(can & ~sure & (value <= best_sure[None, :]))
        ok = sure.copy()
        cols = check[1]
        ok[check] = qu.ttft_quantile_ms(q[0, cols], ttft0[check], batch[check], slot[check], rho[check], ca[0, cols],
                                        np.broadcast_to(cs, (1, n))[0, cols]) <= slo[0, cols]
        ranked = np.where(ok, value, np.inf)
        least = ranked.min(axis=0)
        best, met = np.argmax(np.where(ranked == least[None, :], tokens, -np.inf), axis=0), np.isfinite(least)
    return best.astype(np.int64), met


def _fleet_choice(can, tokens, ttft0, batch, slot, slo, q, ca, cs, scale, tail, peak, energy) -> tuple[np.ndarray, np.ndarray]:
    """The fleet's choice (module docstring): per plan and trial a bracket ``[lo, hi]`` of
    ``rho_slo`` gives a cost interval ``[P / (hi T), P / (lo T)] + e``; per trial the least
    cost lies between the least lower end and the least upper end, and each step probes
    every plan still in play at the utilisation that would cost their middle (one TTFT
    quantile each), which halves that gap, and drops the plans whose lower end is above
    the least upper end. It stops when one plan is left in a trial or the gap is below
    :data:`COST_TOLERANCE`; the plan of least cost at its bracket's middle wins (the
    plans kept in trial order, each trial's least by one ``reduceat``)."""
    n = can.shape[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = np.where(can, np.clip(1.0 - MS_PER_S * scale * (slot / batch) * tail / (slo - ttft0), 0.0, 1.0), 0.0)
        up = peak / tokens
        upper = np.where(lo > 0, up / lo + energy, np.inf)
    cols, rows = np.nonzero(np.ascontiguousarray((can & (up + energy <= upper.min(axis=0)[None, :])).T))  # grouped by trial
    lo, hi, up, e = lo[rows, cols], np.ones(rows.size), up[rows, cols], energy[rows, cols]
    for _ in range(qu.BISECTION_STEPS + 1):
        if cols.size == 0:
            break
        with np.errstate(divide="ignore"):
            upper = np.where(lo > 0, up / lo + e, np.inf)
        lower = up / hi + e
        starts = np.flatnonzero(np.r_[True, cols[1:] != cols[:-1]])
        sizes = np.diff(np.r_[starts, cols.size])
        least_up, least_low = np.minimum.reduceat(upper, starts), np.minimum.reduceat(lower, starts)
        keep = lower <= np.repeat(least_up, sizes)
        rows, cols, lo, hi, up, e = rows[keep], cols[keep], lo[keep], hi[keep], up[keep], e[keep]
        starts = np.flatnonzero(np.r_[True, cols[1:] != cols[:-1]])
        sizes = np.diff(np.r_[starts, cols.size])
        open_ = (sizes > 1) & ~(least_up - least_low <= COST_TOLERANCE * least_low)
        if not open_.any():
            break
        target = np.where(np.isfinite(least_up), 0.5 * (least_low + least_up), 2.0 * least_low)
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = np.repeat(target, sizes) - e
            rho = np.where(rho > 0, up / rho, np.inf)
        probe = np.flatnonzero(np.repeat(open_, sizes) & (rho > lo) & (rho < hi))
        r, k = rows[probe], cols[probe]
        ok = qu.ttft_quantile_ms(q[0, k], ttft0[r, k], batch[r, k], slot[r, k], rho[probe], np.broadcast_to(ca, (1, n))[0, k],
                                 np.broadcast_to(cs, (1, n))[0, k]) <= slo[0, k]
        lo[probe], hi[probe] = np.where(ok, rho[probe], lo[probe]), np.where(ok, hi[probe], rho[probe])
    with np.errstate(divide="ignore"):
        cost = up / (0.5 * (lo + hi)) + e
    first = np.lexsort((rows, cost, cols))  # by trial, then cost, then row: each trial's first is its choice
    first = first[np.r_[True, cols[first][1:] != cols[first][:-1]]] if cols.size else first
    best, met = np.zeros(n, np.int64), np.zeros(n, bool)
    best[cols[first]], met[cols[first]] = rows[first], np.isfinite(cost[first])
    return best, met
