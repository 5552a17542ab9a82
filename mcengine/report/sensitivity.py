"""Tables and figures of `mcengine sweep` and `mcengine sensitivity` documents.

The JSON documents of :mod:`mcengine.sensitivity` stay the source of truth; these
functions only draw them. Figures are PNG files written atomically
(:func:`mcengine.report.save_png` → :func:`mcengine.io.write_atomic`):

* 1-D sweep: ``sweep_<param>.png``, one panel per output: the median and the 90% band
  (5th-95th percentile) against the value; with two scenarios the paired ratio B/A,
  with P(B < A) on a second axis and the 0.5 crossings marked;
* 2-D sweep: ``sweep_<param1>_x_<param2>_<output>.png``, a heat map per output of
  P(B better) in that output's direction (lower cost, higher availability and
  tokens/s) with its 0.5 contour (where the verdict flips) and the median ratio B/A in
  each cell for two scenarios, or of the median for one;
* ``tornado_<output>.png``: bars from the baseline to the output at each input's 5th
  and 95th percentile, largest swing on top;
* ``sobol_<output>.png``: first-order and total indices with their confidence bars.
"""

from __future__ import annotations

import re
from pathlib import Path

from .display import FigureSet
from .figures import save_png
from .tables import fit, fmt_value


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _value_text(v) -> str:
    if isinstance(v, list):
        return " × ".join(_value_text(x) for x in v)
    return fmt_value(v) if _is_number(v) else str(v)


def _what(doc: dict, metric: str) -> str:
    return f"{metric} ratio {doc['ratio_of']}" if "ratio_of" in doc else metric


# ----------------------------------------------------------------------------- tables
def _num(v: float) -> str:
    return fmt_value(float(v), 4)


def _sweep_1d_table(doc: dict):
    """One table, a section per output: value rows with median, 90% band and (paired)
    P(B better) in the output's own direction."""
    from rich.table import Table

    from .metrics import fmt_metric, metric, p_better
    from .tables import _section

    paired = "ratio_of" in doc
    cols = [doc["param"], "median", "5% – 95%"] + (["P(B better)"] if paired else [])
    table = Table(*cols, title=f"sweep of {doc['scenario']}: {doc['trials']:,} paired trials per value, seed {doc['seed']}",
                  caption=(f"outputs are the paired ratio {doc['ratio_of']} (B / A); lower cost is better, higher availability "
                           "and tokens/s are better (a tie B = A is not better)") if paired else None)
    for col in table.columns[1:]:
        col.justify = "right"
    for m in doc["outputs"]:
        _section(table, metric(m).short + (" ratio B / A" if paired else f" ({metric(m).unit})" if metric(m).unit else ""))
        for row in doc["rows"]:
            d = row[m]
            cells = [_value_text(row["value"]), fmt_metric(m, d["p50"], paired), f"{fmt_metric(m, d['p05'], paired)} – {fmt_metric(m, d['p95'], paired)}"]
            if paired:
                cells.append(f"{p_better(m, row['p_b_below_a'][m], row.get('p_tie', {}).get(m))[0]:.3f}")
            table.add_row(*cells)
    return fit(table)


def _sweep_2d_tables(doc: dict):
    """A grid per output: rows are the first key's values, columns the second's; each
    cell the median (ratio B / A when paired) and, paired, P(B better)."""
    from rich.console import Group
    from rich.table import Table

    from .metrics import fmt_metric, metric, p_better

    p1, p2 = doc["param"]
    v1, v2 = doc["values"]
    paired = "ratio_of" in doc
    cells = {(i, j): r for (i, j), r in zip(((i, j) for i in range(len(v1)) for j in range(len(v2))), doc["rows"])}
    parts = []
    for m in doc["outputs"]:
        what = f"median ratio {doc['ratio_of']}" if paired else "median"
        extra = f" (in brackets {p_better(m, 0.0)[1]})" if paired else ""
        table = Table(p1, *(_value_text(v) for v in v2), title=f"{metric(m).label}: {what}{extra}",
                      caption=f"rows: {p1}; columns: {p2}")
        for col in table.columns[1:]:
            col.justify = "right"
        for i, a in enumerate(v1):
            row = [_value_text(a)]
            for j in range(len(v2)):
                r = cells[(i, j)]
                text = fmt_metric(m, r[m]["p50"], paired)
                if paired:
                    text += f" [{p_better(m, r['p_b_below_a'][m], r.get('p_tie', {}).get(m))[0]:.2f}]"
                row.append(text)
            table.add_row(*row)
        parts.append(fit(table))
    return Group(*parts)


def render_sweep(doc: dict):
    """A 1-D sweep as one table (a section per output), a 2-D sweep as a grid per output."""
    return _sweep_2d_tables(doc) if isinstance(doc["param"], list) else _sweep_1d_table(doc)


def render_tornado(doc: dict):
    from rich.table import Table

    from .metrics import metric

    lo, hi = doc["quantiles"]
    table = Table("input", f"input p{lo * 100:g} → p{hi * 100:g}", f"at p{lo * 100:g}", f"at p{hi * 100:g}", "swing",
                  title=f"tornado of {metric(doc['output']).label}{' ratio ' + doc['ratio_of'] if 'ratio_of' in doc else ''} ({doc['scenario']})",
                  caption=f"median over {doc['trials']:,} trials per bar; baseline (every input at its median) {_num(doc['baseline'])}"
                  + (f"\n{note}" if (note := tornado_empty_note(doc)) else ""))
    for col in table.columns[1:]:
        col.justify = "right"
    for key, bar in doc["bars"].items():
        table.add_row(key, f"{fmt_value(bar['input_low'], 3)} → {fmt_value(bar['input_high'], 3)}", _num(bar["low"]), _num(bar["high"]), _num(bar["swing"]))
    return fit(table)


def render_sobol(doc: dict):
    from rich.table import Table

    pct = f"{doc['conf_level'] * 100:g}%"
    table = Table("input", "S1", f"± ({pct})", "ST", f"± ({pct})",
                  title=f"Sobol' indices of {_what(doc, doc['output'])} ({doc['scenario']}): N = {doc['base_samples']:,}, {doc['evaluations']:,} trials")
    for key, ix in doc["indices"].items():
        table.add_row(key, f"{ix['S1']:.3f}", f"{ix['S1_conf']:.3f}", f"{ix['ST']:.3f}", f"{ix['ST_conf']:.3f}")
    return fit(table)


def render(doc: dict):
    """The table of any sweep / sensitivity document."""
    if "rows" in doc:
        return render_sweep(doc)
    return render_tornado(doc) if doc["method"] == "tornado" else render_sobol(doc)


# ----------------------------------------------------------------------------- figures
# Figures are matplotlib Figure objects built without pyplot (see .figures.new_figure).


#: Room above the data of a 1-D sweep panel for its legends (share of the data's span).
LEGEND_HEADROOM = 0.3
#: Characters per line of a 1-D sweep panel's y label: it stays within its own panel.
PANEL_AXIS_CHARS = 30


def _axis(doc: dict, m: str) -> str:
    """Axis label of output ``m`` in a 1-D sweep panel, wrapped to stay beside its own
    panel: its unit, or the paired ratio B / A (dimensionless; the suptitle names B and A)."""
    import textwrap

    from .metrics import metric

    if "ratio_of" in doc:
        return f"{metric(m).short} ratio B / A\n(dimensionless; 1 = same)"
    return textwrap.fill(metric(m).axis(), PANEL_AXIS_CHARS)


def _param_axis(param: str) -> str:
    """A swept key as an axis label with the unit its suffix names."""
    from .metrics import key_axis

    return key_axis(param)


def _directions(doc: dict) -> str:
    b, a = doc["ratio_of"].split(" / ")
    return f"B = {b}, A = {a}"


def sweep_1d_figure(doc: dict):
    import numpy as np

    from .figures import new_figure
    from .metrics import metric, p_better

    rows, outputs = doc["rows"], doc["outputs"]
    values = [r["value"] for r in rows]
    numeric = all(_is_number(v) for v in values)
    x = np.array(values, dtype=float) if numeric else np.arange(len(values))
    paired = "ratio_of" in doc
    fig = new_figure(7.5, 2.9 * len(outputs) + 0.8)
    axes = fig.subplots(len(outputs), 1, squeeze=False, sharex=True)
    for ax, m in zip(axes[:, 0], outputs):
        med = [r[m]["p50"] for r in rows]
        ax.fill_between(x, [r[m]["p05"] for r in rows], [r[m]["p95"] for r in rows], alpha=0.25, label="90% band (p05–p95)")
        ax.plot(x, med, "o-", label="median")
        ax.set_ylabel(_axis(doc, m), fontsize=8)
        ax.ticklabel_format(axis="y", useOffset=False)  # availabilities: 0.99994, not 1e-5+9.999e-1
        ax.grid(alpha=0.3)
        if paired:
            ax.axhline(1.0, color="k", lw=0.8)
            twin = ax.twinx()
            p, words = zip(*(p_better(m, r["p_b_below_a"][m], r.get("p_tie", {}).get(m)) for r in rows))
            twin.plot(x, p, "s--", color="C3", label=words[0])
            twin.axhline(0.5, color="C3", lw=0.6, ls=":")
            twin.set_ylim(-0.02, 1.02 + LEGEND_HEADROOM)
            twin.set_yticks([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
            twin.set_ylabel("P(B better)\n(share of paired trials)", color="C3", fontsize=8)
            for c in doc.get("crossings", {}).get(m, []):
                ax.axvline(c, color="C3", lw=1.0)
            twin.legend(loc="upper right", fontsize=7)
            better = metric(m).better
            ax.set_title(f"{metric(m).short} ({better} is better)" if better else metric(m).short, fontsize=9)
        lo, hi = ax.get_ylim()
        ax.set_ylim(lo, hi + LEGEND_HEADROOM * (hi - lo))  # the legends sit above the data, not on it
        ax.legend(loc="upper left", fontsize=7)
    last = axes[-1, 0]
    last.set_xlabel(_param_axis(doc["param"]))
    if not numeric:
        last.set_xticks(x, [_value_text(v) for v in values])
    elif np.all(x > 0) and x.max() / x.min() > 20:
        last.set_xscale("log")
    fig.suptitle(f"Sweep of {doc['param']}: {doc['scenario']}" + (f" ({_directions(doc)})" if paired else "")
                 + f", {doc['trials']:,} paired trials per value", fontsize=10)
    return fig


def ratio_norm(ratios):
    """A colour scale for paired ratios B / A: symmetric in log around 1 (a ratio r and
    1 / r are equally far from "no difference"), spanning the largest departure."""
    import numpy as np
    from matplotlib.colors import LogNorm

    finite = np.asarray(ratios, dtype=float)
    finite = finite[np.isfinite(finite) & (finite > 0)]
    span = float(np.abs(np.log(finite)).max()) if finite.size else 0.0
    span = max(span, 1e-6)
    return LogNorm(vmin=float(np.exp(-span)), vmax=float(np.exp(span)))


def sweep_2d_figures(doc: dict) -> dict:
    """{output: Figure}: heat map per output of the median paired ratio B / A coloured in
    that output's direction (blue: B better, red: B worse), with P(B better) in each cell
    (paired), or of the median (one scenario)."""
    import textwrap

    import numpy as np

    from .figures import new_figure
    from .metrics import metric, p_better

    p1, p2 = doc["param"]
    v1, v2 = doc["values"]
    paired = "ratio_of" in doc
    figs = {}
    for m in doc["outputs"]:
        mm = metric(m)
        median = np.array([r[m]["p50"] for r in doc["rows"]], dtype=float).reshape(len(v1), len(v2))
        fig = new_figure(1.3 * len(v2) + 4.0, 0.8 * len(v1) + 2.8)
        ax = fig.add_subplot()
        if paired:
            cells = [p_better(m, r["p_b_below_a"][m], r.get("p_tie", {}).get(m)) for r in doc["rows"]]
            p = np.array([c[0] for c in cells], dtype=float).reshape(len(v1), len(v2))
            words = cells[0][1]
            # RdBu runs red (low) to blue (high): reversed where a lower value is better, so blue is B better
            im = ax.imshow(median, origin="lower", aspect="auto", cmap="RdBu_r" if mm.better == "lower" else "RdBu",
                           norm=ratio_norm(median))
            grid_2d = len(v1) > 1 and len(v2) > 1
            if grid_2d and np.nanmin(median) < 1.0 < np.nanmax(median):
                ax.contour(np.arange(len(v2)), np.arange(len(v1)), median, levels=[1.0], colors="k", linewidths=1.5)
            if grid_2d and np.nanmin(p) < 0.5 < np.nanmax(p):
                ax.contour(np.arange(len(v2)), np.arange(len(v1)), p, levels=[0.5], colors="k", linewidths=1.0, linestyles="dashed")
            light = np.abs(np.log(np.where(median > 0, median, 1.0))) < 0.5 * np.log(im.norm.vmax)
        else:
            im = ax.imshow(median, origin="lower", aspect="auto", cmap="viridis")
        for i in range(len(v1)):
            for j in range(len(v2)):
                # paired: the median ratio B / A, then P(B better), which sits at 0 or 1 where the ratio still moves
                text = (f"ratio {fmt_value(float(median[i, j]), 3)}\nP {p[i, j]:.2f}" if paired
                        else fmt_value(float(median[i, j])))
                ax.text(j, i, text, ha="center", va="center", fontsize=8, color="k" if not paired or light[i, j] else "w")
        ax.set_xticks(range(len(v2)), [_value_text(v) for v in v2])
        ax.set_yticks(range(len(v1)), [_value_text(v) for v in v1])
        ax.set(xlabel=_param_axis(p2), ylabel=_param_axis(p1))
        if paired:
            bar = fig.colorbar(im, ax=ax, label="median ratio B / A\nblue: B better, red: B worse")
            # plain ticks at the ends and at 1 (no difference), never 10^0 on the log scale
            ends = (im.norm.vmin, 1.0, im.norm.vmax)
            bar.set_ticks(ends, labels=[fmt_value(float(v), 3) for v in ends])
            bar.ax.minorticks_off()
            title = (f"each cell: the median ratio B / A, then {words}\n{_directions(doc)}; {doc['trials']:,} paired trials per cell\n"
                     f"{mm.better} {mm.short} is better; solid line: ratio 1, dashed: P = 0.5")
        else:
            fig.colorbar(im, ax=ax, label=textwrap.fill(f"median {mm.axis()}", PANEL_AXIS_CHARS))
            title = f"{textwrap.fill(f'median {mm.axis()}', 70)}\n{doc['scenario']}, {doc['trials']:,} trials per cell"
        ax.set_title(title, fontsize=9)
        figs[m] = fig
    return figs


def tornado_empty_note(doc: dict) -> str | None:
    """Why a tornado has nothing to draw (every bar has zero swing, or there is no bar),
    or None when it has bars. The figure shows it in place of the chart; the command says
    it on stderr."""
    from .metrics import metric

    if any(b["swing"] != 0 for b in doc["bars"].values()):
        return None
    what = (f"{metric(doc['output']).short} ratio {doc['ratio_of']}" if "ratio_of" in doc else metric(doc["output"]).short)
    if not doc["bars"]:
        return f"the tornado of {what} is empty: {doc['scenario']} has no uncertain input (dist table) to vary"
    return (f"the tornado of {what} is empty: none of the {len(doc['bars'])} uncertain inputs (dist tables) moves its median, "
            f"each alone at its p{doc['quantiles'][0] * 100:g} and p{doc['quantiles'][1] * 100:g} gives the baseline "
            f"{_num(doc['baseline'])}; what varies it is not among them (per-event laws such as failures and repairs, "
            "or fixed keys): give such a key a dist table to rank it")


def _tornado_note_figure(doc: dict, note: str):
    """A tornado with no bar to draw: the reason, and the inputs that were varied."""
    import textwrap

    from .figures import new_figure

    lo, hi = doc["quantiles"]
    varied = [f"{k}: {fmt_value(b['input_low'], 3)} → {fmt_value(b['input_high'], 3)}" for k, b in doc["bars"].items()]
    fig = new_figure(8, 0.16 * len(varied) + 1.4)
    ax = fig.add_subplot()
    ax.set_axis_off()
    text = textwrap.fill(note, 95)
    if varied:
        text += f"\n\ninputs varied (each at its {lo * 100:g}th → {hi * 100:g}th percentile):\n" + "\n".join(varied)
    ax.text(0.0, 1.0, text, ha="left", va="top", fontsize=8, transform=ax.transAxes)
    ax.set_title(f"Tornado: {doc['scenario']}, {doc['trials']:,} trials per bar: nothing to draw", fontsize=10)
    return fig


def tornado_figure(doc: dict):
    """Bars from the baseline to the output at each input's low and high percentile,
    largest swing on top; for a paired ratio B/A a dashed line at 1 (no difference, where
    the verdict flips), always in range; when no input moves the output, the reason
    instead of an empty chart."""
    from .figures import new_figure
    from .metrics import metric

    note = tornado_empty_note(doc)
    if note is not None:
        return _tornado_note_figure(doc, note)
    bars = list(doc["bars"].items())[::-1]  # largest swing at the top
    base = doc["baseline"]
    lo, hi = doc["quantiles"]
    fig = new_figure(8, 0.45 * len(bars) + 1.9)
    ax = fig.add_subplot()
    ys = range(len(bars))
    ax.barh(ys, [b["low"] - base for _, b in bars], left=base, color="C0", label=f"input at its {lo * 100:g}th percentile")
    ax.barh(ys, [b["high"] - base for _, b in bars], left=base, color="C1", alpha=0.8, hatch="//", label=f"input at its {hi * 100:g}th percentile")
    ax.axvline(base, color="k", lw=0.8)
    if "ratio_of" in doc:  # a paired ratio: where B and A are level, the verdict flips; always in range
        ax.axvline(1.0, color="C3", ls="--", lw=1.2, label="no difference (B / A = 1: the verdict flips)")
        lo_x, hi_x = ax.get_xlim()
        pad = 0.05 * (max(hi_x, 1.0) - min(lo_x, 1.0))
        ax.set_xlim(min(lo_x, 1.0 - pad), max(hi_x, 1.0 + pad))
    ax.ticklabel_format(axis="x", useOffset=False)  # values read as printed: an availability's ppm, not "1e-6+9.998e-1"
    ax.locator_params(axis="x", nbins=5)  # room for such long tick values side by side
    ax.set_yticks(list(ys), [f"{k}\n{fmt_value(b['input_low'], 3)} → {fmt_value(b['input_high'], 3)}" for k, b in bars], fontsize=8)
    what = (f"median {metric(doc['output']).short}: ratio {doc['ratio_of']} (dimensionless)" if "ratio_of" in doc
            else f"median {metric(doc['output']).axis()}")
    ax.set_xlabel(f"{what}; other inputs at their medians")
    better = metric(doc["output"]).better
    ax.set_title(f"Tornado: {doc['scenario']}, {doc['trials']:,} trials per bar, baseline {fmt_value(base)}"
                 + (f" ({better} is better)" if better else ""), fontsize=10)
    ax.grid(alpha=0.3, axis="x")
    ax.legend(fontsize=8, loc="lower right")
    return fig


def sobol_figure(doc: dict):
    import numpy as np

    from .figures import new_figure
    from .metrics import metric

    items = list(doc["indices"].items())[::-1]
    y = np.arange(len(items))
    fig = new_figure(8, 0.45 * len(items) + 1.9)
    ax = fig.add_subplot()
    ax.barh(y + 0.2, [ix["ST"] for _, ix in items], height=0.4, xerr=[ix["ST_conf"] for _, ix in items], color="C1", hatch="//", label="total ST")
    ax.barh(y - 0.2, [ix["S1"] for _, ix in items], height=0.4, xerr=[ix["S1_conf"] for _, ix in items], color="C0", label="first order S1")
    ax.set_yticks(y, [k for k, _ in items], fontsize=8)
    ax.axvline(0.0, color="k", lw=0.8)
    what = f"{metric(doc['output']).short}" + (f" ratio {doc['ratio_of']}" if "ratio_of" in doc else "")
    ax.set_xlabel(f"share of the variance of {what} (dimensionless, 0–1)\n"
                  f"whiskers: {doc['conf_level'] * 100:g}% intervals over {doc['scramblings']} independent scramblings")
    ax.set_title(f"Sobol' indices: {doc['scenario']}, N = {doc['base_samples']:,} ({doc['evaluations']:,} trials)", fontsize=10)
    ax.grid(alpha=0.3, axis="x")
    ax.legend(fontsize=8, loc="lower right")
    return fig


def sensitivity_figures(doc: dict) -> FigureSet:
    """{file name: Figure} of a sweep, tornado or Sobol' document."""
    if "rows" in doc:
        if isinstance(doc["param"], list):
            p1, p2 = doc["param"]
            return FigureSet({f"sweep_{_slug(p1)}_x_{_slug(p2)}_{_slug(m)}.png": f for m, f in sweep_2d_figures(doc).items()})
        return FigureSet({f"sweep_{_slug(doc['param'])}.png": sweep_1d_figure(doc)})
    if doc["method"] == "tornado":
        return FigureSet({f"tornado_{_slug(doc['output'])}.png": tornado_figure(doc)})
    return FigureSet({f"sobol_{_slug(doc['output'])}.png": sobol_figure(doc)})


def write_figures(doc: dict, out: str | Path) -> list[Path]:
    """The PNG figures of a sweep, tornado or Sobol' document, written into ``out``."""
    out = Path(out)
    return [save_png(fig, out / name) for name, fig in sensitivity_figures(doc).items()]
