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
  fault while it is short re-layouts (:func:`~.workspace.reshard_step`). Up/down states are those of
  ``"down"``, so the served capacity only adds to ``OUT_CAPACITY``.
* **Modules** (component classes with ``replace_unit = "module"``, docs/model.md#modules):
  one clock per GPU position for its module (the minimum of the module classes'
  Weibull lives), renewed at each module swap and GPU install; a module failure takes
  the GPU's instance down (reshard: the GPU lost) for ``P_MODULE_SWAP_HOURS`` in place,
  no repair. With a module pool (``spare_modules`` >= 0, docs/model.md#module-pool) the
  swap takes a pool module, and the failed one is replaced: a new module is ordered and
  joins the pool ``P_MODULE_RESTOCK_HOURS`` later (one-for-one base stock); with the pool
  empty the swap waits, FIFO, for the next restock (:func:`~.units._module_from_pool`).
* **Host units** (``reliability.host_failure = "host"``, docs/model.md#host-units): a
  permanent host failure takes the host out, not its GPUs: its instances go down, the
  host goes to repair (no crew; a list of completion times, ``ws.hrq``), and a pool host
  (``spare_hosts``) takes its place after ``P_HOST_SWAP_HOURS`` (the host's ``at_h`` in
  the future: candidates on it are rejected meanwhile), or, with none, the host waits
  (``at_h = inf``, FIFO ``ws.hwq``, its instances' ``hwait_i``) for the next host repair to
  complete (an event then, :data:`EV_HOST_REPAIR`). Its GPUs stay, age on, and neither
  fail with it nor draw on the GPU pool (:func:`~.units.host_unit_fails`).
* **NICs** (classes with ``per = "nic"``, docs/model.md#per-unit): NIC ``k`` serves GPU
  positions ``k * gpus_per_nic ..`` (possibly of several instances) and is always in
  place. Its permanent failures (``P_LAM_NIC_PERM``) and transient faults
  (``P_LAM_NIC_FAULT``) are two superposed categories over all NICs: a fault restarts
  the NIC's instances; a failure swaps the NIC in place in ``P_NIC_SWAP_HOURS``, its
  instances down meanwhile (:func:`~.units.nic_fails`).
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
  binary heap (:mod:`mcengine.kernels.life.heap`) when it falls before the horizon;
* a **swap** does not leave its slot: the unit's install time ``t_i`` is set in the
  future, and until then a candidate event on the slot is rejected (no GPU is there:
  the same thinning, exact). The instance keeps ``ready_at``, the last install time of
  its pending swaps, so its **restart** starts at ``ready_at`` (its duration drawn when
  the instance is next looked at) and ends at ``up_at``; a later fault or failure
  compares its time with these, and the downtime is added when the instance is seen up;
* **repair completions** are bare times in an unordered list while a few are pending,
  in a min-heap above :data:`~mcengine.kernels.life.workspace.RQ_HEAP_ABOVE` (so taking
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
  :func:`~mcengine.kernels.life.hazard.past_uniform`) is such a life whenever it
  starts, and it arms no clock. A lifetime's start draws one life per unit (the shipped
  Lite's 4,096 laser modules, about 1 % of them within five years), so a unit past the
  horizon costs a compare, not a log and a power: at a lifetime's start those lives are
  a run of 53-bit words compared in the stream's buffer with the cut's integer
  (:func:`~mcengine.rng.draws_below`), elsewhere a uniform and a compare.

This leaves about one loop iteration per failure or fault (swaps, installs, restarts
and repairs need none; ``python -m benchmarks counts`` counts them per lifetime). Memory per lifetime is ``O(GPUs)``, reused across the lifetimes of a block. The counts of
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
module pool's restocks and waits are kept per variant, :func:`~.units.module_fails`); only a
variant whose module fails after another event leaves. Every variant has exactly the
numbers of its own run; in the shipped case study a few percent of fast-swap lifetimes
leave, each at a module failure with another event between
the two variants' failure times (a swap 1.95 h longer in the plain twin).

Randomness: one counter-based stream per lifetime, ``(seed, STAGE_LIFE, 0, global
lifetime index)``; draws happen in the order of the loop, so a lifetime's result does
not depend on its block, chunk or thread.

Implementation: a package by interface. :mod:`~mcengine.kernels.life.indices` holds every
index in one namespace (the ``P_*`` parameter and ``OUT_*`` output columns, the ``LAW_*``
rows, the workspace's rows and codes); :mod:`~mcengine.kernels.life.workspace` the
cluster's structure, a block's arrays, a lifetime's state and the small steps the handlers
share; :mod:`~mcengine.kernels.life.handlers` one named handler per kind of step: the next
event (:func:`~.handlers.next_event`), a superposed event or a per-unit clock
(:func:`~.handlers.pick_superposed`, :func:`~.handlers.pick_clock`), a permanent host
failure (:func:`~.handlers.host_fails`), the repairs due (:func:`~.handlers.repairs_due`),
a slot whose unit fails (:func:`~.handlers.slot_empties`) and the instances it hits
(:func:`~.handlers.touch_instances`), a slot refilled (:func:`~.handlers.slot_refilled`),
the superposed clock (:func:`~.handlers.reschedule`), the start and the horizon
(:func:`~.handlers.start_lifetime`, :func:`~.handlers.close_lifetime`);
:mod:`~mcengine.kernels.life.units` the events of the parts swapped in place and of host
units (modules, NICs, host units, reshard's swap ends); :mod:`~mcengine.kernels.life.loop`
a lifetime (:func:`~.loop.simulate_one`); :mod:`~mcengine.kernels.life.driver` the
lifetimes of a call in blocks (:func:`simulate_lifetimes`); beside them
:mod:`~mcengine.kernels.life.hazard` (Weibull hazards and lives),
:mod:`~mcengine.kernels.life.variants` (when a follower leaves the leader) and
:mod:`~mcengine.kernels.life.heap` (the clock heap).

The handlers of the events are inlined into the loop (:data:`~mcengine.jit.inline_kernel`);
those that run once per lifetime or seldom (the lifetime's fixed values, its start and
close, the modules', host units' and NICs' events, and the general passes
(:func:`~.loop._passes`: the repairs due, the slots emptied and refilled, the instances
they touch), which the fast paths below spare most events) are compiled apart and called
(:data:`~mcengine.jit.linked_kernel`: without reference counting, and without the
entry points from Python that no kernel uses): each inlined handler adds its compile time to the
loop's, and the loop's size its peak memory. The loop passes those it calls per event the
workspace, the cluster and the lifetime's fixed values by reference (one word a call, not
their ~400). They share a named workspace (:class:`~.workspace.Workspace`, arrays
allocated once per block of lifetimes) and the lifetime's scalar state (one record of
:data:`~.workspace.STATE`, fields by name). What happens at one instant runs in passes (the
repairs due, each failing slot with the instances it touches, then the units assigned),
so every slot a failure empties is empty before any is refilled.

Two *fast paths* do what the passes do with less bookkeeping, only when the argument
``fast_paths`` is set (the default): GPUs that fail in gpu mode while the pool and the
crews suffice for all of them (:func:`~.handlers.gpus_fail_fast`; a host's common-cause failure:
16 GPUs in the Lite cluster, most of its failures), and a transient
fault while nothing waits for a unit or a crew (:func:`~.handlers.fault_fast`: a fault changes only
the instances it touches, most of the loop's events); modules ride along
(a failing GPU's module clock stops, its new module's is drawn after its swap, as in
the passes), reshard never takes them. They make the same
draws in the same order, so the numbers are those of the passes; the tests run both
ways and require bit-identical outputs. The loop is a
:data:`~mcengine.jit.linked_kernel`: compiled without numba's reference counting, it
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

from mcengine.kernels.life import indices
from mcengine.kernels.life.driver import run_block, simulate_lifetimes
from mcengine.kernels.life.indices import *  # noqa: F403 (the interface's columns, one namespace)
from mcengine.kernels.life.workspace import STATE, Cluster, Workspace, cluster_config

__all__ = [*indices.__all__, "Cluster", "Workspace", "STATE", "cluster_config", "simulate_lifetimes", "run_block"]
