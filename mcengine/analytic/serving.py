"""Closed forms of the serving modes beyond static batching: continuous batching with
chunked prefill, and disaggregated prefill and decode (docs/model.md#serving).

Plain NumPy functions, vectorised over trials like :mod:`mcengine.analytic.roofline`,
whose phase helpers (decode step, one prompt's prefill, all-reduces, point-to-points)
they call rather than copy. Notation as there: ``t``/``p`` tensor/pipeline degrees,
``S`` prompt tokens, ``O`` output tokens, ``T̄ = S + O/2``, ``B`` running sequences.

**Continuous batching with chunked prefill** (vLLM, Sarathi-Serve:
docs/sources.md#serve-chunked-prefill). ``B`` sequences decode; to keep ``B`` running,
each step also prefills ``c = B S / O`` prompt tokens (one new request joins per ``O/B``
steps on average), which is infeasible when ``c`` exceeds the engine's per-step token
budget ``prefill_chunk_tokens``. One step, for ``b = B/m`` sequences and ``c_b = b S/O``
chunk tokens per micro-batch (``m = min(B, p)`` as in the static decode)::

    compute  = [b (2 P_active + 4 L n_h d_h T̄) + c_b (2 L P_layer + 2 L n_h d_h S)] / t / F
    memory   = [b_w P_stream / t + b T̄ KV_rank + max(c_b, S)/2 KV_rank] / W
    comm     = 2L all-reduces of (b + c_b) d 2 bytes + (p-1) point-to-points of the same
    overhead = step + L layer
    tau      = max(max(compute, memory), o comm) + (1 - o) comm + overhead

with ``o`` = ``workload.comm_overlap`` (0: ``max(compute, memory) + comm + overhead``),
the all-reduce algorithm of ``workload.allreduce``, and with data-parallel attention
the attention terms (KV read) of the busiest rank's share of the sequences, as in the
static decode step.

The chunk's FLOPs are ``c_b/S`` prompts' worth of one prompt's prefill (prefill FLOPs
are linear in prompts), which adds the LM head of the prompts that finish in the step
(``2 d V`` per prompt, ``c_b/S`` prompts per step) to the issue's formula; the chunk's
attention reads its prompt's earlier KV once per chunk, on average ``max(c_b, S)/2``
tokens (:func:`chunk_kv_read_tokens`; the issue's ``c_b S/2`` reads it once per token). Without
pipelining ``b = B``, ``c_b = c``. TPOT ``= tau``, output tokens/s ``= B / tau``,
TTFT ``= ceil(S / c_b) tau = ceil(O / b) tau`` (a prompt's chunks ride on its own
micro-batch's steps).

**Disaggregated prefill and decode** (Splitwise, DistServe:
docs/sources.md#serve-disaggregated). Each instance is a prefill or a decode instance,
each with its own layout. A prefill instance runs one prompt per forward pass
(pipelining keeps ``p`` of them in flight, :func:`mcengine.analytic.roofline.prefill`
at batch 1); a decode instance decodes ``B`` sequences (the static decode step). The
share ``f`` of instances given to prefill makes prompt supply equal decode demand,
``f r_p = (1 - f) r_d`` with ``r_p = 1/prefill(1)`` prompts/s per prefill instance and
``r_d = B / (O TPOT)`` requests/s per decode instance, so ``f = r_d / (r_p + r_d)``;
output tokens/s per instance of the cluster (prefill instances included) is
``min((1 - f) B / TPOT, f r_p O)`` (equal at the chosen split, the bottleneck when a
trial's rates move away from it). Each prompt's KV cache, ``S`` x the whole model's KV
bytes per token, crosses the scale-up links from the prefill to a decode instance, every
GPU of the prefill instance sending its share over its own link (one point-to-point of
``S KV_token / g`` bytes, ``g`` GPUs per instance), which adds to TTFT.
"""

from __future__ import annotations

import numpy as np

from . import roofline as ra

SERVING_MODES = ("static", "continuous", "disaggregated")


# --------------------------------------------------------------------------- continuous


def chunk_tokens(batch, prompt_tokens: int, output_tokens: int) -> np.ndarray:
    """``c = B S / O``: prompt tokens each step must prefill to keep ``B`` sequences running."""
    return np.asarray(batch, float) * prompt_tokens / output_tokens


def chunk_kv_read_tokens(chunk, prompt_tokens: int) -> np.ndarray:
    """Tokens of KV cache a step's prefill chunk reads: ``max(c, S) / 2``.

    A chunk's queries attend to their prompt's earlier tokens, read from HBM once per
    chunk (FlashAttention streams the prefix through on-chip memory for the whole chunk),
    not once per query token: a chunk smaller than its prompt (``c < S``) reads on
    average half the prompt (``S/2``), ``c/S`` whole prompts read their own ``c/2`` on
    average. The issue's ``c S/2`` counts the prefix once per chunk token, which at 50
    users of 5,000-token prompts is ~500x the prefix and puts the step far above NIM's
    measured 60 ms (docs/sources.md#serve-nim-concurrency).
    """
    return np.maximum(np.asarray(chunk, float), float(prompt_tokens)) / 2.0


def batch_limit_chunk(prompt_tokens: int, output_tokens: int, chunk_budget_tokens) -> np.ndarray:
    """``B_chunk = floor(budget O / S)``: the largest batch whose per-step chunk ``c = B S/O``
    fits the engine's token budget (0 when not even one sequence's does). int64."""
    return np.floor(np.asarray(chunk_budget_tokens, float) * output_tokens / prompt_tokens).astype(np.int64)


def continuous_step(m: ra.ModelCard, layout: ra.Layout, batch, prompt_tokens: int, output_tokens: int, r: ra.Rates) -> ra.PhaseTimes:
    """One step of continuous batching with chunked prefill (module docstring): ``B``
    sequences decode one token each while ``c = B S/O`` prompt tokens are prefilled.
    ``total_s`` is the TPOT. Broadcasts over trials."""
    t, p, s = layout.tensor, layout.pipeline, float(prompt_tokens)
    b = np.asarray(batch, float) / ra.micro_batches(batch, p)
    chunk = chunk_tokens(b, prompt_tokens, output_tokens)
    context = ra.mean_context(prompt_tokens, output_tokens)
    decode = ra.decode_step(m, layout, batch, context, r)
    one_prompt = ra.time_to_first_token(m, layout, prompt_tokens, r)
    compute = decode.compute_s + chunk / s * one_prompt.compute_s
    att = layout.attention
    kv_rank = ra.kv_bytes_per_token_rank(m, t, r.kv_bytes, att)
    share = ra.attention_sequences_per_rank(b, t, att) / b  # the busiest rank's share of the sequences (1: heads sharded)
    weights = r.bytes_per_param * ra.rank_params_streamed(m, t, b + chunk, att)
    kv_read = share * (b * context + chunk_kv_read_tokens(chunk, prompt_tokens)) * kv_rank
    memory = (weights + kv_read) / r.hbm_bytes_per_s
    tokens = b + chunk
    comm = ra.forward_comm_s(m, layout, tokens, r) + (p - 1) * ra.p2p_s(tokens * m.hidden * ra.ACT_BYTES, r)
    overhead = r.step_overhead_s + m.layers * r.layer_overhead_s
    return ra._phase(compute, memory, comm, overhead, r.comm_overlap)


def continuous_ttft_s(step_s, batch, pipeline: int, output_tokens: int) -> np.ndarray:
    """TTFT under chunked prefill: ``ceil(S / c_b) tau = ceil(O / b) tau = ceil(O m / B) tau``
    with ``m = min(B, p)`` micro-batches (integer ceiling, no rounding error)."""
    whole = np.maximum(np.asarray(batch, np.int64), 1)
    steps = -(-(output_tokens * np.minimum(whole, pipeline)) // whole)
    return steps * np.asarray(step_s, float)


def continuous_tokens_per_s(step_s, batch) -> np.ndarray:
    """Output tokens/s of one instance: ``B / tau``."""
    return np.asarray(batch, float) / np.asarray(step_s, float)


# --------------------------------------------------------------------------- disaggregated


def kv_transfer_s(m: ra.ModelCard, prompt_tokens: int, instance_gpus: int, r: ra.Rates) -> np.ndarray:
    """Moving one prompt's KV cache (``S x 2 L n_kv d_h b_kv`` bytes, the whole model) from
    a prefill to a decode instance: each of the ``g`` GPUs sends ``1/g`` of it over its
    own link, one point-to-point ``start + hop + bytes / W_link``."""
    nbytes = prompt_tokens * ra.kv_bytes_per_token_rank(m, 1, r.kv_bytes) / instance_gpus
    return ra.p2p_s(nbytes, r)


def prefill_share(prompts_per_s_prefill, requests_per_s_decode) -> np.ndarray:
    """``f = r_d / (r_p + r_d)``: the share of instances (and GPUs) doing prefill so that
    prompt supply ``f r_p`` equals decode demand ``(1 - f) r_d``."""
    rp, rd = np.asarray(prompts_per_s_prefill, float), np.asarray(requests_per_s_decode, float)
    return rd / (rp + rd)


def disaggregated_tokens_per_s(share, prompts_per_s_prefill, decode_tokens_per_s, output_tokens: int) -> np.ndarray:
    """Output tokens/s per instance of the cluster: ``min((1 - f) B/TPOT, f r_p O)``, the
    decode capacity or the prompt supply, whichever binds."""
    f = np.asarray(share, float)
    return np.minimum((1.0 - f) * np.asarray(decode_tokens_per_s, float), f * np.asarray(prompts_per_s_prefill, float) * output_tokens)
