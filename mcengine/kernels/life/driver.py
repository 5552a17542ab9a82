"""The life kernel's driver (:mod:`mcengine.kernels.life`): :func:`simulate_lifetimes` checks
nothing (the stage :mod:`mcengine.stages.reliability` validates and wraps), sizes the
outputs and runs the lifetimes in blocks, each block on one workspace
(:func:`run_block`).
"""

from __future__ import annotations

import numpy as np

from mcengine.jit import event_kernel, run_blocks
from mcengine.kernels.life.indices import (
    N_LAWS, N_OUT_F, OUT_PARTED, OUT_WEAR_FAILURES, P_LAM_NIC_PERM, THIN_MAX_CANDIDATES,
)
from mcengine.kernels.life.loop import simulate_one
from mcengine.kernels.life.workspace import cluster_config, new_workspace
from mcengine.rng import STAGE_LIFE, reset_stream

def simulate_lifetimes(seed, trial_start, params, wb, n_wb, mwb, n_mwb, laws,
                       active_gpus, instance_gpus, gpus_per_host, host_mode, spare_units, crews,
                       capacity, reshard, thin_max=THIN_MAX_CANDIDATES, fast_paths=True,
                       host_units=False, spare_hosts=0, gpus_per_nic=1, spare_modules=-1, host_log=0):
    """Simulate ``n`` cluster lifetimes of ``V`` variants in blocks on ``numba.get_num_threads()`` threads.

    The variants of a lifetime differ only in their laws (``laws[i, v]``); a variant's
    numbers are those it would have alone. Variants whose swap and restart laws draw
    nothing (fixed values, as in a fast-swap design beside its plain twin) run in one
    pass with the first while their draws and decisions coincide (:func:`simulate_one`),
    and alone, from the start, from where they would part.

    Lifetime ``i`` draws from the stream ``(seed, STAGE_LIFE, 0, trial_start + i)`` and
    writes only row ``i``, so the result depends neither on the thread count nor on how
    the trials are chunked. Each block allocates one ``O(GPUs)`` workspace
    (:data:`Workspace`) and reuses it for its lifetimes (every lifetime overwrites it).

    The blocks run on Python threads, each calling the serial, GIL-free :func:`run_block`
    (:func:`~mcengine.jit.run_blocks`, not ``prange``: one layer of compiled
    calls over the lifetime loop instead of four, each of which compiles it again).

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
        Take the fast paths of :func:`simulate_one` (default); False gives the same
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
    host_log : int
        Host units: log each lifetime's first ``host_log`` candidate permanent host failures
        of the exponential law (:data:`~.indices.OUT_HOST_LOG`; 0, the default: none). The
        numbers of every other column are the same whatever it is.

    Returns
    -------
    out_f : float64[n, V, N_OUT_F + (1 + 2 * host_log if host_log else 0)]
        Availability, stock-out instance-hours, capacity availability, instance-hours
        waiting for a host and for a module (``OUT_*`` columns); with ``host_log``, the
        host log after them (:data:`~.indices.OUT_HOST_LOG`).
    out_i : int64[n, V, OUT_WEAR_FAILURES + K]
        Counts over the horizon (``OUT_*`` columns), then the events by class: transient
        GPU faults, exponential-class GPU failures, transient host faults, permanent
        host failures, permanent NIC failures, and the GPU failures of each Weibull group (column
        ``OUT_WEAR_FAILURES + g``).
    """
    n, n_var = laws.shape[0], laws.shape[1]
    out_f = np.empty((n, n_var, N_OUT_F + (1 + 2 * host_log if host_log > 0 else 0)), dtype=np.float64)
    out_i = np.empty((n, n_var, OUT_WEAR_FAILURES + wb.shape[1]), dtype=np.int64)
    modules = n > 0 and n_mwb.max() > 0
    nic_swaps = n > 0 and params[:, P_LAM_NIC_PERM].max() > 0.0
    c = cluster_config(int(active_gpus), int(instance_gpus), int(gpus_per_host), bool(host_mode), int(spare_units),
                       int(crews), bool(reshard), bool(modules), bool(host_units), int(spare_hosts), int(gpus_per_nic),
                       bool(nic_swaps), int(spare_modules))
    inst_of = np.arange(int(active_gpus), dtype=np.int64) // int(instance_gpus)  # read by every block

    def workspace():  # one per block
        return (new_workspace(c, n_var, wb.shape[1], max(wb.shape[1], mwb.shape[1]), inst_of, capacity, max(host_log, 0)),)

    args = (np.uint64(seed), np.int64(trial_start), params, wb, n_wb, mwb, n_mwb, laws, c, float(thin_max),
            bool(fast_paths))
    run_blocks(run_block, args, n, (out_f, out_i), workspace)
    return out_f, out_i


@event_kernel
def run_block(seed, trial_start, params, wb, n_wb, mwb, n_mwb, laws, c, thin_max, fast_paths, ws, i0, i1, out_f, out_i):
    """Lifetimes ``i0 .. i1 - 1`` of :func:`simulate_lifetimes` on the cluster ``c``
    (:func:`cluster_config`) and the block's workspace ``ws`` (:func:`new_workspace`). A
    variant that leaves the joint pass runs alone afterwards, from the start, in the order
    it left.

    Called from Python, one thread per block: the only layer of calls over
    :func:`simulate_one` (each layer compiles the lifetime loop again). It allocates
    nothing (its caller makes the workspace), so it runs without numba's reference
    counting (:data:`~mcengine.jit.event_kernel`). Its argument types are fixed by
    :func:`simulate_lifetimes` (one compiled specialisation)."""
    n_var = laws.shape[1]
    alone = np.int64(1)  # (an int64, as n_var is)
    vids, parted = ws.vids, ws.parted
    for i in range(i0, i1):
        lw = laws[i].reshape((n_var * N_LAWS, laws.shape[3], laws.shape[4]))
        for v in range(n_var):
            vids[v] = v
        reset_stream(ws.st, seed, STAGE_LIFE, 0, trial_start + i)
        kept = simulate_one(c, params[i], wb[i], n_wb[i], mwb[i], n_mwb[i], lw, thin_max, ws, n_var, fast_paths, out_f, out_i, i)
        for j in range(kept, n_var):
            parted[j] = vids[j]
        for j in range(kept, n_var):
            vids[0] = parted[j]
            reset_stream(ws.st, seed, STAGE_LIFE, 0, trial_start + i)
            simulate_one(c, params[i], wb[i], n_wb[i], mwb[i], n_mwb[i], lw, thin_max, ws, alone, fast_paths, out_f,
                          out_i, i)
            out_i[i, parted[j], OUT_PARTED] = 1
