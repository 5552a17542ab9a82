"""A synchronous training job: its step time (the roofline's sibling) and its effective
training time under interruptions and checkpoints (docs/training.md).

**Step model** (docs/training.md#step). A layout is tensor parallel ``t`` (inside one
scale-up domain) x pipeline ``p`` x data parallel ``d = G / (t p)`` over the job's ``G``
GPUs, with a sharding stage (ZeRO-1 or ZeRO-3) and activation recomputation (none or
full). One step trains ``B = global_batch_tokens / s`` sequences of ``s`` tokens, ``m =
B / d`` micro-batches of one sequence per replica.

* FLOPs per token: ``6 N + 12 L d_attn s`` (PaLM's model FLOPs, attention included;
  ``N`` the active parameters, ``d_attn`` = heads x head_dim); full recomputation adds a
  forward: ``8 N + 16 L d_attn s`` done, the model's still counted for the MFU.
* Per micro-batch and stage: compute ``s F_hw / (L) x (L/p) / (t peak e)`` plus the
  tensor-parallel collectives (sequence parallel: an all-gather and a reduce-scatter of
  the ``2 s d`` activation bytes around attention and the MLP, forward and backward:
  8 per layer, 12 with full recomputation; exposed ``1 - tp_overlap``) plus the
  pipeline's point-to-point sends (``2 v`` of ``2 s d / t`` bytes over scale-out);
  ``m`` of them take ``m (..) / (1 - b)`` with the interleaved bubble ``b = (p - 1) /
  (v m + p - 1)`` (Narayanan et al. 2021).
* Data parallel: a reduce-scatter of the gradients and an all-gather of the weights of
  ``2 N / (t p)`` bytes over the ``d`` replicas, on scale-out, once per step (ZeRO-1);
  ZeRO-3 gathers each layer's weights forward and backward and scatters its gradients,
  three ring collectives per layer; the share ``dp_overlap`` hides under the pipeline's time, never more than it.
* Memory per GPU: weights 2, gradients 2 and Adam's fp32 master and moments 12 bytes per
  parameter of the stage (``N / (t p)``), the 12 over ``d`` (ZeRO-1), all 16 over ``d``
  (ZeRO-3); activations ``a s d / t`` bytes per layer and micro-batch without
  recomputation (Korthikanti et al. 2022, ``a = 34``), ``2 s d / t`` with full, for
  ``min(p, m)`` micro-batches in flight on the first stage's ``ceil(L/p)`` layers.

The planner takes, per trial, the layout of least step time that fits (the job's GPUs
and their cost are fixed, so it is the least cost per trained token).

**Effective training time** (docs/training.md#ettr). With exponential interruptions of
mean ``M``, compute ``tau`` between checkpoints, a write ``delta`` and a restart ``R``,
Daly (2006) gives the expected wall time per unit of work
``T_w / T_s = M e^(R/M) (e^((tau + delta)/M) - 1) / tau``; ETTR is its inverse. Young's
first order is ``1 - delta/tau - (tau/2 + R)/M`` with ``tau* = sqrt(2 delta M)``;
the exact minimiser of Daly's expression is ``tau* = M (1 + W0(-e^(-1 - delta/M)))``
(Lambert's W; scipy).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from .roofline.collectives import all_gather_seconds
from .roofline.weights import params_active, params_total

#: Bytes per parameter of mixed-precision Adam: bf16 weights and gradients, fp32 master
#: weights and two moments (Rajbhandari et al. 2020, docs/sources.md#train-checkpoint).
WEIGHT_BYTES, GRAD_BYTES, OPTIMIZER_BYTES = 2.0, 2.0, 12.0
#: Bytes of one activation element (bf16).
ACT_BYTES = 2.0


# ---------------------------------------------------------------------------- ETTR

def daly_wall_factor(tau, delta, restart, mtbf):
    """Expected wall time per unit of useful compute, ``M e^(R/M) (e^((tau+delta)/M) - 1) / tau``
    (Daly 2006, exact for exponential interruptions that may strike during writes and
    restarts too). Any consistent time unit."""
    tau, delta, restart, mtbf = (np.asarray(x, float) for x in (tau, delta, restart, mtbf))
    with np.errstate(over="ignore"):  # beyond ~700 mean lives per segment: inf, a job that never ends
        return mtbf * np.exp(restart / mtbf) * np.expm1((tau + delta) / mtbf) / tau


def ettr(tau, delta, restart, mtbf):
    """Effective training time ratio: useful compute over wall time, ``1 / daly_wall_factor``."""
    return 1.0 / daly_wall_factor(tau, delta, restart, mtbf)


def young_interval(delta, mtbf):
    """Young's (1974) first-order optimal interval ``sqrt(2 delta M)``."""
    return np.sqrt(2.0 * np.asarray(delta, float) * np.asarray(mtbf, float))


def young_ettr(tau, delta, restart, mtbf):
    """Young's first-order ETTR ``1 - delta/tau - (tau/2 + R)/M``: the small-``tau/M`` limit
    of :func:`ettr`."""
    return 1.0 - delta / tau - (tau / 2.0 + restart) / mtbf


def daly_interval(delta, mtbf):
    """Daly's (2006) higher-order interval ``sqrt(2 delta M) [1 + sqrt(delta/(2M))/3 +
    delta/(18 M)] - delta`` for ``delta < 2M``, else ``M``."""
    delta, mtbf = np.asarray(delta, float), np.asarray(mtbf, float)
    x = delta / (2.0 * mtbf)
    return np.where(delta < 2.0 * mtbf, np.sqrt(2.0 * delta * mtbf) * (1.0 + np.sqrt(x) / 3.0 + x / 9.0) - delta, mtbf)


def optimal_interval(delta, mtbf):
    """The interval that minimises :func:`daly_wall_factor` exactly:
    ``M (1 + W0(-e^(-1 - delta/M)))`` (setting its derivative in ``tau`` to zero gives
    ``(1 - tau/M) e^((tau + delta)/M) = 1``)."""
    delta, mtbf = np.asarray(delta, float), np.asarray(mtbf, float)
    w = special.lambertw(-np.exp(-1.0 - delta / mtbf), 0).real
    return mtbf * (1.0 + w)


def restart_with_swaps(restart, swap_wait, swap_rates, rate, idle_shares, mtbf):
    """The restart Daly's expression reads once some interruptions wait for a replacement
    unit (any consistent time unit). An interruption of cause ``c`` needing a swap (rate
    ``r_c`` of all ``r``: ``swap_rates``) costs the restart ``R`` plus the wait beyond it
    ``e_c = max(0, W - R) l_c``, ``W`` the wait for the replacement counted from the
    interruption and ``l_c`` the share of the job's throughput it idles (``idle_shares``:
    1 for a job that stands idle, ``k_c / d`` for an elastic job training on without the
    ``k_c`` of its ``d`` data-parallel replicas the failed unit held); any other costs
    ``R``. With exponential interruptions (mean ``M``) striking during restarts too, each
    retry a fresh draw of the kinds, the expected restart is ``M (1 / E[e^(-X/M)] - 1)``,
    which is Daly's ``M (e^(R*/M) - 1)`` at
    ``R* = R - M ln(1 - sum_c (r_c / r)(1 - e^(-e_c/M)))`` (docs/training.md#elastic):
    ``R`` itself without waits, ``R + sum_c r_c e_c / r`` to first order. An elastic
    job's slower training until the swap is read as idle time of the share it loses (first
    order in the wait over ``M``)."""
    beyond = np.maximum(0.0, np.asarray(swap_wait, float) - np.asarray(restart, float))
    spared = sum(np.asarray(r, float) * -np.expm1(-beyond * np.asarray(l, float) / mtbf) for r, l in zip(swap_rates, idle_shares))
    return restart - mtbf * np.log1p(-spared / rate)


def replicas_lost_share(unit_gpus, tensor_parallel, data_parallel):
    """Share of an elastic job's throughput a failed unit of ``unit_gpus`` GPUs takes away:
    the data-parallel replicas it touches over ``d``, at most 1. Ranks laid out tensor
    parallel innermost, then data parallel, pipeline outermost (Megatron-Core's default
    order, docs/sources.md#train-elastic): consecutive GPUs hold ``t``-GPU slices of
    ``ceil(unit_gpus / t)`` replicas."""
    return np.minimum(1.0, np.ceil(unit_gpus / np.asarray(tensor_parallel)) / data_parallel)


# ---------------------------------------------------------------------------- step model

@dataclass(frozen=True)
class Hardware:
    """Per-trial arrays of one GPU and its fabrics, in SI units (FLOP/s, bytes, bytes/s, s)."""

    peak_flops: np.ndarray
    efficiency: np.ndarray
    hbm_bytes: np.ndarray
    link_Bps: np.ndarray
    scale_out_Bps: np.ndarray
    alpha_s: np.ndarray
    hop_s: np.ndarray
    scale_out_hop_s: np.ndarray
    domain_gpus: int


@dataclass(frozen=True)
class Job:
    """The job's shape and the parallelism choices open to the planner."""

    gpus: int
    sequence_tokens: int
    global_batch_tokens: int
    virtual_stages: int
    tp_overlap: np.ndarray
    dp_overlap: np.ndarray
    activation_factor: np.ndarray
    shardings: tuple[str, ...] = ("zero1", "zero3")
    recomputes: tuple[str, ...] = ("none", "full")


def model_flops_per_token(card, s: int) -> float:
    """``6 N + 12 L d_attn s`` (PaLM's model FLOPs per token)."""
    return 6.0 * params_active(card) + 12.0 * card.layers * card.heads * card.head_dim * s


def layouts(card, job: Job, domain_gpus: int) -> list[tuple[int, int, int]]:
    """Every ``(t, p, d)`` with ``t`` a power of two dividing the heads within the scale-up
    domain, ``p`` a power of two up to the layers, ``t p d = G`` and at least one sequence per
    replica."""
    sequences = job.global_batch_tokens // job.sequence_tokens
    out = []
    t = 1
    while t <= min(domain_gpus, card.heads):
        if card.heads % t == 0:
            p = 1
            while p <= card.layers:
                if job.gpus % (t * p) == 0 and 1 <= job.gpus // (t * p) <= sequences:
                    out.append((t, p, job.gpus // (t * p)))
                p *= 2
        t *= 2
    return out


def evaluate(card, job: Job, hw: Hardware, t: int, p: int, d: int, sharding: str, recompute: str) -> dict[str, np.ndarray]:
    """Step time (s) and memory per GPU (bytes) of one layout, per trial."""
    s, L, h = job.sequence_tokens, card.layers, card.hidden
    m = (job.global_batch_tokens // s) / d
    v = min(job.virtual_stages, max(1, L // p))
    full = recompute == "full"
    f_model = model_flops_per_token(card, s)
    f_hw = f_model * (8.0 / 6.0 if full else 1.0)
    layers_stage = math.ceil(L / p)
    compute = s * f_hw * layers_stage / L / (t * hw.peak_flops * hw.efficiency)
    act_bytes = ACT_BYTES * s * h
    tp_msgs = (12 if full else 8) * layers_stage
    tp = tp_msgs * all_gather_seconds("ring", t, act_bytes, hw.link_Bps, hw.alpha_s, hw.hop_s) * (1.0 - job.tp_overlap)
    p2p = 0.0 if p == 1 else 2 * v * (hw.scale_out_hop_s + act_bytes / t / hw.scale_out_Bps)
    bubble = (p - 1) / (v * m + p - 1)
    pipe = m * (compute + tp + p2p) / (1.0 - bubble)
    stage_params = params_total(card) / (t * p)
    grad_bytes = 2.0 * stage_params
    if sharding == "zero3":  # per layer: gather the weights forward and backward, scatter the gradients
        dp = 3 * layers_stage * all_gather_seconds("ring", d, grad_bytes / layers_stage, hw.scale_out_Bps, hw.alpha_s, hw.scale_out_hop_s)
    else:  # once per step: scatter the gradients, gather the updated weights
        dp = 2 * all_gather_seconds("ring", d, grad_bytes, hw.scale_out_Bps, hw.alpha_s, hw.scale_out_hop_s)
    exposed = np.maximum((1.0 - job.dp_overlap) * dp, dp - pipe)
    step = pipe + exposed
    state = (WEIGHT_BYTES + GRAD_BYTES + OPTIMIZER_BYTES) / d if sharding == "zero3" else WEIGHT_BYTES + GRAD_BYTES + OPTIMIZER_BYTES / d
    per_token_layer = ACT_BYTES if full else job.activation_factor
    activations = per_token_layer * s * h / t * layers_stage * min(p, m)
    memory = stage_params * state + activations
    return {"step_s": step, "memory_bytes": np.broadcast_to(memory, step.shape), "bubble": np.full(step.shape, bubble)}


def plan(card, job: Job, hw: Hardware) -> dict[str, np.ndarray]:
    """Per trial, the layout of least step time whose memory fits ``hw.hbm_bytes``:
    ``tokens_per_s``, ``mfu`` (model FLOPs over the job's peak), the layout
    (``tensor_parallel``, ``pipeline_parallel``, ``data_parallel``, ``zero_stage``,
    ``recompute``) and ``bubble``; ``step_s`` is ``inf`` where no layout fits."""
    n = np.shape(hw.peak_flops)[0]
    best = {"step_s": np.full(n, np.inf), **{k: np.zeros(n) for k in ("tensor_parallel", "pipeline_parallel", "data_parallel",
                                                                         "zero_stage", "recompute", "bubble")}}
    for t, p, d in layouts(card, job, hw.domain_gpus):
        for sharding in job.shardings:
            for recompute in job.recomputes:
                out = evaluate(card, job, hw, t, p, d, sharding, recompute)
                better = (out["memory_bytes"] <= hw.hbm_bytes) & (out["step_s"] < best["step_s"])
                for key, value in (("step_s", out["step_s"]), ("tensor_parallel", t), ("pipeline_parallel", p), ("data_parallel", d),
                                   ("zero_stage", 3 if sharding == "zero3" else 1), ("recompute", float(recompute == "full")),
                                   ("bubble", out["bubble"])):
                    best[key] = np.where(better, value, best[key])
    tokens_per_s = job.global_batch_tokens / best["step_s"]
    mfu = model_flops_per_token(card, job.sequence_tokens) * tokens_per_s / (job.gpus * hw.peak_flops)
    return {**best, "tokens_per_s": tokens_per_s, "mfu": mfu}
