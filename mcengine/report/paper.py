"""The paper study's table and figures (`mcengine paper`).

* :func:`claim_rows`: one row per claim: claim, the paper's figure, mcengine under the
  paper's assumptions and under the shipped scenarios (median [5 % - 95 %]), holds when;
* :func:`claim_number_rows`: the same claims in numbers (table.csv), prose in text columns;
* :func:`render_paper`: those rows as a terminal table;
* :func:`claim_figure`: a claim's boundary sweep: mcengine's figure (median, 90 % band)
  against the swept input (its unit from the key metadata) with the paper's figure as a
  line, and P(claim holds) / P(Lite better) below;
* :func:`frontier_figure`: cost per Mtok against the TPOT SLO per design (median, 90 %
  band), and P(Lite cheaper than H100) below;
* :func:`nearest_text` / :func:`nearest_figure`: a claim's nearest world in words, and
  P(claim holds) with the claim's figure along the path from the shipped world to it;
* :func:`write_paper_figures`: every figure as PNG (``claim-N-KEY.png``,
  ``claim-N-KEY-nearest.png``, ``verdict-nearest.png``, ``slo-frontier.png``).
"""

from __future__ import annotations

from pathlib import Path

from .figures import new_figure, save_png, style

FRONTIER_FILE = "slo-frontier.png"
#: The case study's own question's path to its nearest world (``doc["verdict"]``).
VERDICT_FILE = "verdict-nearest.png"
#: The table's column headers (docs/paper.md's table), by row key.
HEADERS = {"claim": "claim", "paper": "paper's figure", "mcengine_paper_assumptions": "mcengine (paper's assumptions)",
           "mcengine_shipped": "mcengine (shipped)", "holds_when": "holds when", "nearest_world": "nearest world"}
#: How a claim's figure reads on an axis, by its unit: (factor, unit words).
UNIT_AXES = {"gain": (100.0, "%"), "ratio": (1.0, "x, dimensionless"), "points": (100.0, "percentage points")}
#: Characters per line of a figure's title and axis labels (wrapped, never cut).
TITLE_CHARS, AXIS_CHARS = 95, 48


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


def _value(v) -> str:
    """A moved input's value: a number to 3 significant figures, a list of parts joined by "+"."""
    if isinstance(v, (list, tuple)):
        return "+".join(str(x) for x in v)
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def nearest_text(nearest: dict | None, unit: str = "gain") -> str:
    """A claim's nearest world in words: distance, P(holds) there, the inputs it moves
    (shipped -> value), largest first; or why there is none."""
    if not nearest:
        return "-"
    worlds = nearest.get("worlds") or []
    if not worlds:
        best = nearest.get("best_seen")
        where = "not found within the search's budget" if nearest.get("budget_spent") else "none within the plausible ranges"
        return where + (f" (best seen: P(holds) {best['p_holds']:.2f}, median figure {fmt_figure(best['figure_median'], unit)})" if best else "")
    w = worlds[0]
    if w["distance"] == 0.0:
        return f"the shipped world ({p_text(w)})"
    moves = ", ".join(f"{c['key']} {_value(c['shipped'])} -> {_value(c['value'])}" for c in w["changed"][:4])
    more = f" (+{len(w['changed']) - 4} smaller)" if len(w["changed"]) > 4 else ""
    return f"d = {w['distance']:.2f}, {p_text(w)}: {moves}{more}"


def p_text(world: dict) -> str:
    """A world's P(holds) as the search judged it, and on its confirming trials with the
    standard error when it was confirmed (:func:`mcengine.paper.nearest.confirmed`); where
    it falls below 0.5 there, the distance at which the same ray reaches the claim on them
    (a point found on those trials, so reached on them, not confirmed)."""
    text = f"P(holds) {world['p_holds']:.2f}"
    c = world.get("confirmed")
    if c is None:
        return text
    text += f"; {c['p_holds']:.3f} ± {c['se']:.3f} on {c['trials']:,} confirming trials"
    if c["holds"]:
        return text
    ray = c.get("on_ray")
    return text + (f", which reach it on the same ray at d = {ray['distance']:.2f} (P {ray['p_holds']:.3f} ± {ray['se']:.3f}"
                   " reached on the confirming trials, not confirmed)"
                   if ray else ", which do not reach it on the same ray")


def claim_rows(doc: dict) -> list[dict]:
    """One row per claim as it reads (the terminal table and docs/paper.md's table); the
    ``nearest_world`` column when the study searched for it."""
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
        if "nearest_world" in c:
            rows[-1]["nearest_world"] = nearest_text(c["nearest_world"], c["unit"])
    return rows


def table_header(rows: list[dict]) -> str:
    """docs/paper.md's header line of the paper table for ``rows`` (:func:`claim_rows`)."""
    return "| " + " | ".join(HEADERS[k] for k in rows[0]) + " |"


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
        if "nearest_world" in c:
            worlds = c["nearest_world"].get("worlds") or [{}]
            confirmed = worlds[0].get("confirmed", {})
            row.update({"nearest_world": nearest_text(c["nearest_world"], c["unit"]), "nearest_world_distance": worlds[0].get("distance", ""),
                        "nearest_world_p_holds": worlds[0].get("p_holds", ""),
                        "nearest_world_p_holds_confirmed": confirmed.get("p_holds", ""), "nearest_world_p_holds_se": confirmed.get("se", "")})
        rows.append(row)
    return rows


def short_nearest(nearest: dict | None) -> str:
    """A claim's nearest world in a few words for the terminal (its moves, and the
    reason when there is none, are in :func:`nearest_text`, in ``--out``'s table.csv)."""
    if not nearest:
        return "-"
    worlds = nearest.get("worlds") or []
    if not worlds:
        return "not found within the search's budget" if nearest.get("budget_spent") else "none within the plausible ranges"
    w = worlds[0]
    return "the shipped world" if w["distance"] == 0.0 else f"distance {w['distance']:.2f}, P(holds) {w['p_holds']:.2f}, {len(w['changed'])} inputs moved"


def render_paper(doc: dict):
    """The paper's claims, compact at 80 columns or in a pipe: per claim the paper's
    figure, mcengine's under the paper's assumptions and under the shipped ones and its
    nearest world in a few words (when each claim holds and the nearest worlds' moves
    are in ``--out``: table.csv, summary.json); the case study's verdict's nearest world;
    the SLO frontier, SLO by SLO: per design the median cost per M output tokens and
    P(cheaper than the baseline)."""
    from rich.console import Group
    from rich.table import Table

    from .tables import _section, fit

    title = f"the paper, claim by claim: {doc['trials']:,} paired trials, seed {doc['seed']}" + (" (quick)" if doc.get("quick") else "")
    rows = claim_rows(doc)
    claims = {f"{c['number']}. {c['key']}": c for c in doc["claims"]}
    table = Table("claim", "value", title=title, caption="when each claim holds, and the nearest worlds' moves: --out DIR (table.csv, summary.json)")
    for r in rows:
        _section(table, f"{r['claim']}: {r['paper']}")
        table.add_row("  under the paper's assumptions", r["mcengine_paper_assumptions"])
        table.add_row("  under the shipped ones", r["mcengine_shipped"])
        if "nearest_world" in claims[r["claim"]]:
            table.add_row("  nearest world", short_nearest(claims[r["claim"]]["nearest_world"]))
    f = doc["frontier"]
    front = Table("TPOT SLO, design", "USD per M tokens", f"P(cheaper than {f['baseline']})",
                  title=f"SLO frontier ({f['model']}): cost per M output tokens, median")
    for col in front.columns[1:]:
        col.justify = "right"
    for k, slo in enumerate(f["slo_ms"]):
        _section(front, f"TPOT SLO {slo:g} ms")
        for name, row in f["designs"].items():
            p = row.get("p_cheaper_than_h100", [None] * len(f["slo_ms"]))[k]
            front.add_row(f"  {name}", f"{row['cost_per_mtok_usd'][k]['median']:.2f}", "-" if p is None else f"{p:.2f}")
    parts = [fit(table, text=(1,))]
    if "verdict" in doc:
        v = doc["verdict"]
        parts.append(f"{v['question']}\n  nearest world: {short_nearest(v['nearest_world'])}")
    return Group(*parts, fit(front))


def _wrap(text: str, width: int) -> str:
    import textwrap

    return textwrap.fill(text, width)


def _scaled(figures: list, factor: float, field: str) -> list[float]:
    """One field of each sweep point's interval times ``factor``; NaN (a gap) where a
    point has no interval (no trial where the figure is defined)."""
    return [factor * f[field] if f is not None else float("nan") for f in figures]


def _band_label(b: dict) -> str:
    """The band's legend entry; says which trials it leaves out when some are."""
    shares = b.get("defined_share")
    if not shares or min(shares) == 1.0:
        return "90 % of trials"
    lo, hi = min(shares), max(shares)
    share = f"{lo:.0%}" if lo == hi else f"{lo:.0%}-{hi:.0%}"
    return f"90 % of the trials where {b['defined_when']} ({share} of trials; others left out)"


def claim_figure(entry: dict):
    """mcengine's figure along the claim's sweep (median, 90 % band), the paper's figure
    as a dashed line; P(claim holds) and P(Lite better) in the lower panel.

    The y axis names what the sweep measures (the boundary's ``figure_label`` and
    ``figure_unit`` when it is not the claim's own metric) with its unit; the x axis the
    swept key with its unit from the key metadata; points where no trial defines the
    figure are gaps; a probability curve hidden under the other says so in the legend."""
    from .figures import overlap_labels
    from .metrics import key_axis

    b = entry["boundary"]
    factor, words = UNIT_AXES[b.get("figure_unit", entry["unit"])]
    fig = new_figure(7.0, 5.8)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    x = b["values"]
    top.fill_between(x, _scaled(b["figure"], factor, "p05"), _scaled(b["figure"], factor, "p95"), color="C0", alpha=0.25, label=_band_label(b))
    top.plot(x, _scaled(b["figure"], factor, "median"), **{**style(0), "markevery": 1}, label="mcengine (shipped), median")
    if entry["paper_figure"] is not None:
        top.axhline(factor * entry["paper_figure"], color="C3", ls="--", lw=1.2, label=f"paper: {entry['paper_figure_text']}" if entry["number"] else entry["paper_figure_text"])
    top.set_ylabel(_wrap(f"{b.get('figure_label', entry['metric'])} ({words})", AXIS_CHARS), fontsize=8)
    top.set_title(_wrap(f"claim {entry['number']}: {entry['claim']}", TITLE_CHARS), fontsize=9)
    top.grid(alpha=0.3)
    top.legend(fontsize=7)
    names = ["P(claim holds)", "P(Lite better)"]
    for i, (y, label) in enumerate(zip((b["p_holds"], b["p_better"]), overlap_labels(names, [b["p_holds"], b["p_better"]], 1.0)), start=1):
        # the second curve smaller, so that where it lies on the first both stay visible
        bottom.plot(x, y, **{**style(i), "markevery": 1, "markersize": 7 - 3 * (i - 1)}, label=label)
    bottom.axhline(0.5, color="0.5", lw=0.8)
    bottom.set_ylim(-0.03, 1.03)
    bottom.set_xlabel(b.get("key_axis") or key_axis(b["key"]), fontsize=9)
    bottom.set_ylabel("probability\n(share of trials)", fontsize=8)
    bottom.grid(alpha=0.3)
    bottom.legend(fontsize=7)
    return fig


def _finite(values: list[float]) -> list[float]:
    """An infinite cost (trials that serve no tokens) as a gap, not a point at infinity."""
    import math

    return [v if math.isfinite(v) else float("nan") for v in values]


#: Factor between neighbouring designs' x positions at one SLO in the frontier figure.
FRONTIER_DODGE = 1.018


def frontier_figure(frontier: dict):
    """Cost per Mtok against the TPOT SLO per design (median, 90 % whisker, designs set
    side by side at each SLO); P(Lite cheaper) below. Designs whose curves coincide are named in both legends; dollar ticks read
    ``$2``, not ``2×10^0``."""
    import numpy as np

    from ..paper.frontier import SLO_KEY
    from .figures import dollar_log_axis, overlap_labels
    from .metrics import key_axis

    fig = new_figure(7.5, 6.6)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(2, 1.2))
    x = frontier["slo_ms"]
    names = list(frontier["designs"])
    medians = [_finite([v["median"] for v in row["cost_per_mtok_usd"]]) for row in frontier["designs"].values()]
    logs = np.log10([v for m in medians for v in m if v == v and v > 0] or [1.0])
    labels = overlap_labels(names, [np.log10(m) for m in medians], float(logs.max() - logs.min()) or 1.0)
    lite = [n for n in names if "p_cheaper_than_h100" in frontier["designs"][n]]
    p_labels = dict(zip(lite, overlap_labels(lite, [frontier["designs"][n]["p_cheaper_than_h100"] for n in lite], 1.0)))
    for i, (name, row) in enumerate(frontier["designs"].items()):
        c = row["cost_per_mtok_usd"]
        # each design's 90 % band is a whisker beside the others' at the same SLO (dodged
        # along the log x axis), where filled bands of seven designs would cover each other
        xd = np.asarray(x, dtype=float) * FRONTIER_DODGE ** (i - (len(names) - 1) / 2)
        top.vlines(xd, _finite([v["p05"] for v in c]), _finite([v["p95"] for v in c]), color=f"C{i}", lw=1.2, alpha=0.6)
        top.plot(xd, medians[i], **{**style(i), "markevery": 1}, label=labels[i])
        if name in p_labels:
            bottom.plot(x, row["p_cheaper_than_h100"], **{**style(i), "markevery": 1}, label=p_labels[name])
    top.set_yscale("log")
    dollar_log_axis(top.yaxis)
    top.set_ylabel("cost per million output tokens\n(USD per Mtok, log scale)", fontsize=8)
    top.set_title(f"SLO frontier, {frontier['model']}: median (markers) and 90 % of trials (whiskers)", fontsize=9)
    top.grid(alpha=0.3, which="both")
    top.legend(fontsize=7, ncols=2)
    bottom.axhline(0.5, color="0.5", lw=0.8)
    bottom.set_ylim(-0.03, 1.03)
    bottom.set_xscale("log")
    bottom.set_xticks(x, [f"{v:g}" for v in x])
    bottom.minorticks_off()
    bottom.set_xlabel(f"{key_axis(SLO_KEY)}, log scale", fontsize=9)
    bottom.set_ylabel(f"P(cheaper than {frontier['baseline']})\n(share of trials)", fontsize=8)
    bottom.grid(alpha=0.3)
    bottom.legend(fontsize=6, ncols=2)
    return fig


def nearest_figure(entry: dict):
    """P(claim holds) along the straight path from the shipped world to the claim's
    nearest one (x: the distance travelled, in shares of the inputs' plausible ranges),
    and the claim's figure there (median, 90 % band of the search's trials) with the
    paper's figure as a dashed line; the inputs the world moves in the title."""
    n = entry["nearest_world"]
    p = n["path"]
    factor, words = UNIT_AXES[entry["unit"]]
    fig = new_figure(7.0, 5.8)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    x = p["distance"]
    top.fill_between(x, [factor * v for v in p["p05"]], [factor * v for v in p["p95"]], color="C0", alpha=0.25,
                     label=f"90 % of {n['budget']['trials_per_point']} trials")
    top.plot(x, [factor * v for v in p["median"]], **{**style(0), "markevery": 1}, label="median")
    if n.get("threshold") is not None:
        top.axhline(factor * n["threshold"], color="C3", ls="--", lw=1.2, label=f"paper: {entry['paper_figure_text']}" if entry["number"] else entry["paper_figure_text"])
    top.set_ylabel(_wrap(f"{n['figure']} ({words})", AXIS_CHARS), fontsize=8)
    name = f"claim {entry['number']} ({entry['key']})" if entry["number"] else entry["key"]
    top.set_title(_wrap(f"{name}: the path to {n.get('path_to', 'the nearest world')}: "
                        f"{nearest_text(n, entry['unit'])}", TITLE_CHARS), fontsize=8)
    top.grid(alpha=0.3)
    top.legend(fontsize=7)
    bottom.plot(x, p["p_holds"], **{**style(1), "markevery": 1}, label="P(claim holds)" if entry["number"] else "P(Lite no dearer)")
    bottom.axhline(0.5, color="0.5", lw=0.8)
    bottom.set_ylim(-0.03, 1.03)
    bottom.set_xlabel(_wrap("distance from the shipped world (root-sum-square of each input's move as a share of its plausible range)",
                            AXIS_CHARS * 2), fontsize=8)
    bottom.set_ylabel("probability\n(share of trials)", fontsize=8)
    bottom.grid(alpha=0.3)
    bottom.legend(fontsize=7)
    return fig


def write_paper_figures(doc: dict, out) -> list[Path]:
    """Every figure of the study into ``out`` (atomic writes)."""
    out = Path(out)
    paths = [save_png(claim_figure(c), out / f"claim-{c['number']}-{c['key']}.png") for c in doc["claims"] if c.get("boundary")]
    paths += [save_png(nearest_figure(c), out / f"claim-{c['number']}-{c['key']}-nearest.png") for c in doc["claims"]
              if c.get("nearest_world", {}).get("path")]
    if doc.get("verdict", {}).get("nearest_world", {}).get("path"):
        paths.append(save_png(nearest_figure(doc["verdict"]), out / VERDICT_FILE))
    paths.append(save_png(frontier_figure(doc["frontier"]), out / FRONTIER_FILE))
    return paths
