"""Figures of the stage commands' documents: `yield`, `reliability`, `roofline`.

Each ``*_figures(doc)`` returns ``{file name: Figure}`` (no pyplot, see
:func:`.figures.new_figure`); each ``figures_for_*(doc, out)`` writes them as PNG into
``out`` and returns the paths.
"""

from __future__ import annotations

from pathlib import Path

from .display import FigureSet
from .figures import new_figure, save_png


def _write(figs: dict, out) -> list[Path]:
    out = Path(out)
    return [save_png(fig, out / name) for name, fig in figs.items()]


def yield_figures(doc: dict) -> FigureSet:
    """Die yield: the Monte Carlo mean with its 90% band beside each closed form."""
    an, mc = doc["analytic"], doc["die_yield"]
    harvest = doc.get("harvesting", {})
    names = ["harvesting" if harvest.get("enabled") else "whole die"] + [k for k in an if k != "harvesting"]
    values = [an.get("harvesting", an.get("poisson"))] + [an[k] for k in names[1:]]
    fig = new_figure(7.5, 4.2)
    ax = fig.add_subplot()
    ys = range(len(names))
    ax.barh(ys, values, color=["C1"] + ["C7"] * (len(names) - 1), label="closed form at the median inputs")
    ax.errorbar([mc["mean"]], [0], xerr=[[mc["mean"] - mc["p05"]], [mc["p95"] - mc["mean"]]], fmt="D", color="k", capsize=4,
                label="Monte Carlo mean, 5%–95% over wafers")
    label_h = (f"with SM harvesting ({harvest.get('units_required')}/{harvest.get('units_per_die')} units)"
               if harvest.get("enabled") else "whole die (no harvesting)")
    ax.set_yticks(list(ys), [label_h] + [n.replace("_", " ") + " (whole die)" for n in names[1:]], fontsize=8)
    ax.invert_yaxis()
    for y, v in zip(ys, values):  # inside the bar, clear of the Monte Carlo marker
        ax.text(0.01, y, f"{v:.3f}", va="center", ha="left", fontsize=8, color="white", fontweight="bold")
    ax.set(xlim=(0, 1.08), xlabel="die yield (share of dies that are sellable)",
           title=f"Die yield of {doc.get('scenario', '')}: Monte Carlo vs closed forms ({doc.get('wafers', 0):,} wafers)")
    ax.grid(alpha=0.3, axis="x")
    fig.legend(fontsize=8, loc="outside lower center", ncols=2)
    return FigureSet({"die_yield.png": fig})


def reliability_figures(doc: dict) -> FigureSet:
    """Downtime (quantiles of unavailability) and event rates beside the renewal references
    over the run's horizon (the long-run ones, where they differ, in grey)."""
    from ..units import HOURS_PER_YEAR
    from .metrics import reliability_references

    an = doc.get("analytic", {})
    fig = new_figure(9.0, 4.0)
    ax1, ax2 = fig.subplots(1, 2, width_ratios=(1, 1.6))
    a = doc["instance_availability"]
    minutes = HOURS_PER_YEAR * 60
    qs = [("p01", "1%"), ("p05", "5%"), ("p50", "median"), ("p95", "95%"), ("p99", "99%")]
    # downtime is 1 − availability: its low quantiles come from availability's high ones
    down = [(1 - a[{"p01": "p99", "p05": "p95", "p50": "p50", "p95": "p05", "p99": "p01"}[k]]) * minutes for k, _ in qs]
    ax1.plot(range(len(qs)), down, "o-", color="C0", label="Monte Carlo")
    refs = reliability_references(an)
    ref, long_run = refs["instance_availability"]
    if ref is not None:
        ax1.axhline((1 - ref) * minutes, color="C3", ls="--", label="renewal reference over the horizon")
    if long_run is not None:
        ax1.axhline((1 - long_run) * minutes, color="C7", ls=":", label="long-run reference (t → ∞)")
    ax1.set_xticks(range(len(qs)), [w for _, w in qs])
    ax1.set(xlabel="quantile over lifetimes", ylabel="downtime per instance (minutes per year)", title="Instance downtime", ylim=(0, None))
    ax1.grid(alpha=0.3)
    ax1.legend(fontsize=7)
    rows = [("failures_per_year", "failures", "failures_per_year"), ("interruptions_per_year", "interruptions", "interruptions_per_year"),
            ("swaps_per_year", "swaps", None), ("repairs_per_year", "repairs", None)]
    rows = [r for r in rows if r[0] in doc]
    for i, (key, label, ref) in enumerate(rows):
        d = doc[key]
        ax2.barh(i, d["mean"], color="C0", alpha=0.7)
        ax2.errorbar([d["mean"]], [i], xerr=[[d["mean"] - d["p05"]], [d["p95"] - d["mean"]]], fmt="none", color="k", capsize=4)
        at, long_run = refs.get(ref, (None, None)) if ref else (None, None)
        if at is not None:
            ax2.plot([at], [i], "D", color="C3", label="renewal reference over the horizon" if i == 0 else None)
        if long_run is not None:
            ax2.plot([long_run], [i], "D", mfc="none", color="C7", label="long-run reference (t → ∞)" if i == 0 else None)
    ax2.set_yticks(range(len(rows)), [r[1] for r in rows])
    ax2.invert_yaxis()
    ax2.set(xlabel="events per year in the cluster (bars: mean; whiskers: 5%–95%)", title="Event rates")
    ax2.grid(alpha=0.3, axis="x")
    ax2.legend(fontsize=7, loc="lower right")
    fig.suptitle(f"Reliability of {doc.get('scenario', '')}: {doc.get('lifetimes', 0):,} cluster lifetimes", fontsize=10)
    return FigureSet({"reliability.png": fig})


def roofline_figures(doc: dict) -> FigureSet:
    """Roofline terms per phase (log scale) and tokens/s per GPU of each searched layout."""
    import numpy as np

    terms = doc["terms"]
    phases = [("ttft", "TTFT (prefill ×1)"), ("decode", "TPOT (decode step)"), ("prefill", f"prefill ×{doc['decode']['batch']}")]
    phases = [(k, lab) for k, lab in phases if k in terms]
    parts = [("compute_ms", "compute"), ("memory_ms", "memory"), ("comm_ms", "communication"), ("overhead_ms", "overhead")]
    fig = new_figure(10.0, 5.2)  # room under the layout panel for its upright labels
    ax1, ax2 = fig.subplots(1, 2)
    x = np.arange(len(phases))
    w = 0.2
    for i, (k, label) in enumerate(parts):
        ax1.bar(x + (i - 1.5) * w, [terms[p][k] for p, _ in phases], width=w, label=label, color=f"C{i}", hatch=("", "//", "..", "xx")[i],
                edgecolor="white")
    ax1.set_yscale("log")
    ax1.set_xticks(x, [lab for _, lab in phases], fontsize=8)
    ax1.set(ylabel="time (ms, log scale)", title="Terms: max(compute, memory) + comm + overhead")
    ax1.grid(alpha=0.3, axis="y", which="both")
    ax1.legend(fontsize=7)
    lay = doc["layouts"]
    labels = [f"TP{r['tensor']}×PP{r['pipeline']} {r.get('attention', 'tensor')}" for r in lay]  # one label per layout searched
    vals = [r["tokens_per_s_per_gpu"] if r["fits"] else 0.0 for r in lay]
    colors = ["C2" if r["chosen"] else ("C0" if r["slo_met"] else "C7") for r in lay]
    ax2.bar(range(len(lay)), vals, color=colors)
    for i, r in enumerate(lay):
        ax2.text(i, vals[i], " chosen" if r["chosen"] else ("" if r["slo_met"] else " SLO missed"), rotation=90, ha="center", va="bottom", fontsize=7)
    ax2.set_xticks(range(len(lay)), labels, rotation=90, ha="center", fontsize=7)  # one label per bar, none on another
    ax2.set(ylabel="output tokens per second per GPU (tokens/s)", title=f"Layouts searched, {doc.get('serving', 'static')} serving (TPOT SLO {doc['tpot_slo_ms']:g} ms)",
            ylim=(0, max(vals) * 1.35 if max(vals) > 0 else 1))
    ax2.grid(alpha=0.3, axis="y")
    fig.suptitle(f"Roofline of {doc.get('scenario', '')} at the median inputs", fontsize=10)
    return FigureSet({"roofline.png": fig})


def figures_for_yield(doc: dict, out) -> list[Path]:
    """Write the `yield` figures into ``out``; returns their paths."""
    return _write(yield_figures(doc), out)


def figures_for_reliability(doc: dict, out) -> list[Path]:
    """Write the `reliability` figures into ``out``; returns their paths."""
    return _write(reliability_figures(doc), out)


def figures_for_roofline(doc: dict, out) -> list[Path]:
    """Write the `roofline` figures into ``out``; returns their paths."""
    return _write(roofline_figures(doc), out)
