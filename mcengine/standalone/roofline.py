"""``mcengine roofline``: the plan in use at the median inputs, with every searched layout and each serving mode's best."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..analytic.roofline import model as rm, weights as rw, collectives as rc
from ..analytic import serving as sv
from ..pipeline import ahead_weights, planning_weight
from ..scenario import Scenario
from ..scenario.sampling import quantile_inputs
from ..stages.roofline.layout import Evaluation, candidate_layouts, evaluate, lengths_of, rates_of
from ..stages.roofline.serving import Plan, evaluate_plan
from ..columns import MIX_PREFIX
from ..stages.roofline import at_trial, class_keys, class_scenario, mix_columns, rule_of
from ..units import BYTES_PER_GB, MS_PER_S


def _ttft_limit(e: Evaluation) -> int | None:
    """The TTFT batch limit of trial 0, None without a TTFT SLO ("inf")."""
    return None if np.isinf(at_trial(e.ttft_slo_ms)) else int(e.batch_ttft[0])


def _layout_row(e: Evaluation, chosen: bool) -> dict:
    return {
        "tensor": e.layout.tensor,
        "pipeline": e.layout.pipeline,
        "attention": e.layout.attention_label,
        "fits": bool(e.fits[0]),
        "slo_met": bool(e.slo_met[0]),
        "batch": int(e.batch[0]),
        "batch_limits": {"memory": int(e.batch_memory[0]), "slo": int(e.batch_slo[0]), "ttft": _ttft_limit(e)},
        "ttft_ms": at_trial(e.ttft.total_s) * MS_PER_S,
        "tpot_ms": at_trial(e.decode.total_s) * MS_PER_S,
        "ttft_batch_ms": at_trial(e.ttft_batch.total_s) * MS_PER_S,
        "tokens_per_s_per_gpu": at_trial(e.tokens_per_s_per_gpu),
        "chosen": chosen,
    }


def slo_failures(e: Evaluation) -> list[dict]:
    """Which SLO limits trial 0 of ``e`` misses, by how much: ``limit`` ("tpot" or
    "ttft"), the time, the SLO and the excess in ms (empty when both are met)."""
    out = []
    for limit, phase, slo, met in (("tpot", e.decode, e.tpot_slo_ms, e.tpot_met), ("ttft", e.ttft_batch, e.ttft_slo_ms, e.ttft_met)):
        if not bool(np.ravel(met)[0]):
            value = at_trial(phase.total_s) * MS_PER_S
            out.append({"limit": limit, "ms": value, "slo_ms": at_trial(slo), "over_ms": value - at_trial(slo)})
    return out


def median_lengths(scenario: Scenario) -> tuple:
    """The mean prompt and output lengths at the median inputs (a number as it is given)."""
    lengths = lengths_of(scenario, quantile_inputs(scenario, 0.5))
    return tuple(x if np.ndim(x) == 0 else at_trial(x) for x in (lengths.prompt_tokens, lengths.output_tokens))


def allreduce_per_phase(scenario: Scenario, e: Evaluation, median) -> dict[str, str]:
    """The all-reduce algorithm the prefill (of the operating batch) and a decode step
    of ``e`` run at the median inputs ("auto" resolves per message size; "none" at t = 1)."""
    m, layout = scenario.workload.model, e.layout
    rates = rates_of(scenario, median)
    p = layout.pipeline
    b = float(e.batch[0]) / min(float(e.batch[0]), p)
    message = b * m.hidden * rm.ACT_BYTES
    return {
        "prefill": rc.allreduce_used(message * median_lengths(scenario)[0], layout.tensor, rates, layout.allreduce),
        "decode": rc.allreduce_used(message, layout.tensor, rates, layout.allreduce),
    }


def roofline_summary(scenario: Scenario) -> dict:
    """The body of ``mcengine roofline``: deterministic, at the median inputs, for the plan
    in use there (``workload.plan``'s rule: :meth:`mcengine.stages.roofline.rules.PlanRule.plan`).

    ``plan`` names it (mode and layout(s)), ``plan_rule`` is ``workload.plan``.
    ``prefill``: ``ttft_ms`` and ``ttft_bound`` for one prompt; ``tokens_per_s``
    (prompt tokens/s), ``batch_ms`` and ``bound`` for the prefill of the operating batch
    (continuous: a step's chunk; disaggregated: a prefill pass, its TTFT with the KV
    transfer). ``decode``: the operating ``batch``, ``tpot_ms``, ``tokens_per_s`` = batch /
    TPOT and ``bound``. ``tokens_per_s_instance`` includes the prefill share (module
    docstring); ``tokens_per_s_per_gpu`` divides it by ``cluster.instance_gpus``. ``terms``
    holds the compute/memory/comm/overhead ms of the plan's phases (``total =
    max(max(compute, memory), o comm) + (1 - o) comm + overhead``). ``layouts`` lists
    every searched layout in the plan's mode (disaggregated: each as the decode layout,
    with the plan's prefill layout). ``allreduce`` names the algorithm of each phase,
    ``attention`` the plan's attention mode; ``slo_failed`` lists the SLO limits missed
    (a trial at these inputs delivers no tokens). ``serving`` names the plan's mode and
    ``serving_modes`` gives each mode's best plan (the one in use and the runners-up:
    layout(s), batch, TPOT, TTFT, throughput; continuous adds its chunk, batch limits and
    the one that binds, disaggregated its prefill layout and batch, prefill share, KV
    transfer and KV link load).
    """
    if scenario.workload.classes:
        return _mix_summary(scenario)
    median = quantile_inputs(scenario, 0.5)
    plan, e = rule_of(scenario).plan(scenario, median, plan_weight(scenario, median), ahead_weights(scenario))
    w, m = scenario.workload, scenario.workload.model
    layout = plan.layout
    per_gpu = at_trial(e.tokens_per_s_per_gpu)
    body = {
        "plan": plan.describe(),
        "plan_rule": w.plan,
        **_phases(scenario, plan, e),
        "tokens_per_s_per_gpu": per_gpu,
        "parallelism": {"tensor": layout.tensor, "pipeline": layout.pipeline, "expert_parallel": layout.expert_parallel},
        "allreduce": allreduce_per_phase(scenario, e, median),
        "attention": layout.attention_label,
        "tokens_per_s_instance": at_trial(e.tokens_per_s_instance),
        "tokens_per_s_per_h100_equivalent": per_gpu / scenario.gpu.h100_equivalents.value,
        "slo_met": bool(e.slo_met[0]),
        "tpot_slo_ms": at_trial(median["workload.tpot_slo_ms"]),
        "ttft_slo_ms": at_trial(median["workload.ttft_slo_ms"]),
        "kv_bytes_per_token": rw.kv_bytes_per_token_rank(m, 1, w.kv_bytes.value),
        "kv_bytes_per_token_per_gpu": rw.kv_bytes_per_token_per_gpu(m, layout, w.kv_bytes.value),
        "weights_gb_per_gpu": rw.weights_bytes_per_gpu(m, layout, w.bytes_per_param.value) / BYTES_PER_GB,
        "layouts": _layout_rows(scenario, plan, median),
    }
    body.update(serving_section(scenario, plan, e, median))
    return body


def _mix_summary(scenario: Scenario) -> dict:
    """``mcengine roofline`` of a workload mix (docs/model.md#mix): at the median inputs,
    ``classes`` holds each request class's own summary (its lengths, planned alone) with its
    ``instance_share`` and ``request_share``, and ``tokens_per_s_instance_mix`` the mix's
    output tokens/s per instance; the top level repeats the summary of the class with the
    most instances (named by ``class``). With ``workload.class_instances = "whole"`` each
    class also shows its whole ``instances`` and ``idle_share``, and ``rounding_loss`` is
    the share of the continuous split's mix rate the whole instances lose (0 for a mix no
    split serves)."""
    median = quantile_inputs(scenario, 0.5)
    weight, ahead = planning_weight(scenario, median), ahead_weights(scenario)
    mix = mix_columns(scenario, median, weight, ahead=ahead)
    classes = {}
    for name, _ in scenario.workload.classes:
        shares = {k: at_trial(mix[f"{MIX_PREFIX}{name}.{k}"]) for k in ("instance_share", "request_share")}
        with class_keys(scenario, name):
            classes[name] = {**roofline_summary(class_scenario(scenario, name)), **shares}
    main = max(classes, key=lambda name: classes[name]["instance_share"])
    out = {**classes[main], "class": main, "classes": classes, "tokens_per_s_instance_mix": at_trial(mix["tokens_per_s_instance"])}
    if scenario.workload.class_instances == "whole":  # whole instances per class: what the rounding costs
        for name in classes:
            classes[name].update({k: at_trial(mix[f"{MIX_PREFIX}{name}.{k}"]) for k in ("instances", "idle_share")})
        split = dataclasses.replace(scenario, workload=dataclasses.replace(scenario.workload, class_instances="continuous"))
        continuous = at_trial(mix_columns(split, median, weight, ahead=ahead)["tokens_per_s_instance"])
        out["rounding_loss"] = 1.0 - out["tokens_per_s_instance_mix"] / continuous if continuous > 0 else 0.0
    return out


def _phases(scenario: Scenario, plan: Plan, e) -> dict:
    """``prefill``, ``decode``, ``terms``, ``batch_limits`` and ``slo_failed`` of the plan
    ``plan`` evaluated as ``e`` (trial 0)."""
    s, o = median_lengths(scenario)
    if plan.mode == "static":
        batch = int(e.batch[0])
        return {
            "prefill": {
                "ttft_ms": at_trial(e.ttft.total_s) * MS_PER_S,
                "tokens_per_s": batch * s / at_trial(e.prefill.total_s),
                "bound": str(e.prefill.bound[0]),
                "ttft_bound": str(e.ttft.bound[0]),
                "batch_ms": at_trial(e.prefill.total_s) * MS_PER_S,
                "ttft_batch_ms": at_trial(e.ttft_batch.total_s) * MS_PER_S,
            },
            "decode": _decode_block(batch, e.decode),
            "terms": {"prefill": e.prefill.terms_ms(), "ttft": e.ttft.terms_ms(), "decode": e.decode.terms_ms()},
            "batch_limits": {"memory": int(e.batch_memory[0]), "slo": int(e.batch_slo[0]), "ttft": _ttft_limit(e)},
            "slo_failed": slo_failures(e),
        }
    if plan.mode == "continuous":
        batch, step = int(e.batch[0]), e.step
        ttft = None if np.isinf(at_trial(e.ttft_slo_ms)) else int(e.batch_ttft[0])
        return {
            "prefill": {"ttft_ms": at_trial(e.ttft_s) * MS_PER_S, "tokens_per_s": batch * s / o / at_trial(step.total_s),
                        "bound": str(step.bound[0]), "ttft_bound": str(step.bound[0]), "batch_ms": at_trial(step.total_s) * MS_PER_S,
                        "ttft_batch_ms": at_trial(e.ttft_s) * MS_PER_S},
            "decode": _decode_block(batch, step),
            "terms": {"decode": step.terms_ms()},
            "batch_limits": {"memory": int(e.batch_memory[0]), "slo": int(e.batch_slo[0]), "ttft": ttft, "chunk": int(e.batch_chunk[0])},
            "slo_failed": _failures(at_trial(step.total_s), at_trial(e.tpot_slo_ms), at_trial(e.ttft_s), at_trial(e.ttft_slo_ms)),
        }
    d = e.decode
    return {
        "prefill": {"ttft_ms": at_trial(e.ttft_s) * MS_PER_S, "tokens_per_s": at_trial(e.prefill_batch) * s / at_trial(e.prefill.total_s),
                    "bound": str(e.prefill.bound[0]), "ttft_bound": str(e.ttft.bound[0]), "batch_ms": at_trial(e.prefill.total_s) * MS_PER_S,
                    "ttft_batch_ms": at_trial(e.ttft_s) * MS_PER_S},
        "decode": _decode_block(int(d.batch[0]), d.decode),
        "terms": {"prefill": e.prefill.terms_ms(), "ttft": e.ttft.terms_ms(), "decode": d.decode.terms_ms()},
        "batch_limits": {"memory": int(d.batch_memory[0]), "slo": int(d.batch_slo[0]), "ttft": None},
        "slo_failed": _failures(at_trial(d.decode.total_s), at_trial(d.tpot_slo_ms), at_trial(e.ttft_s), at_trial(e.ttft_slo_ms)),
    }


def _decode_block(batch: int, step: rm.PhaseTimes) -> dict:
    tpot_s = at_trial(step.total_s)
    return {"batch": batch, "tpot_ms": tpot_s * MS_PER_S, "tokens_per_s": batch / tpot_s, "bound": str(step.bound[0])}


def _failures(tpot_s: float, tpot_slo_ms: float, ttft_s: float, ttft_slo_ms: float) -> list[dict]:
    """:func:`slo_failures` from a plan's TPOT and TTFT (seconds) and their SLOs (ms)."""
    out = []
    for limit, value_s, slo in (("tpot", tpot_s, tpot_slo_ms), ("ttft", ttft_s, ttft_slo_ms)):
        if value_s * MS_PER_S > slo:
            out.append({"limit": limit, "ms": value_s * MS_PER_S, "slo_ms": slo, "over_ms": value_s * MS_PER_S - slo})
    return out


def _layout_rows(scenario: Scenario, plan: Plan, median) -> list[dict]:
    """Every searched layout in the plan's mode at the median inputs (static: the rows of
    :func:`_layout_row`; disaggregated: each layout decoding, with the plan's prefill layout)."""
    if plan.mode == "static":
        return [_layout_row(e, e.layout == plan.layout) for e in (evaluate(scenario, layout, median) for layout in candidate_layouts(scenario))]
    rows = []
    for layout in candidate_layouts(scenario):
        e = evaluate_plan(scenario, Plan(plan.mode, layout, plan.prefill_layout), median)
        rows.append({"tensor": layout.tensor, "pipeline": layout.pipeline, "attention": layout.attention_label, "fits": bool(e.fits[0]),
                     "slo_met": bool(e.slo_met[0]), "batch": int(e.batch[0]), "ttft_ms": at_trial(e.ttft_s) * MS_PER_S,
                     "tpot_ms": at_trial(e.tpot_s) * MS_PER_S, "tokens_per_s_per_gpu": at_trial(e.tokens_per_s_per_gpu),
                     "chosen": layout == plan.layout})
    return rows


def _mode_row(scenario: Scenario, name: str, e, why: str, chosen: bool) -> dict:
    """One serving mode's best combination at the median inputs (``feasible`` false: ``why``)."""
    if e is None:
        return {"feasible": False, "why": why, "chosen": False}
    per_gpu = at_trial(e.tokens_per_s_per_gpu)
    row = {
        "feasible": True,
        "chosen": chosen,
        "tensor": e.layout.tensor,
        "pipeline": e.layout.pipeline,
        "batch": int(e.batch[0]),
        "tpot_ms": at_trial(e.tpot_s) * MS_PER_S,
        "ttft_ms": at_trial(e.ttft_s) * MS_PER_S,
        "slo_met": bool(e.slo_met[0]),
        "tokens_per_s_instance": at_trial(e.tokens_per_s_instance),
        "tokens_per_s_per_gpu": per_gpu,
        "tokens_per_s_per_h100_equivalent": per_gpu / scenario.gpu.h100_equivalents.value,
    }
    if name == "continuous":
        w = scenario.workload
        row["chunk_tokens"] = at_trial(sv.chunk_tokens(e.batch, *median_lengths(scenario)))
        ttft = None if np.isinf(at_trial(e.ttft_slo_ms)) else int(e.batch_ttft[0])
        row["batch_limits"] = {"memory": int(e.batch_memory[0]), "slo": int(e.batch_slo[0]), "chunk": int(e.batch_chunk[0]), "ttft": ttft}
        row["batch_binds"] = str(e.binding_limit[0]) if w.batch == "auto" else "fixed"
        row["terms"] = e.step.terms_ms()
    if name == "disaggregated":
        row["prefill"] = {"tensor": e.prefill_layout.tensor, "pipeline": e.prefill_layout.pipeline, "batch": int(e.prefill_batch[0])}
        row["kv_link_load"] = {direction: at_trial(load) for direction, load in e.kv_link_load.items()}
        row["prefill_share"] = at_trial(e.prefill_share)
        row["kv_transfer_ms"] = at_trial(e.kv_transfer_s) * MS_PER_S
        row["prefill_ttft_ms"] = at_trial(e.ttft.total_s) * MS_PER_S
    return row


def plan_weight(scenario: Scenario, inputs) -> np.ndarray | None:
    """The econ weight at the one trial ``inputs`` where ``scenario``'s plan rule reads one
    (:attr:`~mcengine.stages.roofline.rules.PlanRule.weighs`), else None."""
    return planning_weight(scenario, inputs) if rule_of(scenario).weighs else None


def serving_section(scenario: Scenario, plan: Plan | None = None, e=None, median=None) -> dict:
    """``"serving"`` (the mode of the plan in use) and ``"serving_modes"``: each mode's best
    plan at the median inputs, the one in use (``plan``, evaluated as ``e``; default:
    :meth:`mcengine.stages.roofline.rules.PlanRule.plan`) and the runner-up of every other mode
    (``workload.plan = "median"``: the median choice of each mode; otherwise the per-trial
    rule's best of each mode at the median, by ``workload.plan_objective`` with the weight
    there: :meth:`mcengine.stages.roofline.rules.PlanRule.modes`)."""
    median = quantile_inputs(scenario, 0.5) if median is None else median
    if plan is None:
        plan, e = rule_of(scenario).plan(scenario, median, plan_weight(scenario, median), ahead_weights(scenario))
    best, why = rule_of(scenario).modes(scenario, median, plan_weight(scenario, median))
    best[plan.mode] = e
    modes = {name: _mode_row(scenario, name, best[name], why.get(name, ""), name == plan.mode) for name in sv.SERVING_MODES}
    return {"serving": plan.mode, "serving_modes": modes}
