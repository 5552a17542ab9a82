"""Closed forms of a workload mix: request classes sharing one cluster (docs/model.md#mix).

Plain NumPy, vectorised over trials. Class ``c`` has request share ``r_c`` (normalised so
that the shares sum to 1), ``O_c`` output tokens per request and, on an instance that
serves only that class with the plan chosen for it, ``T_c`` output tokens/s.

Sharing rule: every instance serves one class (no instance is shared between classes);
the cluster's instances are split among the classes in proportion to the instance time
each class's demand needs, taken as a continuous share (whole-instance rounding is not
modelled: load moves between instances over time). Per output token of the mix, class
``c`` supplies the share ``w_c = r_c O_c / sum_k r_k O_k`` and needs ``1/T_c`` instance
seconds per token, so::

    instance share  s_c = (w_c / T_c) / sum_k (w_k / T_k)
    mix rate        T   = 1 / sum_k (w_k / T_k)        (the w-weighted harmonic mean)

A class that no plan serves (``T_c = 0``) leaves the mix unserved (``T = 0``). The mix's
mean output tokens per request is ``sum_c r_c O_c``: the cost per request is the cost
per output token times it.
"""

from __future__ import annotations

import numpy as np


def normalised_shares(shares: list[np.ndarray]) -> list[np.ndarray]:
    """Request shares ``r_c / sum_k r_k`` per trial (every ``r_c`` > 0)."""
    total = sum(shares[1:], np.asarray(shares[0], float))
    return [np.asarray(r, float) / total for r in shares]


def output_token_weights(shares: list[np.ndarray], output_tokens: list[int]) -> list[np.ndarray]:
    """Share of the mix's output tokens from each class, ``w_c = r_c O_c / sum_k r_k O_k``."""
    tokens = [np.asarray(r, float) * o for r, o in zip(shares, output_tokens)]
    total = sum(tokens[1:], tokens[0])
    return [t / total for t in tokens]


def mean_output_tokens(shares: list[np.ndarray], output_tokens: list[int]) -> np.ndarray:
    """Output tokens per request of the mix, ``sum_c r_c O_c`` (normalised shares)."""
    tokens = [np.asarray(r, float) * o for r, o in zip(shares, output_tokens)]
    return sum(tokens[1:], tokens[0])


def instance_seconds_per_token(weights: list[np.ndarray], rates: list[np.ndarray]) -> list[np.ndarray]:
    """Instance seconds each class needs per output token of the mix, ``w_c / T_c``,
    relative to the fastest class's ``1/T_max`` (``w_c T_max / T_c``; ``inf`` where
    ``T_c = 0``). Relative so that one class gives exactly ``1``."""
    fastest = np.maximum.reduce([np.asarray(t, float) for t in rates])
    out = []
    for w, t in zip(weights, rates):
        t = np.asarray(t, float)
        ratio = np.divide(fastest, t, out=np.full(np.broadcast(fastest, t).shape, np.inf), where=t > 0)
        out.append(np.asarray(w, float) * ratio)
    return out


def mix_rate(weights: list[np.ndarray], rates: list[np.ndarray]) -> np.ndarray:
    """The mix's output tokens/s per instance, ``1 / sum_c (w_c / T_c)``, written
    ``T_max / sum_c (w_c T_max / T_c)`` (one class: ``T`` to the bit); 0 where a class
    with demand has ``T_c = 0``."""
    fastest = np.maximum.reduce([np.asarray(t, float) for t in rates])
    need = instance_seconds_per_token(weights, rates)
    total = sum(need[1:], need[0])
    return np.divide(fastest, total, out=np.zeros_like(total), where=np.isfinite(total))


def instance_shares(weights: list[np.ndarray], rates: list[np.ndarray]) -> list[np.ndarray]:
    """Share of the cluster's instances serving each class, ``(w_c/T_c) / sum_k (w_k/T_k)``
    (one class: exactly 1). Where some class is unserved (``T_c = 0``), the shares are
    those of the request-weighted demand ``w_c`` (the split is moot: no tokens)."""
    need = instance_seconds_per_token(weights, rates)
    total = sum(need[1:], need[0])
    served = np.isfinite(total)
    return [np.where(served, np.divide(n, total, out=np.zeros_like(total), where=served), w) for n, w in zip(need, weights)]


#: Relative round-off allowed when ``z a_c`` lands on a whole number of instances: ``z``
#: is computed as ``n / a_c``, so ``z a_c`` is ``n`` up to a few ulps.
WHOLE_ROUNDOFF = 1e-12


def _instances_for(z: np.ndarray, need: np.ndarray) -> np.ndarray:
    """Whole instances a class with relative need ``need`` takes at mix rate ``z``: ``ceil(z need)``
    (a product within :data:`WHOLE_ROUNDOFF` of a whole number counts as that number)."""
    x = z * need
    return np.ceil(x - x * WHOLE_ROUNDOFF)


def whole_instance_rate(weights: list[np.ndarray], rates: list[np.ndarray], instances: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """The mix served on whole instances: (the share of the continuous mix rate it keeps,
    the whole instances of each class), per trial (docs/model.md#mix).

    Every class gets whole instances, at least one; the mix keeps its token proportions,
    so the cluster serves the rate ``z`` of its slowest class, the largest ``z`` with
    ``sum_c ceil(z a_c) <= N`` (``a_c = w_c / T_c``, here relative to the fastest class:
    :func:`instance_seconds_per_token`; ``N`` = ``instances``). That ``z`` is ``n / a_c``
    for some class ``c`` with ``n`` whole, and since ``z_cont (1 - C/N) <= z <= z_cont``
    (``z_cont = N / sum a``: rounding each of the ``C`` classes up costs at most one
    instance each) ``n`` lies in ``[N s_c - C, N s_c]`` (``s_c`` the continuous share):
    ``C + 1`` candidates per class, each checked, so the work grows with the classes
    only. The kept share is ``z sum_c a_c / N`` (1 when every ``N s_c`` is whole); a
    class's instances are ``ceil(z a_c)``, and ``N - sum_c`` of them are left over (they
    cannot raise the slowest class's rate alone). Unserved (some ``T_c = 0``) or fewer
    instances than classes: 0 and no instances."""
    need = instance_seconds_per_token(weights, rates)
    total = sum(need[1:], need[0])
    served = np.isfinite(total) & (instances >= len(need))
    safe = [np.where(served, a, 1.0) for a in need]
    total = np.where(served, total, 1.0)
    whole = float(instances)
    best = np.zeros_like(total)
    for a in safe:
        top = np.floor(whole * a / total)
        for step in range(len(safe) + 1):
            n = top - step
            z = np.divide(n, a, out=np.zeros_like(a), where=n >= 1)
            fits = sum(_instances_for(z, b) for b in safe) <= whole
            best = np.where(served & (n >= 1) & fits, np.maximum(best, z), best)
    kept = np.where(served, best * total / whole, 0.0)
    return kept, [np.where(served, _instances_for(best, a), 0.0) for a in safe]


def whole_split(total, weights: list[np.ndarray], least: int = 0) -> list[np.ndarray]:
    """``total`` whole instances split among the classes in proportion to ``weights``
    (per trial; any positive scale), by largest remainder (Hamilton's method): each class
    first takes ``least`` (where ``total`` holds ``least`` for every class, else none),
    then ``floor(R w_c / sum w)`` of the ``R`` left, and the instances still left go one
    each to the classes of largest fractional part (the first class on a tie). The counts
    sum to ``total`` exactly; equal weights and a ``total`` divisible by the classes give
    equal counts. Where every weight is 0, the split is equal (largest remainder again)."""
    total = np.asarray(total, float)
    w = np.array(np.broadcast_arrays(*(np.asarray(x, float) for x in weights)), float)  # (C, n)
    classes = w.shape[0]
    w = np.where(w.sum(axis=0) > 0, w, 1.0)
    base = np.where(total >= least * classes, float(least), 0.0)
    rest = total - base * classes
    exact = rest * w / w.sum(axis=0)
    count = np.floor(exact)
    left = (rest - count.sum(axis=0)).astype(np.int64)  # fewer than C
    order = np.argsort(-(exact - count), axis=0, kind="stable")  # largest fractional part first
    count = count + (np.argsort(order, axis=0, kind="stable") < left)  # each class's rank in that order
    return list(base + count)
