"""Tables and figures of `mcengine sweep` and `mcengine sensitivity` documents.

The JSON documents of :mod:`mcengine.sensitivity` stay the source of truth; these
functions only draw them. Figures are PNG files written atomically
(:func:`mcengine.report.save_png` → :func:`mcengine.io.write_atomic`):

* 1-D sweep: ``sweep_<param>.png``, one panel per output: the median and the 90% band
  (5th-95th percentile) against the value; with two scenarios the paired ratio B/A,
  with P(B < A) on a second axis and the 0.5 crossings marked;
* 2-D sweep: ``sweep_<param1>_x_<param2>_<output>.png``, a heat map per output of
  P(B < A) with its 0.5 contour (where the verdict flips) for two scenarios, or of the
  median for one;
* ``tornado_<output>.png``: bars from the baseline to the output at each input's 5th
  and 95th percentile, largest swing on top;
* ``sobol_<output>.png``: first-order and total indices with their confidence bars.
"""

from __future__ import annotations

import re
from pathlib import Path

from .figures import save_png
from .tables import fmt_value


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
                           "and tokens/s are better (there ties count: P(B ≥ A))") if paired else None)
    table.columns[0].no_wrap = True
    for col in table.columns[1:]:
        col.justify, col.no_wrap = "right", True
    for m in doc["outputs"]:
        _section(table, metric(m).short + (" ratio B / A" if paired else f" ({metric(m).unit})" if metric(m).unit else ""))
        for row in doc["rows"]:
            d = row[m]
            cells = [_value_text(row["value"]), fmt_metric(m, d["p50"]), f"{fmt_metric(m, d['p05'])} – {fmt_metric(m, d['p95'])}"]
            if paired:
                cells.append(f"{p_better(m, row['p_b_below_a'][m])[0]:.3f}")
            table.add_row(*cells)
    return table


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
        table.columns[0].no_wrap = True
        for col in table.columns[1:]:
            col.justify, col.no_wrap = "right", True
        for i, a in enumerate(v1):
            row = [_value_text(a)]
            for j in range(len(v2)):
                r = cells[(i, j)]
                text = fmt_metric(m, r[m]["p50"])
                if paired:
                    text += f" [{p_better(m, r['p_b_below_a'][m])[0]:.2f}]"
                row.append(text)
            table.add_row(*row)
        parts.append(table)
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
                  caption=f"median over {doc['trials']:,} trials per bar; baseline (every input at its median) {_num(doc['baseline'])}")
    table.columns[0].no_wrap = True
    for col in table.columns[1:]:
        col.justify = "right"
    for key, bar in doc["bars"].items():
        table.add_row(key, f"{fmt_value(bar['input_low'], 3)} → {fmt_value(bar['input_high'], 3)}", _num(bar["low"]), _num(bar["high"]), _num(bar["swing"]))
    return table


def render_sobol(doc: dict):
    from rich.table import Table

    pct = f"{doc['conf_level'] * 100:g}%"
    table = Table("input", "S1", f"± ({pct})", "ST", f"± ({pct})",
                  title=f"Sobol' indices of {_what(doc, doc['output'])} ({doc['scenario']}): N = {doc['base_samples']:,}, {doc['evaluations']:,} trials")
    table.columns[0].no_wrap = True
    for key, ix in doc["indices"].items():
        table.add_row(key, f"{ix['S1']:.3f}", f"{ix['S1_conf']:.3f}", f"{ix['ST']:.3f}", f"{ix['ST_conf']:.3f}")
    return table


def render(doc: dict):
    """The table of any sweep / sensitivity document."""
    if "rows" in doc:
        return render_sweep(doc)
    return render_tornado(doc) if doc["method"] == "tornado" else render_sobol(doc)


# ----------------------------------------------------------------------------- figures
def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _sweep_1d(doc: dict, out: Path) -> Path:
    import numpy as np

    plt = _plt()
    rows, outputs = doc["rows"], doc["outputs"]
    values = [r["value"] for r in rows]
    numeric = all(_is_number(v) for v in values)
    x = np.array(values, dtype=float) if numeric else np.arange(len(values))
    paired = "ratio_of" in doc
    fig, axes = plt.subplots(len(outputs), 1, figsize=(7, 3.2 * len(outputs)), squeeze=False, sharex=True)
    for ax, m in zip(axes[:, 0], outputs):
        med = [r[m]["p50"] for r in rows]
        ax.fill_between(x, [r[m]["p05"] for r in rows], [r[m]["p95"] for r in rows], alpha=0.25, label="90% band (p05–p95)")
        ax.plot(x, med, "o-", label="median")
        ax.set_ylabel(f"{m}\nratio {doc['ratio_of']}" if paired else m)
        ax.grid(alpha=0.3)
        if paired:
            ax.axhline(1.0, color="k", lw=0.8)
            twin = ax.twinx()
            twin.plot(x, [r["p_b_below_a"][m] for r in rows], "s--", color="C3", label="P(B < A)")
            twin.axhline(0.5, color="C3", lw=0.6, ls=":")
            twin.set(ylim=(-0.02, 1.02), ylabel="P(B < A)")
            for c in doc.get("crossings", {}).get(m, []):
                ax.axvline(c, color="C3", lw=1.0)
            twin.legend(loc="upper right", fontsize=8)
        ax.legend(loc="upper left", fontsize=8)
    last = axes[-1, 0]
    last.set_xlabel(doc["param"])
    if not numeric:
        last.set_xticks(x, [_value_text(v) for v in values])
    elif np.all(x > 0) and x.max() / x.min() > 20:
        last.set_xscale("log")
    fig.suptitle(f"Sweep of {doc['param']} ({doc['scenario']}, {doc['trials']:,} paired trials per value)")
    path = save_png(fig, out / f"sweep_{_slug(doc['param'])}.png")
    plt.close(fig)
    return path


def _sweep_2d(doc: dict, out: Path) -> list[Path]:
    import numpy as np

    plt = _plt()
    p1, p2 = doc["param"]
    v1, v2 = doc["values"]
    paired = "ratio_of" in doc
    paths = []
    for m in doc["outputs"]:
        grid = np.array([r["p_b_below_a"][m] if paired else r[m]["p50"] for r in doc["rows"]], dtype=float).reshape(len(v1), len(v2))
        fig, ax = plt.subplots(figsize=(1.2 * len(v2) + 3.5, 0.8 * len(v1) + 2.5))
        kw = dict(cmap="RdBu", vmin=0.0, vmax=1.0) if paired else dict(cmap="viridis")
        im = ax.imshow(grid, origin="lower", aspect="auto", **kw)
        if paired and len(v1) > 1 and len(v2) > 1 and grid.min() < 0.5 < grid.max():
            ax.contour(np.arange(len(v2)), np.arange(len(v1)), grid, levels=[0.5], colors="k", linewidths=1.5)
        for i in range(len(v1)):
            for j in range(len(v2)):
                ax.text(j, i, f"{grid[i, j]:.2f}" if paired else f"{grid[i, j]:.3g}", ha="center", va="center", fontsize=8,
                        color="k" if not paired or 0.25 < grid[i, j] < 0.75 else "w")
        ax.set_xticks(range(len(v2)), [_value_text(v) for v in v2])
        ax.set_yticks(range(len(v1)), [_value_text(v) for v in v1])
        ax.set(xlabel=p2, ylabel=p1)
        label = f"P({doc['ratio_of'].split(' / ')[0]} cheaper) = P(B < A) of {m}" if paired else f"median {m}"
        fig.colorbar(im, ax=ax, label=label)
        ax.set_title(f"{label}\n{doc['scenario']}, {doc['trials']:,} paired trials per cell" + ("; black line: 0.5 (verdict flips)" if paired else ""), fontsize=9)
        paths.append(save_png(fig, out / f"sweep_{_slug(p1)}_x_{_slug(p2)}_{_slug(m)}.png"))
        plt.close(fig)
    return paths


def _tornado(doc: dict, out: Path) -> Path:
    plt = _plt()
    bars = list(doc["bars"].items())[::-1]  # largest swing at the top
    base = doc["baseline"]
    lo, hi = doc["quantiles"]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(bars) + 1.8))
    ys = range(len(bars))
    ax.barh(ys, [b["low"] - base for _, b in bars], left=base, color="C0", label=f"input at its {lo * 100:g}th percentile")
    ax.barh(ys, [b["high"] - base for _, b in bars], left=base, color="C1", alpha=0.8, label=f"input at its {hi * 100:g}th percentile")
    ax.axvline(base, color="k", lw=0.8)
    ax.set_yticks(list(ys), [f"{k}\n{b['input_low']:.3g} → {b['input_high']:.3g}" for k, b in bars], fontsize=8)
    ax.set_xlabel(f"median {_what(doc, doc['output'])} (others at their medians)")
    ax.set_title(f"Tornado: {doc['scenario']}, {doc['trials']:,} trials per bar, baseline {base:.4g}")
    ax.grid(alpha=0.3, axis="x")
    ax.legend(fontsize=8, loc="lower right")
    path = save_png(fig, out / f"tornado_{_slug(doc['output'])}.png")
    plt.close(fig)
    return path


def _sobol(doc: dict, out: Path) -> Path:
    import numpy as np

    plt = _plt()
    items = list(doc["indices"].items())[::-1]
    y = np.arange(len(items))
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(items) + 1.8))
    ax.barh(y + 0.2, [ix["ST"] for _, ix in items], height=0.4, xerr=[ix["ST_conf"] for _, ix in items], color="C1", label="total ST")
    ax.barh(y - 0.2, [ix["S1"] for _, ix in items], height=0.4, xerr=[ix["S1_conf"] for _, ix in items], color="C0", label="first order S1")
    ax.set_yticks(y, [k for k, _ in items], fontsize=8)
    ax.axvline(0.0, color="k", lw=0.8)
    ax.set_xlabel(f"share of the variance of {_what(doc, doc['output'])} (whiskers: {doc['conf_level'] * 100:g}% bootstrap intervals)")
    ax.set_title(f"Sobol' indices: {doc['scenario']}, N = {doc['base_samples']:,} ({doc['evaluations']:,} trials)")
    ax.grid(alpha=0.3, axis="x")
    ax.legend(fontsize=8, loc="lower right")
    path = save_png(fig, out / f"sobol_{_slug(doc['output'])}.png")
    plt.close(fig)
    return path


def write_figures(doc: dict, out: str | Path) -> list[Path]:
    """The PNG figures of a sweep, tornado or Sobol' document, written into ``out``."""
    out = Path(out)
    if "rows" in doc:
        return _sweep_2d(doc, out) if isinstance(doc["param"], list) else [_sweep_1d(doc, out)]
    return [_tornado(doc, out) if doc["method"] == "tornado" else _sobol(doc, out)]
