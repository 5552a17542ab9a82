"""Reliability lifetimes: an exact event-driven simulation of one cluster per trial.

Model (ARCHITECTURE "Reliability"; every time in hours, rates per hour)
----------------------------------------------------------------------
* **Positions.** ``A = instances * instance_gpus`` active GPU positions ``p``;
  instance ``p // instance_gpus``; host ``p // gpus_per_host`` (``H = ceil(A /
  gpus_per_host)`` active hosts, the last one possibly partly filled). Spares are pool
  units on the shelf (cold standby, placed after the active hosts): they neither age
  nor fail until installed, and a pool unit is as new.
* **Slots and units.** The replaceable unit is a GPU (``replace_unit = "gpu"``: one slot
  per position) or a whole host with its GPUs (``"host"``: one slot per active host,
  spare units = ``spare_gpus / gpus_per_host``; a partly filled last host only has
  failure processes at its active positions). A filled slot holds a unit; its clocks
  start when it is installed (renewal), so components age in calendar time, also while
  their instance is down, and a repaired unit returns to the pool as new.
* **Failures.** Per filled GPU position: a series system of component classes. The
  permanent failure time is the first failure of any component: the exponential
  classes (shape 1) add to one rate ``lam_perm_gpu``; the Weibull classes are grouped
  by shape (the minimum of ``c`` Weibull(k, eta) lives is Weibull(k, eta c**(-1/k)),
  and equal shapes merge: ``eta_eff**-k = sum c_j eta_j**-k``), one clock per group.
  Transient faults are Poisson (``lam_transient_gpu``). Per active host: a permanent
  law (exponential, or Weibull) and a transient rate.
* **Effects.** A transient fault (GPU or host) restarts the instances it touches:
  an *up* instance goes down for one ``restart_hours`` draw; a *restarting* one starts
  its restart over; one waiting for a unit is unaffected (it restarts after the swap).
  A permanent GPU failure empties its slot (gpu mode) or its host's slot (host mode); a
  permanent host failure empties its slot (host mode) or every filled GPU slot in it
  (gpu mode: a common-cause failure, each GPU swapped and repaired, the host renewed).
  Any empty slot keeps every instance it touches down (blast radius).
* **Recovery.** The failed unit joins the repair system: at most ``crews`` repairs at
  once, FIFO queue beyond (units are identical, so the queue is a count), each taking
  one ``repair_hours`` draw; a repaired unit refills the longest-waiting empty slot, or
  returns to the pool. An empty slot takes a pool unit if there is one, else waits
  (stock-out, FIFO). A swap takes one ``swap_hours`` draw; when an instance has no
  empty slot left it restarts (one ``restart_hours`` draw) and is then up.
* At ``t = 0`` every slot is filled with a new unit and every instance is up; the run
  stops at the horizon.

Algorithm (the choice, for speed; exact in every case)
------------------------------------------------------
Hybrid of superposition and an indexed timer heap:

* every **memoryless** process (transients, exponential permanent classes, exponential
  hosts) is *superposed*: the next such event is ``Exp(Lambda)`` with ``Lambda`` the
  total rate of the filled positions/hosts, and a second uniform picks the category
  and then the position uniformly among the filled ones (Gillespie 1977 direct method,
  two draws per event). When ``Lambda`` changes at another event, the pending time is
  rescaled, ``t + (t_exp - t) * Lambda_old / Lambda_new``: by memorylessness the
  residual is ``Exp(Lambda_old)``, so this is exact and costs no draw;
* every clock **with memory** (Weibull ages, scheduled swap, restart and repair
  completions) is a timer in an indexed binary heap (:mod:`mcengine.kernels._heap`),
  one fixed id per timer, so the heap holds at most ``O(GPUs)`` entries;
* the units installed at ``t = 0`` share one age, so each Weibull group of that
  **cohort** has a single clock (order statistics in cumulative-hazard space): given
  that ``n`` members survived to ``t``, the next group failure among them has
  ``H(T) - H(t) ~ Exp(1)/n``; it hits a uniformly chosen member, and when the cohort
  shrinks for any reason the pending residual is rescaled by ``n_old / n_new`` (exact,
  no draw). Replaced (and, in gpu mode, renewed-host) units get a clock each. This
  saves one Weibull draw per GPU per lifetime and keeps the heap small;
* a zero-length swap or restart completes at once (no timer).

With all laws exponential the heap only holds the scheduled completions. Memory per
lifetime is ``O(GPUs)``, reused across the lifetimes of a block.

Randomness: one counter-based stream per lifetime, ``(seed, STAGE_LIFE, 0, global
lifetime index)``; draws happen in event order, so a lifetime's result does not depend
on its block, chunk or thread.

Implementation: the whole event loop of a lifetime is one function working on plain
arrays and local scalars. The consequences of an event (a host failure empties several
slots, a zero-length swap installs at once, an install restarts an instance, ...) are
*actions* run in FIFO order from a small ring buffer, so every slot a failure empties is
empty before any of them is refilled at the same instant. (Passing the workspace to
nested helper calls instead costs numba an atomic reference-count update per array per
call, which measured at several times the cost of the simulation itself.)

References
----------
D. T. Gillespie (1977), "Exact stochastic simulation of coupled chemical reactions",
J. Phys. Chem. 81(25):2340-2361 (direct method, superposition of exponential clocks).
shared/reference/notes/reliability.md §4 (closed forms this kernel is tested against).
"""

from __future__ import annotations

import math

import numpy as np
from numba import prange

from mcengine.jit import kernel, parallel_kernel
from mcengine.kernels._heap import heap_remove, heap_set
from mcengine.kernels.laws import CUM_WEIGHT, KIND, P1, P2, law_part
from mcengine.rng import STAGE_LIFE, exponential, lognormal, reset_stream, uniform, weibull_scale
from mcengine.scenario.dists import LAW_EXPONENTIAL, LAW_FIXED, LAW_LOGNORMAL

__all__ = [
    "P_LAM_TRANSIENT_GPU", "P_LAM_PERM_GPU", "P_LAM_TRANSIENT_HOST", "P_LAM_PERM_HOST",
    "P_HOST_SHAPE", "P_HOST_SCALE", "P_HORIZON_HOURS", "N_PARAMS", "WB_SHAPE", "WB_SCALE",
    "OUT_AVAILABILITY", "OUT_STOCKOUT_HOURS", "N_OUT_F", "OUT_FAILURES",
    "OUT_INTERRUPTIONS", "OUT_SWAPS", "OUT_REPAIRS", "OUT_EVENTS", "OUT_MAX_FAILED_GPUS",
    "N_OUT_I", "LAW_REPAIR", "LAW_SWAP", "LAW_RESTART", "N_LAWS", "simulate_lifetimes",
]

# ---- per-trial parameters: params[i, :] (rates per hour, host Weibull law, horizon)
P_LAM_TRANSIENT_GPU = 0  # transient faults per GPU-hour
P_LAM_PERM_GPU = 1  # exponential-class permanent failures per GPU-hour
P_LAM_TRANSIENT_HOST = 2  # transient faults per host-hour
P_LAM_PERM_HOST = 3  # exponential permanent host failures per host-hour
P_HOST_SHAPE = 4  # Weibull host law: shape (used when P_HOST_SCALE > 0)
P_HOST_SCALE = 5  # Weibull host law: scale in hours; 0 = no Weibull host clock
P_HORIZON_HOURS = 6
N_PARAMS = 7
# ---- Weibull groups of a GPU: wb[i, g, :] = (shape, scale hours) for g < n_wb[i]
WB_SHAPE = 0
WB_SCALE = 1
# ---- the law stack of a trial: laws[i, w] for these w
LAW_REPAIR, LAW_SWAP, LAW_RESTART = 0, 1, 2
N_LAWS = 3
# ---- outputs: out_f[i, :] and out_i[i, :]
OUT_AVAILABILITY = 0  # time-averaged fraction of instances up
OUT_STOCKOUT_HOURS = 1  # instance-hours with a slot waiting for a unit
N_OUT_F = 2
OUT_FAILURES = 0  # permanent GPU failures (a host failure counts its GPUs)
OUT_INTERRUPTIONS = 1  # instance up -> down transitions
OUT_SWAPS = 2  # units assigned to empty slots
OUT_REPAIRS = 3  # failed units sent to repair
OUT_EVENTS = 4  # events simulated (failures, faults, swaps, restarts, repairs)
OUT_MAX_FAILED_GPUS = 5  # most GPUs in the repair system (queued or in repair) at once
N_OUT_I = 6

# ---- structure: cfg[:] (ints), built once per call by _config
_C_A, _C_NG, _C_GPH, _C_HOST_MODE, _C_H, _C_I, _C_SLOTS, _C_SPARES, _C_CREWS = range(9)
_C_GPUS_PER_UNIT, _C_ID_HOST, _C_ID_RESTART, _C_ID_SWAP, _C_ID_REPAIR, _C_IDS = range(9, 15)
_C_ACTIONS, _C_ID_COHORT, _C_GROUPS = 15, 16, 17
_N_CFG = 18
# ---- per-instance state rows: inst_i[row, i] and inst_f[row, i]
_MISSING, _WAITING, _UP = 0, 1, 2  # empty slots touching i; of those, waiting; 1 if up
_DOWN_SINCE, _WAIT_SINCE = 0, 1
# ---- action kinds (an action is kind + _N_KINDS * target)
_FAULT = 0  # transient fault on instance target
_SLOT_FAIL = 1  # the unit in slot target fails permanently
_HOST_FAIL = 2  # permanent failure of host target
_SWAP = 3  # a unit is assigned to empty slot target
_INSTALL = 4  # the unit is in place in slot target
_RESTART = 5  # instance target (no empty slot left) starts its restart
_BEGIN_REPAIR = 6  # a crew starts on a failed unit
_REPAIR_DONE = 7  # crew target finishes
_N_KINDS = 8

_BLOCKS = 256  # lifetimes run in at most this many blocks (one workspace each)


@kernel
def _list_add(occ, n, x):
    """Append ``x`` to the filled list ``occ[0, :n]`` (``occ[1, x]`` = its index)."""
    occ[0, n] = x
    occ[1, x] = n
    return n + 1


@kernel
def _list_remove(occ, n, x):
    """Swap-remove ``x`` from the filled list ``occ[0, :n]``; ``occ[1, x] = -1``."""
    j = occ[1, x]
    last = occ[0, n - 1]
    occ[0, j] = last
    occ[1, last] = j
    occ[1, x] = -1
    return n - 1


@kernel
def _put(ring, head, length, x):
    """Append ``x`` to the FIFO ``ring`` holding ``length`` items from ``head``."""
    j = head + length
    if j >= ring.shape[0]:
        j -= ring.shape[0]
    ring[j] = x
    return length + 1


@kernel
def _touching(cfg, host_slot, s):
    """First and last instance with a GPU in slot ``s``: a host if ``host_slot``, else a GPU."""
    if not host_slot:
        i = s // cfg[_C_NG]
        return i, i
    first = s * cfg[_C_GPH]
    last = min(first + cfg[_C_GPH], cfg[_C_A]) - 1
    return first // cfg[_C_NG], last // cfg[_C_NG]


@kernel
def _pick(rate, v, n):
    """Index in ``[0, n)`` of the item hit by ``v`` in ``[0, n * rate)``."""
    return min(int(v / rate), n - 1)


@kernel
def _rescale_cohort(groups, targets, first, last, t, n_old, n_new, hkeys, hids, hpos, hn, id_cohort):
    """Cohort clocks ``first .. last - 1`` after the cohort shrank from ``n_old`` to ``n_new``.

    Given survival to ``t``, each member's remaining cumulative hazard is Exp(1), so the
    first of ``n`` has ``Exp(1)/n``: the pending residual ``target - H(t)`` is rescaled by
    ``n_old / n_new`` (exact, no draw); an empty cohort disarms its clocks.

    Returns
    -------
    int
        The new heap size.
    """
    for g in range(first, last):
        shape, scale = groups[g, WB_SHAPE], groups[g, WB_SCALE]
        if n_new > 0:
            h_now = (t / scale) ** shape
            targets[g] = h_now + (targets[g] - h_now) * (n_old / n_new)
            hn = heap_set(hkeys, hids, hpos, hn, id_cohort + g, scale * targets[g] ** (1.0 / shape))
        elif hpos[id_cohort + g] >= 0:
            hn = heap_remove(hkeys, hids, hpos, hn, id_cohort + g)
    # the arrays stay live to the end: lets numba prune their reference-count updates
    return hn + 0 * (groups.size + targets.size + hkeys.size + hids.size + hpos.size)


@kernel
def _simulate_one(cfg, par, wb, n_wb, laws, occ_g, occ_h, coh_g, coh_h, groups, targets, inst_i, inst_f, wq,
                  hkeys, hids, hpos, free_crews, actions, st, out_f, out_i, row):
    """Simulate one lifetime over the horizon and write its metrics to ``row``.

    Parameters
    ----------
    cfg : int64[_N_CFG]
        Cluster structure and timer-id layout (:func:`_config`).
    par : float64[N_PARAMS]
        The trial's rates, host law and horizon.
    wb : float64[K, 2]
        The trial's Weibull groups of a GPU; ``n_wb`` (int) of them are used.
    laws : float64[3, MAX_LAW_PARTS, 4]
        The trial's repair, swap and restart laws (``LAW_*`` rows).
    occ_g, occ_h, coh_g, coh_h, groups, targets, inst_i, inst_f, wq, hkeys, hids, hpos, free_crews, actions : arrays
        Workspace (overwritten): filled GPU positions and hosts, the members of the
        t = 0 cohorts and their clocks' laws and target hazards, instance state, the
        stock-out FIFO of slots, the timer heap, the free-crew stack, the action ring.
        ``hpos`` must be -1 everywhere on entry, and is again on return.
    st : uint64[5]
        The lifetime's random stream.
    out_f, out_i : arrays
        Output rows (``OUT_*`` columns).
    """
    host_mode = cfg[_C_HOST_MODE] == 1
    n_pos, n_hosts, n_inst, n_slots = cfg[_C_A], cfg[_C_H], cfg[_C_I], cfg[_C_SLOTS]
    ng, gph, crews, cap = cfg[_C_NG], cfg[_C_GPH], cfg[_C_CREWS], cfg[_C_ACTIONS]
    id_host, id_restart, id_swap, id_repair = cfg[_C_ID_HOST], cfg[_C_ID_RESTART], cfg[_C_ID_SWAP], cfg[_C_ID_REPAIR]
    id_cohort, n_groups = cfg[_C_ID_COHORT], cfg[_C_GROUPS]
    host_cohort = id_cohort + n_groups  # the t = 0 hosts' Weibull clock (row n_groups)
    r_tg, r_pg = par[P_LAM_TRANSIENT_GPU], par[P_LAM_PERM_GPU]
    r_th, r_ph = par[P_LAM_TRANSIENT_HOST], par[P_LAM_PERM_HOST]
    host_scale, host_shape = par[P_HOST_SCALE], par[P_HOST_SHAPE]
    horizon = par[P_HORIZON_HOURS]

    # ---- t = 0: every slot filled with a new unit, every instance up
    for p in range(n_pos):
        occ_g[0, p] = p
        occ_g[1, p] = p
        coh_g[0, p] = p
        coh_g[1, p] = p
    for k in range(n_hosts):
        occ_h[0, k] = k
        occ_h[1, k] = k
        coh_h[0, k] = k
        coh_h[1, k] = k
    inst_i[:, :] = 0
    inst_i[_UP, :] = 1
    for c in range(crews):
        free_crews[c] = crews - 1 - c
    n_free = crews
    # the units of t = 0 share their age: one clock per Weibull group for the whole
    # cohort (the first failure among n lives has cumulative hazard Exp(1)/n)
    hn = 0
    groups[:n_wb] = wb[:n_wb]
    groups[n_groups, WB_SHAPE], groups[n_groups, WB_SCALE] = host_shape, host_scale
    for g in range(n_wb):
        targets[g] = exponential(st, 1.0) / n_pos
        hn = heap_set(hkeys, hids, hpos, hn, id_cohort + g, wb[g, WB_SCALE] * targets[g] ** (1.0 / wb[g, WB_SHAPE]))
    if host_scale > 0.0:
        targets[n_groups] = exponential(st, 1.0) / n_hosts
        hn = heap_set(hkeys, hids, hpos, hn, host_cohort, host_scale * targets[n_groups] ** (1.0 / host_shape))
    n_g, n_h, n_cg, n_ch = n_pos, n_hosts, n_pos, n_hosts
    pool, busy, queue, in_repair, max_in_repair = cfg[_C_SPARES], 0, 0, 0, 0
    wq_head, wq_len, a_head, a_len = 0, 0, 0, 0
    failures, interruptions, swaps, repairs, events = 0, 0, 0, 0, 0
    down_hours, stockout_hours = 0.0, 0.0

    t = 0.0
    lam = n_g * (r_tg + r_pg) + n_h * (r_th + r_ph)
    t_exp = exponential(st, 1.0 / lam) if lam > 0.0 else np.inf
    while True:
        # ---- next event: the superposed memoryless one, or the earliest timer
        t_heap = hkeys[0] if hn > 0 else np.inf
        superposed = t_exp <= t_heap
        t_next = t_exp if superposed else t_heap
        if t_next > horizon:
            break
        t = t_next
        events += 1
        kind, target = -1, -1
        if superposed:
            v = uniform(st) * lam
            w0, w1, w2, w3 = n_g * r_tg, n_g * r_pg, n_h * r_th, n_h * r_ph
            if v < w0 or (w1 <= 0.0 and w2 <= 0.0 and w3 <= 0.0):  # GPU transient
                kind, target = _FAULT, occ_g[0, _pick(r_tg, v, n_g)] // ng
            elif v - w0 < w1 or (w2 <= 0.0 and w3 <= 0.0):  # GPU permanent
                p = occ_g[0, _pick(r_pg, v - w0, n_g)]
                failures += 1
                kind, target = _SLOT_FAIL, (p // gph if host_mode else p)
            elif v - w0 - w1 < w2 or w3 <= 0.0:  # host transient: all its instances
                i0, i1 = _touching(cfg, True, occ_h[0, _pick(r_th, v - w0 - w1, n_h)])
                for i in range(i0, i1):
                    a_len = _put(actions, a_head, a_len, _FAULT + _N_KINDS * i)
                kind, target = _FAULT, i1
            else:  # host permanent
                kind, target = _HOST_FAIL, occ_h[0, _pick(r_ph, v - w0 - w1 - w2, n_h)]
        else:
            ident = hids[0]
            hn = heap_remove(hkeys, hids, hpos, hn, ident)
            if ident < id_host:  # Weibull ageing failure of GPU position ident
                failures += 1
                kind, target = _SLOT_FAIL, (ident // gph if host_mode else ident)
            elif ident < id_cohort:
                kind, target = _HOST_FAIL, ident - id_host
            elif ident < host_cohort:  # first failure of group g in the t = 0 GPU cohort
                g = ident - id_cohort
                p = coh_g[0, _pick(1.0, uniform(st) * n_cg, n_cg)]  # exchangeable: any member
                n_cg = _list_remove(coh_g, n_cg, p)
                hn = _rescale_cohort(groups, targets, 0, n_wb, t, n_cg + 1, n_cg, hkeys, hids, hpos, hn, id_cohort)
                if n_cg > 0:
                    targets[g] = (t / groups[g, WB_SCALE]) ** groups[g, WB_SHAPE] + exponential(st, 1.0) / n_cg
                    hn = heap_set(hkeys, hids, hpos, hn, ident, groups[g, WB_SCALE] * targets[g] ** (1.0 / groups[g, WB_SHAPE]))
                failures += 1
                kind, target = _SLOT_FAIL, (p // gph if host_mode else p)
            elif ident == host_cohort:  # first failure in the t = 0 host cohort
                k = coh_h[0, _pick(1.0, uniform(st) * n_ch, n_ch)]
                n_ch = _list_remove(coh_h, n_ch, k)
                hn = _rescale_cohort(groups, targets, n_groups, n_groups + 1, t, n_ch + 1, n_ch, hkeys, hids, hpos, hn, id_cohort)
                if n_ch > 0:
                    targets[n_groups] = (t / host_scale) ** host_shape + exponential(st, 1.0) / n_ch
                    hn = heap_set(hkeys, hids, hpos, hn, ident, host_scale * targets[n_groups] ** (1.0 / host_shape))
                kind, target = _HOST_FAIL, k
            elif ident < id_swap:  # restart complete: the instance is up
                i = ident - id_restart
                inst_i[_UP, i] = 1
                down_hours += t - inst_f[_DOWN_SINCE, i]
            elif ident < id_repair:
                kind, target = _INSTALL, ident - id_swap
            else:
                kind, target = _REPAIR_DONE, ident - id_repair
        if kind >= 0:
            a_len = _put(actions, a_head, a_len, kind + _N_KINDS * target)

        # ---- its consequences, in FIFO order
        while a_len > 0:
            code = actions[a_head]
            a_head = a_head + 1 if a_head + 1 < cap else 0
            a_len -= 1
            kind, x = code % _N_KINDS, code // _N_KINDS
            if kind == _FAULT:
                if inst_i[_UP, x] == 1:
                    inst_i[_UP, x] = 0
                    inst_f[_DOWN_SINCE, x] = t
                    interruptions += 1
                    kind = _RESTART
                elif inst_i[_MISSING, x] == 0:  # restarting: start over
                    kind = _RESTART
            elif kind == _SLOT_FAIL:
                first, end = (x * gph, min(x * gph + gph, n_pos)) if host_mode else (x, x + 1)
                left = 0  # members of the t = 0 cohort leaving it
                for p in range(first, end):
                    n_g = _list_remove(occ_g, n_g, p)
                    if hpos[p] >= 0:  # (the test saves a call when no clock is armed)
                        hn = heap_remove(hkeys, hids, hpos, hn, p)
                    if coh_g[1, p] >= 0:
                        n_cg = _list_remove(coh_g, n_cg, p)
                        left += 1
                if left > 0 and n_wb > 0:
                    hn = _rescale_cohort(groups, targets, 0, n_wb, t, n_cg + left, n_cg, hkeys, hids, hpos, hn, id_cohort)
                if host_mode:
                    n_h = _list_remove(occ_h, n_h, x)
                    if hpos[id_host + x] >= 0:
                        hn = heap_remove(hkeys, hids, hpos, hn, id_host + x)
                    if coh_h[1, x] >= 0:
                        n_ch = _list_remove(coh_h, n_ch, x)
                        if host_scale > 0.0:
                            hn = _rescale_cohort(groups, targets, n_groups, n_groups + 1, t, n_ch + 1, n_ch,
                                                 hkeys, hids, hpos, hn, id_cohort)
                i0, i1 = _touching(cfg, host_mode, x)
                for i in range(i0, i1 + 1):
                    if inst_i[_UP, i] == 1:
                        inst_i[_UP, i] = 0
                        inst_f[_DOWN_SINCE, i] = t
                        interruptions += 1
                    elif inst_i[_MISSING, i] == 0:  # restarting: wait for the swap
                        hn = heap_remove(hkeys, hids, hpos, hn, id_restart + i)
                    inst_i[_MISSING, i] += 1
                repairs += 1  # the failed unit goes to repair
                in_repair += 1
                max_in_repair = max(max_in_repair, in_repair)
                if busy < crews:
                    busy += 1
                    a_len = _put(actions, a_head, a_len, _BEGIN_REPAIR)
                else:
                    queue += 1
                if pool > 0:  # the slot takes a pool unit, or waits for one
                    pool -= 1
                    kind = _SWAP
                else:
                    wq_len = _put(wq, wq_head, wq_len, x)
                    for i in range(i0, i1 + 1):
                        if inst_i[_WAITING, i] == 0:
                            inst_f[_WAIT_SINCE, i] = t
                        inst_i[_WAITING, i] += 1
            elif kind == _HOST_FAIL:
                first, end = x * gph, min(x * gph + gph, n_pos)
                if host_mode:
                    failures += end - first
                    a_len = _put(actions, a_head, a_len, _SLOT_FAIL + _N_KINDS * x)
                else:  # common cause: each filled GPU slot fails; the host is renewed
                    for p in range(first, end):
                        if occ_g[1, p] >= 0:
                            failures += 1
                            a_len = _put(actions, a_head, a_len, _SLOT_FAIL + _N_KINDS * p)
                    if host_scale > 0.0:
                        life = weibull_scale(st, host_scale, host_shape)
                        if t + life <= horizon:
                            hn = heap_set(hkeys, hids, hpos, hn, id_host + x, t + life)
            elif kind == _INSTALL:
                first, end = (x * gph, min(x * gph + gph, n_pos)) if host_mode else (x, x + 1)
                for p in range(first, end):
                    n_g = _list_add(occ_g, n_g, p)
                    if n_wb > 0:
                        life = np.inf
                        for g in range(n_wb):
                            life = min(life, weibull_scale(st, wb[g, WB_SCALE], wb[g, WB_SHAPE]))
                        if t + life <= horizon:  # a clock past the horizon never fires: left out
                            hn = heap_set(hkeys, hids, hpos, hn, p, t + life)
                if host_mode:
                    n_h = _list_add(occ_h, n_h, x)
                    if host_scale > 0.0:
                        life = weibull_scale(st, host_scale, host_shape)
                        if t + life <= horizon:
                            hn = heap_set(hkeys, hids, hpos, hn, id_host + x, t + life)
                i0, i1 = _touching(cfg, host_mode, x)
                for i in range(i0, i1 + 1):
                    inst_i[_MISSING, i] -= 1
                    if inst_i[_MISSING, i] == 0:
                        a_len = _put(actions, a_head, a_len, _RESTART + _N_KINDS * i)
            elif kind == _REPAIR_DONE:
                busy -= 1
                free_crews[n_free] = x
                n_free += 1
                in_repair -= 1
                if queue > 0:
                    queue -= 1
                    busy += 1
                    a_len = _put(actions, a_head, a_len, _BEGIN_REPAIR)
                if wq_len > 0:  # the repaired unit refills the longest-waiting slot
                    x = wq[wq_head]
                    wq_head = wq_head + 1 if wq_head + 1 < n_slots else 0
                    wq_len -= 1
                    i0, i1 = _touching(cfg, host_mode, x)
                    for i in range(i0, i1 + 1):
                        inst_i[_WAITING, i] -= 1
                        if inst_i[_WAITING, i] == 0:
                            stockout_hours += t - inst_f[_WAIT_SINCE, i]
                    kind = _SWAP
                else:
                    pool += 1

            # ---- the three actions that draw a duration (kind may be rewritten above);
            # the law dispatch is laws.sample_law's, inline (see that function's notes)
            w = -1
            if kind == _SWAP:
                swaps += 1
                w = LAW_SWAP
            elif kind == _RESTART and inst_i[_MISSING, x] == 0:
                w = LAW_RESTART
            elif kind == _BEGIN_REPAIR:
                w = LAW_REPAIR
            if w >= 0:
                j = 0 if laws[w, 0, CUM_WEIGHT] >= 1.0 else law_part(laws, w, uniform(st))
                law_kind = int(laws[w, j, KIND])
                d = laws[w, j, P1]  # LAW_FIXED
                if law_kind == LAW_EXPONENTIAL:  # = exponential(st, mean), written out (see below)
                    d = -laws[w, j, P1] * math.log(uniform(st))
                elif law_kind == LAW_LOGNORMAL:
                    d = lognormal(st, laws[w, j, P1], laws[w, j, P2])
                elif law_kind != LAW_FIXED:
                    d = weibull_scale(st, laws[w, j, P1], laws[w, j, P2])
                if w == LAW_REPAIR:
                    n_free -= 1
                    hn = heap_set(hkeys, hids, hpos, hn, id_repair + free_crews[n_free], t + d)
                elif w == LAW_SWAP:
                    if d > 0.0:
                        hn = heap_set(hkeys, hids, hpos, hn, id_swap + x, t + d)
                    else:  # in place at once
                        events += 1
                        a_len = _put(actions, a_head, a_len, _INSTALL + _N_KINDS * x)
                elif d > 0.0:
                    hn = heap_set(hkeys, hids, hpos, hn, id_restart + x, t + d)
                else:  # restarted at once
                    if hpos[id_restart + x] >= 0:
                        hn = heap_remove(hkeys, hids, hpos, hn, id_restart + x)
                    events += 1
                    inst_i[_UP, x] = 1
                    down_hours += t - inst_f[_DOWN_SINCE, x]

        # ---- the superposed clock: fresh after its own event, else rescaled
        new = n_g * (r_tg + r_pg) + n_h * (r_th + r_ph)
        if superposed or lam <= 0.0:
            # rng.exponential's inversion written out, bit for bit: calling it costs an
            # atomic reference-count pair on ``st`` per draw (~15% of the time here)
            t_exp = t + -(1.0 / new) * math.log(uniform(st)) if new > 0.0 else np.inf
        elif new != lam:  # memoryless residual, rescaled (exact, no draw)
            t_exp = t + (t_exp - t) * (lam / new) if new > 0.0 else np.inf
        lam = new

    for j in range(hn):  # leave hpos all -1 for the next lifetime (cheaper than a full reset)
        hpos[hids[j]] = -1
    for i in range(n_inst):
        if inst_i[_UP, i] == 0:
            down_hours += horizon - inst_f[_DOWN_SINCE, i]
        if inst_i[_WAITING, i] > 0:
            stockout_hours += horizon - inst_f[_WAIT_SINCE, i]
    out_f[row, OUT_AVAILABILITY] = 1.0 - down_hours / (n_inst * horizon)
    out_f[row, OUT_STOCKOUT_HOURS] = stockout_hours
    out_i[row, OUT_FAILURES] = failures
    out_i[row, OUT_INTERRUPTIONS] = interruptions
    out_i[row, OUT_SWAPS] = swaps
    out_i[row, OUT_REPAIRS] = repairs
    out_i[row, OUT_EVENTS] = events
    out_i[row, OUT_MAX_FAILED_GPUS] = max_in_repair * cfg[_C_GPUS_PER_UNIT]


@kernel
def _config(active_gpus, instance_gpus, gpus_per_host, host_mode, spare_units, crews, n_groups):
    """The cluster's structural ints and the timer-id layout, as int64[_N_CFG].

    Timer ids: ``[0, A)`` Weibull clocks of replaced GPUs, then one per active host
    (Weibull clock of a replaced or renewed host), ``n_groups`` clocks of the t = 0 GPU
    cohort and one of the t = 0 hosts, one per instance (restart), per slot (swap), per
    crew (repair).
    """
    cfg = np.zeros(_N_CFG, dtype=np.int64)
    hosts = (active_gpus + gpus_per_host - 1) // gpus_per_host
    slots = hosts if host_mode else active_gpus
    n_inst = active_gpus // instance_gpus
    cfg[_C_A] = active_gpus
    cfg[_C_NG] = instance_gpus
    cfg[_C_GPH] = gpus_per_host
    cfg[_C_HOST_MODE] = 1 if host_mode else 0
    cfg[_C_H] = hosts
    cfg[_C_I] = n_inst
    cfg[_C_SLOTS] = slots
    cfg[_C_SPARES] = spare_units
    cfg[_C_CREWS] = min(crews, slots + spare_units)  # never more repairs than units
    cfg[_C_GPUS_PER_UNIT] = gpus_per_host if host_mode else 1
    cfg[_C_ID_HOST] = active_gpus
    cfg[_C_ID_COHORT] = active_gpus + hosts
    cfg[_C_GROUPS] = n_groups
    cfg[_C_ID_RESTART] = cfg[_C_ID_COHORT] + n_groups + 1
    cfg[_C_ID_SWAP] = cfg[_C_ID_RESTART] + n_inst
    cfg[_C_ID_REPAIR] = cfg[_C_ID_SWAP] + slots
    cfg[_C_IDS] = cfg[_C_ID_REPAIR] + cfg[_C_CREWS]
    # pending actions: at most one per (kind, slot or instance), plus one per crew
    cfg[_C_ACTIONS] = 2 * slots + 2 * n_inst + cfg[_C_CREWS] + 8
    return cfg


@parallel_kernel
def simulate_lifetimes(seed, trial_start, params, wb, n_wb, laws,
                       active_gpus, instance_gpus, gpus_per_host, host_mode, spare_units, crews):
    """Simulate ``n`` cluster lifetimes, ``prange`` over blocks of lifetimes.

    Lifetime ``i`` draws from the stream ``(seed, STAGE_LIFE, 0, trial_start + i)`` and
    writes only row ``i``, so the result depends neither on the thread count nor on how
    the trials are chunked. Each block allocates one ``O(GPUs)`` workspace and reuses it
    for its lifetimes (every lifetime overwrites it from scratch).

    Parameters
    ----------
    seed : uint64
        Master seed.
    trial_start : int
        Global index of the first lifetime.
    params : float64[n, N_PARAMS]
        Per-trial rates per hour, host Weibull law and horizon (``P_*`` columns).
    wb : float64[n, K, 2]
        Per-trial Weibull groups of a GPU, ``(shape, scale hours)``; ``K >= 1``.
    n_wb : int64[n]
        Number of used groups per trial.
    laws : float64[n, N_LAWS, MAX_LAW_PARTS, 4]
        Per-trial repair, swap and restart law tables (``LAW_*``; see
        :mod:`mcengine.kernels.laws`), in hours.
    active_gpus, instance_gpus, gpus_per_host : int
        Cluster shape; ``active_gpus`` is a multiple of ``instance_gpus``.
    host_mode : bool
        The replaceable unit is a host (True) or a GPU (False).
    spare_units : int
        Pool units at the start (GPUs, or hosts in host mode).
    crews : int
        Repairs at once; at least the number of units means unlimited.

    Returns
    -------
    out_f : float64[n, N_OUT_F]
        Availability and stock-out instance-hours (``OUT_*`` columns).
    out_i : int64[n, N_OUT_I]
        Counts over the horizon (``OUT_*`` columns).
    """
    n = params.shape[0]
    out_f = np.empty((n, N_OUT_F), dtype=np.float64)
    out_i = np.empty((n, N_OUT_I), dtype=np.int64)
    cfg = _config(active_gpus, instance_gpus, gpus_per_host, host_mode, spare_units, crews, wb.shape[1])
    n_blocks = min(n, _BLOCKS)
    per_block = (n + n_blocks - 1) // max(n_blocks, 1)
    for b in prange(n_blocks):
        occ_g = np.empty((2, cfg[_C_A]), dtype=np.int64)
        occ_h = np.empty((2, cfg[_C_H]), dtype=np.int64)
        coh_g = np.empty((2, cfg[_C_A]), dtype=np.int64)
        coh_h = np.empty((2, cfg[_C_H]), dtype=np.int64)
        groups = np.empty((cfg[_C_GROUPS] + 1, 2), dtype=np.float64)
        targets = np.empty(cfg[_C_GROUPS] + 1, dtype=np.float64)
        inst_i = np.empty((3, cfg[_C_I]), dtype=np.int64)
        inst_f = np.empty((2, cfg[_C_I]), dtype=np.float64)
        wq = np.empty(cfg[_C_SLOTS], dtype=np.int64)
        hkeys = np.empty(cfg[_C_IDS], dtype=np.float64)
        hids = np.empty(cfg[_C_IDS], dtype=np.int64)
        hpos = np.full(cfg[_C_IDS], -1, dtype=np.int64)
        free_crews = np.empty(max(cfg[_C_CREWS], 1), dtype=np.int64)
        actions = np.empty(cfg[_C_ACTIONS], dtype=np.int64)
        st = np.empty(5, dtype=np.uint64)
        for i in range(b * per_block, min(n, (b + 1) * per_block)):
            reset_stream(st, seed, STAGE_LIFE, 0, trial_start + i)
            _simulate_one(cfg, params[i], wb[i], n_wb[i], laws[i],
                          occ_g, occ_h, coh_g, coh_h, groups, targets, inst_i, inst_f, wq, hkeys, hids, hpos, free_crews,
                          actions, st, out_f, out_i, i)
    return out_f, out_i
