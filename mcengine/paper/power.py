"""Claim 4, power efficiency: better performance per watt.

The figure is the perf-per-watt gain of the Lite cluster, ``J_h100 / J_lite - 1``, from
each trial's ``energy_j_per_token`` (econ stage, docs/model.md#power: a GPU draws
``idle + (TDP - idle) x s^3 x busy fraction x availability``, ``s`` = ``gpu.dvfs_scale``),
paired over trials. The paper's assumptions (configs/paper/paper-lite-h100.toml) put a
Lite-GPU at a quarter of the H100's TDP and idle power, at rated clocks (s = 1): the
text available to us names "lower power density" and "lighter cooling" but no lower
operating point. At throughput parity (the paper's claim 5) and equal busy fraction
``u`` the energy per token is the power per H100-equivalent, so the gain has the closed
form :func:`parity_gain`, exactly 0 for a quarter of everything at s = 1; the paper's
2x Lite is a quarter of everything but its links, whose doubled power (9 W a package at
5 pJ/bit, docs/model.md#links) puts it below 0. The sweep
moves the Lite-GPU's operating point ``gpu.dvfs_scale`` (FLOP/s x s, dynamic power
x s^3), the one input of the power model that can give the same silicon a better
perf per watt, through the chain (it moves the roofline too).

Under the facility (``"facility"`` in the entry, :func:`facility_side`): the paper argues
the Lite's lower power density eases cooling. The same pair runs through the chain with
the shipped ``facility`` study's settings (configs/studies/facility.toml: switch tiers, the
data hall with cooling chosen by rack power, a cost of capital; docs/facility.md): per
design the rack's power, the cooling it gets (air up to ``econ.air_cooling_limit_kw``,
liquid above), the cooling, floor and hall lines and the cost per token; paired, the
perf-per-watt gain at the wall (the energy bill per token: hosts, network and the
cooling kind's PUE included; the power price, common to both designs in a trial,
cancels) and the cost ratio.
"""

from __future__ import annotations

import numpy as np

from ..columns import BREAKDOWN_COLUMN
from ..scenario.study import load_study
from ..stages.econ import per_unit
from ._common import SECONDARY, Settings, boundary, chain, entry, interval, paired_ratio, scenario, variant
from .performance import SWEEP_MODEL, designs_run, on_model

PAPER_FIGURE = 0.19
SWEEP_KEY = "gpu.dvfs_scale"
SWEEP_VALUES = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
#: The Lite designs whose gain the shipped side reports (the first is the claim's).
SHIPPED_LITE = ("lite-h100-2x", "lite-h100-shoreline")
#: The study whose settings put the pair in a data hall (configs/studies/facility.toml).
FACILITY_STUDY = "facility"


def parity_gain(idle_h100_w: float, tdp_h100_w: float, idle_lite_w: float, tdp_lite_w: float, lite_h100_equivalents: float,
                dvfs_scale_lite: float, busy_fraction: float) -> float:
    """Perf-per-watt gain at throughput parity per H100-equivalent and equal busy fraction
    ``u`` (availability folded into ``u``): the ratio of power per H100-equivalent,
    ``(idle_h + (TDP_h - idle_h) u) / ((idle_l + (TDP_l - idle_l) s^3 u) / f) - 1``
    (docs/model.md#power; H100 at rated clocks)."""
    p_h100 = idle_h100_w + (tdp_h100_w - idle_h100_w) * busy_fraction
    p_lite = idle_lite_w + (tdp_lite_w - idle_lite_w) * dvfs_scale_lite ** 3 * busy_fraction
    return p_h100 / (p_lite / lite_h100_equivalents) - 1.0


def gain(ca: dict, cb: dict) -> np.ndarray:
    """Per-trial perf-per-watt gain of B over A, ``J_a / J_b - 1`` from the run's
    ``energy_j_per_token`` (paired as the run pairs: 0 where both deliver no tokens)."""
    return paired_ratio(ca["energy_j_per_token"], cb["energy_j_per_token"]) - 1.0


def _side(cols: dict, h100: str, lites: tuple[str, ...]) -> dict:
    ca = cols[f"{h100}.{SWEEP_MODEL}"]
    gains = {b: gain(ca, cols[f"{b}.{SWEEP_MODEL}"]) for b in lites}
    g = gains[lites[0]]
    names = (h100, *lites)
    out = {"scenarios": list(names), "figure": interval(g), "p_holds": float(np.mean(g >= PAPER_FIGURE)),
           "by_design": {b: interval(v) for b, v in gains.items()},
           "power_w_per_h100_equivalent": {n: interval(cols[f"{n}.{SWEEP_MODEL}"]["power_w_per_h100_equivalent"]) for n in names},
           "busy_fraction": {n: interval(cols[f"{n}.{SWEEP_MODEL}"]["busy_fraction"]) for n in names}}
    if len(lites) > 1:
        out["text"] = "; ".join(f"{b}: {_pct(interval(v))}" for b, v in gains.items())
    return out


def _pct(f: dict) -> str:
    """``median [p05 - p95]`` of a gain, in %."""
    return f"{100 * f['median']:+.0f} % [{100 * f['p05']:+.0f} % - {100 * f['p95']:+.0f} %]"


def _parity(cols: dict) -> float:
    """:func:`parity_gain` at the paper scenarios' median inputs and the H100's median busy fraction."""
    h, lite = scenario("paper-h100"), scenario("paper-lite-h100-2x")
    u = float(np.median(cols[f"paper-h100.{SWEEP_MODEL}"]["busy_fraction"]))
    return parity_gain(h.gpu.idle_w.median(), h.gpu.tdp_w.median(), lite.gpu.idle_w.median(), lite.gpu.tdp_w.median(),
                       lite.gpu.h100_equivalents.value, lite.gpu.dvfs_scale.median(), u)


def facility_side(ca: dict, cb: dict, a: str, b: str, liquid_b: dict) -> dict:
    """The pair A (H100) and B (Lite) in the data hall, from their paired chain columns:
    per design the rack's power (kW), the share of trials it is liquid-cooled and the
    cooling that most trials choose, racks, rated IT MW, the cost per Mtok and its
    cooling, floor and hall lines (means, USD per Mtok); paired, the perf-per-watt gain at
    the wall ``(E_a / T_a) / (E_b / T_b) - 1`` from the energy bill ``energy_usd`` and the
    tokens (the power price cancels) and the cost ratio B/A with P(B cheaper); and what the
    cooling its rack power allows is worth to B: its cost per token over that of the same
    B in a liquid-cooled hall (``liquid_b``), with P(the rack's own cooling is cheaper)."""
    def design(c: dict) -> dict:
        liquid = float(np.mean(c["liquid_cooled"]))
        return {"rack_kw": interval(c["rack_kw"]), "liquid_share": liquid, "cooling": "liquid" if liquid > 0.5 else "air",
                "racks": float(np.median(c["racks"])), "it_power_mw": float(np.median(c["it_power_mw"])),
                "cost_per_mtok_usd": interval(c["cost_per_mtok_usd"]),
                **{f"{part}_per_mtok_usd": float(np.mean(c[BREAKDOWN_COLUMN.format(part)])) for part in ("cooling", "floor", "facility")}}

    wall = paired_ratio(*(per_unit(c["energy_usd"], c["tokens_total"]) for c in (ca, cb))) - 1.0
    cost = paired_ratio(cb["cost_per_mtok_usd"], ca["cost_per_mtok_usd"])
    by_design = {a: design(ca), b: design(cb)}
    own = paired_ratio(cb["cost_per_mtok_usd"], liquid_b["cost_per_mtok_usd"])
    out = {"by_design": by_design, "wall_gain": interval(wall), "cost_ratio": interval(cost),
           "p_lite_cheaper": float(np.mean(cb["cost_per_mtok_usd"] < ca["cost_per_mtok_usd"])),
           "lite_own_cooling_over_liquid": interval(own),
           "p_own_cooling_cheaper": float(np.mean(cb["cost_per_mtok_usd"] < liquid_b["cost_per_mtok_usd"]))}
    da, db = by_design[a], by_design[b]
    cheaper_cooling = db["cooling_per_mtok_usd"] < da["cooling_per_mtok_usd"]
    own_median = out["lite_own_cooling_over_liquid"]["median"]
    out["text"] = (f"racks {da['rack_kw']['median']:.0f} kW ({da['cooling']}) vs {db['rack_kw']['median']:.0f} kW ({db['cooling']}); "
                   f"cooling {'cheaper' if cheaper_cooling else 'not cheaper'} per token ({db['cooling_per_mtok_usd']:.4f} vs "
                   f"{da['cooling_per_mtok_usd']:.4f} USD/Mtok), floor {db['floor_per_mtok_usd']:.4f} vs {da['floor_per_mtok_usd']:.4f}; "
                   f"perf per watt at the wall {_pct(out['wall_gain'])}; cost ratio {out['cost_ratio']['median']:.3f}, "
                   f"P(Lite cheaper) {out['p_lite_cheaper']:.3f}; the Lite in its own cooling over the Lite liquid-cooled "
                   f"{own_median:.3f} (P cheaper {out['p_own_cooling_cheaper']:.3f})")
    return out


def _facility(settings: Settings) -> dict:
    """:func:`facility_side` of shipped h100 and the claim's Lite on the sweep's model, with
    the ``facility`` study's settings, and the Lite with every rack liquid-cooled
    (``econ.cooling = "liquid"``)."""
    overrides = list(load_study(FACILITY_STUDY)["set"])
    pair = [variant(on_model(scenario(r), SWEEP_MODEL), f"{r}.{SWEEP_MODEL}.facility", overrides) for r in ("h100", SHIPPED_LITE[0])]
    liquid = variant(pair[1], f"{pair[1].name}.liquid", ['econ.cooling="liquid"'])
    cols = chain([*pair, liquid], settings)
    a, b = (s.name for s in pair)
    out = facility_side(cols[a], cols[b], a, b, cols[liquid.name])
    out["settings"] = overrides
    out["study"] = FACILITY_STUDY
    return out


def compute(settings: Settings) -> dict:
    settings.note("claim 4: power efficiency")
    cols = designs_run(settings)
    p, s = _side(cols, "paper-h100", ("paper-lite-h100-2x",)), _side(cols, "h100", SHIPPED_LITE)
    p["closed_form_at_parity"] = _parity(cols)
    p["text"] = f"{_pct(p['figure'])}; at the paper's throughput parity {100 * p['closed_form_at_parity']:+.0f} % (closed form)"
    values = settings.grid(SWEEP_VALUES)
    h100, wide = (on_model(scenario(r), SWEEP_MODEL) for r in ("h100", SHIPPED_LITE[0]))
    runs = [variant(wide, f"{wide.name}.dvfs-{v:g}", [f"{SWEEP_KEY}={v!r}"]) for v in values]
    swept = chain([h100, *runs], settings)
    figures = [gain(swept[h100.name], swept[r.name]) for r in runs]
    bnd = boundary(f"B:{SWEEP_KEY}", values, figures, lambda f: f >= PAPER_FIGURE, lambda f: f > 0.0,
                   f"shipped h100 vs {SHIPPED_LITE[0]} on {SWEEP_MODEL}, the Lite-GPU's voltage/frequency operating point s "
                   "(FLOP/s x s, dynamic power x s^3) at each value")
    cross, better = bnd["crossing_holds"], bnd["crossing_better"]
    if cross:
        holds = f"the Lite-GPU runs at dvfs_scale <= {cross[0]:.2f} (FLOP/s x s, dynamic power x s^3; 1 = rated clocks)"
    elif better:
        holds = f"never 19 % over dvfs_scale {values[0]:g}-{values[-1]:g}; Lite better at all at dvfs_scale <= {better[0]:.2f}"
    else:
        holds = f"not over a Lite-GPU dvfs_scale of {values[0]:g}-{values[-1]:g}"
    return entry(
        number=4, key="power", claim="Better performance per watt",
        metric="perf-per-watt gain J_h100 / J_lite - 1 (energy per output token, llama-3-70b)",
        paper_figure=PAPER_FIGURE, paper_figure_text="~19 % better power efficiency", source=SECONDARY, confirmed=False,
        paper_assumptions=p, shipped=s, boundary_=bnd, holds_when=holds, extra={"facility": _facility(settings)},
        model=("power = idle + (TDP - idle) x dvfs_scale^3 x busy fraction (the roofline's) x availability per GPU; "
               "J/token = active GPUs x power / delivered tokens/s (docs/model.md#power)"),
    )
