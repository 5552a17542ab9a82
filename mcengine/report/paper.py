"""The paper study's table and figures (`mcengine paper`).

* :func:`claim_rows`: one row per claim: claim, the paper's figure, mcengine under the
  paper's assumptions and under the shipped scenarios (median [5 % - 95 %]), holds when;
* :func:`claim_number_rows`: the same claims in numbers (table.csv), prose in text columns;
* :func:`render_paper`: those rows as a terminal table;
* :func:`claim_figure`: a claim's boundary sweep: mcengine's figure (median, 90 % band)
  against the swept input with the paper's figure as a line, and P(claim holds) /
  P(Lite better) below;
* :func:`frontier_figure`: cost per Mtok against the TPOT SLO per design (median, 90 %
  band), and P(Lite cheaper than H100) below;
* :func:`write_paper_figures`: every figure as PNG (``claim-N-KEY.png``, ``slo-frontier.png``).
"""

from __future__ import annotations

from pathlib import Path

from .figures import new_figure, save_png, style

FRONTIER_FILE = "slo-frontier.png"
#: The y axis of a claim's figure, by the claim's unit.
AXIS_LABELS = {"gain": "Lite's gain (%)", "ratio": "ratio (x)", "points": "difference (percentage points)"}


def fmt_figure(value: float | None, unit: str) -> str:
    """A claim's number as it reads: a gain in %, a ratio in x, a difference in points."""
    if value is None:
        return "-"
    if unit == "ratio":
        return f"{value:.2f}x"
    if unit == "points":
        return f"{100 * value:+.1f} pts"
    return f"{100 * value:+.0f} %"


def fmt_interval(figure: dict, unit: str) -> str:
    """``median [p05 - p95]``, or the median alone when the three coincide (a closed form)."""
    mid, lo, hi = figure["median"], figure["p05"], figure["p95"]
    if lo == hi == mid:
        return fmt_figure(mid, unit)
    return f"{fmt_figure(mid, unit)} [{fmt_figure(lo, unit)} - {fmt_figure(hi, unit)}]"


def claim_rows(doc: dict) -> list[dict]:
    """One row per claim as it reads (the terminal table and README's table)."""
    rows = []
    for c in doc["claims"]:
        paper = c["paper_figure_text"] + ("" if c["paper_figure_confirmed"] else " (secondary)")
        rows.append({
            "claim": f"{c['number']}. {c['key']}",
            "paper": paper,
            "mcengine_paper_assumptions": c["paper_assumptions"].get("text") or fmt_interval(c["paper_assumptions"]["figure"], c["unit"]),
            "mcengine_shipped": c["shipped"].get("text") or fmt_interval(c["shipped"]["figure"], c["unit"]),
            "holds_when": c["holds_when"],
        })
    return rows


def claim_number_rows(doc: dict) -> list[dict]:
    """One row per claim in numbers (table.csv of ``--out``): the figures as plain
    fractions or ratios (``unit``: ``gain`` a fraction, ``ratio`` times, ``points`` a
    difference of shares), empty where the paper gives none; the prose of
    :func:`claim_rows` in the text columns ``paper_text``, ``paper_assumptions_text``,
    ``shipped_text`` and ``holds_when``."""
    rows = []
    for c in doc["claims"]:
        row = {"claim": f"{c['number']}. {c['key']}", "unit": c["unit"], "paper": c["paper_figure"],
               "paper_confirmed": c["paper_figure_confirmed"]}
        for side in ("paper_assumptions", "shipped"):
            figure = c[side]["figure"]
            row.update({f"{side}_{q}": figure[q] for q in ("median", "p05", "p95")})
        row.update({"paper_text": c["paper_figure_text"], "paper_assumptions_text": c["paper_assumptions"].get("text", ""),
                    "shipped_text": c["shipped"].get("text", ""), "holds_when": c["holds_when"]})
        rows.append(row)
    return rows


def render_paper(doc: dict):
    """The claim table, and the SLO frontier as P(Lite cheaper) per SLO."""
    from rich.console import Group
    from rich.table import Table

    title = f"the paper, claim by claim: {doc['trials']:,} paired trials, seed {doc['seed']}" + (" (quick)" if doc.get("quick") else "")
    table = Table("claim", "paper's figure", "mcengine (paper's assumptions)", "mcengine (shipped)", "holds when", title=title)
    for r in claim_rows(doc):
        table.add_row(r["claim"], r["paper"], r["mcengine_paper_assumptions"], r["mcengine_shipped"], r["holds_when"])
    f = doc["frontier"]
    front = Table("design", *[f"{v:g} ms" for v in f["slo_ms"]], title=f"SLO frontier ({f['model']}): cost per M output tokens, median; P(cheaper than {f['baseline']})")
    for name, row in f["designs"].items():
        cells = [f"{c['median']:.2f}" + (f" P={p:.2f}" if p is not None else "") for c, p in
                 zip(row["cost_per_mtok_usd"], row.get("p_cheaper_than_h100", [None] * len(f["slo_ms"])))]
        front.add_row(name, *cells)
    return Group(table, front)


def claim_figure(entry: dict):
    """mcengine's figure along the claim's sweep (median, 90 % band), the paper's figure
    as a dashed line; P(claim holds) and P(Lite better) in the lower panel."""
    b = entry["boundary"]
    fig = new_figure(7.0, 5.0)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    x = b["values"]
    scale = 100.0 if entry["unit"] in ("gain", "points") else 1.0
    mid = [scale * f["median"] for f in b["figure"]]
    top.fill_between(x, [scale * f["p05"] for f in b["figure"]], [scale * f["p95"] for f in b["figure"]], color="C0", alpha=0.25, label="90 % of trials")
    top.plot(x, mid, **{**style(0), "markevery": 1}, label="mcengine (shipped), median")
    if entry["paper_figure"] is not None:
        top.axhline(scale * entry["paper_figure"], color="C3", ls="--", lw=1.2, label=f"paper: {entry['paper_figure_text']}")
    top.set_ylabel(AXIS_LABELS[entry["unit"]])
    top.set_title(f"claim {entry['number']}: {entry['claim'][:110]}\n{entry['metric'][:100]}", fontsize=8)
    top.legend(fontsize=7)
    bottom.plot(x, b["p_holds"], **{**style(1), "markevery": 1}, label="P(claim holds)")
    bottom.plot(x, b["p_better"], **{**style(2), "markevery": 1}, label="P(Lite better)")
    bottom.axhline(0.5, color="0.5", lw=0.8)
    bottom.set_ylim(-0.03, 1.03)
    bottom.set_xlabel(b["key"])
    bottom.set_ylabel("probability")
    bottom.legend(fontsize=7)
    return fig


def frontier_figure(frontier: dict):
    """Cost per Mtok against the TPOT SLO per design (median, 90 % band); P(Lite cheaper) below."""
    fig = new_figure(7.0, 5.2)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    x = frontier["slo_ms"]
    for i, (name, row) in enumerate(frontier["designs"].items()):
        c = row["cost_per_mtok_usd"]
        top.fill_between(x, [v["p05"] for v in c], [v["p95"] for v in c], color=f"C{i}", alpha=0.15)
        top.plot(x, [v["median"] for v in c], **{**style(i), "markevery": 1}, label=name)
        if "p_cheaper_than_h100" in row:
            bottom.plot(x, row["p_cheaper_than_h100"], **{**style(i), "markevery": 1}, label=name)
    top.set_yscale("log")
    top.set_ylabel("USD per M output tokens")
    top.set_title(f"SLO frontier, {frontier['model']}: median and 90 % of trials", fontsize=9)
    top.legend(fontsize=7)
    bottom.axhline(0.5, color="0.5", lw=0.8)
    bottom.set_ylim(-0.03, 1.03)
    bottom.set_xscale("log")
    bottom.set_xticks(x, [f"{v:g}" for v in x])
    bottom.minorticks_off()
    bottom.set_xlabel("TPOT SLO (ms)")
    bottom.set_ylabel(f"P(cheaper than {frontier['baseline']})", fontsize=8)
    return fig


def write_paper_figures(doc: dict, out) -> list[Path]:
    """Every figure of the study into ``out`` (atomic writes)."""
    out = Path(out)
    paths = [save_png(claim_figure(c), out / f"claim-{c['number']}-{c['key']}.png") for c in doc["claims"] if c.get("boundary")]
    paths.append(save_png(frontier_figure(doc["frontier"]), out / FRONTIER_FILE))
    return paths
