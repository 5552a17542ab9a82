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
  no repair. With a module pool (``spare_modules`` >= 0, docs/model.md#module-pool) the
  swap takes a pool module, and the failed one is replaced: a new module is ordered and
  joins the pool ``P_MODULE_RESTOCK_HOURS`` later (one-for-one base stock); with the pool
  empty the swap waits, FIFO, for the next restock (:func:`_module_from_pool`).
* **Host units** (``reliability.host_failure = "host"``, docs/model.md#host-units): a
  permanent host failure takes the host out, not its GPUs: its instances go down, the
  host goes to repair (no crew; a list of completion times, ``ws.hrq``), and a pool host
  (``spare_hosts``) takes its place after ``P_HOST_SWAP_HOURS`` (the host's ``at_h`` in
  the future: candidates on it are rejected meanwhile), or, with none, the host waits
  (``at_h = inf``, FIFO ``ws.hwq``, its instances' ``hwait_i``) for the next host repair to
  complete (an event then, :data:`_EV_HOST_REPAIR`). Its GPUs stay, age on, and neither
  fail with it nor draw on the GPU pool (:func:`_host_unit_fails`).
* **NICs** (classes with ``per = "nic"``, docs/model.md#per-unit): NIC ``k`` serves GPU
  positions ``k * gpus_per_nic ..`` (possibly of several instances) and is always in
  place. Its permanent failures (``P_LAM_NIC_PERM``) and transient faults
  (``P_LAM_NIC_FAULT``) are two superposed categories over all NICs: a fault restarts
  the NIC's instances; a failure swaps the NIC in place in ``P_NIC_SWAP_HOURS``, its
  instances down meanwhile (:func:`_nic_fails`).
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
* **repair completions** are bare times in an unordered list while a few are pending,
  in a min-heap above :data:`~mcengine.kernels._life_workspace.RQ_HEAP_ABOVE` (so taking
  one off never scans thousands, whatever the pool and repair times): they are events
  only while something waits for them (a slot out of stock, a repair queued for a crew);
  otherwise the pool, crew and repair counts are bounds (pool at least, busy crews and
  units in repair at most) and the repairs due are taken off only when a failure needs
  an exact count (an empty pool, all crews busy, a possible new maximum in repair) and
  at the horizon. (The order among repairs due at once decides no draw: they draw only
  while a repair is queued, and then each is taken off at its own time.)
* a zero-length swap or restart completes at once;
* a per-unit **life past the horizon** is drawn (the stream stays where it would be) but
  not computed: a uniform below ``exp(-H(horizon))`` (with a margin far above rounding,
  :func:`~mcengine.kernels._life_hazard.past_uniform`) is such a life whenever it
  starts, and it arms no clock. A lifetime's start draws one life per unit (the shipped
  Lite's 4,096 laser modules, about 1 % of them within five years), so its cost per
  unit is a uniform and a compare, not a log and a power.

In the shipped Lite-GPU cluster this leaves about one loop iteration per failure or
fault: 924 per lifetime for 2,488 events an event-by-event simulation would make (swaps,
installs, restarts and repairs need none), with 93 operations on the clock heap (the
modules'). Memory per lifetime is ``O(GPUs)``, reused across the lifetimes of a block. The counts of
swaps, installs, restarts and repair completions by the horizon are still reported as
events (``OUT_EVENTS``), as an event-by-event simulation would count them.

Variants in one pass. Designs that differ only in their swap and restart laws (the
fast-swap Lite cluster beside its plain twin) see, with common random numbers, the same
failures, faults and repairs: only install times and instance states differ. While
their swap and restart laws draw nothing (fixed values) and no event looks at a unit
whose install time differs between them (a candidate on a unit still in its swap in one
variant only, a wear-out acceptance at another age, a common-cause failure, a GPU's or
host's per-unit clock armed at another time), every draw and decision is the same. So
:func:`simulate_lifetimes` takes the laws of ``V`` variants: the first leads and makes
the lifetime as if alone; the others keep their own install times and instance states
beside it and leave at the first event where they would decide otherwise, to be
simulated alone, from the start. A module that came with a GPU installed at another time
in each variant fails at another time in each: its clock is armed at the earliest, and
the variants whose module fails before anything else happens fail together, each at its
own time (each then does what its own run does, the new module's life one draw; the
module pool's restocks and waits are kept per variant, :func:`_module_fails`); only a
variant whose module fails after another event leaves. Every variant has exactly the
numbers of its own run; in the shipped case study 6-7 % of fast-swap lifetimes leave
(4,096 lifetimes, seeds 0 and 7), each at a module failure with another event between
the two variants' failure times (a swap 1.95 h longer in the plain twin).

Randomness: one counter-based stream per lifetime, ``(seed, STAGE_LIFE, 0, global
lifetime index)``; draws happen in the order of the loop, so a lifetime's result does
not depend on its block, chunk or thread.

Implementation: the loop of a lifetime (:func:`_simulate_one`) calls one named handler
per kind of step: the next event (:func:`_next_event`), a superposed event or a per-unit
clock (:func:`_pick_superposed`, :func:`_pick_clock`), a permanent host failure
(:func:`_host_fails`), the repairs due (:func:`_repairs_due`, each completion
:func:`_repair_completes`), a slot whose unit fails (:func:`_slot_empties`) and the
instances it hits (:func:`_touch_instances`), a slot refilled (:func:`_slot_refilled`),
the superposed clock (:func:`_reschedule`) and the horizon (:func:`_close`). The
handlers of the events are inlined into the loop (:data:`~mcengine.jit.inline_kernel`);
those that run once per lifetime or seldom (:func:`_lifetime`, :func:`_start`,
:func:`_close`, :func:`_module_fails`, the host units' and NICs', and the general passes'
slot steps :func:`_slot_empties` and :func:`_slot_refilled`, which the fast paths below
spare the shipped scenarios) are compiled apart and called
(:data:`~mcengine.jit.event_kernel`): each inlined handler adds its compile time to the
loop's, and the loop's size its peak memory (measured: the first four apart compile the
loop in about a fifth less time, and it runs no slower; the two slot steps apart, a first
`mcengine run` about 3 s less CPU time and 55 MB less peak memory, the shipped scenarios'
instructions per lifetime within 0.1 %, a run through the general passes alone about
3.5 % slower). The loop passes those it calls per event the workspace, the
cluster and the lifetime's fixed values by reference (:data:`_Shared`: one word a call,
not their ~400; measured: 5 % fewer instructions per ``h100`` lifetime, 3.6 % per Lite
pair). They share a named workspace (:class:`Workspace`, arrays
allocated once per block of lifetimes) and the lifetime's scalar state (one record of
:data:`STATE`, fields by name). What happens at one instant runs in passes (the repairs
due, each failing slot with the instances it touches, then the units assigned), so
every slot a failure empties is empty before any is refilled.

Two *fast paths* do what the passes do with less bookkeeping, only when the argument
``fast_paths`` is set (the default): GPUs that fail in gpu mode while the pool and the
crews suffice for all of them (:func:`_gpus_fail_fast`; a host's common-cause failure:
16 GPUs in the Lite cluster, more than four in five of its failures), and a transient
fault while nothing waits for a unit or a crew (:func:`_fault_fast`: a fault changes only
the instances it touches, about two thirds of the loop's events); modules ride along
(a failing GPU's module clock stops, its new module's is drawn after its swap, as in
the passes), reshard never takes them. They make the same
draws in the same order, so the numbers are those of the passes; the tests run both
ways and require bit-identical outputs. The loop is an
:data:`~mcengine.jit.event_kernel`: compiled without numba's reference counting, it
makes no ``NRT_incref``/``NRT_decref`` call around its draws and helpers.

References
----------
D. T. Gillespie (1977), "Exact stochastic simulation of coupled chemical reactions",
J. Phys. Chem. 81(25):2340-2361 (direct method, superposition of exponential clocks).
P. A. W. Lewis, G. S. Shedler (1979), "Simulation of nonhomogeneous Poisson processes
by thinning", Naval Research Logistics Quarterly 26(3):403-413.
docs/sources.md, Reliability: the closed forms this kernel is tested against.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from mcengine._pointer import by_reference
from mcengine.jit import event_kernel, inline_kernel, kernel, run_blocks
from mcengine.kernels._heap import heap_remove, times_pop
from mcengine.kernels._life_workspace import (
    STATE, Cluster, Lifetime, Workspace, _DOWN, _DOWN_SINCE, _PENDING, _READY_AT, _EV_CLOCK, _EV_HORIZON, _EV_HOST_REPAIR, _EV_REPAIR,
    _EV_SUPERPOSED, _K_GPU_EXP, _K_GPU_FAULT, _K_HOST_FAIL, _K_HOST_FAULT, _K_NIC_FAIL, _K_NIC_FAULT, _K_WEAR, _GPU_EXP, _GPU_FAULT,
    _GPU_WEAR, _NIC_FAIL, _NIC_FAULT,
    _HOST_EXP, _HOST_FAULT, _HOST_WEAR, _N_CAT, _PAST_GPU, _PAST_MODULE, _V_EVENTS, _V_INTERRUPTIONS, _arm,
    _config, _reshard, _install, _interrupt, _list_add, _list_remove, _positions, _push_repair, _return_due, _settle, _weigh, RQ_LIST_AT_MOST, _workspace,
)
from mcengine.kernels._life_hazard import (
    WB_SCALE, WB_SHAPE, gpu_wear_hazard, hazard, life_within, module_life, past_uniform, thinned, unit_life, wear_group,
)
from mcengine.kernels._life_variants import (
    LAW_REPAIR, LAW_RESTART, LAW_SWAP, N_LAWS, first_module_due, fixed_law, module_fails_now, part_at_install,
    part_on_laws, part_on_liveness, part_on_module, part_on_restocks, part_on_wear,
)
from mcengine.kernels.laws import P1, sample_law
from mcengine.rng import STAGE_LIFE, exponential, reset_stream, uniform, weibull_scale

__all__ = [
    "P_LAM_TRANSIENT_GPU", "P_LAM_PERM_GPU", "P_LAM_TRANSIENT_HOST", "P_LAM_PERM_HOST",
    "P_HOST_SHAPE", "P_HOST_SCALE", "P_HORIZON_HOURS", "P_RESHARD_HOURS", "P_MODULE_SWAP_HOURS", "P_HOST_SWAP_HOURS",
    "P_LAM_NIC_PERM", "P_NIC_SWAP_HOURS", "P_LAM_NIC_FAULT", "P_MODULE_RESTOCK_HOURS", "N_PARAMS",
    "OUT_MODULE_STOCKOUT_HOURS", "OUT_NIC_FAULTS", "OUT_HOST_STOCKOUT_HOURS", "OUT_HOST_REPAIRS", "OUT_HOST_SWAPS",
    "OUT_NIC_SWAPS", "OUT_NIC_FAILURES",
    "WB_SHAPE", "WB_SCALE", "OUT_AVAILABILITY", "OUT_STOCKOUT_HOURS", "OUT_CAPACITY", "N_OUT_F", "OUT_FAILURES",
    "OUT_INTERRUPTIONS", "OUT_SWAPS", "OUT_REPAIRS", "OUT_EVENTS", "OUT_MAX_FAILED_GPUS", "OUT_PARTED",
    "OUT_MODULE_SWAPS", "N_OUT_I", "OUT_GPU_FAULTS", "OUT_GPU_EXP_FAILURES", "OUT_HOST_FAULTS", "OUT_HOST_FAILURES",
    "OUT_WEAR_FAILURES", "LAW_REPAIR", "LAW_SWAP", "LAW_RESTART", "N_LAWS", "THIN_MAX_CANDIDATES",
    "Cluster", "Workspace", "STATE", "simulate_lifetimes",
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
P_HOST_SWAP_HOURS = 9  # host units: time to put a pool host in a failed host's place
P_LAM_NIC_PERM = 10  # permanent failures per NIC-hour, each NIC swapped in place
P_NIC_SWAP_HOURS = 11  # time to swap a failed NIC (or its cable, transceiver, switch port) in place
P_LAM_NIC_FAULT = 12  # transient faults per NIC-hour (restart the NIC's instances)
P_MODULE_RESTOCK_HOURS = 13  # module pool: lead time of a new module ordered for a failed one
N_PARAMS = 14
# ---- outputs: out_f[i, :] and out_i[i, :]
OUT_AVAILABILITY = 0  # time-averaged fraction of instances up
OUT_STOCKOUT_HOURS = 1  # instance-hours with a slot waiting for a unit
OUT_CAPACITY = 2  # time-averaged delivered throughput / full (reshard: degraded service counts)
OUT_HOST_STOCKOUT_HOURS = 3  # host units: instance-hours waiting for a host
OUT_MODULE_STOCKOUT_HOURS = 4  # module pool: instance-hours waiting for a module
N_OUT_F = 5
OUT_FAILURES = 0  # permanent GPU failures (a host failure counts its GPUs)
OUT_INTERRUPTIONS = 1  # instance up -> down transitions
OUT_SWAPS = 2  # units assigned to empty slots
OUT_REPAIRS = 3  # failed units sent to repair
OUT_EVENTS = 4  # events by the horizon (failures, faults, installs, restarts, repairs)
OUT_MAX_FAILED_GPUS = 5  # most GPUs in the repair system (queued or in repair) at once
OUT_PARTED = 6  # 1 if the variant parted from the joint pass and ran alone (simulate_lifetimes)
OUT_MODULE_SWAPS = 7  # failed field-replaceable modules swapped in place
OUT_HOST_REPAIRS = 8  # host units: failed hosts sent to repair
OUT_HOST_SWAPS = 9  # host units: hosts assigned to failed hosts' places
OUT_NIC_SWAPS = 10  # failed NICs swapped in place
N_OUT_I = 11
# events by class, after the N_OUT_I counts (shared by the variants of a pass, like OUT_FAILURES)
OUT_GPU_FAULTS = N_OUT_I + _K_GPU_FAULT  # transient GPU faults (every class summed)
OUT_GPU_EXP_FAILURES = N_OUT_I + _K_GPU_EXP  # permanent GPU failures of the exponential classes
OUT_HOST_FAULTS = N_OUT_I + _K_HOST_FAULT  # transient host faults
OUT_HOST_FAILURES = N_OUT_I + _K_HOST_FAIL  # permanent host failures (hosts, not their GPUs)
OUT_NIC_FAILURES = N_OUT_I + _K_NIC_FAIL  # permanent NIC failures (each a NIC swap)
OUT_NIC_FAULTS = N_OUT_I + _K_NIC_FAULT  # transient NIC faults
OUT_WEAR_FAILURES = N_OUT_I + _K_WEAR  # permanent GPU failures of Weibull group g: column OUT_WEAR_FAILURES + g

#: A wear-out Weibull law is thinned when a unit installed at t = 0 would offer at most
#: this many candidates over the horizon (``k * H(horizon)``); else one clock per unit.
THIN_MAX_CANDIDATES = 2.0


# --------------------------------------------------------------------------- event handlers

#: The workspace, the cluster and the lifetime's fixed values as the event loop passes them
#: to the handlers it calls rather than inlines (:data:`~mcengine.jit.event_kernel`): by
#: reference (:func:`~mcengine._pointer.by_reference`, made once per lifetime), one word a
#: call instead of the ~400 words of their arrays and values, each copied at every call.
#: A handler reads their fields as it would the tuples' (``ws.hrq``), each where it is used.
_Shared = namedtuple("_Shared", ["ws", "c", "lf"])


@event_kernel
def _start(ws, s, c, lf, wb, n_wb):
    """``t = 0``: every slot filled with a new unit (its per-unit clocks armed), every
    instance up, nothing in repair; the first superposed event drawn."""
    st = ws.st
    for p in range(c.positions):
        ws.occ_g[0, p] = p
        ws.occ_g[1, p] = p
    for k in range(c.hosts):
        ws.occ_h[0, k] = k
        ws.occ_h[1, k] = k
    ws.at_g[:, :] = 0.0
    ws.at_h[:, :] = 0.0
    ws.inst_i[:, :, :] = 0
    ws.inst_f[:, :, :] = 0.0
    ws.wait_i[:] = 0
    ws.var_i[:, :] = 0
    ws.var_f[:] = 0.0
    ws.by_class[:] = 0
    ws.hwait_i[:] = 0
    hn = np.int64(0)  # (typed int64, not a literal 0: one compiled _arm and heap_set for every call)
    u_past = ws.u_past  # lives past the horizon are drawn, not computed (life_within), here and later
    if lf.clocked_g:
        for g in range(n_wb):
            u_past[_PAST_GPU, g] = past_uniform(wb[g, WB_SHAPE], wb[g, WB_SCALE], lf.horizon)
        for p in range(c.positions):
            life, ws.clock_group[p] = unit_life(st, wb, n_wb, ws.wear, u_past, _PAST_GPU)
            hn = _arm(ws.hkeys, ws.hids, ws.hpos, hn, p, life, lf.horizon)
    if lf.clocked_h:
        host_past = past_uniform(lf.host_shape, lf.host_scale, lf.horizon)
        for k in range(c.hosts):
            hn = _arm(ws.hkeys, ws.hids, ws.hpos, hn, c.positions + k,
                      life_within(st, lf.host_scale, lf.host_shape, host_past), lf.horizon)
    if lf.modular:
        for g in range(lf.n_mwb):
            u_past[_PAST_MODULE, g] = past_uniform(lf.mwb[g, WB_SHAPE], lf.mwb[g, WB_SCALE], lf.horizon)
        # one group (the shipped designs): module_life's draw, with the group's values read once
        one, scale, shape, cut = lf.n_mwb == 1, lf.mwb[0, WB_SCALE], lf.mwb[0, WB_SHAPE], u_past[_PAST_MODULE, 0]
        for p in range(c.positions):
            life = life_within(st, scale, shape, cut) if one else module_life(st, lf.mwb, lf.n_mwb, u_past, _PAST_MODULE)
            if life <= lf.horizon:  # (else no clock, nothing to keep)
                ws.m_life[p] = life
                ws.m_t0[:, p] = 0.0
                hn = _arm(ws.hkeys, ws.hids, ws.hpos, hn, c.m0 + p, life, lf.horizon)
    if lf.reshard:
        ws.rs_k[:] = 0
        ws.rs_f[:, :] = 0.0
        ws.lost_by[:] = 0
    s.hn = hn
    s.n_g, s.n_h, s.rn, s.wq_head, s.wq_len = c.positions, c.hosts, 0, 0, 0
    s.rq_min, s.rq_heap = np.inf, 0
    s.pool, s.busy, s.queue, s.in_repair, s.max_in_repair = c.spares, 0, 0, 0, 0
    s.failures, s.swaps, s.repairs, s.events, s.module_swaps = 0, 0, 0, 0, 0
    s.stockout_hours, s.served = 0.0, 0.0
    s.host_pool, s.hrn, s.hwq_head, s.hwq_len, s.hrq_min, s.host_stockout_hours = c.spare_hosts, 0, 0, 0, np.inf, 0.0
    s.host_repairs, s.host_swaps, s.nic_swaps = 0, 0, 0
    s.mrq_head, s.mrq_len = 0, 0
    ws.m_so[:] = 0.0
    if lf.modular and c.spare_modules >= 0:
        ws.m_at[:, :] = 0.0
        ws.mwait_f[:, :] = 0.0
    lam = _weigh(ws.weights, ws.rates, s.n_g, s.n_h)
    s.lam, s.relisted = lam, 0
    s.t_exp = exponential(st, 1.0 / lam) if lam > 0.0 else np.inf


@inline_kernel
def _repair_waited_for(s):
    """The earliest repair completion something waits for, and its kind: a GPU repair
    (a slot out of stock, a queued repair) or a host repair (a failed host waiting for a
    host), the earlier of the two; ``inf`` when nothing waits."""
    t_ret = s.rq_min if s.wq_len > 0 or s.queue > 0 else np.inf
    ret = _EV_REPAIR
    if s.hwq_len > 0 and s.hrq_min < t_ret:
        ret, t_ret = _EV_HOST_REPAIR, s.hrq_min
    return ret, t_ret


@inline_kernel
def _next_event(ws, s, c, lf):
    """The next event, its time in ``s.t``: the superposed one, a per-unit clock, or a
    repair something waits for (a slot out of stock, a queued repair; a host repair a
    failed host waits for); past the horizon, the horizon. Clears the failing slots, host
    and faulted instances of the last."""
    t_heap = ws.hkeys[0] if s.hn > 0 else np.inf
    ret, t_ret = _repair_waited_for(s)
    t_exp = s.t_exp
    s.n_batch, s.host, s.fi0, s.fi1 = 0, -1, 0, -1
    if t_exp <= t_heap and t_exp <= t_ret:
        kind, t = _EV_SUPERPOSED, t_exp
    elif t_heap <= t_ret:
        kind, t = _EV_CLOCK, t_heap
    else:
        kind, t = ret, t_ret
    if t > lf.horizon:
        kind, t = _EV_HORIZON, lf.horizon
        s.fi1 = c.instances - 1  # one last pass settles every instance there
    s.t = t
    return kind


@inline_kernel
def _pick_superposed(ws, s, c, lf, laws, wb, n_wb, t, refs):
    """The superposed event at ``t``: a second uniform picks the category, then the unit
    uniformly among those listed (Gillespie's direct method); a candidate on a unit
    still in its swap is rejected, a wear-out candidate is accepted with probability
    ``h(age) / h(horizon)`` (thinning). An accepted one is a transient fault (its
    instances in ``fi0 .. fi1``), a GPU failure (its slot in ``batch``), a host failure
    (``host``) or a NIC failure (handled here, :func:`_nic_fails`: a NIC is in place
    whatever its GPUs are doing, so no candidate is rejected)."""
    st, rates, vids = ws.st, ws.rates, ws.vids
    n_g, n_h = s.n_g, s.n_h
    u = 0.0
    r = uniform(st) * s.lam
    cat = -1
    for k in range(_N_CAT):
        w = ws.weights[k]  # (_weigh: the rate of category k over the listed units)
        if w > 0.0:
            cat = k
            if r < w:
                break
            r -= w
    if cat >= _NIC_FAIL:  # one of the NICs, uniformly: GPU positions first .. end - 1
        s.events += 1
        nic = min(int(r / rates[cat] * c.nics), c.nics - 1)
        first, end = nic * c.gpus_per_nic, min(nic * c.gpus_per_nic + c.gpus_per_nic, c.positions)
        if cat == _NIC_FAULT:
            ws.by_class[_K_NIC_FAULT] += 1
            s.fi0, s.fi1 = ws.inst_of[first], ws.inst_of[end - 1]
        else:
            ws.by_class[_K_NIC_FAIL] += 1
            _nic_fails(refs.ws, s, refs.c, refs.lf, laws, nic, first, end, t)
    elif cat < _HOST_FAULT:
        p = ws.occ_g[0, min(int(r / rates[cat]), n_g - 1)]
        live = ws.at_g[lf.lead, p] <= t  # else a swap is in progress: no GPU there yet
        if s.nv > 1:
            s.nv = part_on_liveness(ws.at_g, vids, s.nv, p, t, live)
        if live and cat == _GPU_WEAR:
            u = uniform(st) * rates[_GPU_WEAR]
            live = u < gpu_wear_hazard(wb, n_wb, ws.wear, t - ws.at_g[lf.lead, p])
            if s.nv > 1:
                s.nv = part_on_wear(ws.at_g, vids, s.nv, p, t, u, live, wb, n_wb, ws.wear, lf.host_shape,
                                    lf.host_scale, False)
        if live:
            s.events += 1
            if cat == _GPU_FAULT:
                ws.by_class[_K_GPU_FAULT] += 1
                s.fi0 = s.fi1 = ws.inst_of[p]
            else:
                if cat == _GPU_EXP:
                    ws.by_class[_K_GPU_EXP] += 1
                else:
                    ws.by_class[_K_WEAR + wear_group(wb, n_wb, ws.wear, t - ws.at_g[lf.lead, p], u)] += 1
                s.failures += 1
                ws.batch[0] = p // c.gpus_per_host if c.host_mode else p
                s.n_batch = 1
    else:
        k = ws.occ_h[0, min(int(r / rates[cat]), n_h - 1)]
        live = ws.at_h[lf.lead, k] <= t  # (host mode: else a host swap is in progress)
        if s.nv > 1:
            s.nv = part_on_liveness(ws.at_h, vids, s.nv, k, t, live)
        if live and cat == _HOST_WEAR:
            u = uniform(st) * rates[_HOST_WEAR]
            live = u < hazard(lf.host_shape, lf.host_scale, t - ws.at_h[lf.lead, k])
            if s.nv > 1:
                s.nv = part_on_wear(ws.at_h, vids, s.nv, k, t, u, live, wb, n_wb, ws.wear, lf.host_shape,
                                    lf.host_scale, True)
        if live:
            s.events += 1
            if cat == _HOST_FAULT:
                ws.by_class[_K_HOST_FAULT] += 1
                gph = c.gpus_per_host
                s.fi0, s.fi1 = ws.inst_of[k * gph], ws.inst_of[min(k * gph + gph, c.positions) - 1]
            else:
                ws.by_class[_K_HOST_FAIL] += 1
                s.host = k


@inline_kernel
def _pick_clock(ws, s, c, lf, laws, t, refs):
    """The earliest per-unit clock fires: a GPU position's (its slot in ``batch``) or a
    host's (``host``); or, handled here (returns True: nothing else happens now), a
    module's failure (:func:`_module_fails`), or (reshard) the end of a module swap or
    of a slot's swap, a host swap or a NIC swap, whose GPUs are back."""
    ident = ws.hids[0]
    s.hn = heap_remove(ws.hkeys, ws.hids, ws.hpos, s.hn, ident)
    n_pos = c.positions
    if ident >= c.h0:  # reshard: a host swap or a NIC swap ends (the ids past every other)
        _swap_ends(refs.ws, s, refs.c, refs.lf, ident, t)
        return True
    if lf.modular and ident >= c.m0 + n_pos:  # reshard: a module swap ends, its GPU is back
        _lose(ws, s, c, lf, ident - c.m0 - n_pos, ident - c.m0 - n_pos + 1, t, -1)
        return True
    if lf.modular and ident >= c.m0:
        _module_fails(refs.ws, s, refs.c, refs.lf, laws, ident - c.m0, t)
        return True
    if ident >= n_pos + c.hosts:  # reshard: the swap into a slot ends, its GPUs are back
        first, end = _positions(ident - n_pos - c.hosts, c.host_mode, c.gpus_per_host, n_pos)
        _lose(ws, s, c, lf, first, end, t, -1)
        return True
    s.events += 1
    if ident < c.positions:
        ws.by_class[_K_WEAR + ws.clock_group[ident]] += 1
        s.failures += 1
        ws.batch[0] = ident // c.gpus_per_host if c.host_mode else ident
        s.n_batch = 1
    else:
        ws.by_class[_K_HOST_FAIL] += 1
        s.host = ident - c.positions
    return False


@inline_kernel
def _down_for_swap(ws, laws, v, i, t, t_back):
    """Instance ``i`` of variant ``v`` goes down at ``t`` for a part swapped in place (a
    module, a NIC): it restarts when the swap ends at ``t_back`` (:func:`_install`)."""
    _settle(ws, laws, v, i, t)
    _interrupt(ws, v, i, t, False)
    _install(ws, v, i, t_back)


@inline_kernel
def _lose(ws, s, c, lf, first, end, t, delta):
    """Reshard: GPU positions ``first .. end - 1`` gain (``delta = 1``) or shed (``-1``) one
    reason to be out of service (their slot empty or in a swap, a module swap, their host
    or NIC out; ``ws.lost_by``); each instance's lost GPUs change by those whose reasons
    rise from or fall to none, so a GPU out for two reasons counts once (:func:`_reshard`:
    a change of none re-layouts as a fault while short does)."""
    for i in range(ws.inst_of[first], ws.inst_of[end - 1] + 1):
        change = 0
        for p in range(max(first, i * c.instance_gpus), min(end, (i + 1) * c.instance_gpus)):
            before = ws.lost_by[p]
            ws.lost_by[p] = before + delta
            change += (before == 0) - (before + delta == 0)
        s.served += _reshard(ws, i, t, change, lf.relayout_hours)


@event_kernel
def _module_fails(ws, s, c, lf, laws, p, t):
    """The clock of GPU position ``p``'s module fires at ``t``: the module fails, the GPU's
    instance goes down (its restart after the module swap, in place: no pool unit, no
    repair; reshard: the GPU lost until the swap ends, a timer) and a new module's clock
    starts at the swap's end.

    In each variant the module fails at its own time, ``m_t0[v, p] + m_life[p]`` (a module
    that came with a unit installed at another time in each), the clock armed at the
    earliest. Those due by the horizon before the next other event fail together, each at
    its own time (nothing happens in between, so each does what its own run does, and the
    new module's life is one draw); followers that fail now otherwise than the leader
    leave (:func:`~mcengine.kernels._life_variants.part_on_module`), and if the leader's
    fails later, nothing fails now: the clock is armed again at the earliest time left."""
    vids, life, due = ws.vids, ws.m_life[p], ws.m_due
    if s.nv > 1 or ws.m_t0[lf.lead, p] + life != t:  # (else the leader alone, at t)
        t_next = min(s.t_exp, ws.hkeys[0] if s.hn > 0 else np.inf, _repair_waited_for(s)[1])  # (the next event's time, _next_event)
        s.nv = part_on_module(ws.m_t0, vids, s.nv, p, life, t, t_next, lf.horizon)
        if not module_fails_now(ws.m_t0[lf.lead, p] + life, t, t_next, lf.horizon):
            s.hn = _arm(ws.hkeys, ws.hids, ws.hpos, s.hn, c.m0 + p, first_module_due(ws.m_t0, vids, s.nv, p, life),
                        lf.horizon)
            return
    i = ws.inst_of[p]
    s.events += 1
    s.module_swaps += 1
    for k in range(s.nv):  # m_t0: the time the new module is at hand (the pool may delay it), then in place
        v = vids[k]
        due[v] = ws.m_t0[v, p] + life
        ws.m_t0[v, p] = due[v]
    if c.spare_modules >= 0:
        _module_from_pool(ws, s, c, lf, p, i)
    for k in range(s.nv):
        v = vids[k]
        ws.m_t0[v, p] += lf.module_swap_hours
        _down_for_swap(ws, laws, v, i, due[v], ws.m_t0[v, p])
    if lf.reshard:
        _lose(ws, s, c, lf, p, p + 1, t, 1)
        s.hn = _arm(ws.hkeys, ws.hids, ws.hpos, s.hn, c.m0 + c.positions + p, ws.m_t0[lf.lead, p], lf.horizon)
    life = module_life(ws.st, lf.mwb, lf.n_mwb, ws.u_past, _PAST_MODULE)
    ws.m_life[p] = life
    s.hn = _arm(ws.hkeys, ws.hids, ws.hpos, s.hn, c.m0 + p, first_module_due(ws.m_t0, vids, s.nv, p, life), lf.horizon)


@inline_kernel
def _module_from_pool(ws, s, c, lf, p, i):
    """A module for position ``p`` (instance ``i``), failed at ``m_due[v]`` in each variant
    ``v`` of the pass, from the pool (docs/model.md#module-pool): a new one is ordered, in
    at ``m_due[v] + module_restock_hours`` (one-for-one base stock, Sherbrooke 2004 ch. 2).
    Stock on hand plus orders pending minus swaps waiting is ``spare_modules`` at all
    times, so with ``O`` orders pending (this one's included) the swap waits when ``O >
    spare_modules``, FIFO: for the ``(O - spare_modules)``-th pending order (one lead time
    for all, so the ring of pending orders is in arrival order). A wait sets when the
    module is at hand, ``m_t0[v, p]``; it is counted in the instance's stock-out hours
    (instance-hours: overlapping waits once) and, in ``m_at``, delays the module clock of
    a GPU installed meanwhile (:func:`_slot_refilled`). Followers in which another number
    of restocks is in by their failure leave (the ring's length is common)."""
    mrq, n, vids, due = ws.mrq, ws.mrq.shape[1], ws.vids, ws.m_due
    s.nv, done = part_on_restocks(mrq, vids, s.nv, s.mrq_head, s.mrq_len, due)
    s.mrq_head = s.mrq_head + done - (n if s.mrq_head + done >= n else 0)  # restocks in by now: to the pool or a waiting swap
    s.mrq_len -= done
    j = s.mrq_head + s.mrq_len
    for k in range(s.nv):
        v = vids[k]
        mrq[v, j - n if j >= n else j] = due[v] + lf.module_restock_hours
    s.mrq_len += 1
    short = s.mrq_len - c.spare_modules
    if short <= 0:
        return
    j = s.mrq_head + short - 1
    for k in range(s.nv):
        v = vids[k]
        t_in = mrq[v, j - n if j >= n else j]
        ws.m_so[v] += max(0.0, min(t_in, lf.horizon) - max(due[v], ws.mwait_f[v, i]))
        ws.mwait_f[v, i] = max(ws.mwait_f[v, i], t_in)
        ws.m_at[v, p] = t_in + lf.module_swap_hours
        ws.m_t0[v, p] = t_in


@event_kernel
def _nic_fails(ws, s, c, lf, laws, nic, first, end, t):
    """NIC ``nic`` (GPU positions ``first .. end - 1``) fails at ``t`` (a ``per = "nic"``
    class): it is swapped in place in ``nic_swap_hours`` (no pool unit, no GPU repair), its
    instances down meanwhile and restarted after (reshard: the NIC's GPUs lost until the
    swap ends, a timer per NIC; a NIC that fails again while in its swap loses no more GPUs)."""
    s.nic_swaps += 1
    t_back = t + lf.nic_swap_hours
    ident = c.n0 + nic
    lost = lf.reshard and ws.hpos[ident] < 0
    for i in range(ws.inst_of[first], ws.inst_of[end - 1] + 1):
        for k in range(s.nv):
            _down_for_swap(ws, laws, ws.vids[k], i, t, t_back)
        if lf.reshard and not lost:
            s.served += _reshard(ws, i, t, 0, lf.relayout_hours)
    if lost:
        _lose(ws, s, c, lf, first, end, t, 1)
    if lf.reshard:
        if lost or t_back <= lf.horizon:
            s.hn = _arm(ws.hkeys, ws.hids, ws.hpos, s.hn, ident, t_back, lf.horizon)
        else:  # (a swap past the horizon: the GPUs stay lost)
            s.hn = heap_remove(ws.hkeys, ws.hids, ws.hpos, s.hn, ident)


@event_kernel
def _swap_ends(ws, s, c, lf, ident, t):
    """Reshard: the swap timer ``ident`` fires at ``t``: a host swap's end (``h0 + host``)
    or a NIC swap's end (``n0 + nic``) gives the GPUs back to their instances."""
    if ident >= c.n0:
        first, end = _positions(ident - c.n0, True, c.gpus_per_nic, c.positions)
    else:
        first, end = _positions(ident - c.h0, True, c.gpus_per_host, c.positions)
    _lose(ws, s, c, lf, first, end, t, -1)


@event_kernel
def _host_unit_fails(ws, s, c, lf, laws, host, first, end, t):
    """Host units (``reliability.host_failure = "host"``, docs/model.md#host-units): host
    ``host`` (GPU positions ``first .. end - 1``) fails at ``t``. It goes to repair (one
    ``repair_hours`` draw; host repairs take no crew) and takes its instances down; its
    GPUs stay in place, age on and are neither repaired nor replaced. A pool host takes
    its place in ``host_swap_hours`` (:func:`_host_assigned`); with none, the host waits
    (FIFO) for the next host repair to complete. Reshard: its GPUs are lost until then."""
    _host_repairs_due(ws, s, c, lf, laws, t)  # the pool count exact
    s.host_repairs += 1
    when = t + sample_law(ws.st, laws, lf.lead * N_LAWS + LAW_REPAIR)
    ws.hrq[s.hrn] = when
    s.hrn += 1
    s.hrq_min = min(s.hrq_min, when)
    i0, i1 = ws.inst_of[first], ws.inst_of[end - 1]
    for i in range(i0, i1 + 1):
        for k in range(s.nv):
            v = ws.vids[k]
            _settle(ws, laws, v, i, t)
            _interrupt(ws, v, i, t, False)
    if lf.reshard:
        _lose(ws, s, c, lf, first, end, t, 1)
    if lf.clocked_h and ws.hpos[c.positions + host] >= 0:  # (its clock: the failure that fired, or a spare one)
        s.hn = heap_remove(ws.hkeys, ws.hids, ws.hpos, s.hn, c.positions + host)
    if s.host_pool > 0:
        s.host_pool -= 1
        _host_assigned(ws, s, c, lf, host, first, end, t)
        return
    for k in range(s.nv):  # no host in place: every candidate on it is rejected until one comes
        ws.at_h[ws.vids[k], host] = np.inf
    j = s.hwq_head + s.hwq_len
    ws.hwq[j - c.hosts if j >= c.hosts else j] = host
    s.hwq_len += 1
    for i in range(i0, i1 + 1):
        if ws.hwait_i[i] == 0:
            ws.hwait_f[i] = t
        ws.hwait_i[i] += 1


@event_kernel
def _host_assigned(ws, s, c, lf, host, first, end, t):
    """A host (from the pool, or just repaired) takes failed host ``host``'s place at ``t``:
    in place after ``host_swap_hours`` (every variant: a fixed time), its clock armed
    there; its instances restart once their last install ends (reshard: its GPUs back then)."""
    s.host_swaps += 1
    t_in = t + lf.host_swap_hours
    for k in range(s.nv):
        v = ws.vids[k]
        ws.at_h[v, host] = t_in
        if t_in <= lf.horizon:
            ws.var_i[_V_EVENTS, v] += 1  # the install
        for i in range(ws.inst_of[first], ws.inst_of[end - 1] + 1):
            _install(ws, v, i, t_in)
    if lf.clocked_h:
        s.hn = _arm(ws.hkeys, ws.hids, ws.hpos, s.hn, c.positions + host,
                    t_in + weibull_scale(ws.st, lf.host_scale, lf.host_shape), lf.horizon)
    if lf.reshard:
        s.hn = _arm(ws.hkeys, ws.hids, ws.hpos, s.hn, c.h0 + host, t_in, lf.horizon)


@event_kernel
def _host_repairs_due(ws, s, c, lf, laws, t):
    """The host repairs due by ``t`` complete (host units): each repaired host takes the
    place of the longest-waiting failed host (its instances' wait for a host ends) or
    returns to the host pool."""
    if s.hrq_min > t:
        return
    hrq = ws.hrq
    hrq_min = np.inf
    j = 0
    while j < s.hrn:
        if hrq[j] > t:
            hrq_min = min(hrq_min, hrq[j])
            j += 1
            continue
        s.hrn -= 1
        hrq[j] = hrq[s.hrn]
        s.events += 1
        if s.hwq_len == 0:
            s.host_pool += 1
            continue
        host = ws.hwq[s.hwq_head]
        s.hwq_head = s.hwq_head + 1 if s.hwq_head + 1 < c.hosts else 0
        s.hwq_len -= 1
        first, end = _positions(host, True, c.gpus_per_host, c.positions)
        for i in range(ws.inst_of[first], ws.inst_of[end - 1] + 1):
            ws.hwait_i[i] -= 1
            if ws.hwait_i[i] == 0:
                s.host_stockout_hours += t - ws.hwait_f[i]
        _host_assigned(ws, s, c, lf, host, first, end, t)
    s.hrq_min = hrq_min


@inline_kernel
def _fault_fast(ws, s, lf, laws, t):
    """Fast path: a transient fault while nothing waits for a unit or a crew. The passes
    would drain and assign nothing and the rates stay: only the instances it touches
    change, and the superposed clock is drawn afresh."""
    for i in range(s.fi0, s.fi1 + 1):
        for k in range(s.nv):
            v = ws.vids[k]
            _settle(ws, laws, v, i, t)
            _interrupt(ws, v, i, t, True)
    s.t_exp = t + exponential(ws.st, 1.0 / s.lam)


@inline_kernel
def _host_fails(ws, s, c, lf, laws, t, refs):
    """A permanent failure of host ``s.host``: with host units (``reliability.host_failure
    = "host"``) the host alone (:func:`_host_unit_fails`); in host mode its slot fails
    (every GPU counted); in gpu mode each of its GPUs in place fails (common cause, into
    ``batch``) and the host is renewed (its clock armed afresh)."""
    host, gph = s.host, c.gpus_per_host
    first, end = host * gph, min(host * gph + gph, c.positions)
    if c.host_units:
        _host_unit_fails(refs.ws, s, refs.c, refs.lf, laws, host, first, end, t)
        return
    if c.host_mode:
        s.failures += end - first
        ws.batch[0] = host
        s.n_batch = 1
        return
    for p in range(first, end):
        if ws.occ_g[1, p] >= 0:
            live = ws.at_g[lf.lead, p] <= t
            if s.nv > 1:
                s.nv = part_on_liveness(ws.at_g, ws.vids, s.nv, p, t, live)
            if live:
                s.failures += 1
                ws.batch[s.n_batch] = p
                s.n_batch += 1
    for k in range(s.nv):
        ws.at_h[ws.vids[k], host] = t
    if lf.clocked_h:
        s.hn = _arm(ws.hkeys, ws.hids, ws.hpos, s.hn, c.positions + host,
                    t + weibull_scale(ws.st, lf.host_scale, lf.host_shape), lf.horizon)


@inline_kernel
def _gpus_fail_fast(ws, s, c, lf, laws, wb, n_wb, t):
    """Fast path (gpu mode, nothing waits): the GPUs in ``batch`` fail with a pool unit
    and a crew for each. What the passes do, the same draws in the same order, without
    their general bookkeeping: each GPU goes to repair (the repairs due drained first
    where a pass would: a possible new maximum in repair) and is swapped from the pool;
    its instance is hit once. Returns False (and changes nothing) when the pool or the
    crews fall short."""
    n_batch = s.n_batch
    if s.pool < n_batch and s.rq_min <= t and lf.crews_free:
        # the pool count is a bound: the units of the repairs due by now are back (they
        # draw nothing, and with free crews the list's order never decides a draw)
        _return_due(ws, s, t)
    if s.pool < n_batch or s.busy + n_batch > c.crews:
        return False
    batch, hit, vids = ws.batch, ws.hit, ws.vids
    n_hit = 0
    for b in range(n_batch):
        p = batch[b]
        if lf.clocked_g and ws.hpos[p] >= 0:
            s.hn = heap_remove(ws.hkeys, ws.hids, ws.hpos, s.hn, p)
        if lf.modular and ws.hpos[c.m0 + p] >= 0:  # the module goes with its GPU
            s.hn = heap_remove(ws.hkeys, ws.hids, ws.hpos, s.hn, c.m0 + p)
        if s.in_repair >= s.max_in_repair and s.rq_min <= t:
            _return_due(ws, s, t)
        s.in_repair += 1
        s.max_in_repair = max(s.max_in_repair, s.in_repair)
        when = t + sample_law(ws.st, laws, lf.lead * N_LAWS + LAW_REPAIR)
        _push_repair(ws.rq, s, when)
        s.rq_min = min(s.rq_min, when)
        i = ws.inst_of[p]
        if n_hit == 0 or i != hit[n_hit - 1]:  # (the slots of one instance are consecutive in the batch)
            hit[n_hit] = i
            n_hit += 1
            for k in range(s.nv):
                v = vids[k]
                _settle(ws, laws, v, i, t)
                _interrupt(ws, v, i, t, False)
    s.repairs += n_batch
    s.busy += n_batch
    s.pool -= n_batch
    s.swaps += n_batch
    if lf.swaps_fixed and not (lf.clocked_g or lf.modular):  # one install time per variant for the whole batch
        for k in range(s.nv):
            v = vids[k]
            t_in = t + laws[v * N_LAWS + LAW_SWAP, 0, P1]
            if t_in <= lf.horizon:
                ws.var_i[_V_EVENTS, v] += n_batch  # the installs
            for b in range(n_batch):
                ws.at_g[v, batch[b]] = t_in
            for m in range(n_hit):
                _install(ws, v, hit[m], t_in)
    else:  # each GPU's swap drawn in turn, then its clocks if it has them (its module's last)
        for b in range(n_batch):
            p = batch[b]
            i = ws.inst_of[p]
            for k in range(s.nv):
                v = vids[k]
                t_in = t + sample_law(ws.st, laws, v * N_LAWS + LAW_SWAP)
                if t_in <= lf.horizon:
                    ws.var_i[_V_EVENTS, v] += 1  # the install
                ws.at_g[v, p] = t_in
                _install(ws, v, i, t_in)
            if lf.clocked and s.nv > 1:
                s.nv = part_at_install(ws.at_g, vids, s.nv, p)
            if lf.clocked_g:
                life, ws.clock_group[p] = unit_life(ws.st, wb, n_wb, ws.wear, ws.u_past, _PAST_GPU)
                s.hn = _arm(ws.hkeys, ws.hids, ws.hpos, s.hn, p, ws.at_g[lf.lead, p] + life, lf.horizon)
            if lf.modular:
                _module_installed(ws, s, c, lf, p)
    s.n_batch = 0
    return True


@inline_kernel
def _unlist(ws, s, c, x, add):
    """List slot ``x``'s positions (and host, in host mode) as filled (``add``) or empty."""
    first, end = _positions(x, c.host_mode, c.gpus_per_host, c.positions)
    for p in range(first, end):
        s.n_g = _list_add(ws.occ_g, s.n_g, p) if add else _list_remove(ws.occ_g, s.n_g, p)
    if c.host_mode:
        s.n_h = _list_add(ws.occ_h, s.n_h, x) if add else _list_remove(ws.occ_h, s.n_h, x)
    s.relisted = 1


@inline_kernel
def _repair_completes(ws, s, c, lf, laws, t_done):
    """A repair completes at ``t_done`` (``rq`` entry already taken off): its crew takes a
    queued unit (a repair drawn), and the unit refills the longest-waiting slot out of
    stock (assigned now) or returns to the pool."""
    s.in_repair -= 1
    s.events += 1
    if s.queue > 0:
        s.queue -= 1
        _push_repair(ws.rq, s, t_done + sample_law(ws.st, laws, lf.lead * N_LAWS + LAW_REPAIR))
    else:
        s.busy -= 1
    if s.wq_len > 0:  # (t_done == t)
        x = ws.wq[s.wq_head]
        s.wq_head = s.wq_head + 1 if s.wq_head + 1 < c.slots else 0
        s.wq_len -= 1
        _unlist(ws, s, c, x, True)
        ws.assign[s.n_assign] = 2 * x + 1
        s.n_assign += 1
    else:
        s.pool += 1


@inline_kernel
def _repairs_due(ws, s, c, lf, laws, t, failing, finishing):
    """The repairs due by ``t`` complete (earliest first), when the exact counts matter:
    something waits, the horizon (``finishing``), or a failing slot (``failing``) that
    needs the pool, a crew or a possible new maximum in repair. Otherwise the pool,
    crew and repair counts stay bounds and none is taken off."""
    exact = finishing or s.wq_len > 0 or s.queue > 0
    if failing:
        exact = exact or s.pool == 0 or s.busy >= c.crews or s.in_repair >= s.max_in_repair
    if not exact or s.rq_min > t:  # (else none is due: nothing to scan)
        return
    rq = ws.rq
    # the form holds through the loop: a completion that draws a new repair takes one off
    # first, so a list never outgrows RQ_HEAP_ABOVE here
    heap = s.rq_heap != 0
    rq_min = np.inf  # a list: one swap-remove scan, and the earliest repair it leaves
    j = 0
    while True:  # one repair due at a time, its completion inlined once
        if heap:  # earliest first (a repair drawn now and due by t too)
            if s.rn == 0 or rq[0] > t:
                break
            t_done, s.rn = times_pop(rq, s.rn)
        else:
            while j < s.rn and rq[j] > t:
                rq_min = min(rq_min, rq[j])
                j += 1
            if j >= s.rn:
                break
            t_done = rq[j]
            s.rn -= 1
            rq[j] = rq[s.rn]
        _repair_completes(ws, s, c, lf, laws, t_done)
    if not heap:
        s.rq_min = rq_min
        return
    s.rq_min = rq[0] if s.rn > 0 else np.inf
    if s.rn <= RQ_LIST_AT_MOST:  # (a heap is a list too)
        s.rq_heap = 0


@event_kernel
def _slot_empties(ws, s, c, lf, laws, x, t):
    """The unit in slot ``x`` fails at ``t``: its clocks stop (reshard: its GPUs leave
    their instances, :func:`_reshard`), it goes to repair (a crew
    if one is free, else the queue); the slot takes a pool unit (assigned now) or waits,
    empty (unlisted, queued for the next repaired unit). Returns whether it waits."""
    first, end = _positions(x, c.host_mode, c.gpus_per_host, c.positions)
    for p in range(first, end):
        if ws.hpos[p] >= 0:
            s.hn = heap_remove(ws.hkeys, ws.hids, ws.hpos, s.hn, p)
        if lf.modular and ws.hpos[c.m0 + p] >= 0:  # the module goes with its GPU
            s.hn = heap_remove(ws.hkeys, ws.hids, ws.hpos, s.hn, c.m0 + p)
        if lf.modular and lf.reshard and ws.hpos[c.m0 + c.positions + p] >= 0:  # (in a module swap: counted
            s.hn = heap_remove(ws.hkeys, ws.hids, ws.hpos, s.hn, c.m0 + c.positions + p)  # lost already, once)
            _lose(ws, s, c, lf, p, p + 1, t, -1)
    if lf.reshard:  # the slot's GPUs leave their instances
        _lose(ws, s, c, lf, first, end, t, 1)
    if c.host_mode and ws.hpos[c.positions + x] >= 0:
        s.hn = heap_remove(ws.hkeys, ws.hids, ws.hpos, s.hn, c.positions + x)
    s.repairs += 1
    s.in_repair += 1
    s.max_in_repair = max(s.max_in_repair, s.in_repair)
    if s.busy < c.crews:
        s.busy += 1
        when = t + sample_law(ws.st, laws, lf.lead * N_LAWS + LAW_REPAIR)
        _push_repair(ws.rq, s, when)
        s.rq_min = min(s.rq_min, when)
    else:
        s.queue += 1
    if s.pool > 0:
        s.pool -= 1
        ws.assign[s.n_assign] = 2 * x
        s.n_assign += 1
        return False
    j = s.wq_head + s.wq_len  # out of stock: the slot waits, empty
    ws.wq[j - c.slots if j >= c.slots else j] = x
    s.wq_len += 1
    _unlist(ws, s, c, x, False)
    return True


@inline_kernel
def _touch_instances(ws, s, laws, i0, i1, t, i_done, hit, fault, waits):
    """Instances ``i0 .. i1`` are looked at, at ``t``: each settled (unless an earlier
    slot of this instant already took it down: ``i <= i_done``), then hit by a failing
    slot (``hit``) or a fault (``fault``; neither: the horizon). A slot out of stock
    (``waits``) keeps them down (blast radius). Returns the new ``i_done``."""
    for i in range(i0, i1 + 1):
        if i > i_done:
            for k in range(s.nv):
                v = ws.vids[k]
                _settle(ws, laws, v, i, t)
                if hit or fault:
                    _interrupt(ws, v, i, t, fault)
            if hit:
                i_done = i
        if waits:  # down until every slot has a unit again
            if ws.wait_i[i] == 0:
                ws.wait_f[i] = t
            ws.wait_i[i] += 1
    return i_done


@inline_kernel
def _module_installed(ws, s, c, lf, p):
    """A new GPU at position ``p`` comes with a new module (or, module pool, the one its
    position waits for: ``m_at``): its clock armed from the later of the two installs, at
    the earliest of the variants' times (:func:`_module_fails`)."""
    if lf.n_mwb == 1:  # one group (the shipped designs): module_life's draw without its loop and minimum
        life = life_within(ws.st, lf.mwb[0, WB_SCALE], lf.mwb[0, WB_SHAPE], ws.u_past[_PAST_MODULE, 0])
    else:
        life = module_life(ws.st, lf.mwb, lf.n_mwb, ws.u_past, _PAST_MODULE)
    if life > lf.horizon:  # (no clock, nothing to keep: most lives)
        return
    ws.m_life[p] = life
    for k in range(s.nv):
        v = ws.vids[k]
        ws.m_t0[v, p] = max(ws.at_g[v, p], ws.m_at[v, p]) if c.spare_modules >= 0 else ws.at_g[v, p]
    s.hn = _arm(ws.hkeys, ws.hids, ws.hpos, s.hn, c.m0 + p, first_module_due(ws.m_t0, ws.vids, s.nv, p, life), lf.horizon)


@event_kernel
def _slot_refilled(ws, s, c, lf, laws, wb, n_wb, x, from_wait, t):
    """Slot ``x`` is assigned a unit at ``t`` (from the pool, or a repaired one if it was
    out of stock, ``from_wait``): in place after a swap draw (per variant), its clocks
    armed (and its modules'; reshard: the swap's end a timer, and a GPU whose position
    waits for a module from the pool stays lost until that module swap ends, the module
    swap's timer); its instances restart once their last swap ends."""
    s.swaps += 1
    vids = ws.vids
    first, end = _positions(x, c.host_mode, c.gpus_per_host, c.positions)
    for k in range(s.nv):
        v = vids[k]
        t_in = t + sample_law(ws.st, laws, v * N_LAWS + LAW_SWAP)
        if t_in <= lf.horizon:
            ws.var_i[_V_EVENTS, v] += 1  # the install
        for p in range(first, end):
            ws.at_g[v, p] = t_in
        if c.host_mode:
            ws.at_h[v, x] = t_in
        for i in range(ws.inst_of[first], ws.inst_of[end - 1] + 1):
            _install(ws, v, i, t_in)
    if lf.clocked and s.nv > 1:
        s.nv = part_at_install(ws.at_g, vids, s.nv, first)
    if lf.clocked_g:
        for p in range(first, end):
            life, ws.clock_group[p] = unit_life(ws.st, wb, n_wb, ws.wear, ws.u_past, _PAST_GPU)
            s.hn = _arm(ws.hkeys, ws.hids, ws.hpos, s.hn, p, ws.at_g[lf.lead, p] + life, lf.horizon)
    if c.host_mode and lf.clocked_h:
        s.hn = _arm(ws.hkeys, ws.hids, ws.hpos, s.hn, c.positions + x,
                    ws.at_h[lf.lead, x] + weibull_scale(ws.st, lf.host_scale, lf.host_shape), lf.horizon)
    if lf.modular:  # a new GPU comes with a new module (or the one its position waits for)
        for p in range(first, end):
            _module_installed(ws, s, c, lf, p)
    if lf.reshard:  # the swap's end gives the slot's GPUs back (a timer; never past the horizon)
        s.hn = _arm(ws.hkeys, ws.hids, ws.hpos, s.hn, c.positions + c.hosts + x, ws.at_g[lf.lead, first], lf.horizon)
        if lf.modular and c.spare_modules >= 0:  # a GPU whose position waits for a module is back when it is in
            for p in range(first, end):
                if ws.m_at[lf.lead, p] > ws.at_g[lf.lead, p]:
                    ws.lost_by[p] += 1  # (a second reason: its slot's is counted, no change now)
                    s.hn = _arm(ws.hkeys, ws.hids, ws.hpos, s.hn, c.m0 + c.positions + p, ws.m_at[lf.lead, p],
                                lf.horizon)
    if from_wait:
        for i in range(ws.inst_of[first], ws.inst_of[end - 1] + 1):
            ws.wait_i[i] -= 1
            if ws.wait_i[i] == 0:
                s.stockout_hours += t - ws.wait_f[i]


@inline_kernel
def _reschedule(ws, s, fresh, t):
    """The superposed clock after an event at ``t``: drawn afresh after its own event
    (``fresh``), else its pending time rescaled to the new total rate (memoryless: exact,
    no draw). The total and the categories' rates (:func:`_weigh`) are summed again only
    when a list of units changed (``relisted``; else they are the same numbers)."""
    lam = new = s.lam
    if s.relisted:
        new = _weigh(ws.weights, ws.rates, s.n_g, s.n_h)
        s.relisted = 0
    if fresh or lam <= 0.0:
        s.t_exp = t + exponential(ws.st, 1.0 / new) if new > 0.0 else np.inf
    elif new != lam:
        s.t_exp = t + (s.t_exp - t) * (lam / new) if new > 0.0 else np.inf
    s.lam = new


@event_kernel
def _close(ws, s, c, lf, out_f, out_i, row):
    """The horizon: downtime and stock-outs still open are counted (reshard: each
    instance's served capacity-hours, :func:`_reshard`); the rows of the
    variants in the pass written; ``hpos`` left all -1 for the next lifetime (cheaper
    than a full reset)."""
    horizon, n_inst = lf.horizon, c.instances
    for j in range(s.hn):
        ws.hpos[ws.hids[j]] = -1
    stockout_hours, host_stockout_hours = s.stockout_hours, s.host_stockout_hours
    for i in range(n_inst):
        if ws.wait_i[i] > 0:
            stockout_hours += horizon - ws.wait_f[i]
        if ws.hwait_i[i] > 0:
            host_stockout_hours += horizon - ws.hwait_f[i]
        if lf.reshard:
            s.served += _reshard(ws, i, horizon, 0, lf.relayout_hours)
    for k in range(s.nv):
        v = ws.vids[k]
        down_hours = ws.var_f[v]
        for i in range(n_inst):
            if ws.inst_i[v, _DOWN, i] == 1:
                down_hours += horizon - ws.inst_f[v, _DOWN_SINCE, i]
        out_f[row, v, OUT_AVAILABILITY] = 1.0 - down_hours / (n_inst * horizon)
        out_f[row, v, OUT_CAPACITY] = 1.0 - (down_hours - s.served) / (n_inst * horizon)  # (down: served = 0)
        out_f[row, v, OUT_STOCKOUT_HOURS] = stockout_hours
        out_f[row, v, OUT_HOST_STOCKOUT_HOURS] = host_stockout_hours
        out_f[row, v, OUT_MODULE_STOCKOUT_HOURS] = ws.m_so[v]
        out_i[row, v, OUT_FAILURES] = s.failures
        out_i[row, v, OUT_INTERRUPTIONS] = ws.var_i[_V_INTERRUPTIONS, v]
        out_i[row, v, OUT_SWAPS] = s.swaps
        out_i[row, v, OUT_REPAIRS] = s.repairs
        out_i[row, v, OUT_EVENTS] = s.events + ws.var_i[_V_EVENTS, v]
        out_i[row, v, OUT_MAX_FAILED_GPUS] = s.max_in_repair * c.gpus_per_unit
        out_i[row, v, OUT_PARTED] = 0
        out_i[row, v, OUT_MODULE_SWAPS] = s.module_swaps
        out_i[row, v, OUT_HOST_REPAIRS] = s.host_repairs
        out_i[row, v, OUT_HOST_SWAPS] = s.host_swaps
        out_i[row, v, OUT_NIC_SWAPS] = s.nic_swaps
        for k in range(ws.by_class.size):
            out_i[row, v, N_OUT_I + k] = ws.by_class[k]


@event_kernel
def _lifetime(c, par, wb, n_wb, mwb, n_mwb, laws, thin_max, ws, fast_paths):
    """The lifetime's fixed values (:data:`Lifetime`), its superposed rates per unit and
    thinned hazards (``ws.rates``, ``ws.wear``); the followers that cannot share the
    pass leave (``ws.state[0].nv``; reshard: every variant runs alone). Reshard takes
    no fast path."""
    horizon, host_shape, host_scale = par[P_HORIZON_HOURS], par[P_HOST_SHAPE], par[P_HOST_SCALE]
    rates, wear = ws.rates, ws.wear
    rates[_GPU_FAULT], rates[_GPU_EXP] = par[P_LAM_TRANSIENT_GPU], par[P_LAM_PERM_GPU]
    rates[_HOST_FAULT], rates[_HOST_EXP] = par[P_LAM_TRANSIENT_HOST], par[P_LAM_PERM_HOST]
    rates[_GPU_WEAR], rates[_HOST_WEAR] = 0.0, 0.0
    rates[_NIC_FAIL], rates[_NIC_FAULT] = c.nics * par[P_LAM_NIC_PERM], c.nics * par[P_LAM_NIC_FAULT]
    clocked_g = False
    for g in range(n_wb):  # wear-out laws thinned at their hazard at the horizon
        wear[g] = 0.0
        if thinned(wb[g, WB_SHAPE], wb[g, WB_SCALE], horizon, thin_max):
            wear[g] = hazard(wb[g, WB_SHAPE], wb[g, WB_SCALE], horizon)
            rates[_GPU_WEAR] += wear[g]
        else:
            clocked_g = True
    clocked_h = False
    if host_scale > 0.0:
        if thinned(host_shape, host_scale, horizon, thin_max):
            rates[_HOST_WEAR] = hazard(host_shape, host_scale, horizon)
        else:
            clocked_h = True
    s = ws.state[0]
    lead = ws.vids[0]
    modular = c.modules and n_mwb > 0
    if c.reshard:
        s.nv = 1
    if s.nv > 1:
        s.nv = part_on_laws(laws, ws.vids, s.nv)
    # no variant's swap law draws (followers that share the pass have draw-free laws):
    # a batch of swaps ends at one time
    swaps_fixed = fixed_law(laws, lead * N_LAWS + LAW_SWAP)
    # a per-unit clock armed at a swap's end: followers whose swap ends elsewhere part there
    # (a module's clock is armed at the earliest variant's time instead: _module_fails)
    clocked = clocked_g or (c.host_mode and clocked_h)
    crews_free = c.crews >= c.slots + c.spares  # a crew for every unit: no repair ever queues
    fast = fast_paths and not c.reshard
    return Lifetime(horizon, host_shape, host_scale, lead, swaps_fixed, clocked_g, clocked_h, clocked, crews_free, fast,
                    c.reshard, modular, mwb, n_mwb, par[P_RESHARD_HOURS], par[P_MODULE_SWAP_HOURS],
                    par[P_HOST_SWAP_HOURS], par[P_NIC_SWAP_HOURS], par[P_MODULE_RESTOCK_HOURS])


@event_kernel
def _simulate_one(c, par, wb, n_wb, mwb, n_mwb, laws, thin_max, ws, n_var, fast_paths, out_f, out_i, row):
    """Simulate one lifetime of variants ``ws.vids[:n_var]`` over the horizon; write their rows.

    The variants share everything but their swap and restart laws. The first is the
    leader: its draws and decisions make the lifetime, exactly as if it ran alone. A
    follower rides along while it would make the same draws and decisions (its swap and
    restart laws draw nothing, it has the leader's repair law, and no candidate event,
    common-cause failure or per-unit clock sees a swap end at a different time, but a
    module that fails at its own time before anything else happens, :func:`_module_fails`);
    its numbers are then those of its own run. A follower that would part leaves the live
    list; the caller simulates it alone afterwards.

    Parameters
    ----------
    c : Cluster
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
    ws : Workspace
        Overwritten; ``ws.vids[:n_var]`` are the variants, leader first (reordered on
        return); ``ws.st`` is the lifetime's random stream; ``ws.hpos`` must be -1
        everywhere on entry, and is again on return.
    fast_paths : bool
        Take the fast paths (same numbers; False runs every event through the passes).
        Reshard never takes them.
    out_f, out_i : arrays
        Output rows ``[row, v, OUT_*]``.

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
    s = ws.state[0]
    s.nv = n_var
    lf = _lifetime(c, par, wb, n_wb, mwb, n_mwb, laws, thin_max, ws, fast_paths)
    refs = by_reference(_Shared(ws, c, lf))
    fast_paths = lf.fast_paths
    _start(ws, s, c, lf, wb, n_wb)
    finishing = False
    while not finishing:
        kind = _next_event(ws, s, c, lf)
        t = s.t
        finishing = kind == _EV_HORIZON
        if kind == _EV_SUPERPOSED:
            _pick_superposed(ws, s, c, lf, laws, wb, n_wb, t, refs)
        elif kind == _EV_CLOCK:
            if _pick_clock(ws, s, c, lf, laws, t, refs):
                continue
        elif kind == _EV_HOST_REPAIR:  # a host repair a failed host waits for: it takes that place
            _host_repairs_due(refs.ws, s, refs.c, refs.lf, laws, t)
            continue
        # (_EV_REPAIR: a repair that a slot or a queued repair waits for: the passes below)
        if fast_paths and s.fi1 >= s.fi0 and not finishing and s.wq_len == 0 and s.queue == 0:
            _fault_fast(ws, s, lf, laws, t)
            continue
        if s.host >= 0:
            _host_fails(ws, s, c, lf, laws, t, refs)
        if fast_paths and s.n_batch > 0 and not c.host_mode and s.wq_len == 0 and s.queue == 0:
            _gpus_fail_fast(ws, s, c, lf, laws, wb, n_wb, t)
        # ---- the passes: repairs due, then each failing slot (all emptied before any refill)
        s.n_assign = 0
        i_done = -1
        n_batch = s.n_batch
        for b in range(n_batch + 1):  # each failing slot, then the faults of this instant (or the horizon)
            failing = b < n_batch
            _repairs_due(ws, s, c, lf, laws, t, failing, finishing)
            if failing:
                x = ws.batch[b]
                waits = _slot_empties(refs.ws, s, refs.c, refs.lf, laws, x, t)
                first, end = _positions(x, c.host_mode, c.gpus_per_host, c.positions)
                i0, i1 = ws.inst_of[first], ws.inst_of[end - 1]
            else:
                if lf.reshard and not finishing:  # a fault while short costs a re-layout
                    for i in range(s.fi0, s.fi1 + 1):
                        s.served += _reshard(ws, i, t, 0, lf.relayout_hours)
                i0, i1, waits = s.fi0, s.fi1, False
            i_done = _touch_instances(ws, s, laws, i0, i1, t, i_done, failing, not (failing or finishing), waits)
        # ---- units assigned now: in place after a swap draw
        for a in range(s.n_assign):
            _slot_refilled(refs.ws, s, refs.c, refs.lf, laws, wb, n_wb, ws.assign[a] >> 1, ws.assign[a] & 1 == 1, t)
        _reschedule(ws, s, kind == _EV_SUPERPOSED, t)
    _close(ws, s, c, lf, out_f, out_i, row)
    return s.nv


def simulate_lifetimes(seed, trial_start, params, wb, n_wb, mwb, n_mwb, laws,
                       active_gpus, instance_gpus, gpus_per_host, host_mode, spare_units, crews,
                       capacity, reshard, thin_max=THIN_MAX_CANDIDATES, fast_paths=True,
                       host_units=False, spare_hosts=0, gpus_per_nic=1, spare_modules=-1):
    """Simulate ``n`` cluster lifetimes of ``V`` variants in blocks on ``numba.get_num_threads()`` threads.

    The variants of a lifetime differ only in their laws (``laws[i, v]``); a variant's
    numbers are those it would have alone. Variants whose swap and restart laws draw
    nothing (fixed values, as in a fast-swap design beside its plain twin) run in one
    pass with the first while their draws and decisions coincide (:func:`_simulate_one`),
    and alone, from the start, from where they would part.

    Lifetime ``i`` draws from the stream ``(seed, STAGE_LIFE, 0, trial_start + i)`` and
    writes only row ``i``, so the result depends neither on the thread count nor on how
    the trials are chunked. Each block allocates one ``O(GPUs)`` workspace
    (:data:`Workspace`) and reuses it for its lifetimes (every lifetime overwrites it).

    The blocks run on Python threads, each calling the serial, GIL-free :func:`_run_block`
    (:func:`~mcengine.jit.run_blocks`, not ``prange``: one layer of compiled
    calls over the lifetime loop instead of four; the first ``mcengine run`` compiles in
    about a fifth less CPU time, with the fab runs on blocks too).

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
    fast_paths : bool
        Take the fast paths of :func:`_simulate_one` (default); False gives the same
        numbers through the general passes only (for tests).
    host_units : bool
        ``reliability.host_failure = "host"``: a permanent host failure takes the host out
        as a unit (a pool host in its place after ``params[i, P_HOST_SWAP_HOURS]``, the
        failed one repaired), its GPUs untouched; else (gpu mode) each of its GPUs is
        swapped and repaired. Not with ``host_mode``.
    spare_hosts : int
        Pool hosts at the start (host units).
    gpus_per_nic : int
        GPU positions one NIC serves (consecutive; they may span instances): a permanent NIC
        failure (``params[i, P_LAM_NIC_PERM]`` per NIC-hour) is swapped in place, a
        transient fault (``P_LAM_NIC_FAULT``) restarts the NIC's instances.
    spare_modules : int
        Pool modules at the start (a failed module replaced by a new one
        ``params[i, P_MODULE_RESTOCK_HOURS]`` later); negative: an unlimited stock.

    Returns
    -------
    out_f : float64[n, V, N_OUT_F]
        Availability, stock-out instance-hours, capacity availability, instance-hours
        waiting for a host and for a module (``OUT_*`` columns).
    out_i : int64[n, V, OUT_WEAR_FAILURES + K]
        Counts over the horizon (``OUT_*`` columns), then the events by class: transient
        GPU faults, exponential-class GPU failures, transient host faults, permanent
        host failures, permanent NIC failures, and the GPU failures of each Weibull group (column
        ``OUT_WEAR_FAILURES + g``).
    """
    n, n_var = laws.shape[0], laws.shape[1]
    out_f = np.empty((n, n_var, N_OUT_F), dtype=np.float64)
    out_i = np.empty((n, n_var, OUT_WEAR_FAILURES + wb.shape[1]), dtype=np.int64)
    modules = n > 0 and n_mwb.max() > 0
    nic_swaps = n > 0 and params[:, P_LAM_NIC_PERM].max() > 0.0
    shape = np.array([active_gpus, instance_gpus, gpus_per_host, 1 if host_mode else 0, spare_units, crews,
                      1 if reshard else 0, 1 if modules else 0, 1 if host_units else 0, spare_hosts, gpus_per_nic,
                      1 if nic_swaps else 0, spare_modules], dtype=np.int64)
    inst_of = np.arange(int(active_gpus), dtype=np.int64) // int(instance_gpus)  # read by every block

    args = (np.uint64(seed), np.int64(trial_start), params, wb, n_wb, mwb, n_mwb, laws, shape, capacity,
            float(thin_max), bool(fast_paths), inst_of)
    run_blocks(_run_block, args, n, (out_f, out_i))
    return out_f, out_i


@kernel
def _run_block(seed, trial_start, params, wb, n_wb, mwb, n_mwb, laws, shape, capacity, thin_max, fast_paths, inst_of,
               i0, i1, out_f, out_i):
    """Lifetimes ``i0 .. i1 - 1`` of :func:`simulate_lifetimes` on one workspace (the
    cluster ``shape``: its six int arguments, then reshard and modules as 0/1, host units
    0/1, spare hosts, GPUs per NIC, NIC swaps 0/1, spare modules). A variant that leaves the joint pass runs
    alone afterwards, from the start, in the order it left.

    Called from Python, one thread per block: the only layer of calls over
    :func:`_simulate_one` (each layer compiles the lifetime loop again). Its argument
    types are fixed by :func:`simulate_lifetimes` (one compiled specialisation)."""
    n_var = laws.shape[1]
    alone = np.int64(1)  # (typed like n_var, not a literal 1: one compiled _simulate_one for both calls)
    c = _config(shape[0], shape[1], shape[2], shape[3] == 1, shape[4], shape[5], shape[6] == 1, shape[7] == 1,
                shape[8] == 1, shape[9], shape[10], shape[11] == 1, shape[12])
    ws = _workspace(c, n_var, wb.shape[1], max(wb.shape[1], mwb.shape[1]), inst_of, capacity)
    vids, parted = ws.vids, ws.parted
    for i in range(i0, i1):
        lw = laws[i].reshape((n_var * N_LAWS, laws.shape[3], laws.shape[4]))
        for v in range(n_var):
            vids[v] = v
        reset_stream(ws.st, seed, STAGE_LIFE, 0, trial_start + i)
        kept = _simulate_one(c, params[i], wb[i], n_wb[i], mwb[i], n_mwb[i], lw, thin_max, ws, n_var, fast_paths, out_f, out_i, i)
        for j in range(kept, n_var):
            parted[j] = vids[j]
        for j in range(kept, n_var):
            vids[0] = parted[j]
            reset_stream(ws.st, seed, STAGE_LIFE, 0, trial_start + i)
            _simulate_one(c, params[i], wb[i], n_wb[i], mwb[i], n_mwb[i], lw, thin_max, ws, alone, fast_paths, out_f,
                          out_i, i)
            out_i[i, parted[j], OUT_PARTED] = 1
