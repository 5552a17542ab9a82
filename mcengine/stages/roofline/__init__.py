"""Roofline stage: prefill and decode times, batch limits and tokens/s of one instance
(docs/model.md#roofline; formulas in :mod:`mcengine.analytic.roofline`).

No random numbers: the stage is a deterministic function of each trial's inputs,
vectorised with NumPy over trials (a few dozen array operations per layout; the
per-trial planner's choice over its candidate table and the disaggregated pairs' rows
are kernel passes, :mod:`mcengine.kernels.plan`). Uncertain efficiencies, latencies and overheads arrive per trial through
:class:`~mcengine.scenario.sampling.TrialInputs`; ``mcengine roofline`` evaluates them at
their medians. The stage reads: plan, then evaluate. The plan rule ``workload.plan``
names (:mod:`.rules`, registered by name: :data:`RULES`) chooses the plan (serving mode x
layout x attention x all-reduce): per trial for its own inputs and SLOs (the default, the
search of :mod:`.planner`), once at pessimistic inputs by that search, or once at the
median inputs (the median rule, :mod:`.median_plan`); the closed forms of :mod:`.layout`
and :mod:`.serving` time it, and :mod:`.columns` turns the evaluation into columns.

Throughput of an instance: batches of ``B`` requests are prefilled together and then
decoded for ``O`` steps, ``B O / (prefill(B) + O TPOT(B))`` output tokens/s, with TPOT at
the mean context ``S + O/2`` and ``B`` at most what fits HBM at the full ``S + O``
context (``batch = "auto"``: also at most what meets the TPOT SLO). Lengths drawn per
trial or spread across requests by a length law enter as per-trial means ``S``, ``O`` and
the context at ``workload.kv_length_quantile`` (:func:`.layout.lengths_of`,
docs/model.md#lengths).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
from functools import lru_cache

import numpy as np

from ...analytic import mix as mx
from ...analytic.roofline.steps import tokens_per_step
from ...columns import FLEET_SEARCH_PREFIX, LOAD_STEPS_PREFIX, MIX_PREFIX, MIX_STEPS_PREFIX
from ...errors import InputError, Problem
from ...scenario import Scenario
from ...scenario.sections.workload import SATURATE, PrefixCacheSection
from ...scenario.sampling import TrialInputs, per_trial
from .columns import at_trial, checked
from .layout import lengths_of
from .rules import RULES, AheadWeights, PlanRule, ahead_inputs, register, rule_of

__all__ = ["STAGE", "MIX_PREFIX", "RULES", "AheadWeights", "PlanRule", "ahead_inputs", "ahead_points", "at_trial",
           "capacity_table", "class_inputs", "class_keys", "class_scenario", "class_split", "mix_columns", "not_served", "plan_tables",
           "register", "request_shapes", "rule_of", "throughput"]

STAGE = "roofline"



def throughput(scenario: Scenario, inputs: TrialInputs, power_weight: np.ndarray | None = None, tables: dict | None = None,
               ahead: AheadWeights = AheadWeights(), demand=None) -> dict[str, np.ndarray]:
    """Per-trial roofline columns for the chained run (arrays of shape (n,)).

    ``tokens_per_s_instance`` (output tokens/s of one instance), ``tokens_per_s_per_gpu``,
    ``ttft_ms``, ``tpot_ms``, ``batch`` (int64), ``slo_met`` (1.0 when the trial meets
    its TPOT and TTFT SLOs, else 0.0: such a trial delivers no tokens),
    ``busy_fraction`` (share of the serving cycle spent computing or streaming HBM, the
    utilisation of the power model), of the plan ``workload.plan`` says the trial serves
    (its rule in :data:`~.rules.RULES`: its own best plan, or one plan chosen at the
    median or at pessimistic inputs; with "median", :mod:`.median_plan`'s plan, evaluated
    as the static lines below say or by :mod:`.serving`).
    ``output_tokens_per_request`` is ``workload.output_tokens`` (its mean per trial: a
    drawn typical length or a length law's mean; the mix's mean with request classes).
    With ``[workload.classes]`` the columns are those of the mix
    (:func:`mix_columns`). With ``[workload.speculative]``, ``tokens_per_step``: the
    tokens a sequence emits per verification step (docs/generation.md#speculative).
    ``power_weight``: the trials' :func:`mcengine.stages.econ.plan_power_weight`, with
    which the per-trial planner takes the least cost per token (``workload.plan_objective
    = "cost"``); None, or ``"throughput"``: the most tokens/s. ``tables``: a dict kept by
    the caller for trials whose roofline inputs are equal (the chain's scenarios that
    differ in reliability alone), in which each request shape's candidate evaluations
    are kept and reused (the choice, which reads the weight, is made per call).
    ``ahead``: the weights of the plans chosen ahead of the trials (``workload.plan =
    "quantile"`` reads the pessimistic one; :class:`~.rules.AheadWeights`).
    ``demand``: the load the per-trial rule chooses its plans under
    (:class:`~.planner_load.Demand`, docs/load.md#planner; None: at saturation; a plan
    chosen ahead of the trials is planned at saturation; a mix's classes each under its
    share of it, :func:`mix_columns`).
    Raises InputError if in some trial the weights (or an integer batch) fit no plan
    searched (or, with one plan, not that plan), NumericalError on a non-finite output.
    """
    if scenario.workload.plan_objective == "throughput":
        power_weight = None
    if scenario.workload.classes:
        columns = mix_columns(scenario, inputs, power_weight, tables, ahead, demand)
    else:
        columns = rule_of(scenario).columns(scenario, inputs, power_weight, tables, ahead, demand=demand)
        columns["output_tokens_per_request"] = per_trial(lengths_of(scenario, inputs).output_tokens, inputs.n)
    spec = scenario.workload.speculative
    if spec is not None:
        columns["tokens_per_step"] = per_trial(tokens_per_step(spec.draft_tokens, inputs["workload.speculative.acceptance"]), inputs.n)
    return columns


def plan_tables(scenario: Scenario, inputs: TrialInputs) -> dict:
    """The ``tables`` :func:`throughput` keeps for these trials, made ahead of it: with
    ``workload.plan = "per_trial"`` each request shape's candidate evaluations
    (:meth:`.rules.PlanRule.table`, keyed as :func:`throughput` keys them: ``""``,
    or each class's name in a mix), which read the trials' inputs alone (no fab or
    reliability column, no econ weight); empty for a plan chosen ahead of the trials.
    The chain makes them while the reliability kernel runs (:func:`mcengine.pipeline.run_chunk`)."""
    rule = rule_of(scenario)
    if not rule.tabled:
        return {}
    return {shape: rule.table(s, i) for shape, s, i in request_shapes(scenario, inputs)}


def ahead_points(scenario: Scenario, reshard: bool) -> tuple[str, ...]:
    """The points (:func:`~.rules.ahead_inputs`) whose econ weights ``scenario``'s plan
    rule reads (:meth:`~.rules.PlanRule.ahead_points`; with ``reshard``, those of its
    reshard table too; for a mix under a demand, the median's, where its instances are split,
    :func:`class_split`): the pipeline computes them (:func:`mcengine.pipeline.ahead_weights`)."""
    points = rule_of(scenario).ahead_points(reshard)
    if scenario.workload.classes and scenario.workload.load.demand != SATURATE and "median" not in points:
        points = ("median", *points)
    return points


def request_shapes(scenario: Scenario, inputs: TrialInputs) -> list[tuple[str, Scenario, TrialInputs]]:
    """Each request shape the instances serve, as ``(key in tables, scenario, inputs)``:
    the scenario itself (key ``""``), or each request class alone (key its name,
    :func:`class_scenario` and :func:`class_inputs`)."""
    if not scenario.workload.classes:
        return [("", scenario, inputs)]
    return [(name, class_scenario(scenario, name), class_inputs(scenario, name, inputs)) for name, _ in scenario.workload.classes]


def not_served(scenario: Scenario, inputs: TrialInputs) -> dict[str, np.ndarray]:
    """The roofline columns of a cluster that serves no tokens (a training job's cluster
    whose model no serving plan can hold, :func:`mcengine.stages.training.serves`): no
    tokens, ``slo_met`` 0, an infinite TTFT and TPOT, no batch, and every GPU busy (the
    cluster trains)."""
    n = inputs.n
    return {"tokens_per_s_instance": np.zeros(n), "tokens_per_s_per_gpu": np.zeros(n), "ttft_ms": np.full(n, np.inf),
            "tpot_ms": np.full(n, np.inf), "batch": np.zeros(n, dtype=np.int64), "slo_met": np.zeros(n), "busy_fraction": np.ones(n),
            "output_tokens_per_request": per_trial(lengths_of(scenario, inputs).output_tokens, n)}



def class_scenario(scenario: Scenario, name: str) -> Scenario:
    """``scenario`` serving only request class ``name``: its prompt and output lengths (and
    its model, SLOs and prefix-cache hit rate, when it sets them), no classes."""
    cls = dict(scenario.workload.classes)[name]
    own = {k: getattr(cls, k) for k in cls.overrides()}
    if cls.prefix_hit_rate is not None:  # its own prefix-cache hit rate (the workload's cache share, or the default one)
        own["prefix_cache"] = dataclasses.replace(scenario.workload.prefix_cache or PrefixCacheSection(), hit_rate=cls.prefix_hit_rate)
    w = dataclasses.replace(scenario.workload, prompt_tokens=cls.prompt_tokens, output_tokens=cls.output_tokens, classes=(),
                            model=cls.model or scenario.workload.model, **own)
    return dataclasses.replace(scenario, workload=w)


@contextlib.contextmanager
def class_keys(scenario: Scenario, name: str):
    """A block planning request class ``name`` alone (:func:`class_scenario`): its bad
    input is named by the class's own keys (``workload.classes.NAME.prompt_tokens``, its
    model and SLOs when it sets them), not by the workload keys its scenario carries them in."""
    cls = dict(scenario.workload.classes)[name]
    own = ("prompt_tokens", "output_tokens", *cls.overrides(), *(("model",) if cls.model is not None else ()))
    pattern = re.compile(r"\bworkload\.(" + "|".join(own) + r")\b")

    def renamed(text: str) -> str:
        return pattern.sub(lambda m: f"workload.classes.{name}.{m.group(1)}", text)

    try:
        yield
    except InputError as exc:
        raise InputError([Problem(renamed(p.key), renamed(p.value) if isinstance(p.value, str) else p.value, renamed(p.allowed), p.hint)
                          for p in exc.problems], exc.source) from None


def class_inputs(scenario: Scenario, name: str, inputs: TrialInputs) -> TrialInputs:
    """``inputs`` as request class ``name``'s instances see them: its own SLOs
    (``workload.classes.NAME.tpot_slo_ms``) and prefix-cache hit rate
    (``.prefix_hit_rate``, with the default cache share when the workload has no
    ``[workload.prefix_cache]``) in place of the workload's, when it sets them,
    and its drawn lengths (``workload.classes.NAME.prompt_tokens``, a length law's
    ``.median`` ...) as ``workload.prompt_tokens`` ...."""
    own = {f"workload.{k}": inputs[f"workload.classes.{name}.{k}"] for k in dict(scenario.workload.classes)[name].overrides()}
    if dict(scenario.workload.classes)[name].prefix_hit_rate is not None:
        own["workload.prefix_cache.hit_rate"] = inputs[f"workload.classes.{name}.prefix_hit_rate"]
        if scenario.workload.prefix_cache is None:
            own["workload.prefix_cache.cache_share"] = PrefixCacheSection().cache_share.median()
    prefix = f"workload.classes.{name}."
    own.update({"workload." + key.removeprefix(prefix): value for key, value in inputs.values.items()
                if key.startswith(prefix) and key.removeprefix(prefix).split(".")[0] in ("prompt_tokens", "output_tokens")})
    return dataclasses.replace(inputs, values={**inputs.values, **own}) if own else inputs


def mix_columns(scenario: Scenario, inputs: TrialInputs, power_weight: np.ndarray | None = None, tables: dict | None = None,
                ahead: AheadWeights = AheadWeights(), demand=None) -> dict[str, np.ndarray]:
    """The columns of a mix of request classes (docs/model.md#mix, :mod:`mcengine.analytic.mix`).

    Each class is planned alone (the plan rule of ``workload.plan`` with its own lengths,
    and its own TPOT/TTFT SLOs where it sets them) on instances that serve only it (by
    cost, the least cost per token of each class's instances is the least of the mix: the
    mix's cost per token is the classes' weighted by their output-token shares). Mix
    columns: ``tokens_per_s_instance`` and
    ``tokens_per_s_per_gpu`` the output-token-weighted harmonic means of the classes';
    ``ttft_ms`` the request-weighted mean, ``tpot_ms`` the output-token-weighted mean;
    ``batch`` the instance-weighted mean (rounded); ``busy_fraction`` the
    instance-weighted mean; ``slo_met`` 1 only where every class meets its SLOs (an
    unserved class leaves the mix unserved); ``output_tokens_per_request`` the mean
    ``sum r_c O_c``. Per class ``NAME``: ``mix.NAME.`` + ``request_share``,
    ``instance_share``, ``tokens_per_s_instance``, ``ttft_ms``, ``tpot_ms``, ``slo_met``.
    With ``workload.class_instances = "whole"`` each class holds whole instances
    (:func:`mcengine.analytic.mix.whole_instance_rate`): the mix's rates are the
    continuous ones times the share the rounding keeps, ``instance_share`` is the class's
    whole instances over ``cluster.instances`` (left-over instances serve no class),
    ``batch`` is weighted by them, ``busy_fraction`` by the instance time each class keeps
    busy (where the mix is unserved and no class holds an instance, the continuous
    shares stand, as :func:`mcengine.analytic.mix.instance_shares` keeps them), and each class adds ``mix.NAME.instances`` and ``mix.NAME.idle_share`` (the
    share of its instances' time the rounding leaves idle).
    One class gives the columns of the scenario without classes, to the bit.

    ``demand`` (a :class:`~.planner_load.Demand`, docs/load.md#planner): each class is
    planned under its share of it, ``w_c`` of the output tokens/s (its requests
    ``r_c D / sum_k r_k O_k`` a second), at its own SLOs, on its own instances: with a
    fixed cluster, its whole instances of :func:`class_split`; with a fleet bought per
    trial, its own fewest up instances (:func:`.planner_load.choose`, per class). The
    columns above are then those of the classes' plans under the load, and each class
    hands the load stage what its model reads (internal, never written:
    ``mix_steps.NAME.`` + its ``load_steps.*``, ``fleet_search.*``, ``token_share``
    ``w_c``, ``output_tokens`` and ``instances``, its whole instances of
    :func:`class_split`; :data:`~mcengine.columns.MIX_STEPS_PREFIX`).
    """
    shapes = request_shapes(scenario, inputs)
    names = [name for name, _, _ in shapes]
    outputs = [lengths_of(s, i).output_tokens for _, s, i in shapes]
    shares = mx.normalised_shares([inputs[f"workload.classes.{name}.share"] for name in names])
    weights = mx.output_token_weights(shares, outputs)
    parts = None if demand is None else class_split(scenario, ahead)
    rule = rule_of(scenario)
    asked = [(name, s, i, None if demand is None else dataclasses.replace(
        demand, demand=demand.demand * weights[c], ttft_slo_ms=i["workload.ttft_slo_ms"], tpot_slo_ms=i["workload.tpot_slo_ms"],
        instances=None if demand.instances is None else parts[c]))
        for c, (name, s, i) in enumerate(shapes)]  # a class's instances hold its own headroom: its fleet's cost as a scenario's
    per_class = rule.class_columns(asked, power_weight, tables, ahead, [functools.partial(class_keys, scenario, name) for name in names])
    rates = [c["tokens_per_s_instance"] for c in per_class]
    split = load = mx.instance_shares(weights, rates)
    kept = None
    if scenario.workload.class_instances == "whole":
        kept, counts = mx.whole_instance_rate(weights, rates, scenario.cluster.simulated())
        load = [s * kept for s in split]  # instance time each class's share of the mix keeps busy
        held = sum(counts[1:], counts[0])  # 0 where the mix is unserved: the continuous split stands (moot, no tokens)
        split = [np.where(held > 0, n / scenario.cluster.simulated(), s) for n, s in zip(counts, split)]

    def weighted(by: list[np.ndarray], column: str) -> np.ndarray:
        terms = [b * c[column] for b, c in zip(by, per_class)]
        return sum(terms[1:], terms[0])

    out = {
        "tokens_per_s_instance": mx.mix_rate(weights, rates),
        "tokens_per_s_per_gpu": mx.mix_rate(weights, [c["tokens_per_s_per_gpu"] for c in per_class]),
        "ttft_ms": weighted(shares, "ttft_ms"),
        "tpot_ms": weighted(weights, "tpot_ms"),
        "batch": np.rint(weighted(split, "batch") / (sum(split[1:], split[0]) if kept is not None else 1.0)).astype(np.int64),
        "slo_met": np.minimum.reduce([c["slo_met"] for c in per_class]),
        "busy_fraction": weighted(load, "busy_fraction"),
        "output_tokens_per_request": mx.mean_output_tokens(shares, outputs),
    }
    for name, share, instances, c in zip(names, shares, split, per_class):
        out.update({f"{MIX_PREFIX}{name}.request_share": share, f"{MIX_PREFIX}{name}.instance_share": instances,
                    **{f"{MIX_PREFIX}{name}.{k}": c[k] for k in ("tokens_per_s_instance", "ttft_ms", "tpot_ms", "slo_met")}})
    if kept is not None:
        out["tokens_per_s_instance"] = out["tokens_per_s_instance"] * kept
        out["tokens_per_s_per_gpu"] = out["tokens_per_s_per_gpu"] * kept
        for name, n, busy in zip(names, counts, load):
            out[f"{MIX_PREFIX}{name}.instances"] = n
            out[f"{MIX_PREFIX}{name}.idle_share"] = 1.0 - np.divide(busy * scenario.cluster.simulated(), n, out=np.ones_like(n), where=n > 0)
    out = checked(out, inputs)
    if demand is not None:  # what each class's load model reads, handed to the load stage
        for name, c, weight, tokens, instances in zip(names, per_class, weights, outputs, parts):
            prefix = f"{MIX_STEPS_PREFIX}{name}."
            out |= {prefix + k: v for k, v in c.items() if k.startswith((LOAD_STEPS_PREFIX, FLEET_SEARCH_PREFIX))}
            out |= {prefix + "token_share": per_trial(weight, inputs.n), prefix + "output_tokens": per_trial(tokens, inputs.n),
                    prefix + "instances": np.full(inputs.n, instances)}
    return out


@lru_cache(maxsize=64)
def median_instance_shares(scenario: Scenario, ahead: AheadWeights) -> tuple[float, ...]:
    """Each class's share of the instances (``mix.NAME.instance_share``) at the median
    inputs, its plan at saturation chosen by the objective with ``ahead``'s weights: the
    instance time each class's share of the tokens needs, ``(w_c / T_c) / sum_k (w_k / T_k)``
    (:func:`mcengine.analytic.mix.instance_shares`), at any demand (its peak included) the
    same proportions."""
    median = ahead_inputs(scenario, "median")
    mix = mix_columns(scenario, median, ahead.at(scenario, "median"), ahead=ahead)
    return tuple(float(at_trial(mix[f"{MIX_PREFIX}{name}.instance_share"])) for name, _ in scenario.workload.classes)


@lru_cache(maxsize=64)
def class_split(scenario: Scenario, ahead: AheadWeights) -> tuple[float, ...]:
    """A mix's instances under a demand (docs/load.md#chain): the ``cluster.instances``
    (``simulated_instances`` with a fleet bought, for the trials no fleet serves) split
    into whole instances per class in proportion to the capacity each class needs at the
    peak, the instance shares at the median inputs (:func:`median_instance_shares`), by
    largest remainder with at least one each (:func:`mcengine.analytic.mix.whole_split`).
    One split for every trial: the cluster is partitioned once, as an operator would,
    and each trial's classes are planned on their parts. A fixed cluster has at least
    one instance per class (the scenario's check,
    :func:`mcengine.scenario.checks.mix_load_problems`). With a fleet bought, the split of
    ``simulated_instances`` is only what a trial no fleet serves holds (it serves nothing):
    fewer of them than classes leave some class none (``whole_split`` gives the one each
    only where the total holds it)."""
    return tuple(float(x) for x in mx.whole_split(scenario.cluster.simulated(), list(median_instance_shares(scenario, ahead)), least=1))


@lru_cache(maxsize=64)
def capacity_table(scenario: Scenario, ahead: AheadWeights) -> np.ndarray:
    """``float64[instance_gpus + 1]``: the share of an instance's throughput it keeps with
    ``k`` GPUs lost and resharded (docs/model.md#reshard), at the median inputs: its plan
    rule's (:meth:`~.rules.PlanRule.capacity_table`), and for a mix the mean of its classes' tables (each
    class's own plan, lengths and SLOs) weighted by the instance shares at the median
    inputs, planned by the objective with ``ahead``'s weights (the class scenarios
    share the mix's: the weight reads no ``workload`` key; normalised: instances left over by whole-instance
    rounding serve no class).
    The life kernel adds ``capacity[k]`` x time to the served capacity, so with the
    instances exchangeable (a failure lands on a class-``c`` instance with probability
    ``s_c``) the weighted table gives the mix's expected capacity availability exactly,
    a degraded instance counting as that share of an instance of its class, and the
    router keeping the classes' shares of the capacity. Cached, so read-only."""
    if not scenario.workload.classes:
        table = rule_of(scenario).capacity_table(scenario, ahead)
    else:
        shares = median_instance_shares(scenario, ahead)
        tables = []
        for share, (name, _) in zip(shares, scenario.workload.classes):
            with class_keys(scenario, name):
                tables.append(share * rule_of(scenario).capacity_table(class_scenario(scenario, name), ahead))
        table = sum(tables[1:], tables[0]) / sum(shares)
    table.setflags(write=False)  # cached: every caller shares it
    return table
