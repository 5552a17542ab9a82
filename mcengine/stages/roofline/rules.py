"""The plan rules of ``workload.plan`` (docs/model.md#plan), registered by name.

A rule says when the plan each trial serves is chosen, and owns everything that follows
from that choice: the trials' columns (:meth:`PlanRule.columns`), the plan in use at one
trial (:meth:`PlanRule.plan`, ``mcengine roofline``), each serving mode's best plan beside
it (:meth:`PlanRule.modes`), the reshard table (:meth:`PlanRule.capacity_table`), the
candidate evaluations the chain can make ahead (:meth:`PlanRule.table`) and the points
where it chooses ahead of the trials (:meth:`PlanRule.ahead_points`), whose econ weights
the pipeline hands in as :class:`AheadWeights`.

* ``"per_trial"`` (:class:`PerTrial`): every trial its own best plan
  (:func:`~.planner.plan_per_trial`).
* ``"quantile"`` (:class:`Quantile`): the per-trial rule's plan at pessimistic inputs
  (:func:`~.planner.pessimistic_inputs`) serves every trial.
* ``"median"`` (:class:`Median`): the median rule of :mod:`.median_plan`.

:func:`rule_of` looks a scenario's rule up in :data:`RULES`; a new rule is a subclass
registered with :func:`register`.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod

from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

import numpy as np

from ...analytic import serving as sv
from ...errors import InputError, Problem
from ...scenario import Scenario
from ...scenario.sampling import TrialInputs, quantile_inputs
from . import median_plan, planner
from .columns import at_trial, evaluation_columns, planned_columns
from .load_steps import one_plan_steps, planned_steps
from .layout import evaluate, lengths_label
from .serving import Plan, evaluate_plan


def ahead_inputs(scenario: Scenario, point: str) -> TrialInputs:
    """The one trial at which a plan is chosen ahead of the trials, by ``point`` (a field
    of :class:`AheadWeights`): the median inputs (``"median"``), or
    :func:`~.planner.pessimistic_inputs` at ``workload.plan_quantile`` (``"pessimistic"``)."""
    if point == "median":
        return quantile_inputs(scenario, 0.5)
    return planner.pessimistic_inputs(scenario, scenario.workload.plan_quantile.value)


@dataclass(frozen=True)
class AheadWeights:
    """The ``power_weight`` of :func:`~.planner.objective` for the plans chosen ahead of the
    trials, at each point where one is chosen (:func:`ahead_inputs`): by
    ``workload.plan_objective = "cost"`` the econ stage's planning power weight there
    (:func:`mcengine.stages.econ.planning_power_weight`, computed and handed in by
    :func:`mcengine.pipeline.ahead_weights`); None, the most tokens/s, for ``"throughput"``.
    Plain floats: a cache key of the plans chosen with them."""

    median: float | None = None
    pessimistic: float | None = None

    def at(self, scenario: Scenario, point: str) -> float | None:
        """The weight at ``point``; ValueError where ``scenario`` plans by cost and it was
        not given (a plan chosen by throughput in its stead would be another model)."""
        weight = getattr(self, point)
        if weight is None and scenario.workload.plan_objective == "cost":
            raise ValueError(f"workload.plan_objective = \"cost\" plans at the {point} inputs with the econ weight there: "
                             "pass it (mcengine.pipeline.ahead_weights)")
        return weight


class PlanRule(ABC):
    """One value of ``workload.plan``: how the plan each trial serves is chosen."""

    #: The ``workload.plan`` value the rule is registered under.
    name: ClassVar[str]
    #: The points (:func:`ahead_inputs`) at which the rule chooses its trials' plan.
    plans_at: ClassVar[tuple[str, ...]] = ()
    #: Whether the rule evaluates every candidate plan per block of trials (:meth:`table`).
    tabled: ClassVar[bool] = False
    #: Whether :meth:`plan` and :meth:`modes` read the econ weight at their inputs.
    weighs: ClassVar[bool] = True

    def ahead_points(self, reshard: bool) -> tuple[str, ...]:
        """The points (:func:`ahead_inputs`) whose weights the rule reads: those of its
        trials' plan and, with ``reshard``, those of its reshard table."""
        return self.plans_at

    @abstractmethod
    def columns(self, scenario: Scenario, inputs: TrialInputs, power_weight, tables: dict | None, ahead: AheadWeights,
                shape: str = "", demand=None) -> dict[str, np.ndarray]:
        """The per-trial columns of one request shape (:func:`mcengine.stages.roofline.throughput`;
        ``power_weight`` the trials' own econ weight, ``tables`` the caller's store of
        candidate evaluations, in which this shape's key is ``shape``; ``demand`` the load
        a per-trial choice plans for, :class:`~.planner_load.Demand`: a plan chosen ahead
        of the trials does not read it)."""

    def class_columns(self, asked: list[tuple], power_weight, tables: dict | None, ahead: AheadWeights, keys: list) -> list[dict[str, np.ndarray]]:
        """:meth:`columns` of each request class ``(shape, scenario, inputs, demand)`` of
        ``asked`` (a mix's, :func:`mcengine.stages.roofline.mix_columns`), each inside its
        ``keys`` context (which names its bad input): one class after another."""
        out = []
        for (shape, scenario, inputs, demand), key in zip(asked, keys):
            with key():
                out.append(self.columns(scenario, inputs, power_weight, tables, ahead, shape, demand=demand))
        return out

    @abstractmethod
    def plan(self, scenario: Scenario, inputs: TrialInputs, weight: float | None, ahead: AheadWeights) -> tuple[Plan, object]:
        """The plan in use at the one trial ``inputs`` and its evaluation there (``weight``:
        the econ weight at ``inputs``)."""

    @abstractmethod
    def modes(self, scenario: Scenario, inputs: TrialInputs, weight: float | None) -> tuple[dict, dict]:
        """At the one trial ``inputs``: each serving mode's best evaluation by this rule
        (None where the mode has none) and, by mode, why it has none (``""`` where it has)."""

    @abstractmethod
    def capacity_table(self, scenario: Scenario, ahead: AheadWeights) -> np.ndarray:
        """``float64[instance_gpus + 1]``: the reshard table of one request shape
        (docs/model.md#reshard)."""

    def table(self, scenario: Scenario, inputs: TrialInputs) -> planner.CandidateTable:
        """The candidate evaluations of a block of trials, for a :attr:`tabled` rule."""
        raise TypeError(f"the {self.name!r} plan rule evaluates no candidate table (it is not tabled)")


#: The plan rules by ``workload.plan`` value (:func:`register`).
RULES: dict[str, PlanRule] = {}


def register(cls: type[PlanRule]) -> type[PlanRule]:
    """Class decorator: one instance of ``cls`` in :data:`RULES` under ``cls.name``."""
    RULES[cls.name] = cls()
    return cls


def rule_of(scenario: Scenario) -> PlanRule:
    """The rule of ``scenario.workload.plan``."""
    return RULES[scenario.workload.plan]


class Searched(PlanRule):
    """A rule that plans with the per-trial search (:mod:`.planner`), in the trials or
    ahead of them."""

    def ahead_points(self, reshard: bool) -> tuple[str, ...]:
        return ("median", *self.plans_at) if reshard else self.plans_at

    def modes(self, scenario: Scenario, inputs: TrialInputs, weight: float | None) -> tuple[dict, dict]:
        """The per-trial rule's best of each mode (:func:`~.planner.best_by_mode`)."""
        found = planner.best_by_mode(scenario, inputs, weight)
        best = {name: (found[name][1] if found.get(name) else None) for name in sv.SERVING_MODES}
        why = {name: "" if found.get(name) else ("not searched (workload.serving)" if name not in found else median_plan.infeasible_why(scenario, name))
               for name in sv.SERVING_MODES}
        return best, why

    def capacity_table(self, scenario: Scenario, ahead: AheadWeights) -> np.ndarray:
        """``table[k] = min(1, thr(n - k) / full)`` with ``k`` of the ``n = instance_gpus``
        GPUs lost, at the median inputs: ``full`` is the output tokens/s of the plan in use
        (:meth:`plan`); ``r(g)`` the tokens/s of the plan the per-trial rule picks for an
        instance of exactly ``g`` GPUs, in the same searched serving modes and by the same
        objective as the full instance's, with the full cluster's weight at the median
        (``ahead``'s; 0 if no plan meets the SLOs); ``thr(m)`` the best set of replicas that
        fits ``m`` GPUs: ``q = floor(m / g)`` replicas of one size ``g`` plus the best single
        instance on the ``m - q g`` GPUs left over. The sizes ``g`` are
        :func:`~.planner.layout_sizes` (independent of ``n``), so the cost is bounded by the
        model's divisors and layers. ``table[0] = 1``.

        The table is a ratio of tokens/s whatever the objective: the econ stage multiplies the
        full plan's tokens/s by the capacity availability the table feeds, charges capex and
        repairs whole, and the dynamic power at the full plan's busy fraction times that same
        availability (docs/model.md#reshard), so the cost per token, ``(C + D u A) / (T A)``,
        falls as the tokens a degraded instance keeps rise and reads nothing else of its plan;
        for the same reason ``m`` GPUs are split into the replicas of the chosen plans that
        keep the most tokens/s.
        """
        n = scenario.cluster.instance_gpus
        median = ahead_inputs(scenario, "median")
        weight = ahead.at(scenario, "median")  # the whole cluster's: a degraded instance is part of it
        _, e = self.plan(scenario, median, weight, ahead)
        full = float(np.ravel(planner.served_tokens(e))[0])
        if not full > 0.0:
            return np.concatenate([[1.0], np.zeros(n)])
        single = np.zeros(n + 1)  # r(g) at the sizes with a layout
        for g in planner.layout_sizes(scenario):
            single[g] = planner.best_tokens(planner.resized(scenario, g), median, weight) if g != n else full
        best_single = np.maximum.accumulate(single)  # the best single instance on at most m GPUs
        m = np.arange(n + 1)
        thr = best_single.copy()
        for g in np.flatnonzero(single > 0.0):
            thr = np.maximum(thr, (m // g) * single[g] + best_single[m % g])
        table = np.minimum(1.0, thr[::-1] / full)
        table[0] = 1.0
        return table


@register
class PerTrial(Searched):
    """``"per_trial"``: in every trial, the best plan by :func:`~.planner.objective` among
    the candidates that fit HBM and meet that trial's SLOs (docs/model.md#plan)."""

    name = "per_trial"
    tabled = True

    def columns(self, scenario, inputs, power_weight, tables, ahead, shape="", demand=None):
        return self.class_columns([(shape, scenario, inputs, demand)], power_weight, tables, ahead, [contextlib.nullcontext])[0]

    def class_columns(self, asked, power_weight, tables, ahead, keys):
        """Each class planned by :func:`~.planner.plan_jointly`: under a demand, the
        classes' choices in one pass."""
        got = [None if tables is None else tables.get(shape) for shape, _, _, _ in asked]
        blocks = planner.plan_jointly([(scenario, inputs, power_weight, table, demand) for (_, scenario, inputs, demand), table in zip(asked, got)], keys)
        out = []
        for (shape, scenario, inputs, demand), block, key in zip(asked, blocks, keys):
            if tables is not None:
                tables[shape] = block.table
            with key():
                columns = planned_columns(block, inputs)
                out.append(columns if demand is None else columns | planned_steps(scenario, block, inputs))
        return out

    def plan(self, scenario, inputs, weight, ahead):
        plan = planner.plan_per_trial(scenario, inputs, weight).plan_of(0)
        return plan, evaluate_plan(scenario, plan, inputs)

    def table(self, scenario, inputs):
        return planner.evaluate_candidates(scenario, inputs)


@lru_cache(maxsize=64)
def quantile_plan(scenario: Scenario, weight: float | None) -> tuple[Plan, float | None]:
    """``workload.plan = "quantile"``: the per-trial rule's plan at
    :func:`~.planner.pessimistic_inputs` (``workload.plan_quantile``), by the objective
    with the ``weight`` there (:attr:`AheadWeights.pessimistic`), and, disaggregated, its
    prefill share there (None otherwise). Raises InputError when the model fits no plan
    there."""
    block = planner.plan_per_trial(scenario, ahead_inputs(scenario, "pessimistic"), weight)
    plan = block.plan_of(0)
    share = float(block.evaluation(0).prefill_share[0]) if plan.mode == "disaggregated" else None
    return plan, share


@register
class Quantile(Searched):
    """``"quantile"``: one plan, chosen by the per-trial rule at pessimistic inputs
    (:func:`quantile_plan`), serves every trial, disaggregated with the prefill share it
    was planned with: a plan provisioned in advance."""

    name = "quantile"
    plans_at = ("pessimistic",)

    def columns(self, scenario, inputs, power_weight, tables, ahead, shape="", demand=None):
        plan, share = quantile_plan(scenario, ahead.at(scenario, "pessimistic"))
        e = evaluate_plan(scenario, plan, inputs, share)
        columns = evaluation_columns(e, inputs, plan.mode, "at pessimistic inputs (workload.plan_quantile)")
        return columns if demand is None else columns | one_plan_steps(scenario, e, plan.mode, inputs)

    def plan(self, scenario, inputs, weight, ahead):
        plan, share = quantile_plan(scenario, ahead.at(scenario, "pessimistic"))
        return plan, evaluate_plan(scenario, plan, inputs, share)


@register
class Median(PlanRule):
    """``"median"``: one plan chosen at the median inputs by the median rule
    (:mod:`.median_plan`, by tokens/s per GPU whatever the objective) serves every trial;
    it reads no econ weight."""

    name = "median"
    weighs = False

    def columns(self, scenario, inputs, power_weight, tables, ahead, shape="", demand=None):
        if scenario.workload.serving != "static":
            plan, share = median_plan.chosen_plan(scenario)
            e = evaluate_plan(scenario, plan, inputs, share)
            columns = evaluation_columns(e, inputs, scenario.workload.serving)
            return columns if demand is None else columns | one_plan_steps(scenario, e, plan.mode, inputs)
        best, _ = median_plan.choose_layout(scenario)
        e = evaluate(scenario, best.layout, inputs)
        misfit = ~e.fits
        if misfit.any():
            i = int(np.argmax(misfit))
            key = "workload.batch" if scenario.workload.batch != "auto" and e.batch_memory[i] >= 1 else "gpu.hbm_gb"
            raise InputError(
                Problem(
                    key,
                    scenario.workload.batch if key == "workload.batch" else at_trial(inputs["gpu.hbm_gb"], i),
                    f"in trial {inputs.trial_start + i} only {int(e.batch_memory[i])} sequences fit HBM at layout tensor "
                    f"{best.layout.tensor} x pipeline {best.layout.pipeline} (gpu.hbm_gb = {at_trial(inputs['gpu.hbm_gb'], i):g}, "
                    f"workload.hbm_usable_fraction = {at_trial(inputs['workload.hbm_usable_fraction'], i):g}, a sequence's context at "
                    f"{lengths_label(scenario)}); allowed: inputs whose whole range fits the weights and the batch",
                )
            )
        columns = evaluation_columns(e, inputs, "static")
        return columns if demand is None else columns | one_plan_steps(scenario, e, "static", inputs)

    def plan(self, scenario, inputs, weight, ahead):
        plan, share = median_plan.chosen_plan(scenario)
        return plan, evaluate_plan(scenario, plan, inputs, share)

    def modes(self, scenario, inputs, weight):
        """The median choice of each mode (:func:`~.median_plan.choose_serving`)."""
        choice = median_plan.choose_serving(scenario)
        return dict(choice.best), dict(choice.why)

    def capacity_table(self, scenario, ahead):
        """The static layout table of :func:`~.median_plan.static_capacity`."""
        return median_plan.static_capacity(scenario)
