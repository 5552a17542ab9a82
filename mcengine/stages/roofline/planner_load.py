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

from .. import load
from ...analytic import queueing as qu
from ...scenario.sampling import per_trial
from ...units import MS_PER_S
from .load_steps import TERMS


@dataclass(frozen=True)
class Demand:
    """What the choice reads of the load (per trial, shape (n,) or scalars): the mean
    ``demand`` and ``peak_to_mean`` (output tokens/s), the SLO ``quantile``, the TTFT SLO
    (``ttft_slo_ms``), the arrival and service CVs, the served ``availability`` of the
    reliability stage, the fixed ``instances`` (None: a fleet bought per trial), the TPOT
    SLO (``tpot_slo_ms``) and the static mode's completion-gap CV² (``gap_cv2``,
    ``workload.load.static_gap_cv2``)."""

    demand: np.ndarray
    peak_to_mean: np.ndarray
    quantile: np.ndarray
    ttft_slo_ms: np.ndarray
    arrival_cv: np.ndarray
    service_cv: np.ndarray
    availability: np.ndarray
    instances: float | None
    tpot_slo_ms: np.ndarray
    gap_cv2: np.ndarray


def choose(table, power_weight, demand: Demand, output_tokens, n: int, steps_of) -> tuple[np.ndarray, np.ndarray]:
    """``(best, met)`` per trial: the row of ``table`` of least cost per served token among
    those meeting both SLO quantiles under ``demand`` in the per-mode model (module
    docstring; the first such row on a tie) and whether any does. ``steps_of(k)``: the
    step times of the table's row ``k`` for every trial (:func:`.load_steps.plan_steps`'
    terms), asked only for the rows the screen evaluates. The plans that serve (they fit,
    meet the TPOT SLO at the full batch and the TTFT SLO unloaded and, on a fixed cluster,
    the peak is below their saturated rate) are taken out of the table once, grouped by
    trial, and worked on as flat arrays."""
    trial = functools.partial(per_trial, n=n)
    slo, avail = trial(demand.ttft_slo_ms), trial(demand.availability)
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
    cols, rows = np.nonzero(np.ascontiguousarray(mask.T))  # grouped by trial, rows ascending within it
    tokens = served[rows, cols]
    if power_weight is None:
        energy = np.zeros(rows.size)
    else:  # the dynamic energy of the demand, in units of the cost of an instance
        weight = trial(power_weight) * mean / np.where(avail > 0, avail, 1.0)
        energy = weight[cols] * stacked(1)[rows, cols] / tokens
    model = Model(steps_of, demand, trial(output_tokens), n)
    if demand.instances is None:
        return _fleet_choice(table_rows[rows], cols, tokens, energy, peak, model, n)
    value = -tokens if power_weight is None else energy / demand.instances
    with np.errstate(divide="ignore"):
        carried = peak / avail  # the peak the up instances carry
    return _fixed_choice(table_rows[rows], cols, tokens, value, carried, model, n)


class Model:
    """The load stage's per-mode model (:class:`mcengine.stages.load.Plans`, the one
    docs/load.md#chain validates) of candidate plans: ``(row, trial)`` pairs, each
    read from its row's step times (``steps_of``) at its trial."""

    def __init__(self, steps_of, demand: Demand, output_tokens: np.ndarray, n: int):
        trial = functools.partial(per_trial, n=n)
        self.steps_of, self.output_tokens = steps_of, output_tokens
        self.q, self.ca = trial(demand.quantile), trial(demand.arrival_cv)
        self.ttft_slo_s, self.tpot_slo_s = trial(demand.ttft_slo_ms) / MS_PER_S, trial(demand.tpot_slo_ms) / MS_PER_S
        self.gap_cv2, self.instances = trial(demand.gap_cv2), demand.instances

    def plans(self, rows: np.ndarray, cols: np.ndarray) -> load.Plans:
        """The per-mode model of table rows ``rows`` at trials ``cols`` (pairs)."""
        steps = {name: np.empty(rows.size) for name in TERMS}
        for k in np.unique(rows):
            at = np.flatnonzero(rows == k)
            for name, values in self.steps_of(int(k)).items():
                steps[name][at] = values[cols[at]]
        steps["gap_cv2"] = self.gap_cv2[cols]
        return load.Plans(steps, self.q[cols], self.ttft_slo_s[cols], self.tpot_slo_s[cols], self.ca[cols], self.output_tokens[cols])


def _ranked(cols: np.ndarray, *keys) -> tuple[np.ndarray, np.ndarray]:
    """``(order, place)``: the pairs sorted by trial then by ``keys`` (the first the most
    significant; the last, the table row, breaks every tie) and each sorted pair's place
    within its trial."""
    order = np.lexsort((*reversed(keys), cols))
    starts, sizes = _segments(cols[order])
    return order, np.arange(order.size) - np.repeat(starts, sizes)


def _fixed_choice(rows, cols, tokens, value, rate_tokens, model: Model, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The fixed cluster's choice (module docstring): each trial's plans in order of cost
    (``value``; ties to the most tokens/s, then the first row), evaluated in that order by
    the per-mode model at the peak (``rate_tokens`` output tokens/s the up instances carry)
    in rounds of 1, 2, 4, ... plans per trial, until one meets both SLOs: the first that does."""
    best, met = np.zeros(n, np.int64), np.zeros(n, bool)
    order, place = _ranked(cols, value, -tokens, rows)
    rows, cols, tokens = rows[order], cols[order], tokens[order]
    start, width = 0, 1
    while start < place.size and not met[cols].all():
        pick = np.flatnonzero((place >= start) & (place < start + width) & ~met[cols])
        if pick.size == 0:
            break
        ok = model.plans(rows[pick], cols[pick]).misses(rate_tokens[cols[pick]] / model.output_tokens[cols[pick]], model.instances) <= 0.0
        first = _firsts(rows[pick], cols[pick], ok, n)
        best, met = np.where(first[1], first[0], best), met | first[1]
        start, width = start + width, 2 * width
    return best, met
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

    def sure_utilisation(self) -> np.ndarray:
        """The utilisation up to which the SLO surely holds (:func:`~mcengine.analytic.queueing.utilisation_sure`)."""
        k, t = self.cols, self.trials
        return qu.utilisation_sure(t.q[k], self.slo, self.ttft0, self.batch, self.slot, t.ca[k], t.cs[k])


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


def _fleet_choice(rows, cols, tokens, energy, peak, model: Model, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The fleet's choice (module docstring): a plan's cost is ``U + e``, ``U`` the fewest up
    instances on which its per-mode model meets both SLO quantiles at the peak
    (:func:`mcengine.stages.load.fewest_instances`, the load stage's own search) and ``e``
    its dynamic energy; ``U`` is at least the instances the peak saturates,
    ``ceil(P / T)``, so ``ceil(P / T) + e`` bounds the cost from below. Each trial's plans
    are taken in order of that bound, in rounds of 1, 2, 4, ... plans, while the bound is
    at most the least cost found; the least cost wins (the first row on a tie)."""
    o = model.output_tokens[cols]
    rate, per_instance = peak[cols] / o, tokens / o
    bound = np.maximum(np.ceil(rate / per_instance), 1.0) + energy
    order, place = _ranked(cols, bound, rows)
    rows, cols, energy, bound, rate, per_instance = (x[order] for x in (rows, cols, energy, bound, rate, per_instance))
    cost, least = np.full(rows.size, np.inf), np.full(n, np.inf)
    start, width = 0, 1
    while True:
        left = (place >= start) & (bound <= least[cols])
        if not left.any():
            break
        pick = np.flatnonzero(left & (place < start + width))
        up = load.fewest_instances(model.plans(rows[pick], cols[pick]), rate[pick], per_instance[pick])
        cost[pick] = np.where(up > 0, up + energy[pick], np.inf)
        np.minimum.at(least, cols[pick], cost[pick])
        start, width = start + width, 2 * width
    tie = np.flatnonzero(np.isfinite(cost) & (cost == least[cols]))
    best = np.full(n, np.iinfo(np.int64).max)
    np.minimum.at(best, cols[tie], rows[tie])
    met = np.isfinite(least)
    return np.where(met, best, 0), met
