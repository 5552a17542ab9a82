"""The request-level discrete-event serving simulator: one kernel, :func:`simulate`
(model and simplifications: docs/serve.md).

Requests arrive (Poisson, or a gamma renewal process with a given coefficient of
variation), wait in a FIFO queue, are admitted to an instance and leave with their last
output token. Three serving modes:

* **static** (:data:`MODE_STATIC`): an idle instance takes up to ``batch_max`` queued
  requests (it does not wait to fill a batch), prefills them in one pass (its latency
  ``prefill_s[k]``), then decodes the padded batch in steps of ``decode_s[k]`` until its
  longest request ends; every request's first token comes at the pass's end.
* **continuous** (:data:`MODE_CONTINUOUS`, chunked prefill as in Sarathi-Serve/vLLM):
  an instance runs up to ``batch_max`` requests; each step decodes one token of every
  decoding request and prefills up to ``chunk_tokens`` tokens of the admitted prompts, in
  admission order (a token stream: one step's chunk may finish one prompt and start the
  next). A step of ``b`` decoding requests and ``c`` chunk tokens takes
  ``mixed_s[b, :]`` interpolated linearly in ``c`` (a table over chunks ``0 ..
  chunk_tokens``). The step that prefills a prompt's last token gives its first output token.
* **disaggregated** (:data:`MODE_DISAGGREGATED`): instances ``0 .. n_prefill - 1``
  prefill static batches of up to ``prefill_batch_max`` prompts (the instance is busy
  ``prefill_busy_s[k]``, its pipeline stages kept full, and the pass's latency is
  ``prefill_s[k]``); a batch's KV caches reach the decode pool ``transfer_s[k]`` after
  its latency (the links carry them while the instance prefills its next batch), which
  is when the first token counts as delivered; instances ``n_prefill ..`` decode as the
  continuous mode without prefill (step times ``mixed_s[b, 0]``).

**Dispatch** (continuous and decode instances; static and prefill instances take the
queue's head when idle): at time ``t`` (an arrival, or an event that frees room) the
queue's head goes to the least-loaded instance, the one with the fewest requests not done
at ``t`` (:func:`_running`: a request done at a step boundary after ``t`` still counts;
lowest index on ties), among those with a free slot (running requests at the last settled
boundary below ``batch_max``) and KV room (:func:`_fits`); it joins at that instance's
first step boundary at or after ``t`` (:func:`_sync` settles the instance there; idle: at
``t``). With none, it waits in the queue.

**KV cache**: a running request holds its prompt's and generated tokens of KV; an
instance holds ``kv_capacity_tokens``. A request is admitted only if its KV and the next step's tokens fit. When the next step
would overflow the cache, the running request admitted last is **preempted by
recompute** (vLLM's default): its KV is dropped and it returns to the head of the queue
(disaggregated: the prefill pool's), to be prefilled again over its prompt and the
tokens it has generated. A request alone on its instance is never preempted.

The loop moves from event to event (arrival, a prompt's prefill done, a request done,
the KV cache full, a KV transfer landing), jumping over the decode steps between them, so
its run time grows with the number of requests (and the instances and batch slots it
scans per event), never with output lengths, rates or times.

Random numbers: stream 0 of :data:`mcengine.rng.STAGE_SERVE` (trial = ``replication``)
gives the inter-arrival times, stream 1 the geometric output lengths, stream 2 the lengths
spread by ``length_cv`` (prompt, then output): a pure function of ``(seed, replication)``.
"""

from __future__ import annotations

import math

import numpy as np

from mcengine.jit import inline_kernel, kernel
from mcengine.kernels.life.heap import heap_remove, heap_set
from mcengine.rng import STAGE_SERVE, exponential, gamma, new_stream, uniform

MODE_STATIC = 0
MODE_CONTINUOUS = 1
MODE_DISAGGREGATED = 2
ARRIVAL_POISSON = 0
ARRIVAL_GAMMA = 1
LENGTH_FIXED = 0
LENGTH_GEOMETRIC = 1

# instance float fields: last step boundary, prefill tokens done / admitted (cumulative), KV tokens held, busy since,
# the boundary a dispatch brought the instance to ahead of its arrival time
_T0, _PFDONE, _PFTOTAL, _KV, _SINCE, _TAHEAD = 0, 1, 2, 3, 4, 5
# instance int fields: steps done, running requests, decoding requests, requests done at the boundary _TAHEAD
_K, _NRUN, _NDEC, _NAHEAD = 0, 1, 2, 3
# request int fields: tokens generated (at decode start), decode start step, admission order, state
_GEN, _DEC, _SEQ, _STATE = 0, 1, 2, 3
_WAITING, _PREFILLING, _DECODING = 0, 1, 2
_NEVER = 1 << 62


@inline_kernel
def _push(q, qs, which, i, front):
    """Put request ``i`` at the back (or ``front``) of ring queue ``which``."""
    cap = q.shape[1]
    if front:
        qs[which, 0] = (qs[which, 0] - 1 + cap) % cap
        q[which, qs[which, 0]] = i
    else:
        q[which, (qs[which, 0] + qs[which, 1]) % cap] = i
    qs[which, 1] += 1


@inline_kernel
def _pop(q, qs, which):
    i = q[which, qs[which, 0]]
    qs[which, 0] = (qs[which, 0] + 1) % q.shape[1]
    qs[which, 1] -= 1
    return i


@inline_kernel
def _step(s, sf, si, chunk, mixed_s):
    """Decoding requests, chunk tokens and duration of instance ``s``'s current step: row
    ``b`` of ``mixed_s`` interpolated linearly at the chunk (its columns: chunks of
    ``0, chunk / G, .., chunk`` tokens, ``G + 1`` columns)."""
    b = si[s, _NDEC]
    pending = sf[s, _PFTOTAL] - sf[s, _PFDONE]
    c = min(chunk, pending) if pending > 0.0 else 0.0
    g = mixed_s.shape[1] - 1
    x = c / chunk * g
    j = min(int(x), g - 1)
    tau = mixed_s[b, j] + (x - j) * (mixed_s[b, j + 1] - mixed_s[b, j])
    return b, c, tau


@inline_kernel
def _whole_steps(x, up):
    """Steps ``x`` (a float) rounded up (``up``) or down to a whole count, at most
    :data:`_NEVER`: an infinite count (a KV cache of infinite capacity) or one past int64's
    range stays "never" (numba's ``math.floor(inf)`` is int64's most negative value, which
    would read as a change due now and stop the instance's clock for good)."""
    if not x < _NEVER:
        return _NEVER
    return math.ceil(x) if up else math.floor(x)


@kernel
def _steps_to_change(s, sf, si, ri, rf, slots, out, chunk, kv_cap):
    """Steps from instance ``s``'s last boundary to its next change (a prompt's prefill
    done, a request done, the KV cache full; the chunk shrinking below ``chunk``); 0 when
    one is due now."""
    n = si[s, _NRUN]
    j = _NEVER
    pending = sf[s, _PFTOTAL] - sf[s, _PFDONE]
    if pending > 0.0:
        head = np.inf
        for q in range(n):
            i = slots[s, q]
            if ri[i, _STATE] == _PREFILLING:
                head = min(head, rf[i])
        if pending <= chunk:
            j = 1
        else:
            j = min(_whole_steps((head - sf[s, _PFDONE]) / chunk, True), _whole_steps(pending / chunk, False))
    b = si[s, _NDEC]
    if b > 0:
        k = si[s, _K]
        for q in range(n):
            i = slots[s, q]
            if ri[i, _STATE] == _DECODING:
                j = min(j, ri[i, _DEC] + out[i] - ri[i, _GEN] - k)
        if n > 1:
            j = min(j, _whole_steps((kv_cap - sf[s, _KV]) / b, False))
    return max(j, 0)


@kernel
def _advance(s, j, sf, si, chunk, mixed_s):
    b, c, tau = _step(s, sf, si, chunk, mixed_s)
    si[s, _K] += j
    sf[s, _T0] += j * tau
    sf[s, _PFDONE] += j * c
    sf[s, _KV] += j * b


@kernel
def _remove(s, q, slots, si):
    si[s, _NRUN] -= 1
    slots[s, q] = slots[s, si[s, _NRUN]]


@kernel
def _settle(s, sf, si, ri, rf, slots, out, q, qs, plen, kv_cap, first_token_s, finish_s, preemptions, busy_s):
    """At instance ``s``'s boundary: prompts prefilled start decoding, finished requests
    leave, and while the next step would overflow the KV cache the request admitted last
    (decoding or prefilling) is preempted (recompute: back to the head of queue 0).
    Returns the requests done."""
    t = sf[s, _T0]
    done = 0
    k = si[s, _K]
    for q_ in range(si[s, _NRUN]):
        i = slots[s, q_]
        if ri[i, _STATE] == _PREFILLING and rf[i] <= sf[s, _PFDONE]:
            ri[i, _GEN] += 1
            sf[s, _KV] += 1.0
            if ri[i, _GEN] == 1:
                first_token_s[i] = t
            ri[i, _STATE] = _DECODING
            ri[i, _DEC] = k
            si[s, _NDEC] += 1
    q_ = 0
    while q_ < si[s, _NRUN]:
        i = slots[s, q_]
        if ri[i, _STATE] == _DECODING and ri[i, _DEC] + out[i] - ri[i, _GEN] <= k:
            finish_s[i] = t
            sf[s, _KV] -= plen[i] + out[i]
            si[s, _NDEC] -= 1
            _remove(s, q_, slots, si)
            done += 1
        else:
            q_ += 1
    while si[s, _NDEC] > 0 and si[s, _NRUN] > 1 and sf[s, _KV] + si[s, _NDEC] > kv_cap:
        victim, latest = -1, -1
        for q_ in range(si[s, _NRUN]):
            if ri[slots[s, q_], _SEQ] > latest:
                victim, latest = q_, ri[slots[s, q_], _SEQ]
        i = slots[s, victim]
        if ri[i, _STATE] == _DECODING:
            g = ri[i, _GEN] + k - ri[i, _DEC]
            si[s, _NDEC] -= 1
        else:  # the last prompt of the prefill stream: its prefilled part is lost
            g = ri[i, _GEN]
            sf[s, _PFTOTAL] = max(sf[s, _PFDONE], rf[i] - plen[i] - g)
        sf[s, _KV] -= plen[i] + g
        ri[i, _GEN] = g
        ri[i, _STATE] = _WAITING
        preemptions[i] += 1
        _remove(s, victim, slots, si)
        _push(q, qs, 0, i, True)
    if si[s, _NRUN] == 0:
        busy_s[s] += t - sf[s, _SINCE]
    return done


@kernel
def _sync(s, t, due, sf, si, ri, rf, slots, out, q, qs, plen, chunk, kv_cap, mixed_s, first_token_s, finish_s, preemptions, busy_s):
    """Bring a running instance ``s`` to its first step boundary at or after ``t`` (not past
    its next change), and settle it there; ``due``: its timer rang at ``t``, so it goes to
    the change the timer was armed for (:func:`_arm`), however few seconds of float time
    its steps add (a step below half a float's spacing at ``t`` adds none: counting the
    boundary from ``t`` would then never reach it). A boundary after ``t`` (a dispatch at ``t``
    joins the step after the one under way) is recorded with the requests done there,
    which :func:`_running` still counts at ``t``."""
    if si[s, _NRUN] == 0:
        return
    _, _, tau = _step(s, sf, si, chunk, mixed_s)
    j = _steps_to_change(s, sf, si, ri, rf, slots, out, chunk, kv_cap)
    if not due:
        if tau > 0.0 and t > sf[s, _T0]:
            j = min(j, _whole_steps((t - sf[s, _T0]) / tau, True))
        elif t <= sf[s, _T0]:
            j = 0
    _advance(s, j, sf, si, chunk, mixed_s)
    done = _settle(s, sf, si, ri, rf, slots, out, q, qs, plen, kv_cap, first_token_s, finish_s, preemptions, busy_s)
    if j > 0 and sf[s, _T0] > t:
        sf[s, _TAHEAD] = sf[s, _T0]
        si[s, _NAHEAD] = done


@inline_kernel
def _running(s, t, sf, si):
    """Requests on instance ``s`` not done at ``t``: its running requests, and those done at
    a boundary after ``t`` that a dispatch already settled (:func:`_sync`)."""
    return si[s, _NRUN] + (si[s, _NAHEAD] if sf[s, _TAHEAD] > t else 0)


@kernel
def _fits(s, i, t, sf, si, ri, plen, batch_max, kv_cap, chunk, mixed_s):
    """Instance ``s`` has a free slot and, at its first boundary after ``t``, KV room for
    request ``i`` and the next step's tokens of the requests decoding there."""
    n = si[s, _NRUN]
    if n == 0:
        return True
    if n >= batch_max:
        return False
    b, _, tau = _step(s, sf, si, chunk, mixed_s)
    ahead = math.ceil((t - sf[s, _T0]) / tau) if tau > 0.0 and t > sf[s, _T0] else 0.0
    return sf[s, _KV] + b * (ahead + 1.0) + plen[i] + ri[i, _GEN] <= kv_cap


@kernel
def _arm(s, sf, si, ri, rf, slots, out, chunk, kv_cap, mixed_s, keys, ids, pos, hn):
    """(Re)arm instance ``s``'s timer at its next change (disarm it when idle); returns the heap size."""
    if si[s, _NRUN] == 0:
        return heap_remove(keys, ids, pos, hn, s)
    _, _, tau = _step(s, sf, si, chunk, mixed_s)
    j = _steps_to_change(s, sf, si, ri, rf, slots, out, chunk, kv_cap)
    return heap_set(keys, ids, pos, hn, s, sf[s, _T0] + j * tau)


@kernel
def _admit(s, t, which, sf, si, ri, rf, slots, q, qs, plen, seq, instance):
    """Admit the head of queue ``which`` to instance ``s`` at its boundary (idle: at ``t``):
    a continuous instance starts prefilling it (queue 0), a decode instance decodes it (queue 1)."""
    i = _pop(q, qs, which)
    if si[s, _NRUN] == 0:
        sf[s, _T0] = max(sf[s, _T0], t)
        sf[s, _SINCE] = sf[s, _T0]
    need = plen[i] + ri[i, _GEN]
    sf[s, _KV] += need
    if which == 0:
        ri[i, _STATE] = _PREFILLING
        sf[s, _PFTOTAL] += need
        rf[i] = sf[s, _PFTOTAL]
    else:
        ri[i, _STATE] = _DECODING
        ri[i, _DEC] = si[s, _K]
        si[s, _NDEC] += 1
    ri[i, _SEQ] = seq
    slots[s, si[s, _NRUN]] = i
    si[s, _NRUN] += 1
    instance[i] = s


@kernel
def _start_batches(t, mode, batched, front_cap, slots, si, ri, q, qs, out_tokens, plen, prompt, prefill_s, prefill_busy_s, transfer_s, decode_s,
                   first_token_s, finish_s, instance, busy_s, keys, ids, pos, hn, arrival_id):
    """Idle instances ``0 .. batched - 1`` take up to ``front_cap`` requests from the head of
    queue 0 each: a static batch (its tokens' times are set now) or a prefill pass (its KV
    transfers armed), its time the table's at ``k`` scaled by its tokens over ``k`` mean
    prompts (``prompt``). Returns the heap size."""
    for s in range(batched):
        if qs[0, 1] == 0:
            break
        if si[s, _NRUN] > 0:
            continue
        k = min(qs[0, 1], front_cap)
        tokens = 0.0
        longest = 0
        for q_ in range(k):
            i = _pop(q, qs, 0)
            slots[s, q_] = i
            tokens += plen[i] + ri[i, _GEN]
            longest = max(longest, out_tokens[i])
            instance[i] = s
        si[s, _NRUN] = k
        scale = tokens / (k * prompt)
        done = t + prefill_s[k] * scale
        if mode == MODE_STATIC:
            for q_ in range(k):
                i = slots[s, q_]
                first_token_s[i] = done
                finish_s[i] = done + (out_tokens[i] - 1) * decode_s[k]
            done += (longest - 1) * decode_s[k]
        else:
            for q_ in range(k):
                hn = heap_set(keys, ids, pos, hn, arrival_id + 1 + slots[s, q_], done + transfer_s[k] * scale)
            done = t + prefill_busy_s[k] * scale
        busy_s[s] += done - t
        hn = heap_set(keys, ids, pos, hn, s, done)
    return hn


@inline_kernel
def _spread_length(st, shape, mean):
    """A whole length of at least 1 from a gamma law of ``shape`` and mean ``mean``."""
    return max(1.0, math.floor(min(gamma(st, shape, mean / shape), 2.0**52) + 0.5))


@kernel
def simulate(seed, replication, n_requests, rate_per_s, arrival, arrival_cv, output_tokens, output_law, length_cv,
             mode, n_instances, n_prefill, prompt_tokens, batch_max, prefill_batch_max, chunk_tokens, kv_capacity_tokens,
             decode_s, mixed_s, prefill_s, prefill_busy_s, transfer_s,
             arrival_s, first_token_s, finish_s, out_tokens, plen, preemptions, instance, busy_s):
    """Simulate ``n_requests`` requests; fill the per-request and per-instance outputs.

    Parameters
    ----------
    seed, replication : int
        The run seed and the replication (the streams' trial index).
    n_requests : int
        Requests to simulate (>= 1).
    rate_per_s : float
        Mean arrival rate (requests/s, > 0).
    arrival, arrival_cv : int, float
        :data:`ARRIVAL_POISSON` or :data:`ARRIVAL_GAMMA` (inter-arrival gamma with shape
        ``1/cv^2``, mean ``1/rate``).
    output_tokens, output_law : int, int
        Output tokens per request: ``output_tokens`` each (:data:`LENGTH_FIXED`) or
        geometric on ``1, 2, ...`` with mean ``output_tokens`` (:data:`LENGTH_GEOMETRIC`).
    length_cv : float
        Spread of the lengths across requests: 0, every prompt ``prompt_tokens`` long (and
        the output as ``output_law``); above 0, each request's prompt (and, with
        :data:`LENGTH_FIXED`, its output) drawn from a gamma law of mean ``prompt_tokens``
        (``output_tokens``) and this coefficient of variation, rounded to a whole token, at
        least 1 (its mean a little above the law's where the law puts mass below one token).
    mode : int
        :data:`MODE_STATIC`, :data:`MODE_CONTINUOUS` or :data:`MODE_DISAGGREGATED`.
    n_instances, n_prefill : int
        Instances; of them the prefill pool (disaggregated only, ``1 .. n_instances - 1``).
    prompt_tokens : int
        Prompt tokens per request (>= 1; the mean with ``length_cv``).
    batch_max, prefill_batch_max : int
        Running requests per (decode) instance; prompts per prefill pass (disaggregated).
    chunk_tokens : float
        Prefill tokens per continuous step.
    kv_capacity_tokens : float
        KV tokens an instance (a decode instance) holds.
    decode_s : float64[batch_max + 1]
        Seconds of a step decoding ``b`` requests (static).
    mixed_s : float64[batch_max + 1, G + 1]
        Seconds of a continuous (disaggregated decode) step decoding ``b`` requests while
        prefilling ``j chunk_tokens / G`` prompt tokens (``G >= 1``).
    prefill_s, prefill_busy_s, transfer_s : float64[max batch + 1]
        Seconds of a prefill pass of ``k`` prompts: its latency (first tokens), the time it
        keeps its instance (disaggregated), and its KV transfer (disaggregated).
        A pass is scaled by its tokens over ``k * prompt_tokens`` (recomputed requests, spread lengths).
    arrival_s, first_token_s, finish_s : float64[n_requests]
        Filled: arrival, first output token and last output token times (s).
    plen : float64[n_requests]
        Filled: prompt tokens of each request.
    out_tokens, preemptions, instance : int64[n_requests]
        Filled: output tokens, times preempted, and the instance that finished it
        (disaggregated: the decode instance, or the prefill instance of a one-token request).
    busy_s : float64[n_instances]
        Filled: seconds each instance had at least one request.

    Returns
    -------
    int
        The events processed (timers taken off the heap: arrivals, passes ending, KV
        transfers landing, continuous instances' changes): at most
        :func:`mcengine.standalone.serve.event_bound` of the requests and their preemptions.
    """
    n_ids = n_instances + 1 + n_requests
    keys = np.empty(n_ids)
    ids = np.empty(n_ids, np.int64)
    pos = np.full(n_ids, -1, np.int64)
    hn = 0
    width = max(batch_max, prefill_batch_max)
    slots = np.zeros((n_instances, width), np.int64)
    sf = np.zeros((n_instances, 6))
    si = np.zeros((n_instances, 4), np.int64)
    ri = np.zeros((n_requests, 4), np.int64)
    rf = np.zeros(n_requests)
    q = np.zeros((2, n_requests), np.int64)
    qs = np.zeros((2, 2), np.int64)
    busy_s[:] = 0.0
    preemptions[:] = 0
    prompt = float(prompt_tokens)
    st_arrival = new_stream(seed, STAGE_SERVE, 0, replication)
    st_length = new_stream(seed, STAGE_SERVE, 1, replication)
    st_spread = new_stream(seed, STAGE_SERVE, 2, replication)
    spread = 1.0 / (length_cv * length_cv) if length_cv > 0.0 else 0.0
    shape = 1.0 / (arrival_cv * arrival_cv)
    log_stay = math.log1p(-1.0 / output_tokens) if output_tokens > 1 else 0.0
    arrival_id = n_instances
    batched = n_instances if mode == MODE_STATIC else (n_prefill if mode == MODE_DISAGGREGATED else 0)
    first_decode = n_prefill if mode == MODE_DISAGGREGATED else 0
    front_cap = prefill_batch_max if mode == MODE_DISAGGREGATED else batch_max
    seq = 0
    nxt = 0
    t = 0.0
    gap = exponential(st_arrival, 1.0 / rate_per_s) if arrival == ARRIVAL_POISSON else gamma(st_arrival, shape, 1.0 / (shape * rate_per_s))
    hn = heap_set(keys, ids, pos, hn, arrival_id, gap)
    events = 0
    while hn > 0:
        events += 1
        t = keys[0]
        ident = ids[0]
        hn = heap_remove(keys, ids, pos, hn, ident)
        if ident == arrival_id:
            i = nxt
            nxt += 1
            arrival_s[i] = t
            o = output_tokens
            plen[i] = prompt
            if spread > 0.0:
                plen[i] = _spread_length(st_spread, spread, prompt)
                if output_law == LENGTH_FIXED:
                    o = int(_spread_length(st_spread, spread, output_tokens))
            if output_law == LENGTH_GEOMETRIC and output_tokens > 1:
                o = 1 + int(min(math.floor(math.log(uniform(st_length)) / log_stay), 2.0**52))
            out_tokens[i] = o
            _push(q, qs, 0, i, False)
            if nxt < n_requests:
                gap = exponential(st_arrival, 1.0 / rate_per_s) if arrival == ARRIVAL_POISSON else gamma(st_arrival, shape, 1.0 / (shape * rate_per_s))
                hn = heap_set(keys, ids, pos, hn, arrival_id, t + gap)
        elif ident > arrival_id:  # a KV transfer lands at the decode pool
            i = ident - arrival_id - 1
            ri[i, _GEN] += 1
            if ri[i, _GEN] == 1:
                first_token_s[i] = t
            if ri[i, _GEN] >= out_tokens[i]:
                finish_s[i] = t
            else:
                _push(q, qs, 1, i, False)
        elif ident < batched:  # a static batch (a prefill pass) ends
            si[ident, _NRUN] = 0
        else:  # a continuous (decode) instance reaches its next change
            _sync(ident, t, True, sf, si, ri, rf, slots, out_tokens, q, qs, plen, chunk_tokens, kv_capacity_tokens, mixed_s,
                  first_token_s, finish_s, preemptions, busy_s)
            hn = _arm(ident, sf, si, ri, rf, slots, out_tokens, chunk_tokens, kv_capacity_tokens, mixed_s, keys, ids, pos, hn)
        hn = _start_batches(t, mode, batched, front_cap, slots, si, ri, q, qs, out_tokens, plen, prompt, prefill_s, prefill_busy_s, transfer_s, decode_s,
                            first_token_s, finish_s, instance, busy_s, keys, ids, pos, hn, arrival_id)
        # dispatch: continuous (decode) instances take the head of their queue, least loaded first
        if mode != MODE_STATIC:
            which = 1 if mode == MODE_DISAGGREGATED else 0
            while qs[which, 1] > 0:
                head = q[which, qs[which, 0]]
                best, fewest = -1, _NEVER
                for s in range(first_decode, n_instances):
                    load = _running(s, t, sf, si)
                    if load < fewest and _fits(s, head, t, sf, si, ri, plen, batch_max, kv_capacity_tokens, chunk_tokens, mixed_s):
                        best, fewest = s, load
                if best < 0:
                    break
                _sync(best, t, False, sf, si, ri, rf, slots, out_tokens, q, qs, plen, chunk_tokens, kv_capacity_tokens, mixed_s,
                      first_token_s, finish_s, preemptions, busy_s)
                if not _fits(best, head, t, sf, si, ri, plen, batch_max, kv_capacity_tokens, chunk_tokens, mixed_s):
                    hn = _arm(best, sf, si, ri, rf, slots, out_tokens, chunk_tokens, kv_capacity_tokens, mixed_s, keys, ids, pos, hn)
                    break
                _admit(best, t, which, sf, si, ri, rf, slots, q, qs, plen, seq, instance)
                seq += 1
                hn = _arm(best, sf, si, ri, rf, slots, out_tokens, chunk_tokens, kv_capacity_tokens, mixed_s, keys, ids, pos, hn)
            if mode == MODE_DISAGGREGATED:  # requests the decode pool preempted go back to the prefill pool
                hn = _start_batches(t, mode, batched, front_cap, slots, si, ri, q, qs, out_tokens, plen, prompt, prefill_s, prefill_busy_s, transfer_s, decode_s,
                                    first_token_s, finish_s, instance, busy_s, keys, ids, pos, hn, arrival_id)
    return events
