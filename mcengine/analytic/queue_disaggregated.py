"""The disaggregated mode's fast model under load (docs/load.md#disaggregated): a prefill
pool's passes queued as a batch queue (:func:`.queueing.batch_queue`), its KV transfer,
and a decode pool whose occupancy slows its steps (:func:`disaggregated_at_load`)."""

from __future__ import annotations

import numpy as np

from .queueing import BatchQueue, LoadLatency, _batch_quantile, _batched_ttft, _linear, _occupancy, _slope, batch_queue
from .queue_spread import _mixed_own_excess_s, _with_own_spread, join_excess_quantile, multi_token_share


def _decode_quantile(q, mean, rate, hold_slope, arrival_cv, top, instances):
    """The ``q`` quantile of the occupancy a decode request shares its life with
    (:func:`_batch_quantile`'s infinite-server fluctuation) where the holding time grows with
    the occupancy, ``hold(n) = hold(1) + s (n - 1)``: a count above its mean slows every step,
    so requests leave more slowly and the excess lasts. Linearised about the mean, the
    departure rate ``n / hold(n)`` rises by ``(1 - gamma) / hold`` per request, ``gamma =
    lambda s`` (``lambda`` the arrivals per instance, ``s = hold_slope``; ``gamma = n s /
    hold(n)`` by Little's law), so the count's variance is the infinite-server one over ``1 -
    gamma`` (a birth-death chain's, ``lambda / (d/dn departures)``; docs/load.md#disaggregated)."""
    gain = np.clip(np.asarray(rate, float) * np.asarray(hold_slope, float), 0.0, 1.0 - 1e-9)
    return _batch_quantile(q, mean, np.asarray(arrival_cv, float) / np.sqrt(1.0 - gain), top, instances)


def _pass_own_excess_s(q, length_cv, bq: BatchQueue, first_1, first_top, top) -> np.ndarray:
    """The ``q`` quantile of the time a request's own prompt adds to the prefill pass it rides
    in a :func:`batch_queue` (docs/load.md#length-spread): ``(r - 1) first(K) / K`` over the
    batch ``K`` it rides (the simulator scales a pass's time by its tokens over ``K`` mean
    prompts), a mixture (:func:`_mixed_own_excess_s`) of the requests that no other arrival
    joins, share ``a = 1 - C + C P(N = 0)`` (those that find a server idle ride alone,
    ``first(1)``; a waiting one whose gap brings no other arrival rides with the burst's
    ``e``, ``first(1 + e) / (1 + e)``, :attr:`BatchQueue.waited_alone`; their mean per
    prompt), and the others, at their mean batch ``(k_w - P(N = 0)(1 + e)) / (1 - P(N =
    0))`` (``k_w`` = :attr:`BatchQueue.batch_waited`). The lone requests' longer pass is the
    tail's: as the load fills the passes the quantile falls less than at the passes' mean
    batch. 0 where ``length_cv = 0`` (none of it made where no trial has a spread)."""
    c, alone, top = bq.wait_probability, bq.waited_alone, np.asarray(top, float)
    if not np.any(np.asarray(length_cv, float) > 0.0):
        return np.zeros(np.shape(c))

    def per_prompt(k):
        return _linear(first_1, first_top, top, k) / k

    lone = np.minimum(1.0 + np.asarray(bq.extra, float), top)
    a = 1.0 - c + c * alone
    d_a = per_prompt(1.0) + c * alone * (per_prompt(lone) - per_prompt(1.0)) / a  # their mean per prompt (first(1) itself where e = 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        joined = np.where(alone < 1.0, (bq.batch_waited - alone * lone) / (1.0 - alone), lone)
    return _mixed_own_excess_s(q, length_cv, a, d_a, per_prompt(np.clip(joined, 1.0, top)))


def disaggregated_at_load(q, rate_per_s, arrival_cv, *, instances, prefill_instances, batch, prefill_batch, output_tokens, decode_1_s, decode_s,
                          prefill_1_s, prefill_s, busy_1_s, busy_s, transfer_1_s, transfer_s, length_cv=0.0, join_excess=None) -> LoadLatency:
    """Disaggregated prefill and decode under load (docs/load.md#disaggregated): the
    ``prefill_instances`` prefill instances take up to ``prefill_batch`` queued prompts a
    pass, each pass keeping its instance ``busy(k)`` and delivering its first tokens after
    its latency ``prefill(k)`` plus the KV transfer ``transfer(k)`` (each linear in ``k``):
    a batch queue (:func:`batch_queue`). TTFT = wait + latency + transfer of the pass a
    request rides (:func:`_batched_ttft`; the wait near the pool's capacity that of the
    queue ahead, :func:`_queue_wait`). The decode instances run ``n = lambda_d (O - 1)
    decode(n)`` sequences (Little's law, :func:`_occupancy`); TPOT = ``decode`` at the
    occupancy a request lives with (:func:`_decode_quantile`: the count's fluctuation
    lengthened by its own steps; the request itself added). Lengths spread across requests
    (``length_cv``, docs/load.md#length-spread): the TTFT quantile adds the own prompt's
    excess at the quantile of its law, its pass's latency and transfer linear in its tokens:
    the quantile of a mixture of the passes a request rides alone and those it shares, each
    at its own mean batch (:func:`_pass_own_excess_s`, :func:`_with_own_spread`); the TPOT
    quantile adds the join's share of a step over a short request's few steps
    (:func:`join_excess_quantile`) beyond the mean length's ``q / (O - 1)``, which the model
    leaves out without a spread (so it is continuous as ``length_cv`` tends to 0; where ``O
    <= 1 + q/2`` that is at least 2, above any join's share, so the spread's is taken without
    dividing: one-token requests have no decode step), and the
    mean TPOT counts one-token requests' 0
    (:func:`multi_token_share`). ``join_excess``: that share's quantile where the caller
    holds it (it does not depend on the rate; computed when None)."""
    rate = np.asarray(rate_per_s, float)
    p = prefill_batch
    bq = batch_queue(rate, prefill_instances, busy_1_s, busy_s, p, arrival_cv)
    first_1, first_top = np.asarray(prefill_1_s, float) + transfer_1_s, np.asarray(prefill_s, float) + transfer_s
    ttft_mean, ttft_q = _batched_ttft(q, bq, rate, arrival_cv, prefill_instances, busy_s, first_1, first_top, p)
    ttft_q = _with_own_spread(ttft_mean, ttft_q, _pass_own_excess_s(q, length_cv, bq, first_1, first_top, p), length_cv)

    o = np.asarray(output_tokens, float)
    decoders = np.asarray(instances, float) - prefill_instances
    n = _occupancy(rate / decoders, (o - 1.0) * decode_1_s, (o - 1.0) * decode_s, batch)
    n_q = _decode_quantile(q, n, rate / decoders, (o - 1.0) * _slope(decode_1_s, decode_s, np.asarray(batch, float) - 1.0), arrival_cv, batch, decoders)
    step = _linear(decode_1_s, decode_s, batch, np.minimum(n + 1.0, batch))
    step_q = _linear(decode_1_s, decode_s, batch, np.minimum(n_q + 1.0, batch))
    join = join_excess_quantile(q, o, length_cv) if join_excess is None else join_excess
    steps = o - 1.0 > 0.5 * np.asarray(q, float)  # else q / (O - 1) >= 2, above any join: the spread's (O = 1: no step to divide)
    mean_length = np.where(steps, np.minimum(np.asarray(q, float) / np.where(steps, o - 1.0, 1.0), join), join)  # the mean length's join, q / (O - 1), at most the spread's
    tpot_q = _with_own_spread(step, step_q, step * join, length_cv, step * mean_length)
    return LoadLatency(ttft_mean, ttft_q, step * multi_token_share(o, length_cv), tpot_q, n)
