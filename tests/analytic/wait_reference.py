"""The disaggregated queue wait's fixed point solved the nested way (docs/load.md#disaggregated):
bracketed Illinois steps in the index of dispersion ``I``, each step a
:func:`tests.analytic.ratio_reference.queue_ratio` solve: the reference that the model's
solver, one equation in the ratio (:func:`mcengine.analytic.queueing._self_consistent_wait`),
is tested against."""
import numpy as np

from tests.analytic.ratio_reference import queue_ratio

#: Most Illinois steps of :func:`nested_wait` (the halving a step falls back to reaches
#: 2^-60 of the bracket).
DISPERSION_STEPS = 60

#: The bracket's width at which :func:`nested_wait` takes a trial's index of dispersion as
#: solved.
DISPERSION_TOLERANCE = 1e-12


def nested_wait(lam, arrival_cv, g, top, pass_s, at_least):
    """The longer of ``at_least`` and :func:`mcengine.analytic.queueing._queue_wait`'s fixed
    point (flat arrays: arrivals/s, arrival CV, gap ``g``, prompts a pass, pass ``T``, the
    floor): the wait ``W(I) = g / (1 - z_I^P)`` (:func:`queue_ratio`) at the root ``I`` in
    ``[0, 1]`` of ``phi(I) = 1 - W(I) / T - I``, ``W(0)`` where ``phi(0) <= 0`` (a wait of
    a pass or more: ends as regular as the passes). ``phi`` falls strictly (``W`` rises with ``I``), so the root is unique. The
    bracket starts at ``[I_1, 1]``, ``I_1 = max(0, 1 - W(1) / T)`` (the window of Poisson
    ends' wait: ``phi(I_1) = (W(1) - W(I_1)) / T >= 0`` where ``I_1 > 0``, ``phi(1) = -W(1)
    / T < 0``); the Illinois variant of false position (M. Dowell and P. Jarratt, *BIT* 11,
    168-174, 1971: the end kept twice running has its value halved) steps inside it, a step
    outside the open bracket halving it instead, each trial frozen once its bracket is
    narrower than :data:`DISPERSION_TOLERANCE` (so its answer is its own, whatever else the
    array holds), :data:`DISPERSION_STEPS` steps at most. The wait returned is the last one
    evaluated, ``T (1 - I - phi(I))``; ``at_least`` where ``W(1)`` is at most that (``W <=
    W(1)``), the steps left out there."""
    def phi(i, rows):
        with np.errstate(divide="ignore", invalid="ignore"):
            wait = g[rows] / (1.0 - queue_ratio(lam[rows], arrival_cv[rows], g[rows], top[rows], i) ** top[rows])
        return np.where(np.isfinite(wait), 1.0 - wait / pass_s[rows] - i, -np.inf)

    out = np.array(at_least, float)
    f_hi = phi(np.ones(lam.size), np.arange(lam.size))
    live = np.flatnonzero(~(-f_hi * pass_s <= at_least))  # W(1) = -T phi(1) above the floor
    lo = np.maximum(1.0 + f_hi[live], 0.0)  # I_1 = 1 - W(1) / T
    f_lo = phi(lo, live)
    out[live] = np.maximum(pass_s[live] * (1.0 - lo - f_lo), at_least[live])  # W(I_1): the answer where I_1 = 0 and phi(0) <= 0
    on = (f_lo > 0.0) & (1.0 - lo > DISPERSION_TOLERANCE)
    live, lo, hi, f_lo, f_hi = live[on], lo[on], np.ones(on.sum()), f_lo[on], f_hi[live[on]]
    kept = np.zeros(live.size)  # the end the last step kept: +1 the high, -1 the low, 0 none
    for _ in range(DISPERSION_STEPS):
        if live.size == 0:
            break
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            guess = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
        x = np.where((guess > lo) & (guess < hi), guess, 0.5 * (lo + hi))
        f = phi(x, live)
        up = f > 0.0  # the root lies above x: x the new low end, the high end kept
        f_hi = np.where(up & (kept > 0.0), 0.5 * f_hi, f_hi)
        f_lo = np.where(~up & (kept < 0.0), 0.5 * f_lo, f_lo)
        lo, f_lo = np.where(up, x, lo), np.where(up, f, f_lo)
        hi, f_hi = np.where(up, hi, x), np.where(up, f_hi, f)
        kept = np.where(up, 1.0, -1.0)
        out[live] = np.maximum(pass_s[live] * (1.0 - x - f), at_least[live])
        on = (hi - lo > DISPERSION_TOLERANCE) & (f != 0.0)
        live, lo, hi, f_lo, f_hi, kept = live[on], lo[on], hi[on], f_lo[on], f_hi[on], kept[on]
    return out
