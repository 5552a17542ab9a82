"""The loop of one lifetime (:func:`simulate_one`, :mod:`mcengine.kernels.life`): its fixed
values, then one handler per kind of step (:mod:`mcengine.kernels.life.handlers`,
:mod:`mcengine.kernels.life.units`) until the horizon.
"""

from __future__ import annotations

from collections import namedtuple

from mcengine._pointer import by_reference
from mcengine.jit import linked_kernel
from mcengine.kernels.laws import P1, resolve_law
from mcengine.kernels.life.handlers import (
    close_lifetime, fault_fast, gpus_fail_fast, host_fails, next_event, pick_clock, pick_superposed, repairs_due,
    reschedule, slot_empties, slot_refilled, start_lifetime, touch_instances,
)
from mcengine.kernels.life.hazard import hazard, thinned
from mcengine.kernels.life.indices import (
    EV_CLOCK, EV_HORIZON, EV_HOST_REPAIR, EV_SUPERPOSED, GPU_EXP, GPU_FAULT, GPU_WEAR, HOST_EXP, HOST_FAULT,
    HOST_WEAR, LAW_REPAIR, LAW_RESTART, LAW_SWAP, NIC_FAIL, NIC_FAULT, N_LAWS, P_HORIZON_HOURS, P_HOST_SCALE,
    P_HOST_SHAPE, P_HOST_SWAP_HOURS,
    P_LAM_NIC_FAULT, P_LAM_NIC_PERM, P_LAM_PERM_GPU, P_LAM_PERM_HOST, P_LAM_TRANSIENT_GPU, P_LAM_TRANSIENT_HOST,
    P_MODULE_RESTOCK_HOURS, P_MODULE_SWAP_HOURS, P_NIC_SWAP_HOURS, P_RESHARD_HOURS, WB_SCALE, WB_SHAPE,
)
from mcengine.kernels.life.units import host_repairs_due
from mcengine.kernels.life.variants import fixed_law, part_on_laws
from mcengine.kernels.life.workspace import Lifetime, reshard_step, slot_positions

#: The workspace, the cluster and the lifetime's fixed values as the event loop passes them
#: to the handlers it calls rather than inlines (:data:`~mcengine.jit.linked_kernel`): by
#: reference (:func:`~mcengine._pointer.by_reference`, made once per lifetime), one word a
#: call instead of the ~400 words of their arrays and values, each copied at every call.
#: A handler reads their fields as it would the tuples' (``ws.hrq``), each where it is used.
_Shared = namedtuple("_Shared", ["ws", "c", "lf"])



@linked_kernel
def _lifetime(c, par, wb, n_wb, mwb, n_mwb, laws, thin_max, ws, fast_paths):
    """The lifetime's fixed values (:data:`Lifetime`), its superposed rates per unit and
    thinned hazards (``ws.rates``, ``ws.wear``); the followers that cannot share the
    pass leave (``ws.state[0].nv``; reshard: every variant runs alone). Reshard takes
    no fast path."""
    horizon, host_shape, host_scale = par[P_HORIZON_HOURS], par[P_HOST_SHAPE], par[P_HOST_SCALE]
    rates, wear = ws.rates, ws.wear
    rates[GPU_FAULT], rates[GPU_EXP] = par[P_LAM_TRANSIENT_GPU], par[P_LAM_PERM_GPU]
    rates[HOST_FAULT], rates[HOST_EXP] = par[P_LAM_TRANSIENT_HOST], par[P_LAM_PERM_HOST]
    rates[GPU_WEAR], rates[HOST_WEAR] = 0.0, 0.0
    rates[NIC_FAIL], rates[NIC_FAULT] = c.nics * par[P_LAM_NIC_PERM], c.nics * par[P_LAM_NIC_FAULT]
    clocked_g = False
    for g in range(n_wb):  # wear-out laws thinned at their hazard at the horizon
        wear[g] = 0.0
        if thinned(wb[g, WB_SHAPE], wb[g, WB_SCALE], horizon, thin_max):
            wear[g] = hazard(wb[g, WB_SHAPE], wb[g, WB_SCALE], horizon)
            rates[GPU_WEAR] += wear[g]
        else:
            clocked_g = True
    clocked_h = False
    if host_scale > 0.0:
        if thinned(host_shape, host_scale, horizon, thin_max):
            rates[HOST_WEAR] = hazard(host_shape, host_scale, horizon)
        else:
            clocked_h = True
    s = ws.state[0]
    lead = ws.vids[0]
    for k in range(s.nv):  # each variant's fixed swap and restart durations (workspace.duration)
        v = ws.vids[k]
        for law in (LAW_SWAP, LAW_RESTART):
            w = v * N_LAWS + law
            ws.fixed[law - LAW_SWAP, v] = laws[w, 0, P1] if fixed_law(laws, w) else -1.0
    modular = c.modules and n_mwb > 0
    if c.reshard:
        s.nv = 1
    if s.nv > 1:
        s.nv = part_on_laws(laws, ws.vids, s.nv)
    # no variant's swap law draws (followers that share the pass have draw-free laws):
    # a batch of swaps ends at one time
    swaps_fixed = fixed_law(laws, lead * N_LAWS + LAW_SWAP)
    # a per-unit clock armed at a swap's end: followers whose swap ends elsewhere part there
    # (a module's clock is armed at the earliest variant's time instead: module_fails)
    clocked = clocked_g or (c.host_mode and clocked_h)
    crews_free = c.crews >= c.slots + c.spares  # a crew for every unit: no repair ever queues
    fast = fast_paths and not c.reshard
    return Lifetime(horizon, host_shape, host_scale, lead, swaps_fixed, clocked_g, clocked_h, clocked, crews_free, fast,
                    c.reshard, modular, mwb, n_mwb, par[P_RESHARD_HOURS], par[P_MODULE_SWAP_HOURS],
                    par[P_HOST_SWAP_HOURS], par[P_NIC_SWAP_HOURS], par[P_MODULE_RESTOCK_HOURS],
                    resolve_law(laws, lead * N_LAWS + LAW_REPAIR))


@linked_kernel
def _passes(ws, s, c, lf, laws, wb, n_wb, t, finishing):
    """What happens at ``t`` in passes (every event the fast paths do not take): the
    repairs due, then each failing slot with the instances it touches (every slot
    emptied before any is refilled), then the last pass (this instant's faults, or the
    horizon), then the units assigned now, each in place after a swap draw. Compiled
    apart and called, with the workspace, cluster and lifetime by reference: the fast
    paths spare most events the passes, and the loop keeps only its hot paths inlined."""
    s.n_assign = 0
    i_done = -1
    n_batch = s.n_batch
    for b in range(n_batch + 1):  # each failing slot, then the last pass (this instant's faults, or the horizon)
        failing = b < n_batch
        repairs_due(ws, s, c, lf, laws, t, failing, finishing)
        if failing:
            x = ws.batch[b]
            waits = slot_empties(ws, s, c, lf, laws, x, t)
            first, end = slot_positions(x, c.host_mode, c.gpus_per_host, c.positions)
            i0, i1 = ws.inst_of[first], ws.inst_of[end - 1]
        else:
            if lf.reshard and not finishing:  # a fault while short costs a re-layout
                for i in range(s.fi0, s.fi1 + 1):
                    s.served += reshard_step(ws, i, t, 0, lf.relayout_hours)
            i0, i1, waits = s.fi0, s.fi1, False
        i_done = touch_instances(ws, s, laws, i0, i1, t, i_done, failing, not (failing or finishing), waits)
    for a in range(s.n_assign):  # units assigned now: in place after a swap draw
        slot_refilled(ws, s, c, lf, laws, wb, n_wb, ws.assign[a] >> 1, ws.assign[a] & 1 == 1, t)


@linked_kernel
def simulate_one(c, par, wb, n_wb, mwb, n_mwb, laws, thin_max, ws, n_var, fast_paths, out_f, out_i, row):
    """Simulate one lifetime of variants ``ws.vids[:n_var]`` over the horizon; write their rows.

    The variants share everything but their swap and restart laws. The first is the
    leader: its draws and decisions make the lifetime, exactly as if it ran alone. A
    follower rides along while it would make the same draws and decisions (its swap and
    restart laws draw nothing, it has the leader's repair law, and no candidate event,
    common-cause failure or per-unit clock sees a swap end at a different time, but a
    module that fails at its own time before anything else happens, :func:`module_fails`);
    its numbers are then those of its own run. A follower that would part leaves the live
    list; the caller simulates it alone afterwards.

    Parameters
    ----------
    c : Cluster
        Cluster structure (:func:`cluster_config`).
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
    An instance is down from ``DOWN_SINCE``; while ``wait_i`` of its slots are out of
    stock it waits (a slot that takes a pool unit has it at once, in a swap); then its
    last install is at ``READY_AT``, its restart starts there (drawn when next looked
    at: ``PENDING``) and ends at ``UP_AT``. Every look at an instance first *settles*
    it, except once an earlier slot of the same instant has taken it down.
    """
    s = ws.state[0]
    s.nv = n_var
    lf = _lifetime(c, par, wb, n_wb, mwb, n_mwb, laws, thin_max, ws, fast_paths)
    refs = by_reference(_Shared(ws, c, lf))
    fast_paths = lf.fast_paths
    start_lifetime(ws, s, c, lf, wb, n_wb)
    finishing = False
    while not finishing:
        kind = next_event(ws, s, c, lf)
        t = s.t
        finishing = kind == EV_HORIZON
        if kind == EV_SUPERPOSED:
            pick_superposed(ws, s, c, lf, laws, wb, n_wb, t, refs)
            if fast_paths and s.fi1 >= s.fi0 and s.wq_len == 0 and s.queue == 0:  # a fault while nothing waits
                fault_fast(ws, s, lf, laws, t)
                continue
        elif kind == EV_CLOCK:
            if pick_clock(ws, s, c, lf, laws, t, refs):
                continue
        elif kind == EV_HOST_REPAIR:  # a host repair a failed host waits for: it takes that place
            host_repairs_due(refs.ws, s, refs.c, refs.lf, laws, t)
            continue
        # (EV_REPAIR: a repair that a slot or a queued repair waits for: the passes below)
        if s.host >= 0:
            host_fails(ws, s, c, lf, laws, t, refs)
        # the fast path: nothing waits and no fault, so the passes would find nothing due, to
        # touch or to refill
        fast = (fast_paths and s.n_batch > 0 and not c.host_mode and s.wq_len == 0 and s.queue == 0
                and gpus_fail_fast(ws, s, c, lf, laws, wb, n_wb, t, refs))
        if not fast:
            _passes(refs.ws, s, refs.c, refs.lf, laws, wb, n_wb, t, finishing)
        reschedule(ws, s, kind == EV_SUPERPOSED, t)
    close_lifetime(ws, s, c, lf, out_f, out_i, row)
    return s.nv

