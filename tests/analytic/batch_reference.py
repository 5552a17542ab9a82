"""The disaggregated prefill pool's mean batch as :func:`mcengine.analytic.queueing.batch_queue`
solved it before its exact solve: :data:`OLD_STEPS` damped fixed-point steps from 1. A
reference the tests check the solve against (docs/load.md#speed)."""
import numpy as np

from mcengine.analytic.queueing import RHO_WAIT_MAX, BatchQueue, _gap_batch, _linear, _waited_alone, _waited_arrivals, erlang_c

#: The damped fixed point's step count.
OLD_STEPS = 48


def _state(k, lam, servers, cycle_1, cycle_top, top, burst):
    """The probability of waiting and the gap (s) at the mean batch ``k``."""
    cycle = _linear(cycle_1, cycle_top, top, k)
    u = np.minimum(lam * cycle / (k * servers), RHO_WAIT_MAX)
    u = 1.0 - (1.0 - u) / np.sqrt(burst)
    return erlang_c(servers, u * servers), cycle / servers


def damped_mean_batch(rate_per_s, servers, cycle_1, cycle_top, top, arrival_cv=1.0, steps=OLD_STEPS) -> np.ndarray:
    """The mean batch ``k``: ``steps`` steps of ``k <- (k + 1 - C + C min(top, 1 + lambda g)) / 2`` from 1."""
    lam = np.asarray(rate_per_s, float)
    k = np.ones(np.broadcast(lam, servers, cycle_1, cycle_top, top, arrival_cv).shape)
    burst = (1.0 + np.asarray(arrival_cv, float) ** 2) / 2.0
    for _ in range(steps):
        c, gap = _state(k, lam, servers, cycle_1, cycle_top, top, burst)
        k = 0.5 * k + 0.5 * (1.0 - c + c * np.minimum(top, 1.0 + lam * gap))
    return k


def damped_batch_queue(rate_per_s, servers, cycle_1, cycle_top, top, arrival_cv=1.0) -> BatchQueue:
    """The batch queue at :func:`damped_mean_batch`'s ``k``, as ``batch_queue`` returned it."""
    lam = np.asarray(rate_per_s, float)
    burst = (1.0 + np.asarray(arrival_cv, float) ** 2) / 2.0
    k = damped_mean_batch(rate_per_s, servers, cycle_1, cycle_top, top, arrival_cv)
    c, gap = _state(k, lam, servers, cycle_1, cycle_top, top, burst)
    extra = np.minimum(np.maximum(burst - 1.0, 0.0), np.asarray(top, float) - 1.0)
    arrivals = _waited_arrivals(lam, c, gap, servers, cycle_1, cycle_top, top)
    waited = _gap_batch(arrivals, top, extra)
    return BatchQueue(waited, 1.0 - c + c * waited, c, gap * burst, extra, _waited_alone(arrivals))
