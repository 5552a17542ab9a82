"""Defect kernels of the fab stage: defects per wafer, die yield with harvesting.

Model (docs/model.md#fab)
-----------------------------
Wafer ``w`` draws its defect density ``lam`` (defects/cm²) from a gamma law with shape
``alpha = defect_clustering`` and mean ``D0 = defect_density_per_cm2`` (``alpha = inf``:
``lam = D0``, Poisson). Defects then form a Poisson process of intensity
``lam * g(r)`` on the usable disc of radius ``R``, with the radial profile
``g(r) = (1 + (rho - 1)(r/R)^2) / (1 + (rho - 1)/2)`` (``rho = defect_edge_ratio``;
``g`` averages to 1 over the disc, so ``D0`` stays the mean density). Mixing the
Poisson count with the gamma law gives the negative-binomial (Stapper) yield.

A die of area ``A`` has ``U = units_per_die`` identical repairable units covering a
fraction ``f = unit_area_fraction`` of it; the rest is non-redundant. A defect inside a
die hits the non-redundant remainder with probability ``1 - f`` and each unit with
``f / U`` (the model has no floorplan inside a die). The die is good when the remainder
is clean and at most ``spares = U - units_required`` units are hit.

Per-die simulation (the fast kernel; exact in distribution to within 2^-33 per die)
-----------------------------------------------------------------------------------
The Poisson process restricted to die ``d`` is a Poisson count ``n_d`` with mean
``m_d = lam * A * w_d`` (``w_d``: the exact mean of ``g`` over the die rectangle, from
:func:`mcengine.kernels.geometry.mean_r2_fraction`; ``w_d = 1`` for the flat profile),
independent between dies, with the defects uniform on the die. Given ``n >= 1``
defects, the die is good with probability ``f^n * S[n]``, where ``S[n]`` is the
probability that ``n`` defects spread uniformly over ``U`` units hit at most ``spares``
distinct units (:func:`harvest_table`, the balls-in-bins occupancy law). So a die needs
one uniform ``u``: its inversion gives ``n_d`` (bin ``n`` is
``(P(N < n), P(N <= n)]``, the sequential search of :func:`mcengine.rng.poisson`), and
the die is good when ``u`` lies in the first ``P(N = n) f^n S[n]`` of its bin (the
place of ``u`` inside its bin is a U(0, 1) independent of ``n``). For a flat wafer these
bin edges are tabulated once per wafer (:func:`outcome_bins`). Two ways to walk the
dies, chosen per wafer by ``m``:

* ``m > 0.1`` (or a radial profile, which draws one uniform per die): *recycling*.
  The die's outcome puts ``u`` in one sub-interval ("good part" or "bad part" of its
  bin, of width ``w``); ``(u - low) / w`` is again a U(0, 1), independent of the
  outcome, and decides the next die. The resolution of a recycled uniform shrinks by
  ``1/w`` per die; it is replaced by a fresh draw once it has grown past ``2^20`` grid
  steps, so every die is decided with at least 33 of the 53 bits (a probability error
  below ``2^-33`` per die). About 1.7 bits per die for a GH100-size die: one draw per
  ~12 dies. Four recycled uniforms take turns over consecutive dies, so the dies do
  not wait on each other's arithmetic.
* flat profile and ``m <= 0.1`` (9 dies in 10 clean): skip-ahead. The number of clean dies
  before the next die with defects is geometric, ``floor(log(u) / -m)``; the place of
  ``u`` inside that gap's bin, mapped into the bins ``n >= 1``, gives the die's count and
  outcome. One uniform, a log and an exp per die *with defects*; cheaper than
  recycling below about 0.1 defects per die (``mcengine bench`` measures the fab kernel).

A production run (:func:`simulate_runs`) needs only a wafer's count of good dies: on a
flat wafer it draws that count as one binomial, Binomial(dies, P(good die)), the dies
being independent and alike given the wafer's density (:func:`die_good_probability`).

(Recycling the place of a uniform inside its interval: L. Devroye, *Non-Uniform Random
Variate Generation*, Springer 1986, the recycling principle.) Means of
:data:`INVERSION_MAX_MEAN` or more, counts past the first eight bins, the rounding tail
beyond the tabulated bins, and counts beyond the harvesting table draw afresh
(:func:`mcengine.rng.poisson`, explicit placement by :func:`place_defects`).

The spatial reference twin (:func:`simulate_wafers_spatial`) places every defect on the
disc instead (inverse-transform radius for the profile, uniform angle), maps it to a
die, a street or the edge ring, then places each die's defects into units explicitly.

Streams: wafer ``w`` of a yield study is ``(seed, STAGE_FAB, STREAM_WAFER, w)``; trial
``t`` of a production run is ``(seed, STAGE_FAB, STREAM_RUN, t)``; the twin uses
``STREAM_SPATIAL``. Never renumbered.
"""

from __future__ import annotations

import math

import numpy as np

from mcengine import rng
from mcengine.jit import inline_kernel, kernel, linked_kernel, run_blocks
from mcengine.kernels.geometry import die_at

STREAM_WAFER = 0
STREAM_RUN = 1
STREAM_SPATIAL = 2

#: Largest count of the harvesting table ``S[n]`` (bigger counts: explicit placement).
TABLE_MAX_DEFECTS = 256
#: A flat wafer with a per-die mean up to this walks its dies by skip-ahead (about where
#: it becomes cheaper than recycling).
SKIP_MAX_DIE_MEAN = 0.1
#: Per-die means from here on draw counts with :func:`mcengine.rng.poisson` (PTRS).
INVERSION_MAX_MEAN = 10.0
_INVERSION_KMAX = 256
_BELOW_ONE = 1.0 - 2.0**-53
_TAIL_PMF = 2.0**-54
_INV_K = 1.0 / np.maximum(np.arange(TABLE_MAX_DEFECTS + 1), 1)  # 1/k (k >= 1): no division per bin
_BRANCHLESS_BINS = 8
#: A recycled uniform is replaced once its resolution has grown past 2^20 grid steps:
#: every die is decided by a uniform with at least 33 bits left.
_RECYCLE_MAX_SCALE = 2.0**20


@kernel
def harvest_table(units, spares, n_max):
    """Occupancy probabilities ``S[n]``, ``n = 0 .. n_max``.

    ``S[n]`` is the probability that ``n`` defects, each in one of ``units`` equally
    likely units, hit at most ``spares`` distinct units. Recurrence on ``P_n(j)``, the
    probability of ``j`` distinct units hit: ``P_{n+1}(j) = P_n(j) j/U +
    P_n(j-1) (U - j + 1)/U``, truncated at ``j = spares`` (Feller, *An Introduction to
    Probability Theory*, vol. 1, §II.11 occupancy problems).

    Returns
    -------
    float64[n_max + 1]
        ``S[n] = 1`` for ``n <= spares``; ``S[n] = 0`` for ``n >= 1`` when ``spares = 0``.
    """
    out = np.empty(n_max + 1, dtype=np.float64)
    j_max = min(spares, n_max)
    p = np.zeros(j_max + 1, dtype=np.float64)
    p[0] = 1.0
    out[0] = 1.0
    for n in range(1, n_max + 1):
        for j in range(min(n, j_max), 0, -1):
            p[j] = p[j] * j / units + p[j - 1] * (units - j + 1) / units
        p[0] = 0.0
        out[n] = 1.0 if n <= spares else p.sum()  # no mass has left yet: exactly 1
    return out


@inline_kernel
def wafer_density(st, mean_per_cm2, clustering):
    """Defect density of one wafer: ``Gamma(shape=alpha, scale=D0/alpha)``; ``D0`` if
    ``alpha`` is inf (Poisson) or ``D0 = 0`` (no draw then)."""
    if mean_per_cm2 <= 0.0 or math.isinf(clustering):
        return mean_per_cm2
    return rng.gamma(st, clustering, mean_per_cm2 / clustering)


@kernel
def place_defects(st, n, units, spares, remainder_fraction):
    """Place ``n`` defects of one die explicitly (fresh uniforms); True if the die is good.

    Each uniform ``u`` hits the remainder when ``u < 1 - f``, else unit
    ``floor((u - (1 - f)) / f * U)``. Stops at the first fatal defect.
    """
    dead = np.empty(min(n, spares) + 1, dtype=np.int64)
    n_dead = 0
    unit_fraction = 1.0 - remainder_fraction
    for _ in range(n):
        u = rng.uniform(st)
        if u < remainder_fraction:
            return False
        unit = min(np.int64((u - remainder_fraction) / unit_fraction * units), units - 1)
        seen = False
        for k in range(n_dead):
            if dead[k] == unit:
                seen = True
                break
        if not seen:
            if n_dead == spares:
                return False
            dead[n_dead] = unit
            n_dead += 1
    return True


@inline_kernel
def _positive_poisson(st, mean):
    """Zero-truncated Poisson by rejection with :func:`mcengine.rng.poisson`."""
    while True:
        n = rng.poisson(st, mean)
        if n > 0:
            return n


@kernel
def _rare_die_good(st, mean, unit_fraction, units, spares, table):
    """A die known to have defects, drawn afresh (slow path, see the module text)."""
    n = _positive_poisson(st, mean)
    if n < table.shape[0]:
        return rng.uniform(st) < unit_fraction**n * table[n]
    return place_defects(st, n, units, spares, 1.0 - unit_fraction)


@linked_kernel
def outcome_bins(mean, unit_fraction, table, cum, good_end):
    """Inversion bins of a die with Poisson(``mean``) defects and their good parts.

    Fills ``cum[n] = P(N <= n)`` and ``good_end[n] = P(N < n) + P(N = n) f^n S[n]``
    (``good_end[0] = cum[0]``) for ``n = 0 .. k - 1``, stopping past the mode once
    ``P(N = n) < 2^-54`` (the tail left is below the uniform's resolution) or at the
    table's length. A uniform ``u`` falls in bin ``n``,
    the first with ``u <= cum[n]``, and the die is good when ``n = 0`` or
    ``u < good_end[n]``.

    Returns
    -------
    int
        ``k``, the number of bins filled (``u > cum[k - 1]`` is the rounding tail).
    """
    p = math.exp(-mean)
    cum[0] = p
    good_end[0] = p
    f_n = 1.0
    k = 1
    while k < min(table.shape[0], _INV_K.shape[0]) and (k <= mean or p >= _TAIL_PMF):
        p *= mean * _INV_K[k]
        f_n *= unit_fraction
        good_end[k] = cum[k - 1] + p * f_n * table[k]
        cum[k] = cum[k - 1] + p
        k += 1
    return k


@inline_kernel
def die_good_probability(mean, unit_fraction, table, cum, good_end):
    """Probability that a die with Poisson(``mean``) defects is good: ``sum_n P(N = n)
    f^n S[n]``, from the bins of :func:`outcome_bins` (written into ``cum`` and
    ``good_end``); the mass left past the bins is below ``2^-54``."""
    n_bins = outcome_bins(mean, unit_fraction, table, cum, good_end)
    p = cum[0]
    for n in range(1, n_bins):
        p += good_end[n] - cum[n - 1]
    return min(p, 1.0)


@inline_kernel
def _edge(cum, n_bins, k):
    """Bin edge ``k`` (``inf`` past the last bin); inlined, so its eight constant ``k``
    are not eight compiled specialisations."""
    return cum[k] if k < n_bins else np.inf


@linked_kernel
def _parts(cum, good_end, n_bins, low, inv, grow):
    """Lower end, inverse width and resolution growth of the good and bad part of each of
    the first eight bins (part ``2n``: ``(P(N < n), good_end[n])``; ``2n + 1``:
    ``(good_end[n], P(N <= n)]``), written into ``low``, ``inv``, ``grow``. An empty
    part maps to 0 and forces a fresh uniform (infinite growth)."""
    for part in range(2 * _BRANCHLESS_BINS):
        low[part] = 0.0
        inv[part] = 0.0
        grow[part] = np.inf
    for n in range(min(n_bins, _BRANCHLESS_BINS)):
        start = cum[n - 1] if n > 0 else 0.0
        for part, lo, hi in ((2 * n, start, good_end[n]), (2 * n + 1, good_end[n], cum[n])):
            if hi > lo:
                low[part] = lo
                inv[part] = 1.0 / (hi - lo)
                grow[part] = inv[part]


@linked_kernel
def _search_bins(u, n, cum, n_bins):
    """Continue the bin search of ``u`` from bin ``n`` (``n_bins``: the rounding tail)."""
    while n < n_bins and u > cum[n]:
        n += 1
    return n


@kernel
def _wafer_flat(st, mean, n_dies, unit_fraction, units, spares, table, scratch):
    """A flat wafer (every die of mean ``mean < INVERSION_MAX_MEAN``), by the bins of
    :func:`outcome_bins`: skip-ahead when ``mean <= SKIP_MAX_DIE_MEAN``, else
    recycled uniforms.

    The hot loops are written out and free of data-dependent branches where it
    matters: a die's outcome is random, so a branch on it mispredicts, and a per-die
    call that passes arrays is reference-counted by numba; both cost more than the
    draw. The bin of ``u`` is the number of the first eight edges below it (compared
    without branches), continued by :func:`_search_bins` in the rare case it is 8.
    """
    good = 0
    harvested = 0
    skip = mean <= SKIP_MAX_DIE_MEAN
    p0 = math.exp(-mean)
    if spares == 0:  # a die is good iff it has no defect
        if not skip:
            # recycling (module text): u's place in "clean" (0, p0] or "defects" (p0, 1)
            # (four recycled uniforms take turns, so consecutive dies do not wait on each other)
            inv_clean, inv_dirty = 1.0 / p0, 1.0 / (1.0 - p0)
            u, u1, u2, u3 = rng.uniform(st), rng.uniform(st), rng.uniform(st), rng.uniform(st)
            scale, s1, s2, s3 = 1.0, 1.0, 1.0, 1.0
            for _ in range(n_dies):
                if scale > _RECYCLE_MAX_SCALE:
                    u = rng.uniform(st)
                    scale = 1.0
                clean = u <= p0
                good += clean
                inv = inv_clean if clean else inv_dirty
                u = min(max((u - (0.0 if clean else p0)) * inv, 0.0), _BELOW_ONE)
                u, u1, u2, u3, scale, s1, s2, s3 = u1, u2, u3, u, s1, s2, s3, scale * inv
            return good, 0
        d = 0
        while d < n_dies:
            gap = math.log(rng.uniform(st)) / -mean  # clean dies before the next one with defects
            if gap >= n_dies - d:
                return good + n_dies - d, 0
            good += np.int64(gap)
            d += np.int64(gap) + 1
        return good, 0
    cum, good_end, low, inv, grow = scratch[0], scratch[1], scratch[2], scratch[3], scratch[4]
    n_bins = outcome_bins(mean, unit_fraction, table, cum, good_end)
    c0, c1, c2, c3 = _edge(cum, n_bins, 0), _edge(cum, n_bins, 1), _edge(cum, n_bins, 2), _edge(cum, n_bins, 3)
    c4, c5, c6, c7 = _edge(cum, n_bins, 4), _edge(cum, n_bins, 5), _edge(cum, n_bins, 6), _edge(cum, n_bins, 7)
    if not skip:
        # recycling (module text): part 2n is the good part of bin n, 2n + 1 its bad part
        _parts(cum, good_end, n_bins, low, inv, grow)
        # four recycled uniforms take turns, so consecutive dies do not wait on each other
        u, u1, u2, u3 = rng.uniform(st), rng.uniform(st), rng.uniform(st), rng.uniform(st)
        scale, s1, s2, s3 = 1.0, 1.0, 1.0, 1.0
        for _ in range(n_dies):
            if scale > _RECYCLE_MAX_SCALE:
                u = rng.uniform(st)
                scale = 1.0
            n = (u > c0) + (u > c1) + (u > c2) + (u > c3) + (u > c4) + (u > c5) + (u > c6) + (u > c7)
            if n < _BRANCHLESS_BINS and n < n_bins:
                ok = (n == 0) | (u < good_end[n])
                part = 2 * n + 1 - ok
                u = min(max((u - low[part]) * inv[part], 0.0), _BELOW_ONE)
                scale *= grow[part]
            else:  # beyond the first eight bins (rare): search on, then draw afresh
                n = _search_bins(u, n, cum, n_bins)
                if n >= n_bins:
                    ok = _rare_die_good(st, mean, unit_fraction, units, spares, table)
                else:
                    ok = u < good_end[n]
                scale = np.inf
            good += ok
            harvested += ok & (n > 0)
            u, u1, u2, u3, scale, s1, s2, s3 = u1, u2, u3, u, s1, s2, s3, scale
        return good, harvested
    q = -math.expm1(-mean)  # P(a die has defects)
    d = 0
    while d < n_dies:
        u = rng.uniform(st)
        gap = math.log(u) / -mean  # clean dies before the next die with defects
        if gap >= n_dies - d:
            good += n_dies - d
            break
        g = np.int64(gap)
        good += g
        d += g + 1
        pg = math.exp(-mean * g)
        # u's place in the gap's bin (pg p0, pg], mapped onto the bins n >= 1: (p0, 1)
        w = p0 + q * min(max((pg - u) / (pg * q), 0.0), _BELOW_ONE)
        n = max(1, (w > c0) + (w > c1) + (w > c2) + (w > c3) + (w > c4) + (w > c5) + (w > c6) + (w > c7))
        if n == _BRANCHLESS_BINS:
            n = _search_bins(w, n, cum, n_bins)
        if n >= n_bins:
            ok = _rare_die_good(st, mean, unit_fraction, units, spares, table)
        else:
            ok = w < good_end[n]
        good += ok
        harvested += ok
    return good, harvested


@kernel
def _wafer_per_die(st, mean, r2_fraction, edge_ratio, unit_fraction, units, spares, table):
    """Radial profile or a large mean: each die its own mean ``mean * w_d`` and
    sequential-search inversion (same bins as :func:`outcome_bins`, computed on the way)."""
    n_dies = r2_fraction.shape[0]
    n_table = table.shape[0]
    norm = 1.0 + 0.5 * (edge_ratio - 1.0)
    good = 0
    harvested = 0
    for d in range(n_dies):
        m = mean * (1.0 + (edge_ratio - 1.0) * r2_fraction[d]) / norm
        p0 = math.exp(-m)
        u = rng.uniform(st)
        if u <= p0:
            good += 1
            continue
        if spares == 0:
            continue
        if m < INVERSION_MAX_MEAN:
            u -= p0
            p = p0 * m
            n = 1
            f_n = unit_fraction
            while u > p and n < _INVERSION_KMAX:
                u -= p
                n += 1
                p *= m / n
                f_n *= unit_fraction
            if n >= _INVERSION_KMAX:
                ok = _rare_die_good(st, m, unit_fraction, units, spares, table)
            elif n < n_table:
                ok = u < p * f_n * table[n]  # u / p, its place in the bin, below f^n S[n]
            else:
                ok = place_defects(st, n, units, spares, 1.0 - unit_fraction)
        else:
            ok = _rare_die_good(st, m, unit_fraction, units, spares, table)
        if ok:
            good += 1
            harvested += 1
    return good, harvested


@inline_kernel
def new_scratch(table):
    """Work space of :func:`wafer_good_dies` for a harvesting table: float64[5, k]."""
    return np.empty((5, max(table.shape[0], 2 * _BRANCHLESS_BINS)), dtype=np.float64)


@inline_kernel
def _flat(edge_ratio, mean):
    """Whether a wafer's dies are alike (flat profile) with a per-die mean ``mean`` that the
    bins of :func:`outcome_bins` serve (below :data:`INVERSION_MAX_MEAN`)."""
    return edge_ratio == 1.0 and mean < INVERSION_MAX_MEAN


@kernel
def wafer_good_dies(st, density_per_cm2, die_area_cm2, r2_fraction, edge_ratio, unit_fraction, units, spares,
                    table, scratch):
    """Good dies of one wafer of density ``density_per_cm2`` (already gamma-drawn).

    Parameters
    ----------
    st : uint64[STREAM_WORDS]
        The wafer's stream (advanced).
    density_per_cm2 : float
        The wafer's mean defect density (defects/cm²), before the radial profile.
    die_area_cm2 : float
    r2_fraction : float64[n_dies]
        Mean of ``(r/R)^2`` over each die.
    edge_ratio, unit_fraction : float
        ``rho`` and ``f`` (module text).
    units, spares : int
        ``U`` and ``U - units_required``.
    table : float64[k]
        :func:`harvest_table` of ``(units, spares)``.
    scratch : float64[5, k]
        Work space (bin edges and their parts, :func:`outcome_bins`, :func:`_parts`).

    Returns
    -------
    (int, int)
        Good dies, and how many of them have defects (they needed harvesting).
    """
    mean = density_per_cm2 * die_area_cm2
    n_dies = r2_fraction.shape[0]
    if mean <= 0.0:
        return n_dies, 0
    if _flat(edge_ratio, mean):
        return _wafer_flat(st, mean, n_dies, unit_fraction, units, spares, table, scratch)
    return _wafer_per_die(st, mean, r2_fraction, edge_ratio, unit_fraction, units, spares, table)


def simulate_wafers(seed, wafer_start, density, clustering, edge_ratio, unit_fraction,
                    die_area_cm2, r2_fraction, units, spares, table):
    """Independent wafers ``wafer_start .. wafer_start + n - 1``.

    The wafers run in blocks on threads (:func:`~mcengine.jit.run_blocks`), each block a
    call of :func:`_wafer_block`; wafer ``w`` draws from its own stream.

    Parameters
    ----------
    seed : uint64
    wafer_start : int
        Global index of the first wafer (its stream key).
    density, clustering, edge_ratio, unit_fraction : float64[n]
        Per-wafer ``D0``, ``alpha``, ``rho``, ``f``.
    die_area_cm2, r2_fraction, units, spares, table
        As in :func:`wafer_good_dies`.

    Returns
    -------
    good, harvested, uniforms : int64[n]
        Good dies, good dies with defects, and uniforms drawn, per wafer.
    """
    per_wafer = _float_rows(density, clustering, edge_ratio, unit_fraction)
    outs = tuple(np.empty(per_wafer[0].shape[0], dtype=np.int64) for _ in range(3))
    args = (np.uint64(seed), np.int64(wafer_start), *per_wafer, float(die_area_cm2), _float_rows(r2_fraction)[0],
            int(units), int(spares), _float_rows(table)[0])
    run_blocks(_wafer_block, args, outs[0].shape[0], outs)
    return outs


@kernel
def _wafer_block(seed, wafer_start, density, clustering, edge_ratio, unit_fraction, die_area_cm2, r2_fraction, units,
                 spares, table, i0, i1, good, harvested, uniforms):
    """Wafers ``i0 .. i1 - 1`` of :func:`simulate_wafers`, written to rows ``i0 .. i1 - 1``."""
    scratch = new_scratch(table)
    for i in range(i0, i1):
        st = rng.new_stream(seed, rng.STAGE_FAB, STREAM_WAFER, wafer_start + i)
        lam = wafer_density(st, density[i], clustering[i])
        good[i], harvested[i] = wafer_good_dies(
            st, lam, die_area_cm2, r2_fraction, edge_ratio[i], unit_fraction[i], units, spares, table, scratch)
        uniforms[i] = np.int64(st[3])


def _float_rows(*arrays):
    """The arrays as contiguous float64 (one compiled specialisation of each driver's kernel)."""
    return tuple(np.ascontiguousarray(a, dtype=np.float64) for a in arrays)


def simulate_runs(seed, trial_start, density, clustering, edge_ratio, unit_fraction, assembly_yield,
                  die_area_cm2, r2_fraction, units, spares, table, target_packages, max_wafers, dies_per_package=1):
    """Production runs: trial ``t`` makes wafers until ``target_packages`` pass assembly.

    Each wafer of the run draws its own density (gamma mixing); every ``dies_per_package``
    good dies are assembled into one package, which passes with probability
    ``assembly_yield`` (binomial per wafer over the packages its good dies complete: after
    ``G`` good dies in all, ``floor(G / dies_per_package)`` have been attempted). The
    run stops after the wafer that brings the good packages to the target, or at
    ``max_wafers`` (the caller reports such a trial as infeasible).

    A run needs only each wafer's count of good dies. On a flat wafer (``edge_ratio ==
    1``, per-die mean below :data:`INVERSION_MAX_MEAN`) its dies are independent and
    alike given the wafer's density, so the count is Binomial(dies,
    :func:`die_good_probability`): one binomial draw instead of a walk over the dies
    (exact in distribution; the yield study keeps the walk, which also tells the
    harvested dies apart). Other wafers walk their dies (:func:`_wafer_per_die`, as
    :func:`wafer_good_dies` does for them).

    The trials run in blocks on threads (:func:`~mcengine.jit.run_blocks`),
    each block a call of :func:`_run_trials`; trial ``t`` draws from its own stream.

    Returns
    -------
    wafers, good_dies, packages : int64[n]
        Wafers started, good dies (``dies_per_package`` per assembly attempt), good
        packages, per trial.
    """
    per_trial = _float_rows(density, clustering, edge_ratio, unit_fraction, assembly_yield)
    n = per_trial[0].shape[0]
    outs = tuple(np.empty(n, dtype=np.int64) for _ in range(3))
    args = (np.uint64(seed), np.int64(trial_start), *per_trial, float(die_area_cm2), _float_rows(r2_fraction)[0],
            int(units), int(spares), _float_rows(table)[0], int(target_packages), int(max_wafers), int(dies_per_package))
    run_blocks(_run_trials, args, n, outs)
    return outs


@kernel
def _run_trials(seed, trial_start, density, clustering, edge_ratio, unit_fraction, assembly_yield,
                die_area_cm2, r2_fraction, units, spares, table, target_packages, max_wafers, dies_per_package, i0, i1,
                wafers, good_dies, packages):
    """Trials ``i0 .. i1 - 1`` of :func:`simulate_runs`, written to rows ``i0 .. i1 - 1``."""
    n_dies = r2_fraction.shape[0]
    scratch = new_scratch(table)
    for i in range(i0, i1):
        st = rng.new_stream(seed, rng.STAGE_FAB, STREAM_RUN, trial_start + i)
        w = 0
        g_total = 0
        p_total = 0
        while p_total < target_packages and w < max_wafers:
            lam = wafer_density(st, density[i], clustering[i])
            mean = lam * die_area_cm2
            if _flat(edge_ratio[i], mean):
                g = rng.binomial(st, n_dies, die_good_probability(mean, unit_fraction[i], table, scratch[0], scratch[1]))
            elif mean <= 0.0:
                g = n_dies
            else:  # (what wafer_good_dies does here, without compiling its flat walk, never taken)
                g, _ = _wafer_per_die(st, mean, r2_fraction, edge_ratio[i], unit_fraction[i], units, spares, table)
            attempts = (g_total + g) // dies_per_package - g_total // dies_per_package
            p_total += rng.binomial(st, attempts, assembly_yield[i])
            g_total += g
            w += 1
        wafers[i] = w
        good_dies[i] = g_total
        packages[i] = p_total


@kernel
def disc_point(st, radius_mm, edge_ratio):
    """A point of the usable disc with density ``∝ 1 + (rho - 1)(r/R)^2`` (two uniforms).

    ``s = (r/R)^2`` has density ``(1 + (rho - 1) s) / c`` on [0, 1], ``c = (1 + rho)/2``;
    its inverse CDF ``s = (rho + 1) u / (1 + sqrt(1 + (rho^2 - 1) u))`` (the stable root
    of ``(rho - 1) s^2 / 2 + s = c u``); the angle is uniform.
    """
    u = rng.uniform(st)
    s = (edge_ratio + 1.0) * u / (1.0 + math.sqrt(1.0 + (edge_ratio * edge_ratio - 1.0) * u))
    r = radius_mm * math.sqrt(s)
    theta = 2.0 * math.pi * rng.uniform(st)
    return r * math.cos(theta), r * math.sin(theta)


def simulate_wafers_spatial(seed, wafer_start, density, clustering, edge_ratio, unit_fraction, radius_mm,
                            die_w_mm, die_h_mm, pitch_x_mm, pitch_y_mm, x0_mm, y0_mm, j_first, rows,
                            n_dies, units, spares):
    """Reference twin of :func:`simulate_wafers`: every defect placed on the disc.

    Per wafer: density (gamma mixing), a Poisson count over the usable disc area, each
    defect at :func:`disc_point`, mapped by :func:`mcengine.kernels.geometry.die_at` to
    a whole die or lost (street, edge ring). Then each die's defects are placed into
    units by :func:`place_defects`. Keeps one count per die, nothing per defect. The
    wafers run in blocks on threads (:func:`~mcengine.jit.run_blocks`), each block a
    call of :func:`_spatial_block`.

    Returns
    -------
    good, harvested : int64[n]
    """
    per_wafer = _float_rows(density, clustering, edge_ratio, unit_fraction)
    outs = tuple(np.empty(per_wafer[0].shape[0], dtype=np.int64) for _ in range(2))
    grid = (float(radius_mm), float(die_w_mm), float(die_h_mm), float(pitch_x_mm), float(pitch_y_mm), float(x0_mm),
            float(y0_mm), int(j_first), np.ascontiguousarray(rows, dtype=np.int64), int(n_dies))
    args = (np.uint64(seed), np.int64(wafer_start), *per_wafer, *grid, int(units), int(spares))
    run_blocks(_spatial_block, args, outs[0].shape[0], outs)
    return outs


@kernel
def _spatial_block(seed, wafer_start, density, clustering, edge_ratio, unit_fraction, radius_mm, die_w_mm, die_h_mm,
                   pitch_x_mm, pitch_y_mm, x0_mm, y0_mm, j_first, rows, n_dies, units, spares, i0, i1, good, harvested):
    """Wafers ``i0 .. i1 - 1`` of :func:`simulate_wafers_spatial`, written to rows ``i0 .. i1 - 1``."""
    disc_cm2 = math.pi * radius_mm * radius_mm / 100.0
    counts = np.empty(n_dies, dtype=np.int64)
    for i in range(i0, i1):
        st = rng.new_stream(seed, rng.STAGE_FAB, STREAM_SPATIAL, wafer_start + i)
        lam = wafer_density(st, density[i], clustering[i])
        for d in range(n_dies):
            counts[d] = 0
        for _ in range(rng.poisson(st, lam * disc_cm2)):
            x, y = disc_point(st, radius_mm, edge_ratio[i])
            d = die_at(x, y, die_w_mm, die_h_mm, pitch_x_mm, pitch_y_mm, x0_mm, y0_mm, j_first, rows)
            if d >= 0:
                counts[d] += 1
        g = 0
        h = 0
        for d in range(n_dies):
            if counts[d] == 0:
                g += 1
            elif place_defects(st, counts[d], units, spares, 1.0 - unit_fraction[i]):
                g += 1
                h += 1
        good[i] = g
        harvested[i] = h
