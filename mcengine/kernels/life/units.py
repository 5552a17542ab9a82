"""The life kernel's events of parts swapped in place and of host units
(:mod:`mcengine.kernels.life`, docs/model.md#reliability): a module failure (its pool,
docs/model.md#module-pool), a NIC failure (docs/model.md#per-unit), a host unit's failure,
its replacement and its repairs (docs/model.md#host-units), and (reshard,
docs/model.md#reshard) the GPUs an instance loses and gets back.

The handlers that run seldom are compiled apart (:data:`~mcengine.jit.linked_kernel`) and
called by the loop or a handler; the small ones are inlined
(:data:`~mcengine.jit.inline_kernel`).
"""

from __future__ import annotations

import numpy as np

from mcengine.jit import inline_kernel, linked_kernel
from mcengine.kernels.laws import sample_resolved
from mcengine.kernels.life.hazard import module_life
from mcengine.kernels.life.heap import heap_remove
from mcengine.kernels.life.indices import PAST_MODULE, V_EVENTS
from mcengine.kernels.life.variants import first_module_due, module_fails_now, part_on_module, part_on_restocks
from mcengine.kernels.life.workspace import (
    arm, install, interrupt, log_host, repair_waited_for, reshard_step, settle, slot_positions,
)
from mcengine.rng import weibull_scale

@linked_kernel
def down_for_swap(ws, laws, v, i, t, t_back):
    """Instance ``i`` of variant ``v`` goes down at ``t`` for a part swapped in place (a
    module, a NIC): it restarts when the swap ends at ``t_back`` (:func:`install`).
    Compiled apart and called (by :func:`module_fails` and :func:`nic_fails`, with the
    workspace by reference): one compiled copy of the settle, interrupt and install it
    holds, not one in each of them."""
    settle(ws, laws, v, i, t)
    interrupt(ws, v, i, t, False)
    install(ws, v, i, t_back)


@linked_kernel
def lose(ws, s, c, lf, first, end, t, delta):
    """Reshard: GPU positions ``first .. end - 1`` gain (``delta = 1``) or shed (``-1``) one
    reason to be out of service (their slot empty or in a swap, a module swap, their host
    or NIC out; ``ws.lost_by``); each instance's lost GPUs change by those whose reasons
    rise from or fall to none, so a GPU out for two reasons counts once (:func:`reshard_step`:
    a change of none re-layouts as a fault while short does).

    Compiled apart and called (reshard only, at eight sites in the loop and its handlers):
    inlined, each site would type, lower and optimise a copy. Its callers pass the
    workspace, cluster and lifetime by reference and ``delta`` as an int64, so it compiles
    once."""
    for i in range(ws.inst_of[first], ws.inst_of[end - 1] + 1):
        change = 0
        for p in range(max(first, i * c.instance_gpus), min(end, (i + 1) * c.instance_gpus)):
            before = ws.lost_by[p]
            ws.lost_by[p] = before + delta
            change += (before == 0) - (before + delta == 0)
        s.served += reshard_step(ws, i, t, change, lf.relayout_hours)


@linked_kernel
def module_fails(ws, s, c, lf, laws, p, t):
    """The clock of GPU position ``p``'s module fires at ``t``: the module fails, the GPU's
    instance goes down (its restart after the module swap, in place: no pool unit, no
    repair; reshard: the GPU lost until the swap ends, a timer) and a new module's clock
    starts at the swap's end.

    In each variant the module fails at its own time, ``m_t0[v, p] + m_life[p]`` (a module
    that came with a unit installed at another time in each), the clock armed at the
    earliest. Those due by the horizon before the next other event fail together, each at
    its own time (nothing happens in between, so each does what its own run does, and the
    new module's life is one draw); followers that fail now otherwise than the leader
    leave (:func:`~mcengine.kernels.life.variants.part_on_module`), and if the leader's
    fails later, nothing fails now: the clock is armed again at the earliest time left."""
    vids, life, due = ws.vids, ws.m_life[p], ws.m_due
    if s.nv > 1 or ws.m_t0[lf.lead, p] + life != t:  # (else the leader alone, at t)
        t_next = min(s.t_exp, ws.hkeys[0] if s.hn > 0 else np.inf, repair_waited_for(s)[1])  # (the next event's time, next_event)
        s.nv = part_on_module(ws.m_t0, vids, s.nv, p, life, t, t_next, lf.horizon)
        if not module_fails_now(ws.m_t0[lf.lead, p] + life, t, t_next, lf.horizon):
            s.hn = arm(ws.hkeys, ws.hids, ws.hpos, s.hn, c.m0 + p, first_module_due(ws.m_t0, vids, s.nv, p, life),
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
        down_for_swap(ws, laws, v, i, due[v], ws.m_t0[v, p])
    if lf.reshard:
        lose(ws, s, c, lf, p, p + 1, t, np.int64(1))
        s.hn = arm(ws.hkeys, ws.hids, ws.hpos, s.hn, c.m0 + c.positions + p, ws.m_t0[lf.lead, p], lf.horizon)
    life = module_life(ws.st, lf.mwb, lf.n_mwb, ws.u_past, PAST_MODULE)
    ws.m_life[p] = life
    s.hn = arm(ws.hkeys, ws.hids, ws.hpos, s.hn, c.m0 + p, first_module_due(ws.m_t0, vids, s.nv, p, life), lf.horizon)


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
    a GPU installed meanwhile (:func:`slot_refilled`). Followers in which another number
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


@linked_kernel
def nic_fails(ws, s, c, lf, laws, nic, first, end, t):
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
            down_for_swap(ws, laws, ws.vids[k], i, t, t_back)
        if lf.reshard and not lost:
            s.served += reshard_step(ws, i, t, 0, lf.relayout_hours)
    if lost:
        lose(ws, s, c, lf, first, end, t, np.int64(1))
    if lf.reshard:
        if lost or t_back <= lf.horizon:
            s.hn = arm(ws.hkeys, ws.hids, ws.hpos, s.hn, ident, t_back, lf.horizon)
        else:  # (a swap past the horizon: the GPUs stay lost)
            s.hn = heap_remove(ws.hkeys, ws.hids, ws.hpos, s.hn, ident)


@linked_kernel
def swap_ends(ws, s, c, lf, ident, t):
    """Reshard: the swap timer ``ident`` fires at ``t``: a host swap's end (``h0 + host``)
    or a NIC swap's end (``n0 + nic``) gives the GPUs back to their instances."""
    if ident >= c.n0:
        first, end = slot_positions(ident - c.n0, True, c.gpus_per_nic, c.positions)
    else:
        first, end = slot_positions(ident - c.h0, True, c.gpus_per_host, c.positions)
    lose(ws, s, c, lf, first, end, t, np.int64(-1))


@linked_kernel
def host_unit_fails(ws, s, c, lf, laws, host, first, end, t):
    """Host units (``reliability.host_failure = "host"``, docs/model.md#host-units): host
    ``host`` (GPU positions ``first .. end - 1``) fails at ``t``. It goes to repair (one
    ``repair_hours`` draw; host repairs take no crew) and takes its instances down; its
    GPUs stay in place, age on and are neither repaired nor replaced. A pool host takes
    its place in ``host_swap_hours`` (:func:`_host_assigned`); with none, the host waits
    (FIFO) for the next host repair to complete. Reshard: its GPUs are lost until then."""
    host_repairs_due(ws, s, c, lf, laws, t)  # the pool count exact
    s.host_repairs += 1
    repair = sample_resolved(ws.st, laws, lf.repair)
    log_host(ws, s, t, repair)
    when = t + repair
    ws.hrq[s.hrn] = when
    s.hrn += 1
    s.hrq_min = min(s.hrq_min, when)
    i0, i1 = ws.inst_of[first], ws.inst_of[end - 1]
    for i in range(i0, i1 + 1):
        for k in range(s.nv):
            v = ws.vids[k]
            settle(ws, laws, v, i, t)
            interrupt(ws, v, i, t, False)
    if lf.reshard:
        lose(ws, s, c, lf, first, end, t, np.int64(1))
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


@linked_kernel
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
            ws.var_i[V_EVENTS, v] += 1  # the install
        for i in range(ws.inst_of[first], ws.inst_of[end - 1] + 1):
            install(ws, v, i, t_in)
    if lf.clocked_h:
        s.hn = arm(ws.hkeys, ws.hids, ws.hpos, s.hn, c.positions + host,
                    t_in + weibull_scale(ws.st, lf.host_scale, lf.host_shape), lf.horizon)
    if lf.reshard:
        s.hn = arm(ws.hkeys, ws.hids, ws.hpos, s.hn, c.h0 + host, t_in, lf.horizon)


@linked_kernel
def host_repairs_due(ws, s, c, lf, laws, t):
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
        first, end = slot_positions(host, True, c.gpus_per_host, c.positions)
        for i in range(ws.inst_of[first], ws.inst_of[end - 1] + 1):
            ws.hwait_i[i] -= 1
            if ws.hwait_i[i] == 0:
                s.host_stockout_hours += t - ws.hwait_f[i]
        _host_assigned(ws, s, c, lf, host, first, end, t)
    s.hrq_min = hrq_min

