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
trial of a fixed cluster where no plan meets them at the peak takes the plan of most
goodput (:func:`most_goodput`: the largest capacity at SLO; the load stage reports the
share of the day the SLO quantile holds, ``load.slo_attainment``, and the goodput); one
where no plan serves within the SLOs at all keeps the saturation choice. Run time: a handful of arithmetic passes over the table and Erlang C only
where it decides; the bisection at most :data:`~mcengine.analytic.queueing.BISECTION_STEPS`
steps, never more with the demand.
"""

from __future__ import annotations

import functools

from dataclasses import dataclass

import numpy as np

from ...analytic import queueing as qu
from ...scenario.sampling import per_trial
from ...units import MS_PER_S


#: Relative width of a plan's cost interval below which the fleet's choice stops bisecting
#: it (plans left within it of one cost are equal to the choice: the first wins).
COST_TOLERANCE = 1e-6


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
    row on a tie) and whether any does. The plans that can meet them (they serve, their
    unloaded TTFT meets the SLO and, on a fixed cluster, the peak is below their
    saturated rate) are taken out of the table once, grouped by trial, and worked on as
    flat arrays."""
    trial = functools.partial(per_trial, n=n)
    slo, q, ca, cs, avail = (trial(x) for x in (demand.ttft_slo_ms, demand.quantile, demand.arrival_cv, demand.service_cv, demand.availability))
    mean = trial(demand.demand)
    peak = mean * trial(demand.peak_to_mean)
    flat = _flat(table, n)
    if flat is None:
        return np.zeros(n, np.int64), np.zeros(n, bool)
    table_rows, stacked = flat
    served, ttft0 = stacked(0), stacked(4) * MS_PER_S
    with np.errstate(divide="ignore", invalid="ignore"):
        floor = np.zeros(n) if demand.instances is None else peak / (demand.instances * avail)  # rho < 1 on a fixed cluster
    mask = (served > floor[None, :]) & (ttft0 <= slo[None, :]) & (avail > 0)[None, :]
    weight = np.zeros(n) if power_weight is None else trial(power_weight) * mean / np.where(avail > 0, avail, 1.0)
    if demand.instances is None:  # a plan dearer at rho_slo = 1 than another is with Erlang C = 1 cannot win: dropped at once
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = np.where(mask, 1.0 / served, np.inf)
            up, e = peak[None, :] * inv, weight[None, :] * (0.0 if power_weight is None else stacked(1)) * np.where(mask, inv, 0.0)
            per_slot = trial(output_tokens)[None, :] * inv  # tau / B = O / T
            lo = qu.utilisation_sure(q[None, :], slo[None, :], ttft0, 1.0, per_slot, ca[None, :], cs[None, :])
            mask &= up + e <= np.where(mask & (lo > 0), up / lo + e, np.inf).min(axis=0)[None, :]
    cols, rows = np.nonzero(np.ascontiguousarray(mask.T))  # grouped by trial, rows ascending within it
    tokens, t0, batch = served[rows, cols], ttft0[rows, cols], stacked(5)[rows, cols].astype(float)
    if power_weight is None:
        energy = np.zeros(rows.size)
    else:  # the dynamic energy of the demand, in units of the cost of the instances
        energy = weight[cols] * stacked(1)[rows, cols] / tokens
    plans = Plans(table_rows[rows], cols, tokens, t0, batch, batch * trial(output_tokens)[cols] / tokens, energy, Trials(slo, q, ca, cs))
    if demand.instances is None:
        return _fleet_choice(plans, peak[cols], n)
    return _fixed_choice(plans, peak[cols] / (tokens * demand.instances * avail[cols]), demand.instances, power_weight is None, n)


def _flat(table, n: int):
    """``(rows, stacked)``: the table's rows in the blocks that serve some trial (a block of
    busy None serves none), and ``stacked(field)`` their (rows, n) array of one field; None
    where no block serves."""
    sizes = [block[0].shape[0] for block in table.blocks]
    live = [i for i, block in enumerate(table.blocks) if block[1] is not None]
    if not live:
        return None
    starts = np.cumsum([0, *sizes])

    def stacked(field: int) -> np.ndarray:
        return np.concatenate([np.broadcast_to(table.blocks[i][field], (sizes[i], n)) for i in live])

    return np.concatenate([np.arange(starts[i], starts[i + 1]) for i in live]), stacked


def most_goodput(table, demand: Demand, output_tokens, among: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(best, found)`` per trial of ``among`` (a boolean (n,) mask; the trials of a fixed
    cluster where no plan meets the SLOs at the peak): the row of ``table`` of most goodput,
    the largest capacity at SLO ``rho_slo T`` (the goodput ``E[min(D(t), rho_slo T I A)]``
    rises with it, :func:`mcengine.analytic.queueing.served_mean`; ``rho_slo`` by
    :func:`~mcengine.analytic.queueing.utilisation_at_slo`; the first such row on a tie),
    and whether that capacity is above 0 (a plan serving within the TPOT SLO whose unloaded
    TTFT meets its SLO)."""
    n = among.size
    best, found = np.zeros(n, np.int64), np.zeros(n, bool)
    flat = _flat(table, n)
    if flat is None or not among.any():
        return best, found
    table_rows, stacked = flat
    trial = functools.partial(per_trial, n=n)
    slo, avail = trial(demand.ttft_slo_ms), trial(demand.availability)
    served, ttft0 = stacked(0), stacked(4) * MS_PER_S
    ok = (served > 0) & (ttft0 <= slo[None, :]) & (among & (avail > 0))[None, :]
    cols, rows = np.nonzero(np.ascontiguousarray(ok.T))  # grouped by trial, rows ascending within it
    if cols.size == 0:
        return best, found
    tokens, batch = served[rows, cols], stacked(5)[rows, cols].astype(float)
    plans = Plans(rows, cols, tokens, ttft0[rows, cols], batch, qu.slot_time_s(batch, trial(output_tokens)[cols], tokens), np.zeros(rows.size),
                  Trials(slo, trial(demand.quantile), trial(demand.arrival_cv), trial(demand.service_cv)))

    def capacity_of(p: Plans) -> np.ndarray:
        return qu.utilisation_at_slo(p.trials.q[p.cols], p.slo, p.ttft0, p.batch, p.slot, p.trials.ca[p.cols], p.trials.cs[p.cols]) * p.tokens

    # a plan whose T is below another's capacity at SLO cannot win: the capacity of each
    # trial's plan of most capacity with Erlang C = 1 screens the others
    sure = np.clip(plans.sure_utilisation(), 0.0, 1.0) * tokens
    starts, sizes = _segments(cols)
    lead = _firsts(np.arange(cols.size), cols, sure == np.repeat(np.maximum.reduceat(sure, starts), sizes), n)[0][np.unique(cols)]
    floor = np.zeros(n)
    floor[cols[lead]] = capacity_of(plans.take(lead))
    plans = plans.take(tokens >= floor[cols])
    capacity = capacity_of(plans)
    rows, cols = plans.rows, plans.cols
    starts, sizes = _segments(cols)
    most = np.repeat(np.maximum.reduceat(capacity, starts), sizes)
    return _firsts(table_rows[rows], cols, (capacity == most) & (capacity > 0), n)


@dataclass(frozen=True)
class Trials:
    """Per trial (shape (n,)): the TTFT SLO (ms), the SLO quantile, the arrival and service CVs."""

    slo: np.ndarray
    q: np.ndarray
    ca: np.ndarray
    cs: np.ndarray

    def tail(self) -> np.ndarray:
        """``ln(1 / (1 - q))``: the wait quantile over Allen-Cunneen's scale
        (:func:`~mcengine.analytic.queueing.wait_scale_s`) with Erlang C taken as 1."""
        return np.log(1.0 / (1.0 - self.q))


@dataclass(frozen=True)
class Plans:
    """The plans that can meet the SLOs, flat and grouped by trial (``cols``, ascending;
    ``rows`` the table's rows): saturated tokens/s, unloaded TTFT (ms), batch, slot time
    (s), the plan's dynamic energy term, and the ``trials``' SLO terms."""

    rows: np.ndarray
    cols: np.ndarray
    tokens: np.ndarray
    ttft0: np.ndarray
    batch: np.ndarray
    slot: np.ndarray
    energy: np.ndarray
    trials: Trials

    def take(self, keep) -> "Plans":
        return Plans(*(getattr(self, f)[keep] for f in self.__dataclass_fields__ if f != "trials"), self.trials)

    @property
    def slo(self) -> np.ndarray:
        return self.trials.slo[self.cols]

    def ttft_ms(self, rho, which) -> np.ndarray:
        """The TTFT quantile of plans ``which`` at utilisations ``rho`` (:func:`~mcengine.analytic.queueing.ttft_quantile_ms`)."""
        k, t = self.cols[which], self.trials
        return qu.ttft_quantile_ms(t.q[k], self.ttft0[which], self.batch[which], self.slot[which], rho, t.ca[k], t.cs[k])

    def sure_utilisation(self) -> np.ndarray:
        """The utilisation up to which the SLO surely holds (:func:`~mcengine.analytic.queueing.utilisation_sure`)."""
        k, t = self.cols, self.trials
        return qu.utilisation_sure(t.q[k], self.slo, self.ttft0, self.batch, self.slot, t.ca[k], t.cs[k])

    def sure_bound(self, rho) -> np.ndarray:
        """The TTFT quantile at utilisations ``rho`` with Erlang C taken as 1, an upper bound
        (ms): ``ln(1 / (1 - q))`` Allen-Cunneen scales (:func:`~mcengine.analytic.queueing.wait_scale_s`)."""
        k, t = self.cols, self.trials
        return self.ttft0 + MS_PER_S * t.tail()[k] * qu.wait_scale_s(self.batch, self.slot, rho, t.ca[k], t.cs[k])


def _segments(cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starts and sizes of the runs of equal trial in ``cols`` (grouped)."""
    starts = np.flatnonzero(np.r_[True, cols[1:] != cols[:-1]])
    return starts, np.diff(np.r_[starts, cols.size])


def _firsts(rows, cols, pick, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per trial the first row (table order) where ``pick``; ``met`` where there is one."""
    idx = np.flatnonzero(pick)
    idx = idx[np.r_[True, cols[idx][1:] != cols[idx][:-1]]] if idx.size else idx
    best, met = np.zeros(n, np.int64), np.zeros(n, bool)
    best[cols[idx]], met[cols[idx]] = rows[idx], True
    return best, met


def _fixed_choice(p: Plans, rho: np.ndarray, instances: float, by_tokens: bool, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The fixed cluster's choice (module docstring): the plans sure to meet the SLO at
    the peak by the Erlang C = 1 bound, and those not sure whose cost is at most the best
    sure one's, evaluated; the least cost among those meeting it, ties to the most tokens/s."""
    if p.cols.size == 0:
        return np.zeros(n, np.int64), np.zeros(n, bool)
    slo = p.slo
    sure = p.sure_bound(rho) <= slo
    value = -p.tokens if by_tokens else p.energy / instances
    starts, sizes = _segments(p.cols)
    best_sure = np.repeat(np.minimum.reduceat(np.where(sure, value, np.inf), starts), sizes)
    ok = sure.copy()
    check = np.flatnonzero(~sure & (value <= best_sure))
    ok[check] = p.ttft_ms(rho[check], check) <= slo[check]
    ranked = np.where(ok, value, np.inf)
    least = np.repeat(np.minimum.reduceat(ranked, starts), sizes)
    tie = np.isfinite(ranked) & (ranked == least)
    most = np.repeat(np.maximum.reduceat(np.where(tie, p.tokens, -np.inf), starts), sizes)
    return _firsts(p.rows, p.cols, tie & (p.tokens == most), n)


def _fleet_choice(p: Plans, peak: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The fleet's choice (module docstring): per plan and trial a bracket ``[lo, hi]`` of
    ``rho_slo`` gives a cost interval ``[P / (hi T), P / (lo T)] + e``; per trial the least
    cost lies between the least lower end and the least upper end, and each step probes
    every plan still in play at the utilisation that would cost their middle (one TTFT
    quantile each), which halves that gap, and drops the plans whose lower end is above
    the least upper end. It stops when one plan is left in a trial or the gap is below
    :data:`COST_TOLERANCE`; the plan of least cost at its bracket's middle wins."""
    lo = np.clip(p.sure_utilisation(), 0.0, 1.0)
    hi, up = np.ones(lo.size), peak / p.tokens
    for _ in range(qu.BISECTION_STEPS + 1):
        if p.cols.size == 0:
            break
        with np.errstate(divide="ignore"):
            upper = np.where(lo > 0, up / lo + p.energy, np.inf)
        lower = up / hi + p.energy
        starts, sizes = _segments(p.cols)
        least_up, least_low = np.minimum.reduceat(upper, starts), np.minimum.reduceat(lower, starts)
        keep = lower <= np.repeat(least_up, sizes)
        p, lo, hi, up = p.take(keep), lo[keep], hi[keep], up[keep]
        starts, sizes = _segments(p.cols)
        open_ = (sizes > 1) & ~(least_up - least_low <= COST_TOLERANCE * least_low)
        if not open_.any():
            break
        target = np.repeat(np.where(np.isfinite(least_up), 0.5 * (least_low + least_up), 2.0 * least_low), sizes)
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = np.where(target > p.energy, up / (target - p.energy), np.inf)
        probe = np.flatnonzero(np.repeat(open_, sizes) & (rho > lo) & (rho < hi))
        ok = p.ttft_ms(rho[probe], probe) <= p.slo[probe]
        lo[probe], hi[probe] = np.where(ok, rho[probe], lo[probe]), np.where(ok, hi[probe], rho[probe])
    if p.cols.size == 0:
        return np.zeros(n, np.int64), np.zeros(n, bool)
    with np.errstate(divide="ignore"):
        cost = up / (0.5 * (lo + hi)) + p.energy
    starts, sizes = _segments(p.cols)
    return _firsts(p.rows, p.cols, cost == np.repeat(np.minimum.reduceat(cost, starts), sizes), n)
