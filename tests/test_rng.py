"""Tests for :mod:`mcengine.rng`: Philox known answers, the stream contract, samplers.

Statistical tests use fixed seeds (so they are deterministic) and tolerances from the
sample's own standard error: means within 4 SEM, variances within 4 standard errors of
the sample variance.
"""

from __future__ import annotations

import hashlib
import math

import numba
import numpy as np
import pytest
from scipy import stats

from mcengine import rng
from mcengine.jit import kernel, run_blocks

MASK32 = 0xFFFFFFFF


# ---------------------------------------------------------------- reference twins ---


def philox4x32_10_ref(ctr, key):
    """Slow pure-Python Philox-4x32-10 (Random123 ``philox4x32_R(10, ctr, key)``)."""
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for _ in range(10):
        p0 = 0xD2511F53 * c0
        p1 = 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0, p1 & MASK32,
                          (p0 >> 32) ^ c3 ^ k1, p0 & MASK32)
        k0 = (k0 + 0x9E3779B9) & MASK32
        k1 = (k1 + 0xBB67AE85) & MASK32
    return c0, c1, c2, c3


def uniform_ref(seed, stage, stream_id, trial, counter):
    """The documented stream layout, in pure Python."""
    block = philox4x32_10_ref(
        ((counter >> 1) & MASK32, trial, stream_id, stage), (seed & MASK32, seed >> 32)
    )
    a, b = block[2:] if counter & 1 else block[:2]
    m = (a >> 5) * 2**26 + (b >> 6)
    return min((m + 0.5) / 2**53, 1.0 - 2.0**-53)


# Random123 kat_vectors, philox4x32 with 10 rounds: (counter, key, expected).
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((MASK32,) * 4, (MASK32,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


# ------------------------------------------------------------------ test drivers ---


@kernel
def _draw_uniforms(seed, stage, stream_id, trial, n):
    st = rng.new_stream(seed, stage, stream_id, trial)
    out = np.empty(n)
    for i in range(n):
        out[i] = rng.uniform(st)
    return out


@kernel
def _draw(code, seed, n, a, b):
    """``n`` draws of sampler ``code`` with parameters ``(a, b)`` from one stream."""
    st = rng.new_stream(seed, rng.STAGE_INPUTS, code, 0)
    out = np.empty(n)
    for i in range(n):
        if code == 0:
            out[i] = rng.exponential(st, a)
        elif code == 1:
            out[i] = rng.normal(st, a, b)
        elif code == 2:
            out[i] = rng.lognormal(st, a, b)
        elif code == 3:
            out[i] = rng.gamma(st, a, b)
        elif code == 4:
            out[i] = rng.poisson(st, a)
        elif code == 5:
            out[i] = rng.binomial(st, np.int64(a), b)
        elif code == 6:
            out[i] = rng.weibull(st, a, b)
        else:
            out[i] = rng.weibull_scale(st, a, b)
    return out


EXPONENTIAL, NORMAL, LOGNORMAL, GAMMA, POISSON, BINOMIAL, WEIBULL, WEIBULL_SCALE = range(8)


@kernel
def _mixed_row(seed, trial, row):
    """One trial's worth of mixed draws (variable draw counts from rejection)."""
    st = rng.new_stream(seed, rng.STAGE_LIFE, 3, trial)
    row[0] = rng.gamma(st, 0.7, 1.0)
    row[1] = rng.poisson(st, 40.0)
    row[2] = rng.binomial(st, 200, 0.4)
    row[3] = rng.normal(st, 0.0, 1.0)
    row[4] = rng.uniform(st)


@kernel
def _mixed_block(seed, i0, i1, out):
    for i in range(i0, i1):
        _mixed_row(seed, i, out[i])


def _mixed_blocks(seed, n_trials):
    """Trials in blocks on threads (run_blocks), as the fab and life drivers run them."""
    out = np.empty((n_trials, 5))
    run_blocks(_mixed_block, (seed,), n_trials, (out,))
    return out


@kernel
def _mixed_serial(seed, n_trials):
    out = np.empty((n_trials, 5))
    for i in range(n_trials):
        _mixed_row(seed, i, out[i])
    return out


# ------------------------------------------------------------------- generator ---


def test_stage_ids_are_never_renumbered():
    assert (rng.STAGE_INPUTS, rng.STAGE_FAB, rng.STAGE_LIFE, rng.STAGE_ROOFLINE,
            rng.STAGE_ECON, rng.STAGE_SENSITIVITY) == (1, 2, 3, 4, 5, 6)


@pytest.mark.parametrize("ctr, key, expected", KAT)
def test_philox_known_answers(ctr, key, expected):
    assert philox4x32_10_ref(ctr, key) == expected
    assert tuple(int(x) for x in rng.philox4x32_10(*ctr, *key)) == expected


def test_philox_matches_reference_twin_on_random_inputs():
    words = np.random.default_rng(20240601).integers(0, 2**32, size=(300, 6))
    for w in words.tolist():
        got = rng.philox4x32_10(*w)
        assert tuple(int(x) for x in got) == philox4x32_10_ref(w[:4], w[4:])
    # numpy uint32 / uint64 inputs compile to the same function
    for dtype in (np.uint32, np.uint64):
        got = rng.philox4x32_10(*(dtype(x) for x in KAT[2][0] + KAT[2][1]))
        assert tuple(int(x) for x in got) == KAT[2][2]


def test_compiled_return_types():
    """Integer arithmetic stays integer (numba turns uint64 op int64 into float64)."""
    for seed in (5, np.uint64(2**64 - 1)):
        st = rng.new_stream(seed, rng.STAGE_FAB, 1, 2)
        assert st.dtype == np.uint64 and st.shape == (rng.STREAM_WORDS,)
        rng.philox4x32_10(1, 2, 3, 4, seed, 6)
        rng.uniform(st), rng.uniform_at(seed, 1, 2, 3, 4)
        rng.poisson(st, 3.0), rng.poisson(st, 30.0)
        rng.binomial(st, 10, 0.5), rng.binomial(st, 100, 0.5)
    expected = {
        rng.philox4x32_10: "UniTuple(uint32 x 4)", rng.uniform: "float64",
        rng.uniform_at: "float64", rng.poisson: "int64", rng.binomial: "int64",
        rng.new_stream: "array(uint64, 1d, C)",
    }
    for dispatcher, rtype in expected.items():
        assert dispatcher.nopython_signatures
        for sig in dispatcher.nopython_signatures:
            assert str(sig.return_type) == rtype, (dispatcher, sig)


def test_stream_state_layout_and_reset():
    seed = np.uint64(2**63 + 5)
    st = rng.new_stream(seed, rng.STAGE_ECON, 9, 17)
    assert st[:4].tolist() == [2**63 + 5, (rng.STAGE_ECON << 32) | 9, 17, 0]
    first = [rng.uniform(st) for _ in range(3)]
    assert st[3] == 3
    # the buffer holds the bits of draws 0..31: the 3 taken, then the ones to come
    assert [rng._to_unit(b) for b in st[4:7]] == first
    rng.reset_stream(st, seed, rng.STAGE_ECON, 9, 17)
    assert [rng.uniform(st) for _ in range(3)] == first
    rng.reset_stream(st, 1, rng.STAGE_FAB, 2, 3)
    assert st[:4].tolist() == [1, (rng.STAGE_FAB << 32) | 2, 3, 0]
    assert rng.uniform(st) == rng.uniform_at(1, rng.STAGE_FAB, 2, 3, 0)


@pytest.mark.parametrize(
    "seed, stage, stream_id, trial",
    [(0, 0, 0, 0), (2**64 - 1, rng.STAGE_LIFE, MASK32, MASK32),
     (0x0123456789ABCDEF, rng.STAGE_SENSITIVITY, 7, 123456)],
)
def test_uniform_at_equals_sequential_draws_and_reference(seed, stage, stream_id, trial):
    n = 41
    key = np.uint64(seed)  # from Python, pass seeds as uint64 (ints >= 2**63 overflow)
    seq = _draw_uniforms(key, stage, stream_id, trial, n)
    at = [rng.uniform_at(key, stage, stream_id, trial, c) for c in range(n)]
    ref = [uniform_ref(seed, stage, stream_id, trial, c) for c in range(n)]
    assert seq.tolist() == at == ref
    far = 2**33 + 5  # a stream holds 2**33 draws: the block index keeps its low 32 bits
    assert rng.uniform_at(key, stage, stream_id, trial, far) == ref[5]
    if seed < 2**63:  # an int64-typed seed gives the same stream
        assert _draw_uniforms(seed, stage, stream_id, trial, n).tolist() == ref


def test_streams_are_distinct():
    base = (12345, rng.STAGE_INPUTS, 4, 10)
    variants = [
        (12346, rng.STAGE_INPUTS, 4, 10), (12345 + 2**32, rng.STAGE_INPUTS, 4, 10),
        (12345, rng.STAGE_FAB, 4, 10), (12345, rng.STAGE_INPUTS, 5, 10),
        (12345, rng.STAGE_INPUTS, 4, 11), (12345, 4, 1, 10),  # stage <-> stream swap
    ]
    draws = [_draw_uniforms(*args, 1000) for args in [base, *variants]]
    for i in range(len(draws)):
        for j in range(i + 1, len(draws)):
            assert np.intersect1d(draws[i], draws[j]).size == 0, (i, j)


def test_uniform_is_in_the_open_interval():
    assert rng._to_unit(np.uint64(0)) == 2.0**-54
    assert rng._to_unit(np.uint64(2**53 - 1)) == 1.0 - 2.0**-53  # would round to 1.0
    u = _draw_uniforms(7, rng.STAGE_INPUTS, 0, 0, 1_000_000)
    assert u.min() > 0.0 and u.max() < 1.0


def test_uniform_ks_and_chisquare():
    u = _draw_uniforms(2024, rng.STAGE_INPUTS, 1, 0, 100_000)
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    counts = np.bincount((u * 100).astype(np.int64), minlength=100)
    assert stats.chisquare(counts).pvalue > 1e-3
    # consecutive pairs: 10 x 10 grid, independence of the two halves of a block
    pairs = np.bincount((u[0::2] * 10).astype(np.int64) * 10 + (u[1::2] * 10).astype(
        np.int64), minlength=100)
    assert stats.chisquare(pairs).pvalue > 1e-3


def test_uniforms_for_trials_and_thread_count_independence():
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs at least 2 numba threads")
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        u1, m1 = rng.uniforms_for_trials(99, 2, 3, 1000, 4096), _mixed_blocks(5, 3000)
        numba.set_num_threads(2)
        u2, m2 = rng.uniforms_for_trials(99, 2, 3, 1000, 4096), _mixed_blocks(5, 3000)
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(u1, u2) and np.array_equal(m1, m2)
    assert np.array_equal(m1, _mixed_serial(5, 3000))
    assert u1.tolist() == [rng.uniform_at(99, 2, 3, 1000 + i, 0) for i in range(4096)]


# -------------------------------------------------------------------- samplers ---


def _weibull_moments(mean, shape):
    scale = mean / math.gamma(1 + 1 / shape)
    return mean, scale**2 * (math.gamma(1 + 2 / shape) - math.gamma(1 + 1 / shape) ** 2)


def _lognormal_moments(median, sigma):
    mu = math.log(median)
    mean = math.exp(mu + sigma**2 / 2)
    return mean, (math.exp(sigma**2) - 1) * mean**2


MOMENT_CASES = [
    # (id, code, a, b, mean, variance)
    ("exponential", EXPONENTIAL, 3.0, 0.0, 3.0, 9.0),
    ("normal", NORMAL, 1.0, 2.0, 1.0, 4.0),
    ("lognormal", LOGNORMAL, 2.0, 0.5, *_lognormal_moments(2.0, 0.5)),
    *[(f"gamma-{k}", GAMMA, k, 2.0, 2.0 * k, 4.0 * k) for k in (0.5, 1.0, 3.0, 20.0)],
    *[(f"poisson-{lam}", POISSON, lam, 0.0, lam, lam)
      for lam in (0.3, 5.0, 50.0, 500.0)],
    *[(f"binomial-{n}-{p}", BINOMIAL, n, p, n * p, n * p * (1 - p))
      for n, p in ((10, 0.3), (1000, 0.02), (500, 0.7), (20, 0.9))],
    *[(f"weibull-{k}", WEIBULL, 2.0, k, *_weibull_moments(2.0, k))
      for k in (0.7, 1.0, 3.0)],
    ("weibull_scale", WEIBULL_SCALE, 2.0, 1.5, 2.0 * math.gamma(1 + 1 / 1.5),
     4.0 * (math.gamma(1 + 2 / 1.5) - math.gamma(1 + 1 / 1.5) ** 2)),
]


@pytest.mark.parametrize(
    "code, a, b, mean, var",
    [c[1:] for c in MOMENT_CASES],
    ids=[c[0] for c in MOMENT_CASES],
)
def test_sampler_mean_and_variance_within_4_sem(code, a, b, mean, var):
    n = 20_000
    x = _draw(code, 1000 + code, n, a, b)
    assert np.all(np.isfinite(x))
    assert abs(x.mean() - mean) < 4 * math.sqrt(var / n)
    s2 = x.var(ddof=1)
    m4 = np.mean((x - x.mean()) ** 4)
    assert abs(s2 - var) < 4 * math.sqrt((m4 - s2**2) / n)


@pytest.mark.parametrize(
    "code, a, b, dist",
    [(EXPONENTIAL, 3.0, 0.0, stats.expon(scale=3.0)),
     (NORMAL, 1.0, 2.0, stats.norm(1.0, 2.0)),
     (GAMMA, 0.5, 2.0, stats.gamma(0.5, scale=2.0)),
     (GAMMA, 3.0, 2.0, stats.gamma(3.0, scale=2.0)),
     (WEIBULL, 2.0, 0.7, stats.weibull_min(0.7, scale=2.0 / math.gamma(1 + 1 / 0.7)))],
    ids=["exponential", "normal", "gamma-0.5", "gamma-3", "weibull-0.7"],
)
def test_continuous_sampler_ks(code, a, b, dist):
    x = _draw(code, 77 + code, 200_000, a, b)
    assert stats.kstest(x, dist.cdf).pvalue > 1e-3


@pytest.mark.parametrize(
    "code, a, b, dist",
    [(POISSON, 5.0, 0.0, stats.poisson(5.0)), (POISSON, 12.0, 0.0, stats.poisson(12.0)),
     (POISSON, 500.0, 0.0, stats.poisson(500.0)),
     (BINOMIAL, 20, 0.9, stats.binom(20, 0.9)),
     (BINOMIAL, 1000, 0.02, stats.binom(1000, 0.02)),
     (BINOMIAL, 500, 0.7, stats.binom(500, 0.7))],
    ids=["poisson-5-inversion", "poisson-12-ptrs", "poisson-500-ptrs",
         "binomial-20-0.9-inversion", "binomial-1000-0.02-btrs",
         "binomial-500-0.7-btrs"],
)
def test_discrete_sampler_chisquare(code, a, b, dist):
    """The samplers are exact: counts match the pmf, not only the first two moments."""
    n = 200_000
    x = _draw(code, 31 + code, n, a, b).astype(np.int64)
    lo, hi = int(dist.ppf(1e-4)), int(dist.ppf(1 - 1e-4))
    ks = np.arange(lo, hi + 1)
    observed = np.bincount(np.clip(x, lo, hi) - lo, minlength=ks.size)
    expected = n * dist.pmf(ks)
    expected[0], expected[-1] = n * dist.cdf(lo), n * dist.sf(hi - 1)  # folded tails
    obs_m, exp_m, o, e = [], [], 0.0, 0.0
    for oi, ei in zip(observed, expected):  # merge bins until each expects >= 5
        o, e = o + oi, e + ei
        if e >= 5.0:
            obs_m.append(o)
            exp_m.append(e)
            o, e = 0.0, 0.0
    obs_m[-1] += o
    exp_m[-1] += e
    exp_m = np.array(exp_m) * n / np.sum(exp_m)
    assert stats.chisquare(obs_m, exp_m).pvalue > 1e-3


def test_degenerate_parameters_do_not_draw():
    st = rng.new_stream(1, rng.STAGE_FAB, 0, 0)
    assert rng.poisson(st, 0.0) == 0
    assert rng.binomial(st, 0, 0.3) == 0
    assert rng.binomial(st, 10, 0.0) == 0
    assert rng.binomial(st, 10, 1.0) == 10
    assert st[3] == 0


@kernel
def _normals_and_draws(seed, n):
    st = rng.new_stream(seed, rng.STAGE_LIFE, 5, 0)
    out = np.empty(n)
    for i in range(n):
        out[i] = rng.normal(st, 0.0, 1.0)
    return out, st[3]


def test_normal_ziggurat_tails_wedges_and_draw_count():
    """Tail masses of the ziggurat normal, on both sides, within 4 SEM of the normal's:
    inside the rectangles (1.0), in the wedges (2.5), at and beyond the tail start R."""
    n = 2_000_000
    z, used = _normals_and_draws(2024, n)
    for a in (1.0, 2.5, rng._ZIG_R, 4.0):
        p = stats.norm.sf(a)
        for count in (np.count_nonzero(z > a), np.count_nonzero(z < -a)):
            assert abs(count - n * p) < 4 * math.sqrt(n * p * (1 - p)), (a, count, n * p)
    assert n < used < 1.05 * n  # about 1.03 uniforms per normal


# Digests (SHA-256 of the float64 bytes, first 16 hex digits) of 10**6 draws of each
# sampler, computed with the implementation of 43a8487: a change to how the draws are
# computed (compile options, the refill, the conversions) must leave every value as it was.
_DRAW_DIGESTS = [
    (None, "5e1b44cd70f9cdad"),  # uniform (seed 2026, STAGE_LIFE, stream 5, trial 7)
    ((EXPONENTIAL, 2.5, 0.0), "54d14c26784776b0"),
    ((NORMAL, 1.0, 2.0), "9cec3c9b06b6aef0"),
    ((LOGNORMAL, 3.0, 0.8), "f0963d0bcb1ed11a"),
    ((GAMMA, 0.7, 2.0), "5a36a1c0d811988d"),
    ((GAMMA, 3.5, 1.0), "5f1baa7680e8079d"),
    ((POISSON, 4.0, 0.0), "b8c72490c7270d94"),
    ((POISSON, 40.0, 0.0), "e95a546adc364b44"),
    ((BINOMIAL, 30.0, 0.2), "55554ef07f972098"),
    ((BINOMIAL, 500.0, 0.7), "0ec6fc37f082d82c"),
    ((WEIBULL, 2.0, 1.3), "f91ca81d4f69951c"),
    ((WEIBULL_SCALE, 5.0, 0.7), "8dd1c0fab0b04e7c"),
]


@pytest.mark.parametrize("args, digest", _DRAW_DIGESTS)
def test_draws_are_bit_identical_to_the_recorded_implementation(args, digest):
    n = 1_000_000
    out = (_draw_uniforms(np.uint64(2026), rng.STAGE_LIFE, 5, 7, n) if args is None
           else _draw(args[0], 2026, n, args[1], args[2]))
    assert hashlib.sha256(np.ascontiguousarray(out).tobytes()).hexdigest()[:16] == digest


def test_bits_below_splits_the_draws_at_the_uniform():
    """``bits_below(u)`` is the first 53-bit draw whose uniform is not below ``u``: the
    draw before it is below, it is not (at the ends, none / every draw below)."""
    assert rng.bits_below(0.0) == 0 and rng.bits_below(2.0**-60) == 0 and rng.bits_below(1.0) == 2**53
    to_unit = rng._to_unit
    gen = np.random.default_rng(3)
    cuts = [*gen.random(200), *(to_unit(np.uint64(m)) for m in (1, 2**52 - 1, 2**52, 2**52 + 1, 2**53 - 2)),
            to_unit(np.uint64(2**52 + 7)) + 2.0**-54, 1.0 - 2.0**-53]
    for u in cuts:
        m = int(rng.bits_below(u))
        assert 0 < m < 2**53
        assert to_unit(np.uint64(m - 1)) < u <= to_unit(np.uint64(m))


def test_draws_below_takes_the_same_draws_as_uniform_calls():
    """A run of ``draws_below`` stops where the sequential uniforms first reach the cut
    (or after ``n``), returns the stopping uniform, leaves the stream where those calls
    leave it, and across buffer refills (cuts from 0.01 to 0.999 and one equal to a later
    draw's own uniform, runs of 0 to 300 draws, starts at many buffer positions)."""
    ahead = rng.new_stream(11, rng.STAGE_LIFE, 0, 4)
    at_draw_46 = [rng.uniform(ahead) for _ in range(47)][-1]  # (draws 31 to 45 are below it)
    for cut, n, skip in [(0.99, 300, 0), (0.999, 300, 5), (0.5, 40, 31), (0.01, 7, 1), (0.97, 1, 32), (0.995, 250, 17),
                         (0.999, 0, 3), (at_draw_46, 300, 31)]:
        a = rng.new_stream(11, rng.STAGE_LIFE, 0, 4)
        b = a.copy()
        for _ in range(skip):
            rng.uniform(a)
            rng.uniform(b)
        m_cut = rng.bits_below(cut)
        for run in range(20):
            k, u = rng.draws_below(a, n, m_cut)
            assert cut != at_draw_46 or run > 0 or (k, u) == (15, cut)
            expect, stop = 0, np.nan
            while expect < n:
                x = rng.uniform(b)
                if x >= cut:
                    stop = x
                    break
                expect += 1
            assert k == expect and a[3] == b[3] and (u == stop or np.isnan(u) and np.isnan(stop))
            assert [rng.uniform(a) for _ in range(3)] == [rng.uniform(b) for _ in range(3)]
