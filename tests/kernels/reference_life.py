"""A slow, independent twin of the reliability kernel, for statistical comparison.

Written the obvious way: one clock per component unit (no superposition, no grouping of
Weibull classes), one transient clock per GPU and per host, a ``heapq`` of events with
lazy cancellation, and NumPy's ``Generator`` for randomness. It implements the semantics
documented in :mod:`mcengine.kernels.life` and is compared with the kernel in
distribution (means within their combined standard errors), not draw by draw.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from mcengine.units import HOURS_PER_YEAR


@dataclass
class Config:
    """Plain-number description of a toy cluster (rates per unit-year, times in hours)."""

    instances: int
    instance_gpus: int
    gpus_per_host: int
    spare_gpus: int
    horizon_years: float
    components: list  # (count, afr, transient_afr, shape)
    host_afr: float = 0.0
    host_transient_afr: float = 0.0
    host_shape: float = 1.0
    repair: tuple = ("fixed", 0.0)  # ("fixed", v) | ("exponential", mean) | ("lognormal", median, sigma) | ("mixture", [(w, law), ...])
    swap: tuple = ("fixed", 0.0)
    restart: tuple = ("fixed", 0.0)
    crews: float = math.inf
    host_mode: bool = False


def _draw(rng, law):
    if law[0] == "mixture":  # ("mixture", [(weight, law), ...])
        u, total = rng.random(), 0.0
        for weight, part in law[1]:
            total += weight
            if u <= total:
                return _draw(rng, part)
        return _draw(rng, law[1][-1][1])
    if law[0] == "fixed":
        return law[1]
    if law[0] == "exponential":
        return rng.exponential(law[1])
    return law[1] * math.exp(law[2] * rng.standard_normal())


def _life(rng, afr, shape):
    """One component's time to permanent failure, hours (inf if afr = 0)."""
    if afr <= 0.0:
        return math.inf
    mttf = HOURS_PER_YEAR / afr
    return mttf / math.gamma(1.0 + 1.0 / shape) * rng.weibull(shape)


def simulate(cfg: Config, rng: np.random.Generator) -> dict:
    """One lifetime; returns the kernel's metrics (counts, availability, stock-out hours)."""
    A, ng, gph = cfg.instances * cfg.instance_gpus, cfg.instance_gpus, cfg.gpus_per_host
    H = -(-A // gph)
    T = cfg.horizon_years * HOURS_PER_YEAR
    n_slots = H if cfg.host_mode else A

    def slot_positions(s):
        return range(s * gph, min(s * gph + gph, A)) if cfg.host_mode else range(s, s + 1)

    def slot_instances(s):
        ps = slot_positions(s)
        return range(ps[0] // ng, ps[-1] // ng + 1)

    def host_instances(k):
        return range(k * gph // ng, (min(k * gph + gph, A) - 1) // ng + 1)

    events, version = [], {}
    seq = [0]

    def schedule(t, key):
        version[key] = version.get(key, 0) + 1
        seq[0] += 1
        heapq.heappush(events, (t, seq[0], key, version[key]))

    def cancel(key):
        version[key] = version.get(key, 0) + 1

    transient_rate = sum(c * tr for c, _, tr, _ in cfg.components) / HOURS_PER_YEAR

    def arm_gpu(p, t):
        life = min((_life(rng, afr, shape) for c, afr, _, shape in cfg.components for _ in range(c)), default=math.inf)
        if life < math.inf:
            schedule(t + life, ("gpu_fail", p))
        if transient_rate > 0:
            schedule(t + rng.exponential(1 / transient_rate), ("gpu_fault", p))

    def arm_host_perm(k, t):
        life = _life(rng, cfg.host_afr, cfg.host_shape)
        if life < math.inf:
            schedule(t + life, ("host_fail", k))

    def arm_host_fault(k, t):
        if cfg.host_transient_afr > 0:
            schedule(t + rng.exponential(HOURS_PER_YEAR / cfg.host_transient_afr), ("host_fault", k))

    filled = [True] * n_slots
    missing, waiting = [0] * cfg.instances, [0] * cfg.instances
    up = [True] * cfg.instances
    down_since, wait_since = [0.0] * cfg.instances, [0.0] * cfg.instances
    pool = cfg.spare_gpus // gph if cfg.host_mode else cfg.spare_gpus
    busy, queue, in_repair, max_in_repair, crew_seq = 0, 0, 0, 0, 0
    wait_q = []
    m = dict(failures=0, interruptions=0, swaps=0, repairs=0, down=0.0, stockout=0.0)
    for p in range(A):
        arm_gpu(p, 0.0)
    for k in range(H):
        arm_host_perm(k, 0.0)
        arm_host_fault(k, 0.0)

    def go_down(i, t):
        up[i] = False
        down_since[i] = t
        m["interruptions"] += 1

    def fault(i, t):
        if up[i]:
            go_down(i, t)
            schedule(t + _draw(rng, cfg.restart), ("restart", i))
        elif missing[i] == 0:
            schedule(t + _draw(rng, cfg.restart), ("restart", i))

    def start_repair(t):
        nonlocal busy, crew_seq
        busy += 1
        crew_seq += 1
        schedule(t + _draw(rng, cfg.repair), ("repair", crew_seq))

    def slot_fail(s, t):
        nonlocal in_repair, max_in_repair, queue, pool
        filled[s] = False
        for p in slot_positions(s):
            cancel(("gpu_fail", p))
            cancel(("gpu_fault", p))
        if cfg.host_mode:
            cancel(("host_fail", s))
            cancel(("host_fault", s))
        for i in slot_instances(s):
            if up[i]:
                go_down(i, t)
            elif missing[i] == 0:
                cancel(("restart", i))
            missing[i] += 1
        m["repairs"] += 1
        in_repair += 1
        max_in_repair = max(max_in_repair, in_repair)
        if busy < cfg.crews:
            start_repair(t)
        else:
            queue += 1
        if pool > 0:
            pool -= 1
            m["swaps"] += 1
            schedule(t + _draw(rng, cfg.swap), ("install", s))
        else:
            wait_q.append(s)
            for i in slot_instances(s):
                if waiting[i] == 0:
                    wait_since[i] = t
                waiting[i] += 1

    while events:
        t, _, key, ver = heapq.heappop(events)
        if t > T:
            break
        if version[key] != ver:
            continue
        kind, x = key
        if kind == "gpu_fault":
            fault(x // ng, t)
            schedule(t + rng.exponential(1 / transient_rate), key)
        elif kind == "host_fault":
            for i in host_instances(x):
                fault(i, t)
            arm_host_fault(x, t)
        elif kind == "gpu_fail":
            m["failures"] += 1
            slot_fail(x // gph if cfg.host_mode else x, t)
        elif kind == "host_fail":
            ps = range(x * gph, min(x * gph + gph, A))
            if cfg.host_mode:
                m["failures"] += len(ps)
                slot_fail(x, t)
            else:
                for p in ps:
                    if filled[p]:
                        m["failures"] += 1
                        slot_fail(p, t)
                arm_host_perm(x, t)
        elif kind == "install":
            filled[x] = True
            for p in slot_positions(x):
                arm_gpu(p, t)
            if cfg.host_mode:
                arm_host_perm(x, t)
                arm_host_fault(x, t)
            for i in slot_instances(x):
                missing[i] -= 1
                if missing[i] == 0:
                    schedule(t + _draw(rng, cfg.restart), ("restart", i))
        elif kind == "restart":
            up[x] = True
            m["down"] += t - down_since[x]
        elif kind == "repair":
            busy -= 1
            in_repair -= 1
            if queue > 0:
                queue -= 1
                start_repair(t)
            if wait_q:
                s = wait_q.pop(0)
                for i in slot_instances(s):
                    waiting[i] -= 1
                    if waiting[i] == 0:
                        m["stockout"] += t - wait_since[i]
                m["swaps"] += 1
                schedule(t + _draw(rng, cfg.swap), ("install", s))
            else:
                pool += 1
    for i in range(cfg.instances):
        if not up[i]:
            m["down"] += T - down_since[i]
        if waiting[i] > 0:
            m["stockout"] += T - wait_since[i]
    return {
        "instance_availability": 1.0 - m["down"] / (cfg.instances * T),
        "failures_per_year": m["failures"] / cfg.horizon_years,
        "interruptions_per_year": m["interruptions"] / cfg.horizon_years,
        "swaps_per_year": m["swaps"] / cfg.horizon_years,
        "repairs": float(m["repairs"]),
        "stockout_hours": m["stockout"],
        "max_failed_gpus": max_in_repair * (gph if cfg.host_mode else 1),
    }


def simulate_many(cfg: Config, lifetimes: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    rows = [simulate(cfg, rng) for _ in range(lifetimes)]
    return {k: np.array([r[k] for r in rows], dtype=float) for k in rows[0]}
