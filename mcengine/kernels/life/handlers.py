"""The life kernel's event handlers (:mod:`mcengine.kernels.life`, where the model and the
algorithm are documented): the lifetime's start and close, the next event, a superposed
event or a per-unit clock picked, a permanent host failure, the fast paths, the repairs
due, a slot emptied and refilled and the instances a step touches, the superposed clock
rescheduled.

Each takes the workspace ``ws``, the lifetime's state ``s`` (one record of
:data:`~mcengine.kernels.life.workspace.STATE`), the cluster ``c`` and the lifetime's
fixed values ``lf`` (:data:`~mcengine.kernels.life.workspace.Lifetime`). The per-event
handlers are inlined into the loop (:data:`~mcengine.jit.inline_kernel`); those that run
once per lifetime or seldom are compiled apart (:data:`~mcengine.jit.linked_kernel`).
"""

from __future__ import annotations

import numpy as np

from mcengine.jit import inline_kernel, linked_kernel
from mcengine.kernels.laws import sample_resolved
from mcengine.kernels.life.hazard import (
    gpu_wear_hazard, hazard, life_within, module_life, past_uniform, unit_life, wear_group, weibull_life,
)
from mcengine.kernels.life.heap import heap_remove, times_pop
from mcengine.kernels.life.indices import (
    DOWN, DOWN_SINCE, EV_CLOCK, EV_HORIZON, EV_SUPERPOSED, GPU_EXP, GPU_FAULT, GPU_WEAR, HOST_EXP, HOST_FAULT, HOST_WEAR,
    K_GPU_EXP, K_GPU_FAULT, K_HOST_FAIL, K_HOST_FAULT, K_NIC_FAIL, K_NIC_FAULT, K_WEAR, LAW_SWAP,
    NIC_FAIL, NIC_FAULT, N_CAT, N_OUT_I, OUT_AVAILABILITY, OUT_CAPACITY, OUT_EVENTS, OUT_FAILURES,
    OUT_HOST_LOG, OUT_HOST_REPAIRS, OUT_HOST_STOCKOUT_HOURS, OUT_HOST_SWAPS, OUT_INTERRUPTIONS, OUT_MAX_FAILED_GPUS,
    OUT_MODULE_STOCKOUT_HOURS, OUT_MODULE_SWAPS, OUT_NIC_SWAPS, OUT_PARTED, OUT_REPAIRS, OUT_STOCKOUT_HOURS,
    OUT_SWAPS, PAST_GPU, PAST_MODULE, V_EVENTS, V_INTERRUPTIONS, WB_SCALE, WB_SHAPE,
)
from mcengine.kernels.life.units import host_unit_fails, lose, module_fails, nic_fails, swap_ends
from mcengine.kernels.life.variants import first_module_due, part_at_install, part_on_liveness, part_on_wear
from mcengine.kernels.life.workspace import (
    RQ_LIST_AT_MOST, arm, duration, install, interrupt, list_add, list_remove, log_host, push_repair, repair_waited_for, reshard_step,
    return_due, settle, slot_positions, unsigned, weigh,
)
from mcengine.rng import bits_below, draws_below, exponential, uniform, weibull_scale

@linked_kernel
def start_lifetime(ws, s, c, lf, wb, n_wb):
    """``t = 0``: every slot filled with a new unit (its per-unit clocks armed), every
    instance up, nothing in repair; the first superposed event drawn."""
    st = ws.st
    if s.lists_moved:  # (else every unit is listed in its own place: a lifetime without a stock-out)
        for p in range(c.positions):
            ws.occ_g[0, p] = p
            ws.occ_g[1, p] = p
        for k in range(c.hosts):
            ws.occ_h[0, k] = k
            ws.occ_h[1, k] = k
        s.lists_moved = 0
    ws.at_g[:, :] = 0.0
    ws.at_h[:, :] = 0.0
    ws.inst_i[:, :, :] = 0
    ws.inst_f[:, :, :] = 0.0
    ws.wait_i[:] = 0
    ws.var_i[:, :] = 0
    ws.var_f[:] = 0.0
    ws.by_class[:] = 0
    ws.hwait_i[:] = 0
    hn = np.int64(0)  # (the heap's size, an int64)
    u_past = ws.u_past  # lives past the horizon are drawn, not computed (life_within), here and later
    if lf.clocked_g:
        for g in range(n_wb):
            u_past[PAST_GPU, g] = past_uniform(wb[g, WB_SHAPE], wb[g, WB_SCALE], lf.horizon)
        for p in range(c.positions):
            life, ws.clock_group[p] = unit_life(st, wb, n_wb, ws.wear, u_past, PAST_GPU)
            hn = arm(ws.hkeys, ws.hids, ws.hpos, hn, p, life, lf.horizon)
    if lf.clocked_h:
        host_past = past_uniform(lf.host_shape, lf.host_scale, lf.horizon)
        for k in range(c.hosts):
            hn = arm(ws.hkeys, ws.hids, ws.hpos, hn, c.positions + k,
                      life_within(st, lf.host_scale, lf.host_shape, host_past), lf.horizon)
    if lf.modular:
        for g in range(lf.n_mwb):
            u_past[PAST_MODULE, g] = past_uniform(lf.mwb[g, WB_SHAPE], lf.mwb[g, WB_SCALE], lf.horizon)
        # one group (the shipped designs): module_life's draw, with the group's values read once;
        # the lives past the horizon (their uniforms below the cut) taken as a run of draws
        one, scale, shape, cut = lf.n_mwb == 1, lf.mwb[0, WB_SCALE], lf.mwb[0, WB_SHAPE], u_past[PAST_MODULE, 0]
        m_cut = bits_below(cut) if one else np.uint64(0)
        p = 0
        while p < c.positions:
            if one:  # (the draw that stops a run is not below the cut: its life is computed)
                k, u = draws_below(st, c.positions - p, m_cut)
                p += k
                if p == c.positions:
                    break
                life = weibull_life(u, scale, shape)
            else:
                life = module_life(st, lf.mwb, lf.n_mwb, u_past, PAST_MODULE)
            if life <= lf.horizon:  # (else no clock, nothing to keep)
                ws.m_life[p] = life
                ws.m_t0[:, p] = 0.0
                hn = arm(ws.hkeys, ws.hids, ws.hpos, hn, c.m0 + p, life, lf.horizon)
            p += 1
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
    s.mrq_head, s.mrq_len, s.hlog_n = 0, 0, 0
    ws.m_so[:] = 0.0
    if lf.modular and c.spare_modules >= 0:
        ws.m_at[:, :] = 0.0
        ws.mwait_f[:, :] = 0.0
    lam = weigh(ws.weights, ws.rates, s.n_g, s.n_h)
    s.lam, s.gap, s.relisted = lam, 1.0 / lam if lam > 0.0 else np.inf, 0
    s.t_exp = exponential(st, s.gap) if lam > 0.0 else np.inf


@inline_kernel
def next_event(ws, s, c, lf):
    """The next event, its time in ``s.t``: the superposed one, a per-unit clock, or a
    repair something waits for (a slot out of stock, a queued repair; a host repair a
    failed host waits for); past the horizon, the horizon. Clears the failing slots, host
    and faulted instances of the last."""
    t_heap = ws.hkeys[0] if s.hn > 0 else np.inf
    ret, t_ret = repair_waited_for(s)
    t_exp = s.t_exp
    s.n_batch, s.host, s.fi0, s.fi1 = 0, -1, 0, -1
    if t_exp <= t_heap and t_exp <= t_ret:
        kind, t = EV_SUPERPOSED, t_exp
    elif t_heap <= t_ret:
        kind, t = EV_CLOCK, t_heap
    else:
        kind, t = ret, t_ret
    if t > lf.horizon:
        kind, t = EV_HORIZON, lf.horizon
        s.fi1 = c.instances - 1  # one last pass settles every instance there
    s.t = t
    return kind


@inline_kernel
def pick_superposed(ws, s, c, lf, laws, wb, n_wb, t, refs):
    """The superposed event at ``t``: a second uniform picks the category, then the unit
    uniformly among those listed (Gillespie's direct method); a candidate on a unit
    still in its swap is rejected, a wear-out candidate is accepted with probability
    ``h(age) / h(horizon)`` (thinning). An accepted one is a transient fault (its
    instances in ``fi0 .. fi1``), a GPU failure (its slot in ``batch``), a host failure
    (``host``) or a NIC failure (handled here, :func:`nic_fails`: a NIC is in place
    whatever its GPUs are doing, so no candidate is rejected)."""
    st, rates, vids = ws.st, ws.rates, ws.vids
    n_g, n_h = s.n_g, s.n_h
    u = 0.0
    r = uniform(st) * s.lam
    cat = -1
    for k in range(N_CAT):
        w = ws.weights[k]  # (weigh: the rate of category k over the listed units)
        if w > 0.0:
            cat = k
            if r < w:
                break
            r -= w
    if cat >= NIC_FAIL:  # one of the NICs, uniformly: GPU positions first .. end - 1
        s.events += 1
        nic = min(int(r / rates[cat] * c.nics), c.nics - 1)
        first, end = nic * c.gpus_per_nic, min(nic * c.gpus_per_nic + c.gpus_per_nic, c.positions)
        if cat == NIC_FAULT:
            ws.by_class[K_NIC_FAULT] += 1
            s.fi0, s.fi1 = ws.inst_of[first], ws.inst_of[end - 1]
        else:
            ws.by_class[K_NIC_FAIL] += 1
            nic_fails(refs.ws, s, refs.c, refs.lf, laws, nic, first, end, t)
    elif cat < HOST_FAULT:
        p = ws.occ_g[0, unsigned(min(int(r / rates[cat]), n_g - 1))]
        pu, lead = unsigned(p), unsigned(lf.lead)
        live = ws.at_g[lead, pu] <= t  # else a swap is in progress: no GPU there yet
        if s.nv > 1:
            s.nv = part_on_liveness(ws.at_g, vids, s.nv, p, t, live)
        if live and cat == GPU_WEAR:
            u = uniform(st) * rates[GPU_WEAR]
            live = u < gpu_wear_hazard(wb, n_wb, ws.wear, t - ws.at_g[lead, pu])
            if s.nv > 1:
                s.nv = part_on_wear(ws.at_g, vids, s.nv, p, t, u, live, wb, n_wb, ws.wear, lf.host_shape,
                                    lf.host_scale, np.bool_(False))
        if live:
            s.events += 1
            if cat == GPU_FAULT:
                ws.by_class[K_GPU_FAULT] += 1
                s.fi0 = s.fi1 = ws.inst_of[pu]
            else:
                if cat == GPU_EXP:
                    ws.by_class[K_GPU_EXP] += 1
                else:
                    ws.by_class[K_WEAR + wear_group(wb, n_wb, ws.wear, t - ws.at_g[lead, pu], u)] += 1
                s.failures += 1
                ws.batch[0] = p // c.gpus_per_host if c.host_mode else p
                s.n_batch = 1
    else:
        k = ws.occ_h[0, unsigned(min(int(r / rates[cat]), n_h - 1))]
        live = ws.at_h[unsigned(lf.lead), unsigned(k)] <= t  # (host mode: else a host swap is in progress)
        if s.nv > 1:
            s.nv = part_on_liveness(ws.at_h, vids, s.nv, k, t, live)
        if live and cat == HOST_WEAR:
            u = uniform(st) * rates[HOST_WEAR]
            live = u < hazard(lf.host_shape, lf.host_scale, t - ws.at_h[lf.lead, k])
            if s.nv > 1:
                s.nv = part_on_wear(ws.at_h, vids, s.nv, k, t, u, live, wb, n_wb, ws.wear, lf.host_shape,
                                    lf.host_scale, np.bool_(True))
        if not live and cat == HOST_EXP and c.host_units:  # a candidate failure on a host out of place
            log_host(ws, s, t, -1.0)
        if live:
            s.events += 1
            if cat == HOST_FAULT:
                ws.by_class[K_HOST_FAULT] += 1
                gph = c.gpus_per_host
                s.fi0, s.fi1 = ws.inst_of[k * gph], ws.inst_of[min(k * gph + gph, c.positions) - 1]
            else:
                ws.by_class[K_HOST_FAIL] += 1
                s.host = k


@inline_kernel
def pick_clock(ws, s, c, lf, laws, t, refs):
    """The earliest per-unit clock fires: a GPU position's (its slot in ``batch``) or a
    host's (``host``); or, handled here (returns True: nothing else happens now), a
    module's failure (:func:`module_fails`), or (reshard) the end of a module swap or
    of a slot's swap, a host swap or a NIC swap, whose GPUs are back."""
    ident = ws.hids[0]
    s.hn = heap_remove(ws.hkeys, ws.hids, ws.hpos, s.hn, ident)
    n_pos = c.positions
    if ident >= c.h0:  # reshard: a host swap or a NIC swap ends (the ids past every other)
        swap_ends(refs.ws, s, refs.c, refs.lf, ident, t)
        return True
    if lf.modular and ident >= c.m0 + n_pos:  # reshard: a module swap ends, its GPU is back
        lose(refs.ws, s, refs.c, refs.lf, ident - c.m0 - n_pos, ident - c.m0 - n_pos + 1, t, np.int64(-1))
        return True
    if lf.modular and ident >= c.m0:
        module_fails(refs.ws, s, refs.c, refs.lf, laws, ident - c.m0, t)
        return True
    if ident >= n_pos + c.hosts:  # reshard: the swap into a slot ends, its GPUs are back
        first, end = slot_positions(ident - n_pos - c.hosts, c.host_mode, c.gpus_per_host, n_pos)
        lose(refs.ws, s, refs.c, refs.lf, first, end, t, np.int64(-1))
        return True
    s.events += 1
    if ident < c.positions:
        ws.by_class[K_WEAR + ws.clock_group[ident]] += 1
        s.failures += 1
        ws.batch[0] = ident // c.gpus_per_host if c.host_mode else ident
        s.n_batch = 1
    else:
        ws.by_class[K_HOST_FAIL] += 1
        s.host = ident - c.positions
    return False


@inline_kernel
def fault_fast(ws, s, lf, laws, t):
    """Fast path: a transient fault while nothing waits for a unit or a crew. The passes
    would drain and assign nothing and the rates stay: only the instances it touches
    change, and the superposed clock is drawn afresh."""
    for i in range(s.fi0, s.fi1 + 1):
        for k in range(s.nv):
            v = ws.vids[k]
            settle(ws, laws, v, i, t)
            interrupt(ws, v, i, t, True)
    s.t_exp = t + exponential(ws.st, s.gap)


@inline_kernel
def host_fails(ws, s, c, lf, laws, t, refs):
    """A permanent failure of host ``s.host``: with host units (``reliability.host_failure
    = "host"``) the host alone (:func:`host_unit_fails`); in host mode its slot fails
    (every GPU counted); in gpu mode each of its GPUs in place fails (common cause, into
    ``batch``) and the host is renewed (its clock armed afresh)."""
    host, gph = s.host, c.gpus_per_host
    first, end = host * gph, min(host * gph + gph, c.positions)
    if c.host_units:
        host_unit_fails(refs.ws, s, refs.c, refs.lf, laws, host, first, end, t)
        return
    if c.host_mode:
        s.failures += end - first
        ws.batch[0] = host
        s.n_batch = 1
        return
    for p in range(first, end):
        if ws.occ_g[1, unsigned(p)] >= 0:
            live = ws.at_g[unsigned(lf.lead), unsigned(p)] <= t
            if s.nv > 1:
                s.nv = part_on_liveness(ws.at_g, ws.vids, s.nv, p, t, live)
            if live:
                s.failures += 1
                ws.batch[unsigned(s.n_batch)] = p
                s.n_batch += 1
    for k in range(s.nv):
        ws.at_h[unsigned(ws.vids[k]), unsigned(host)] = t
    if lf.clocked_h:
        s.hn = arm(ws.hkeys, ws.hids, ws.hpos, s.hn, c.positions + host,
                    t + weibull_scale(ws.st, lf.host_scale, lf.host_shape), lf.horizon)


@inline_kernel
def gpus_fail_fast(ws, s, c, lf, laws, wb, n_wb, t, refs):
    """Fast path (gpu mode, nothing waits): the GPUs in ``batch`` fail with a pool unit
    and a crew for each. What the passes do, the same draws in the same order, without
    their general bookkeeping: each GPU goes to repair (the repairs due drained first
    where a pass would: a possible new maximum in repair) and is swapped from the pool;
    its instance is hit once; where the swaps draw nothing and arm no clock, each GPU is
    installed (at its variant's fixed time) in the same pass. ``refs`` holds the workspace,
    cluster and lifetime by reference for the helpers compiled apart
    (:func:`_module_installed`). Returns False (and changes nothing) when the pool or the
    crews fall short."""
    n_batch = s.n_batch
    if s.pool < n_batch and s.rq_min <= t and lf.crews_free:
        # the pool count is a bound: the units of the repairs due by now are back (they
        # draw nothing, and with free crews the list's order never decides a draw)
        return_due(ws, s, t)
    if s.pool < n_batch or s.busy + n_batch > c.crews:
        return False
    batch, hit, vids = ws.batch, ws.hit, ws.vids
    # swaps that draw nothing and arm no clock: each GPU installed in the pass that fails it
    # (at its variant's one install time), its instance hit first
    now = lf.swaps_fixed and not (lf.clocked_g or lf.modular)
    n_hit = 0
    for b in range(n_batch):
        p = batch[b]
        pu = unsigned(p)
        if lf.clocked_g and ws.hpos[pu] >= 0:
            s.hn = heap_remove(ws.hkeys, ws.hids, ws.hpos, s.hn, p)
        if lf.modular and ws.hpos[c.m0 + p] >= 0:  # the module goes with its GPU
            s.hn = heap_remove(ws.hkeys, ws.hids, ws.hpos, s.hn, c.m0 + p)
        if s.in_repair >= s.max_in_repair and s.rq_min <= t:
            return_due(ws, s, t)
        s.in_repair += 1
        s.max_in_repair = max(s.max_in_repair, s.in_repair)
        when = t + sample_resolved(ws.st, laws, lf.repair)
        push_repair(ws.rq, s, when)
        s.rq_min = min(s.rq_min, when)
        i = ws.inst_of[pu]
        fresh = n_hit == 0 or i != hit[unsigned(n_hit - 1)]  # (the slots of one instance are consecutive in the batch)
        if fresh:
            hit[unsigned(n_hit)] = i
            n_hit += 1
        for k in range(s.nv):
            v = vids[k]
            if fresh:
                settle(ws, laws, v, i, t)
                interrupt(ws, v, i, t, False)
            if now:
                t_in = t + ws.fixed[0, unsigned(v)]
                if t_in <= lf.horizon:
                    ws.var_i[V_EVENTS, unsigned(v)] += 1  # the install
                ws.at_g[unsigned(v), pu] = t_in
                install(ws, v, i, t_in)
    s.repairs += n_batch
    s.busy += n_batch
    s.pool -= n_batch
    s.swaps += n_batch
    if not now:  # each GPU's swap drawn in turn, then its clocks if it has them (its module's last)
        for b in range(n_batch):
            p = batch[b]
            i = ws.inst_of[p]
            for k in range(s.nv):
                v = vids[k]
                t_in = t + duration(ws, laws, v, LAW_SWAP)
                if t_in <= lf.horizon:
                    ws.var_i[V_EVENTS, unsigned(v)] += 1  # the install
                ws.at_g[unsigned(v), unsigned(p)] = t_in
                install(ws, v, i, t_in)
            if lf.clocked and s.nv > 1:
                s.nv = part_at_install(ws.at_g, vids, s.nv, p)
            if lf.clocked_g:
                life, ws.clock_group[p] = unit_life(ws.st, wb, n_wb, ws.wear, ws.u_past, PAST_GPU)
                s.hn = arm(ws.hkeys, ws.hids, ws.hpos, s.hn, p, ws.at_g[lf.lead, p] + life, lf.horizon)
            if lf.modular:
                _module_installed(refs.ws, s, refs.c, refs.lf, p)
    s.n_batch = 0
    return True


@inline_kernel
def _unlist(ws, s, c, x, add):
    """List slot ``x``'s positions (and host, in host mode) as filled (``add``) or empty."""
    first, end = slot_positions(x, c.host_mode, c.gpus_per_host, c.positions)
    for p in range(first, end):
        s.n_g = list_add(ws.occ_g, s.n_g, p) if add else list_remove(ws.occ_g, s.n_g, p)
    if c.host_mode:
        s.n_h = list_add(ws.occ_h, s.n_h, x) if add else list_remove(ws.occ_h, s.n_h, x)
    s.relisted = 1
    s.lists_moved = 1


@inline_kernel
def _repair_completes(ws, s, c, lf, laws, t_done):
    """A repair completes at ``t_done`` (``rq`` entry already taken off): its crew takes a
    queued unit (a repair drawn), and the unit refills the longest-waiting slot out of
    stock (assigned now) or returns to the pool."""
    s.in_repair -= 1
    s.events += 1
    if s.queue > 0:
        s.queue -= 1
        push_repair(ws.rq, s, t_done + sample_resolved(ws.st, laws, lf.repair))
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
def repairs_due(ws, s, c, lf, laws, t, failing, finishing):
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


@linked_kernel
def slot_empties(ws, s, c, lf, laws, x, t):
    """The unit in slot ``x`` fails at ``t``: its clocks stop (reshard: its GPUs leave
    their instances, :func:`reshard_step`), it goes to repair (a crew
    if one is free, else the queue); the slot takes a pool unit (assigned now) or waits,
    empty (unlisted, queued for the next repaired unit). Returns whether it waits."""
    first, end = slot_positions(x, c.host_mode, c.gpus_per_host, c.positions)
    for p in range(first, end):
        if ws.hpos[p] >= 0:
            s.hn = heap_remove(ws.hkeys, ws.hids, ws.hpos, s.hn, p)
        if lf.modular and ws.hpos[c.m0 + p] >= 0:  # the module goes with its GPU
            s.hn = heap_remove(ws.hkeys, ws.hids, ws.hpos, s.hn, c.m0 + p)
        if lf.modular and lf.reshard and ws.hpos[c.m0 + c.positions + p] >= 0:  # (in a module swap: counted
            s.hn = heap_remove(ws.hkeys, ws.hids, ws.hpos, s.hn, c.m0 + c.positions + p)  # lost already, once)
            lose(ws, s, c, lf, p, p + 1, t, np.int64(-1))
    if lf.reshard:  # the slot's GPUs leave their instances
        lose(ws, s, c, lf, first, end, t, np.int64(1))
    if c.host_mode and ws.hpos[c.positions + x] >= 0:
        s.hn = heap_remove(ws.hkeys, ws.hids, ws.hpos, s.hn, c.positions + x)
    s.repairs += 1
    s.in_repair += 1
    s.max_in_repair = max(s.max_in_repair, s.in_repair)
    if s.busy < c.crews:
        s.busy += 1
        when = t + sample_resolved(ws.st, laws, lf.repair)
        push_repair(ws.rq, s, when)
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
def touch_instances(ws, s, laws, i0, i1, t, i_done, hit, fault, waits):
    """Instances ``i0 .. i1`` are looked at, at ``t``: each settled (unless an earlier
    slot of this instant already took it down: ``i <= i_done``), then hit by a failing
    slot (``hit``) or a fault (``fault``; neither: the horizon). A slot out of stock
    (``waits``) keeps them down (blast radius). Returns the new ``i_done``."""
    for i in range(i0, i1 + 1):
        if i > i_done:
            for k in range(s.nv):
                v = ws.vids[k]
                settle(ws, laws, v, i, t)
                if hit or fault:
                    interrupt(ws, v, i, t, fault)
            if hit:
                i_done = i
        if waits:  # down until every slot has a unit again
            if ws.wait_i[i] == 0:
                ws.wait_f[i] = t
            ws.wait_i[i] += 1
    return i_done


@linked_kernel
def _module_installed(ws, s, c, lf, p):
    """A new GPU at position ``p`` comes with a new module (or, module pool, the one its
    position waits for: ``m_at``): its clock armed from the later of the two installs, at
    the earliest of the variants' times (:func:`module_fails`). Compiled apart and called
    (by :func:`gpus_fail_fast` and :func:`slot_refilled`, with the workspace, cluster and
    lifetime by reference): one compiled copy, not one in each."""
    if lf.n_mwb == 1:  # one group (the shipped designs): module_life's draw without its loop and minimum
        life = life_within(ws.st, lf.mwb[0, WB_SCALE], lf.mwb[0, WB_SHAPE], ws.u_past[PAST_MODULE, 0])
    else:
        life = module_life(ws.st, lf.mwb, lf.n_mwb, ws.u_past, PAST_MODULE)
    if life > lf.horizon:  # (no clock, nothing to keep: most lives)
        return
    ws.m_life[p] = life
    for k in range(s.nv):
        v = ws.vids[k]
        ws.m_t0[v, p] = max(ws.at_g[v, p], ws.m_at[v, p]) if c.spare_modules >= 0 else ws.at_g[v, p]
    s.hn = arm(ws.hkeys, ws.hids, ws.hpos, s.hn, c.m0 + p, first_module_due(ws.m_t0, ws.vids, s.nv, p, life), lf.horizon)


@linked_kernel
def slot_refilled(ws, s, c, lf, laws, wb, n_wb, x, from_wait, t):
    """Slot ``x`` is assigned a unit at ``t`` (from the pool, or a repaired one if it was
    out of stock, ``from_wait``): in place after a swap draw (per variant), its clocks
    armed (and its modules'; reshard: the swap's end a timer, and a GPU whose position
    waits for a module from the pool stays lost until that module swap ends, the module
    swap's timer); its instances restart once their last swap ends."""
    s.swaps += 1
    vids = ws.vids
    first, end = slot_positions(x, c.host_mode, c.gpus_per_host, c.positions)
    for k in range(s.nv):
        v = vids[k]
        t_in = t + duration(ws, laws, v, LAW_SWAP)
        if t_in <= lf.horizon:
            ws.var_i[V_EVENTS, v] += 1  # the install
        for p in range(first, end):
            ws.at_g[v, p] = t_in
        if c.host_mode:
            ws.at_h[v, x] = t_in
        for i in range(ws.inst_of[first], ws.inst_of[end - 1] + 1):
            install(ws, v, i, t_in)
    if lf.clocked and s.nv > 1:
        s.nv = part_at_install(ws.at_g, vids, s.nv, first)
    if lf.clocked_g:
        for p in range(first, end):
            life, ws.clock_group[p] = unit_life(ws.st, wb, n_wb, ws.wear, ws.u_past, PAST_GPU)
            s.hn = arm(ws.hkeys, ws.hids, ws.hpos, s.hn, p, ws.at_g[lf.lead, p] + life, lf.horizon)
    if c.host_mode and lf.clocked_h:
        s.hn = arm(ws.hkeys, ws.hids, ws.hpos, s.hn, c.positions + x,
                    ws.at_h[lf.lead, x] + weibull_scale(ws.st, lf.host_scale, lf.host_shape), lf.horizon)
    if lf.modular:  # a new GPU comes with a new module (or the one its position waits for)
        for p in range(first, end):
            _module_installed(ws, s, c, lf, p)
    if lf.reshard:  # the swap's end gives the slot's GPUs back (a timer; never past the horizon)
        s.hn = arm(ws.hkeys, ws.hids, ws.hpos, s.hn, c.positions + c.hosts + x, ws.at_g[lf.lead, first], lf.horizon)
        if lf.modular and c.spare_modules >= 0:  # a GPU whose position waits for a module is back when it is in
            for p in range(first, end):
                if ws.m_at[lf.lead, p] > ws.at_g[lf.lead, p]:
                    ws.lost_by[p] += 1  # (a second reason: its slot's is counted, no change now)
                    s.hn = arm(ws.hkeys, ws.hids, ws.hpos, s.hn, c.m0 + c.positions + p, ws.m_at[lf.lead, p],
                                lf.horizon)
    if from_wait:
        for i in range(ws.inst_of[first], ws.inst_of[end - 1] + 1):
            ws.wait_i[i] -= 1
            if ws.wait_i[i] == 0:
                s.stockout_hours += t - ws.wait_f[i]


@inline_kernel
def reschedule(ws, s, fresh, t):
    """The superposed clock after an event at ``t``: drawn afresh after its own event
    (``fresh``), else its pending time rescaled to the new total rate (memoryless: exact,
    no draw). The total and the categories' rates (:func:`weigh`) are summed again only
    when a list of units changed (``relisted``; else they are the same numbers)."""
    lam = new = s.lam
    if s.relisted:
        new = weigh(ws.weights, ws.rates, s.n_g, s.n_h)
        s.relisted = 0
        s.gap = 1.0 / new if new > 0.0 else np.inf
    if fresh or lam <= 0.0:
        s.t_exp = t + exponential(ws.st, s.gap) if new > 0.0 else np.inf
    elif new != lam:
        s.t_exp = t + (s.t_exp - t) * (lam / new) if new > 0.0 else np.inf
    s.lam = new


@linked_kernel
def close_lifetime(ws, s, c, lf, out_f, out_i, row):
    """The horizon: downtime and stock-outs still open are counted (reshard: each
    instance's served capacity-hours, :func:`reshard_step`); the rows of the
    variants in the pass written (and the host log, when asked); ``hpos`` left all -1 for the next lifetime (cheaper
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
            s.served += reshard_step(ws, i, horizon, 0, lf.relayout_hours)
    for k in range(s.nv):
        v = ws.vids[k]
        down_hours = ws.var_f[v]
        for i in range(n_inst):
            if ws.inst_i[v, DOWN, i] == 1:
                down_hours += horizon - ws.inst_f[v, DOWN_SINCE, i]
        out_f[row, v, OUT_AVAILABILITY] = 1.0 - down_hours / (n_inst * horizon)
        out_f[row, v, OUT_CAPACITY] = 1.0 - (down_hours - s.served) / (n_inst * horizon)  # (down: served = 0)
        out_f[row, v, OUT_STOCKOUT_HOURS] = stockout_hours
        out_f[row, v, OUT_HOST_STOCKOUT_HOURS] = host_stockout_hours
        out_f[row, v, OUT_MODULE_STOCKOUT_HOURS] = ws.m_so[v]
        out_i[row, v, OUT_FAILURES] = s.failures
        out_i[row, v, OUT_INTERRUPTIONS] = ws.var_i[V_INTERRUPTIONS, v]
        out_i[row, v, OUT_SWAPS] = s.swaps
        out_i[row, v, OUT_REPAIRS] = s.repairs
        out_i[row, v, OUT_EVENTS] = s.events + ws.var_i[V_EVENTS, v]
        out_i[row, v, OUT_MAX_FAILED_GPUS] = s.max_in_repair * c.gpus_per_unit
        out_i[row, v, OUT_PARTED] = 0
        out_i[row, v, OUT_MODULE_SWAPS] = s.module_swaps
        out_i[row, v, OUT_HOST_REPAIRS] = s.host_repairs
        out_i[row, v, OUT_HOST_SWAPS] = s.host_swaps
        out_i[row, v, OUT_NIC_SWAPS] = s.nic_swaps
        for k in range(ws.by_class.size):
            out_i[row, v, N_OUT_I + k] = ws.by_class[k]
        if out_f.shape[2] > OUT_HOST_LOG:  # the host log, when asked
            out_f[row, v, OUT_HOST_LOG] = s.hlog_n
            for j in range(min(s.hlog_n, ws.hlog.shape[0])):
                out_f[row, v, OUT_HOST_LOG + 1 + 2 * j] = ws.hlog[j, 0]
                out_f[row, v, OUT_HOST_LOG + 2 + 2 * j] = ws.hlog[j, 1]

