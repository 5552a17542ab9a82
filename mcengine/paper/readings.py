"""The readings of the paper each claim is evaluated under.

The paper's text available here is its abstract and introduction (docs/sources.md#paper-lite-gpu);
the bracketed figures come from a secondary summary (docs/sources.md#paper-claims). So each
claim entry says what that text states and does not state (:data:`TEXT`), and where several
readings of it are plausible, each is a scenario and the claim's figure and P(holds) are
given under each (:func:`readings`):

* claim 1: whole dies under Poisson defects (the paper's argument) or SM harvesting on both
  dies with clustered defects (shipped);
* claim 2: packaging cost scaling with the die fraction linearly (the paper's "a quarter of
  everything") or superlinearly in package size, ``cost ~ fraction^k`` with ``k`` = 1.5, 2;
* claim 3: a failure takes out its package alone (paper), its instance (``down``) or the
  throughput its best smaller layout gives up (``reshard``, served plans);
* claim 4: energy at the GPUs with collective time at idle power (shipped, a lower bound),
  collective time with the links at their own share of the TDP and the SMs idle (the
  link rule's power while the links carry the collective), collective time at full
  dynamic power (an upper bound on what links and SMs draw while they wait), and energy
  at the wall with the Lite's lighter cooling (its own PUE);
* claim 5: the 2x-link Lite with a quarter of the H100's HBM (paper's customised design), or
  HBM bandwidth and capacity from the die's shoreline (two stacks);
* claim 6: whole packages for the weights (paper), the smallest instance that fits and
  meets the SLO (shipped figure), and each design's cost-optimal instance size
  (``fleet.sizing``, shipped for the fleet's cost);
* claim 7: a training job that trains on elastically while a technician swaps the failed
  unit (the paper's finer failure domain), or hot spares within the restart (shipped).
"""

from __future__ import annotations

import numpy as np

from ._common import Settings, interval, paired_ratio, scenario, variant

#: Per claim: what the paper's available text states, and what it does not.
TEXT = {
    "yield": ("small single dies yield better than reticle-sized ones",
              "the yield model, defect density, clustering, or whether SMs are harvested; the ~41 % is secondary"),
    "cost": ("lower manufacturing cost per unit of compute",
             "a cost breakdown, how packaging, test and optics scale with die size; the ~32 % is secondary"),
    "blast_radius": ("a failure affects a smaller share of the cluster",
                     "what a failure takes out (package, instance, layout), swap or re-layout times; the ~8x is secondary"),
    "power": ("better power efficiency; lower power density and lighter cooling",
              "a Lite-GPU power, idle power, operating point, PUE, or power during collectives; the ~19 % is secondary"),
    "performance": ("basic Lite-GPUs may fall short; a customised cluster (~2x bandwidth-to-compute) matches or beats H100 "
                    "(Llama3-70B, GPT3-175B, Llama3-405B)",
                    "the Lite's HBM capacity and bandwidth, batch sizes, SLOs, efficiencies (Table 1 and Figure 3 not available)"),
    "fleet": ("resource-management opportunities from finer-grained allocation",
              "a fleet, demand mix or sizing policy; no figure"),
    "fault_tolerance": ("a failure affects a smaller share of the cluster (fault tolerance)",
                        "training: how a synchronous job spanning every unit fares, hot spares, elastic recovery; no figure"),
}
#: Claim 2's packaging readings: exponent k of cost ~ (die fraction)^k of the H100's package.
PACKAGING_EXPONENTS = (1.0, 1.5, 2.0)
#: Claim 4's lighter-cooling reading: the Lite's PUE (hyperscale low end, docs/sources.md#econ-power-pue).
LITE_PUE = 1.1


def _reading(name: str, reading: str, figure: dict | None, p_holds: float | None, **extra) -> dict:
    return {"name": name, "reading": reading, "figure": figure, "p_holds": p_holds, **extra}


def _side(doc: dict, side: str) -> tuple[dict, float]:
    return doc[side]["figure"], doc[side].get("p_holds")


def _yield(doc: dict, settings: Settings) -> list[dict]:
    return [_reading("whole dies", "no spare SMs, Poisson defects at D0 = 0.1 /cm² (paper's argument)", *_side(doc, "paper_assumptions")),
            _reading("harvested dies", "132/144 and 33/36 SMs, clustered defects, D0 uncertain (shipped)", *_side(doc, "shipped"))]


def _cost(doc: dict, settings: Settings) -> list[dict]:
    from .cost_claim import PAPER, PAPER_FIGURE, SHIPPED, reduction

    out = []
    for k in PACKAGING_EXPONENTS:
        for label, refs in (("paper", PAPER), ("shipped", SHIPPED)):
            a, b = (scenario(r) for r in refs)
            package = a.fab.package_cost_usd.median() * b.gpu.h100_equivalents.value ** k
            b = variant(b, f"{b.name}.package-k{k:g}", [f"fab.package_cost_usd={package!r}"])
            r = reduction((a, b), settings)["reduction"]
            out.append(_reading(f"packaging ~ fraction^{k:g}, {label}", f"{'linear' if k == 1 else 'superlinear'} packaging: the Lite's "
                                f"package ${package:.0f} (H100 ${a.fab.package_cost_usd.median():.0f} x {b.gpu.h100_equivalents.value:g}^{k:g}), "
                                f"{label} scenarios otherwise", interval(r), float(np.mean(r >= PAPER_FIGURE)), scenarios=[a.name, b.name]))
    return out


def _blast(doc: dict, settings: Settings) -> list[dict]:
    p = doc["paper_assumptions"]
    reshard = p["reshard"]
    return [_reading("package alone", "a failure takes out its package's compute, 1/f (paper's argument, closed form)", *_side(doc, "paper_assumptions")),
            _reading("whole instance, 'down'", "a missing GPU stops its instance (shipped); capacity-time lost over a lifetime",
                     *_side(doc, "shipped"), per_failure=doc["shipped"]["share_lost_per_failure_ratio_down"]),
            _reading("served plan, 'reshard'", "the instance serves on the best layout that fits the GPUs left; capacity-time lost "
                     "over a lifetime", reshard["figure"], reshard["p_holds"], per_failure=reshard["per_failure_ratio"])]


def joules_collectives_at_full_power(cols: dict, s) -> np.ndarray:
    """``energy_j_per_token`` with the GPUs drawing full dynamic power whenever they serve
    (busy fraction 1: collectives, like compute, at ``(TDP - idle) s^3``), an upper bound
    on the power links and SMs draw while collectives run: ``J x P_full / P``."""
    idle = cols["input.gpu.idle_w"] if "input.gpu.idle_w" in cols else np.full(len(cols["gpu_power_w"]), s.gpu.idle_w.median())
    full = idle + (s.gpu.tdp_w.median() - idle) * s.gpu.dvfs_scale.median() ** 3 * cols["availability"]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(cols["gpu_power_w"] > 0, cols["energy_j_per_token"] * full / cols["gpu_power_w"], cols["energy_j_per_token"])


def link_watts(s) -> float:
    """The scale-up links' share of the TDP by the link rule, ``pJ/bit x 8 x link_gbps``
    (W; docs/sources.md#power-link-energy): 0 when ``gpu.link_pj_per_bit`` is unset (the
    links are not charged apart from the TDP)."""
    pj = s.gpu.link_pj_per_bit
    return 0.0 if pj is None else float(pj.median()) * 8.0 * float(s.gpu.link_gbps.median()) / 1000.0


def joules_links_during_collectives(cols: dict, s) -> np.ndarray:
    """``energy_j_per_token`` with the links drawing their own share of the TDP
    (:func:`link_watts`, at full rate: no DVFS on the SerDes) whenever the GPU waits on a
    collective, the SMs at idle: the power ``P + W_link (1 - busy) a`` (busy fraction,
    availability a) instead of ``P``, so ``J x (P + W_link (1 - busy) a) / P``. The waiting
    time is the exposed collectives plus per-step overhead (0 as shipped), so this
    charges the links for the whole of it."""
    extra = link_watts(s) * (1.0 - cols["busy_fraction"]) * cols["availability"]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(cols["gpu_power_w"] > 0, cols["energy_j_per_token"] * (cols["gpu_power_w"] + extra) / cols["gpu_power_w"],
                        cols["energy_j_per_token"])


def _power(doc: dict, settings: Settings) -> list[dict]:
    from .performance import SWEEP_MODEL, designs_run, on_model
    from .power import PAPER_FIGURE

    cols = designs_run(settings)
    out = []
    for label, (h, lite) in (("shipped", ("h100", "lite-h100-2x")), ("paper", ("paper-h100", "paper-lite-h100-2x"))):
        ch, cl = cols[f"{h}.{SWEEP_MODEL}"], cols[f"{lite}.{SWEEP_MODEL}"]
        sh, sl = on_model(scenario(h), SWEEP_MODEL), on_model(scenario(lite), SWEEP_MODEL)
        pue = sh.econ.pue.median()
        gains = {
            "chip energy, collectives at idle": paired_ratio(ch["energy_j_per_token"], cl["energy_j_per_token"]) - 1.0,
            "collectives at link power": paired_ratio(joules_links_during_collectives(ch, sh), joules_links_during_collectives(cl, sl)) - 1.0,
            "collectives at full power": paired_ratio(joules_collectives_at_full_power(ch, sh), joules_collectives_at_full_power(cl, sl)) - 1.0,
            f"at the wall, Lite PUE {LITE_PUE:g} vs {pue:g}": paired_ratio(ch["energy_j_per_token"] * pue, cl["energy_j_per_token"] * LITE_PUE) - 1.0,
        }
        words = {"chip energy, collectives at idle": "GPU energy; a GPU waiting on a collective draws idle power (the roofline's busy "
                                                     "fraction counts compute and HBM time; a lower bound)",
                 "collectives at link power": f"GPU energy; while a collective runs the links draw their share of the TDP "
                                              f"(pJ/bit x 8 x GB/s: {link_watts(sh):.1f} W on the H100, {link_watts(sl):.1f} W on the Lite) "
                                              "and the SMs idle power (the paper's text states no power during collectives; "
                                              "this is the reading the link rule supports)",
                 "collectives at full power": "GPU energy; collective time at full dynamic power (an upper bound: SMs and HBM "
                                              "do not run at full power while they wait on links)"}
        for name, g in gains.items():
            out.append(_reading(f"{name}, {label}", words.get(name, f"energy at the wall: GPUs x PUE, the Lite's lighter cooling "
                                f"as a PUE of {LITE_PUE:g} against the H100's {pue:g}"), interval(g), float(np.mean(g >= PAPER_FIGURE)),
                                scenarios=[h, lite]))
    return out


def _performance(doc: dict, settings: Settings) -> list[dict]:
    s = doc["shipped"]
    h100, _, wide, *others = s["scenarios"]
    first = next(iter(s["models"]))
    out = [_reading("2x links, a quarter of the H100's HBM", f"{wide}: the paper's customised Lite (links only), {first}",
                    s["models"][first]["throughput_per_h100e_ratio"][wide], s["models"][first]["p_holds_by_design"][wide])]
    for n in others:
        out.append(_reading("HBM and links from the shoreline", f"{n}: two HBM stacks (bandwidth and capacity) and links from the die's "
                            f"perimeter, {first}", s["models"][first]["throughput_per_h100e_ratio"][n], s["models"][first]["p_holds_by_design"][n]))
    return out


def _fleet(doc: dict, settings: Settings) -> list[dict]:
    s = doc["shipped"]
    first, second = s["scenarios"][:2]
    gap = s["sized_rounding_loss"][first] - s["sized_rounding_loss"][second]
    return [_reading("whole packages", "each model's weights rounded up to whole packages (paper's argument)", *_side(doc, "paper_assumptions")),
            _reading("smallest instance that fits", "the fewest GPUs that fit weights and KV cache and meet the TPOT SLO (shipped figure)",
                     *_side(doc, "shipped")),
            _reading("cost-optimal per design", f"each design's instance size chosen for the lowest median cost per token ({s['sizing']}); "
                     "HBM beyond the weights holds KV cache, so this gap counts memory in use as lost",
                     {"median": gap, "p05": gap, "p95": gap}, float(gap > 0),
                     fleet_paired_ratio=s["fleet_paired_ratio"])]


def _fault_tolerance(doc: dict, settings: Settings) -> list[dict]:
    return [_reading("elastic jobs, technician swaps", "a failure costs the job its unit's data-parallel replicas while a technician "
                     "swaps it (2 h), both designs (the paper's finer failure domain)", *_side(doc, "paper_assumptions")),
            _reading("hot spares", "a spare joins within the restart, Llama 3's practice (shipped)", *_side(doc, "shipped"))]


READINGS = {"yield": _yield, "cost": _cost, "blast_radius": _blast, "power": _power, "performance": _performance, "fleet": _fleet,
            "fault_tolerance": _fault_tolerance}


def readings(doc: dict, settings: Settings) -> dict:
    """``{"text_states", "text_does_not_state", "readings": [...]}`` for a claim's entry ``doc``."""
    states, not_states = TEXT[doc["key"]]
    return {"text_states": states, "text_does_not_state": not_states, "readings": READINGS[doc["key"]](doc, settings)}
