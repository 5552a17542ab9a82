"""Every index of the life kernel in one namespace: its interface (the per-trial parameter
columns ``P_*``, the output columns ``OUT_*``, the law rows ``LAW_*``, the Weibull group
columns ``WB_*``) and the rows and codes of its workspace (instance and variant state,
reshard state, superposed categories, events by class, what the next event is).

Every number here is an array index or a code; none is ever renumbered within a release
(the stage :mod:`mcengine.stages.reliability` and the tests read outputs by these names).
"""

from __future__ import annotations

#: The interface of :func:`~mcengine.kernels.life.simulate_lifetimes` (re-exported by the package);
#: the workspace's rows and codes below are the kernel's own.
__all__ = [
    "P_LAM_TRANSIENT_GPU", "P_LAM_PERM_GPU", "P_LAM_TRANSIENT_HOST", "P_LAM_PERM_HOST", "P_HOST_SHAPE",
    "P_HOST_SCALE", "P_HORIZON_HOURS", "P_RESHARD_HOURS", "P_MODULE_SWAP_HOURS", "P_HOST_SWAP_HOURS",
    "P_LAM_NIC_PERM", "P_NIC_SWAP_HOURS", "P_LAM_NIC_FAULT", "P_MODULE_RESTOCK_HOURS", "N_PARAMS", "OUT_AVAILABILITY",
    "OUT_STOCKOUT_HOURS", "OUT_CAPACITY", "OUT_HOST_STOCKOUT_HOURS", "OUT_MODULE_STOCKOUT_HOURS", "N_OUT_F", "OUT_HOST_LOG",
    "OUT_FAILURES", "OUT_INTERRUPTIONS", "OUT_SWAPS", "OUT_REPAIRS", "OUT_EVENTS", "OUT_MAX_FAILED_GPUS",
    "OUT_PARTED", "OUT_MODULE_SWAPS", "OUT_HOST_REPAIRS", "OUT_HOST_SWAPS", "OUT_NIC_SWAPS", "N_OUT_I", "LAW_REPAIR",
    "LAW_SWAP", "LAW_RESTART", "N_LAWS", "WB_SHAPE", "WB_SCALE", "OUT_GPU_FAULTS", "OUT_GPU_EXP_FAILURES",
    "OUT_HOST_FAULTS", "OUT_HOST_FAILURES", "OUT_NIC_FAILURES", "OUT_NIC_FAULTS", "OUT_WEAR_FAILURES",
    "THIN_MAX_CANDIDATES",
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
#: Host units, when asked (``simulate_lifetimes(host_log=m)``): from this column of
#: ``out_f``, the number of candidate permanent host failures of the exponential law by the
#: horizon, then the first ``m`` of them in order, two columns each: the time and, if the
#: host was in place (a failure), its repair's duration, else -1 (a candidate rejected:
#: the host out, waiting for a host or in its swap). Every candidate counts, accepted or
#: not: their times are a Poisson process of the host rate x the hosts, whatever the
#: repairs (mcengine.kernels.host_stockout).
OUT_HOST_LOG = N_OUT_F
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
# ---- the law stack of a trial: laws[v * N_LAWS + w] for these w
LAW_REPAIR, LAW_SWAP, LAW_RESTART = 0, 1, 2
N_LAWS = 3
# ---- Weibull groups of a GPU (and of its module): wb[g, :] = (shape, scale hours)
WB_SHAPE = 0
WB_SCALE = 1

# ---- per-instance state of a variant: inst_i[v, row, i] and inst_f[v, row, i]
DOWN, PENDING = 0, 1
N_INST_I = 2
DOWN_SINCE, READY_AT, UP_AT = 0, 1, 2
N_INST_F = 3
# ---- counts of a variant: var_i[row, v] (its downtime hours: var_f[v])
V_INTERRUPTIONS, V_EVENTS = 0, 1
N_VAR_I = 2
# ---- reshard state of an instance (cluster.on_failure = "reshard", one variant): rs_k[i]
# GPUs without an installed unit; rs_f[RS_SEEN, i] served time counted up to there,
# rs_f[RS_FROM, i] when its current smaller layout starts serving
RS_SEEN, RS_FROM = 0, 1
# ---- superposed categories: rates[c] per listed position (c < 3) or host (3 <= c < 6); the
# NICs' (c >= 6: permanent failures, transient faults) for all NICs at once (always in place)
GPU_FAULT, GPU_EXP, GPU_WEAR, HOST_FAULT, HOST_EXP, HOST_WEAR, NIC_FAIL, NIC_FAULT = range(8)
N_CAT = 8
# ---- events by class: by_class[k] (then K_WEAR + g per GPU Weibull group g)
K_GPU_FAULT, K_GPU_EXP, K_HOST_FAULT, K_HOST_FAIL, K_NIC_FAIL, K_NIC_FAULT, K_WEAR = range(7)
N_BY_CLASS = 6
# events by class, after the N_OUT_I counts (shared by the variants of a pass, like OUT_FAILURES)
OUT_GPU_FAULTS = N_OUT_I + K_GPU_FAULT  # transient GPU faults (every class summed)
OUT_GPU_EXP_FAILURES = N_OUT_I + K_GPU_EXP  # permanent GPU failures of the exponential classes
OUT_HOST_FAULTS = N_OUT_I + K_HOST_FAULT  # transient host faults
OUT_HOST_FAILURES = N_OUT_I + K_HOST_FAIL  # permanent host failures (hosts, not their GPUs)
OUT_NIC_FAILURES = N_OUT_I + K_NIC_FAIL  # permanent NIC failures (each a NIC swap)
OUT_NIC_FAULTS = N_OUT_I + K_NIC_FAULT  # transient NIC faults
OUT_WEAR_FAILURES = N_OUT_I + K_WEAR  # permanent GPU failures of Weibull group g: column OUT_WEAR_FAILURES + g
# ---- rows of u_past: a GPU's Weibull groups, a module's
PAST_GPU, PAST_MODULE = 0, 1
# ---- what the next event is (next_event)
EV_SUPERPOSED, EV_CLOCK, EV_REPAIR, EV_HORIZON, EV_HOST_REPAIR = range(5)

#: A wear-out Weibull law is thinned when a unit installed at t = 0 would offer at most
#: this many candidates over the horizon (``k * H(horizon)``); else one clock per unit.
THIN_MAX_CANDIDATES = 2.0
