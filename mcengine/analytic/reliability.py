"""Closed forms of the reliability stage: the twins its tests and `mcengine validate` share.

Every rate is per hour and every duration in hours unless a name says otherwise. The
formulas and their worked values are in ``docs/sources.md`` (Reliability, closed forms);
each function cites its anchor. Where a result is exact only for the kernel's
semantics (for example a fault during a restart restarts it), the docstring says so.
"""

from __future__ import annotations

import math

import numpy as np
import scipy  # scipy loads scipy.stats and scipy.integrate on first use: a first `mcengine run` imports neither
from scipy import special

from ..units import HOURS_PER_YEAR

__all__ = [
    "weibull_rate_per_hour", "renewals_bound", "series_renewals_bound", "resolved_law", "weibull_scale", "alternating_renewal", "series_availability", "machine_repairman",
    "spares_birth_death", "weibull_mean_survival", "series_mean_survival",
    "restart_only", "renewal_count", "renewal_function", "series_renewals", "ample_pool_availability", "mginf_stockout_probability", "repair_survival",
    "batch_mginf_stockout", "compound_poisson_excess", "cluster_reference", "no_spares_in_place", "reshard_share",
]


def weibull_rate_per_hour(law_key: str, value, shape):
    """``1/eta`` per hour of a Weibull law (shape ``k``) given by one law key.

    ``afr``: ``afr Γ(1 + 1/k) / 8766`` (afr read as 1/MTTF); ``mttf_hours``:
    ``Γ(1 + 1/k) / MTTF``; ``scale_hours``: ``1/eta``; ``first_year_fraction`` ``F``:
    ``(-ln(1 - F))^(1/k) / 8766``, from ``F = 1 - exp(-(8766/eta)^k)``
    (docs/sources.md#rel-unit-conversions). At ``k = 1`` it is the exponential rate.
    Works on floats and float64 arrays alike.
    """
    if law_key == "afr":
        return value * special.gamma(1.0 + 1.0 / shape) / HOURS_PER_YEAR
    if law_key == "mttf_hours":
        return special.gamma(1.0 + 1.0 / shape) / value
    if law_key == "scale_hours":
        return 1.0 / value
    if law_key == "first_year_fraction":
        return (-np.log1p(-value)) ** (1.0 / shape) / HOURS_PER_YEAR
    raise ValueError(f"not a law key: {law_key!r}")


def renewals_bound(rate_per_hour: float, shape: float, horizon_hours: float) -> float:
    """An upper bound on the expected renewals of one unit in ``[0, T]`` under replace on
    failure, a Weibull law of shape ``k`` and ``1/eta = rate_per_hour``
    (docs/sources.md#rel-renewal-bound).

    Wear-out and exponential (``k >= 1``, NBUE): ``M(T) <= T / MTTF``. Infant mortality
    (``k < 1``), where ``M(T)`` exceeds ``T / MTTF`` and renewals restart the clock at its
    steepest: the smaller of ``F(T) / (1 - F(T))`` (each of ``n`` renewals needs ``n``
    lives shorter than ``T``) and Lorden's ``T / MTTF + E[X^2] / MTTF^2 - 1``.
    """
    scaled = horizon_hours * rate_per_hour  # T / eta (0 when it underflows: no renewal)
    if scaled <= 0.0:
        return 0.0
    log_mean_scale = math.lgamma(1.0 + 1.0 / shape)  # MTTF = eta * Gamma(1 + 1/k)
    cycles = math.exp(min(math.log(scaled) - log_mean_scale, 700.0))  # T / MTTF
    if shape >= 1.0:
        return cycles
    lorden = cycles + math.exp(min(math.lgamma(1.0 + 2.0 / shape) - 2.0 * log_mean_scale, 700.0)) - 1.0
    cum_hazard = scaled ** shape  # H(T); F / (1 - F) = e^H - 1
    return min(lorden, math.expm1(cum_hazard) if cum_hazard < 700.0 else math.inf)


def series_renewals_bound(terms: list[tuple[float, float]], horizon_hours: float) -> float:
    """An upper bound on the expected renewals in ``[0, T]`` of a series system renewed
    as a whole at its first failure (a GPU and its component classes), with cumulative
    hazard ``H(t) = sum c t**k`` over ``terms = [(k, c)]`` (docs/sources.md#rel-renewal-bound).

    The minimum of ``n`` Weibull(k, eta) lives is Weibull(k, eta n**(-1/k)): for ``k < 1``
    the series fails far sooner than ``n`` separate renewals suggest. The same bounds as
    :func:`renewals_bound`, on the series law: ``T / MTTF`` when every shape is at least 1
    (a series of IFR lives is IFR), else the smaller of ``e**H(T) - 1`` and Lorden's
    ``T / MTTF + E[X^2] / MTTF^2 - 1``, the moments by quadrature in ``log t``
    (``e**H(T) - 1`` alone for a law too extreme for the quadrature).
    """
    terms = [(float(k), float(c)) for k, c in terms if c > 0.0]
    if not terms or horizon_hours <= 0.0:
        return 0.0
    cum_hazard = sum(math.exp(min(math.log(c) + k * math.log(horizon_hours), 700.0)) for k, c in terms)  # H(T)
    tail = math.expm1(cum_hazard) if cum_hazard < 700.0 else math.inf  # F / (1 - F): any law
    # in u = log t: S(t) = exp(-H(t)) is ~1 below u_lo and below e**-60 above u_hi
    u_hi = min((math.log(60.0) - math.log(c)) / k for k, c in terms)
    if not -600.0 < u_hi < 600.0:  # lives beyond 10^260 h (hardly any renewal) or below
        return tail  # 10^-260 h (countless): F / (1 - F) says how few or many
    u_lo = min(min((math.log(1e-12) - math.log(c)) / k for k, c in terms), u_hi - math.log(1e12))
    u = np.linspace(u_lo, u_hi, 4001)
    with np.errstate(all="ignore"):  # (extreme laws: an overflow or 0/0 leaves F / (1 - F))
        t = np.exp(u)
        surv = np.exp(-sum(np.exp(np.minimum(math.log(c) + k * u, 700.0)) for k, c in terms))
        t_lo = math.exp(u_lo)
        mean = t_lo + np.trapezoid(surv * t, u)  # int_0^inf S(t) dt
        second = t_lo ** 2 + np.trapezoid(2.0 * surv * t * t, u)  # E[X^2] = int_0^inf 2 t S(t) dt
        cycles = np.float64(horizon_hours) / mean
        bound = cycles if all(k >= 1.0 for k, _ in terms) else cycles + second / mean ** 2 - 1.0  # (Lorden's)
    if math.isnan(bound):
        return tail
    return float(bound) if all(k >= 1.0 for k, _ in terms) else min(float(bound), tail)


def resolved_law(law_key: str | None, value: float, shape: float) -> dict[str, float | str]:
    """The four equivalent statements of one class's law (the ``resolved`` view).

    ``afr_long_run`` is the long-run renewal rate 1/MTTF per unit-year (elementary
    renewal theorem, docs/sources.md#rel-renewal); ``"inf"`` marks a law that never fails.
    """
    rate = 0.0 if law_key is None else float(weibull_rate_per_hour(law_key, value, shape))
    if rate <= 0.0:
        return {"afr_long_run": 0.0, "mttf_hours": "inf", "scale_hours": "inf", "first_year_fraction": 0.0}
    mttf = float(special.gamma(1.0 + 1.0 / shape)) / rate
    law = {"afr_long_run": HOURS_PER_YEAR / mttf, "mttf_hours": mttf, "scale_hours": 1.0 / rate,
           "first_year_fraction": float(-np.expm1(-((HOURS_PER_YEAR * rate) ** shape)))}
    return {k: float(f"{v:.15g}") for k, v in law.items()}  # 876600, not 876599.9999999999


def weibull_scale(mttf_hours: float, shape: float) -> float:
    """Scale ``eta`` of the Weibull law with mean ``mttf_hours``: ``MTTF / Γ(1 + 1/k)`` (docs/sources.md#rel-unit-conversions)."""
    return mttf_hours / math.gamma(1.0 + 1.0 / shape)


def alternating_renewal(mttf_hours: float, mttr_hours: float) -> float:
    """Long-run availability of one unit with one repairer, ``MTTF / (MTTF + MTTR)`` (docs/sources.md#rel-alternating-renewal).

    Holds for any up- and down-time laws with these means.
    """
    return mttf_hours / (mttf_hours + mttr_hours)


def series_availability(unit_availability: float, n: int) -> float:
    """``a**n``: all of ``n`` independent units up (docs/sources.md#rel-series-availability).

    The kernel meets it exactly in two regimes: an ample spare pool with zero restart
    time (each slot alternates Exp(λ) up, one swap down, independently), and no pool
    with unlimited crews and zero swap and restart times (the number of units in
    repair is finite-source M/G/∞, Binomial(N, 1 - a) for any repair law, and by
    symmetry the empty slots are a uniform subset).
    """
    return unit_availability**n


def _birth_death(birth: np.ndarray, death: np.ndarray) -> np.ndarray:
    """Stationary law of a birth-death chain on ``0..K`` (``birth[k]``: k -> k+1), in logs."""
    log_ratio = np.log(birth) - np.log(death)
    log_p = np.concatenate([[0.0], np.cumsum(log_ratio)])
    log_p -= special.logsumexp(log_p)
    return np.exp(log_p)


def machine_repairman(n_units: int, fail_rate: float, repair_rate: float, crews: float) -> dict:
    """Finite-source M/M/c//N: ``N`` units failing at λ while up, ``c`` repairers at μ (docs/sources.md#rel-machine-repairman).

    ``p_k ∝ C(N, k) (λ/μ)^k`` for ``k <= c`` and ``C(N, k) (λ/μ)^k k! / (c! c^(k-c))``
    beyond, i.e. birth rate ``(N - k) λ`` and death rate ``min(k, c) μ``; computed in
    log space, so ``N`` in the thousands is fine. ``crews = inf`` gives Binomial.

    Returns
    -------
    dict
        ``p`` (float64[N + 1]), ``mean_down`` (E[K]), ``availability`` ((N - E[K]) / N).
    """
    k = np.arange(n_units)
    c = min(float(crews), float(n_units))
    p = _birth_death((n_units - k) * fail_rate, np.minimum(k + 1, c) * repair_rate)
    mean_down = float(np.dot(np.arange(n_units + 1), p))
    return {"p": p, "mean_down": mean_down, "availability": (n_units - mean_down) / n_units}


def spares_birth_death(active: int, spares: int, crews: float, fail_rate: float, repair_rate: float) -> dict:
    """``n`` active slots, ``s`` cold spares, ``c`` crews; ``k`` units failed (docs/sources.md#rel-spares-birth-death).

    Failure rate ``min(n, n + s - k) λ``, repair rate ``min(k, c) μ``; full service iff
    ``k <= s``. With zero swap and restart times this is the kernel's cluster of
    single-GPU instances, whose availability is the mean active fraction.

    Returns
    -------
    dict
        ``p_full_service``, ``active_fraction`` (E[min(n, n + s - K)] / n), ``p``.
    """
    total = active + spares
    k = np.arange(total)
    up = np.minimum(active, total - k)
    p = _birth_death(up * fail_rate, np.minimum(k + 1, min(float(crews), float(total))) * repair_rate)
    up_all = np.minimum(active, total - np.arange(total + 1))
    return {"p_full_service": float(p[: spares + 1].sum()), "active_fraction": float(np.dot(up_all, p) / active), "p": p}


def weibull_mean_survival(horizon_hours: float, scale_hours: float, shape: float, count: int = 1) -> float:
    """Time average over ``[0, T]`` of ``S(t) = exp(-count (t/eta)^k)`` (docs/sources.md#rel-renewal), no repair.

    ``(1/T) ∫_0^T S dt = eta_c Γ(1/k) P(1/k, (T/eta_c)^k) / (k T)`` with ``eta_c = eta
    count^(-1/k)`` (the minimum of ``count`` lives) and ``P`` the regularised lower
    incomplete gamma function.
    """
    eta = scale_hours * count ** (-1.0 / shape)
    x = (horizon_hours / eta) ** shape
    return eta * special.gamma(1.0 / shape) * special.gammainc(1.0 / shape, x) / (shape * horizon_hours)


def series_mean_survival(horizon_hours: float, exp_rate: float, groups: list[tuple[float, float]]) -> float:
    """Time-averaged survival of a series system, exponential rate plus Weibull groups.

    ``S(t) = exp(-exp_rate t - Σ (t/eta_g)^k_g)`` over ``groups = [(k_g, eta_g), ...]``,
    averaged over ``[0, T]`` by adaptive quadrature (exact to ~1e-10).
    """
    def survival(t):
        return math.exp(-exp_rate * t - sum((t / eta) ** k for k, eta in groups))

    value, _ = scipy.integrate.quad(survival, 0.0, horizon_hours, epsabs=1e-12, epsrel=1e-11, limit=200)
    return value / horizon_hours


def restart_only(rate: float, restart_hours: float) -> dict:
    """An instance with only restart-only faults (Poisson, ``rate``) and a fixed restart.

    With the kernel's rule that a fault during a restart starts it over, a down period
    lasts ``E[D] = (e^(Λr) - 1)/Λ``, so availability is exactly ``e^(-Λr)`` and up -> down
    transitions occur at ``Λ e^(-Λr)`` per hour (alternating renewal, docs/sources.md#rel-alternating-renewal).

    Returns
    -------
    dict
        ``availability`` and ``interruptions_per_hour``.
    """
    a = math.exp(-rate * restart_hours)
    return {"availability": a, "interruptions_per_hour": rate * a}


def renewal_count(horizon_hours: float, mean_hours: float, cv2: float) -> float:
    """Expected renewals in ``[0, t]`` of a renewal process started new, ``t/μ + (c² - 1)/2``.

    The second-order renewal asymptotic (D. R. Cox, *Renewal Theory*, 1962, §4.5), for a
    life with mean ``μ`` and squared coefficient of variation ``c²``; its error vanishes
    as ``t`` grows (the elementary renewal theorem, docs/sources.md#rel-renewal, keeps only ``t/μ``). A Weibull
    life of shape ``k`` has ``c² = Γ(1 + 2/k) / Γ(1 + 1/k)² - 1``.
    """
    return horizon_hours / mean_hours + 0.5 * (cv2 - 1.0)


#: Grid steps of :func:`renewal_function`: relative error O((lives per step)^2), ~1e-5 at
#: 44 lives over the horizon, far below any Monte Carlo SEM.
RENEWAL_STEPS = 4000


def renewal_function(cdf, horizon_hours: float, steps: int = RENEWAL_STEPS) -> float:
    """``M(T)``: expected renewals in ``[0, T]`` of a renewal process started new (docs/sources.md#rel-renewal).

    Solves the renewal equation ``M(t) = F(t) + ∫_0^t M(t - x) dF(x)`` on a grid of
    ``steps`` intervals with the trapezoid rule in ``M`` (Xie, "On the solution of
    renewal-type integral equations", 1989): ``O(steps^2)`` operations, exact for any
    life law ``cdf`` (a vectorised ``F(t)``) to ``O(1/steps^2)``. Its first term is
    ``F(T)`` (first failures only); its long-run slope ``1/MTTF`` (:func:`renewal_count`).
    """
    t = np.linspace(0.0, horizon_hours, steps + 1)
    f = np.asarray(cdf(t), dtype=float)
    df = np.diff(f)  # df[j - 1] = F(t_j) - F(t_j-1)
    m = np.zeros(steps + 1)
    pair = np.zeros(steps + 1)  # pair[k] = M(t_k+1) + M(t_k)
    for i in range(1, steps + 1):
        rest = 0.5 * float(np.dot(pair[i - 2::-1], df[1:i])) if i >= 2 else 0.0
        m[i] = (f[i] + 0.5 * m[i - 1] * df[0] + rest) / (1.0 - 0.5 * df[0])
        pair[i - 1] = m[i] + m[i - 1]
    return float(m[-1])


def series_renewals(horizon_hours: float, exp_rate: float, groups: list[tuple[float, float]], steps: int = RENEWAL_STEPS) -> float:
    """:func:`renewal_function` of a series life ``S(t) = exp(-exp_rate t - Σ (t/eta_g)^k_g)``.

    With an ample pool, zero swap time and replace-on-failure this is the expected number
    of permanent failures of one GPU slot over the horizon (a host failure renews its GPUs,
    so its rate joins ``exp_rate``); ``groups = [(k_g, eta_g), ...]`` as in :func:`series_mean_survival`.
    """
    def cdf(t):
        return -np.expm1(-exp_rate * t - sum((t / eta) ** k for k, eta in groups))

    return renewal_function(cdf, horizon_hours, steps)


def ample_pool_availability(perm_rate: float, transient_rate: float, swap_hours: float, restart_hours: float) -> float:
    """``1 / (1 + Λ_p (t_swap + t_restart) + Λ_t t_restart)`` (docs/sources.md#rel-series-availability, renewal-reward).

    First order in the rates (it ignores faults while the instance is already down);
    exact for ``Λ_t = 0`` and ``t_restart = 0`` with one GPU per instance.
    """
    return 1.0 / (1.0 + perm_rate * (swap_hours + restart_hours) + transient_rate * restart_hours)


def mginf_stockout_probability(failure_rate: float, mean_repair_hours: float, spare_units: int) -> float:
    """``P(Poisson(Λ E[R]) > s)``: share of time more units are in repair than spares (docs/sources.md#rel-ample-crews).

    Ample crews and a failure rate held constant by the spares; any repair law.
    """
    return float(scipy.stats.poisson.sf(spare_units, failure_rate * mean_repair_hours))


def repair_survival(parts: list[tuple], hours) -> np.ndarray:
    """``P(R > u)`` of a repair law given as ``[(weight, kind, *params), ...]``.

    Kinds and parameters as in scenario files: ``("fixed", value)``, ``("exponential",
    mean)``, ``("lognormal", median, sigma)``, ``("weibull", mean, shape)``.
    """
    u = np.asarray(hours, dtype=float)
    out = np.zeros_like(u)
    for weight, kind, *p in parts:
        if kind == "fixed":
            out += weight * (u < p[0])
        elif kind == "exponential":
            out += weight * (scipy.stats.expon.sf(u, scale=p[0]) if p[0] > 0 else 0.0)
        elif kind == "lognormal":
            out += weight * (scipy.stats.lognorm.sf(u, p[1], scale=p[0]) if p[0] > 0 else 0.0)
        else:
            out += weight * (scipy.stats.weibull_min.sf(u, p[1], scale=weibull_scale(p[0], p[1])) if p[0] > 0 else 0.0)
    return out


def _survival_segments(parts: list[tuple]) -> list[float]:
    """Breakpoints of the survival function (fixed parts) and an upper end of its support."""
    points = {0.0}
    upper = 0.0
    for _, kind, *p in parts:
        if kind == "fixed":
            points.add(float(p[0]))
            upper = max(upper, float(p[0]))
        elif p[0] <= 0.0:  # a zero-length repair (scipy's laws take no zero scale)
            continue
        elif kind == "exponential":
            upper = max(upper, float(scipy.stats.expon.isf(1e-14, scale=p[0])))
        elif kind == "lognormal":
            upper = max(upper, float(scipy.stats.lognorm.isf(1e-14, p[1], scale=p[0])))
        else:
            upper = max(upper, float(scipy.stats.weibull_min.isf(1e-14, p[1], scale=weibull_scale(p[0], p[1]))))
    points.add(upper)
    return sorted(points)


def batch_mginf_stockout(single_rate: float, batch_rate: float, batch_size: int, repair_parts: list[tuple],
                         spare_units: int) -> dict:
    """Units in repair with ample crews when failures come singly and in batches (M^X/G/∞).

    Single units fail at ``single_rate``; batches of ``g`` units (a host failure failing
    its GPUs) at ``batch_rate``; every unit's repair is an independent draw of the law.
    By Poisson marking, the batches with ``k`` units still in repair form a Poisson
    count of mean ``μ_k = batch_rate ∫ C(g,k) S(u)^k (1 - S(u))^(g-k) du`` (``S`` the
    repair survival), independently over ``k``, so ``N = N_1 + Σ k M_k`` with singles in
    ``N_1 ~ Poisson(single_rate E[R])``. Exact for the kernel while the pool holds
    (failure rates constant); docs/sources.md#rel-ample-crews is the case ``batch_rate = 0``.

    Returns
    -------
    dict
        ``p_stockout`` = P(N > spares) and ``mean_shortfall`` = E[(N - spares)^+]
        (units, i.e. slots waiting, on average).
    """
    segments = _survival_segments(repair_parts)
    mean_repair = sum(scipy.integrate.quad(lambda u: float(repair_survival(repair_parts, u)), a, b, limit=200)[0]
                      for a, b in zip(segments[:-1], segments[1:]))
    means = np.zeros(max(batch_size, 1) + 1)
    means[1] = single_rate * mean_repair
    if batch_rate > 0.0:  # every k at once: one adaptive integral of a vector (cost independent of g's values)
        ks = np.arange(1, batch_size + 1)

        def occupancy(u):
            return scipy.stats.binom.pmf(ks, batch_size, float(repair_survival(repair_parts, u)))

        means[1:] += batch_rate * sum(scipy.integrate.quad_vec(occupancy, a, b, limit=200, epsabs=1e-14)[0]
                                      for a, b in zip(segments[:-1], segments[1:]))
    return compound_poisson_excess(means, spare_units)


#: Most steps of Panjer's recursion (spares ``s``): beyond, :func:`compound_poisson_excess`
#: takes the normal law with a continuity correction, so its cost does not grow with the
#: spares. There ``N`` lies within 40 sd of ``s >= 20,000``, so its mean is in the
#: thousands; the error is of the order of the skewness ``Σ k³ μ_k / sd³`` (a few
#: per cent at most for host batches of 1,024 GPUs, ~1/sqrt(mean) for single failures).
PANJER_MAX_STEPS = 20_000
#: Standard deviations below the mean past which P(N <= s) is taken as 0 (< e^-800).
_FAR_BELOW_SD = 40.0
#: Rescale factor of the recursion's scaled probabilities (well inside float range).
_RESCALE = 1e200


def compound_poisson_excess(means: np.ndarray, spare_units: int) -> dict:
    """``P(N > s)`` and ``E[(N - s)^+]`` of ``N = Σ_k k M_k``, ``M_k ~ Poisson(means[k])``
    independent (``means[0]`` unused), ``s = spare_units``.

    Cost grows neither with the means (the repair time) nor with ``s``: one batch size
    (``k = 1``) is a Poisson tail; otherwise Panjer's recursion ``p(n) = (1/n) Σ_k k μ_k
    p(n - k)`` (Panjer 1981) runs over ``n = 0..s`` only, on probabilities scaled to stay
    inside the float range, and only when ``s`` is within :data:`_FAR_BELOW_SD` standard
    deviations below the mean or above it (further below, ``P(N <= s)`` is 0 in double
    precision) and below :data:`PANJER_MAX_STEPS` (beyond, the normal law).
    Then ``E[(N - s)^+] = E[N] - s + Σ_{n<=s} (s - n) p(n)``.
    """
    means = np.asarray(means, dtype=float)
    s = int(spare_units)
    k = np.arange(means.size)
    mean = float(np.dot(k, means))
    sd = math.sqrt(float(np.dot(k * k, means)))
    if np.count_nonzero(means[2:]) == 0:  # singles only: a Poisson count
        mu = float(means[1]) if means.size > 1 else 0.0
        p_above = float(scipy.stats.poisson.sf(s, mu))
        shortfall = mu * float(scipy.stats.poisson.sf(s - 1, mu)) - s * p_above if s > 0 else mu
        return {"p_stockout": min(1.0, max(0.0, p_above)), "mean_shortfall": max(0.0, shortfall)}
    if s < mean - _FAR_BELOW_SD * sd:
        return {"p_stockout": 1.0, "mean_shortfall": mean - s}
    if s > mean + _FAR_BELOW_SD * sd * max(1.0, 8.0 * means.size / max(sd, 1.0)):
        return {"p_stockout": 0.0, "mean_shortfall": 0.0}  # far above the bulk (batches of up to g units)
    if s >= PANJER_MAX_STEPS:  # a bulk this far from 0 is a sum of many Poisson counts: the normal law
        z = (s + 0.5 - mean) / sd
        return {"p_stockout": float(scipy.stats.norm.sf(z)),
                "mean_shortfall": max(0.0, sd * float(scipy.stats.norm.pdf(z)) - (s + 0.5 - mean) * float(scipy.stats.norm.sf(z)))}
    kmu = (k * means)[1:]  # k μ_k for k = 1..g
    g = kmu.size
    q = np.zeros(s + 1)  # p(n) = q[n] * exp(log_scale)
    q[0], log_scale = 1.0, -float(means[1:].sum())
    below, below_n = 1.0, 0.0  # Σ q(n), Σ n q(n) over n <= s, in the current scale
    for n in range(1, s + 1):
        j = min(n, g)
        q[n] = float(np.dot(kmu[:j], q[n - 1::-1][:j])) / n
        below += q[n]
        below_n += n * q[n]
        if q[n] > _RESCALE:  # shift the scale: only the last g terms are still needed
            lo = max(0, n - g)
            q[lo : n + 1] /= _RESCALE
            below, below_n = below / _RESCALE, below_n / _RESCALE
            log_scale += math.log(_RESCALE)
    p_at_most = math.exp(math.log(below) + log_scale)
    spare_left = s * below - below_n  # Σ (s - n) q(n) >= 0
    shortfall = mean - s + (math.exp(math.log(spare_left) + log_scale) if spare_left > 0 else 0.0)
    return {"p_stockout": min(1.0, max(0.0, 1.0 - p_at_most)), "mean_shortfall": max(0.0, shortfall)}


def cluster_reference(instances: int, instance_gpus: int, gpus_per_host: int, host_mode: bool,
                      gpu_perm_rate: float, gpu_transient_rate: float, host_perm_rate: float,
                      host_transient_rate: float, swap_hours: float, restart_hours: float,
                      repair_parts: list[tuple], spare_units: int, unlimited_crews: bool, host_units: bool = False,
                      host_swap_hours: float = 0.0, nic_perm_rate: float = 0.0, nic_swap_hours: float = 0.0,
                      module_rate: float = 0.0, module_swap_hours: float = 0.0) -> dict:
    """Renewal-theory reference values of a whole cluster (long-run rates, no stock-out).

    With ``host_units`` (``reliability.host_failure = "host"``) a host failure costs its
    instances one ``host_swap_hours`` + restart and counts no GPU; a permanent NIC failure
    (``nic_perm_rate`` per GPU) costs one ``nic_swap_hours`` + restart, and a module failure
    (``module_rate`` per GPU, docs/model.md#modules) one ``module_swap_hours`` + restart
    (an ample module pool); neither counts a GPU failure.

    Each instance ``i`` sees permanent events at ``Λ_p,i`` and restart-only ones at
    ``Λ_t,i``, counting every host with a GPU of ``i`` (gpu mode: ``n λ_g + Σ λ_h``;
    host mode: ``Σ (λ_h + g_k λ_g)`` with ``g_k`` the host's active GPUs), and has
    ``A_i`` from :func:`ample_pool_availability`. Weibull classes enter at their
    long-run renewal rate ``1/MTTF`` (elementary renewal theorem, docs/sources.md#rel-renewal), so for a
    wear-out class over a short horizon these overstate the failures.

    Returns
    -------
    dict
        ``availability_no_stockout`` (mean of ``A_i``), ``interruptions_per_year``
        (``Σ (Λ_p,i + Λ_t,i) A_i``), ``failures_per_year`` (a host failure counts its
        GPUs), and with unlimited crews ``p_stockout`` and ``mean_shortfall`` of
        :func:`batch_mginf_stockout` (gpu mode: host failures are batches of a full
        host's GPUs; host mode: every failure is one host unit).
    """
    active = instances * instance_gpus
    first_host = np.arange(instances) * instance_gpus // gpus_per_host
    last_host = ((np.arange(instances) + 1) * instance_gpus - 1) // gpus_per_host
    hosts_touched = last_host - first_host + 1
    perm = np.zeros(instances)
    hostly = np.zeros(instances)  # host units: host failures per hour touching the instance
    for offset in range(int(hosts_touched.max())):
        k = first_host + offset
        on = k <= last_host
        g_k = np.minimum((k + 1) * gpus_per_host, active) - k * gpus_per_host
        if host_units:
            hostly += np.where(on, host_perm_rate, 0.0)
        else:
            perm += np.where(on, host_perm_rate + (g_k * gpu_perm_rate if host_mode else 0.0), 0.0)
    if not host_mode:
        perm += instance_gpus * gpu_perm_rate
    transient = instance_gpus * gpu_transient_rate + hosts_touched * host_transient_rate
    nic = instance_gpus * nic_perm_rate
    module = instance_gpus * module_rate
    avail = 1.0 / (1.0 + perm * (swap_hours + restart_hours) + transient * restart_hours
                   + hostly * (host_swap_hours + restart_hours) + nic * (nic_swap_hours + restart_hours)
                   + module * (module_swap_hours + restart_hours))
    out = {
        "availability_no_stockout": float(avail.mean()),
        "interruptions_per_year": float(np.sum((perm + transient + hostly + nic + module) * avail) * HOURS_PER_YEAR),
        "failures_per_year": active * (gpu_perm_rate + (0.0 if host_units else host_perm_rate)) * HOURS_PER_YEAR,
    }
    if unlimited_crews:
        hosts = -(-active // gpus_per_host)
        if host_units:  # only GPUs draw on the GPU pool
            stock = batch_mginf_stockout(active * gpu_perm_rate, 0.0, gpus_per_host, repair_parts, spare_units)
        elif host_mode:
            stock = batch_mginf_stockout(hosts * host_perm_rate + active * gpu_perm_rate, 0.0, 1, repair_parts, spare_units)
        else:
            stock = batch_mginf_stockout(active * gpu_perm_rate, hosts * host_perm_rate, gpus_per_host, repair_parts, spare_units)
        out.update(stock)
    return out


#: A repair law under which no repair completes within the horizon: P(R <= T) below this.
NEVER_REPAIRED = 1e-12


def _time_average(f, p, horizon_hours: float, settle_hours: float) -> float:
    """``(1/T) ∫_0^T f(p(t)) dt``, by quadrature up to ``settle_hours`` and at ``p(settle)`` beyond."""
    settle = min(horizon_hours, settle_hours)
    head, _ = scipy.integrate.quad(lambda t: f(p(t)), 0.0, settle, epsabs=1e-13, epsrel=1e-11, limit=200)
    return (head + f(p(settle)) * (horizon_hours - settle)) / horizon_hours


def reshard_share(in_place: float, capacity: np.ndarray) -> float:
    """``Σ_k C(n,k) (1-a)^k a^(n-k) capacity[k]``: the expected share of throughput of an
    instance of ``n = len(capacity) - 1`` GPUs each in place with probability ``a``,
    serving ``capacity[k]`` with ``k`` lost (docs/sources.md#rel-no-spares)."""
    n = capacity.size - 1
    return float(np.dot(scipy.stats.binom.pmf(np.arange(n + 1), n, 1.0 - in_place), capacity))


def no_spares_in_place(horizon_hours: float, exp_rate: float, groups: list[tuple[float, float]], long_run_rate: float,
                       repair_parts: list[tuple], mean_repair_hours: float, n: int, capacity: np.ndarray | None = None) -> dict:
    """Time-averaged probability that all ``n`` GPUs of an instance hold a unit, with no
    spare pool and unlimited crews (docs/sources.md#rel-no-spares).

    Each GPU position is then an alternating process: up for a life of the series law
    ``S(t) = exp(-exp_rate t - Σ (t/eta_g)^k_g)``, empty while its failed unit is
    repaired (the repaired unit refills a waiting slot; by symmetry the count of empty
    slots is that of independent positions). ``P(all n in place at t) = p(t)^n``, averaged
    over ``[0, T]``:

    * ``"never repaired"``: no repair completes within the horizon (``P(R <= T) <
      NEVER_REPAIRED``), so ``p(t) = S(t)`` and the value is the time-averaged survival
      of the minimum of ``n`` lives (:func:`series_mean_survival`);
    * ``"exponential"``: exponential lives (no Weibull group) and one exponential repair
      law: ``p(t) = a + (1 - a) e^(-(λ + μ) t)``, ``a = μ / (λ + μ)``, by quadrature;
    * ``"long-run"`` otherwise: ``a^n`` with ``a = 1 / (1 + long_run_rate E[R])``
      (alternating renewal, any laws; exact as ``T`` grows).

    With ``capacity`` (``float64[n + 1]``, the share of throughput served with ``k`` GPUs
    lost: ``cluster.on_failure = "reshard"`` with no re-layout time) also ``capacity``:
    the time average of :func:`reshard_share` of ``p(t)``.

    Returns
    -------
    dict
        ``in_place`` (the average), ``basis`` (which of the three cases) and, with
        ``capacity``, ``capacity``.
    """
    mean_repair = mean_repair_hours
    fs = {"in_place": lambda p: p**n}
    if capacity is not None:
        fs["capacity"] = lambda p: reshard_share(p, capacity)
    if float(repair_survival(repair_parts, horizon_hours)) > 1.0 - NEVER_REPAIRED:
        every = [(k, eta * n ** (-1.0 / k)) for k, eta in groups]
        out = {"in_place": series_mean_survival(horizon_hours, n * exp_rate, every), "basis": "never repaired"}
        if capacity is not None:
            def survival(t):
                return math.exp(-exp_rate * t - sum((t / eta) ** k for k, eta in groups))
            out["capacity"] = _time_average(fs["capacity"], survival, horizon_hours, horizon_hours)
        return out
    if not groups and len(repair_parts) == 1 and repair_parts[0][1] == "exponential" and mean_repair > 0.0:
        lam, mu = exp_rate, 1.0 / mean_repair
        a = mu / (lam + mu)

        def p(t):
            return a + (1.0 - a) * math.exp(-(lam + mu) * t)
        settle = 50.0 / (lam + mu)  # the transient is over by then (e^-50)
        return {**{name: _time_average(f, p, horizon_hours, settle) for name, f in fs.items()}, "basis": "exponential"}
    a = 1.0 / (1.0 + long_run_rate * mean_repair)
    return {**{name: f(a) for name, f in fs.items()}, "basis": "long-run"}
