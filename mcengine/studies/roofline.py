"""``mcengine roofline``: the roofline stage at the median inputs, with every searched layout."""

from __future__ import annotations

import numpy as np

from ..analytic import roofline as ra
from ..analytic import serving as sv
from ..scenario import Scenario
from ..scenario.sampling import quantile_inputs
from ..stages._roofline_layout import Evaluation, choose_layout, rates_of
from ..stages._roofline_serving import choose_serving
from ..stages.roofline import at_trial
from ..units import BYTES_PER_GB, MS_PER_S


def _ttft_limit(e: Evaluation) -> int | None:
    """The TTFT batch limit of trial 0, None without a TTFT SLO ("inf")."""
    return None if np.isinf(at_trial(e.ttft_slo_ms)) else int(e.batch_ttft[0])


def _layout_row(e: Evaluation, chosen: bool) -> dict:
    return {
        "tensor": e.layout.tensor,
        "pipeline": e.layout.pipeline,
        "attention": e.layout.attention,
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


def allreduce_per_phase(scenario: Scenario, e: Evaluation, median) -> dict[str, str]:
    """The all-reduce algorithm the prefill (of the operating batch) and a decode step
    of ``e`` run at the median inputs ("auto" resolves per message size; "none" at t = 1)."""
    m, layout = scenario.workload.model, e.layout
    rates = rates_of(scenario, median)
    p = layout.pipeline
    b = float(e.batch[0]) / min(float(e.batch[0]), p)
    message = b * m.hidden * ra.ACT_BYTES
    return {
        "prefill": ra.allreduce_used(message * scenario.workload.prompt_tokens, layout.tensor, rates, layout.allreduce),
        "decode": ra.allreduce_used(message, layout.tensor, rates, layout.allreduce),
    }


def roofline_study(scenario: Scenario) -> dict:
    """The body of ``mcengine roofline``: deterministic, at the median inputs.

    ``prefill``: ``ttft_ms`` and ``ttft_bound`` for one prompt; ``tokens_per_s``
    (prompt tokens/s), ``batch_ms`` and ``bound`` for the prefill of the operating batch.
    ``decode``: the operating ``batch``, ``tpot_ms``, ``tokens_per_s`` = batch / TPOT and
    ``bound``. ``tokens_per_s_instance`` includes the prefill share (module docstring);
    ``tokens_per_s_per_gpu`` divides it by ``cluster.instance_gpus``. ``terms`` holds the
    compute/memory/comm/overhead ms of ``prefill`` (batch), ``ttft`` and ``decode``
    (``total = max(max(compute, memory), o comm) + (1 - o) comm + overhead``).
    ``layouts`` lists every searched layout. ``allreduce`` names the algorithm of each
    phase, ``attention`` the chosen attention mode; ``slo_failed`` lists the SLO limits
    missed (a trial at these inputs delivers no tokens), with ``ttft_batch_ms`` the TTFT
    of the batch's last request that the TTFT SLO bounds. These describe the static
    model; ``serving`` names the mode the run uses (``workload.serving``) and
    ``serving_modes`` gives each mode's best combination (layout(s), batch, TPOT, TTFT,
    throughput; continuous adds its chunk, batch limits and the one that binds, disaggregated its prefill
    layout and batch, prefill share, KV transfer and KV link load). The top-level ``tokens_per_s_*`` and
    ``slo_met`` are the chosen mode's (static's: unchanged).
    """
    best, evaluations = choose_layout(scenario)
    median = quantile_inputs(scenario, 0.5)
    w, m = scenario.workload, scenario.workload.model
    layout = best.layout
    batch = int(best.batch[0])
    tpot_s = at_trial(best.decode.total_s)
    per_gpu = at_trial(best.tokens_per_s_per_gpu)
    body = {
        "prefill": {
            "ttft_ms": at_trial(best.ttft.total_s) * MS_PER_S,
            "tokens_per_s": batch * w.prompt_tokens / at_trial(best.prefill.total_s),
            "bound": str(best.prefill.bound[0]),
            "ttft_bound": str(best.ttft.bound[0]),
            "batch_ms": at_trial(best.prefill.total_s) * MS_PER_S,
            "ttft_batch_ms": at_trial(best.ttft_batch.total_s) * MS_PER_S,
        },
        "decode": {"batch": batch, "tpot_ms": tpot_s * MS_PER_S, "tokens_per_s": batch / tpot_s, "bound": str(best.decode.bound[0])},
        "tokens_per_s_per_gpu": per_gpu,
        "parallelism": {"tensor": layout.tensor, "pipeline": layout.pipeline, "expert_parallel": layout.expert_parallel},
        "allreduce": allreduce_per_phase(scenario, best, median),
        "attention": layout.attention,
        "tokens_per_s_instance": at_trial(best.tokens_per_s_instance),
        "tokens_per_s_per_h100_equivalent": per_gpu / scenario.gpu.h100_equivalents.value,
        "terms": {"prefill": best.prefill.terms_ms(), "ttft": best.ttft.terms_ms(), "decode": best.decode.terms_ms()},
        "batch_limits": {"memory": int(best.batch_memory[0]), "slo": int(best.batch_slo[0]), "ttft": _ttft_limit(best)},
        "slo_met": bool(best.slo_met[0]),
        "slo_failed": slo_failures(best),
        "tpot_slo_ms": at_trial(best.tpot_slo_ms),
        "ttft_slo_ms": at_trial(best.ttft_slo_ms),
        "kv_bytes_per_token_per_gpu": ra.kv_bytes_per_token_per_gpu(m, layout, w.kv_bytes.value),
        "weights_gb_per_gpu": ra.weights_bytes_per_gpu(m, layout, w.bytes_per_param.value) / BYTES_PER_GB,
        "layouts": [_layout_row(e, e is best) for e in evaluations],
    }
    body.update(serving_section(scenario))
    chosen = body["serving_modes"][body["serving"]]
    for key in ("tokens_per_s_per_gpu", "tokens_per_s_instance", "tokens_per_s_per_h100_equivalent", "slo_met"):
        body[key] = chosen[key]
    return body


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
        row["chunk_tokens"] = at_trial(sv.chunk_tokens(e.batch, w.prompt_tokens, w.output_tokens))
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


def serving_section(scenario: Scenario) -> dict:
    """``"serving"`` (the mode the run uses) and ``"serving_modes"``: each mode's best
    combination (the chosen one and the runner-up of every other mode)."""
    choice = choose_serving(scenario)
    modes = {name: _mode_row(scenario, name, choice.best[name], choice.why[name], name == choice.mode) for name in sv.SERVING_MODES}
    return {"serving": choice.mode, "serving_modes": modes}
