"""The slot queue (docs/load.md#queue): a request's slot time and the utilisation at SLO in
closed form, the mode-blind reference the per-mode models replaced (a workload mix's latency
included: each class now has its own plan's per-mode model, `stages.load`); kept for the
queue's own inversion tests."""
import numpy as np

from mcengine.analytic.queueing import erlang_c, wait_quantile, wait_scale_s


def slot_time_s(batch, output_tokens, tokens_per_s) -> np.ndarray:
    """Seconds a request holds one of ``batch`` slots on an instance delivering
    ``tokens_per_s`` at full occupancy: ``B O / T`` (``+inf`` where ``T = 0``)."""
    b, o, t = (np.asarray(x, float) for x in (batch, output_tokens, tokens_per_s))
    out = np.full(np.broadcast(b, o, t).shape, np.inf)
    np.divide(b * o, t, out=out, where=t > 0)
    return out


def ttft_quantile_ms(q, unloaded_ttft_ms, batch, slot_s, rho, arrival_cv, service_cv) -> np.ndarray:
    """TTFT at quantile ``q`` (ms): the unloaded TTFT plus the wait for a slot (`queueing.wait_quantile`)."""
    return np.asarray(unloaded_ttft_ms, float) + 1e3 * wait_quantile(q, batch, slot_s, rho, arrival_cv, service_cv)


def utilisation_sure(q, slo_ms, unloaded_ttft_ms, servers, service_s, arrival_cv, service_cv) -> np.ndarray:
    """The wait formula inverted with Erlang C taken as 1 (the wait's upper bound): the
    utilisation ``1 - 1e3 h ln(1 / (1 - q)) / (slo - t0)`` at which that bound of the TTFT
    quantile reaches ``slo_ms``, ``h`` `queueing.wait_scale_s` at no load (s); at or below it
    :func:`ttft_quantile_ms` always meets the SLO (below 0: at no load)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = 1e3 * wait_scale_s(servers, service_s, 0.0, arrival_cv, service_cv) * np.log(1.0 / (1.0 - np.asarray(q, float)))
        return 1.0 - bound / (np.asarray(slo_ms, float) - unloaded_ttft_ms)


#: Steps of :func:`utilisation_at_slo`'s root search (a fixed count: run time never grows
#: with a value; the bracketed secant converges superlinearly, to a float's resolution of
#: the utilisation on most plans; on a sample of 20,000 random plans the largest shortfall
#: against a 60-step bisection is 4e-10 of the utilisation, always on the side that meets the SLO).
ROOT_STEPS = 24


def illinois_point(lo, hi, f_lo, f_hi) -> np.ndarray:
    """The next probe of a bracket ``[lo, hi]`` whose function is ``f_lo <= 0 < f_hi`` at its
    ends: the secant's root (regula falsi), or the middle where that is not strictly inside."""
    with np.errstate(divide="ignore", invalid="ignore"):
        mid = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
    return np.where((mid > lo) & (mid < hi), mid, 0.5 * (lo + hi))


def illinois_step(lo, hi, f_lo, f_hi, side, mid, f_mid) -> tuple[np.ndarray, ...]:
    """One Illinois step (regula falsi halving the value of an end kept twice in a row) of
    brackets ``[lo, hi]`` with values ``f_lo <= 0 < f_hi`` probed at ``mid`` (``f_mid``):
    the new ``(lo, hi, f_lo, f_hi, side)``, ``side`` 1 where the probe met (``f <= 0``),
    -1 where it did not."""
    meets = f_mid <= 0.0
    f_hi = np.where(meets & (side > 0), 0.5 * f_hi, f_hi)  # the end kept twice in a row is halved (Illinois)
    f_lo = np.where(~meets & (side < 0), 0.5 * f_lo, f_lo)
    lo, f_lo = np.where(meets, mid, lo), np.where(meets, f_mid, f_lo)
    hi, f_hi = np.where(meets, hi, mid), np.where(meets, f_hi, f_mid)
    return lo, hi, f_lo, f_hi, np.where(meets, 1.0, -1.0)


def utilisation_at_slo(q, slo_ms, unloaded_ttft_ms, batch, slot_s, arrival_cv, service_cv) -> np.ndarray:
    """The largest utilisation at which :func:`ttft_quantile_ms` meets ``slo_ms``: 1 for
    an infinite SLO, 0 where the unloaded TTFT already misses it. With ``h`` the wait's
    Allen-Cunneen scale at no load in ms (`queueing.wait_scale_s`, so ``h / (1 - rho)`` under
    load) and ``C`` Erlang C, the SLO holds where ``f(rho) = ln(C(rho) / (1 - q)) - (slo -
    t0)(1 - rho) / h <= 0``; ``f`` rises with ``rho``, from at most 0 at the wait formula
    inverted with ``C = 1`` (:func:`utilisation_sure`, a utilisation that always meets the
    SLO; 0 where that is below 0) to ``ln(1 / (1 - q)) > 0`` at 1. The bracket is narrowed by
    :data:`ROOT_STEPS` steps of the Illinois method (regula falsi halving the value of an
    end kept twice in a row), and its lower end, which meets the SLO, is returned."""
    scale = 1e3 * wait_scale_s(batch, slot_s, 0.0, arrival_cv, service_cv)
    shape = np.broadcast_shapes(*(np.shape(x) for x in (q, slo_ms, unloaded_ttft_ms, batch, scale)))

    def flat(x):
        return np.broadcast_to(np.asarray(x, float), shape).ravel()

    slo, c, miss, scale = flat(slo_ms), flat(batch), flat(1.0 - np.asarray(q, float)), flat(scale)
    budget = slo - flat(unloaded_ttft_ms)
    rho = np.where(np.isinf(slo), 1.0, 0.0)
    solve = np.flatnonzero(np.isfinite(budget) & (budget >= 0.0) & np.isfinite(scale))
    b, h, k, m = budget[solve], scale[solve], c[solve], miss[solve]

    def f(r):
        with np.errstate(divide="ignore"):
            return np.log(erlang_c(k, r * k) / m) - b * (1.0 - r) / h

    lo, hi = np.clip(flat(utilisation_sure(q, slo_ms, unloaded_ttft_ms, batch, slot_s, arrival_cv, service_cv))[solve], 0.0, 1.0), np.ones(b.size)
    f_lo, f_hi, side = f(lo), -np.log(m), np.zeros(b.size)
    for _ in range(ROOT_STEPS):
        mid = illinois_point(lo, hi, f_lo, f_hi)
        lo, hi, f_lo, f_hi, side = illinois_step(lo, hi, f_lo, f_hi, side, mid, f(mid))
    rho[solve] = lo
    return rho.reshape(shape)
