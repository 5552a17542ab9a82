"""Load stage: the cluster under a demand (docs/load.md; closed forms in
:mod:`mcengine.analytic.queueing`).

Runs between the roofline and econ stages when ``workload.load.demand`` is a number (with
``"saturate"``, the default, it adds nothing and the chain is the older one to the bit).
Per trial, from the roofline's plan (output tokens/s ``T`` of an instance, its batch
``B``, unloaded TTFT, output tokens ``O`` per request) and the served availability ``A``
the pipeline hands in:

* the cluster's saturated rate ``X = T x cluster.instances x A`` (the old
  ``tokens_per_s``) and its utilisation at the mean and at the peak demand,
  ``D / X`` and ``D x peak_to_mean / X``;
* the latency of each trial's plan under load by the fast model of its serving mode,
  the one docs/load/fit-table.csv validates against the request-level simulator
  (:func:`~mcengine.analytic.queue_static.static_at_load`,
  :func:`~mcengine.analytic.queue_continuous.continuous_at_load`,
  :func:`~mcengine.analytic.queue_disaggregated.disaggregated_at_load`; :class:`Plans`), fed the
  plan's step times at batch 1 and at its top batch (the roofline's ``load_steps.*``
  columns, :mod:`mcengine.stages.roofline.load_steps`): the TTFT and TPOT at
  ``workload.slo_quantile`` at the peak (at most :data:`RHO_SHOWN` of the saturated rate);
  the cluster's ``N`` instances carry the demand at ``D / (A O)`` requests/s;
* the capacity at SLO: the largest cluster rate whose TTFT and TPOT quantiles meet
  ``workload.ttft_slo_ms`` and ``workload.tpot_slo_ms`` (:func:`capacity_rate`), 0
  where the plan misses them unloaded;
* goodput: the diurnal demand served within the SLOs, ``E[min(D(t), capacity at SLO)]``
  (:func:`~mcengine.analytic.queueing.served_mean`), and the share of the day the SLO
  quantiles hold (``load.slo_attainment``);
* the fleet a demand needs: the fewest up instances whose model meets both SLO quantiles
  at the peak and every rate below it (:func:`fewest_instances`, :func:`meets_below`),
  plus the instances down at ``cluster.headroom_quantile`` (:func:`~mcengine.analytic.queueing.fleet_instances`,
  instances down independently with probability ``1 - instance availability``), grown
  where its own instances miss the SLOs at the peak at the served availability (the rate
  its capacity at SLO is searched at, :func:`serving_fleet`; a mix's per class,
  :func:`class_fleets`), the headroom it buys, and that fleet's own capacity at SLO, at
  least the peak.

With ``cluster.instances = "auto"`` that fleet is the cluster: every column above is its
(``load.instances``, docs/load.md#auto). The econ stage then charges the cluster
(``load.instances`` of them) to its goodput and its dynamic power to the utilisation
(:func:`mcengine.stages.econ.economics`), and is run once more on the fleet for the demand
(:func:`fleet_view`, ``load.cost_per_mtok_fleet_usd``). The roofline's per-trial planner
has chosen each trial's plan under the same demand with these same models
(:class:`Plans`, :func:`fewest_instances`, :func:`capacity_tokens`; docs/load.md#planner).
A mix of request classes is each class's own plan on its own instances under its share of
the demand (:func:`mix_load_columns`).
"""

from __future__ import annotations

import functools
import operator

import numpy as np

from ..analytic import queueing as qu
from ..analytic import queue_continuous as qc
from ..analytic import queue_disaggregated as qd
from ..analytic import queue_spread as ql
from ..analytic import queue_static as qs
from ..analytic.serving import SERVING_MODES
from ..columns import FLEET_SEARCH_PREFIX, LOAD_STEPS_PREFIX, MIX_PREFIX, MIX_STEPS_PREFIX
from ..scenario import Scenario
from ..scenario.sampling import TrialInputs, end_to_end, per_trial
from ..scenario.fields import AUTO
from ..scenario.sections.workload import SATURATE
from ..units import MS_PER_S

#: Highest utilisation at which ``load.ttft_at_load_ms`` is shown: above it (a peak beyond the
#: saturated rate) the queue grows without bound and ``load.slo_attainment`` says so.
RHO_SHOWN = 0.999

#: Columns this stage adds, in order.
COLUMNS = ("load.demand_tokens_per_s", "load.saturated_tokens_per_s", "load.capacity_at_slo_tokens_per_s", "load.served_tokens_per_s", "load.utilisation_mean",
           "load.utilisation_peak", "load.ttft_at_load_ms", "load.tpot_at_load_ms", "load.slo_attainment", "load.fleet_instances", "load.headroom_instances",
           "load.instances", "load.demand_at_slo_tokens_per_s", "load.fleet_capacity_at_slo_tokens_per_s")


def loaded(scenario: Scenario) -> bool:
    """Whether ``scenario`` serves a demand (``workload.load.demand`` is not ``"saturate"``)."""
    return scenario.workload.load.demand != SATURATE


def bought(scenario: Scenario) -> bool:
    """Whether the fleet is bought per trial (``cluster.instances = "auto"``, docs/load.md#auto)."""
    return scenario.cluster.instances == AUTO


def arrival_cv(scenario: Scenario, inputs: TrialInputs) -> np.ndarray:
    """The CV of the gaps between requests: 1 for Poisson, ``workload.load.arrival_cv`` for gamma."""
    if scenario.workload.load.arrival == "poisson":
        return np.ones(inputs.n)
    return np.broadcast_to(inputs["workload.load.arrival_cv"], (inputs.n,)).astype(float)


def demand_of(inputs: TrialInputs) -> tuple[np.ndarray, np.ndarray]:
    """Per trial, the mean demand (output tokens/s) and the peak-to-mean."""
    n = inputs.n
    return (np.broadcast_to(inputs["workload.load.demand"], (n,)).astype(float),
            np.broadcast_to(inputs["workload.load.peak_to_mean"], (n,)).astype(float))


def handed(columns: dict[str, np.ndarray], name: str) -> dict[str, np.ndarray]:
    """What the roofline stage hands in for request class ``name`` of a mix
    (``mix_steps.NAME.*``, :data:`~mcengine.columns.MIX_STEPS_PREFIX`), without the prefix:
    its plan's ``load_steps.*`` and ``fleet_search.*``, its ``token_share`` of the output
    tokens, its ``output_tokens`` per request and its whole ``instances`` of a fixed cluster."""
    prefix = f"{MIX_STEPS_PREFIX}{name}."
    return {k[len(prefix):]: v for k, v in columns.items() if k.startswith(prefix)}


def slo_key(scenario: Scenario, name: str, key: str) -> str:
    """The input holding SLO ``key`` (``ttft_slo_ms``, ``tpot_slo_ms``) of request class
    ``name`` (the workload's with ``name`` ""): the class's own where it sets it
    (:meth:`~mcengine.scenario.sections.workload.RequestClass.overrides`)."""
    if name and key in dict(scenario.workload.classes)[name].overrides():
        return f"workload.classes.{name}.{key}"
    return f"workload.{key}"


#: The step-time columns the roofline stage hands in with a demand (docs/load.md#chain):
#: each trial's plan at batch 1 and at its top batch, read by the per-mode models.
STEPS = LOAD_STEPS_PREFIX
#: ``load_steps.mode``'s codes: the index of the plan's serving mode in SERVING_MODES.
STATIC, CONTINUOUS, DISAGGREGATED = (float(SERVING_MODES.index(m)) for m in ("static", "continuous", "disaggregated"))
#: Most bisection steps of :func:`capacity_rate` (a fixed cap: run time never grows with a
#: value; a trial stops once its bracket is within :data:`CAPACITY_TOLERANCE`).
CAPACITY_STEPS = 40
#: Halvings of :func:`capacity_rate` a model call answers (but the first call's grid,
#: :data:`CAPACITY_GRID_HALVINGS`, where it is asked): each trial is asked the ``2^h - 1``
#: rates the next ``h`` halvings could probe (the last call: the steps left), and the
#: halvings are replayed on the answers (the same bracket as one halving a call, in fewer
#: calls: a call's own cost, not its trials', is what its late steps, on a few trials each,
#: pay).
CAPACITY_HALVINGS = 3
#: Halvings :func:`capacity_rate`'s first model call answers for a trial whose quantile
#: can dip (:func:`can_dip`): it asks it the ``2^g - 1`` rates of a grid of its first
#: bracket, every ``1/2^g`` of it (``g`` = this, the same shares for every such trial), the
#: search's resolution: a window of misses below the capacity returned lies wholly between
#: two of these rates, so it is narrower than ``1/2^g`` of the bracket; any wider one is
#: found (docs/load.md#speed). Every other trial's first call answers
#: :data:`CAPACITY_HALVINGS`.
CAPACITY_GRID_HALVINGS = 6
#: Relative width of :func:`capacity_rate`'s bracket at which a trial stops: the capacity
#: returned meets the SLOs and is within 0.05 % below a rate that misses them.
CAPACITY_TOLERANCE = 5e-4
#: Most steps of each of :func:`fewest_instances`' two searches (a fixed cap: 2^64
#: instances is beyond any float count; each ends once every trial's bracket is settled).
FLEET_STEPS = 64
#: Counts :func:`fewest_instances` asks each unsettled trial at a call: the next 7 additions
#: (up to 254 x the last step more), or the 127 counts the next 7 halvings could probe.
FLEET_POINTS = 7


class Plans:
    """The per-mode load model of each trial's plan (docs/load.md#chain): the
    ``load_steps.*`` columns of the roofline stage, the SLOs, their quantile, the arrival
    CV and the output tokens per request, for a subset of trials (:meth:`take`); with them
    the terms of the lengths' spread that do not depend on the rate (:func:`spread_terms`,
    made once where ``steps`` does not hold them, and carried by :meth:`take` and :meth:`joined`)."""

    def __init__(self, steps: dict[str, np.ndarray], q, ttft_slo_s, tpot_slo_s, arrival_cv, output_tokens):
        if "longest" not in steps:
            steps = {**steps, **spread_terms(steps, q, output_tokens)}
        self.steps, self.q, self.ttft_slo_s, self.tpot_slo_s = steps, q, ttft_slo_s, tpot_slo_s
        self.arrival_cv, self.output_tokens = arrival_cv, output_tokens

    @classmethod
    def of(cls, scenario: Scenario, inputs: TrialInputs, columns: dict[str, np.ndarray], shape: str = "") -> "Plans":
        """The plans of ``columns``' trials: the scenario's own (``load_steps.*``,
        ``output_tokens_per_request``, ``workload.ttft_slo_ms`` and ``.tpot_slo_ms``) or,
        with ``shape`` a request class of a mix, that class's (:func:`handed`: its
        ``load_steps.*`` and ``output_tokens``; its own SLOs where it sets them,
        ``workload.classes.NAME.ttft_slo_ms``)."""
        n = inputs.n
        trial = functools.partial(per_trial, n=n)
        source = handed(columns, shape) if shape else columns
        steps = {k[len(STEPS):]: trial(v) for k, v in source.items() if k.startswith(STEPS)}
        steps["gap_cv2"] = trial(inputs["workload.load.static_gap_cv2"])
        steps["bunch_cycles"] = trial(inputs["workload.load.static_bunch_cycles"])
        steps["bunch_growth"] = trial(inputs["workload.load.static_bunch_growth"])
        steps["refill_births"] = trial(inputs["workload.load.refill_births"])
        steps["length_cv"] = trial(inputs["workload.load.length_cv"])
        ttft, tpot = (slo_key(scenario, shape, k) for k in ("ttft_slo_ms", "tpot_slo_ms"))
        return cls(steps, trial(inputs["workload.slo_quantile"]), trial(inputs[ttft]) / MS_PER_S, trial(inputs[tpot]) / MS_PER_S,
                   trial(arrival_cv(scenario, inputs)), trial(source["output_tokens" if shape else "output_tokens_per_request"]))

    def take(self, rows) -> "Plans":
        return Plans({k: v[rows] for k, v in self.steps.items()}, self.q[rows], self.ttft_slo_s[rows], self.tpot_slo_s[rows],
                     self.arrival_cv[rows], self.output_tokens[rows])

    @classmethod
    def joined(cls, plans: list["Plans"]) -> "Plans":
        """The trials of ``plans`` one after another (a mix's classes, each a block of
        trials), answered by one model call: every model is elementwise over the trials,
        so each part's numbers are its own to the bit."""
        return cls({k: end_to_end(plans, lambda p, k=k: p.steps[k]) for k in plans[0].steps},
                   *(end_to_end(plans, operator.attrgetter(f)) for f in ("q", "ttft_slo_s", "tpot_slo_s", "arrival_cv", "output_tokens")))

    def latency(self, rate_per_s, instances) -> qu.LoadLatency:
        """TTFT and TPOT (s), mean and at the SLO quantile, of each trial's plan on
        ``instances`` instances at ``rate_per_s`` requests/s: the model of its serving mode
        (:func:`~mcengine.analytic.queue_static.static_at_load`,
        :func:`~mcengine.analytic.queue_continuous.continuous_at_load`,
        :func:`~mcengine.analytic.queue_disaggregated.disaggregated_at_load`), each called once on
        the trials of that mode. A disaggregated plan puts ``round(f N)`` of the ``N``
        instances on prefill (at least 1 and at most ``N - 1``; under 2 instances it serves
        nothing: latencies ``+inf``)."""
        st, n = self.steps, self.q.size
        rate = np.broadcast_to(np.asarray(rate_per_s, float), (n,))
        count = np.broadcast_to(np.asarray(instances, float), (n,))
        out = [np.full(n, np.inf) for _ in qu.LoadLatency._fields]
        for code in np.unique(st["mode"]):
            rows = np.flatnonzero(st["mode"] == code)
            s = st if rows.size == n else {k: v[rows] for k, v in st.items()}  # one mode: every column as it is
            args = (self.q[rows], rate[rows], self.arrival_cv[rows])
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                common = dict(instances=count[rows], batch=s["batch"], output_tokens=self.output_tokens[rows], decode_1_s=s["decode_1_s"], decode_s=s["decode_s"],
                              length_cv=s["length_cv"])
                if code == STATIC:
                    got = qs.static_at_load(*args, prefill_1_s=s["prefill_1_s"], prefill_s=s["prefill_s"], gap_cv2=s["gap_cv2"], longest=s["longest"],
                                            bunch_cycles=s["bunch_cycles"], bunch_growth=s["bunch_growth"], **common)
                elif code == CONTINUOUS:
                    got = qc.continuous_at_load(*args, prompt_tokens=s["prompt_tokens"], chunk_tokens=s["chunk_tokens"], step_s=s["step_s"],
                                                chunk_step_1_s=s["chunk_step_1_s"], low_batch=s["low_batch"], tail_step_1_s=s["tail_step_1_s"],
                                                tail_step_s=s["tail_step_s"], refill_births=s["refill_births"], **common)
                else:
                    whole = count[rows] >= 2
                    prefill = np.clip(np.round(s["prefill_share"] * count[rows]), 1.0, np.maximum(count[rows] - 1.0, 1.0))
                    common["instances"] = np.maximum(count[rows], 2.0)
                    got = qd.disaggregated_at_load(*args, prefill_instances=prefill, prefill_batch=s["prefill_batch"], prefill_1_s=s["prefill_1_s"],
                                                   prefill_s=s["prefill_s"], busy_1_s=s["busy_1_s"], busy_s=s["busy_s"], transfer_1_s=s["transfer_1_s"],
                                                   transfer_s=s["transfer_s"], join_excess=s["join_excess"], **common)
                    got = qu.LoadLatency(*(np.where(whole, x, np.inf) for x in got))
            for column, values in zip(out, got):
                column[rows] = values
        return qu.LoadLatency(*out)

    def misses(self, rate_per_s, instances) -> np.ndarray:
        """``ln`` of the larger of TTFT and TPOT at the quantile over their SLOs (at most 0:
        both SLOs met), in [-:data:`MISS_CAP`, :data:`MISS_CAP`]."""
        got = self.latency(rate_per_s, instances)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.maximum(got.ttft_q_s / self.ttft_slo_s, got.tpot_q_s / self.tpot_slo_s)
            return np.clip(np.log(np.where(np.isnan(ratio), np.inf, ratio)), -MISS_CAP, MISS_CAP)


def spread_terms(steps: dict[str, np.ndarray], q, output_tokens) -> dict[str, np.ndarray]:
    """The terms of the lengths' spread (``steps["length_cv"]``, docs/load.md#length-spread)
    that do not depend on the rate, for :meth:`Plans.latency` to take at every rate a search
    asks: a static plan's mean longest output of its batch over the mean (``longest``,
    :func:`~mcengine.analytic.queue_spread.longest_ratio`; 1 on the other modes) and a
    disaggregated plan's join share of a step at the quantile ``q`` (``join_excess``,
    :func:`~mcengine.analytic.queue_spread.join_excess_quantile`; 0 on the other modes)."""
    cv, mode = steps["length_cv"], steps["mode"]
    longest, join = np.ones(cv.shape), np.zeros(cv.shape)
    static, split = mode == STATIC, mode == DISAGGREGATED
    longest[static] = ql.longest_ratio(steps["batch"][static], cv[static])
    join[split] = ql.join_excess_quantile(np.asarray(q)[split], np.asarray(output_tokens)[split], cv[split])
    return {"longest": longest, "join_excess": join}


#: Bound of :meth:`Plans.misses` (a finite miss where the model's queue has no steady state;
#: ``e^50`` is far beyond any SLO's miss).
MISS_CAP = 50.0


#: The first rate :func:`capacity_rate` asks each plan at, as a share of its saturated rate: a
#: plan meeting the SLOs there has its capacity within ``1 - SATURATION_PROBE`` (far inside
#: :data:`CAPACITY_TOLERANCE`) below the saturated rate, settled by that one call (the
#: continuous model's occupancy reaches the top batch exactly at the saturated rate, where its
#: queue loses its steady state: docs/load.md#speed).
SATURATION_PROBE = 1.0 - 1e-9


def capacity_rate(plans: Plans, instances, top_rate, meets_at=0.0) -> np.ndarray:
    """The largest rate (requests/s) at most ``top_rate`` at which each trial's plan on
    ``instances`` instances meets both SLO quantiles (:meth:`Plans.misses` at most 0): 0
    where it misses them unloaded, or ``top_rate`` is 0. The plans are first asked at
    ``top_rate`` x :data:`SATURATION_PROBE` (or at ``meets_at``, a rate expected to meet them,
    where it is higher, at most ``top_rate``), one model call on every trial: where they
    meet the SLOs there (and, where the quantile can dip, at every ``1/2^g`` of it from no
    load, :func:`meets_below`, in a second call), that rate is the capacity. The others
    are bisected on a bracket whose lower end meets them: ``meets_at`` where it is below
    that rate and the quantile cannot dip (:func:`can_dip`), else no load, asked in one
    call (and the trials whose ``meets_at`` misses asked again at no load, in a second); a trial that misses unloaded stays at 0.
    The bracket ``[lower end, that rate]`` is halved by at most :data:`CAPACITY_STEPS`
    bisection steps, vectorised over the trials whose bracket is wider than
    :data:`CAPACITY_TOLERANCE` of its lower end, and its lower end is returned. A bisection,
    not a secant: the miss jumps where a disaggregated plan's probability of waiting crosses
    ``1 - q`` (its TTFT quantile leaves the unwaited prefill) and is unbounded past the rate
    its queue keeps a steady state, and on such a jump regula falsi (Illinois) closes no
    faster than a bisection and stalls where the secant keeps one end (docs/load.md#speed);
    every step halves the bracket, so a trial settles in about
    ``log2(width / (tolerance x capacity))`` steps.
    The steps run in at most ``ceil(CAPACITY_STEPS / CAPACITY_HALVINGS)`` model calls: each
    asks the trials not settled when it starts the ``2^h - 1`` rates the next ``h`` halvings
    could probe (every one of :func:`_midpoints`; ``h`` = :data:`CAPACITY_HALVINGS`, the
    last call the steps left: 40 = 13 x 3 + 1), but the first asks a trial whose quantile
    can dip (:func:`can_dip`) the ``2^g - 1`` rates of a grid of its bracket, every
    ``1/2^g`` of it (``g`` = :data:`CAPACITY_GRID_HALVINGS`: 40 = 6 + 11 x 3 + 1); the
    halvings are replayed on the answers, a trial stopping at the halving that settles it:
    the brackets of one halving a call, bit for bit. The quantiles need not rise with the
    rate (static's TTFT quantile falls where the completion gaps grow more regular, arrivals
    burstier than Poisson's, docs/load.md#static), so a probed rate counts as meeting the
    SLOs only where every rate the call probed below it does: at no extra call, and where
    the miss rises with the rate the halvings are those of the plain bisection. What is
    returned, ``c``, holds by induction over the calls (each call's bracket lies between
    rates it has found meeting and missing): ``c`` and every rate probed below it meet the
    SLOs, and a rate at most ``c (1 + tolerance)`` misses them (or at most ``2^-40`` of the
    bracket above ``c``, where the steps run out first; ``c`` is the probe itself where it
    meets them). So ``c`` is the lowest rate that misses them, to the tolerance, unless a
    window of misses lies below it between two rates of the first call: the resolution is
    ``1/2^g`` of the first bracket ``[lower end, top_rate]`` (1/64) where the quantile can
    dip, ``1/2^h`` (1/8) elsewhere, where no model's quantile falls with the rate (the rise
    test of tests/stages/test_load.py), and a window that narrow is the only way ``c`` is
    overstated (by any amount: up to the next rate the quantile crosses the SLO rising).
    Where the quantile cannot dip, rates below ``meets_at`` are not asked (the caller's
    claim that it meets them holds for that rate alone); where it can, a rate meeting the
    SLOs says nothing of the rates below it, so the search starts from no load."""
    n = plans.q.size
    count = np.broadcast_to(np.asarray(instances, float), (n,))
    top = np.broadcast_to(np.asarray(top_rate, float), (n,))
    start = np.minimum(np.where(can_dip(plans), 0.0, np.broadcast_to(np.asarray(meets_at, float), (n,))), top)
    probe = np.maximum(top * SATURATION_PROBE, start)
    met = meets_below(plans, probe, count)
    out = np.where(met & (top > 0.0), probe, 0.0)
    rest = np.flatnonzero(~met & (top > 0.0))
    if rest.size == 0:
        return out
    p, k = plans.take(rest), count[rest]
    start = np.where(start[rest] < probe[rest], start[rest], 0.0)  # the rate said to meet them does not: from no load
    f0 = p.misses(start, k) <= 0.0  # whether it meets them at start
    retry = np.flatnonzero(~f0 & (start > 0.0))  # nor does this one
    if retry.size:
        start[retry], f0[retry] = 0.0, p.take(retry).misses(np.zeros(retry.size), k[retry]) <= 0.0
    keep = np.flatnonzero(f0)
    live, p, k, lo, hi = rest[keep], p.take(keep), k[keep], start[keep], probe[rest][keep]
    left = np.full(live.size, CAPACITY_STEPS)
    levels = np.where(can_dip(p), CAPACITY_GRID_HALVINGS, CAPACITY_HALVINGS)
    out[live] = lo
    for _ in range(1 + -(-(CAPACITY_STEPS - CAPACITY_HALVINGS) // CAPACITY_HALVINGS)):
        keep = np.flatnonzero((hi - lo > CAPACITY_TOLERANCE * lo) & (left > 0))
        live, p, k, lo, hi, left, levels = live[keep], p.take(keep), k[keep], lo[keep], hi[keep], left[keep], levels[keep]
        if live.size == 0:
            break
        levels = np.minimum(levels, left)  # (the last call: the steps left)
        left = left - levels
        groups = [(h, np.flatnonzero(levels == h)) for h in np.unique(levels)]
        mids = [_midpoints(lo[at], hi[at], h) for h, at in groups]  # (trials, 2^h - 1), level by level
        rows = np.concatenate([np.repeat(at, m.shape[1]) for (_, at), m in zip(groups, mids)])
        meets = np.split(p.take(rows).misses(np.concatenate([m.ravel() for m in mids]), k[rows]) <= 0.0,
                         np.cumsum([m.size for m in mids])[:-1])  # one model call for every group
        for (h, at), m, yes in zip(groups, mids, meets):
            lo[at], hi[at] = _halvings(lo[at], hi[at], m, yes.reshape(m.shape), h)
        levels = np.full(live.size, CAPACITY_HALVINGS)
        out[live] = lo
    return out


def can_dip(plans: Plans) -> np.ndarray:
    """The trials whose TTFT quantile can fall as the rate rises, so that
    :func:`capacity_rate` asks them its first call's grid: static plans under arrivals
    burstier than Poisson's (arrival CV above 1), whose completion gaps grow more regular
    with the load faster than their mean grows (docs/load.md#static), and disaggregated
    plans whose lengths spread (``length_cv`` above 0), whose long prompts cost less the
    more prompts share their pass (docs/load.md#length-spread). The other quantiles rise with
    the rate (tests/analytic/test_length_spread.py's rise tests)."""
    mode = plans.steps["mode"]
    return ((mode == STATIC) & (plans.arrival_cv > 1.0)) | ((mode == DISAGGREGATED) & (plans.steps["length_cv"] > 0.0))


def meets_below(plans: Plans, rate_per_s, instances) -> np.ndarray:
    """Whether each trial's plan on ``instances`` instances meets both SLO quantiles
    (:meth:`Plans.misses` at most 0) at ``rate_per_s`` requests/s and at every rate below
    it: the test a plan passes at the peak, to be bought (:func:`fewest_instances`) or to
    serve a fixed cluster (:func:`mcengine.stages.roofline.planner_load.choose`), so that
    its capacity at SLO (:func:`capacity_rate`, which counts a rate only where every rate
    below it meets the SLOs) reaches the peak and the whole day, trough to peak, is served
    (docs/load.md#peak). Where the quantiles rise with the rate that is the rate alone, one
    model call. Where they can dip (:func:`can_dip`: a static plan under arrivals burstier
    than Poisson's, or a disaggregated plan under a lengths' spread, which can miss a lone
    request's SLO and meet it only near its prefill pool's capacity), a trial meeting them at the rate is asked, in a second call, every
    ``1/2^g`` of it from no load (``g`` = :data:`CAPACITY_GRID_HALVINGS`, the capacity
    search's grid: a window of misses narrower than that between two of these rates goes
    unseen)."""
    n = plans.q.size
    rate = np.broadcast_to(np.asarray(rate_per_s, float), (n,))
    count = np.broadcast_to(np.asarray(instances, float), (n,))
    out = plans.misses(rate, count) <= 0.0
    below = np.flatnonzero(out & (rate > 0.0) & can_dip(plans))
    if below.size:
        grid = np.concatenate([np.zeros((below.size, 1)), _midpoints(np.zeros(below.size), rate[below], CAPACITY_GRID_HALVINGS)], axis=1)
        rows = np.repeat(below, grid.shape[1])
        out[below] = (plans.take(rows).misses(grid.ravel(), count[rows]) <= 0.0).reshape(grid.shape).all(axis=1)
    return out


def _halvings(lo, hi, mids, meets, levels):
    """The ``levels`` halvings of each bracket ``[lo, hi]`` replayed on the answers
    ``meets`` at its :func:`_midpoints` ``mids`` (trials x ``2^levels - 1``), a trial
    stopping at the halving that settles it; a rate counts as meeting the SLOs only where
    every rate probed below it does."""
    order = _in_order(levels)
    meets[:, order] = np.logical_and.accumulate(meets[:, order], axis=1)
    rows, node = np.arange(lo.size), np.zeros(lo.size, int)
    for level in range(levels):
        on = hi - lo > CAPACITY_TOLERANCE * lo
        at = 2 ** level - 1 + node
        mid, yes = mids[rows, at], meets[rows, at]
        lo, hi = np.where(on & yes, mid, lo), np.where(on & ~yes, mid, hi)
        node = 2 * node + yes
    return lo, hi


@functools.lru_cache(maxsize=None)
def _in_order(levels):
    """The nodes of :func:`_midpoints`' ``levels`` levels (heap order: node ``j`` of level ``l``
    at ``2^l - 1 + j``, its halves at ``2i + 1`` and ``2i + 2``) in the order of their
    midpoints, lowest rate first (the lower half's, the node's, the upper half's)."""
    def walk(node):
        return [] if node >= 2 ** levels - 1 else walk(2 * node + 1) + [node] + walk(2 * node + 2)

    order = np.array(walk(0))
    order.flags.writeable = False  # (one array for every call asking these levels)
    return order


def _midpoints(lo, hi, levels):
    """The midpoints ``levels`` halvings of each bracket ``[lo, hi]`` can probe
    (``(lo.size, 2^levels - 1)``, heap order: level by level, the root first, node ``j``
    of a level with halves ``2j`` and ``2j + 1`` of the next), each computed as the halving
    itself computes it (``0.5 (a + b)`` of its bracket's ends, themselves such midpoints)."""
    size = 2 ** levels
    ends, out = np.empty((np.size(lo), size + 1)), np.empty((np.size(lo), size - 1))  # every end in rate order, the midpoints in heap order
    ends[:, 0], ends[:, size] = lo, hi
    for level in range(levels):
        step = size >> level  # the spacing of the ends known at this level
        mids = 0.5 * (ends[:, :-1:step] + ends[:, step::step])
        ends[:, step // 2::step] = mids
        out[:, 2 ** level - 1:2 ** (level + 1) - 1] = mids
    return out


def fewest_instances(plans: Plans, rate_per_s, per_instance_rate, still=None, missed=None) -> np.ndarray:
    """The fewest instances on which each trial's plan meets both SLO quantiles at
    ``rate_per_s`` requests/s and every rate below it (every instance up;
    :func:`meets_below`: the rate alone where the quantile cannot dip), 0 where none does
    (its plan misses them unloaded). The quantiles fall as instances are added (the
    pool's waits shorten), so the count is searched from below: from the most instances the rate saturates
    (``per_instance_rate`` each; at least the plan's least cluster, 1 instance or, for
    disaggregated serving, 2), it adds 1, 2, 4, ... instances until the SLOs are met, then
    halves the last step's bracket; each search at most :data:`FLEET_STEPS` steps, on the
    trials not yet settled (the unloaded plan asked only of the trials the first count
    misses, in the call of their first additions). Each model call asks a trial the next
    :data:`FLEET_POINTS` counts the additions would try, or every count the next :data:`FLEET_POINTS` halvings could
    probe, and the steps are replayed on the answers: the same counts as one step a call.
    ``missed`` (optional, per trial): a count known to miss them; the search starts above it.

    ``still(at, lower, exact)`` (optional), asked after the first count and after each call
    of additions, of the trials ``at`` (indices into the trials) settled then or still
    searched: ``exact`` where ``lower`` is the trial's count, else ``lower`` is one more
    than the bracket's lower end ``lo``, a count the search has asked and seen miss: the
    first count where it missed; the last count asked before the first that met, where a
    call's additions met; the last count asked, where none did (but on the last call of
    additions, whose bracket the halvings then search, the last but one). Whether each
    trial not settled is still worth searching is its answer; those it drops are left at
    -1.

    The count returned is at least ``lower``, whatever the model (the quantiles need not
    fall with every instance added): the search returns the upper end ``hi`` of its final
    bracket ``(lo, hi]``, and ``lo`` never falls. After a call of additions none of which
    met, ``hi`` is the last count asked and the next call asks only counts above it
    (``hi + step (2^(k+1) - 2)``, ``k >= 1``): its ``lo`` is one of them or ``hi`` itself,
    so every later ``lo``, and the halvings' (which stay inside the bracket), is at least
    this ``hi``, and the count returned, above its final ``lo``, is at least ``hi + 1``.
    Where a call's additions met, the halvings search ``(lo, hi]`` and return at least
    ``lo + 1``. The last call of additions is followed by the halvings alone, on a bracket
    whose ``hi`` missed, so there ``lo + 1``."""
    n = plans.q.size
    rate = np.broadcast_to(np.asarray(rate_per_s, float), (n,))
    least = np.where(plans.steps["mode"] == DISAGGREGATED, 2.0, 1.0)
    out = np.zeros(n)
    live = np.flatnonzero((rate > 0.0) & (per_instance_rate > 0.0))
    if live.size == 0:
        return out
    p, r = plans.take(live), rate[live]
    lo = np.maximum(np.ceil(r / per_instance_rate[live]) - 1.0, least[live] - 1.0)  # misses (or below the least cluster)
    if missed is not None:
        lo = np.maximum(lo, missed[live])
    hi, step = lo + 1.0, np.ones(live.size)
    short = np.flatnonzero(~meets_below(p, r, hi))
    unserved, off = short[:0], np.zeros(live.size, bool)

    def asked_still(at, exact, missed):  # the trials of ``at`` still searched: off for good where ``still`` drops them
        if still is None:
            return at[~exact]
        keep = still(live[at], np.where(exact, hi[at], missed + 1.0), exact) | exact
        off[at[~keep]] = True
        return at[keep & ~exact]

    lo[short] = hi[short]  # a count known to miss
    everyone = np.arange(live.size)
    short = asked_still(everyone, ~np.isin(everyone, short), lo)
    added = 2.0 ** np.arange(2, FLEET_POINTS + 2) - 2.0  # the next counts: hi + step (2^(k+1) - 2), k = 1, 2, ...
    calls = -(-(FLEET_STEPS - 1) // FLEET_POINTS)
    for call in range(calls):
        if short.size == 0:
            break
        counts = hi[short, None] + step[short, None] * added
        trials, rates, asked = np.repeat(short, FLEET_POINTS), np.repeat(r[short], FLEET_POINTS), counts.ravel()
        if call == 0:  # the same call asks the plan unloaded on its least cluster
            trials, rates, asked = np.r_[trials, short], np.r_[rates, np.zeros(short.size)], np.r_[asked, least[live][short]]
        meets = meets_below(p.take(trials), rates, asked)
        if call == 0:  # a plan missing them unloaded: none
            served = meets[counts.size:]
            unserved, short, counts, meets = short[~served], short[served], counts[served], meets[:counts.size].reshape(counts.shape)[served]
        meets = meets.reshape(counts.shape)
        k = np.where(meets.any(axis=1), meets.argmax(axis=1), FLEET_POINTS - 1)  # the first count that meets them (or the last asked)
        lo[short] = np.where(k > 0, counts[np.arange(short.size), k - 1], hi[short])
        hi[short], step[short] = counts[np.arange(short.size), k], step[short] * 2.0 ** (k + 1)
        more = ~meets.any(axis=1) & (call < calls - 1)  # none met and more additions follow: the search returns above hi
        kept = asked_still(short, np.zeros(short.size, bool), np.where(more, hi[short], lo[short]))
        short = np.intersect1d(short[~meets.any(axis=1)], kept, assume_unique=True)
    for _ in range(-(-FLEET_STEPS // FLEET_POINTS)):
        wide = np.flatnonzero((hi - lo > 1.0) & ~off)
        if wide.size == 0:
            break
        width = hi[wide] - lo[wide]  # a power of 2
        depth = np.minimum(np.log2(width), FLEET_POINTS).astype(int)
        unit = width / 2.0 ** depth
        asked = 2 ** depth - 1
        rows = np.repeat(np.arange(wide.size), asked)
        j = np.arange(rows.size) - np.repeat(np.cumsum(asked) - asked, asked) + 1  # 1 .. 2^depth - 1 in each trial
        meets = np.zeros((wide.size, 2 ** FLEET_POINTS), bool)
        meets[rows, j] = meets_below(p.take(wide[rows]), r[wide][rows], lo[wide][rows] + unit[rows] * j)
        a, b = np.zeros(wide.size, int), 2 ** depth  # the bracket in units, replayed halving by halving
        for t in range(FLEET_POINTS):
            on = t < depth
            mid = (a + b) // 2
            yes = meets[np.arange(wide.size), np.where(on, mid, 0)] & on
            a, b = np.where(on & ~yes, mid, a), np.where(yes, mid, b)
        lo[wide], hi[wide] = lo[wide] + unit * a, lo[wide] + unit * b
    out[live] = np.where(off, -1.0, hi)
    out[live[unserved]] = 0.0
    return out


def planned_fewest_instances(plans: Plans, rate_per_s: np.ndarray, per_instance_rate: np.ndarray, columns: dict[str, np.ndarray]) -> np.ndarray:
    """:func:`fewest_instances` of each trial's plan, taken from the planner's own search
    where the roofline stage hands it (``fleet_search.*``,
    :data:`~mcengine.columns.FLEET_SEARCH_PREFIX`: a fleet chosen under the demand) and it
    searched that plan at these rates bit for bit; searched here for the other trials (a
    mix, a plan chosen ahead of the trials, a fixed cluster, a trial the choice under the
    demand left at its saturation plan)."""
    up = columns.get(FLEET_SEARCH_PREFIX + "up")
    if up is None:
        return fewest_instances(plans, rate_per_s, per_instance_rate)
    same = ((up > 0) & (columns[FLEET_SEARCH_PREFIX + "rate_per_s"] == rate_per_s)
            & (columns[FLEET_SEARCH_PREFIX + "per_instance_rate"] == per_instance_rate))
    return _taken_or_asked(same, up, lambda rest: fewest_instances(plans.take(rest), rate_per_s[rest], per_instance_rate[rest]))


def planned_serving_fleet(plans: Plans, served_rate, per_instance_rate, fleet, columns: dict[str, np.ndarray]) -> np.ndarray:
    """:func:`serving_fleet` of each trial's plan, taken from the planner's own second test
    where the roofline stage hands it (``fleet_search.fleet``, the ``N'`` the planner's fleet
    search settled for the plan it chose, :class:`~mcengine.stages.roofline.planner_load.FleetSearch`)
    and it tested that plan on these ``fleet`` instances at these rates bit for bit
    (``fleet_search.tested_fleet``, ``.served_rate_per_s``, ``.per_instance_rate``): the
    test reads nothing else of a trial, so its answer is this one's; tested here for the
    other trials (as :func:`planned_fewest_instances`)."""
    tested = columns.get(FLEET_SEARCH_PREFIX + "fleet")
    if tested is None:
        return serving_fleet(plans, served_rate, per_instance_rate, fleet)
    same = ((tested > 0) & (columns[FLEET_SEARCH_PREFIX + "tested_fleet"] == fleet)
            & (columns[FLEET_SEARCH_PREFIX + "served_rate_per_s"] == served_rate)
            & (columns[FLEET_SEARCH_PREFIX + "per_instance_rate"] == per_instance_rate))
    return _taken_or_asked(same, tested, lambda rest: serving_fleet(plans.take(rest), served_rate[rest], per_instance_rate[rest], fleet[rest]))


def _taken_or_asked(same, taken, ask) -> np.ndarray:
    """Per trial ``taken`` where ``same``, else ``ask(trials)`` of the other trials."""
    out = np.where(same, taken, 0.0)
    rest = np.flatnonzero(~same)
    if rest.size:
        out[rest] = ask(rest)
    return out


def load_columns(scenario: Scenario, inputs: TrialInputs, columns: dict[str, np.ndarray], availability: np.ndarray) -> dict[str, np.ndarray]:
    """The load columns (:data:`COLUMNS`, module docstring) of a block of trials.

    ``columns`` holds the roofline (``tokens_per_s_instance``, ``output_tokens_per_request``
    and each trial's plan's step times, ``load_steps.*``) and reliability
    (``instance_availability``) columns; ``availability`` is the served share of the
    capacity (:func:`mcengine.stages.econ.served_availability`). The model runs the demand
    the up instances carry: a cluster of ``N`` instances serving ``D`` tokens/s is the
    plan's model on ``N`` instances at ``D / (A O)`` requests/s. With ``cluster.instances =
    "auto"`` the cluster is the fleet bought (``load.instances`` = ``load.fleet_instances``;
    where no fleet meets the SLOs, the simulated cluster, which then serves nothing and
    costs ``+inf`` per token), else ``cluster.instances``. ``slo_met`` is the roofline's
    where the cluster serves some load within the SLOs and 0 where it serves none: the
    roofline checks the SLOs unloaded on the mean lengths, and a lengths' spread
    (``workload.load.length_cv``) can put even a lone request's quantile past them
    (docs/load.md#length-spread)."""
    out = mix_load_columns(scenario, inputs, columns, availability) if scenario.workload.classes else _single_load_columns(scenario, inputs, columns, availability)
    return out | {"slo_met": np.where(out["load.capacity_at_slo_tokens_per_s"] > 0.0, columns["slo_met"], 0.0)}


def _single_load_columns(scenario: Scenario, inputs: TrialInputs, columns: dict[str, np.ndarray], availability: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`load_columns` of a workload of one request class."""
    n = inputs.n
    demand, peak_to_mean = demand_of(inputs)
    plans = Plans.of(scenario, inputs, columns)
    per_instance = columns["tokens_per_s_instance"]
    out_tokens = plans.output_tokens
    peak = demand * peak_to_mean
    per_instance_rate = per_instance / out_tokens
    up_needed = planned_fewest_instances(plans, np.broadcast_to(peak / out_tokens, (n,)), per_instance_rate, columns)
    fleet, instances = fleet_and_cluster(scenario, inputs, columns, up_needed, up_needed > 0,
                                         lambda fleet: planned_serving_fleet(plans, served_peak_rate(peak, availability, out_tokens), per_instance_rate, fleet, columns))
    capacity, fleet_capacity, at_peak = at_peak_of(plans, per_instance, availability, peak, up_needed, instances, fleet, fleet, not bought(scenario),
                                                   np.where(fleet > 0, peak, 0.0), columns.get(GOODPUT_SEARCHED))
    return sized(demand, peak_to_mean, per_instance, availability, instances, capacity, fleet_capacity, fleet, up_needed,
                 at_peak.ttft_q_s, at_peak.tpot_q_s)


def fleet_and_cluster(scenario: Scenario, inputs: TrialInputs, columns: dict[str, np.ndarray], up_needed, serves, serving=None) -> tuple[np.ndarray, np.ndarray]:
    """The fleet sized for the demand, ``up_needed`` up instances plus the instances down at
    ``cluster.headroom_quantile`` (:func:`~mcengine.analytic.queueing.fleet_instances`)
    where ``serves`` (else 0: no fleet), grown by ``serving`` (optional,
    :func:`serving_fleet`: the fleet whose instances carry the peak at the served
    availability) where it is given, and the cluster's instances: with the fleet
    bought (:func:`bought`) that fleet, where a trial has none (its plan, or some class's,
    misses the SLOs unloaded) the simulated cluster, serving nothing; else
    ``cluster.instances``. Returns ``(fleet, instances)``."""
    fleet = np.where(serves, qu.fleet_instances(up_needed, 1.0 - columns["instance_availability"], inputs["cluster.headroom_quantile"]), 0.0)
    if serving is not None:
        fleet = serving(fleet)
    return fleet, cluster_of(scenario, inputs, fleet)


def cluster_of(scenario: Scenario, inputs: TrialInputs, fleet) -> np.ndarray:
    """The cluster's instances: with the fleet bought (:func:`bought`) the ``fleet``, where a
    trial has none the simulated cluster, serving nothing; else ``cluster.instances``."""
    if bought(scenario):
        return np.where(fleet > 0, fleet, float(scenario.cluster.simulated()))
    return np.full(inputs.n, float(scenario.cluster.instances))


def served_peak_rate(peak, availability, output_tokens) -> np.ndarray:
    """The requests/s a fleet's instances carry at a ``peak`` of output tokens/s at the served
    ``availability`` ``A``, ``P / (A O)`` (infinite where ``A`` is 0, or so small that the
    quotient overflows: no fleet serves it)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.where(availability > 0, peak / (availability * output_tokens), np.inf)


def serving_fleet(plans: Plans, served_rate, per_instance_rate, fleet) -> np.ndarray:
    """The fleet bought for the peak (docs/load.md#peak): each trial's ``fleet`` (its up
    instances carry the peak at the headroom quantile) where its ``N`` instances also meet
    both SLO quantiles at ``served_rate`` requests/s, the peak over the served availability
    ``P / (A O)``, and at every rate below it (:func:`meets_below`: the test of a fixed
    cluster of ``N``, the rate its capacity at SLO is searched at), so that its capacity at
    SLO reaches the peak; else the fewest instances above ``fleet`` that do
    (:func:`fewest_instances`, from ``fleet``: 0 where none does, as where the served
    availability is 0 and ``served_rate`` infinite). 0 stays 0 (no fleet)."""
    fleet = np.where(np.isfinite(served_rate), fleet, 0.0)
    bought_ = np.flatnonzero(fleet > 0)
    short = bought_[~meets_below(plans.take(bought_), served_rate[bought_], fleet[bought_])]
    if short.size:
        fleet[short] = fewest_instances(plans.take(short), served_rate[short], per_instance_rate[short], missed=fleet[short])
    return fleet


def sized(demand, peak_to_mean, per_instance, availability, instances, capacity, fleet_capacity, fleet, up_needed, ttft_q_s, tpot_q_s) -> dict[str, np.ndarray]:
    """The load columns (:data:`COLUMNS`) of a cluster of ``instances`` delivering
    ``per_instance`` output tokens/s an instance at saturation, with its capacity at SLO,
    the fleet sized for the demand (``fleet`` instances, ``up_needed`` of them up at the
    peak, its ``fleet_capacity`` at SLO) and the TTFT and TPOT quantiles (s) at the peak."""
    saturated, served, rho_mean, rho_peak = served_by(instances, per_instance, availability, capacity, demand, peak_to_mean)
    return {
        "load.demand_tokens_per_s": demand,
        "load.saturated_tokens_per_s": saturated,
        "load.capacity_at_slo_tokens_per_s": capacity,
        "load.served_tokens_per_s": served,
        "load.utilisation_mean": rho_mean,
        "load.utilisation_peak": np.minimum(rho_peak, 1.0),
        "load.ttft_at_load_ms": ttft_q_s * MS_PER_S,
        "load.tpot_at_load_ms": tpot_q_s * MS_PER_S,
        "load.slo_attainment": qu.share_below(demand, peak_to_mean, capacity),
        "load.fleet_instances": fleet,
        "load.headroom_instances": np.where(fleet > 0, fleet - up_needed, 0.0),
        "load.instances": instances,
        "load.demand_at_slo_tokens_per_s": capacity / peak_to_mean,
        "load.fleet_capacity_at_slo_tokens_per_s": fleet_capacity,
    }


def mix_load_columns(scenario: Scenario, inputs: TrialInputs, columns: dict[str, np.ndarray], availability: np.ndarray) -> dict[str, np.ndarray]:
    """The load columns of a mix of request classes (docs/load.md#chain): each class ``c``
    its own plan (chosen under its share of the demand, :func:`mcengine.stages.roofline.mix_columns`)
    on its own whole instances, carrying its share ``w_c`` of the output tokens (``w_c D``
    tokens/s, peak ``w_c D p``), in its serving mode's model at its own SLOs (:class:`Plans`
    of the class). Per class: ``U_c`` up instances, the fewest meeting its SLO quantiles at
    its peak (:func:`planned_fewest_instances`); the ``N_c`` instances it serves on (a fixed
    cluster: its whole instances of the split handed in; a fleet bought: ``U_c`` and its
    part of the headroom); its capacity at SLO ``C_c``; its TTFT and TPOT quantiles at its
    peak; the share of the day they hold (``mix.NAME.*``). The mix:

    * the fleet is ``sum_c N_c``: each class's ``U_c`` up instances plus its own headroom
      for failures (:func:`~mcengine.analytic.queueing.fleet_instances` of ``U_c``: a
      class's instances serve only it, so another's spare cannot stand in for one down), each
      class's ``N_c`` grown where they miss its SLO quantiles at its own peak at the served
      availability (:func:`class_fleets`; each class's fleet capacity at SLO then at least its
      peak); no fleet where some class misses its SLOs unloaded (``U_c = 0``);
    * its capacity at SLO is the largest mix demand every class meets, ``min_c C_c / w_c``
      (the fleet's likewise), so its goodput and SLO attainment count the demand while every
      class meets its SLOs (:func:`sized`; the attainment the least class's, every class's share of the day);
    * its saturated rate is the mix's rate an instance (the roofline's harmonic mean,
      ``1 / sum_c w_c / T_c``) times the instances and the served availability: its mean
      utilisation is then the share of instance time the classes keep busy;
    * its TTFT and TPOT at the quantile are the largest of the classes' (a bound from above
      on the mixture's quantile: every class's distribution is at least ``q`` there)."""
    n = inputs.n
    demand, peak_to_mean = demand_of(inputs)
    fixed = not bought(scenario)
    names = [name for name, _ in scenario.workload.classes]
    got = [handed(columns, name) for name in names]
    plans = [Plans.of(scenario, inputs, columns, name) for name in names]
    shares = [per_trial(h["token_share"], n) for h in got]
    rates = [columns[f"{MIX_PREFIX}{name}.tokens_per_s_instance"] for name in names]
    peaks = [demand * w * peak_to_mean for w in shares]  # as the planner's class demand: (D w_c) p
    # the classes' trials one after another: one search and one model call a step for every class (Plans.joined)
    joined, parts = Plans.joined(plans), functools.partial(np.split, indices_or_sections=len(names))
    searched = {k: np.concatenate([h.get(k, np.zeros(n)) for h in got]) for k in {k for h in got for k in h if k.startswith(FLEET_SEARCH_PREFIX)}}
    up = parts(planned_fewest_instances(joined, np.concatenate(peaks) / joined.output_tokens, np.concatenate(rates) / joined.output_tokens, searched))
    up_needed = sum(up[1:], up[0])
    fleets = class_fleets(joined, served_peak_rate(np.concatenate(peaks), np.tile(availability, len(names)), joined.output_tokens),
                          np.concatenate(rates) / joined.output_tokens, up, 1.0 - columns["instance_availability"], inputs["cluster.headroom_quantile"], searched)
    fleet = np.where(np.logical_and.reduce([f > 0 for f in fleets]), sum(fleets[1:], fleets[0]), 0.0)
    instances = cluster_of(scenario, inputs, fleet)
    split = [per_trial(h["instances"], n) for h in got]
    held = split if fixed else [np.where(fleet > 0, f, s) for f, s in zip(fleets, split)]  # no fleet: the simulated cluster's split
    whole = at_peak_of(joined, np.concatenate(rates), np.tile(availability, len(names)), np.concatenate(peaks), np.concatenate(up),
                       np.concatenate(held), np.concatenate(fleets), np.tile(fleet, len(names)), fixed, np.where(np.tile(fleet > 0, len(names)), np.concatenate(peaks), 0.0),
                       searched.get(GOODPUT_SEARCHED))
    capacity, fleet_capacity = parts(whole[0]), parts(whole[1])
    latency = [qu.LoadLatency(*x) for x in zip(*map(parts, whole[2]))]
    out = sized(demand, peak_to_mean, columns["tokens_per_s_instance"], availability, instances,
                np.minimum.reduce([c / w for c, w in zip(capacity, shares)]), np.minimum.reduce([c / w for c, w in zip(fleet_capacity, shares)]),
                fleet, up_needed, np.maximum.reduce([x.ttft_q_s for x in latency]), np.maximum.reduce([x.tpot_q_s for x in latency]))
    attained = [qu.share_below(demand * w, peak_to_mean, c) for w, c in zip(shares, capacity)]
    # the mix meets its SLOs while every class does: the least class's share of the day (share_below rises with the
    # capacity over the demand, so this is sized's share at min_c C_c / w_c, without that quotient's rounding)
    out["load.slo_attainment"] = np.minimum.reduce(attained)
    for name, a, x, h, u in zip(names, attained, latency, held, up):
        out |= {f"{MIX_PREFIX}{name}.ttft_at_load_ms": x.ttft_q_s * MS_PER_S, f"{MIX_PREFIX}{name}.tpot_at_load_ms": x.tpot_q_s * MS_PER_S,
                f"{MIX_PREFIX}{name}.slo_attainment": a, f"{MIX_PREFIX}{name}.load_instances": h, f"{MIX_PREFIX}{name}.up_instances": u}
    return out


def class_fleets(plans: Plans, served_rate, per_instance_rate, up: list[np.ndarray], down, quantile, searched=None) -> list[np.ndarray]:
    """Each class's instances of a mix's fleet bought for the peak (docs/load.md#chain): a
    class's instances serve only that class, so each holds its own headroom for failures,
    its up instances ``up`` (``U_c``) plus the instances down at ``quantile``
    (``cluster.headroom_quantile``; ``down`` an instance's probability of being down) among
    its own, :func:`~mcengine.analytic.queueing.fleet_instances` of ``U_c``; each class's
    ``N_c`` then grown where they miss its SLO quantiles at its own peak at the served
    availability, ``P_c / (A O_c)`` (``served_rate``; :func:`serving_fleet` on ``plans``,
    the classes' trials one after another as :meth:`Plans.joined` lays them,
    ``per_instance_rate`` likewise; taken from the class planners' own tests where
    ``searched``, their ``fleet_search.*`` laid out alike, holds them:
    :func:`planned_serving_fleet`). 0 for every class where some class has no ``U_c``
    (it misses its SLOs unloaded: no fleet serves the mix)."""
    every = np.logical_and.reduce([u > 0 for u in up])
    own = [np.where(every, qu.fleet_instances(u, down, quantile), 0.0) for u in up]
    return np.split(planned_serving_fleet(plans, served_rate, per_instance_rate, np.concatenate(own), searched or {}), len(up))


#: The capacity at SLO (output tokens/s) the planner found for a fixed cluster's plan of most
#: goodput (:func:`mcengine.stages.roofline.planner_load.most_goodput`), 0 where the trial's
#: plan is not that: :func:`capacity_tokens` of that plan on the cluster, searched from no load.
GOODPUT_SEARCHED = FLEET_SEARCH_PREFIX + "capacity_tokens_per_s"


def at_peak_of(plans: Plans, per_instance, availability, peak, up_needed, instances, fleet_of, fleet, fixed: bool, served=0.0, searched=None):
    """A plan's capacities at SLO and its latency at the peak (tokens/s): ``plans`` serving
    on ``instances`` instances (``per_instance`` output tokens/s each at saturation) a peak
    of ``peak`` tokens/s, of which ``up_needed`` up instances meet both SLO quantiles and a
    fleet bought would hold ``fleet_of`` (``fleet``: the whole fleet, 0 where none serves).
    On a fixed cluster (``fixed``) the cluster's and the fleet's capacities are found in one
    search (the fleet's up instances carry the peak; no fleet: the cluster's); with the fleet
    bought the cluster is the fleet. The latency (:meth:`Plans.latency`) is at the peak the
    up instances carry, shown at most :data:`RHO_SHOWN` of their saturated rate. ``served``
    (tokens/s, 0 unless given): a load the fleet's instances are known to serve at every
    rate below it (:func:`serving_fleet`), a floor of the fleet's capacity at SLO (the
    search's lower end stops within its tolerance below the first rate it finds missing,
    which can lie just above such a load). ``searched`` (optional, fixed, tokens/s): a
    capacity the planner found for the plan on the cluster's ``instances``, searched from no
    load (:data:`GOODPUT_SEARCHED`, 0 where it searched none), taken where it is above 0 and
    this search would be that one (no load known: the same search, bit for bit; a capacity
    of 0 searched again is the same 0). Returns ``(capacity, fleet_capacity, latency)``."""
    if fixed:
        n = instances.size
        both = np.r_[np.arange(n), np.arange(n)]
        known = np.r_[np.where(instances >= up_needed, peak, 0.0), np.where(fleet > 0, peak, 0.0)]
        held = np.r_[instances, np.where(fleet > 0, fleet_of, instances)]
        found, taken = np.zeros(2 * n), np.zeros(2 * n, bool)  # taken: the rows whose capacity is the planner's
        if searched is not None:
            taken = (known == 0.0) & (held == instances[both]) & (searched[both] > 0.0)
            found[taken] = searched[both[taken]]
        ask = np.flatnonzero(~taken)
        found[ask] = capacity_tokens(plans.take(both[ask]), held[ask], per_instance[both[ask]], availability[both[ask]], known[ask])
        capacity, fleet_capacity = np.split(found, 2)
        fleet_capacity = np.maximum(fleet_capacity, served)
    else:
        capacity = fleet_capacity = np.maximum(capacity_tokens(plans, instances, per_instance, availability, np.where(fleet > 0, peak, 0.0)), served)
    shown = np.minimum(peak, RHO_SHOWN * per_instance * instances * availability)
    with np.errstate(divide="ignore", invalid="ignore"):
        latency = plans.latency(np.where(availability > 0, shown / (availability * plans.output_tokens), 0.0), instances)
    return capacity, fleet_capacity, latency


def capacity_tokens(plans: Plans, instances, per_instance, availability, meets_at=0.0) -> np.ndarray:
    """The capacity at SLO (output tokens/s) of ``instances`` instances serving the plans:
    ``A O`` times the largest rate at which the plan's model meets both SLO quantiles
    (:func:`capacity_rate`, at most the saturated ``T N / O``; ``meets_at`` a load in
    output tokens/s the up instances are known to carry within the SLOs, 0 unless given)."""
    rate = capacity_rate(plans, instances, per_instance * instances / plans.output_tokens, np.asarray(meets_at, float) / plans.output_tokens)
    return np.where(per_instance > 0, availability * plans.output_tokens * rate, 0.0)


def served_by(instances, per_instance, availability, capacity, demand, peak_to_mean) -> tuple[np.ndarray, ...]:
    """A cluster of ``instances`` under the demand with capacity at SLO ``capacity``: its
    saturated rate ``T N A``, its goodput (the diurnal demand up to that capacity,
    :func:`~mcengine.analytic.queueing.served_mean`), its mean utilisation (the demand up
    to the saturated rate, over it) and its utilisation at the peak."""
    n = np.size(demand)
    saturated = per_instance * instances * availability
    peak = demand * peak_to_mean
    rho_peak = np.divide(peak, saturated, out=np.full(n, np.inf), where=saturated > 0)
    rho_mean = np.divide(qu.served_mean(demand, peak_to_mean, saturated), saturated, out=np.zeros(n), where=saturated > 0)
    return saturated, qu.served_mean(demand, peak_to_mean, capacity), rho_mean, rho_peak


def fleet_view(inputs: TrialInputs, columns: dict[str, np.ndarray], availability: np.ndarray) -> dict[str, np.ndarray]:
    """The load columns the econ stage reads (``load.instances``, ``load.served_tokens_per_s``,
    ``load.saturated_tokens_per_s``, ``load.utilisation_mean``) for the fleet sized for the
    demand (``load.fleet_instances``) in place of the scenario's cluster: :func:`served_by`
    at the fleet's own capacity at SLO (``load.fleet_capacity_at_slo_tokens_per_s``)."""
    demand, peak_to_mean = demand_of(inputs)
    fleet = np.where(columns["load.fleet_instances"] > 0, columns["load.fleet_instances"], columns["load.instances"])  # none: the cluster, serving nothing
    capacity = columns["load.fleet_capacity_at_slo_tokens_per_s"]
    fleet_saturated, served, rho_mean, _ = served_by(fleet, columns["tokens_per_s_instance"], availability, capacity, demand, peak_to_mean)
    return {"load.instances": fleet, "load.served_tokens_per_s": served, "load.saturated_tokens_per_s": fleet_saturated, "load.utilisation_mean": rho_mean}
