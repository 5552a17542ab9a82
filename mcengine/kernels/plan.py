"""The per-trial planner's candidate table of disaggregated pairs, and its choice, as
single passes (:func:`mcengine.stages.roofline.planner.plan_per_trial`, docs/model.md#plan),
and the lower bounds of the plans' costs with a fleet bought under a demand
(:func:`fleet_bounds`, docs/load.md#planner).

Model
-----
Each trial serves the first plan, in candidate order, with the largest objective: the
served output tokens/s ``T`` of the instance (``workload.plan_objective =
"throughput"``), or ``T / (1 + k u)`` with ``k`` the trial's econ weight and ``u`` the
plan's busy fraction (``"cost"``, the least cost per token). A NaN objective counts as
the largest, and the first NaN wins, as ``np.argmax`` has it. Done with NumPy this is
three array operations, an ``argmax`` and gathers over every (plan, trial) pair; here
it is one pass that reads each pair once and writes nothing but the running best.
A decode layout's pairs with every prefill layout (:func:`disaggregated_rows`) are
likewise a dozen (prefill layouts, trials) array operations in NumPy, one pass here.
The arithmetic is NumPy's, operation by operation (no fast-math, no fused multiply-add),
so every number and the choice are the same to the bit.
"""

from __future__ import annotations

import numpy as np

from ..jit import kernel


@kernel
def fold_best(served, busy, weight, by_cost, offset, best, value, chosen):
    """Fold the rows of one block of the candidate table into each trial's running best.

    ``served``, ``busy``: float64 (r, n), rows ``offset .. offset + r - 1`` of the table
    (``-inf`` served where a plan does not serve); ``weight``: float64 (n,), the trials'
    ``k`` (read only with ``by_cost``). ``best`` (int64), ``value`` and ``chosen``
    (float64), all (n,): the row, objective and served tokens/s of the best row so far,
    replaced by a row whose objective is larger, or NaN where the best's is not (rows in
    order, so exact ties keep the earlier row).
    """
    rows, n = served.shape
    for k in range(rows):
        for i in range(n):
            x = served[k, i]
            if by_cost:
                x = x / (1.0 + weight[i] * busy[k, i])
            v = value[i]
            if x > v or (x != x and v == v):
                best[i] = offset + k
                value[i] = x
                chosen[i] = served[k, i]


@kernel
def disaggregated_rows(r_p, r_d, output_tokens, pre_ok, serves, pre_busy, pre_total, decode_busy, decode_total, served, busy):
    """One decode layout paired with every prefill layout (rows) at each trial's balanced
    prefill share (:class:`mcengine.stages.roofline.serving.Disaggregated`'s properties,
    with :func:`mcengine.analytic.serving.prefill_share` and
    :func:`~mcengine.analytic.serving.disaggregated_tokens_per_s` operation by operation):
    ``f = r_d / (r_p + r_d)``; ``served`` the output tokens/s ``min((1 - f) r_d O, f r_p
    O)`` (``np.minimum``: a NaN operand gives NaN) where the prefill pass fits and meets
    TTFT (``pre_ok``) and the decode serves the trial (``serves``), else ``-inf``;
    ``busy`` the GPU-weighted busy fraction ``f u_p / t_p + (1 - f) u_d / t_d``.

    ``r_p``, ``pre_ok``, ``pre_busy``, ``pre_total``: (r, n), per prefill layout and trial
    (prompts/s after the KV send cap, fit and TTFT, a pass's busy and total seconds);
    ``r_d``, ``output_tokens``, ``serves``, ``decode_busy``, ``decode_total``: (n,) (the
    decode's requests/s after the KV receive cap, ``O``, its fit and SLOs, a step's busy
    and total seconds). ``served``, ``busy``: (r, n) outputs.
    """
    rows, n = r_p.shape
    for k in range(rows):
        for i in range(n):
            rp, rd, o = r_p[k, i], r_d[i], output_tokens[i]
            f = rd / (rp + rd)
            decoded = (1.0 - f) * (rd * o)
            supplied = f * rp * o
            tokens = decoded if (decoded < supplied or decoded != decoded) else supplied
            served[k, i] = tokens if (pre_ok[k, i] and serves[i]) else -np.inf
            busy[k, i] = f * pre_busy[k, i] / pre_total[k, i] + (1.0 - f) * decode_busy[i] / decode_total[i]


@kernel
def fleet_bounds(served, busy, mask, weight, by_cost, rate, output_tokens, bound, first):
    """The lower bound of each plan's cost of a fleet bought per trial, and each trial's
    plan of least bound, in one pass (:func:`mcengine.stages.roofline.planner_load._fleet_choice`,
    with its NumPy arithmetic operation by operation): ``max(ceil(rate / (T / O)), 1)``,
    the instances the peak of ``rate`` requests/s saturates at ``T / O`` requests/s an
    instance, plus, with ``by_cost``, the dynamic energy ``weight busy / T`` in instances'
    worth, where ``mask`` (the plan serves the trial), else ``+inf``.

    ``served`` (``T``), ``busy``: float64 (r, n); ``mask``: bool (r, n); ``weight``,
    ``rate``, ``output_tokens`` (``O``): float64 (n,) (``weight`` read only with
    ``by_cost``). Outputs: ``bound`` float64 (r, n) and ``first`` int64 (n,), each trial's
    first row of least bound (a NaN bound counts as the least and the first NaN wins, as
    ``np.argmin`` has it; row 0 where every bound is ``+inf``).
    """
    rows, n = served.shape
    least = np.empty(n)
    for k in range(rows):
        for i in range(n):
            x = np.inf
            if mask[k, i]:
                x = np.ceil(rate[i] / (served[k, i] / output_tokens[i]))
                if x < 1.0:
                    x = 1.0
                if by_cost:
                    x = x + weight[i] * busy[k, i] / served[k, i]
            bound[k, i] = x
            v = least[i]
            if k == 0 or x < v or (x != x and v == v):
                first[i] = k
                least[i] = x
