"""The spread of request lengths in the load models (docs/load.md#length-spread): the
quantiles of a request's own prompt and output length about their means, the share of
requests that take more than one token or one chunk, the longest request of a batch, and
the excess a request's own prompt adds to its first token in each serving mode's fast
model (:mod:`.queue_static`, :mod:`.queue_continuous`, :mod:`.queue_disaggregated`)."""

from __future__ import annotations

import numpy as np
from scipy import special

from .queueing import _linear


#: Bisection steps of :func:`join_excess_quantile` (a fixed count: run time never grows
#: with a value; 2^-60 of its bracket is below a float's resolution).
BISECTION_STEPS = 60


#: Most steps of :func:`_mixed_own_excess_s`'s bracketed Newton solve (a fixed cap: run time
#: never grows with a value; the bisection a step falls back to would reach a float's
#: resolution of the bracket in 60).
OWN_STEPS = 60


#: The step, relative to the larger end of its bracket, at which :func:`_mixed_own_excess_s`
#: takes a trial's root as solved.
OWN_TOLERANCE = 1e-13


#: Gauss-Legendre nodes of :func:`longest_ratio` (a fixed count: run time never grows with a
#: value; against adaptive quadrature the 32-node rule is within 3e-5 relative over batches
#: 1-256 and length CVs 0.1-3).
LONGEST_NODES = 32


def _where_spread(v, constant, law) -> np.ndarray:
    """``law(v)`` where the squared length CV ``v`` is above 0, ``constant`` where it is 0 (every
    request the mean length): ``law`` is called once, on ``v`` with its zeros set to 1 (a
    finite stand-in whose values are discarded), and not at all where no ``v`` is above 0."""
    spread = v > 0.0
    if not spread.any():
        return np.full(v.shape, constant)
    return np.where(spread, law(np.where(spread, v, 1.0)), constant)


def length_quantile(q, length_cv) -> np.ndarray:
    """The ``q`` quantile of a request's length over the mean, its law gamma of mean 1 and CV
    ``length_cv`` (the simulator's, docs/load.md#length-spread): ``P^-1(1 / v, q) v``, ``v =
    length_cv^2``, ``P^-1`` the inverse regularised lower incomplete gamma function; 1 where
    ``length_cv = 0`` (every request the mean)."""
    def law(v):
        q_, v = np.broadcast_arrays(np.asarray(q, float), v)
        return special.gammaincinv(1.0 / v, q_) * v

    return _where_spread(np.asarray(length_cv, float) ** 2, 1.0, law)


def multi_token_share(output_tokens, length_cv) -> np.ndarray:
    """The share of requests with more than one output token, whose TPOT is a time per token
    (a one-token request's is 0: its first token is its last), lengths gamma of mean ``O =
    output_tokens`` and CV ``length_cv`` rounded to whole tokens, at least 1 (the
    simulator's): ``P(X >= 3/2) = Q(1 / v, 3 / (2 O v))``, ``v = length_cv^2``, ``Q`` the
    regularised upper incomplete gamma function; 1 where ``length_cv = 0`` (every request
    ``O`` tokens; the model's ``O`` is above 1)."""
    return _where_spread(np.asarray(length_cv, float) ** 2, 1.0, lambda v: special.gammaincc(1.0 / v, 1.5 / (np.asarray(output_tokens, float) * v)))


def join_excess_quantile(q, output_tokens, length_cv) -> np.ndarray:
    """The ``q`` quantile over requests of ``U / m``, the share of a decode step a request
    waits to join its decode instance's batch (``U`` uniform: its KV lands in a step in
    progress, docs/serve.md) over its ``m = O_i - 1`` decode steps, with ``O_i`` gamma of
    mean ``O = output_tokens`` and CV ``length_cv`` (one-token requests, ``O_i < 3/2``,
    have a TPOT of 0: below any excess). ``P(U / m > x) = int_{3/2}^{1 + 1/x} (1 - (g - 1)
    x) f(g) dg = (1 + x)(F(1 + 1/x) - F(3/2)) - x (M(1 + 1/x) - M(3/2))``, ``F(y) = P(k, y /
    theta)`` and the partial mean ``M(y) = O P(k + 1, y / theta)`` (``k = 1 / v``, ``theta =
    O v``, ``v = length_cv^2``, ``P`` the regularised lower incomplete gamma function),
    falling in ``x`` to 0 at ``x = 2``: :data:`BISECTION_STEPS` bisection steps on ``[0, 2]``.
    0 where ``length_cv = 0`` (``m = O - 1`` steps: the wait a negligible share, which the
    model leaves out) or where fewer than ``1 - q`` of the requests have an excess at all.
    While ``x`` times the largest ``m`` is below 1, ``P(U / m > x) = 1 - x E[m]``: a narrow
    spread's quantile is the mean length's ``q / (O - 1)`` exactly."""
    o, v = np.broadcast_arrays(np.asarray(output_tokens, float), np.asarray(length_cv, float) ** 2)
    out = np.zeros(o.shape)
    rows = v > 0.0
    if not rows.any():
        return out
    k, theta, o = 1.0 / v[rows], o[rows] * v[rows], o[rows]
    cdf_low, mean_low = special.gammainc(k, 1.5 / theta), o * special.gammainc(k + 1.0, 1.5 / theta)  # F(3/2), M(3/2): the same at every x

    def above(x):
        edge = (1.0 + 1.0 / np.maximum(x, 1e-300)) / theta
        return np.where(x < 2.0, (1.0 + x) * (special.gammainc(k, edge) - cdf_low) - x * (o * special.gammainc(k + 1.0, edge) - mean_low), 0.0)

    tail = 1.0 - np.broadcast_to(np.asarray(q, float), out.shape)[rows]
    lo, hi = np.zeros(k.shape), np.full(k.shape, 2.0)
    for _ in range(BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        over = above(mid) > tail
        lo, hi = np.where(over, mid, lo), np.where(over, hi, mid)
    out[rows] = hi
    return out


def chunked_share(output_tokens, length_cv, per_prompt) -> np.ndarray:
    """The share of requests whose decode steps all fit in the rest of the prompt a
    continuous instance's stream is prefilling when they start: ``m = O_i - 1`` steps at
    most that prompt's mean remaining chunk steps ``R = (S / c)(1 + v) / 2`` (``per_prompt
    = S / c``; the prompt in progress length-biased, mean ``(S / c)(1 + v)``, ``v =
    length_cv^2``, and half of it left), ``O_i`` gamma of mean ``O = output_tokens``:
    ``P(3/2 <= O_i <= 3/2 + R)`` (one-token requests have no TPOT). 0 where ``length_cv = 0``."""
    o, v, d = np.broadcast_arrays(np.asarray(output_tokens, float), np.asarray(length_cv, float) ** 2, np.asarray(per_prompt, float))

    def law(v):
        k, theta = 1.0 / v, o * v
        return special.gammainc(k, (1.5 + d * (1.0 + v) / 2.0) / theta) - special.gammainc(k, 1.5 / theta)

    return _where_spread(v, 0.0, law)


def longest_ratio(batch, length_cv) -> np.ndarray:
    """The mean of the longest of ``batch`` independent lengths over their mean, each gamma of
    mean 1 and CV ``length_cv`` (docs/load.md#length-spread): the longest's law is ``F^b``, so
    its mean is ``int_0^1 F^-1(w^(1/b)) dw``; with ``w = 1 - (1 - t)^2`` (which takes the
    quantile's logarithmic end at ``w = 1`` to a zero of the integrand) it is ``int_0^1
    F^-1((1 - (1 - t)^2)^(1/b)) 2 (1 - t) dt``, by :data:`LONGEST_NODES` Gauss-Legendre nodes
    (David and Nagaraja, *Order Statistics*, 2003; docs/sources.md#load-length-spread). 1
    where ``length_cv = 0`` or ``batch <= 1``."""
    b, v = np.broadcast_arrays(np.asarray(batch, float), np.asarray(length_cv, float) ** 2)
    out = np.ones(b.shape)
    rows = (v > 0.0) & (b > 1.0)
    if rows.any():
        t, w = np.polynomial.legendre.leggauss(LONGEST_NODES)
        t, w = (t + 1.0) / 2.0, w * (1.0 - (t + 1.0) / 2.0)  # the rule on [0, 1] times the change of variable's 2 (1 - t)
        level = (1.0 - (1.0 - t) ** 2)[None, :] ** (1.0 / b[rows][:, None])
        out[rows] = (special.gammaincinv(1.0 / v[rows][:, None], level) * w).sum(axis=1) * v[rows]  # a row's sum alone: the same whatever rows share the call
    return out


def _own_excess_s(q, length_cv, first_1, first_top, top, batch) -> np.ndarray:
    """The time a request's own prompt at the ``q`` quantile of its law adds to its pass, whose
    first tokens come ``first(k)`` after it starts (linear in the ``k`` prompts through
    ``(1, first_1)`` and ``(top, first_top)``) and scale with its prompt tokens over ``k``
    mean prompts (the simulator's pass, docs/serve.md): a prompt of ``r_q`` times the mean
    (:func:`length_quantile`) among ``k - 1`` of the mean adds ``(r_q - 1) first(k) / k``,
    at the mean batch ``k = batch`` a request rides. 0 where ``length_cv = 0``."""
    k = np.maximum(np.asarray(batch, float), 1.0)
    return (length_quantile(q, length_cv) - 1.0) * _linear(first_1, first_top, top, k) / k


def _mixed_own_excess_s(q, length_cv, weight, per_prompt_a, per_prompt_b) -> np.ndarray:
    """The ``q`` quantile of ``(r - 1) d_K``, the time a request's own prompt of ``r`` times the
    mean (gamma of mean 1 and CV ``length_cv``) adds to its pass, where the pass gives ``d_a =
    per_prompt_a`` seconds a mean prompt with probability ``weight`` and ``d_b =
    per_prompt_b`` otherwise (:func:`_own_excess_s`'s ``first(k) / k`` at two batches): the
    root ``x`` of ``w P(1 + x / d_a) + (1 - w) P(1 + x / d_b) = q``, ``P`` the law's
    distribution function (a regularised lower incomplete gamma function), which lies between
    the two parts' own quantiles ``(r_q - 1) d_a`` and ``(r_q - 1) d_b`` (``r_q``:
    :func:`length_quantile`). Newton steps on the logarithm of the mixture's tail on the
    quantile's side (the survival where ``q >= 1/2``, else the distribution function: nearly
    linear in ``x`` out there) from the end of the part of the larger weight, kept inside
    that bracket (a step that would leave it halves the bracket instead), each trial frozen once its step is below :data:`OWN_TOLERANCE` of the
    bracket's larger end (so its answer is its own, whatever else the array holds),
    :data:`OWN_STEPS` steps at most. ``(r_q - 1) d_a`` where ``d_a = d_b``; 0 where
    ``length_cv = 0``."""
    shape = np.broadcast(q, length_cv, weight, per_prompt_a, per_prompt_b).shape
    q, v, w, d_a, d_b = (np.broadcast_to(np.asarray(x, float), shape) for x in (q, np.asarray(length_cv, float) ** 2, weight, per_prompt_a, per_prompt_b))
    out = np.zeros(shape)
    rows = v > 0.0
    if not rows.any():
        return out
    q, v, w, d_a, d_b = q[rows], v[rows], w[rows], d_a[rows], d_b[rows]
    k = 1.0 / v
    r_q = special.gammaincinv(k, q) * v  # :func:`length_quantile`
    end_a, end_b = (r_q - 1.0) * d_a, (r_q - 1.0) * d_b
    lo, hi = np.minimum(end_a, end_b), np.maximum(end_a, end_b)
    x = np.where(w >= 0.5, end_a, end_b)
    upper = q >= 0.5  # the tail whose logarithm the steps follow
    sign = np.where(upper, -1.0, 1.0)  # its slope's sign: the survival falls with x
    target = np.where(upper, np.log1p(-q), np.log(q))
    log_norm = -special.gammaln(k) - k * np.log(v)  # the gamma density's log-constant
    scale = np.maximum(np.abs(lo), np.abs(hi))
    live = np.flatnonzero(hi - lo > OWN_TOLERANCE * scale)
    for _ in range(OWN_STEPS):
        if live.size == 0:
            break
        xs, ks, vs, ws, up = x[live], k[live], v[live], w[live], upper[live]
        tail, density = 0.0, 0.0
        for share, d in ((ws, d_a[live]), (1.0 - ws, d_b[live])):
            y = np.maximum(1.0 + xs / d, 0.0) / vs  # a prompt of no tokens or fewer: none that short
            tail = tail + share * np.where(up, special.gammaincc(ks, y), special.gammainc(ks, y))
            with np.errstate(divide="ignore", invalid="ignore"):
                density = density + share * np.where(y > 0.0, np.exp(log_norm[live] + (ks - 1.0) * np.log(y * vs) - y), 0.0) / d
        with np.errstate(divide="ignore", invalid="ignore"):
            g = np.log(tail) - target[live]
            newton = xs - g * tail / (sign[live] * density)
        above = (g >= 0.0) == up  # the root lies above x
        lo[live], hi[live] = np.where(above, xs, lo[live]), np.where(above, hi[live], xs)
        fast = np.isfinite(newton) & (newton >= lo[live]) & (newton <= hi[live])
        step = np.where(fast, newton, 0.5 * (lo[live] + hi[live]))
        x[live] = step
        live = live[np.abs(step - xs) > OWN_TOLERANCE * scale[live]]
    out[rows] = x
    return out


def _with_own_spread(mean, quantile, excess, length_cv, base=0.0) -> np.ndarray:
    """The quantile of a request's TTFT, its wait and pass (``mean``, ``quantile``) plus its
    own prompt's spread, ``excess`` at the same quantile over its mean (independent of the
    wait): the parts above their means added in quadrature, ``quantile + sqrt(a^2 +
    excess^2) - a`` with ``a = max(quantile - mean, 0)`` (``mean + sqrt((quantile - mean)^2
    + excess^2)`` where the quantile is above the mean: exact for normal parts, the larger
    part's alone where the other has none), docs/load.md#length-spread. A quantile below
    its mean (a low ``q``) takes no part above it, and an own prompt shorter than the mean
    (``excess < 0``, ``q`` below about 0.6) is added as it is: so the result tends to
    ``quantile`` as ``length_cv`` tends to 0, and where ``excess`` does not fall with the
    load it rises with the load as ``quantile`` does (the disaggregated excess,
    :func:`_pass_own_excess_s`, falls as the load fills the passes, and the result may too).
    ``base``: the excess a mean-length request has, which the model without a spread leaves
    out (the disaggregated join's ``q / (O - 1)`` of a step, :func:`disaggregated_at_load`):
    its part is taken out again, ``sqrt(a^2 + excess^2) - sqrt(a^2 + base^2)``, so that the
    result still tends to ``quantile`` where ``excess`` tends to ``base``. ``quantile`` where
    ``length_cv = 0`` or the mean is not finite (a queue past its capacity)."""
    spread = np.asarray(length_cv, float) > 0.0
    if not spread.any():
        return quantile
    with np.errstate(invalid="ignore"):  # a queue past its capacity: both infinite, the quantile kept
        above = np.maximum(quantile - mean, 0.0)

        def part(e):
            return np.where(e > 0.0, np.hypot(above, e) - above, e)

        return np.where(spread & np.isfinite(mean), quantile + (part(excess) - part(base)), quantile)


def tail_chunk_tokens(prompt_tokens, chunk_tokens):
    """The tokens of a lone prompt's last chunk: ``S - (ceil(S / c) - 1) c`` (a whole chunk
    when ``c`` divides ``S``)."""
    s, c = np.asarray(prompt_tokens, float), np.asarray(chunk_tokens, float)
    return s - (np.ceil(s / c) - 1.0) * c


def _own_prefill_s(per_prompt, d, chunked, tail=None):
    """A lone prompt's own steps, ``ceil(S / c)`` of them: ``ceil(S / c) - 1`` steps carrying a
    whole chunk (``chunked`` each) and the last carrying the rest, ``tail`` (None: ``d`` plus
    that rest's share of the chunk's cost, the step linear in the chunk)."""
    if tail is None:
        return np.ceil(per_prompt) * d + per_prompt * (chunked - d)
    return (np.ceil(per_prompt) - 1.0) * chunked + tail
