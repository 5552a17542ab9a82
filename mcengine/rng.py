"""Counter-based, stateless random numbers for mcengine kernels.

Every draw is a pure function of ``(seed, stage, stream_id, trial, counter)``: one
Philox-4x32-10 block (Salmon et al. 2011) is computed from a 128-bit counter and a
64-bit key, so any trial can be (re)computed alone, on any thread, in any order, and a
chunked or resumed run equals a straight one.

Stream layout (the contract other modules code against):

* key ``(k0, k1) = (seed & 0xffffffff, seed >> 32)``;
* counter words ``(c0, c1, c2, c3) = (block & 0xffffffff, trial, stream_id, stage)``,
  ``block = counter >> 1``: one block gives two 53-bit doubles, draw ``n`` being half
  ``n & 1`` of block ``n >> 1`` (so a stream holds ``2**33`` draws);
* a stream's state is ``uint64[STREAM_WORDS] = [seed, (stage << 32) | stream_id, trial,
  counter, bits of draws counter - counter % 32 .. + 31]``: the blocks are computed 16
  at a time, into the state (:func:`_refill`), where independent blocks run side by
  side in SIMD lanes (vectorised by LLVM), about 3x cheaper than one block after
  another. Only the functions here advance ``counter``; do not set it by hand, and
  size a state with :data:`STREAM_WORDS`.

Stage ids are named constants and are never renumbered (results depend on them).

References
----------
J. K. Salmon, M. A. Moraes, R. O. Dror, D. E. Shaw (2011), "Parallel random numbers:
as easy as 1, 2, 3", Proc. SC'11. doi:10.1145/2063384.2063405 (Random123).
G. Marsaglia, W. W. Tsang (2000), "A simple method for generating gamma variables",
ACM TOMS 26(3):363-372.
G. Marsaglia, W. W. Tsang (2000), "The ziggurat method for generating random
variables", J. Statist. Software 5(8). J. A. Doornik (2005), "An improved ziggurat
method to generate normal random samples", Univ. of Oxford (ZIGNOR). G. Marsaglia
(1964), "Generating a variable from the tail of the normal distribution",
Technometrics 6(1):101-102.
W. Hörmann (1993), "The transformed rejection method for generating Poisson random
variables", Insurance: Mathematics and Economics 12:39-45 (PTRS).
W. Hörmann (1993), "The generation of binomial random variates", J. Statist. Comput.
Simul. 46:101-110 (BTRS).
"""

from __future__ import annotations

import math

import numpy as np

from mcengine.jit import event_kernel, inline_kernel, kernel, linked_kernel
from mcengine._pointer import address_of, uint64_words_at

__all__ = [
    "STAGE_INPUTS", "STAGE_FAB", "STAGE_LIFE", "STAGE_ROOFLINE", "STAGE_ECON",
    "STAGE_SENSITIVITY", "STAGE_DESIGN_INPUTS", "STAGE_SCRAMBLE", "STAGE_SERVE", "STREAM_WORDS", "philox4x32_10", "new_stream", "reset_stream", "uniform",
    "uniform_at", "exponential", "normal", "lognormal", "gamma", "poisson", "binomial",
    "weibull", "weibull_scale", "uniforms_for_trials", "bits_below", "draws_below",
]

# Stage ids: named constants, never renumbered.
STAGE_INPUTS = 1  # uncertain-input (epistemic) draws
STAGE_FAB = 2
STAGE_LIFE = 3  # reliability lifetimes
STAGE_ROOFLINE = 4
STAGE_ECON = 5
STAGE_SENSITIVITY = 6
STAGE_DESIGN_INPUTS = 7  # per-design uncertain inputs (a dist table with shared = false)
STAGE_SCRAMBLE = 8  # the random scramblings of the Sobol' input sampler (randomised QMC)
STAGE_SERVE = 9  # the request-level serving simulator (arrivals, output lengths)

#: Draws computed at once into a stream's state (16 Philox blocks; a power of two).
_BUFFERED = 32
#: Length of a stream's state array: 4 words of key and counter, then the buffer.
STREAM_WORDS = 4 + _BUFFERED

# All integer constants are uint64: numba turns uint64 mixed with int64 into float64.
_BUFFER_MASK = np.uint64(_BUFFERED - 1)
_MASK32 = np.uint64(0xFFFFFFFF)
_U1 = np.uint64(1)
_U5 = np.uint64(5)
_U6 = np.uint64(6)
_U26 = np.uint64(26)
_U32 = np.uint64(32)
_PHILOX_M0 = np.uint64(0xD2511F53)
_PHILOX_M1 = np.uint64(0xCD9E8D57)
_PHILOX_W0 = np.uint64(0x9E3779B9)
_PHILOX_W1 = np.uint64(0xBB67AE85)

_TWO_M53 = 2.0**-53
_TWO_M54 = 2.0**-54
_BELOW_ONE = 1.0 - 2.0**-53  # largest double < 1
_INVERSION_KMAX = 256  # sequential-search cap: tail mass < 1e-200 for means < 10
_TWO_M45 = 2.0**-45
_U8 = np.uint64(8)
_LAYER_MASK = np.uint64(127)

# Ziggurat for the normal: 128 layers of area _ZIG_V under exp(-x**2 / 2) (Marsaglia &
# Tsang 2000), with the constants and the layer/sign bits kept apart as in Doornik's
# ZIGNOR (2005). _ZIG_X[i] is the right edge of layer i (_ZIG_X[0] = V / f(R) for the
# base strip, _ZIG_X[1] = R where the tail starts, _ZIG_X[128] = 0).
_ZIG_LAYERS = 128
_ZIG_R = 3.442619855899
_ZIG_V = 9.91256303526217e-3


def _ziggurat_tables() -> tuple[np.ndarray, np.ndarray]:
    x = np.empty(_ZIG_LAYERS + 1)
    f = math.exp(-0.5 * _ZIG_R * _ZIG_R)
    x[0], x[1], x[_ZIG_LAYERS] = _ZIG_V / f, _ZIG_R, 0.0
    for i in range(2, _ZIG_LAYERS):
        x[i] = math.sqrt(-2.0 * math.log(_ZIG_V / x[i - 1] + f))
        f = math.exp(-0.5 * x[i] * x[i])
    return x, x[1:] / x[:-1]


_ZIG_X, _ZIG_RATIO = _ziggurat_tables()


@linked_kernel
def _philox_round(c0, c1, c2, c3, k0, k1):
    """One Philox-4x32 round plus key bump, on uint64 words holding 32-bit values."""
    p0 = _PHILOX_M0 * c0  # < 2**64: the full 32x32-bit product, no wrap
    p1 = _PHILOX_M1 * c2
    return (
        (p1 >> _U32) ^ c1 ^ k0, p1 & _MASK32, (p0 >> _U32) ^ c3 ^ k1, p0 & _MASK32,
        (k0 + _PHILOX_W0) & _MASK32, (k1 + _PHILOX_W1) & _MASK32,
    )


@kernel
def _philox_rounds(c0, c1, c2, c3, k0, k1):
    """Ten Philox-4x32 rounds (Random123 ``philox4x32_R(10, ...)``)."""
    for _ in range(10):
        c0, c1, c2, c3, k0, k1 = _philox_round(c0, c1, c2, c3, k0, k1)
    return c0, c1, c2, c3


@kernel
def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Random123 Philox-4x32 block function with 10 rounds.

    Each round maps ``(x0, x1, x2, x3)`` to ``(hi(M1*x2) ^ x1 ^ k0, lo(M1*x2),
    hi(M0*x0) ^ x3 ^ k1, lo(M0*x0))`` with ``M0 = 0xD2511F53``, ``M1 = 0xCD9E8D57``;
    the key is bumped by the Weyl increments ``(0x9E3779B9, 0xBB67AE85)`` between
    rounds (Salmon et al. 2011, Random123 ``philox4x32_R(10, ...)``).

    Parameters
    ----------
    c0, c1, c2, c3, k0, k1 : int
        Counter and key words; only their low 32 bits are used.

    Returns
    -------
    tuple of 4 uint32
        The output block.
    """
    x0, x1, x2, x3 = _philox_rounds(
        np.uint64(c0) & _MASK32, np.uint64(c1) & _MASK32, np.uint64(c2) & _MASK32,
        np.uint64(c3) & _MASK32, np.uint64(k0) & _MASK32, np.uint64(k1) & _MASK32,
    )
    return np.uint32(x0), np.uint32(x1), np.uint32(x2), np.uint32(x3)


@linked_kernel
def _bits53(a, b):
    """53 random bits from two 32-bit words: ``(a >> 5) * 2**26 + (b >> 6)``."""
    return ((a >> _U5) << _U26) | (b >> _U6)


@kernel
def _to_unit(m):
    """``(m + 0.5) / 2**53`` for 53-bit ``m``, kept inside the open interval (0, 1).

    In [0.5, 1) doubles are spaced ``2**-53``, so the midpoint rounds (to even); only
    ``m = 2**53 - 1`` would round up to 1.0, and is clamped to ``1 - 2**-53``.
    """
    u = np.float64(np.int64(m)) * _TWO_M53 + _TWO_M54
    return min(u, _BELOW_ONE)


@event_kernel
def reset_stream(st, seed, stage, stream_id, trial):
    """Re-key an existing state array in place (no allocation in hot loops).

    Parameters
    ----------
    st : uint64[STREAM_WORDS]
        State array to overwrite; its counter restarts at 0 (the buffer is refilled
        by the first draw).
    seed : int
        Run seed in ``[0, 2**64)``.
    stage, stream_id, trial : int
        Each in ``[0, 2**32)``; use the ``STAGE_*`` constants for ``stage``.
    """
    st[0] = np.uint64(seed)
    st[1] = ((np.uint64(stage) & _MASK32) << _U32) | (np.uint64(stream_id) & _MASK32)
    st[2] = np.uint64(trial) & _MASK32
    st[3] = np.uint64(0)


@kernel
def new_stream(seed, stage, stream_id, trial):
    """New state ``uint64[STREAM_WORDS]`` of stream ``(seed, stage, stream_id, trial)``,
    counter 0; argument ranges as in :func:`reset_stream`."""
    st = np.empty(STREAM_WORDS, dtype=np.uint64)
    reset_stream(st, seed, stage, stream_id, trial)
    return st


@linked_kernel
def _refill(address, block):
    """The 53-bit halves of Philox blocks ``block .. block + 15`` into ``st[4:]``, for
    the state ``st`` at ``address``.

    The blocks are independent, so LLVM runs them in SIMD lanes (``vpmuludq``). Block
    ``b`` gives draws ``2b`` (words ``(x0, x1)``) and ``2b + 1`` (words ``(x2, x3)``),
    each ``(a >> 5) * 2**26 + (b >> 6)``. The state comes as an address, not as an
    array: a call that takes an array costs numba a reference-count call pair around it
    at every draw, not only at a refill.
    """
    st = uint64_words_at(address)
    seed, word1, trial = st[0], st[1], st[2]
    for lane in range(_BUFFERED // 2):
        c0, c1, c2, c3 = (block + np.uint64(lane)) & _MASK32, trial, word1 & _MASK32, word1 >> _U32
        k0, k1 = seed & _MASK32, seed >> _U32
        for _ in range(10):  # not _philox_rounds: through that call LLVM does not vectorise (7x slower)
            c0, c1, c2, c3, k0, k1 = _philox_round(c0, c1, c2, c3, k0, k1)
        st[4 + 2 * lane] = _bits53(c0, c1)
        st[5 + 2 * lane] = _bits53(c2, c3)


@linked_kernel
def _next_bits(st):
    """The stream's next 53 random bits ``m`` (draw ``counter``; see the module text).
    Advances the counter by 1; every 32nd draw refills the buffer."""
    n = st[3]
    st[3] = n + _U1
    j = n & _BUFFER_MASK
    if j == 0:
        _refill(address_of(st), n >> _U1)
    return st[4 + np.int64(j)]


@event_kernel
def uniform(st):
    """Next uniform double of the stream, in the open interval (0, 1): ``(m + 0.5) /
    2**53`` of the next 53 bits ``m`` (:func:`_next_bits`). Equals :func:`uniform_at`.

    The samplers that take ``st`` are :data:`~mcengine.jit.event_kernel` s (compiled
    without reference counting): a sampler compiled with it costs a pair of
    ``NRT_incref``/``NRT_decref`` calls on ``st`` around every refill, which numba's
    reference-count pruning cannot remove across the refill branch of
    :func:`_next_bits`. A sampler allocates nothing, and its caller holds ``st``.
    A kernel compiled with reference counting that takes ``st`` (``life_within`` of
    ``kernels/life/hazard.py``) returns ``x + 0.0 * st.size``: the same value (``x + 0.0
    == x`` for every ``x`` it returns, none -0.0), with ``st`` used at the exit, so that
    numba can prune the pair on its path without a refill.
    """
    return _to_unit(_next_bits(st))


@inline_kernel
def uniform_at(seed, stage, stream_id, trial, counter):
    """Draw number ``counter`` of a stream as a pure function (float64 in (0, 1)).

    Equals the ``counter``-th :func:`uniform` of ``new_stream(seed, stage, stream_id,
    trial)`` (counting from 0). Inlined, with its rounds written out here, so that a loop
    over trials that calls it runs in SIMD lanes (as :func:`_refill`; several times faster
    than through a call, ``python -m benchmarks``).
    """
    c = np.uint64(counter)
    key = np.uint64(seed)
    x0, x1, x2, x3 = (c >> _U1) & _MASK32, np.uint64(trial) & _MASK32, np.uint64(stream_id) & _MASK32, np.uint64(stage) & _MASK32
    k0, k1 = key & _MASK32, key >> _U32
    for _ in range(10):
        x0, x1, x2, x3, k0, k1 = _philox_round(x0, x1, x2, x3, k0, k1)
    if c & _U1:
        return _to_unit(_bits53(x2, x3))
    return _to_unit(_bits53(x0, x1))


@kernel
def bits_below(u):
    """How many of the 53-bit draws ``m`` give a uniform below ``u``: :func:`uniform`'s
    value ``(m + 0.5) / 2**53`` (:func:`_to_unit`) does not fall as ``m`` rises, so it
    is below ``u`` exactly for ``m < bits_below(u)`` (a bisection over the 2**53 draws,
    each step that very arithmetic)."""
    lo, hi = np.uint64(0), np.uint64(1) << np.uint64(53)
    while lo < hi:
        mid = (lo + hi) >> _U1
        if _to_unit(mid) < u:
            lo = mid + _U1
        else:
            hi = mid
    return lo


@event_kernel
def draws_below(st, n, m_cut):
    """Take the stream's next draws while their 53 bits are below ``m_cut``
    (:func:`bits_below`), at most ``n`` of them, and the draw that stops the run; return
    how many were below and the stopping draw's uniform (``nan`` when all ``n`` were
    below: then nothing more is taken). The same draws in the same order as that many
    :func:`uniform` calls plus one, each of whose values was below ``u`` (``m_cut =
    bits_below(u)``) but the last, converted only for the last. For a run of draws whose
    values matter only when they reach ``u`` (``m_cut = 0``: none below, one uniform)."""
    k = 0
    while k < n:
        c = st[3]
        j = np.int64(c & _BUFFER_MASK)
        if j == 0:
            _refill(address_of(st), c >> _U1)
        j0, end = j, min(_BUFFERED, j + n - k)
        while j < end and st[4 + j] < m_cut:
            j += 1
        k += j - j0
        if j < end:
            st[3] = c + np.uint64(j - j0 + 1)
            return k, _to_unit(st[4 + j])
        st[3] = c + np.uint64(j - j0)
    return k, np.nan


@event_kernel
def exponential(st, mean):
    """Exponential variate by inversion, ``-mean * log(u)`` (exactly one uniform)."""
    return -mean * math.log(uniform(st))


@inline_kernel
def _layer(k):
    """The layer ``i`` (bits 1-7) and the signed abscissa ``u`` in (-1, 1) (bits 8-52)
    of the ziggurat that 53 random bits ``k`` give (:func:`normal`)."""
    return np.int64((k >> _U1) & _LAYER_MASK), 2.0 * (np.float64(np.int64(k >> _U8)) + 0.5) * _TWO_M45 - 1.0


@inline_kernel
def normal(st, mean, sd):
    """Normal variate ``mean + sd * z`` by the ziggurat (Marsaglia & Tsang 2000, ZIGNOR).

    The 53 bits ``k`` of one uniform (:func:`_next_bits`, used as they are: no round
    trip through a double) give the layer ``i`` (bits 1-7) and a signed abscissa ``u``
    in (-1, 1) (bits 8-52; bit 0 is unused). Inside the layer's rectangle (``|u| <
    X[i+1] / X[i]``, 98.8% of draws) ``z = u X[i]`` with no other work, here; else
    :func:`_normal_outside` (a call: the inlined rectangle test carries none of its
    loop's constants) accepts the wedge against the density with one more uniform, or,
    in the base layer, takes ``z`` from the tail beyond ``R`` (Marsaglia 1964: two
    uniforms per attempt), drawing again until one is accepted. About 1.03 uniforms per
    normal on average, a variable count.
    """
    i, u = _layer(_next_bits(st))
    if abs(u) < _ZIG_RATIO[i]:
        return mean + sd * (u * _ZIG_X[i])
    return mean + sd * _normal_outside(st, i, u)


@linked_kernel
def _normal_outside(st, i, u):
    """:func:`normal`'s ``z`` for a draw outside its layer's rectangle (layer ``i``,
    abscissa ``u``): the tail or wedge test, and the draws after a rejection, each
    tested as :func:`normal` tests the first."""
    while True:
        if i == 0:  # the tail |z| > R
            while True:
                x = -math.log(uniform(st)) / _ZIG_R
                if -2.0 * math.log(uniform(st)) >= x * x:
                    break
            return -(_ZIG_R + x) if u < 0.0 else _ZIG_R + x
        x = u * _ZIG_X[i]
        f0 = math.exp(-0.5 * (_ZIG_X[i] * _ZIG_X[i] - x * x))
        f1 = math.exp(-0.5 * (_ZIG_X[i + 1] * _ZIG_X[i + 1] - x * x))
        if f1 + uniform(st) * (f0 - f1) < 1.0:
            return x
        i, u = _layer(_next_bits(st))
        if abs(u) < _ZIG_RATIO[i]:
            return u * _ZIG_X[i]


@inline_kernel
def lognormal(st, median, sigma):
    """Lognormal variate ``median * exp(sigma * z)``, ``z`` from :func:`normal`."""
    return median * math.exp(sigma * normal(st, 0.0, 1.0))


@inline_kernel
def _gamma_ge1(st, shape):
    """Standard gamma, ``shape >= 1``: Marsaglia & Tsang (2000), squeeze + log test."""
    d = shape - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        z = normal(st, 0.0, 1.0)
        v = 1.0 + c * z
        if v <= 0.0:
            continue
        v = v * v * v
        u = uniform(st)
        z2 = z * z
        if u < 1.0 - 0.0331 * z2 * z2:
            return d * v
        if math.log(u) < 0.5 * z2 + d * (1.0 - v + math.log(v)):
            return d * v


@event_kernel
def gamma(st, shape, scale):
    """Gamma variate with ``shape`` (k) and ``scale`` (theta); mean ``k * theta``.

    Marsaglia & Tsang (2000) rejection from a transformed normal; for ``shape < 1``,
    ``gamma(shape + 1) * u**(1 / shape)`` (their boost, the uniform drawn last).
    ``shape`` must be finite and > 0.
    """
    if shape < 1.0:
        g = _gamma_ge1(st, shape + 1.0)
        return scale * g * uniform(st) ** (1.0 / shape)
    return scale * _gamma_ge1(st, shape)


@inline_kernel
def _poisson_inversion(st, lam):
    """Poisson by sequential-search inversion (one uniform per attempt)."""
    p0 = math.exp(-lam)
    while True:
        u = uniform(st)
        p = p0
        for k in range(_INVERSION_KMAX):
            if u <= p:
                return k
            u -= p
            p *= lam / (k + 1)


@inline_kernel
def _poisson_ptrs(st, lam):
    """Poisson for ``lam >= 10`` by Hörmann's (1993) transformed rejection PTRS."""
    slam = math.sqrt(lam)
    loglam = math.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    log_inv_alpha = math.log(1.1239 + 1.1328 / (b - 3.4))
    v_r = 0.9277 - 3.6224 / (b - 2.0)
    while True:
        u = uniform(st) - 0.5
        v = uniform(st)
        us = 0.5 - abs(u)
        k = np.floor((2.0 * a / us + b) * u + lam + 0.43)  # float: no int overflow
        if us >= 0.07 and v <= v_r:
            return np.int64(k)
        if k < 0.0 or (us < 0.013 and v > us):
            continue
        if (math.log(v) + log_inv_alpha - math.log(a / (us * us) + b)
                <= -lam + k * loglam - math.lgamma(k + 1.0)):
            return np.int64(k)


@event_kernel
def poisson(st, lam):
    """Poisson variate with mean ``lam`` (exact algorithms), as int64.

    Inversion by sequential search for ``lam < 10``; Hörmann's (1993) PTRS transformed
    rejection for ``lam >= 10``; ``lam == 0`` returns 0 without drawing. ``lam`` must be
    finite and >= 0.
    """
    if lam <= 0.0:
        return np.int64(0)
    if lam < 10.0:
        return np.int64(_poisson_inversion(st, lam))
    return _poisson_ptrs(st, lam)


@inline_kernel
def _binomial_inversion(st, n, p):
    """Binomial(n, p) by sequential-search inversion (one uniform per attempt)."""
    r = p / (1.0 - p)
    p0 = math.exp(n * math.log1p(-p))
    kmax = min(n, _INVERSION_KMAX)
    while True:
        u = uniform(st)
        f = p0
        for k in range(kmax + 1):
            if u <= f:
                return k
            u -= f
            f *= r * (n - k) / (k + 1)


@inline_kernel
def _binomial_btrs(st, n, p):
    """Binomial(n, p), ``p <= 0.5``, ``n * p >= 10``, by Hörmann's (1993) BTRS."""
    nf = np.float64(n)
    q = 1.0 - p
    spq = math.sqrt(nf * p * q)
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = nf * p + 0.5
    v_r = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    lpq = math.log(p / q)
    m = np.floor((nf + 1.0) * p)
    h = math.lgamma(m + 1.0) + math.lgamma(nf - m + 1.0)
    while True:
        u = uniform(st) - 0.5
        v = uniform(st)
        us = 0.5 - abs(u)
        k = np.floor((2.0 * a / us + b) * u + c)
        if k < 0.0 or k > nf:
            continue
        if us >= 0.07 and v <= v_r:
            return np.int64(k)
        # log f(k)/f(m) with exact log-factorials (the Stirling tails via lgamma)
        log_ratio = h - math.lgamma(k + 1.0) - math.lgamma(nf - k + 1.0) + (k - m) * lpq
        if math.log(v * alpha / (a / (us * us) + b)) <= log_ratio:
            return np.int64(k)


@event_kernel
def binomial(st, n, p):
    """Binomial variate with ``n`` trials of probability ``p`` (exact), as int64.

    With ``p' = min(p, 1 - p)``: inversion by sequential search if ``n * p' < 10``,
    otherwise Hörmann's (1993) BTRS; for ``p > 0.5``, ``n - Binomial(n, 1 - p)``.
    ``n >= 0`` and ``0 <= p <= 1``; ``p`` of 0 or 1 returns without drawing.
    """
    trials = np.int64(n)
    if trials <= 0 or p <= 0.0:
        return np.int64(0)
    if p >= 1.0:
        return trials
    flip = p > 0.5
    q = 1.0 - p if flip else p
    if trials * q < 10.0:
        k = np.int64(_binomial_inversion(st, trials, q))
    else:
        k = _binomial_btrs(st, trials, q)
    return trials - k if flip else k


@event_kernel
def weibull_scale(st, scale, shape):
    """Weibull variate by inversion: ``scale * (-log u)**(1 / shape)`` (one uniform)."""
    return scale * (-math.log(uniform(st))) ** (1.0 / shape)


@event_kernel
def weibull(st, mean, shape):
    """Weibull variate by its mean: scale ``mean / Gamma(1 + 1/shape)``, one uniform."""
    return weibull_scale(st, mean / math.gamma(1.0 + 1.0 / shape), shape)


def uniforms_for_trials(seed, stage, stream_id, trial_start, n):
    """First uniform of ``n`` consecutive trials' streams: a Python-callable driver.

    ``out[i] = uniform_at(seed, stage, stream_id, trial_start + i, 0)`` as float64[n],
    in one serial loop that runs in SIMD lanes (about 2 ns a uniform): a pool of threads
    would cost more to start than the loop takes at the sizes drawn (1 ms measured against
    2 ms for 10^6 uniforms). The arguments are cast to one set of types, so the loop is
    compiled once.
    """
    out = np.empty(int(n), dtype=np.float64)
    _first_uniforms(np.uint64(seed), np.int64(stage), np.int64(stream_id), np.int64(trial_start), out)
    return out


@kernel
def _first_uniforms(seed, stage, stream_id, trial_start, out):
    """The uniforms of :func:`uniforms_for_trials` into ``out``."""
    t0 = np.uint64(trial_start)
    for i in range(out.shape[0]):
        out[i] = uniform_at(seed, stage, stream_id, t0 + np.uint64(i), 0)
