"""The workspace, state and small helpers of the life kernel (:mod:`mcengine.kernels.life`).

The model and the algorithm are documented there. Here: the cluster's structure
(:data:`Cluster`), a block's arrays (:data:`Workspace`), a lifetime's scalar state (one
record of :data:`STATE`) and fixed values (:data:`Lifetime`), and the small steps the
event handlers share (the lists of filled units, an instance settled or hit, the repairs
due taken off). The helpers on a workspace are inlined into the event loop
(:data:`~mcengine.jit.inline_kernel`).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from mcengine.jit import inline_kernel, kernel, linked_kernel
from mcengine.kernels.laws import draw_law
from mcengine.kernels.life.heap import heap_set, times_heapify, times_pop, times_push
from mcengine.kernels.life.indices import (
    DOWN, DOWN_SINCE, EV_HOST_REPAIR, EV_REPAIR, HOST_FAULT, LAW_RESTART, LAW_SWAP, NIC_FAIL, N_BY_CLASS, N_CAT, N_INST_F,
    N_INST_I, N_LAWS, N_VAR_I, PENDING, READY_AT, RS_FROM, RS_SEEN, UP_AT, V_EVENTS, V_INTERRUPTIONS,
)
from mcengine.rng import STREAM_WORDS

#: The cluster's structure (ints, the same for every lifetime of a call; :func:`cluster_config`):
#: active GPU positions, GPUs per instance, GPUs per host, whether the unit is a host,
#: active hosts, instances, slots, pool units at t = 0, repairs at once (at most the
#: units), GPUs per unit, per-unit clock ids (:func:`cluster_config`), whether an instance
#: short of GPUs reshards (``cluster.on_failure = "reshard"``), whether a GPU has a
#: field-replaceable module, and the first module clock id; whether a host failure
#: takes its host out as a unit (``reliability.host_failure = "host"``), the host pool at
#: t = 0, GPUs per NIC, and the first reshard timer id of a host swap's end (``h0``, one
#: per host) and of a NIC swap's end (``n0``, one per NIC); the module pool at t = 0
#: (``spare_modules``; negative: an unlimited stock).
Cluster = namedtuple("Cluster", ["positions", "instance_gpus", "gpus_per_host", "host_mode", "hosts",
                                 "instances", "slots", "spares", "crews", "gpus_per_unit", "clock_ids", "reshard",
                                 "modules", "m0", "host_units", "spare_hosts", "gpus_per_nic", "h0", "n0", "nics",
                                 "spare_modules"])

#: A block's workspace (:func:`new_workspace`), reused by its lifetimes; each lifetime
#: overwrites what it reads (``hpos`` is all -1 between lifetimes).
#:
#: * ``occ_g``, ``occ_h`` int64[2, A], [2, H]: the listed (filled) GPU positions and hosts,
#:   ``occ[0, :n]`` the list, ``occ[1, x]`` the index of ``x`` in it (-1: not listed);
#: * ``at_g``, ``at_h`` float64[V, A], [V, H]: install time of each position's / host's
#:   unit, per variant (in the future while its swap lasts);
#: * ``inst_i`` int64[V, 2, I] (``DOWN``, ``PENDING``), ``inst_f`` float64[V, 3, I]
#:   (``DOWN_SINCE``, ``READY_AT``, ``UP_AT``): instance state per variant;
#: * ``wait_i`` int64[I], ``wait_f`` float64[I]: slots of an instance out of stock, and since when;
#: * ``var_i`` int64[2, V] (``V_INTERRUPTIONS``, ``V_EVENTS``), ``var_f`` float64[V]
#:   (downtime hours): the counts that differ between variants;
#: * ``wq`` int64[slots]: the FIFO ring of slots out of stock;
#: * ``hkeys``, ``hids``, ``hpos``: the indexed heap of per-unit clocks (:mod:`.heap`);
#: * ``rq`` float64[crews + 1]: pending repair completion times: an unordered list while
#:   at most :data:`RQ_HEAP_ABOVE` are pending, else a min-heap (state ``rq_heap``;
#:   :func:`~mcengine.kernels.life.heap.times_push`, ``rq[0]`` the earliest);
#: * ``batch`` int64[gph]: the slots failing at one instant; ``hit`` int64[gph]: the
#:   instances they hit (fast path); ``assign`` int64[slots + gph]: the slots assigned a
#:   unit at one instant, ``2 * slot + (1 if it was out of stock)``;
#: * ``wear`` float64[K]: thinned hazard at the horizon per Weibull group (0: clocked);
#: * ``rates`` float64[6]: the superposed rate per listed unit of each category;
#: * ``inst_of`` int64[A]: the instance of each position (shared by the blocks, read only);
#: * ``vids`` int64[V]: the variants of the pass, leader first (the live list);
#:   ``parted`` int64[V]: those that left it, to run alone;
#: * ``st`` uint64[STREAM_WORDS]: the lifetime's random stream;
#: * ``state``: one record of :data:`STATE`;
#: * ``clock_group`` int64[A]: the Weibull group whose per-unit clock a position's timer is;
#: * ``by_class`` int64[N_BY_CLASS + K]: events by class (``K_*``, then one per Weibull group);
#: * ``capacity`` float64[instance_gpus + 1]: reshard, the share of full throughput an
#:   instance serves with ``k`` GPUs lost (shared, read only);
#: * ``rs_k`` int64[I], ``rs_f`` float64[2, I]: reshard state (:func:`reshard_step`);
#: * host units (``reliability.host_failure = "host"``): ``hrq`` float64[H + spare hosts + 1]
#:   the pending host repair completions (an unordered list), ``hwq`` int64[H] the FIFO ring of
#:   failed hosts waiting for a host, ``hwait_i`` int64[I], ``hwait_f`` float64[I]: hosts an
#:   instance waits for, and since when;
#: * a module pool (``spare_modules >= 0``), per variant: ``mrq`` float64[V, A + spare modules
#:   + 1] the FIFO ring of the restock arrival times still pending (in order: one lead time
#:   after each module swap; its head and length are the state's, the same in every
#:   variant), ``m_at`` float64[V, A] the end of the module swap a position waits for stock
#:   for (0: none), ``mwait_f`` float64[V, I] the end of an instance's latest wait for a module;
#:   ``m_so`` float64[V]: instance-hours waiting for a module;
#: * modules: ``m_life`` float64[A] the life of the module whose clock a position's timer
#:   is, from its start in each variant, ``m_t0`` float64[V, A] (its clock armed at the
#:   earliest, :func:`~mcengine.kernels.life.variants.first_module_due`); ``m_due``
#:   float64[V]: the failure time, per variant, of the module failing now;
#: * reshard: ``lost_by`` int64[A] the reasons each GPU position is out of service (:func:`~mcengine.kernels.life.units.lose`);
#: * ``u_past`` float64[2, K]: per Weibull group, the uniform below which a life is past
#:   the horizon however late it starts (:func:`~mcengine.kernels.life.hazard.past_uniform`
#:   at the horizon): row ``PAST_GPU`` a GPU's groups, ``PAST_MODULE`` a module's;
#: * ``weights`` float64[N_CAT]: the superposed rate of each category over the listed
#:   units (:func:`weigh`, the terms of the state's ``lam``);
#: * ``hlog`` float64[m, 2]: host units, the lifetime's first ``m`` candidate permanent host
#:   failures of the exponential law (:data:`~mcengine.kernels.life.indices.OUT_HOST_LOG`;
#:   ``m = 0`` unless asked), their count in the state's ``hlog_n``;
#: * ``fixed`` float64[2, V]: each variant's swap (row 0) and restart (row 1) duration when
#:   its law is one fixed value, else -1 (it draws), read where the lifetime starts
#:   (:func:`duration`).
Workspace = namedtuple("Workspace", [
    "occ_g", "occ_h", "at_g", "at_h", "inst_i", "inst_f", "wait_i", "wait_f", "var_i", "var_f", "wq", "hkeys", "hids",
    "hpos", "rq", "batch", "hit", "assign", "wear", "rates", "inst_of", "vids", "parted", "st", "state",
    "clock_group", "by_class", "capacity", "rs_k", "rs_f", "hrq", "hwq", "hwait_i", "hwait_f", "mrq", "m_at", "mwait_f", "lost_by",
    "u_past", "m_life", "m_t0", "m_due", "m_so", "weights", "hlog", "fixed"])

#: The scalar state of a lifetime, one record (fields by name; lives in the workspace):
#: ``t`` now; ``t_exp`` the pending superposed event, ``lam`` its total rate and ``gap``
#: its mean gap ``1 / lam``, kept with it so that a draw of the clock divides nothing
#: (``relisted`` 1 once a list of filled units changed since ``lam`` was summed);
#: ``rq_min`` the earliest pending repair completion (``inf`` if none); ``rq_heap`` 1 while
#: ``rq`` is a heap;
#: ``stockout_hours``; list lengths ``n_g``, ``n_h`` (listed positions and hosts),
#: ``hn`` (heap), ``rn`` (repairs pending), ``wq_head``, ``wq_len`` (stock-out FIFO),
#: ``n_batch`` (slots failing now), ``n_assign`` (units assigned now), ``nv`` (variants
#: in the pass); ``host`` (a host failing now, -1: none), ``fi0 .. fi1`` (instances a
#: fault touches now); repair system ``pool``, ``busy`` (crews), ``queue``, ``in_repair``,
#: ``max_in_repair``; counts ``failures``, ``swaps``, ``repairs``, ``events``,
#: ``module_swaps``; ``served`` the capacity-hours served short of GPUs (reshard); host
#: units: ``hrq_min`` the earliest pending host repair, ``host_stockout_hours``
#: (instance-hours waiting for a host), ``host_pool``, ``hrn`` (host repairs pending),
#: ``hwq_head``, ``hwq_len`` (hosts waiting), counts ``host_repairs``, ``host_swaps``; and
#: ``nic_swaps`` (NICs swapped in place); a module pool: ``mrq_head``, ``mrq_len`` (restocks
#: pending); ``lists_moved`` 1 once a list of filled units (``occ_g``, ``occ_h``) left its
#: order at the start (kept across the lifetimes of a block: the next start rebuilds the
#: lists only then, :func:`~mcengine.kernels.life.handlers.start_lifetime`); ``hlog_n`` the
#: candidate permanent host failures so far (host units, exponential law: :func:`log_host`).
STATE = np.dtype([(name, np.float64) for name in ("t", "t_exp", "lam", "gap", "rq_min", "stockout_hours", "served",
                                                  "hrq_min", "host_stockout_hours")]
                 + [(name, np.int64) for name in (
                     "n_g", "n_h", "hn", "rn", "rq_heap", "wq_head", "wq_len", "n_batch", "n_assign", "nv", "host", "fi0", "fi1",
                     "pool", "busy", "queue", "in_repair", "max_in_repair", "failures", "swaps", "repairs", "events",
                     "module_swaps", "host_pool", "hrn", "hwq_head", "hwq_len", "host_repairs", "host_swaps", "nic_swaps",
                     "mrq_head", "mrq_len", "relisted", "lists_moved", "hlog_n")],
                 align=True)

#: What a lifetime holds fixed: the horizon and host law, the leader, switches, the
#: module groups (``mwb``, ``n_mwb`` used), the re-layout and module swap hours
#: (:func:`simulate_one`), the host swap and NIC swap hours, the module restock lead time;
#: the leader's repair law read once (:func:`~mcengine.kernels.laws.resolve_law`: every
#: repair draws from it, :func:`~mcengine.kernels.laws.sample_resolved`).
Lifetime = namedtuple("Lifetime", ["horizon", "host_shape", "host_scale", "lead", "swaps_fixed", "clocked_g",
                                   "clocked_h", "clocked", "crews_free", "fast_paths", "reshard", "modular",
                                   "mwb", "n_mwb", "relayout_hours", "module_swap_hours", "host_swap_hours",
                                   "nic_swap_hours", "module_restock_hours", "repair"])


# --------------------------------------------------------------------------- small helpers


@kernel
def slot_positions(x, host_mode, gph, n_pos):
    """GPU positions ``first .. end - 1`` of slot ``x`` (a host's in host mode, else one)."""
    if host_mode:
        return x * gph, min(x * gph + gph, n_pos)
    return x, x + 1


@kernel
def weigh(weights, rates, n_g, n_h):
    """Each superposed category's rate over the listed units into ``weights`` (``rates[c]``
    times ``n_g`` listed GPU positions for c < 3, ``n_h`` listed hosts for 3 <= c < 6; the
    NICs' totals as they are, always in place), kept while the lists stay; returns their
    sum in category order, the superposed total rate."""
    lam = 0.0
    for c in range(N_CAT):
        weights[c] = (n_g if c < HOST_FAULT else n_h if c < NIC_FAIL else 1) * rates[c]
        lam += weights[c]
    return lam


@kernel
def arm(hkeys, hids, hpos, hn, ident, when, horizon):
    """Arm per-unit clock ``ident`` at ``when``; a clock past the horizon never fires: left out."""
    if when <= horizon:
        hn = heap_set(hkeys, hids, hpos, hn, ident, when)
    return hn


@linked_kernel
def list_add(occ, n, x):
    """Append ``x`` to the list ``occ[0, :n]`` (``occ[1, x]`` = its index)."""
    occ[0, n] = x
    occ[1, x] = n
    return n + 1


@linked_kernel
def list_remove(occ, n, x):
    """Swap-remove ``x`` from the list ``occ[0, :n]``; ``occ[1, x] = -1``."""
    j = occ[1, x]
    last = occ[0, n - 1]
    occ[0, j] = last
    occ[1, last] = j
    occ[1, x] = -1
    return n - 1


@inline_kernel
def unsigned(k):
    """Index ``k`` (never negative) as an unsigned integer, for indexing only: numba then
    compiles no wrap of negative indices (a test and an add per dimension, per access) into
    the event loop's hottest accesses. (Arithmetic on it would mix signed and unsigned
    integers, which numba types float64.)"""
    return np.uint64(k)


@inline_kernel
def duration(ws, laws, v, law):
    """A swap (``law = LAW_SWAP``) or restart (``LAW_RESTART``) duration of variant ``v``:
    its fixed value as the lifetime's start read it (``ws.fixed``), else drawn from its law:
    :func:`~mcengine.kernels.laws.sample_law`'s value and draws, without its look-ups in
    the law table at each swap and restart."""
    d = ws.fixed[law - LAW_SWAP, unsigned(v)]
    if d >= 0.0:
        return d
    return draw_law(ws.st, laws, v * N_LAWS + law)


@inline_kernel
def settle(ws, laws, v, i, t):
    """Settle instance ``i`` of variant ``v`` at ``t``: the restart that began at its
    ``READY_AT`` (drawn now, if pending) is over by ``t``: the instance is up again,
    its downtime counted."""
    inst_i, inst_f = ws.inst_i, ws.inst_f
    vs = v  # (signed: the law's row is arithmetic on it)
    v, i = unsigned(v), unsigned(i)
    if inst_i[v, DOWN, i] == 1 and ws.wait_i[i] == 0 and ws.hwait_i[i] == 0 and inst_f[v, READY_AT, i] <= t:
        if inst_i[v, PENDING, i] == 1:
            inst_f[v, UP_AT, i] = inst_f[v, READY_AT, i] + duration(ws, laws, vs, LAW_RESTART)
            inst_i[v, PENDING, i] = 0
        if inst_f[v, UP_AT, i] <= t:
            inst_i[v, DOWN, i] = 0
            ws.var_f[v] += inst_f[v, UP_AT, i] - inst_f[v, DOWN_SINCE, i]
            ws.var_i[V_EVENTS, v] += 1  # the restart completed


@inline_kernel
def interrupt(ws, v, i, t, fault):
    """Instance ``i`` of variant ``v`` (settled) is hit at ``t``: an up instance goes
    down; a fault (``fault``) also restarts it from ``t``, unless it waits for a unit (a
    GPU or a host) or a swap (it then restarts after the swap)."""
    inst_i, inst_f = ws.inst_i, ws.inst_f
    v, i = unsigned(v), unsigned(i)
    up = inst_i[v, DOWN, i] == 0
    if up:
        inst_i[v, DOWN, i] = 1
        inst_f[v, DOWN_SINCE, i] = t
        ws.var_i[V_INTERRUPTIONS, v] += 1
    if fault and (up or (ws.wait_i[i] == 0 and ws.hwait_i[i] == 0 and inst_f[v, READY_AT, i] <= t)):
        inst_f[v, READY_AT, i] = t
        inst_i[v, PENDING, i] = 1


@inline_kernel
def install(ws, v, i, t_in):
    """A unit of instance ``i`` of variant ``v`` is installed at ``t_in``: its restart
    waits for the last such install."""
    v, i = unsigned(v), unsigned(i)
    ws.inst_f[v, READY_AT, i] = max(ws.inst_f[v, READY_AT, i], t_in)
    ws.inst_i[v, PENDING, i] = 1


#: Pending repairs are an unordered list up to this many (a scan of a few is cheaper than a
#: heap's sifts on every push), a min-heap above it, so taking the due ones off never
#: scans thousands (a stock-out with a deep pool); back to a list at :data:`RQ_LIST_AT_MOST`.
#: Which one holds them decides no number (the order among repairs due at once draws
#: nothing): a speed setting, not a model input.
RQ_HEAP_ABOVE = 64
RQ_LIST_AT_MOST = 16


@inline_kernel
def push_repair(rq, s, when):
    """Add the repair completing at ``when`` to ``rq`` (a list, or the heap above
    :data:`RQ_HEAP_ABOVE` pending, heapified once when it gets there)."""
    if s.rq_heap:
        s.rn = times_push(rq, s.rn, when)
    else:
        rq[unsigned(s.rn)] = when
        s.rn += 1
        if s.rn > RQ_HEAP_ABOVE:
            times_heapify(rq, s.rn)
            s.rq_heap = 1


@inline_kernel
def _take_due(rq, rn, heap, t):
    """Take the repairs due by ``t`` off ``rq[:rn]`` (a heap if ``heap``: earliest first,
    ``O(log rn)`` each; else a list: one swap-remove scan); return the entries left, how
    many were taken, and the earliest left (``inf`` if none)."""
    done = 0
    if heap:
        while rn > 0 and rq[0] <= t:
            _, rn = times_pop(rq, rn)
            done += 1
        return rn, done, rq[0] if rn > 0 else np.inf
    rq_min, j = np.inf, 0
    while j < rn:
        x = rq[unsigned(j)]
        if x > t:
            rq_min = min(rq_min, x)
            j += 1
        else:
            rn -= 1
            rq[unsigned(j)] = rq[unsigned(rn)]
            done += 1
    return rn, done, rq_min


@inline_kernel
def return_due(ws, s, t):
    """The units of the repairs due by ``t`` are back in the pool, their crews free
    (while nothing waits: no completion draws or refills)."""
    rn, done, s.rq_min = _take_due(ws.rq, s.rn, s.rq_heap, t)
    s.rn = rn
    if rn <= RQ_LIST_AT_MOST:  # (a heap is a list too)
        s.rq_heap = 0
    s.in_repair -= done
    s.busy -= done
    s.pool += done
    s.events += done


@inline_kernel
def reshard_step(ws, i, t, lost, relayout_hours):
    """Reshard bookkeeping of instance ``i`` at ``t`` (``cluster.on_failure = "reshard"``,
    docs/model.md#reshard); returns the capacity-hours it served since it was last seen.

    While ``rs_k[i] = k > 0`` of its GPUs have no installed unit, the instance serves
    ``capacity[k]`` of its full throughput from ``rs_f[RS_FROM, i]`` on. ``lost`` GPUs
    leave (> 0: a failure) or come back (< 0: a swap ends); every change, and a fault
    (``lost = 0``) while it is short, costs a re-layout: no output for ``relayout_hours``.
    """
    rs_k, rs_f = ws.rs_k, ws.rs_f
    served = 0.0
    k = rs_k[i]
    if k > 0:
        start = max(rs_f[RS_SEEN, i], rs_f[RS_FROM, i])
        if t > start:
            served = ws.capacity[k] * (t - start)
        rs_f[RS_FROM, i] = t + relayout_hours
    rs_f[RS_SEEN, i] = t
    rs_k[i] = k + lost
    if k == 0 and lost > 0:
        rs_f[RS_FROM, i] = t + relayout_hours
    return served


def cluster_config(active_gpus, instance_gpus, gpus_per_host, host_mode, spare_units, crews, reshard, modules=False,
            host_units=False, spare_hosts=0, gpus_per_nic=1, nic_swaps=False, spare_modules=-1):
    """The cluster's structure (:data:`Cluster`), made in Python once per call of the
    kernel (ints and bools: numba types them int64 and boolean). Per-unit clock ids: ``[0, A)`` GPU
    positions, then one per active host, then (reshard) one per slot for the end of its
    swap; then (``modules``) from ``m0`` one per GPU position for its module's failure
    and (reshard) one per position for the end of its module swap; then (reshard) from
    ``h0`` one per host for the end of a host swap (``host_units``) and from ``n0`` one
    per NIC for the end of a NIC swap (``nic_swaps``). ``spare_modules`` < 0: modules
    come from an unlimited stock."""
    hosts = (active_gpus + gpus_per_host - 1) // gpus_per_host
    slots = hosts if host_mode else active_gpus
    m0 = active_gpus + hosts + (slots if reshard else 0)
    h0 = m0 + (active_gpus * (2 if reshard else 1) if modules else 0)
    n0 = h0 + (hosts if reshard and host_units else 0)
    nics = (active_gpus + gpus_per_nic - 1) // gpus_per_nic
    ids = n0 + (nics if reshard and nic_swaps else 0)
    crews = min(crews, slots + spare_units)  # never more repairs than units
    per_unit = gpus_per_host if host_mode else 1
    return Cluster(active_gpus, instance_gpus, gpus_per_host, host_mode, hosts, active_gpus // instance_gpus, slots,
                   spare_units, crews, per_unit, ids, reshard, modules, m0, host_units, spare_hosts, gpus_per_nic, h0, n0,
                   nics, spare_modules)


def new_workspace(c, n_var, n_groups, n_past, inst_of, capacity, n_log):
    """A fresh :data:`Workspace` for ``n_var`` variants, ``n_groups`` Weibull groups of a
    GPU and ``n_past`` of a GPU or a module (the larger), a host log of ``n_log`` entries.

    Made in Python, one per block of lifetimes (:func:`~mcengine.kernels.life.driver.simulate_lifetimes`),
    and passed to the kernel: compiled, its ~45 allocations of a dozen array types
    would each compile an allocator, and the kernel that made it would need numba's
    reference counting, which the lifetime loop runs without."""
    a, h, ni, ns, gph, ids = c.positions, c.hosts, c.instances, c.slots, c.gpus_per_host, c.clock_ids
    n_hrq = h + c.spare_hosts + 1 if c.host_units else 1
    n_hwq = h if c.host_units else 1
    pooled = c.modules and c.spare_modules >= 0
    n_mrq = a + c.spare_modules + 1 if pooled else 1  # (at most one wait per position: the pool plus them)
    n_mat = a if pooled else 1
    n_mwait = ni if pooled else 1
    n_lost = a if c.reshard else 1
    n_mlife = a if c.modules else 1
    ws = Workspace(
        np.empty((2, a), np.int64), np.empty((2, h), np.int64), np.empty((n_var, a)), np.empty((n_var, h)),
        np.empty((n_var, N_INST_I, ni), np.int64), np.empty((n_var, N_INST_F, ni)),
        np.empty(ni, np.int64), np.empty(ni), np.empty((N_VAR_I, n_var), np.int64), np.empty(n_var),
        np.empty(ns, np.int64), np.empty(ids), np.empty(ids, np.int64), np.full(ids, -1, np.int64),
        np.empty(c.crews + 1), np.empty(gph, np.int64), np.empty(gph, np.int64), np.empty(ns + gph, np.int64),
        np.empty(n_groups), np.empty(N_CAT), inst_of, np.empty(n_var, np.int64), np.empty(n_var, np.int64),
        np.empty(STREAM_WORDS, np.uint64), np.zeros(1, STATE), np.empty(a, np.int64),
        np.empty(N_BY_CLASS + n_groups, np.int64), capacity, np.zeros(ni, np.int64), np.zeros((2, ni)),
        np.empty(n_hrq), np.empty(n_hwq, np.int64),
        np.zeros(ni, np.int64), np.zeros(ni),
        np.empty((n_var, n_mrq)), np.zeros((n_var, n_mat)), np.zeros((n_var, n_mwait)), np.zeros(n_lost, np.int64),
        np.zeros((2, n_past)), np.empty(n_mlife), np.empty((n_var, n_mlife)), np.empty(n_var), np.zeros(n_var),
        np.empty(N_CAT), np.empty((n_log, 2)), np.empty((2, n_var)),
    )
    ws.state["lists_moved"][0] = 1  # (fresh: the first start builds the lists)
    return ws


@inline_kernel
def log_host(ws, s, t, repair):
    """A candidate permanent host failure at ``t``: counted, and logged while the log has
    room, with its repair's duration (``repair``; -1: rejected, the host out)."""
    if s.hlog_n < ws.hlog.shape[0]:
        ws.hlog[s.hlog_n, 0] = t
        ws.hlog[s.hlog_n, 1] = repair
    s.hlog_n += 1


@inline_kernel
def repair_waited_for(s):
    """The earliest repair completion something waits for, and its kind: a GPU repair
    (a slot out of stock, a queued repair) or a host repair (a failed host waiting for a
    host), the earlier of the two; ``inf`` when nothing waits."""
    t_ret = s.rq_min if s.wq_len > 0 or s.queue > 0 else np.inf
    ret = EV_REPAIR
    if s.hwq_len > 0 and s.hrq_min < t_ret:
        ret, t_ret = EV_HOST_REPAIR, s.hrq_min
    return ret, t_ret

