"""Closed forms of the roofline stage, as plain NumPy functions, by subject:
:mod:`.model` (the model card, layout, rates and phase times they share),
:mod:`.weights` (parameter counts, weights and KV bytes per rank), :mod:`.collectives`,
:mod:`.steps` (decode, prefill and time to first token) and :mod:`.limits` (batch limits).

The stage (:mod:`mcengine.stages.roofline`), its tests and ``mcengine validate`` share
these functions. Every time function broadcasts over trials: scalar model shapes and
layouts, per-trial arrays (or floats) of rates and batch sizes.

Notation (``docs/sources.md#roof-notation``): ``L`` layers, ``d`` hidden,
``n_h``/``n_kv`` query/KV heads, ``d_h`` head dim, ``d_ff`` FFN size, ``V`` vocab,
``b_w``/``b_kv`` bytes per weight/KV element, ``t``/``p`` tensor/pipeline degrees,
``F``/``W``/``W_link`` effective FLOP/s, HBM bytes/s and link bytes/s per device
(peak x efficiency). Activations cross the wire in bf16 (:data:`.model.ACT_BYTES`).

Model (per phase, aggregate roofline with collectives in series, docs/sources.md#roof-step-time):

* ``time = max(max(compute, memory), o comm) + (1 - o) comm + overhead`` with ``o`` the
  overlapped share of the collectives (``comm_overlap``, docs/sources.md#roof-overlap;
  ``o = 0``: in series); ``bound`` names the largest of compute, memory and comm ("network").
* Tensor parallelism shards every matrix over ``t`` ranks, except that each rank keeps
  at least one KV head (``max(1, n_kv/t)``, docs/sources.md#roof-kv-replication): the KV cache *and* the K/V
  projection weights are replicated when ``t > n_kv``, as vLLM/TRT-LLM do. For
  ``t <= n_kv`` the per-rank weights are exactly ``P/t``. With data-parallel attention
  (``Layout.attention = "data"``, docs/sources.md#roof-attention-dp) the attention weights are
  replicated, each rank attends to ``ceil(b/t)`` whole sequences with all KV heads, and
  the MLP stays sharded behind a reduce-scatter and an all-gather, and the vocab-sharded
  LM head behind one all-gather of the hidden states it scores.
* Two all-reduces per layer (after attention and after the MLP) of ``tokens x d x 2``
  bytes, by the layout's algorithm (:func:`.collectives.allreduce_seconds`: ring ``collective_start +
  2(t-1) hop + 2(t-1)/t bytes/W_link``, the GenZ form, docs/sources.md#roof-collectives; tree, one-shot,
  two-shot, or the fastest per message, docs/sources.md#roof-allreduce-algorithms); zero at ``t = 1``.
* Scale-up domains (docs/sources.md#roof-scale-up-domain): ``Layout.domain`` GPUs share
  the scale-up links (0: the whole instance). A tensor group spanning ``k > 1`` domains
  all-reduces hierarchically (:func:`.collectives.hierarchical_allreduce_s`) and runs its other
  collectives at the scale-out bandwidth and hop latency (``model.Rates.scale_out``); a
  pipeline boundary between domains is a scale-out point-to-point (:func:`.collectives.stage_hop_s`).
* Pipeline parallelism (docs/sources.md#roof-pipeline): ``L/p`` layers per stage, balanced (the embedding
  and LM head counted as ``1/p`` per stage), ``m = min(B, p)`` micro-batches of ``B/m``
  sequences, each stage re-reading its weights per micro-batch, one point-to-point
  (``collective_start + hop + bytes/W_link``) per stage boundary. Decode: a sequence's
  token traverses the ``p`` stages, so ``TPOT = p x stage(B/m) + (p-1) p2p`` = the
  whole-model time at micro-batch ``B/m`` plus the hops: the weight term equals one TP
  group's, PP adds capacity, not decode bandwidth. Prefill has no token dependency, so
  continuous batching keeps the pipeline full: the instance spends ``m/p`` times the
  whole-model time at ``B/m`` on a batch (no fill/drain bubble), while one prompt's
  TTFT is the whole-model time at one prompt plus the ``(p-1)`` hops.
* MoE: every layer's MLP is ``experts`` routed experts of ``expert_ffn`` (+ shared
  experts + a ``d x E`` router); ``ffn`` is unused. A token computes ``k`` experts;
  a step streams the distinct experts its tokens touch, ``E (1 - (1 - k/E)^tokens)``
  under uniform routing (docs/sources.md#roof-moe). Experts are
  tensor-sharded like a dense MLP unless ``expert_parallel``: then each rank holds
  ``E/t`` whole experts (same bytes and FLOPs per rank in expectation) and the MLP
  all-reduce is replaced by a dispatch and a combine all-to-all of
  ``tokens x k x d x 2 / t`` bytes per rank, each
  ``collective_start + (t-1) hop + (t-1)/t bytes/W_link`` (docs/sources.md#roof-moe; GenZ,
  llm-analysis), the busiest rank's times the routing imbalance ``ρ`` (``Rates.moe_imbalance``,
  :func:`.collectives.moe_dispatch_bytes`, with its ``(ρ - 1)`` extra expert FLOPs,
  :func:`.steps.hot_expert_flops`; docs/generation.md#moe). The attention all-reduce stays.
  The first ``dense_layers`` of a mixture are dense (:func:`.weights.per_layer_mlp`).
* Multi-head latent attention (``kv_lora_rank > 0``, docs/generation.md#mla): KV bytes per
  token ``L (kv_lora + d_rope) b_kv`` on every rank; attention width ``(2 kv_lora + d_rope)/2``
  decoding, ``(2 d_h + d_rope)/2`` in prefill (:func:`.weights.attention_width`).
* Speculative decoding (``Rates.draft_tokens``) and prefix caching (``Rates.prefix_hit``):
  :func:`.steps.decode_step`, :func:`.steps.prefill_flops` (docs/generation.md).
"""
