"""The per-trial choice under a demand (docs/load.md#planner): of the plans that meet both
SLO quantiles under the load, the one of least cost per served token.

A candidate of a :class:`~.planner.CandidateTable` can meet them only where it serves at
saturation (it fits, meets the TPOT SLO at its full batch and its unloaded TTFT the TTFT
SLO) and, on a fixed cluster, its saturated rate is above the peak. Whether it meets them
under the load is the load stage's per-mode model's answer
(:class:`mcengine.stages.load.Plans`: :func:`~mcengine.analytic.queue_static.static_at_load`,
:func:`~mcengine.analytic.queue_continuous.continuous_at_load`,
:func:`~mcengine.analytic.queue_disaggregated.disaggregated_at_load`, the models docs/load.md#chain
validates against the simulator), fed the candidate's step times at batch 1 and at its
top batch (:func:`.load_steps.candidate_steps`, evaluated only for the rows it is asked
for). With ``T`` a plan's saturated output tokens/s, ``A`` the served availability, ``D``
the mean demand, ``P`` its peak and ``k`` the trial's power weight
(:func:`~.planner.objective`: the GPUs' dynamic energy at full load over every other
cost of the cluster), ``u`` the plan's busy fraction:

* a fixed cluster of ``I`` instances: the plan meets the SLOs when its model on ``I``
  instances meets both quantiles at the peak the up instances carry, ``P / A``, and at
  every rate below it (:func:`mcengine.stages.load.meets_below`: the whole day, trough to
  peak, docs/load.md#peak); every such plan serves the whole demand, so the least cost
  per served token is the least ``1 + k u D / (T I A)``, the least dynamic energy per
  token (on a tie, as with ``gpu.idle_w`` unset, the most tokens/s). Each trial's plans
  are taken in that order and the model is asked of 1, 2, 4, ... of them a round until
  one meets: the first that does wins;
* a fleet bought per trial (``cluster.instances = "auto"``): ``U`` up instances, the
  fewest on which the model meets both quantiles at the peak and every rate below it
  (:func:`mcengine.stages.load.fewest_instances`, the load stage's own search); the fleet
  the plan would buy, ``N'``: ``N = fleet_instances(U)``, ``U`` and the instances down at
  ``cluster.headroom_quantile`` (:func:`mcengine.analytic.queueing.fleet_instances`),
  grown by ``x`` where those ``N`` miss the SLOs at ``P / (A O)`` (the fleet's second test,
  :func:`mcengine.stages.load.serving_fleet`, docs/load.md#peak), at the cost per instance
  of the simulated cluster, plus the dynamic energy of the tokens (``e = k u D / (T A)``
  instances' worth), over the demand: the least ``N' + e``. The headroom steps with ``U``
  (one instance more past some ``U``), so a plan one up instance dearer can buy a fleet two
  dearer: the rank is the fleet's. ``N' >= N >= U >= ceil(P / T)``, the instances the peak
  saturates (``fleet_instances`` never falls as ``U`` grows), so ``ceil(P / T) + e``
  bounds a plan's cost from below (in floats too: ``N' + e >= ceil(P / T) + e``), lifted
  by the headroom every plan of the trial holds at least (:func:`_headroom_floor`): each
  trial's plans are taken in the order of that bound (ties: the first row), 1, 8, 64, ...
  a round, while a plan could still win: its bound below the least cost found, or equal to
  it at a row before the first row of that cost (a tie goes to the first row). A round's
  searches share what they find between model calls: a plan's count settled is a cost
  found (``N'`` asked once its ``U`` is settled), and one whose search has seen ``m``
  instances miss them (so ``U > m``, a cost of at least ``m + 1 + e``, a lower bound of
  ``N' + e`` too) is dropped where that cannot win. The load stage is handed the chosen
  plan's ``U`` and the rates it was searched at, and the fleet ``N'`` its second test
  settled (:class:`FleetSearch`), rather than search and test it again (a mix's class
  likewise: each class's instances hold their own headroom).

``power_weight`` None (``workload.plan_objective = "throughput"``): the most tokens/s among
the plans meeting the SLOs on a fixed cluster, the smallest fleet ``N'`` for a fleet. A
trial of a fixed cluster where no plan meets them at the peak takes the plan of most
goodput (:func:`most_goodput`: the largest capacity at SLO of the per-mode model,
:func:`mcengine.stages.load.capacity_tokens`; the load stage reports the share of the day
the SLO quantiles hold, ``load.slo_attainment``, and the goodput); one where no plan
serves within the SLOs at all keeps the saturation choice. Run time: a handful of
arithmetic passes over the table, and the model only on the plans the order reaches, in
at most ``log2(candidates) + 1`` rounds, each search's steps capped: never more with the
demand.
"""

from __future__ import annotations

import dataclasses
import functools

from dataclasses import dataclass

import numpy as np

from .. import load
from ...analytic import queueing as qu
from ...kernels.plan import fleet_bounds
from ...scenario.sampling import end_to_end, per_trial
from ...units import MS_PER_S
from .load_steps import TERMS

#: How many times more plans a trial's next round of the fleet's screen takes (1, 8, 64,
#: ...): a round's searches drop each other's plans between their model calls (a plan
#: settled on its first count bounds the rest), so a wide round costs little more than a
#: narrow one and saves the rounds' model calls. On a 2,048-trial lite-h100 block of
#: load-diurnal it settles every trial in 2 rounds (6 model calls).
FLEET_GROWTH = 8


@dataclass(frozen=True)
class Demand:
    """What the choice reads of the load (per trial, shape (n,) or scalars): the mean
    ``demand`` and ``peak_to_mean`` (output tokens/s), the SLO ``quantile``, the TTFT SLO
    (``ttft_slo_ms``), the arrival CV, the served ``availability`` of the
    reliability stage, the fixed ``instances`` (None: a fleet bought per trial), the TPOT
    SLO (``tpot_slo_ms``), the static mode's completion-gap CV² (``gap_cv2``,
    ``workload.load.static_gap_cv2``), its cycle excess (``bunch_cycles``, ``bunch_growth``:
    ``workload.load.static_bunch_cycles``, ``.static_bunch_growth``), the lengths' spread (``length_cv``,
    ``workload.load.length_cv``, docs/load.md#length-spread), the continuous mode's births' share of
    the admissions (``refill_births``, ``workload.load.refill_births``, docs/load.md#refill)
    and, for a fleet bought, an instance's probability of being down (``down_probability``,
    1 - the reliability stage's instance availability) and ``cluster.headroom_quantile``
    (``headroom_quantile``): the failure headroom a fleet's ``N`` instances hold, from which
    the fleet's cost counts the instances the second test of docs/load.md#peak adds (None:
    not asked, none counted)."""

    demand: np.ndarray
    peak_to_mean: np.ndarray
    quantile: np.ndarray
    ttft_slo_ms: np.ndarray
    arrival_cv: np.ndarray
    availability: np.ndarray
    instances: float | None
    tpot_slo_ms: np.ndarray
    gap_cv2: np.ndarray
    length_cv: np.ndarray
    bunch_cycles: np.ndarray
    bunch_growth: np.ndarray
    refill_births: np.ndarray
    down_probability: np.ndarray | None = None
    headroom_quantile: np.ndarray | None = None


@dataclass(frozen=True)
class FleetSearch:
    """Per trial (shape (n,)), the fleet search of the plan a fleet's choice took: ``up``
    the fewest up instances (:func:`mcengine.stages.load.fewest_instances`; 0 where the
    trial took none), searched at ``rate_per_s`` requests/s with ``per_instance_rate``
    requests/s an instance saturates; and the fleet's second test of that plan
    (:func:`mcengine.stages.load.serving_fleet`, docs/load.md#peak): the ``fleet`` ``N'`` it
    settled, from the ``tested_fleet`` ``N`` (``fleet_instances(up)``) at
    ``served_rate_per_s`` requests/s, ``P / (A O)`` (all three 0 where the choice asked no
    such test: no headroom law handed, or no finite fleet)."""

    up: np.ndarray
    rate_per_s: np.ndarray
    per_instance_rate: np.ndarray
    fleet: np.ndarray
    tested_fleet: np.ndarray
    served_rate_per_s: np.ndarray

    def arrays(self) -> dict[str, np.ndarray]:
        """Each field's array by its name."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def where(self, keep: np.ndarray) -> "FleetSearch":
        """The search of the trials of ``keep`` (boolean (n,)), none (0) elsewhere."""
        return FleetSearch(**{k: np.where(keep, x, 0.0) for k, x in self.arrays().items()})

    def part(self, a: int, b: int) -> "FleetSearch":
        """The search of trials ``a`` to ``b``."""
        return FleetSearch(**{k: x[a:b] for k, x in self.arrays().items()})


def choose(table, power_weight, demand: Demand, output_tokens, n: int, steps_of) -> tuple[np.ndarray, np.ndarray, FleetSearch | None]:
    """``(best, met, fleet)`` per trial: the row of ``table`` of least cost per served token among
    those meeting both SLO quantiles under ``demand`` in the per-mode model (module
    docstring; the first such row on a tie), whether any does and, for a fleet bought per
    trial, the :class:`FleetSearch` of that row (None on a fixed cluster). ``steps_of(k)``: the
    step times of the table's row ``k`` for every trial (:func:`.load_steps.plan_steps`'
    terms), asked only for the rows the screen evaluates. The plans that serve (they fit,
    meet the TPOT SLO at the full batch and the TTFT SLO unloaded and, on a fixed cluster,
    the peak is below their saturated rate) are taken out of the table once (a fleet's
    screen works on the (rows, trials) arrays, and takes out only the plans its first round
    leaves in play), grouped by trial, and worked on as flat arrays."""
    return choose_jointly([(table, power_weight, demand, output_tokens, n, steps_of)])[0]


def choose_jointly(parts: list[tuple]) -> list[tuple[np.ndarray, np.ndarray, FleetSearch | None]]:
    """:func:`choose` of each part ``(table, power_weight, demand, output_tokens, n,
    steps_of)`` of ``parts`` (a mix's request classes, each planned under its share of the
    demand), in one pass: where the parts' tables hold the same candidate plans and every
    part has a fixed cluster or every part a fleet bought, their trials are laid end to end
    (``n`` columns each of the (rows, trials) arrays; a block serving none of a part's trials
    serves ``-inf`` there) and screened together, each model call answering every part's
    pairs at once. Each trial's choice reads its own trial's plans alone, so each part's is
    :func:`choose`'s to the bit; parts that cannot be joined are chosen one by one."""
    tables, fixed = [p[0] for p in parts], [p[2].instances is not None for p in parts]
    if len(parts) > 1 and (any(t.plans != tables[0].plans for t in tables) or len(set(fixed)) > 1
                           or len({p[1] is None for p in parts}) > 1):
        return [choose_jointly([p])[0] for p in parts]
    ns = [p[4] for p in parts]
    n, starts = sum(ns), np.cumsum([0, *ns])
    joined = functools.partial(end_to_end, parts, ns=ns)  # a field of every part, its trials end to end
    slo, avail = joined(lambda p: p[2].ttft_slo_ms), joined(lambda p: p[2].availability)
    mean = joined(lambda p: p[2].demand)
    peak = mean * joined(lambda p: p[2].peak_to_mean)
    instances = joined(lambda p: p[2].instances) if fixed[0] else None

    def split(best, met, fleet) -> list[tuple]:
        return [(best[a:b], met[a:b], None if fleet is None else fleet.part(a, b)) for a, b in zip(starts[:-1], starts[1:])]

    flat = _flat(tables, ns)
    if flat is None:
        return split(np.zeros(n, np.int64), np.zeros(n, bool), None if fixed[0] else FleetSearch(*np.zeros((len(dataclasses.fields(FleetSearch)), n))))
    table_rows, stacked = flat
    served, ttft0 = stacked(0), stacked(4) * MS_PER_S
    with np.errstate(divide="ignore", invalid="ignore"):
        floor = np.zeros(n) if instances is None else peak / (instances * avail)  # rho < 1 on a fixed cluster
    mask = (served > floor[None, :]) & (ttft0 <= slo[None, :]) & (avail > 0)[None, :]
    # the dynamic energy of the demand, in units of the cost of an instance
    by_tokens = parts[0][1] is None
    weight = None if by_tokens else joined(lambda p: p[1]) * mean / np.where(avail > 0, avail, 1.0)
    model = Model([p[5] for p in parts], starts, [p[2] for p in parts], joined(lambda p: p[3]), ns)
    if instances is None:
        headroom = None if parts[0][2].down_probability is None else (
            load.served_peak_rate(peak, avail, model.output_tokens), joined(lambda p: p[2].down_probability), joined(lambda p: p[2].headroom_quantile))
        return split(*_fleet_choice(table_rows, served, stacked(1), mask, weight, peak, model, n, headroom))
    cols, rows = np.nonzero(np.ascontiguousarray(mask.T))  # grouped by trial, rows ascending within it
    tokens = served[rows, cols]
    energy = np.zeros(rows.size) if weight is None else weight[cols] * stacked(1)[rows, cols] / tokens
    value = -tokens if by_tokens else energy / instances[cols]
    with np.errstate(divide="ignore"):
        carried = peak / avail  # the peak the up instances carry
    return split(*_fixed_choice(table_rows[rows], cols, tokens, value, carried, model, n), None)


class Model:
    """The load stage's per-mode model (:class:`mcengine.stages.load.Plans`, the one
    docs/load.md#chain validates) of candidate plans: ``(row, trial)`` pairs, each
    read from its row's step times at its trial. The trials are parts laid end to end
    (:func:`choose_jointly`; one part for :func:`choose`): part ``i`` holds trials
    ``starts[i]`` to ``starts[i + 1]``, its ``demands[i]`` and its step times
    ``steps_of[i](k)`` (row ``k`` at each of its trials); ``output_tokens`` per trial of
    every part."""

    def __init__(self, steps_of: list, starts: np.ndarray, demands: list[Demand], output_tokens: np.ndarray, ns: list[int]):
        joined = functools.partial(end_to_end, demands, ns=ns)
        self.steps_of, self.starts, self.output_tokens = steps_of, starts, output_tokens
        self.q, self.ca = joined(lambda d: d.quantile), joined(lambda d: d.arrival_cv)
        self.ttft_slo_s, self.tpot_slo_s = joined(lambda d: d.ttft_slo_ms) / MS_PER_S, joined(lambda d: d.tpot_slo_ms) / MS_PER_S
        self.gap_cv2, self.length_cv = joined(lambda d: d.gap_cv2), joined(lambda d: d.length_cv)
        self.bunch_cycles, self.bunch_growth = joined(lambda d: d.bunch_cycles), joined(lambda d: d.bunch_growth)
        self.refill_births = joined(lambda d: d.refill_births)
        self.instances = None if demands[0].instances is None else joined(lambda d: d.instances)

    @classmethod
    def of(cls, steps_of, demand: Demand, output_tokens: np.ndarray, n: int) -> "Model":
        """The model of one part: ``n`` trials under ``demand``."""
        return cls([steps_of], np.array([0, n]), [demand], per_trial(output_tokens, n), [n])

    def plans(self, rows: np.ndarray, cols: np.ndarray) -> load.Plans:
        """The per-mode model of table rows ``rows`` at trials ``cols`` (pairs)."""
        steps = {name: np.empty(rows.size) for name in TERMS}
        part = np.searchsorted(self.starts, cols, side="right") - 1
        for i, steps_of in enumerate(self.steps_of):
            ours = np.flatnonzero(part == i)
            for k in np.unique(rows[ours]):
                at = ours[rows[ours] == k]
                for name, values in steps_of(int(k)).items():
                    steps[name][at] = values[cols[at] - self.starts[i]]
        steps["gap_cv2"], steps["length_cv"] = self.gap_cv2[cols], self.length_cv[cols]
        steps["bunch_cycles"], steps["bunch_growth"] = self.bunch_cycles[cols], self.bunch_growth[cols]
        steps["refill_births"] = self.refill_births[cols]
        return load.Plans(steps, self.q[cols], self.ttft_slo_s[cols], self.tpot_slo_s[cols], self.ca[cols], self.output_tokens[cols])


def _fixed_choice(rows, cols, tokens, value, rate_tokens, model: Model, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The fixed cluster's choice (module docstring): each trial's plans in order of cost
    (``value``; ties to the most tokens/s, then the first row), evaluated in that order by
    the per-mode model at the peak (``rate_tokens`` output tokens/s the up instances carry)
    and every rate below it (:func:`mcengine.stages.load.meets_below`) in rounds of 1, 2,
    4, ... plans per trial, until one meets both SLOs: the first that does."""
    best, met = np.zeros(n, np.int64), np.zeros(n, bool)

    def evaluate(pick):
        rate = rate_tokens[cols[pick]] / model.output_tokens[cols[pick]]
        first = _firsts(rows[pick], cols[pick], load.meets_below(model.plans(rows[pick], cols[pick]), rate, model.instances[cols[pick]]), n)
        best[first[1]], met[first[1]] = first[0][first[1]], True

    _rounds(cols, (value, -tokens), lambda idx: ~met[cols[idx]], evaluate)
    return best, met


def _flat(tables: list, ns: list[int]):
    """``(rows, stacked)``: the rows of the blocks that serve some trial (a block of busy
    None serves none) of the ``tables`` (of the same candidate plans: one per part of the
    trials, ``ns`` trials each), and ``stacked(field)`` their (rows, sum of ``ns``) array
    of one field, the parts one after another (a block serving none of a part's trials:
    its busy fraction 0 there, read by no plan that serves); None where no block serves."""
    sizes = [block[0].shape[0] for block in tables[0].blocks]
    live = [i for i in range(len(sizes)) if any(t.blocks[i][1] is not None for t in tables)]
    if not live:
        return None
    starts = np.cumsum([0, *sizes])
    cols = np.cumsum([0, *ns])
    rows = np.cumsum([0, *(sizes[i] for i in live)])

    def stacked(field: int) -> np.ndarray:
        got = [[t.blocks[i][field] for t in tables] for i in live]
        out = np.empty((rows[-1], cols[-1]), np.result_type(*(x for row in got for x in row if x is not None)))
        for (a, b), row in zip(zip(rows[:-1], rows[1:]), got):
            for c, d, x in zip(cols[:-1], cols[1:], row):
                out[a:b, c:d] = 0.0 if x is None else x
        return out

    return np.concatenate([np.arange(starts[i], starts[i + 1]) for i in live]), stacked


def most_goodput(table, demand: Demand, output_tokens, among: np.ndarray, steps_of) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(best, found, capacity)`` per trial of ``among`` (a boolean (n,) mask; the trials of a fixed
    cluster where no plan meets the SLOs at the peak): the row of ``table`` of most goodput,
    the largest capacity at SLO (the goodput ``E[min(D(t), capacity)]`` rises with it,
    :func:`mcengine.analytic.queueing.served_mean`), the load stage's own
    (:func:`mcengine.stages.load.capacity_tokens` of the per-mode model on the cluster's
    instances, searched from no load; the first such row on a tie), whether that capacity is
    above 0, and that capacity (output tokens/s, 0 where none is found: the load stage takes
    it rather than search that plan again, :func:`mcengine.stages.load.at_peak_of`). A
    plan's capacity is at most its saturated ``T I A``: each trial's plans are taken in
    order of ``T``, 1, 2, 4, ... a round, while ``T I A`` is at least the most capacity found."""
    n = among.size
    best, found = np.zeros(n, np.int64), np.zeros(n, bool)
    flat = _flat([table], [n])
    if flat is None or not among.any():
        return best, found, np.zeros(n)
    table_rows, stacked = flat
    trial = functools.partial(per_trial, n=n)
    slo, avail = trial(demand.ttft_slo_ms), trial(demand.availability)
    served, ttft0 = stacked(0), stacked(4) * MS_PER_S
    ok = (served > 0) & (ttft0 <= slo[None, :]) & (among & (avail > 0))[None, :]
    cols, rows = np.nonzero(np.ascontiguousarray(ok.T))  # grouped by trial, rows ascending within it
    if cols.size == 0:
        return best, found, np.zeros(n)
    tokens, rows = served[rows, cols], table_rows[rows]
    model = Model.of(steps_of, demand, output_tokens, n)
    capacity, most = np.zeros(rows.size), np.zeros(n)
    saturated = tokens * demand.instances * avail[cols]

    def evaluate(pick):
        capacity[pick] = load.capacity_tokens(model.plans(rows[pick], cols[pick]), demand.instances, tokens[pick], avail[cols[pick]])
        np.maximum.at(most, cols[pick], capacity[pick])

    _rounds(cols, (-tokens,), lambda idx: saturated[idx] >= most[cols[idx]], evaluate)
    return (*_least_row(rows, cols, (capacity > 0) & (capacity == most[cols]), n), most)


def _twins(plans: load.Plans, cols: np.ndarray, *more) -> tuple[np.ndarray, np.ndarray]:
    """``(one, twin)``: of the pairs of ``plans`` (at trials ``cols``), the first of each set
    of twins, pairs whose every input to the per-mode model and every array of ``more`` are
    the same bits at the same trial (candidates the enumeration tells apart by what the
    model does not read, such as the attention split of a 1-way tensor layout), in pair
    order; and per pair its twins' first, as an index into ``one``. Every model is
    elementwise over the pairs, so each twin's answers are its first's, bit for bit."""
    n = cols.size
    head = np.column_stack([cols.astype(float), *more])  # twins share these: only pairs sharing them with another are compared further
    order = np.lexsort(head.T[::-1])
    same = (head[order][1:] == head[order][:-1]).all(axis=1)
    may = np.sort(order[np.r_[False, same] | np.r_[same, False]])
    first = np.arange(n)
    if may.size:
        key = np.column_stack([head[may], *(np.broadcast_to(np.asarray(v, float), (n,))[may] for _, v in sorted(plans.steps.items()))])
        _, at, twin = np.unique(np.ascontiguousarray(key).view(np.int64), axis=0, return_index=True, return_inverse=True)
        first[may] = may[at][twin.reshape(-1)]
    one = np.flatnonzero(first == np.arange(n))
    return one, np.searchsorted(one, first)


def _rounds(cols: np.ndarray, keys: tuple, left, evaluate, growth: int = 2, width: int = 1) -> None:
    """``evaluate(pairs)`` on the pairs (grouped by trial ``cols``, table rows ascending
    within a trial) in order of ``keys`` within their trial (the first the most
    significant; on a tie the first row), those where ``left(pairs)`` holds (every pair
    before a first round of width 1; asked before each other round of the pairs not yet
    evaluated; once it fails for a pair it fails for good): each trial's first ``width``,
    ``width`` g, ``width`` g^2, ... of them a round (g = ``growth``), so at most
    ``log_g(pairs of a trial) + 1`` rounds. A first round of width 1 takes each trial's
    first pair by a pass of minima over the pairs; the other rounds ask ``left`` and sort
    only the pairs the round before left."""
    if cols.size == 0:
        return
    idx, done = np.arange(cols.size), np.zeros(cols.size, bool)
    if width == 1:
        starts, sizes = _segments(cols)
        lead = np.ones(cols.size, bool)
        for key in keys:
            lead &= key == np.repeat(np.minimum.reduceat(np.where(lead, key, np.inf), starts), sizes)
        pick = np.flatnonzero(lead)
        pick = pick[_segments(cols[pick])[0]]  # each trial's first
        evaluate(pick)
        done[pick], width = True, growth
    while True:
        idx = idx[~done[idx]]
        idx = idx[left(idx)]
        if idx.size == 0:
            return
        order = idx[np.lexsort((*(key[idx] for key in reversed(keys)), cols[idx]))]  # stable: rows ascending on a tie
        first, count = _segments(cols[order])
        pick = order[np.arange(order.size) - np.repeat(first, count) < width]
        evaluate(pick)
        done[pick] = True
        width *= growth


def _least_row(rows, cols, pick, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per trial the least table row where ``pick`` (0 where none), and where there is one."""
    best = np.full(n, np.iinfo(np.int64).max)
    np.minimum.at(best, cols[pick], rows[pick])
    met = best < np.iinfo(np.int64).max
    return np.where(met, best, 0), met


def _segments(cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starts and sizes of the runs of equal trial in ``cols`` (grouped)."""
    starts = np.flatnonzero(np.r_[True, cols[1:] != cols[:-1]])
    return starts, np.diff(np.r_[starts, cols.size])


def _firsts(rows, cols, pick, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per trial the first row (table order) where ``pick``; ``met`` where there is one."""
    idx = np.flatnonzero(pick)
    idx = idx[_segments(cols[idx])[0]] if idx.size else idx
    best, met = np.zeros(n, np.int64), np.zeros(n, bool)
    best[cols[idx]], met[cols[idx]] = rows[idx], True
    return best, met


#: A lifted bound's margin below the cost it bounds: ``(floor + h) e`` computed as ``(floor
#: + h) * LIFT_MARGIN`` stays below ``(U + h) + e`` computed in the other order (each sum
#: within half an ulp; the margin is far wider), so a plan is never dropped by a rounding.
LIFT_MARGIN = 1.0 - 2.0 ** -40


def _headroom_floor(served, mask, rate, output_tokens, headroom) -> np.ndarray:
    """Per trial the failure headroom every plan's fleet holds at least (0 without
    ``headroom``): ``h = fleet_instances(U_0) - U_0``, ``U_0 = max(ceil(P / (T_max / O)), 1)``
    the least of the trial's plans' ``ceil(P / T)`` bounds (``T_max`` its plans' most tokens/s,
    the same float expression as the bound's). A plan's fleet ``N = fleet_instances(U)`` is
    ``U + k(N)``, ``k`` the quantile of the instances down among ``N`` (Binomial), which never
    falls as ``N`` grows, and ``N`` never falls as ``U`` grows: with ``U >= U_0``, ``N' >= N >= U
    + h``. Where an instance is down half the time or more, or ``U_0``'s fleet is not finite,
    0: a plan whose fleet is not finite costs ``U + e``
    (:func:`mcengine.analytic.queueing.fleet_instances` settles its fixed point in a few
    steps unless an instance is down most of the time)."""
    n = served.shape[1]
    if headroom is None:
        return np.zeros(n)
    _, down, quantile = headroom
    most = np.max(served, axis=0, where=mask, initial=0.0)
    some = (most > 0.0) & (down < 0.5)
    with np.errstate(divide="ignore", invalid="ignore"):
        least_up = np.where(some, np.maximum(np.ceil(rate / (most / output_tokens)), 1.0), 0.0)
    held = qu.fleet_instances(least_up, down, quantile) - least_up
    return np.where(some & np.isfinite(held), held, 0.0)


def _fleet_choice(table_rows, served, busy, mask, weight, peak, model: Model, n: int, headroom=None) -> tuple[np.ndarray, np.ndarray, FleetSearch]:
    """The fleet's choice (module docstring) among the plans of ``mask`` ((rows, n): each
    trial's plans that serve; ``served`` their saturated tokens/s, ``busy`` their busy
    fraction, ``weight`` the trial's dynamic energy weight, None for the most tokens/s): a
    plan's cost is ``U + e`` (with ``headroom``, ``N' + e``, below), ``U`` the fewest up
    instances on which its per-mode model meets both SLO quantiles at the peak and every
    rate below it (:func:`mcengine.stages.load.fewest_instances`, the load stage's own
    search) and ``e`` its dynamic energy; ``U`` is at least the instances the peak
    saturates, ``ceil(P / T)``, so ``ceil(P / T) + e`` bounds the cost from below. Each
    trial's plans are taken in order of that bound, in rounds of 1, 8,
    64, ... plans (:data:`FLEET_GROWTH`; the first, each trial's least bound, straight
    from the (rows, n) arrays, and only the plans that can still win after it taken out
    as pairs), while the bound is below the least cost found or equal to it at an earlier
    row than that cost's first. Within a round the searches tell the screen their counts
    between model calls: a plan settled on a count is a cost found, and a plan whose count
    so far bounds its cost to one that can no longer win (by the same rule) is searched no
    further; with ``headroom`` both bounds are lifted by the trial's least headroom
    (:func:`_headroom_floor`). ``headroom`` (optional, per trial: the rate ``P / (A O)`` the fleet's instances
    carry, an instance's probability of being down and ``cluster.headroom_quantile``): a
    plan's cost is its fleet's, ``N' + e``, asked of each plan once its ``U`` is settled:
    ``N'`` its ``N`` instances (``U`` and the headroom,
    :func:`mcengine.analytic.queueing.fleet_instances`), grown where they miss the SLO
    quantiles at ``P / (A O)`` (:func:`mcengine.stages.load.serving_fleet`, the load
    stage's second test, docs/load.md#peak, asked only where ``N + e`` can still win: a
    plan that cannot keeps ``N + e``, below its cost and losing as it would); ``N' >= U``, so both bounds (``ceil(P / T) + e``
    and a search's ``m + 1 + e``) stay below the cost; where ``fleet_instances`` has no
    finite fleet (an instance down most of the time) the cost stays ``U + e``, no fleet
    being bought. The least cost wins (the first row on a tie), with its :class:`FleetSearch`."""
    rate, top = peak / model.output_tokens, np.iinfo(np.int64).max
    bound, lead = np.empty(served.shape), np.empty(n, np.int64)  # each trial's first row of least bound
    fleet_bounds(np.ascontiguousarray(served, float), np.ascontiguousarray(busy, float), np.ascontiguousarray(mask), np.zeros(n) if weight is None else np.ascontiguousarray(weight, float),
                 weight is not None, np.ascontiguousarray(rate, float), np.ascontiguousarray(model.output_tokens, float), bound, lead)

    def per_instance(r, t):  # the requests/s an instance saturates at, of the pairs (r, t)
        return served[r, t] / model.output_tokens[t]

    def energy(r, t):  # the dynamic energy of the pairs, in instances' worth
        return np.zeros(r.size) if weight is None else weight[t] * busy[r, t] / served[r, t]

    lift = _headroom_floor(served, mask, rate, model.output_tokens, headroom)

    def lifted(floor, t):  # a lower bound of a cost, ``floor`` on the up instances, lifted by the trial's least headroom
        return np.where(lift[t] > 0.0, (floor + lift[t]) * LIFT_MARGIN, floor)

    least, holder = np.full(n, np.inf), np.full(n, top)  # the least cost found, its first row (of the (rows, n) arrays)
    known = [np.zeros((6, 0))]  # row, trial, cost, count, N' and N of the plans searched

    def found(r, t, costs, ups, tested):  # a trial whose least cost falls holds none of its earlier plans: only these can hold it
        known.append(np.vstack([r, t, costs, ups, tested]))
        before = least.copy()
        np.minimum.at(least, t, costs)
        holder[least < before] = top
        hit = np.isfinite(costs) & (costs == least[t])
        np.minimum.at(holder, t[hit], r[hit])

    def left(r, t, floor):  # a cost is at least ``floor``: below the least found it may win, equal to it only at an earlier row
        may = floor < least[t]
        tie = np.flatnonzero(floor == least[t])
        may[tie] = r[tie] < holder[t[tie]]
        return may

    def search(r, t):
        plans, e = model.plans(table_rows[r], t), energy(r, t)
        one, twin = _twins(plans, t, served[r, t], busy[r, t])  # a twin's count and cost are its first's, to the bit
        ro, to, eo = r[one], t[one], e[one]
        plans = plans if one.size == r.size else plans.take(one)
        cost = np.full(one.size, np.nan)  # N' + e of the plans settled (twins' firsts)
        tested = np.zeros((2, one.size))  # N' and N of the plans the second test asked (0: not asked)

        def settle(at, ups):  # the cost of the pairs ``at`` needing ``ups`` up instances: their fleet N' (U, the headroom and the N test's x) + e
            cost[at] = ups + eo[at]
            if headroom is not None and at.size:
                served_rate, down, quantile = (x[to[at]] for x in headroom)
                fleet = qu.fleet_instances(ups, down, quantile)
                asked = np.flatnonzero(np.isfinite(fleet))
                cost[at[asked]] = fleet[asked] + eo[at[asked]]  # N + e, a lower bound: a plan that cannot win on it is not tested
                asked = asked[left(ro[at[asked]], to[at[asked]], cost[at[asked]])]
                grown = load.serving_fleet(plans.take(at[asked]), served_rate[asked], per_instance(ro[at[asked]], to[at[asked]]), fleet[asked])
                cost[at[asked]] = np.where(grown > 0, grown, np.inf) + eo[at[asked]]
                tested[:, at[asked]] = grown, fleet[asked]
            found(ro[at], to[at], cost[at], ups, tested[:, at])

        def still(at, lower, exact):  # the search's counts so far: a plan settled is found, one whose cost can no longer win is dropped
            settle(at[exact], lower[exact])
            return left(ro[at], to[at], lifted(lower + eo[at], to[at]))

        up = load.fewest_instances(plans, rate[to], per_instance(ro, to), still)
        rest = np.flatnonzero((up > 0) & np.isnan(cost))
        settle(rest, up[rest])
        found(r, t, np.where(up[twin] > 0, cost[twin], np.inf), up[twin], tested[:, twin])

    trials = np.flatnonzero(mask.any(axis=0))
    first = lead[trials]
    search(first, trials)
    open_ = mask & (bound <= least)
    open_[first, trials] = False
    t, r = np.nonzero(np.ascontiguousarray(open_.T))  # grouped by trial, rows ascending within it
    keep = lifted(bound[r, t], t) <= least[t]
    t, r = t[keep], r[keep]
    _rounds(t, (bound[r, t],), lambda idx: left(r[idx], t[idx], lifted(bound[r[idx], t[idx]], t[idx])), lambda pick: search(r[pick], t[pick]), FLEET_GROWTH, FLEET_GROWTH)
    met = holder < top
    kr, kt, _, ku, k_fleet, k_tested = np.concatenate(known, axis=1)
    kr, kt = kr.astype(np.int64), kt.astype(np.int64)
    won = np.flatnonzero(met[kt] & (kr == holder[kt]))  # each trial's chosen plan (searched once: its entries agree)
    search_of = np.zeros((6, n))
    search_of[:, kt[won]] = (ku[won], rate[kt[won]], per_instance(kr[won], kt[won]), k_fleet[won], k_tested[won],
                             np.where(k_fleet[won] > 0, headroom[0][kt[won]], 0.0) if headroom is not None else np.zeros(won.size))
    return np.where(met, table_rows[np.where(met, holder, 0)], 0), met, FleetSearch(*search_of)
