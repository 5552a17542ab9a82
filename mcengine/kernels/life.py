"""Reliability lifetimes: an exact event-driven simulation of one cluster per trial.

Model (docs/model.md#reliability; every time in hours, rates per hour)
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
* **Reshard** (``cluster.on_failure = "reshard"``, docs/model.md#reshard): an instance
  with ``k`` GPUs lost (slot empty or in a swap) serves ``capacity[k]`` of its
  throughput after a re-layout of ``P_RESHARD_HOURS``; every change of its GPU set and a
  fault while it is short re-layouts (:func:`_reshard`). Up/down states are those of
  ``"down"``, so the served capacity only adds to ``OUT_CAPACITY``.
* **Modules** (component classes with ``replace_unit = "module"``, docs/model.md#modules):
  one clock per GPU position for its module (the minimum of the module classes'
  Weibull lives), renewed at each module swap and GPU install; a module failure takes
  the GPU's instance down (reshard: the GPU lost) for ``P_MODULE_SWAP_HOURS`` in place,
  no pool unit, no repair.
* At ``t = 0`` every slot is filled with a new unit and every instance is up; the run
  stops at the horizon.

Algorithm (the choice, for speed; exact in every case)
------------------------------------------------------
Only what can change the future is an event; everything else is settled lazily, when
it is next looked at or at the horizon:

* every **memoryless** process (transients, exponential permanent classes, exponential
  hosts) is *superposed*: the next such event is ``Exp(Lambda)`` with ``Lambda`` the
  total rate of the listed positions/hosts, and a second uniform picks the category
  and then the position uniformly among them (Gillespie 1977 direct method). When
  ``Lambda`` changes at another event, the pending time is rescaled, ``t + (t_exp - t)
  * Lambda_old / Lambda_new``: by memorylessness the residual is ``Exp(Lambda_old)``,
  so this is exact and costs no draw;
* **wear-out Weibull** laws (shape >= 1, the hazard ``h(a) = (k/eta) (a/eta)**(k-1)``
  non-decreasing in age) join the superposition by *thinning* (Lewis & Shedler 1979):
  each listed unit offers candidates at the constant rate ``h(horizon)``, and a
  candidate at time ``t`` on a unit installed at ``t_i`` is a failure with probability
  ``h(t - t_i) / h(horizon)`` (ages never exceed the horizon). A law whose candidates
  would outnumber its failures by much (``k * H(horizon) > thin_max``, ``H`` the
  cumulative hazard) and every **infant-mortality** law (shape < 1, unbounded hazard at
  age 0) keeps one clock per unit instead: a draw at install, a timer in an indexed
  binary heap (:mod:`mcengine.kernels._heap`) when it falls before the horizon;
* a **swap** does not leave its slot: the unit's install time ``t_i`` is set in the
  future, and until then a candidate event on the slot is rejected (no GPU is there:
  the same thinning, exact). The instance keeps ``ready_at``, the last install time of
  its pending swaps, so its **restart** starts at ``ready_at`` (its duration drawn when
  the instance is next looked at) and ends at ``up_at``; a later fault or failure
  compares its time with these, and the downtime is added when the instance is seen up;
* **repair completions** are bare times in an unordered list, their minimum kept
  beside it: they are events only while something waits for them (a slot out of
  stock, a repair queued for a crew); otherwise the pool, crew and repair counts are
  bounds (pool at least, busy crews and units in repair at most) and the repairs due
  are taken off in one pass only when a failure needs an exact count (an empty pool,
  all crews busy, a possible new maximum in repair) and at the horizon, and only if
  one is due by then;
* a zero-length swap or restart completes at once.

In the shipped Lite-GPU cluster this leaves about one loop iteration in five of an
event-by-event simulation (swaps, installs, restarts and repairs need none). Memory
per lifetime is ``O(GPUs)``, reused across the lifetimes of a block. The counts of
swaps, installs, restarts and repair completions by the horizon are still reported as
events (``OUT_EVENTS``), as an event-by-event simulation would count them.

Variants in one pass. Designs that differ only in their swap and restart laws (the
fast-swap Lite cluster beside its plain twin) see, with common random numbers, the same
failures, faults and repairs: only install times and instance states differ. While
their swap and restart laws draw nothing (fixed values) and no event looks at a unit
whose install time differs between them (a candidate on a unit still in its swap in one
variant only, a wear-out acceptance at another age, a common-cause failure, a per-unit
clock armed at another time), every draw and decision is the same. So
:func:`simulate_lifetimes` takes the laws of ``V`` variants: the first leads and makes
the lifetime as if alone; the others keep their own install times and instance states
beside it and leave at the first event where they would decide otherwise, to be
simulated alone, from the start. Every variant has exactly the numbers of its own run;
in the shipped case study about 2% of fast-swap lifetimes leave, and the pair costs
about two thirds of two separate lifetimes.

Randomness: one counter-based stream per lifetime, ``(seed, STAGE_LIFE, 0, global
lifetime index)``; draws happen in the order of the loop, so a lifetime's result does
not depend on its block, chunk or thread.

Implementation: the whole loop of a lifetime is one function on plain arrays and local
scalars; what happens at one instant runs in passes (the repairs due, each failing
slot with the instances it touches, then the units assigned), so every slot a failure
empties is empty before any is refilled. GPUs that fail in gpu mode while the pool and
the crews suffice for all of them (a host's common-cause failure: 16 GPUs in the Lite
cluster, more than four in five of its failures) take a short path with the same draws
in the same order, so the numbers are those of the passes; so does a transient fault
while nothing waits for a unit or a crew (a fault changes only the instances it
touches: about two thirds of the loop's events). The loop is an
:data:`~mcengine.jit.event_kernel`: compiled without numba's reference counting, it
makes no ``NRT_incref``/``NRT_decref`` call around its draws and helpers (measured: a
fifth fewer instructions and about a third less time per Lite lifetime, same numbers).

References
----------
D. T. Gillespie (1977), "Exact stochastic simulation of coupled chemical reactions",
J. Phys. Chem. 81(25):2340-2361 (direct method, superposition of exponential clocks).
P. A. W. Lewis, G. S. Shedler (1979), "Simulation of nonhomogeneous Poisson processes
by thinning", Naval Research Logistics Quarterly 26(3):403-413.
docs/sources.md, Reliability: the closed forms this kernel is tested against.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from mcengine.jit import event_kernel, inline_kernel, kernel, parallel_kernel
from mcengine.kernels._heap import heap_remove, heap_set
from mcengine.kernels.laws import CUM_WEIGHT, KIND, P1, sample_law
from mcengine.rng import STAGE_LIFE, STREAM_WORDS, exponential, reset_stream, uniform, weibull_scale
from mcengine.kernels.law_codes import LAW_FIXED

__all__ = [
    "P_LAM_TRANSIENT_GPU", "P_LAM_PERM_GPU", "P_LAM_TRANSIENT_HOST", "P_LAM_PERM_HOST",
    "P_HOST_SHAPE", "P_HOST_SCALE", "P_HORIZON_HOURS", "P_RESHARD_HOURS", "P_MODULE_SWAP_HOURS", "N_PARAMS", "WB_SHAPE", "WB_SCALE",
    "OUT_AVAILABILITY", "OUT_STOCKOUT_HOURS", "OUT_CAPACITY", "N_OUT_F", "OUT_FAILURES",
    "OUT_INTERRUPTIONS", "OUT_SWAPS", "OUT_REPAIRS", "OUT_EVENTS", "OUT_MAX_FAILED_GPUS", "OUT_PARTED",
    "OUT_MODULE_SWAPS", "N_OUT_I", "LAW_REPAIR", "LAW_SWAP", "LAW_RESTART", "N_LAWS", "THIN_MAX_CANDIDATES",
    "simulate_lifetimes",
]

# ---- per-trial parameters: params[i, :] (rates per hour, host Weibull law, horizon)
P_LAM_TRANSIENT_GPU = 0  # transient faults per GPU-hour
P_LAM_PERM_GPU = 1  # exponential-class permanent failures per GPU-hour
P_LAM_TRANSIENT_HOST = 2  # transient faults per host-hour
P_LAM_PERM_HOST = 3  # exponential permanent host failures per host-hour
P_HOST_SHAPE = 4  # Weibull host law: shape (used when P_HOST_SCALE > 0)
P_HOST_SCALE = 5  # Weibull host law: scale in hours; 0 = no Weibull host law
P_HORIZON_HOURS = 6
P_RESHARD_HOURS = 7  # cluster.on_failure = "reshard": the zero-output time of a re-layout
P_MODULE_SWAP_HOURS = 8  # time to swap a failed field-replaceable module in place
N_PARAMS = 9
# ---- Weibull groups of a GPU: wb[i, g, :] = (shape, scale hours) for g < n_wb[i]
WB_SHAPE = 0
WB_SCALE = 1
# ---- the law stack of a trial: laws[i, w] for these w
LAW_REPAIR, LAW_SWAP, LAW_RESTART = 0, 1, 2
N_LAWS = 3
# ---- outputs: out_f[i, :] and out_i[i, :]
OUT_AVAILABILITY = 0  # time-averaged fraction of instances up
OUT_STOCKOUT_HOURS = 1  # instance-hours with a slot waiting for a unit
OUT_CAPACITY = 2  # time-averaged delivered throughput / full (reshard: degraded service counts)
N_OUT_F = 3
OUT_FAILURES = 0  # permanent GPU failures (a host failure counts its GPUs)
OUT_INTERRUPTIONS = 1  # instance up -> down transitions
OUT_SWAPS = 2  # units assigned to empty slots
OUT_REPAIRS = 3  # failed units sent to repair
OUT_EVENTS = 4  # events by the horizon (failures, faults, installs, restarts, repairs)
OUT_MAX_FAILED_GPUS = 5  # most GPUs in the repair system (queued or in repair) at once
OUT_PARTED = 6  # 1 if the variant parted from the joint pass and ran alone (simulate_lifetimes)
OUT_MODULE_SWAPS = 7  # failed field-replaceable modules swapped in place
N_OUT_I = 8

#: A wear-out Weibull law is thinned when a unit installed at t = 0 would offer at most
#: this many candidates over the horizon (``k * H(horizon)``); else one clock per unit.
THIN_MAX_CANDIDATES = 2.0

# ---- structure: cfg[:] (ints), built once per call by _config
_C_A, _C_NG, _C_GPH, _C_HOST_MODE, _C_H, _C_I, _C_SLOTS, _C_SPARES, _C_CREWS = range(9)
_C_GPUS_PER_UNIT, _C_IDS, _C_RESHARD, _C_MODULES, _C_M0 = 9, 10, 11, 12, 13
_N_CFG = 14
# ---- per-instance state of a variant: inst_i[v, row, i] and inst_f[v, row, i] (see _simulate_one)
_DOWN, _PENDING = 0, 1
_N_INST_I = 2
_DOWN_SINCE, _READY_AT, _UP_AT = 0, 1, 2
_N_INST_F = 3
# ---- counts of a variant: var_i[row, v] (its downtime hours: var_f[v])
_V_INTERRUPTIONS, _V_EVENTS = 0, 1
_N_VAR_I = 2
# ---- reshard state of an instance (cluster.on_failure = "reshard", one variant): rs_k[i]
# GPUs without an installed unit; rs_f[_RS_SEEN, i] served time counted up to there,
# rs_f[_RS_FROM, i] when its current smaller layout starts serving
_RS_SEEN, _RS_FROM = 0, 1
# ---- superposed categories: rates[c] per listed position (c < 3) or host (c >= 3)
_GPU_FAULT, _GPU_EXP, _GPU_WEAR, _HOST_FAULT, _HOST_EXP, _HOST_WEAR = range(6)
_N_CAT = 6

_BLOCKS = 256  # lifetimes run in at most this many blocks (one workspace each)


@kernel
def _hazard(shape, scale, age):
    """Weibull hazard per hour at ``age`` hours: ``(k / eta) * (age / eta)**(k - 1)``."""
    return shape / scale * (age / scale) ** (shape - 1.0)


@kernel
def _thinned(shape, scale, horizon, thin_max):
    """Whether a Weibull law is thinned: wear-out (k >= 1) with ``k * H(horizon) <= thin_max``."""
    return shape >= 1.0 and shape * (horizon / scale) ** shape <= thin_max


@kernel
def _positions(x, host_mode, gph, n_pos):
    """GPU positions ``first .. end - 1`` of slot ``x`` (a host's in host mode, else one)."""
    if host_mode:
        return x * gph, min(x * gph + gph, n_pos)
    return x, x + 1


@kernel
def _total_rate(rates, n_g, n_h):
    """The superposed rate of ``n_g`` listed GPU positions and ``n_h`` listed hosts."""
    lam = 0.0
    for c in range(_N_CAT):
        lam += (n_g if c < _HOST_FAULT else n_h) * rates[c]
    return lam


@kernel
def _unit_life(st, wb, n_wb, wear):
    """A new unit's time to its first failure among the GPU Weibull groups not thinned."""
    life = np.inf
    for g in range(n_wb):
        if wear[g] == 0.0:
            life = min(life, weibull_scale(st, wb[g, WB_SCALE], wb[g, WB_SHAPE]))
    return life


@kernel
def _module_life(st, mwb, n_mwb):
    """A new field-replaceable module's life: the first failure among its Weibull groups."""
    life = np.inf
    for g in range(n_mwb):
        life = min(life, weibull_scale(st, mwb[g, WB_SCALE], mwb[g, WB_SHAPE]))
    return life


@kernel
def _arm(hkeys, hids, hpos, hn, ident, when, horizon):
    """Arm per-unit clock ``ident`` at ``when``; a clock past the horizon never fires: left out."""
    if when <= horizon:
        hn = heap_set(hkeys, hids, hpos, hn, ident, when)
    return hn


@kernel
def _list_add(occ, n, x):
    """Append ``x`` to the list ``occ[0, :n]`` (``occ[1, x]`` = its index)."""
    occ[0, n] = x
    occ[1, x] = n
    return n + 1


@kernel
def _list_remove(occ, n, x):
    """Swap-remove ``x`` from the list ``occ[0, :n]``; ``occ[1, x] = -1``."""
    j = occ[1, x]
    last = occ[0, n - 1]
    occ[0, j] = last
    occ[1, last] = j
    occ[1, x] = -1
    return n - 1


@kernel
def _gpu_wear_hazard(wb, n_wb, wear, age):
    """The summed hazard per hour of a GPU's thinned Weibull groups at ``age`` hours."""
    hz = 0.0
    for g in range(n_wb):
        if wear[g] > 0.0:
            hz += _hazard(wb[g, WB_SHAPE], wb[g, WB_SCALE], age)
    return hz


@kernel
def _leave(vids, nv, k):
    """Variant ``vids[k]`` (a follower, ``k >= 1``) leaves the live list ``vids[:nv]``:
    swapped behind it, where the caller finds it to simulate it alone."""
    v = vids[k]
    vids[k] = vids[nv - 1]
    vids[nv - 1] = v
    return nv - 1


@kernel
def _part_on_liveness(at, vids, nv, x, t, live):
    """Followers that see unit ``x`` in place (``at[v, x] <= t``) otherwise than the leader
    (``live``) leave: they would draw or fail otherwise."""
    k = 1
    while k < nv:
        if (at[vids[k], x] <= t) != live:
            nv = _leave(vids, nv, k)
        else:
            k += 1
    return nv


@kernel
def _part_at_install(at, vids, nv, x):
    """Followers whose unit ``x`` is installed at another time than the leader's leave: a
    per-unit clock armed there would fire at another time."""
    k = 1
    while k < nv:
        if at[vids[k], x] != at[vids[0], x]:
            nv = _leave(vids, nv, k)
        else:
            k += 1
    return nv


@kernel
def _part_on_wear(at, vids, nv, x, t, u, live, wb, n_wb, wear, host_shape, host_scale, is_host):
    """Followers whose unit ``x`` (a host if ``is_host``, else a GPU position), in place in
    every variant, has another age than the leader's and so takes the wear-out candidate
    otherwise (``u < hazard(age)``, the leader's outcome ``live``) leave."""
    k = 1
    while k < nv:
        t_f = at[vids[k], x]
        if t_f != at[vids[0], x]:
            if is_host:
                hz = _hazard(host_shape, host_scale, t - t_f)
            else:
                hz = _gpu_wear_hazard(wb, n_wb, wear, t - t_f)
            if (u < hz) != live:
                nv = _leave(vids, nv, k)
                continue
        k += 1
    return nv


@kernel
def _fixed_law(laws, w):
    """Whether law ``w`` of the stack is one fixed value (it draws nothing)."""
    return laws[w, 0, CUM_WEIGHT] >= 1.0 and laws[w, 0, KIND] == LAW_FIXED


@kernel
def _draw_free(laws, v):
    """Whether variant ``v``'s swap and restart laws are one fixed value each (no draw)."""
    return _fixed_law(laws, v * N_LAWS + LAW_SWAP) and _fixed_law(laws, v * N_LAWS + LAW_RESTART)


@kernel
def _same_table(laws, a, b):
    """Whether law tables ``a`` and ``b`` of the stack are equal, line by line (a loop:
    the event kernel is compiled without reference counting, so no NumPy function that
    makes an array)."""
    same = True
    for j in range(laws.shape[1]):
        for c in range(laws.shape[2]):
            same = same and laws[a, j, c] == laws[b, j, c]
    return same


@kernel
def _part_on_laws(laws, vids, nv):
    """Followers share the leader's draws only if no variant's swap or restart law draws
    (else every follower leaves) and they have the leader's repair law (else they leave)."""
    for k in range(nv):
        if not _draw_free(laws, vids[k]):
            return 1
    k = 1
    while k < nv:
        if _same_table(laws, vids[k] * N_LAWS + LAW_REPAIR, vids[0] * N_LAWS + LAW_REPAIR):
            k += 1
        else:
            nv = _leave(vids, nv, k)
    return nv


@inline_kernel
def _settle(inst_i, inst_f, wait_i, var_i, var_f, st, laws, v, i, t):
    """Settle instance ``i`` of variant ``v`` at ``t``: the restart that began at its
    ``_READY_AT`` (drawn now, if pending) is over by ``t``: the instance is up again,
    its downtime counted. (Inlined into the event loop.)"""
    if inst_i[v, _DOWN, i] == 1 and wait_i[i] == 0 and inst_f[v, _READY_AT, i] <= t:
        if inst_i[v, _PENDING, i] == 1:
            inst_f[v, _UP_AT, i] = inst_f[v, _READY_AT, i] + sample_law(st, laws, v * N_LAWS + LAW_RESTART)
            inst_i[v, _PENDING, i] = 0
        if inst_f[v, _UP_AT, i] <= t:
            inst_i[v, _DOWN, i] = 0
            var_f[v] += inst_f[v, _UP_AT, i] - inst_f[v, _DOWN_SINCE, i]
            var_i[_V_EVENTS, v] += 1  # the restart completed


@inline_kernel
def _interrupt(inst_i, inst_f, wait_i, var_i, v, i, t, fault):
    """Instance ``i`` of variant ``v`` (settled) is hit at ``t``: an up instance goes
    down; a fault (``fault``) also restarts it from ``t``, unless it waits for a unit or
    a swap (it then restarts after the swap). (Inlined into the event loop.)"""
    up = inst_i[v, _DOWN, i] == 0
    if up:
        inst_i[v, _DOWN, i] = 1
        inst_f[v, _DOWN_SINCE, i] = t
        var_i[_V_INTERRUPTIONS, v] += 1
    if fault and (up or (wait_i[i] == 0 and inst_f[v, _READY_AT, i] <= t)):
        inst_f[v, _READY_AT, i] = t
        inst_i[v, _PENDING, i] = 1


@inline_kernel
def _take_due(rq, rn, t):
    """Take the repairs due by ``t`` off the list ``rq[:rn]`` (swap-remove); return the
    entries left, how many were taken, and the earliest left (``inf`` if none).
    (Inlined into the event loop.)"""
    rq_min, done, j = np.inf, 0, 0
    while j < rn:
        if rq[j] > t:
            rq_min = min(rq_min, rq[j])
            j += 1
        else:
            rn -= 1
            rq[j] = rq[rn]
            done += 1
    return rn, done, rq_min


@kernel
def _reshard(rs_k, rs_f, capacity, i, t, lost, relayout_hours):
    """Reshard bookkeeping of instance ``i`` at ``t`` (``cluster.on_failure = "reshard"``,
    docs/model.md#reshard); returns the capacity-hours it served since it was last seen.

    While ``rs_k[i] = k > 0`` of its GPUs have no installed unit, the instance serves
    ``capacity[k]`` of its full throughput from ``rs_f[_RS_FROM, i]`` on. ``lost`` GPUs
    leave (> 0: a failure) or come back (< 0: a swap ends); every change, and a fault
    (``lost = 0``) while it is short, costs a re-layout: no output for ``relayout_hours``.
    """
    served = 0.0
    k = rs_k[i]
    if k > 0:
        start = max(rs_f[_RS_SEEN, i], rs_f[_RS_FROM, i])
        if t > start:
            served = capacity[k] * (t - start)
        rs_f[_RS_FROM, i] = t + relayout_hours
    rs_f[_RS_SEEN, i] = t
    rs_k[i] = k + lost
    if k == 0 and lost > 0:
        rs_f[_RS_FROM, i] = t + relayout_hours
    return served


@kernel
def _overlap(first, end, i, ng):
    """GPU positions of ``[first, end)`` in instance ``i`` (of ``ng`` GPUs)."""
    return min(end, (i + 1) * ng) - max(first, i * ng)


@event_kernel
def _simulate_one(cfg, par, wb, n_wb, mwb, n_mwb, laws, thin_max, vids, n_var, inst_of, occ_g, occ_h, at_g, at_h, inst_i,
                  inst_f, wait_i, wait_f, var_i, var_f, wq, hkeys, hids, hpos, rq, batch, hit, assign, wear, rates, st,
                  out_f, out_i, row, capacity, rs_k, rs_f):
    """Simulate one lifetime of variants ``vids[:n_var]`` over the horizon; write their rows.

    The variants share everything but their swap and restart laws. The first is the
    leader: its draws and decisions make the lifetime, exactly as if it ran alone. A
    follower rides along while it would make the same draws and decisions (its swap and
    restart laws draw nothing, it has the leader's repair law, and no candidate event,
    common-cause failure or per-unit clock sees a swap end at a different time); its
    numbers are then those of its own run. A follower that would part leaves the live
    list; the caller simulates it alone afterwards.

    Parameters
    ----------
    cfg : int64[_N_CFG]
        Cluster structure (:func:`_config`).
    par : float64[N_PARAMS]
        The trial's rates, host law and horizon.
    wb : float64[K, 2]
        The trial's Weibull groups of a GPU; ``n_wb`` (int) of them are used.
    mwb : float64[K, 2]
        The Weibull groups of a GPU's field-replaceable module (``n_mwb`` used; 0: none).
    laws : float64[V * N_LAWS, MAX_LAW_PARTS, 4]
        The trial's repair, swap and restart laws of each variant (row ``v * N_LAWS +
        LAW_*``).
    thin_max : float
        :data:`THIN_MAX_CANDIDATES` (tests lower it to force per-unit clocks).
    vids : int64[V]
        Variant ids; ``vids[:n_var]`` are simulated, leader first (reordered on return).
    inst_of : int64[A]
        The instance of each GPU position, ``p // instance_gpus`` (a load instead of a
        division in the loop).
    occ_g, occ_h, at_g, at_h, inst_i, inst_f, wait_i, wait_f, var_i, var_f, wq, hkeys, hids, hpos, rq, batch,
    hit, assign, wear, rates : arrays
        Workspace (overwritten): listed GPU positions and hosts, install times per
        variant, instance state per variant, stock-out state per instance, counts per
        variant, the stock-out FIFO of slots, the heap of per-unit clocks, the pending
        repair completions, the slots failing and the instances they hit at one instant,
        the units assigned at one instant, the thinned hazard at the horizon per group,
        the superposed rates. ``hpos`` must be -1 everywhere on entry, and is again on
        return.
    st : uint64[STREAM_WORDS]
        The lifetime's random stream.
    out_f, out_i : arrays
        Output rows ``[row, v, OUT_*]``.
    capacity : float64[instance_gpus + 1]
        Reshard mode (``cfg[_C_RESHARD]``): the share of full throughput an instance serves
        with ``k`` GPUs lost (:func:`_reshard`); unused otherwise.
    rs_k, rs_f : int64[I], float64[2, I]
        Reshard workspace (:func:`_reshard`), overwritten.

    Returns
    -------
    int
        The variants that stayed with the leader: ``vids[:returned]`` have their rows
        written, ``vids[returned:n_var]`` left and must run alone.

    Notes
    -----
    An instance is down from ``_DOWN_SINCE``; while ``wait_i`` of its slots are out of
    stock it waits (a slot that takes a pool unit has it at once, in a swap); then its
    last install is at ``_READY_AT``, its restart starts there (drawn when next looked
    at: ``_PENDING``) and ends at ``_UP_AT``. Every look at an instance first *settles*
    it, except once an earlier slot of the same instant has taken it down.
    """
    host_mode = cfg[_C_HOST_MODE] == 1
    n_pos, n_hosts, n_inst, n_slots = cfg[_C_A], cfg[_C_H], cfg[_C_I], cfg[_C_SLOTS]
    gph, crews = cfg[_C_GPH], cfg[_C_CREWS]
    horizon, host_shape, host_scale = par[P_HORIZON_HOURS], par[P_HOST_SHAPE], par[P_HOST_SCALE]
    lead, nv = vids[0], n_var
    # ---- reshard (cluster.on_failure = "reshard"): every variant alone, no short paths;
    # a slot's swap end is a timer (id n_pos + n_hosts + slot) that gives its GPUs back
    reshard = cfg[_C_RESHARD] == 1
    relayout, served, ng = par[P_RESHARD_HOURS], 0.0, cfg[_C_NG]
    # ---- field-replaceable modules: a clock per GPU position (id m0 + p), renewed at each
    # module swap and GPU install; their failure takes the GPU out for module_swap_hours
    modular = cfg[_C_MODULES] == 1 and n_mwb > 0
    m0, module_swap, module_swaps = cfg[_C_M0], par[P_MODULE_SWAP_HOURS], 0
    short_paths = not (reshard or modular)
    if reshard:
        nv = 1
        rs_k[:] = 0
        rs_f[:, :] = 0.0
    if nv > 1:
        nv = _part_on_laws(laws, vids, nv)
    # no variant's swap law draws (followers that share the pass have draw-free laws):
    # a batch of swaps ends at one time
    swaps_fixed = _fixed_law(laws, lead * N_LAWS + LAW_SWAP)

    # ---- the superposed rates; wear-out laws thinned at their hazard at the horizon
    rates[_GPU_FAULT], rates[_GPU_EXP] = par[P_LAM_TRANSIENT_GPU], par[P_LAM_PERM_GPU]
    rates[_HOST_FAULT], rates[_HOST_EXP] = par[P_LAM_TRANSIENT_HOST], par[P_LAM_PERM_HOST]
    rates[_GPU_WEAR], rates[_HOST_WEAR] = 0.0, 0.0
    clocked_g = False
    for g in range(n_wb):
        wear[g] = 0.0
        if _thinned(wb[g, WB_SHAPE], wb[g, WB_SCALE], horizon, thin_max):
            wear[g] = _hazard(wb[g, WB_SHAPE], wb[g, WB_SCALE], horizon)
            rates[_GPU_WEAR] += wear[g]
        else:
            clocked_g = True
    clocked_h = False
    if host_scale > 0.0:
        if _thinned(host_shape, host_scale, horizon, thin_max):
            rates[_HOST_WEAR] = _hazard(host_shape, host_scale, horizon)
        else:
            clocked_h = True
    # a per-unit clock armed at a swap's end: followers whose swap ends elsewhere part there
    clocked = clocked_g or (host_mode and clocked_h) or modular

    # ---- t = 0: every slot filled with a new unit, every instance up
    for p in range(n_pos):
        occ_g[0, p] = p
        occ_g[1, p] = p
    for k in range(n_hosts):
        occ_h[0, k] = k
        occ_h[1, k] = k
    at_g[:, :] = 0.0
    at_h[:, :] = 0.0
    inst_i[:, :, :] = 0
    inst_f[:, :, :] = 0.0
    wait_i[:] = 0
    var_i[:, :] = 0
    var_f[:] = 0.0
    hn = 0
    if clocked_g:
        for p in range(n_pos):
            hn = _arm(hkeys, hids, hpos, hn, p, _unit_life(st, wb, n_wb, wear), horizon)
    if clocked_h:
        for k in range(n_hosts):
            hn = _arm(hkeys, hids, hpos, hn, n_pos + k, weibull_scale(st, host_scale, host_shape), horizon)
    if modular:
        for p in range(n_pos):
            hn = _arm(hkeys, hids, hpos, hn, m0 + p, _module_life(st, mwb, n_mwb), horizon)
    n_g, n_h, rn, wq_head, wq_len = n_pos, n_hosts, 0, 0, 0
    rq_min = np.inf  # the earliest pending repair completion, min(rq[:rn])
    pool, busy, queue, in_repair, max_in_repair = cfg[_C_SPARES], 0, 0, 0, 0
    crews_free = crews >= n_slots + cfg[_C_SPARES]  # a crew for every unit: no repair ever queues
    failures, swaps, repairs, events = 0, 0, 0, 0
    stockout_hours = 0.0

    lam = _total_rate(rates, n_g, n_h)
    t_exp = exponential(st, 1.0 / lam) if lam > 0.0 else np.inf
    finishing = False
    while not finishing:
        # ---- next event: the superposed one, a per-unit clock, or a repair waited on;
        # past the horizon, one last pass settles every instance there
        t_heap = hkeys[0] if hn > 0 else np.inf
        t_ret = rq_min if wq_len > 0 or queue > 0 else np.inf  # something waits for the earliest repair
        superposed = t_exp <= t_heap and t_exp <= t_ret
        t = t_exp if superposed else min(t_heap, t_ret)
        n_batch, host, fi0, fi1 = 0, -1, 0, -1  # failing slots, failing host, faulted instances
        if t > horizon:
            t, superposed, finishing = horizon, False, True
            fi1 = n_inst - 1
        elif superposed:
            r = uniform(st) * lam
            cat = -1
            for c in range(_N_CAT):
                w = (n_g if c < _HOST_FAULT else n_h) * rates[c]
                if w > 0.0:
                    cat = c
                    if r < w:
                        break
                    r -= w
            if cat < _HOST_FAULT:
                p = occ_g[0, min(int(r / rates[cat]), n_g - 1)]
                live = at_g[lead, p] <= t  # else a swap is in progress: no GPU there yet
                if nv > 1:
                    nv = _part_on_liveness(at_g, vids, nv, p, t, live)
                if live and cat == _GPU_WEAR:
                    u = uniform(st) * rates[_GPU_WEAR]
                    live = u < _gpu_wear_hazard(wb, n_wb, wear, t - at_g[lead, p])
                    if nv > 1:
                        nv = _part_on_wear(at_g, vids, nv, p, t, u, live, wb, n_wb, wear, host_shape, host_scale, False)
                if live:
                    events += 1
                    if cat == _GPU_FAULT:
                        fi0 = fi1 = inst_of[p]
                    else:
                        failures += 1
                        batch[0] = p // gph if host_mode else p
                        n_batch = 1
            else:
                k = occ_h[0, min(int(r / rates[cat]), n_h - 1)]
                live = at_h[lead, k] <= t  # (host mode: else a host swap is in progress)
                if nv > 1:
                    nv = _part_on_liveness(at_h, vids, nv, k, t, live)
                if live and cat == _HOST_WEAR:
                    u = uniform(st) * rates[_HOST_WEAR]
                    live = u < _hazard(host_shape, host_scale, t - at_h[lead, k])
                    if nv > 1:
                        nv = _part_on_wear(at_h, vids, nv, k, t, u, live, wb, n_wb, wear, host_shape, host_scale, True)
                if live:
                    events += 1
                    if cat == _HOST_FAULT:
                        fi0, fi1 = inst_of[k * gph], inst_of[min(k * gph + gph, n_pos) - 1]
                    else:
                        host = k
        elif t_heap <= t_ret:  # a per-unit clock: GPU position, or host
            ident = hids[0]
            hn = heap_remove(hkeys, hids, hpos, hn, ident)
            if modular and ident >= m0 + n_pos:  # reshard: a module swap ends, its GPU is back
                served += _reshard(rs_k, rs_f, capacity, inst_of[ident - m0 - n_pos], t, -1, relayout)
                continue
            if modular and ident >= m0:  # a module fails: its GPU is out (in place) for one module swap
                p = ident - m0
                i = inst_of[p]
                events += 1
                module_swaps += 1
                t_back = t + module_swap
                for k in range(nv):
                    v = vids[k]
                    _settle(inst_i, inst_f, wait_i, var_i, var_f, st, laws, v, i, t)
                    _interrupt(inst_i, inst_f, wait_i, var_i, v, i, t, False)
                    inst_f[v, _READY_AT, i] = max(inst_f[v, _READY_AT, i], t_back)
                    inst_i[v, _PENDING, i] = 1
                if reshard:
                    served += _reshard(rs_k, rs_f, capacity, i, t, 1, relayout)
                    hn = _arm(hkeys, hids, hpos, hn, m0 + n_pos + p, t_back, horizon)
                hn = _arm(hkeys, hids, hpos, hn, m0 + p, t_back + _module_life(st, mwb, n_mwb), horizon)
                continue
            if ident >= n_pos + n_hosts:  # reshard: the swap into a slot ends, its GPUs are back
                first, end = _positions(ident - n_pos - n_hosts, host_mode, gph, n_pos)
                for i in range(inst_of[first], inst_of[end - 1] + 1):
                    served += _reshard(rs_k, rs_f, capacity, i, t, -_overlap(first, end, i, ng), relayout)
                continue
            events += 1
            if ident < n_pos:
                failures += 1
                batch[0] = ident // gph if host_mode else ident
                n_batch = 1
            else:
                host = ident - n_pos
        # (else a repair that a slot or a queued repair waits for: the drain below)
        if fi1 >= fi0 and not finishing and wq_len == 0 and queue == 0 and short_paths:
            # ---- a transient fault while nothing waits: the passes below would drain and
            # assign nothing, and the rates stay; only the instances it touches change
            for i in range(fi0, fi1 + 1):
                for k in range(nv):
                    v = vids[k]
                    _settle(inst_i, inst_f, wait_i, var_i, var_f, st, laws, v, i, t)
                    _interrupt(inst_i, inst_f, wait_i, var_i, v, i, t, True)
            t_exp = t + exponential(st, 1.0 / lam)
            continue
        if host >= 0:  # a permanent host failure
            first, end = host * gph, min(host * gph + gph, n_pos)
            if host_mode:
                failures += end - first
                batch[0] = host
                n_batch = 1
            else:  # common cause: each GPU in place fails; the host is renewed
                for p in range(first, end):
                    if occ_g[1, p] >= 0:
                        live = at_g[lead, p] <= t
                        if nv > 1:
                            nv = _part_on_liveness(at_g, vids, nv, p, t, live)
                        if live:
                            failures += 1
                            batch[n_batch] = p
                            n_batch += 1
                for k in range(nv):
                    at_h[vids[k], host] = t
                if clocked_h:
                    hn = _arm(hkeys, hids, hpos, hn, n_pos + host, t + weibull_scale(st, host_scale, host_shape), horizon)

        # ---- GPUs failing with a pool unit and a crew for each (in gpu mode every
        # permanent failure but a stock-out or a queue): what the passes below do, the same
        # draws in the same order, without their general bookkeeping. Nothing waits, so
        # the only drains are those of a possible new maximum or of a pool count too low
        # (they draw nothing). Without this path Lite lifetimes take 10-15% longer
        if n_batch > 0 and not host_mode and wq_len == 0 and queue == 0 and pool < n_batch and rq_min <= t and crews_free \
                and short_paths:
            # the pool count is a bound: the units of the repairs due by now are back (they
            # draw nothing, and with free crews the list's order never decides a draw)
            rn, done, rq_min = _take_due(rq, rn, t)
            in_repair, busy, pool, events = in_repair - done, busy - done, pool + done, events + done
        if n_batch > 0 and not host_mode and wq_len == 0 and queue == 0 and pool >= n_batch and busy + n_batch <= crews \
                and short_paths:
            n_hit = 0
            for b in range(n_batch):
                p = batch[b]
                if clocked_g and hpos[p] >= 0:
                    hn = heap_remove(hkeys, hids, hpos, hn, p)
                if in_repair >= max_in_repair and rq_min <= t:
                    rn, done, rq_min = _take_due(rq, rn, t)
                    in_repair, busy, pool, events = in_repair - done, busy - done, pool + done, events + done
                in_repair += 1
                max_in_repair = max(max_in_repair, in_repair)
                rq[rn] = t + sample_law(st, laws, lead * N_LAWS + LAW_REPAIR)
                rq_min = min(rq_min, rq[rn])
                rn += 1
                i = inst_of[p]
                if n_hit == 0 or i != hit[n_hit - 1]:  # (the slots of one instance are consecutive in the batch)
                    hit[n_hit] = i
                    n_hit += 1
                    for k in range(nv):
                        v = vids[k]
                        _settle(inst_i, inst_f, wait_i, var_i, var_f, st, laws, v, i, t)
                        _interrupt(inst_i, inst_f, wait_i, var_i, v, i, t, False)
            repairs += n_batch
            busy += n_batch
            pool -= n_batch
            if swaps_fixed and not clocked_g:  # one install time per variant for the whole batch
                swaps += n_batch
                for k in range(nv):
                    v = vids[k]
                    t_in = t + laws[v * N_LAWS + LAW_SWAP, 0, P1]
                    if t_in <= horizon:
                        var_i[_V_EVENTS, v] += n_batch  # the installs
                    for b in range(n_batch):
                        at_g[v, batch[b]] = t_in
                    for m in range(n_hit):
                        i = hit[m]
                        inst_f[v, _READY_AT, i] = max(inst_f[v, _READY_AT, i], t_in)
                        inst_i[v, _PENDING, i] = 1
            else:  # each GPU's swap drawn in turn, then its clock if it has one
                for b in range(n_batch):
                    p = batch[b]
                    swaps += 1
                    i = inst_of[p]
                    for k in range(nv):
                        v = vids[k]
                        t_in = t + sample_law(st, laws, v * N_LAWS + LAW_SWAP)
                        if t_in <= horizon:
                            var_i[_V_EVENTS, v] += 1  # the install
                        at_g[v, p] = t_in
                        inst_f[v, _READY_AT, i] = max(inst_f[v, _READY_AT, i], t_in)
                        inst_i[v, _PENDING, i] = 1
                    if clocked_g:
                        if nv > 1:
                            nv = _part_at_install(at_g, vids, nv, p)
                        hn = _arm(hkeys, hids, hpos, hn, p, at_g[lead, p] + _unit_life(st, wb, n_wb, wear), horizon)
            n_batch = 0

        # ---- repairs due by now, then each failing slot (all emptied before any refill)
        n_assign, i_done = 0, -1
        for b in range(n_batch + 1):
            # the repairs due by t are taken off when the exact counts matter: something
            # waits, the horizon, or a failure that needs the pool, a crew or a new maximum
            exact = finishing or wq_len > 0 or queue > 0
            if b < n_batch:
                exact = exact or pool == 0 or busy >= crews or in_repair >= max_in_repair
            exact = exact and rq_min <= t  # (else none is due: nothing to scan)
            if exact:
                rq_min = np.inf  # the earliest repair left, found by the scan
            j = 0
            while exact and j < rn:
                if rq[j] > t:
                    rq_min = min(rq_min, rq[j])
                    j += 1
                    continue
                # a repair completes: its crew takes a queued unit, ...
                t_done = rq[j]
                rn -= 1
                rq[j] = rq[rn]
                in_repair -= 1
                events += 1
                if queue > 0:
                    queue -= 1
                    rq[rn] = t_done + sample_law(st, laws, lead * N_LAWS + LAW_REPAIR)
                    rn += 1
                else:
                    busy -= 1
                if wq_len > 0:  # ... and the unit refills the longest-waiting slot (t_done == t)
                    x = wq[wq_head]
                    wq_head = wq_head + 1 if wq_head + 1 < n_slots else 0
                    wq_len -= 1
                    first, end = _positions(x, host_mode, gph, n_pos)
                    for p in range(first, end):
                        n_g = _list_add(occ_g, n_g, p)
                    if host_mode:
                        n_h = _list_add(occ_h, n_h, x)
                    assign[n_assign] = 2 * x + 1
                    n_assign += 1
                else:  # ... or returns to the pool
                    pool += 1
            i0, i1 = fi0, fi1
            waits = False
            if b < n_batch:  # the unit in slot x fails: to repair; the slot takes a pool unit or waits
                x = batch[b]
                first, end = _positions(x, host_mode, gph, n_pos)
                for p in range(first, end):
                    if hpos[p] >= 0:
                        hn = heap_remove(hkeys, hids, hpos, hn, p)
                    if modular and hpos[m0 + p] >= 0:  # the module goes with its GPU
                        hn = heap_remove(hkeys, hids, hpos, hn, m0 + p)
                    if modular and reshard and hpos[m0 + n_pos + p] >= 0:  # (in a module swap: counted lost
                        hn = heap_remove(hkeys, hids, hpos, hn, m0 + n_pos + p)  # already, once)
                        served += _reshard(rs_k, rs_f, capacity, inst_of[p], t, -1, relayout)
                if host_mode and hpos[n_pos + x] >= 0:
                    hn = heap_remove(hkeys, hids, hpos, hn, n_pos + x)
                repairs += 1
                in_repair += 1
                max_in_repair = max(max_in_repair, in_repair)
                if busy < crews:
                    busy += 1
                    rq[rn] = t + sample_law(st, laws, lead * N_LAWS + LAW_REPAIR)
                    rq_min = min(rq_min, rq[rn])
                    rn += 1
                else:
                    queue += 1
                if pool > 0:
                    pool -= 1
                    assign[n_assign] = 2 * x
                    n_assign += 1
                else:  # out of stock: the slot waits, empty
                    waits = True
                    j = wq_head + wq_len
                    wq[j - n_slots if j >= n_slots else j] = x
                    wq_len += 1
                    for p in range(first, end):
                        n_g = _list_remove(occ_g, n_g, p)
                    if host_mode:
                        n_h = _list_remove(occ_h, n_h, x)
                i0, i1 = inst_of[first], inst_of[end - 1]
            for i in range(i0, i1 + 1):
                if reshard and not finishing:  # the slot's GPUs leave instance i; a fault costs a re-layout
                    lost = _overlap(first, end, i, ng) if b < n_batch else 0
                    served += _reshard(rs_k, rs_f, capacity, i, t, lost, relayout)
                if i > i_done:  # (an instance down since an earlier slot of this instant: no settle)
                    for k in range(nv):
                        v = vids[k]
                        _settle(inst_i, inst_f, wait_i, var_i, var_f, st, laws, v, i, t)
                        if not finishing:  # (b == n_batch: a transient fault)
                            _interrupt(inst_i, inst_f, wait_i, var_i, v, i, t, b == n_batch)
                    if finishing or b == n_batch:
                        continue
                    i_done = i
                if waits:  # blast radius: down until every slot has a unit again
                    if wait_i[i] == 0:
                        wait_f[i] = t
                    wait_i[i] += 1

        # ---- units assigned now: in place after a swap draw
        for a in range(n_assign):
            x, from_wait = assign[a] >> 1, assign[a] & 1
            swaps += 1
            first, end = _positions(x, host_mode, gph, n_pos)
            for k in range(nv):
                v = vids[k]
                t_in = t + sample_law(st, laws, v * N_LAWS + LAW_SWAP)
                if t_in <= horizon:
                    var_i[_V_EVENTS, v] += 1  # the install
                for p in range(first, end):
                    at_g[v, p] = t_in
                if host_mode:
                    at_h[v, x] = t_in
                for i in range(inst_of[first], inst_of[end - 1] + 1):
                    inst_f[v, _READY_AT, i] = max(inst_f[v, _READY_AT, i], t_in)
                    inst_i[v, _PENDING, i] = 1
            if clocked and nv > 1:
                nv = _part_at_install(at_g, vids, nv, first)
            if clocked_g:
                for p in range(first, end):
                    hn = _arm(hkeys, hids, hpos, hn, p, at_g[lead, p] + _unit_life(st, wb, n_wb, wear), horizon)
            if host_mode and clocked_h:
                hn = _arm(hkeys, hids, hpos, hn, n_pos + x, at_h[lead, x] + weibull_scale(st, host_scale, host_shape),
                          horizon)
            if modular:  # a new GPU comes with a new module
                for p in range(first, end):
                    hn = _arm(hkeys, hids, hpos, hn, m0 + p, at_g[lead, p] + _module_life(st, mwb, n_mwb), horizon)
            if reshard:  # the swap's end gives the slot's GPUs back (a timer; never past the horizon)
                hn = _arm(hkeys, hids, hpos, hn, n_pos + n_hosts + x, at_g[lead, first], horizon)
            if from_wait == 1:
                for i in range(inst_of[first], inst_of[end - 1] + 1):
                    wait_i[i] -= 1
                    if wait_i[i] == 0:
                        stockout_hours += t - wait_f[i]

        # ---- the superposed clock: fresh after its own event, else rescaled
        new = _total_rate(rates, n_g, n_h)
        if superposed or lam <= 0.0:
            t_exp = t + exponential(st, 1.0 / new) if new > 0.0 else np.inf
        elif new != lam:  # memoryless residual, rescaled (exact, no draw)
            t_exp = t + (t_exp - t) * (lam / new) if new > 0.0 else np.inf
        lam = new

    # ---- the horizon: downtime and stock-outs still open
    for j in range(hn):  # leave hpos all -1 for the next lifetime (cheaper than a full reset)
        hpos[hids[j]] = -1
    for i in range(n_inst):
        if wait_i[i] > 0:
            stockout_hours += horizon - wait_f[i]
        if reshard:
            served += _reshard(rs_k, rs_f, capacity, i, horizon, 0, relayout)
    for k in range(nv):
        v = vids[k]
        down_hours = var_f[v]
        for i in range(n_inst):
            if inst_i[v, _DOWN, i] == 1:
                down_hours += horizon - inst_f[v, _DOWN_SINCE, i]
        out_f[row, v, OUT_AVAILABILITY] = 1.0 - down_hours / (n_inst * horizon)
        out_f[row, v, OUT_CAPACITY] = 1.0 - (down_hours - served) / (n_inst * horizon)  # (down: served = 0)
        out_f[row, v, OUT_STOCKOUT_HOURS] = stockout_hours
        out_i[row, v, OUT_FAILURES] = failures
        out_i[row, v, OUT_INTERRUPTIONS] = var_i[_V_INTERRUPTIONS, v]
        out_i[row, v, OUT_SWAPS] = swaps
        out_i[row, v, OUT_REPAIRS] = repairs
        out_i[row, v, OUT_EVENTS] = events + var_i[_V_EVENTS, v]
        out_i[row, v, OUT_MAX_FAILED_GPUS] = max_in_repair * cfg[_C_GPUS_PER_UNIT]
        out_i[row, v, OUT_PARTED] = 0
        out_i[row, v, OUT_MODULE_SWAPS] = module_swaps
    return nv


@kernel
def _config(active_gpus, instance_gpus, gpus_per_host, host_mode, spare_units, crews, reshard, modules=False):
    """The cluster's structural ints, as int64[_N_CFG].

    Timer ids of the per-unit clocks: ``[0, A)`` GPU positions, then one per active host,
    then (reshard) one per slot for the end of its swap; then (``modules``) from
    ``cfg[_C_M0]`` one per GPU position for its module's failure and (reshard) one per
    position for the end of its module swap.
    """
    cfg = np.zeros(_N_CFG, dtype=np.int64)
    hosts = (active_gpus + gpus_per_host - 1) // gpus_per_host
    slots = hosts if host_mode else active_gpus
    cfg[_C_A] = active_gpus
    cfg[_C_NG] = instance_gpus
    cfg[_C_GPH] = gpus_per_host
    cfg[_C_HOST_MODE] = 1 if host_mode else 0
    cfg[_C_H] = hosts
    cfg[_C_I] = active_gpus // instance_gpus
    cfg[_C_SLOTS] = slots
    cfg[_C_SPARES] = spare_units
    cfg[_C_CREWS] = min(crews, slots + spare_units)  # never more repairs than units
    cfg[_C_GPUS_PER_UNIT] = gpus_per_host if host_mode else 1
    cfg[_C_M0] = active_gpus + hosts + (slots if reshard else 0)
    cfg[_C_IDS] = cfg[_C_M0] + (active_gpus * (2 if reshard else 1) if modules else 0)
    cfg[_C_RESHARD] = 1 if reshard else 0
    cfg[_C_MODULES] = 1 if modules else 0
    return cfg


@parallel_kernel
def simulate_lifetimes(seed, trial_start, params, wb, n_wb, mwb, n_mwb, laws,
                       active_gpus, instance_gpus, gpus_per_host, host_mode, spare_units, crews,
                       capacity, reshard, thin_max=THIN_MAX_CANDIDATES):
    """Simulate ``n`` cluster lifetimes of ``V`` variants, ``prange`` over blocks of lifetimes.

    The variants of a lifetime differ only in their laws (``laws[i, v]``); a variant's
    numbers are those it would have alone. Variants whose swap and restart laws draw
    nothing (fixed values, as in a fast-swap design beside its plain twin) run in one
    pass with the first while their draws and decisions coincide (:func:`_simulate_one`),
    and alone, from the start, from where they would part.

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
    mwb : float64[n, K, 2], n_mwb : int64[n]
        The same for a GPU's field-replaceable module (component classes with
        ``replace_unit = "module"``); ``n_mwb = 0``: no module.
    laws : float64[n, V, N_LAWS, MAX_LAW_PARTS, 4], C-contiguous
        Per-trial repair, swap and restart law tables of each variant (``LAW_*``; see
        :mod:`mcengine.kernels.laws`), in hours.
    active_gpus, instance_gpus, gpus_per_host : int
        Cluster shape; ``active_gpus`` is a multiple of ``instance_gpus``.
    host_mode : bool
        The replaceable unit is a host (True) or a GPU (False).
    spare_units : int
        Pool units at the start (GPUs, or hosts in host mode).
    crews : int
        Repairs at once; at least the number of units means unlimited.
    capacity : float64[instance_gpus + 1]
        Share of an instance's full throughput served with ``k`` GPUs lost, after a
        re-layout of ``params[i, P_RESHARD_HOURS]`` (read only if ``reshard``).
    reshard : bool
        ``cluster.on_failure = "reshard"`` (else ``"down"``, whose numbers it leaves as they were).
    thin_max : float
        Thin a wear-out Weibull law when ``k * H(horizon)`` is at most this
        (:data:`THIN_MAX_CANDIDATES`); 0 gives every Weibull law per-unit clocks.

    Returns
    -------
    out_f : float64[n, V, N_OUT_F]
        Availability, stock-out instance-hours and capacity availability (``OUT_*`` columns).
    out_i : int64[n, V, N_OUT_I]
        Counts over the horizon (``OUT_*`` columns).
    """
    n, n_var = laws.shape[0], laws.shape[1]
    out_f = np.empty((n, n_var, N_OUT_F), dtype=np.float64)
    out_i = np.empty((n, n_var, N_OUT_I), dtype=np.int64)
    cfg = _config(active_gpus, instance_gpus, gpus_per_host, host_mode, spare_units, crews, reshard,
                  n > 0 and n_mwb.max() > 0)
    n_blocks = min(n, _BLOCKS)
    per_block = (n + n_blocks - 1) // max(n_blocks, 1)
    inst_of = np.arange(cfg[_C_A]) // cfg[_C_NG]  # read by every block
    for b in prange(n_blocks):
        # the workspace of a block, reused by its lifetimes
        a, h, ni, ns, ids, gph = cfg[_C_A], cfg[_C_H], cfg[_C_I], cfg[_C_SLOTS], cfg[_C_IDS], cfg[_C_GPH]
        nvi = n_var * _N_INST_I * ni
        ws_i = np.empty(2 * a + 2 * h + nvi + ni + _N_VAR_I * n_var + (2 * ns + gph) + 2 * gph + 2 * ids + n_var + 1,
                        np.int64)
        nvf = n_var * _N_INST_F * ni
        ws_f = np.empty(n_var * (a + h) + ids + nvf + ni + n_var + (cfg[_C_CREWS] + 1) + wb.shape[1] + _N_CAT,
                        np.float64)
        st = np.empty(STREAM_WORDS, dtype=np.uint64)
        rs_k, rs_f = np.zeros(ni, np.int64), np.zeros((2, ni))  # reshard state (_reshard)
        occ_g = ws_i[:2 * a].reshape((2, a))
        occ_h = ws_i[2 * a:2 * a + 2 * h].reshape((2, h))
        j = 2 * a + 2 * h
        inst_i = ws_i[j:j + nvi].reshape((n_var, _N_INST_I, ni))
        j += nvi
        wait_i, var_i = ws_i[j:j + ni], ws_i[j + ni:j + ni + _N_VAR_I * n_var].reshape((_N_VAR_I, n_var))
        j += ni + _N_VAR_I * n_var
        wq, assign = ws_i[j:j + ns], ws_i[j + ns:j + 2 * ns + gph]
        j += 2 * ns + gph
        batch, hit = ws_i[j:j + gph], ws_i[j + gph:j + 2 * gph]
        j += 2 * gph
        hids, hpos = ws_i[j:j + ids], ws_i[j + ids:j + 2 * ids]
        j += 2 * ids
        vids, solo = ws_i[j:j + n_var], ws_i[j + n_var:j + n_var + 1]
        hpos[:] = -1
        at_g = ws_f[:n_var * a].reshape((n_var, a))
        at_h = ws_f[n_var * a:n_var * (a + h)].reshape((n_var, h))
        j = n_var * (a + h)
        hkeys = ws_f[j:j + ids]
        j += ids
        inst_f = ws_f[j:j + nvf].reshape((n_var, _N_INST_F, ni))
        j += nvf
        wait_f, var_f = ws_f[j:j + ni], ws_f[j + ni:j + ni + n_var]
        j += ni + n_var
        rq = ws_f[j:j + cfg[_C_CREWS] + 1]
        j += cfg[_C_CREWS] + 1
        wear, rates = ws_f[j:j + wb.shape[1]], ws_f[j + wb.shape[1]:]
        for i in range(b * per_block, min(n, (b + 1) * per_block)):
            lw = laws[i].reshape((n_var * N_LAWS, laws.shape[3], laws.shape[4]))
            for v in range(n_var):
                vids[v] = v
            k = -1  # -1: the joint pass; then vids[k] for each variant that left it, alone, from the start
            while k < n_var:
                run, n_run = vids, n_var
                if k >= 0:
                    solo[0] = vids[k]
                    run, n_run = solo, 1
                reset_stream(st, seed, STAGE_LIFE, 0, trial_start + i)
                kept = _simulate_one(cfg, params[i], wb[i], n_wb[i], mwb[i], n_mwb[i], lw, thin_max, run, n_run,
                                     inst_of, occ_g, occ_h, at_g, at_h,
                                     inst_i, inst_f, wait_i, wait_f, var_i, var_f, wq, hkeys, hids, hpos, rq, batch,
                                     hit, assign, wear, rates, st, out_f, out_i, i, capacity, rs_k, rs_f)
                if k >= 0:
                    out_i[i, solo[0], OUT_PARTED] = 1
                k = kept if k < 0 else k + 1
    return out_f, out_i
