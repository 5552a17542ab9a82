"""The per-trial planner's choice as one pass over its candidate table
(:func:`mcengine.stages.planner.plan_per_trial`, docs/model.md#plan).

Model
-----
Each trial serves the first plan, in candidate order, with the largest objective: the
served output tokens/s ``T`` of the instance (``workload.plan_objective =
"throughput"``), or ``T / (1 + k u)`` with ``k`` the trial's econ weight and ``u`` the
plan's busy fraction (``"cost"``, the least cost per token). A NaN objective counts as
the largest, and the first NaN wins, as ``np.argmax`` has it. Done with NumPy this is
three array operations, an ``argmax`` and gathers over every (plan, trial) pair; here
it is one pass that reads each pair once and writes nothing but the running best.
The arithmetic is NumPy's, operation by operation (no fast-math, no fused multiply-add),
so the objective and the choice are the same to the bit.
"""

from __future__ import annotations

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
