"""Measure what least-loaded dispatch does to a continuous instance's prefill stream
(docs/load.md#continuous): the simulator's per-request rows, read per cell.

    python docs/load/measure_stream.py                      # h100 and lite-h100, Poisson and gamma CV 2, loads 0.2 0.5 0.8
    python docs/load/measure_stream.py --design h100 --arrival poisson --loads 0.5,0.8 --requests 30000
    python docs/load/measure_stream.py --toy 124,0.72 --requests 256000  # dispatch and streams alone (dispatch_toy)
    python docs/load/measure_stream.py --loads 0.5 --requests 800000 --warmup 0.5  # the settled pattern (docs/load.md#burst-wait)
    python docs/load/measure_stream.py --design lite-h100 --arrival poisson --loads 0.4,0.5,0.6,0.7,0.8 --requests 1600000 --warmup 0.5 --length-cv 0.02
                                                            # the same with lengths spread 2 % (docs/load.md#lite-pairs)
    python docs/load/measure_stream.py --laws --requests 100000 --warmup 0.3   # the step-counted components and share laws (docs/load.md#share-laws)
    python docs/load/measure_stream.py --jsq --loads 0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9 --requests 1600000 --warmup 0.5 --out shares.csv
                                                            # the settled shares beside the join-the-shortest-queue laws
    python docs/load/measure_stream.py --oracle shares.csv  # the fit table's continuous cells counted in steps with those shares and the busy-share law
    python docs/load/measure_stream.py --one-ahead          # the fit table's continuous means with the fluid one-prompt-ahead term counted in steps

For each request (the first 20 % left out, or ``--warmup``'s share) the prompts **ahead** are the requests of its
instance that arrived before it and whose first token comes after its arrival (still in the
stream: a prompt whose last chunk is in the step in progress counts); a prompt **behind** is
the next request of its instance arriving before its first token (it fills the budget the
request's last step leaves, so that step carries a whole chunk). Each instance's
**window count** is the number of its requests between their arrival and their first token;
its time-average is what an arrival would find under random dispatch (Poisson arrivals see
time averages), so ``find/time`` below 1 is the dispatch's doing. The **admission gaps**
are the times between one instance's consecutive arrivals, in mean gaps.

Columns: ``p_ge1``, ``p_ge2``, ``p_ge3`` (arrivals finding at least one / two / three prompts ahead),
``t_ge1``, ``t_ge2`` (the time-averages of the window count), ``thin1`` .. ``thin4`` (the
arrival rate met with 1, 2, 3 and 4 or more prompts in the window over that met with one
fewer: :func:`thinning`), ``ttft0`` / ``ttft1`` /
``ttft2`` (mean TTFT, ms, given 0 / 1 / 2 ahead), ``rest2`` (ms, given two ahead: the mean time
from the arrival to the first prompt ahead's first token), ``behind0`` (share of requests with none
ahead that get a prompt behind), ``ttft0_alone`` / ``ttft0_behind`` (ms), ``gap_cv2`` and
``gap_short`` (the share of gaps under 0.1 mean gaps; exponential's 0.095),
``tail_ge2`` / ``tail_ge3`` (the shares of the slowest 1 % of requests, those at or above
the P99 TTFT, with at least two / three prompts ahead), ``refill``
(the share of admissions to an instance that one of its own requests left since its
previous admission) and ``refill_delay`` (the mean time from that departure to the
admission, in mean gaps); ``p_ge1_refill``, ``p_ge2_refill``, ``ttft_refill`` and
``p_ge1_birth``, ``p_ge2_birth``, ``ttft_birth``: the same, over the refills and over the
other admissions (births: none of the instance's requests left since its previous one);
``ttft_mean`` / ``ttft_p99`` (ms) and the fast model's ``model_mean`` / ``model_p99``
(:func:`mcengine.standalone.serve.fast_latency`), ``running`` / ``running_min`` / ``running_max`` (the
requests an arrival finds on its instance, admitted and not done: :func:`running_counts`)
and ``preempted`` (the run's preemptions: the KV cache full). ``--length-cv`` spreads the
lengths as ``workload.load.length_cv`` does (0, the default: every request the mean).

``--laws`` prints, per cell, those measured components beside the step count's
(:func:`step_laws`): ``t0`` / ``t0_law`` (mean TTFT with none ahead, ms), ``c1`` / ``c1_law``
and ``c2`` / ``c2_law`` (what one / two prompts ahead add to it, ms), ``rest2`` and ``c2_rest``
(two ahead's cost counted from that measured rest of the first), ``p_ge1`` / ``p1_law``
and ``p_ge2`` / ``p2_poisson`` / ``p2_dead`` (the shares and their laws), the simulated mean
TTFT ``mean`` and the step count's with the measured shares (``mean_shares``) and with the
laws ``p1_law`` and ``p2_dead`` (``mean_laws``). ``--jsq`` prints the shares of arrivals
finding 0 / 1 / 2 or more ahead beside the join-the-shortest-queue laws (:func:`jsq_row`);
``--oracle`` reads such rows (its Poisson cells) and counts the fit table's continuous cells
in steps with them, with the busy-share law for one ahead and with the departures' shares,
beside each cell's band of shares that passes (:func:`oracle`; docs/load.md#busy-share). ``--one-ahead`` recomputes
the fit table's continuous means with the model's fluid cost of one prompt ahead replaced
by the step count's, then with the prompt behind and the shares' laws: the busy share's, the
departures' (:func:`window_shares`) and the simulator's own, read from docs/load/jsq-shares.csv
(:func:`one_ahead`; docs/load.md#one-ahead).
"""

from __future__ import annotations

import sys
from collections import deque
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's mcengine

sys.path.insert(0, str(HERE))  # make_fit_table, for --oracle
sys.path.insert(0, str(HERE.parent / "serve"))
from make_load_table import DESIGNS  # noqa: E402  (the serve load table's designs)

INSTANCES = 16
LOADS = (0.2, 0.5, 0.8)
REQUESTS = 30_000
WARMUP = 0.2


def _window_share(start: np.ndarray, end: np.ndarray, t0: float, t1: float, at_least: int) -> float:
    """The share of ``[t0, t1]`` during which at least ``at_least`` of the intervals
    ``[start, end)`` are open."""
    times = np.r_[start, end, t0, t1]
    steps = np.r_[np.ones(len(start)), -np.ones(len(end)), 0.0, 0.0]
    order = np.argsort(times, kind="stable")
    times, level = times[order], np.cumsum(steps[order])
    span = np.clip(times[1:], t0, t1) - np.clip(times[:-1], t0, t1)
    return float(span[level[:-1] >= at_least].sum() / (t1 - t0))


def stream_components(df: pd.DataFrame, rate_per_s: float, warmup: float = WARMUP) -> dict:
    """The stream's measured components (module docstring) from the simulator's per-request
    table (``instance``, ``arrival_s``, ``first_token_s``, ``finish_s``, ``ttft_s``; rows in
    arrival order) at ``rate_per_s`` requests/s over all instances."""
    n = len(df)
    ahead, behind, refill, delay, rest = np.zeros(n, np.int64), np.zeros(n, bool), np.zeros(n, bool), np.zeros(n), np.zeros(n)
    first = int(warmup * n)
    t0, t1 = float(df.arrival_s.iloc[first]), float(df.arrival_s.iloc[-1])
    shares = np.zeros(THIN_STATES)
    groups = df.groupby("instance").indices
    for rows in groups.values():
        a, f = df.arrival_s.to_numpy()[rows], df.first_token_s.to_numpy()[rows]
        order = np.sort(f)
        following = np.searchsorted(order, a, side="right")
        ahead[rows] = np.arange(len(rows)) - following
        rest[rows] = order[np.minimum(following, len(rows) - 1)] - a  # the first prompt ahead's rest, where one is
        behind[rows] = np.r_[a[1:], np.inf] < f
        done = np.sort(df.finish_s.to_numpy()[rows])
        left = np.searchsorted(done, a, side="right")  # the instance's departures by each admission
        last = np.where(left > 0, done[np.maximum(left - 1, 0)], -np.inf)
        refill[rows], delay[rows] = last > np.r_[-np.inf, a[:-1]], a - last
        shares += [_window_share(a, f, t0, t1, k) for k in range(1, THIN_STATES + 1)]
    shares /= len(groups)
    g = admission_gaps(df, rate_per_s, warmup)
    ttft = df.ttft_s.to_numpy()[first:] * 1e3
    k, b, r = ahead[first:], behind[first:], refill[first:]
    none = k == 0
    slow = ttft >= np.quantile(ttft, 0.99)

    def mean(x):  # nan for none (no prompt ever ahead in a toy without prompt time), without numpy's warning
        return float(x.mean()) if len(x) else float("nan")

    return {
        "p_ge1": float((k >= 1).mean()), "t_ge1": shares[0], "p_ge2": float((k >= 2).mean()), "t_ge2": shares[1], "p_ge3": float((k >= 3).mean()),
        **state_rates(float((k >= 1).mean()), float((k >= 2).mean()), *shares[:2]),
        **thinning([float((k >= j).mean()) for j in range(1, THIN_STATES + 1)], shares),
        "tail_ge2": float((k[slow] >= 2).mean()), "tail_ge3": float((k[slow] >= 3).mean()),
        "ttft0": mean(ttft[none]), "ttft1": mean(ttft[k == 1]), "ttft2": mean(ttft[k == 2]), "rest2": mean(rest[first:][k == 2] * 1e3),
        "behind0": mean(b[none]), "ttft0_alone": mean(ttft[none & ~b]), "ttft0_behind": mean(ttft[none & b]),
        "gap_cv2": float(g.var() / g.mean() ** 2), "gap_short": float((g < 0.1).mean()),
        "refill": float(r.mean()), "refill_delay": float(delay[first:][r].mean() * rate_per_s / len(groups)),
        "p_ge1_refill": mean(k[r] >= 1), "p_ge2_refill": mean(k[r] >= 2), "ttft_refill": mean(ttft[r]),
        "p_ge1_birth": mean(k[~r] >= 1), "p_ge2_birth": mean(k[~r] >= 2), "ttft_birth": mean(ttft[~r]),
    }


def state_rates(p_ge1: float, p_ge2: float, t_ge1: float, t_ge2: float) -> dict:
    """The arrival rate an instance meets with 0, 1 and 2 or more prompts in its window, in
    its mean rate (``rate0`` / ``rate1`` / ``rate2``): the share of arrivals finding that
    many ahead over the share of time the window holds that many. The single-queue
    approximation of join-the-shortest-queue (docs/load.md#jsq-laws) models each server
    as a queue whose arrival rate depends on its length; under shortest-queue routing it
    falls with the length. Random dispatch gives 1, 1, 1 (Poisson arrivals see time
    averages); nan for a state the window never holds (a toy without prompt time)."""
    def ratio(arrivals, time):
        return arrivals / time if time > 0.0 else float("nan")

    return {"rate0": ratio(1.0 - p_ge1, 1.0 - t_ge1), "rate1": ratio(p_ge1 - p_ge2, t_ge1 - t_ge2), "rate2": ratio(p_ge2, t_ge2)}


#: The window counts :func:`thinning` tells apart: 0, 1, 2, 3 and 4 or more prompts.
THIN_STATES = 4


def thinning(p_ge, t_ge) -> dict:
    """The factor by which least-loaded dispatch thins an instance's arrivals for each prompt
    more in its window (docs/load.md#spread-standin): with ``p_ge[j - 1]`` the share of
    arrivals finding at least ``j`` prompts ahead and ``t_ge[j - 1]`` the share of time the
    window holds at least ``j`` (``j = 1 ..``), the rate met in state ``k`` is the share
    of arrivals in it over the share of time in it (:func:`state_rates`, state by state, the
    last state ``k`` or more), and ``thin{k}`` is that rate over state ``k - 1``'s. The
    single-queue approximation of join-the-shortest-queue with a geometric feedback
    (``stream_standin``'s ``thin^k``) has every ``thin{k}`` equal; random dispatch has them 1.
    nan where a state is never held."""
    p, t = np.r_[1.0, p_ge, 0.0], np.r_[1.0, t_ge, 0.0]
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = (p[:-1] - p[1:]) / (t[:-1] - t[1:])
    return {f"thin{k}": float(rate[k] / rate[k - 1]) for k in range(1, len(rate))}


def step_cost_s(pending, per_prompt: float, chunked_s: float, tail_s: float):
    """What a prompt of ``p = per_prompt`` chunks waits beyond a lone one (s) when it joins
    its instance's token stream with ``W = pending`` chunks ahead (docs/load.md#share-laws):
    its last token goes in step ``ceil(W + p)`` after it joins where a lone prompt's goes in
    ``ceil(p)``, each step more carrying a whole chunk (``chunked_s``), and its last step carries
    ``r = W + p - (ceil(W + p) - 1)`` chunks of it where a lone prompt's carries ``f = p -
    (ceil(p) - 1)``: at the roofline's tail step ``tail_s`` up to ``f`` (the step is flat in
    the chunk below the memory time) and linear from there to a whole chunk's step. 0 with
    nothing pending."""
    w = np.asarray(pending, float)
    lone = np.ceil(per_prompt)
    steps = np.ceil(w + per_prompt - 1e-12)
    r, f = w + per_prompt - (steps - 1.0), per_prompt - (lone - 1.0)
    last = tail_s + (chunked_s - tail_s) * (np.clip((r - f) / (1.0 - f), 0.0, 1.0) if f < 1.0 else 1.0)
    return np.where(w > 0.0, (steps - lone) * chunked_s + last - tail_s, 0.0)


def _steps(system, rate_per_s: float) -> dict:
    """The step count's inputs at ``rate_per_s`` requests/s on a continuous ``system``, at the
    fast model's occupancy (:func:`mcengine.analytic.queue_continuous.continuous_at_load`'s): the
    rate an instance ``lam``, the prompt's chunks ``p``, the step ``tau``, the whole-chunk step
    ``dc``, the tail step, the busy share ``u``, a lone prompt's own steps ``own`` (s) and the
    mean TTFT's components ``t0`` / ``c1`` / ``c2`` (s; :func:`step_laws`)."""
    from mcengine.analytic import queueing as qu
    from mcengine.analytic import queue_continuous as qc

    s = system
    low = min(s.pipeline, s.batch_max)
    lam, p = rate_per_s / s.instances, s.prompt_tokens / s.chunk_tokens
    n = qc._continuous_occupancy(lam, s.output_tokens, p, s.mixed_s[low, 0], s.decode_s[s.batch_max], s.mixed_s[low, -1],
                                 s.mixed_s[s.batch_max, -1], s.batch_max, low)
    d = float(qu._linear(s.mixed_s[low, 0], s.decode_s[s.batch_max], s.batch_max, n, low))
    dc = float(qu._linear(s.mixed_s[low, -1], s.mixed_s[s.batch_max, -1], s.batch_max, n, low))
    tail = float(qu._linear(*s.tail_steps_s, s.batch_max, n, low))
    tau = d / (1.0 - lam * (dc - d) * p)
    u, lone = lam * p * tau, np.ceil(p)
    own = (lone - 1.0) * dc + tail
    c1, c2 = (ahead_cost_s(k, p, tau, dc, tail, 1.0 - u) for k in (1, 2))
    behind = (1.0 - np.exp(-lam * (tau / 2.0 + (lone - 1.0) * dc))) * (dc - tail)
    return {"lam": lam, "p": p, "tau": tau, "dc": dc, "tail": tail, "u": u, "own": own, "t0": tau / 2.0 + own + behind, "c1": c1, "c2": c2}


def ahead_cost_s(ahead: int, per_prompt: float, step_s: float, chunked_s: float, tail_s: float, pending: float) -> float:
    """What ``ahead`` prompts of ``p = per_prompt`` chunks each add to a lone prompt's TTFT (s),
    averaged over the phase of the first of them when the request joins
    (:func:`step_cost_s`): its wait for its first step (``W = k p`` chunks pending, ``k =
    ahead``), weighted ``pending`` times the step's mean rest ``step_s / 2``, and each of its
    ``ceil(p)`` steps (``W = k p - j`` after its ``j``-th), weighted by the whole-chunk step
    ``chunked_s``: a request arriving uniformly in time over that window meets each phase for
    its length (``pending`` 1), or the wait for a step less often (:func:`_steps`: ``1 - u``,
    least-loaded dispatch seldom sending a request where one was just admitted)."""
    steps = np.arange(1.0, np.ceil(per_prompt) + 1.0)
    weights = np.r_[pending * step_s / 2.0, np.full(len(steps), chunked_s)]
    return float(np.average(step_cost_s(np.r_[ahead * per_prompt, ahead * per_prompt - steps], per_prompt, chunked_s, tail_s), weights=weights))


def step_laws(system, rate_per_s: float) -> dict:
    """The mean TTFT's components counted in steps, and laws for the shares of arrivals
    finding one and two prompts ahead (docs/load.md#share-laws), at ``rate_per_s`` requests/s
    on a continuous ``system``: the step ``tau``, the whole-chunk step ``d_c``, the tail step
    and the busy share ``u`` at the fast model's occupancy (:func:`_steps`). ``t0_law``: with
    none ahead, the rest of the step in progress (``tau / 2``), the prompt's own ``ceil(p)``
    steps, and its last step filled to a whole chunk by a prompt behind that arrives before
    that step starts (probability ``1 - exp(-lambda T)``, ``T = tau / 2 + (ceil(p) - 1) d_c``).
    ``c1_law`` / ``c2_law``: :func:`step_cost_s` averaged over the phase of the first prompt
    ahead, each of its ``ceil(p)`` steps weighted by ``d_c`` (``W = k p - j`` chunks pending
    after its ``j``-th, ``k`` = 1 or 2 ahead) and its wait for its first step, ``W = k p``, by
    ``(1 - u) tau / 2`` (least-loaded dispatch seldom sends a request where one was just
    admitted). ``c2_join_law``: what two ahead add beyond the first prompt's rest ``r1`` (its
    first token ends the step it is in, so from there on every step but the request's last
    carries a whole chunk): :func:`step_cost_s` at ``W = 2 p - ceil(p)``, less the rest of a
    step ``tau / 2`` that ``t0_law`` holds; two ahead cost ``c2_join_law + r1`` whatever the first
    prompt's phase (docs/load.md#one-ahead). Shares, with ``x = lambda (tau / 2 + own)`` the arrivals of a lone prompt's
    TTFT: ``p1_law = 1 - e^-x``, a Poisson count over that window; ``p2_poisson = 1 - e^-x (1
    + x)``, two in it; ``p2_dead = p1_law (1 - e^-y)``, ``y = lambda max(0, tau / 2 + own -
    D)``: the second must come in the window less a prompt's stream time ``D = p d_c`` (an
    instance's admissions refill its departures, which its stream spaced at least a prompt
    apart). ``p1_busy``: the stream's busy share as an M/G/1 queue whose busy periods each
    start with a setup ``delta = tau / 2 + (ceil(p) - p) d_c`` (the first prompt's wait for a
    step and its last step's unused share of a chunk; the prompts of a busy period share
    steps, so the rest of the period is its chunks, ``u``): ``(u + lambda delta) / (1 +
    lambda delta)``, ``lambda (p tau + delta)`` at a trickle (docs/load.md#jsq-laws);
    ``p2_busy = p1_busy (1 - e^-y)``, the dead time's second share on it. The
    join-the-shortest-queue laws with the ``N`` instances' streams as its queues,
    each busy ``u`` of the time: ``p1_pooled``, Erlang C over the ``N`` streams (routed to
    the shortest stream, an arrival waits only when every stream is busy: the share of a
    queue pooling them); ``p1_jsq`` / ``p2_jsq``, the supermarket model's
    shares of arrivals finding at least one / two ahead with ``d = N`` choices, ``u^d`` and
    ``u^(d (d + 1))`` (its share of queues at least ``k`` long is ``u^((d^k - 1)/(d - 1))``).
    Times in ms."""
    from mcengine.analytic import queueing as qu

    st = _steps(system, rate_per_s)
    lam, tau, own, u, d = st["lam"], st["tau"], st["own"], st["u"], float(system.instances)
    x, y = lam * (tau / 2.0 + own), lam * max(0.0, tau / 2.0 + own - st["p"] * st["dc"])
    setup = lam * (tau / 2.0 + (np.ceil(st["p"]) - st["p"]) * st["dc"])
    busy = (u + setup) / (1.0 + setup)
    join = float(step_cost_s(2.0 * st["p"] - np.ceil(st["p"]), st["p"], st["dc"], st["tail"])) - tau / 2.0
    return {"t0_law": 1e3 * st["t0"], "c1_law": 1e3 * st["c1"], "c2_law": 1e3 * st["c2"], "c2_join_law": 1e3 * join,
            "p1_law": -np.expm1(-x), "p2_poisson": -np.expm1(-x) - x * np.exp(-x), "p2_dead": np.expm1(-x) * np.expm1(-y),
            "p1_busy": busy, "p2_busy": -busy * np.expm1(-y),
            "p1_pooled": float(qu.erlang_c(d, d * u)), "p1_jsq": u ** d, "p2_jsq": u ** (d * (d + 1.0))}


def window_shares(rate_per_s: float, window_s: float, cost_s: float, prompt_s: float) -> tuple[float, float]:
    """The shares of arrivals finding at least one / two prompts ahead under least-loaded
    dispatch, from the departures that free an instance (docs/load.md#one-ahead): an
    instance that has just taken a request stands one above its peers, so it takes the
    next one only after one of its own requests leaves, and its departures come at its
    rate ``lambda = rate_per_s`` whatever the dispatch. A request finds the prompt ahead when
    the next admission comes before that prompt's first token: a Poisson count of the
    instance's departures over the prompt's time in the window, a lone prompt's
    ``window_s`` plus what one prompt ahead of it adds, ``cost_s``, at the share ``p1`` itself:
    ``p1 = 1 - exp(-lambda (window_s + p1 cost_s))``, solved in closed form by Lambert's
    ``W`` (``p1 = 1 + W(-a b e^-a) / a``, ``a = lambda cost_s``, ``b = exp(-lambda window_s)``,
    the principal branch: the equation's one root in (0, 1)). The second must also come
    after the prompt's stream time ``prompt_s`` (the dead time of docs/load.md#share-laws):
    ``p2 = p1 (1 - exp(-lambda max(0, W1 - prompt_s)))``, ``W1 = window_s + p1 cost_s``. No
    constant; the arrivals' bursts are not in it (the model's own term)."""
    from scipy import special

    a, b = rate_per_s * cost_s, np.exp(-rate_per_s * window_s)
    p1 = 1.0 - b if a == 0.0 else 1.0 + float(special.lambertw(-a * b * np.exp(-a)).real) / a
    held = window_s + p1 * cost_s
    return p1, -p1 * float(np.expm1(-rate_per_s * max(0.0, held - prompt_s)))


def _departures(st: dict) -> tuple[float, float, float]:
    """The step count's cost of one prompt ahead with the step in progress carrying a chunk
    while that prompt is in its steps (its rest ``d_c / 2``, not ``tau / 2``: ``c1_chunked``,
    :func:`one_ahead`) and the departures' shares on it (:func:`window_shares`), from
    :func:`_steps`' ``st``: ``(c1_chunked, p1, p2)`` in s and shares."""
    tau, dc, u = st["tau"], st["dc"], st["u"]
    stepping = np.ceil(st["p"]) * dc
    chunked = st["c1"] + (dc - tau) / 2.0 * stepping / ((1.0 - u) * tau / 2.0 + stepping)
    return (chunked, *window_shares(st["lam"], tau / 2.0 + st["own"], chunked, st["p"] * dc))


def step_model(system, rate_per_s: float, arrival_cv: float, p1: float, p2: float, q: float = 0.99) -> tuple[float, float]:
    """The mean and ``q`` quantile of the TTFT (ms) counted in steps with given shares of
    arrivals finding at least one / two prompts ahead (``p1`` / ``p2``; docs/load.md#share-laws):
    the mean ``t0 + p1 c1 + p2 (c2 - c1)`` (:func:`_steps`), the quantile the fast model's
    step-and-stream law (:func:`mcengine.analytic.queue_continuous._step_stream_quantile`) with its
    second prompt's ``a`` taken so that ``u a / 2 = p2``, plus the prompt's own steps; the
    bursts' wait (:func:`mcengine.analytic.queue_continuous._burst_wait`) added to both. An oracle for
    share laws: with the simulator's shares it shows what a law would buy."""
    from mcengine.analytic import queue_continuous as qc

    st = _steps(system, rate_per_s)
    u, prompt_s = st["u"], st["p"] * st["dc"]
    burst_mean, burst_q = qc._burst_wait(q, system.instances, prompt_s, u, arrival_cv)
    mean = st["t0"] + p1 * st["c1"] + p2 * (st["c2"] - st["c1"]) + float(burst_mean)
    quantile = float(qc._step_stream_quantile(q, st["tau"], prompt_s, u, min(2.0 * p2 / u, 1.0))) + float(burst_q) + st["own"]
    return 1e3 * mean, 1e3 * quantile


def laws_row(measured: dict, law: dict) -> dict:
    """One ``--laws`` row: the measured components (:func:`stream_components`) beside the step
    count's (:func:`step_laws`), the cost of two ahead counted from the measured rest of the
    first (``c2_rest``: ``c2_join_law + rest2``), and the step-counted mean with the measured shares and with
    the laws."""
    def mean(p1, p2):
        return law["t0_law"] + p1 * law["c1_law"] + p2 * (law["c2_law"] - law["c1_law"])

    return {"t0": measured["ttft0"], "t0_law": law["t0_law"], "c1": measured["ttft1"] - measured["ttft0"], "c1_law": law["c1_law"],
            "c2": measured["ttft2"] - measured["ttft0"], "c2_law": law["c2_law"], "rest2": measured["rest2"],
            "c2_rest": law["c2_join_law"] + measured["rest2"], "p_ge1": measured["p_ge1"], "p1_law": law["p1_law"],
            "p_ge2": measured["p_ge2"], "p2_poisson": law["p2_poisson"], "p2_dead": law["p2_dead"], "mean": measured["mean"],
            "mean_shares": mean(measured["p_ge1"], measured["p_ge2"]), "mean_laws": mean(law["p1_law"], law["p2_dead"])}


def jsq_row(measured: dict, law: dict) -> dict:
    """One ``--jsq`` row (docs/load.md#jsq-laws): the shares of arrivals finding 0, 1 and 2
    or more prompts ahead (``a0`` / ``a1`` / ``a2``); at least one, measured beside the lone
    window's Poisson count, the busy share ``p1_busy``, the pooled streams' Erlang C and the
    supermarket model's (:func:`step_laws`); at least two, beside the Poisson window's, the dead time's and the
    supermarket's; the exponent ``k = ln p_ge2 / ln p_ge1`` (the supermarket model's shares
    of arrivals are ``p_ge2 = p_ge1^(d + 1)``); the single-queue approximation's
    state-dependent rates (:func:`state_rates`); the share of the slowest 1 % with two or
    more ahead; and the thinning per prompt in the window (:func:`thinning`)."""
    m = measured
    return {"a0": 1.0 - m["p_ge1"], "a1": m["p_ge1"] - m["p_ge2"], "a2": m["p_ge2"],
            "p_ge1": m["p_ge1"], "p1_law": law["p1_law"], "p1_busy": law["p1_busy"], "p1_pooled": law["p1_pooled"], "p1_jsq": law["p1_jsq"],
            "p_ge2": m["p_ge2"], "p2_poisson": law["p2_poisson"], "p2_dead": law["p2_dead"], "p2_jsq": law["p2_jsq"],
            "k": float(np.log(m["p_ge2"]) / np.log(m["p_ge1"])), "rate0": m["rate0"], "rate1": m["rate1"], "rate2": m["rate2"],
            "tail_ge2": m["tail_ge2"], **{k: v for k, v in m.items() if k.startswith("thin")}}


def _scored(system, rate: float, row: dict, p1: float, p2: float) -> tuple[dict, bool]:
    """The step count's relative TTFT errors (``ttft_mean``, ``ttft_p99``: :func:`step_model`
    with shares ``p1`` / ``p2``) against a fit-table ``row``'s simulated columns, and whether
    the cell then passes (the TPOT's errors kept from the row)."""
    from make_fit_table import TOLERANCE

    mean, p99 = step_model(system, rate, row["cv"], float(p1), float(p2))
    err = {"ttft_mean": mean / row["sim_ttft_mean_ms"] - 1.0, "ttft_p99": p99 / row["sim_ttft_p99_ms"] - 1.0}
    return err, all(abs(e) <= TOLERANCE[k] for k, e in err.items()) and all(abs(row[f"err_{k}"]) <= TOLERANCE[k] for k in ("tpot_p99", "tpot_mean"))


def p1_band(system, rate: float, row: dict, exponent: float, step: float = 0.01) -> tuple[float, float]:
    """The least and greatest share of arrivals finding a prompt ahead, on a grid of ``step``
    in (0, 1), at which the step count passes a fit-table ``row`` with ``p_ge2 = p_ge1^k``,
    ``k = exponent`` (:func:`_scored`); nan, nan where none does. What a law for ``p_ge1``
    must give in that cell (docs/load.md#jsq-laws)."""
    grid = np.arange(step, 1.0 - step / 2.0, step)
    ok = [p1 for p1 in grid if _scored(system, rate, row, p1, p1 ** exponent)[1]]
    return (min(ok), max(ok)) if ok else (float("nan"), float("nan"))


def oracle(table: pd.DataFrame, shares: pd.DataFrame, system_of) -> pd.DataFrame:
    """The fit table's continuous rows (``table``: docs/load/fit-table.csv) with the step
    count's mean and P99 TTFT (:func:`step_model`) in place of the fast model's, from the
    simulator's shares (``shares``: ``--jsq --out`` rows, ``design``, ``arrival``, ``load``,
    ``p_ge1``, ``p_ge2``): ``shares``, each cell's Poisson shares (the bursts' excess is the
    model's own term); ``power``, its Poisson ``p_ge1`` and ``p_ge2 = p_ge1^k`` with ``k``
    the two designs' mean exponent at that load (:func:`jsq_row`); ``busy``, the busy-share
    law ``p1_busy`` for ``p_ge1`` and ``p1_busy^k`` (that exponent) for ``p_ge2``;
    ``busy_dead``, ``p1_busy`` and ``p2_busy``, laws alone (:func:`step_laws`); ``window``, the
    departures' shares (:func:`window_shares`), laws alone too. Columns: the
    relative errors of each and whether the cell passes (:func:`_scored`); the measured
    ``p_ge1``, the law ``p1_busy`` and the band of ``p_ge1`` that passes with that exponent
    (``p1_lo``, ``p1_hi``: :func:`p1_band`). ``system_of(design)``: the design's continuous
    system."""
    poisson = shares[shares.arrival == "poisson"].set_index(["design", "load"])
    exponent = (np.log(poisson.p_ge2) / np.log(poisson.p_ge1)).groupby(level="load").mean()
    rows = []
    for row in table[table["mode"] == "continuous"].to_dict("records"):
        system, got = system_of(row["design"]), poisson.loc[(row["design"], row["load"])]
        rate = row["load"] * system.capacity_tokens_per_s / system.output_tokens
        law, power, (_, p1_window, p2_window) = step_laws(system, rate), exponent[row["load"]], _departures(_steps(system, rate))
        out = {k: row[k] for k in ("design", "arrival", "load")}
        for name, p1, p2 in (("shares", got.p_ge1, got.p_ge2), ("power", got.p_ge1, got.p_ge1 ** power),
                             ("busy", law["p1_busy"], law["p1_busy"] ** power), ("busy_dead", law["p1_busy"], law["p2_busy"]),
                             ("window", p1_window, p2_window)):
            err, passes = _scored(system, rate, row, p1, p2)
            out |= {f"{name}_{k}": v for k, v in err.items()} | {f"{name}_passes": passes}
        lo, hi = p1_band(system, rate, row, power)
        rows.append(out | {"model_passes": row["passes"], "p_ge1": got.p_ge1, "p1_busy": law["p1_busy"], "p1_lo": lo, "p1_hi": hi})
    return pd.DataFrame(rows)


def one_ahead(table: pd.DataFrame, shares: pd.DataFrame, system_of) -> pd.DataFrame:
    """The fit table's continuous rows (``table``: docs/load/fit-table.csv) with the mean TTFT's
    fluid one-prompt-ahead term, ``u D / 2`` (the remainder of a prompt of ``D`` seconds in
    progress with probability ``u``), replaced by what the steps give (docs/load.md#one-ahead),
    the other terms the fast model's: the rest of a step and the prompt's own steps ``tau /
    2 + own``, the second prompt ``u a D / 2`` (``a = u c^2``, the refills' fixed point) and
    the bursts' wait. ``fluid``: the model's terms as they are (its mean, the check);
    ``steps``: ``u c1_chunked``, the step count's cost of one ahead: ``c1`` (:func:`_steps`:
    :func:`ahead_cost_s`, its wait for a step weighted ``1 - u``) with the step in progress
    one carrying a chunk while the prompt ahead is in its steps (its rest ``d_c / 2``, not
    the mean step's ``tau / 2``); ``behind``: that and a prompt behind (:func:`_steps`'
    ``t0``); ``busy``: a prompt behind and the busy share ``p1_busy`` (:func:`step_laws`) in
    place of ``u``; ``busy_dead``: that, with the second prompt counted in steps at the dead
    time's share too, ``p2_busy (c2 - c1)`` in place of ``u a D / 2``; ``window``: as
    ``busy_dead`` with the departures' shares (:func:`window_shares`, the lone window ``tau /
    2 + own`` grown by ``p1 c1_chunked``) for ``p1_busy`` and ``p2_busy``; ``measured``: as
    ``busy_dead`` with the simulator's own shares, the cell's Poisson ``p_ge1`` / ``p_ge2``
    from ``shares`` (``--jsq --out`` rows: docs/load/jsq-shares.csv; the gamma cells read the
    Poisson ones, the bursts being the model's own term, as :func:`oracle` does), what an
    exact share law would give this count; ``rest`` / ``rest_measured``: ``window`` /
    ``measured`` with two ahead counted from the first prompt's rest (``c2_join_law + r1``,
    :func:`step_laws`) at the dead time's, ``r1 = W1 - D`` (``W1 = tau / 2 + own + p1 c1_chunked``,
    the second admitted as soon as the dead time lets it and the request right after);
    ``beyond1`` / ``beyond2``: ``rest`` with the bursts' wait kept beyond the first one / two
    prompts ahead, ``u`` / ``u^2`` of it: Allen-Cunneen's excess ``u h``, ``h = (c_a^2 - 1) /
    (2 N) D / (1 - u)``, is the sum over the queue's levels ``k >= 1`` of ``(c_a^2 - 1) / (2 N)
    D u^k`` (a geometric queue), and the departures' shares already hold the arrivals'
    clustering at the first one / two levels (docs/load.md#one-ahead).
    Columns: ``fluid_ms`` (``D / 2``), ``c1_ms`` and
    ``c1_chunked_ms``; the cell's own measured shares ``p_ge1`` / ``p_ge2`` beside the
    departures' ``p1_window`` / ``p2_window``; each variant's relative error of the mean TTFT
    and whether the cell then passes (its P99 and TPOT errors are the row's: the quantile is
    unchanged). ``system_of(design)``: the design's continuous system."""
    from make_fit_table import TOLERANCE

    from mcengine.analytic import queue_continuous as qc

    shares = shares.set_index(["design", "arrival", "load"])
    rows = []
    for row in table[table["mode"] == "continuous"].to_dict("records"):
        system = system_of(row["design"])
        rate = row["load"] * system.capacity_tokens_per_s / system.output_tokens
        st, law = _steps(system, rate), step_laws(system, rate)
        own, poisson = shares.loc[(row["design"], row["arrival"], row["load"])], shares.loc[(row["design"], "poisson", row["load"])]
        u, tau, dc, prompt_s = st["u"], st["tau"], st["dc"], st["p"] * st["dc"]
        burst = float(qc._burst_wait(0.99, system.instances, prompt_s, u, row["cv"])[0])
        second = u * u * float(qc._refilled_cv2(u)) * prompt_s / 2.0 + burst
        chunked, p1, p2 = _departures(st)
        late = tau / 2.0 + st["own"] + p1 * chunked - prompt_s + 1e-3 * law["c2_join_law"] - chunked  # two ahead at the dead time's rest

        def in_steps(one, two, second_s=st["c2"] - st["c1"], bursts=burst):
            return st["t0"] + one * chunked + two * second_s + bursts

        means = {"fluid": tau / 2.0 + st["own"] + u * prompt_s / 2.0 + second, "steps": tau / 2.0 + st["own"] + u * chunked + second,
                 "behind": st["t0"] + u * chunked + second, "busy": st["t0"] + law["p1_busy"] * chunked + second,
                 "busy_dead": in_steps(law["p1_busy"], law["p2_busy"]), "window": in_steps(p1, p2),
                 "measured": in_steps(poisson.p_ge1, poisson.p_ge2), "rest": in_steps(p1, p2, late),
                 "rest_measured": in_steps(poisson.p_ge1, poisson.p_ge2, late),
                 "beyond1": in_steps(p1, p2, late, u * burst), "beyond2": in_steps(p1, p2, late, u * u * burst)}
        others = all(abs(row[f"err_{k}"]) <= TOLERANCE[k] for k in ("ttft_p99", "tpot_p99", "tpot_mean"))
        out = {k: row[k] for k in ("design", "arrival", "load")} | {"fluid_ms": 1e3 * prompt_s / 2.0, "c1_ms": 1e3 * st["c1"], "c1_chunked_ms": 1e3 * chunked,
                                                                     "p_ge1": own.p_ge1, "p1_window": p1, "p_ge2": own.p_ge2, "p2_window": p2}
        for name, mean in means.items():
            err = 1e3 * mean / row["sim_ttft_mean_ms"] - 1.0
            out |= {f"{name}_ttft_mean": err, f"{name}_passes": others and abs(err) <= TOLERANCE["ttft_mean"]}
        rows.append(out | {"model_passes": row["passes"]})
    return pd.DataFrame(rows)


def dispatch_toy(holding: float, prompt: float, arrivals: int, instances: int = INSTANCES, seed: int = 0) -> pd.DataFrame:
    """Least-loaded dispatch and each instance's prefill stream, nothing else: Poisson
    arrivals at ``instances`` requests per unit time (one an instance: times in mean gaps) go
    to the instance with the fewest requests (lowest index on ties); an instance's prompts
    take ``prompt`` each in its first-come first-served stream (first token ``max(arrival,
    previous first token) + prompt``) and leave ``holding`` after their first token. Returns
    the simulator's per-request columns (``instance``, ``arrival_s``, ``first_token_s``,
    ``finish_s``, ``ttft_s``) for :func:`stream_components` at ``instances`` requests per
    unit time. A pure-Python event loop (a study, not the model)."""
    rng = np.random.default_rng(seed)
    times = np.cumsum(rng.exponential(1.0 / instances, arrivals))
    count, stream = np.zeros(instances, np.int64), np.full(instances, -np.inf)
    leave = [deque() for _ in range(instances)]  # each instance's departures, in order
    chosen, first = np.empty(arrivals, np.int64), np.empty(arrivals)
    for k, t in enumerate(times):
        for i in range(instances):
            while leave[i] and leave[i][0] <= t:
                leave[i].popleft()
                count[i] -= 1
        j = int(np.argmin(count))
        count[j] += 1
        stream[j] = max(t, stream[j]) + prompt
        leave[j].append(stream[j] + holding)
        chosen[k], first[k] = j, stream[j]
    return pd.DataFrame({"instance": chosen, "arrival_s": times, "first_token_s": first, "finish_s": first + holding, "ttft_s": first - times})


def admission_gaps(df: pd.DataFrame, rate_per_s: float, warmup: float = WARMUP) -> np.ndarray:
    """The gaps between one instance's consecutive arrivals after the first ``warmup`` share
    of rows, in mean gaps (``rate_per_s`` over all instances)."""
    t0 = float(df.arrival_s.iloc[int(warmup * len(df))])
    groups = df.groupby("instance").indices
    gaps = [np.diff(a[a >= t0]) for a in (df.arrival_s.to_numpy()[rows] for rows in groups.values())]
    return np.concatenate(gaps) * rate_per_s / len(groups)


def cell(name: str, arrival: str, cv: float, load: float, requests: int = REQUESTS, seed: int = 0, warmup: float = WARMUP,
         laws: bool = False, jsq: bool = False, length_cv: float = 0.0) -> dict:
    """One cell on :data:`INSTANCES` instances of the design's continuous plan, its lengths
    spread by ``length_cv`` (``workload.load.length_cv``'s gamma law; 0: every request the
    mean) (``laws``: its :func:`laws_row`; ``jsq``: its :func:`jsq_row`; otherwise the
    :func:`stream_components` with the simulated and the fast model's mean and P99 TTFT, ms,
    and :func:`running_counts`)."""
    import dataclasses

    from mcengine.scenario import load_scenario
    from mcengine.standalone.serve import fast_latency, serving_system, simulate_requests

    system = dataclasses.replace(serving_system(load_scenario(name), "continuous", INSTANCES), length_cv=length_cv)
    rate = load * system.capacity_tokens_per_s / system.output_tokens
    df, _ = simulate_requests(system, rate, requests, seed, 0, arrival, cv)
    measured = stream_components(df, rate, warmup)
    ttft = 1e3 * df.ttft_s.to_numpy()[int(warmup * len(df)):]
    if laws:
        measured = laws_row(measured | {"mean": float(ttft.mean())}, step_laws(system, rate))
    elif jsq:
        measured = jsq_row(measured, step_laws(system, rate))
    else:
        model = fast_latency(system, rate, cv, 0.99)
        measured |= {"ttft_mean": float(ttft.mean()), "ttft_p99": float(np.quantile(ttft, 0.99)), "model_mean": 1e3 * float(model.ttft_mean_s),
                     "model_p99": 1e3 * float(model.ttft_q_s), **running_counts(df, warmup), "preempted": int(df.preemptions.sum())}
    return {"design": name, "arrival": arrival, "load": load, **({"length_cv": length_cv} if length_cv else {}), **measured}


#: The passes of :func:`stream_standin` that scale its offered rate until the admitted rate is
#: the cell's (a fixed count: run time never grows with a value).
STANDIN_PASSES = 4


def stream_standin(busy: float, prompt_s: float, step_s: float, own_s: float, thin: float, length_cv: float = 0.0,
                   arrivals: int = 60_000, seed: int = 0, warmup: float = WARMUP) -> dict:
    """A single-queue stand-in for one continuous instance's prefill stream under least-loaded
    dispatch with lengths spread (docs/load.md#spread-standin), simulated: prompts served in
    turn, each ``prompt_s r`` seconds (``r`` gamma of mean 1 and CV ``length_cv``), the first
    of a busy period ``step_s / 2`` more (it waits for a step boundary: an M/G/1 queue with a
    setup, the busy-share law's, docs/load.md#busy-share); Poisson arrivals admitted with
    probability ``thin^k`` where ``k`` prompts are in the stream (the single-queue
    approximation of join-the-shortest-queue: an instance holding more requests is chosen
    less often), their offered rate scaled over :data:`STANDIN_PASSES` passes until the
    admitted rate is ``lambda = busy / prompt_s``. A request's TTFT: the rest of
    the step in progress (uniform on ``[0, step_s]``), its wait, a lone prompt's own steps
    ``own_s`` and its own prompt's spread ``(r - 1) prompt_s``. Returns the mean and 0.99
    quantile TTFT (ms) over the admissions after the first ``warmup`` share, and ``rate``,
    the last pass's admitted rate over the cell's. ``thin = 1``: M/G/1 with an exceptional
    first service, whose mean wait is ``lambda (p_0 E[S_0^2] + (1 - p_0) E[S^2]) / (2 (1 -
    rho))`` (the residual service an arrival finds over ``1 - rho``, ``rho = lambda E[S]``),
    ``p_0 = (1 - rho) / (1 + lambda delta)`` the share of prompts that start a busy period
    (``S_0 = S + delta``, ``delta = step_s / 2``; Welch 1964, docs/sources.md#load-queueing)."""
    rng = np.random.default_rng(seed)
    rate = busy / prompt_s
    offered, shape = rate, (1.0 / length_cv ** 2, length_cv ** 2) if length_cv > 0.0 else None
    for _ in range(STANDIN_PASSES):
        gaps, draws = rng.exponential(1.0 / offered, arrivals), rng.random(arrivals)
        sizes = rng.gamma(*shape, arrivals) if shape else np.ones(arrivals)
        t, last, pending, waits, kept = 0.0, 0.0, deque(), [], []
        for gap, draw, size in zip(gaps, draws, sizes):
            t += gap
            while pending and pending[0] <= t:
                pending.popleft()
            if draw < thin ** len(pending):
                start = max(t, last)
                last = start + prompt_s * size + (0.0 if pending else step_s / 2.0)
                pending.append(last)
                waits.append(start - t)
                kept.append(size)
        admitted = len(waits) / t
        offered *= rate / admitted
    first = int(warmup * len(waits))
    ttft = 1e3 * (rng.random(len(waits) - first) * step_s + np.array(waits[first:]) + own_s + (np.array(kept[first:]) - 1.0) * prompt_s)
    return {"standin_mean": float(ttft.mean()), "standin_p99": float(np.quantile(ttft, 0.99)), "rate": float(admitted / rate)}


def standin_cell(name: str, load: float, thin: float, length_cv: float, arrivals: int, warmup: float) -> dict:
    """:func:`stream_standin` at the fast model's step, prompt time, busy share and own steps
    (:func:`_steps`) on :data:`INSTANCES` instances of the design's continuous plan at a
    Poisson ``load``, beside the fast model's mean and P99 TTFT (ms)."""
    import dataclasses

    from mcengine.scenario import load_scenario
    from mcengine.standalone.serve import fast_latency, serving_system

    system = dataclasses.replace(serving_system(load_scenario(name), "continuous", INSTANCES), length_cv=length_cv)
    rate = load * system.capacity_tokens_per_s / system.output_tokens
    st = _steps(system, rate)
    got = stream_standin(st["u"], st["p"] * st["dc"], st["tau"], st["own"], thin, length_cv, arrivals, warmup=warmup)
    model = fast_latency(system, rate, 1.0, 0.99)
    return {"design": name, "load": load, "length_cv": length_cv, "thin": thin, **got,
            "model_mean": 1e3 * float(model.ttft_mean_s), "model_p99": 1e3 * float(model.ttft_q_s)}


def running_counts(df: pd.DataFrame, warmup: float = WARMUP) -> dict:
    """The requests an arrival finds on the instance it is sent to (admitted, not yet done),
    after the first ``warmup`` share of rows: their mean ``running``, least ``running_min``
    and most ``running_max`` (the plan's batch cap and KV room bind only where the most
    reaches them)."""
    n = len(df)
    running = np.zeros(n, np.int64)
    for rows in df.groupby("instance").indices.values():
        running[rows] = np.arange(len(rows)) - np.searchsorted(np.sort(df.finish_s.to_numpy()[rows]), df.arrival_s.to_numpy()[rows], side="right")
    kept = running[int(warmup * n):]
    return {"running": float(kept.mean()), "running_min": int(kept.min()), "running_max": int(kept.max())}


#: The options each of ``--oracle``, ``--one-ahead``, ``--toy`` and ``--standin`` uses instead of the cells'
#: (:func:`main` refuses any other given with it).
USES = {"oracle": set(), "one_ahead": set(), "toy": {"requests", "warmup"}, "standin": {"design", "loads", "length_cv", "requests", "warmup"}}


def main(argv=None) -> int:
    """Print the cells asked for (``--design``, ``--arrival``, ``--loads``, ``--requests``, ``--warmup``)."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--design", default=None, help="default h100,lite-h100")
    parser.add_argument("--arrival", default=None, help="poisson and/or gamma (CV 2); default both")
    parser.add_argument("--loads", default=None, help=f"default {','.join(map(str, LOADS))}")
    parser.add_argument("--requests", type=int, default=None, help=f"default {REQUESTS}")
    parser.add_argument("--warmup", type=float, default=None,
                        help=f"the share of the run left out (the settled pattern: 0.5 of 800,000 requests or more); default {WARMUP}")
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--laws", action="store_true", help="the measured components beside the step count's and the share laws")
    shown.add_argument("--jsq", action="store_true", help="the shares of arrivals finding 0 / 1 / 2+ prompts ahead beside the share laws")
    parser.add_argument("--length-cv", type=float, default=None,
                        help="the lengths' spread (workload.load.length_cv's gamma law; default 0: every request the mean)")
    parser.add_argument("--out", default=None, metavar="CSV", help="also write the rows to CSV")
    parser.add_argument("--oracle", default=None, metavar="CSV",
                        help="instead: the fit table's continuous cells counted in steps with a --jsq --out CSV's Poisson shares")
    parser.add_argument("--one-ahead", action="store_true",
                        help="instead: the fit table's continuous means with the fluid one-prompt-ahead term replaced by the step count's")
    parser.add_argument("--standin", type=float, default=None, metavar="THIN",
                        help="instead: the single-queue stand-in for the stream (stream_standin) with thinning THIN in (0, 1], "
                             "Poisson, --requests arrivals a pass (its rate column falls short of 1 where THIN is too small "
                             "for its passes to admit the cell's rate: 0.74 at busy share 0.95 and THIN 0.001)")
    parser.add_argument("--toy", default=None, metavar="HOLDING,PROMPT",
                        help="instead: least-loaded dispatch and the prefill streams alone (dispatch_toy), in mean gaps")
    args = parser.parse_args(argv)
    given = {name for name, value in vars(args).items() if value is not None and value is not False}
    for mode, takes in USES.items():
        if mode in given and given - takes - {mode}:
            parser.error(f"--{mode.replace('_', '-')} takes {'only ' + ', '.join('--' + x.replace('_', '-') for x in sorted(takes)) if takes else 'no other option'}; "
                         f"not used with it: {', '.join('--' + x.replace('_', '-') for x in sorted(given - takes - {mode}))}")
    args.design, args.arrival = args.design or "h100,lite-h100", args.arrival or "poisson,gamma"
    args.loads = args.loads or ",".join(map(str, LOADS))
    args.requests = REQUESTS if args.requests is None else args.requests
    args.warmup = WARMUP if args.warmup is None else args.warmup
    args.length_cv = 0.0 if args.length_cv is None else args.length_cv
    if args.requests < 1:
        parser.error(f"--requests {args.requests}: allowed 1 or more")
    if not 0.0 <= args.warmup < 1.0:
        parser.error(f"--warmup {args.warmup:g}: allowed a share in [0, 1)")
    if not 0.0 <= args.length_cv <= 3.0:
        parser.error(f"--length-cv {args.length_cv:g}: allowed 0 to 3")
    if args.oracle is not None:
        from make_fit_table import CSV, fit_system

        got = oracle(pd.read_csv(CSV), pd.read_csv(args.oracle), lambda name: fit_system(name, "continuous"))
        print(got.to_string(index=False, float_format="{:+.3f}".format))
        print(", ".join(f"{k}: {int(got[f'{k}_passes'].sum())}/{len(got)}" for k in ("model", "shares", "power", "busy", "busy_dead", "window")),
              "continuous cells within")
        return 0
    if args.one_ahead:
        from make_fit_table import CSV, fit_system

        got = one_ahead(pd.read_csv(CSV), pd.read_csv(HERE / "jsq-shares.csv"), cache(lambda name: fit_system(name, "continuous")))
        print(got.to_string(index=False, float_format="{:+.3f}".format))
        print(", ".join(f"{k}: {int(got[f'{k}_passes'].sum())}/{len(got)}"
                        for k in ("model", "fluid", "steps", "behind", "busy", "busy_dead", "window", "measured", "rest", "rest_measured", "beyond1", "beyond2")),
              "continuous cells within")
        return 0
    if args.toy is not None:
        holding, prompt = (float(x) for x in args.toy.split(","))
        if not (holding > 0 and prompt >= 0):
            parser.error(f"--toy {args.toy}: allowed HOLDING > 0 and PROMPT >= 0 (mean gaps)")
        toy = stream_components(dispatch_toy(holding, prompt, args.requests), INSTANCES, args.warmup)
        shown = ("p_ge1", "t_ge1", "p_ge2", "t_ge2", "gap_cv2", "gap_short", "refill", "refill_delay")
        print(pd.DataFrame([{k: toy[k] for k in shown}]).to_string(index=False, float_format="{:.3f}".format))
        return 0
    designs, arrivals = tuple(args.design.split(",")), tuple(args.arrival.split(","))
    if not set(designs) <= set(DESIGNS):
        parser.error(f"--design {args.design}: allowed a comma-separated subset of {','.join(DESIGNS)}")
    if args.standin is not None and not 0.0 < args.standin <= 1.0:
        parser.error(f"--standin {args.standin:g}: allowed a thinning in (0, 1]")
    if not set(arrivals) <= {"poisson", "gamma"}:
        parser.error(f"--arrival {args.arrival}: allowed a comma-separated subset of poisson,gamma")
    loads = tuple(float(x) for x in args.loads.split(","))
    if not all(0.0 < x < 1.0 for x in loads):
        parser.error(f"--loads {args.loads}: allowed loads strictly between 0 and 1")
    if args.standin is not None:
        rows = pd.DataFrame([standin_cell(name, load, args.standin, args.length_cv, args.requests, args.warmup) for name in designs for load in loads])
        print(rows.to_string(index=False, float_format="{:.3f}".format))
        return 0
    rows = pd.DataFrame([cell(name, arrival, 1.0 if arrival == "poisson" else 2.0, load, args.requests, warmup=args.warmup, laws=args.laws, jsq=args.jsq,
                              length_cv=args.length_cv)
                         for name in designs for arrival in arrivals for load in loads])
    if args.out is not None:
        rows.to_csv(args.out, index=False)
    print(rows.to_string(index=False, float_format="{:.3f}".format))
    return 0


if __name__ == "__main__":
    sys.exit(main())
