"""Variants in one pass (:mod:`mcengine.kernels.life`): when a follower leaves the leader.

Variants of a lifetime differ only in their swap, restart and repair laws. A follower
rides with the leader while it would make the same draws and decisions; each function
here finds the followers that would decide otherwise at one event and moves them out
of the live list ``vids[:nv]`` (to be simulated alone afterwards), returning the new
``nv``. ``at[v, x]`` is variant ``v``'s install time of unit ``x``.
"""

from __future__ import annotations

from mcengine.jit import kernel, linked_kernel
from mcengine.kernels.law_codes import LAW_FIXED
from mcengine.kernels.laws import CUM_WEIGHT, KIND
from mcengine.kernels.life.hazard import gpu_wear_hazard, hazard
from mcengine.kernels.life.indices import LAW_REPAIR, LAW_RESTART, LAW_SWAP, N_LAWS

@linked_kernel
def leave(vids, nv, k):
    """Variant ``vids[k]`` (a follower, ``k >= 1``) leaves the live list ``vids[:nv]``:
    swapped behind it, where the caller finds it to simulate it alone."""
    v = vids[k]
    vids[k] = vids[nv - 1]
    vids[nv - 1] = v
    return nv - 1


@linked_kernel
def part_on_liveness(at, vids, nv, x, t, live):
    """Followers that see unit ``x`` in place (``at[v, x] <= t``) otherwise than the leader
    (``live``) leave: they would draw or fail otherwise."""
    k = 1
    while k < nv:
        if (at[vids[k], x] <= t) != live:
            nv = leave(vids, nv, k)
        else:
            k += 1
    return nv


@linked_kernel
def part_at_install(at, vids, nv, x):
    """Followers whose unit ``x`` is installed at another time than the leader's leave: a
    per-unit clock armed there would fire at another time."""
    k = 1
    while k < nv:
        if at[vids[k], x] != at[vids[0], x]:
            nv = leave(vids, nv, k)
        else:
            k += 1
    return nv


@linked_kernel
def part_on_wear(at, vids, nv, x, t, u, live, wb, n_wb, wear, host_shape, host_scale, is_host):
    """Followers whose unit ``x`` (a host if ``is_host``, else a GPU position), in place in
    every variant, has another age than the leader's and so takes the wear-out candidate
    otherwise (``u < hazard(age)``, the leader's outcome ``live``) leave."""
    k = 1
    while k < nv:
        t_f = at[vids[k], x]
        if t_f != at[vids[0], x]:
            if is_host:
                hz = hazard(host_shape, host_scale, t - t_f)
            else:
                hz = gpu_wear_hazard(wb, n_wb, wear, t - t_f)
            if (u < hz) != live:
                nv = leave(vids, nv, k)
                continue
        k += 1
    return nv


@linked_kernel
def first_module_due(m_t0, vids, nv, p, life):
    """The earliest failure time, over the variants ``vids[:nv]``, of position ``p``'s
    module (a life of ``life`` hours from its start in each variant, ``m_t0[v, p]``): the
    time its clock is armed at (``inf``: past the horizon, as ``life`` is)."""
    due = m_t0[vids[0], p] + life
    for k in range(1, nv):
        due = min(due, m_t0[vids[k], p] + life)
    return due


@linked_kernel
def module_fails_now(due, t, t_next, horizon):
    """Whether a variant's module due at ``due`` fails with the one whose clock fires at
    ``t``: at ``t``, or by the horizon before ``t_next``, the next other event, so that
    nothing happens in between (it then fails, and its new module's life is drawn, as in
    the variant's own run)."""
    return due == t or (due < t_next and due <= horizon)


@linked_kernel
def part_on_module(m_t0, vids, nv, p, life, t, t_next, horizon):
    """The clock of position ``p``'s module fires at ``t``, the earliest of the variants'
    failure times (:func:`first_module_due`): followers whose module fails now
    (:func:`module_fails_now`) otherwise than the leader's leave."""
    now = module_fails_now(m_t0[vids[0], p] + life, t, t_next, horizon)
    k = 1
    while k < nv:
        if module_fails_now(m_t0[vids[k], p] + life, t, t_next, horizon) != now:
            nv = leave(vids, nv, k)
        else:
            k += 1
    return nv


@linked_kernel
def restocks_in(mrq, v, head, length, t):
    """How many of the pending module restocks, the ring ``mrq[v]`` from ``head`` (``length``
    of them, in arrival order), are in by ``t`` in variant ``v``."""
    n = mrq.shape[1]
    done = 0
    while done < length:
        j = head + done
        if mrq[v, j - n if j >= n else j] > t:
            break
        done += 1
    return done


@linked_kernel
def part_on_restocks(mrq, vids, nv, head, length, due):
    """Followers in which another number of module restocks is in by their module's
    failure (``due[v]``) than in the leader leave; returns ``nv`` and the leader's number."""
    done = restocks_in(mrq, vids[0], head, length, due[vids[0]])
    k = 1
    while k < nv:
        if restocks_in(mrq, vids[k], head, length, due[vids[k]]) != done:
            nv = leave(vids, nv, k)
        else:
            k += 1
    return nv, done


@kernel
def fixed_law(laws, w):
    """Whether law ``w`` of the stack is one fixed value (it draws nothing)."""
    return laws[w, 0, CUM_WEIGHT] >= 1.0 and laws[w, 0, KIND] == LAW_FIXED


@linked_kernel
def draw_free(laws, v):
    """Whether variant ``v``'s swap and restart laws are one fixed value each (no draw)."""
    return fixed_law(laws, v * N_LAWS + LAW_SWAP) and fixed_law(laws, v * N_LAWS + LAW_RESTART)


@linked_kernel
def same_table(laws, a, b):
    """Whether law tables ``a`` and ``b`` of the stack are equal, line by line (a loop:
    the event kernel is compiled without reference counting, so no NumPy function that
    makes an array)."""
    same = True
    for j in range(laws.shape[1]):
        for c in range(laws.shape[2]):
            same = same and laws[a, j, c] == laws[b, j, c]
    return same


@linked_kernel
def part_on_laws(laws, vids, nv):
    """Followers share the leader's draws only if no variant's swap or restart law draws
    (else every follower leaves) and they have the leader's repair law (else they leave)."""
    for k in range(nv):
        if not draw_free(laws, vids[k]):
            return 1
    k = 1
    while k < nv:
        if same_table(laws, vids[k] * N_LAWS + LAW_REPAIR, vids[0] * N_LAWS + LAW_REPAIR):
            k += 1
        else:
            nv = leave(vids, nv, k)
    return nv
