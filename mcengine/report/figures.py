"""Figures of `run` / `compare` (PNG files in ``--out``; Figure objects for notebooks).

Every figure is a :class:`matplotlib.figure.Figure` built directly, never through
``pyplot`` and never by ``matplotlib.use``: the library leaves the global backend (and a
notebook's inline plots) alone, and nothing is kept in pyplot's figure registry.

* :func:`cost_cdf_figure`: CDF of cost per million output tokens per scenario;
* :func:`availability_figure`: distribution of downtime (1 − availability), minutes per year;
* :func:`cost_breakdown_figure`: the cost per million output tokens by part (die, HBM,
  packaging, test, optics, hosts, network, fabric at cost, the markup, energy, repairs),
  stacked per design;
* :func:`paired_ratio_figure`: paired ratio of cost per token to the baseline.

Curves that coincide (two designs with the same values in every trial) are drawn with
distinct line styles and markers, and the legend says which ones coincide.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from ..units import HOURS_PER_YEAR
from .display import FigureSet

#: Line styles and markers cycled per scenario, so that overlapping curves stay visible.
STYLES = (("-", "o"), ("--", "s"), (":", "^"), ("-.", "D"), ((0, (5, 1, 1, 1)), "v"), ((0, (1, 1)), "x"))


def new_figure(width: float = 7.0, height: float = 4.2):
    """A Figure with no pyplot state (safe in a library and in a notebook)."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def style(i: int, n: int | None = None) -> dict:
    """Plot keywords of the ``i``-th curve: colour, line style, marker (sparse)."""
    ls, marker = STYLES[i % len(STYLES)]
    # markers start at a different place per curve, so a curve drawn over another still
    # shows its own markers between those of the one beneath
    return {"color": f"C{i}", "ls": ls, "marker": marker, "markevery": (0.025 * (i % 4), 0.1), "markersize": 5, "lw": 1.6}


#: A legend beside the panel: CDFs of several designs span the whole panel, and a legend
#: inside would sit on one of them.
OUTSIDE_LEGEND = {"fontsize": 8, "loc": "upper left", "bbox_to_anchor": (1.0, 1.0)}


def _sketch_points(summary) -> tuple:
    """(values, cumulative probability) of a streaming Summary's quantile sketch."""
    return summary.cdf_points()


def ks_distance(a: tuple, b: tuple) -> float:
    """Largest vertical gap between two step CDFs given as (values, cumulative share); an
    empty CDF (a scenario with no finite value: a cluster that serves no tokens) is 0 from
    another empty one and 1 from any other."""
    import numpy as np

    if not len(a[0]) or not len(b[0]):
        return 0.0 if len(a[0]) == len(b[0]) else 1.0
    grid = np.union1d(a[0], b[0])
    fa = np.interp(grid, a[0], a[1], left=0.0, right=1.0)
    fb = np.interp(grid, b[0], b[1], left=0.0, right=1.0)
    return float(np.abs(fa - fb).max())


#: Two CDFs closer than this (largest vertical gap) are drawn as one line to the eye.
COINCIDE_KS = 0.01


def coincident_labels(names: list[str], curves: list[tuple]) -> list[str]:
    """Legend labels; a curve within :data:`COINCIDE_KS` of an earlier one says so."""
    labels = []
    for i, (n, c) in enumerate(zip(names, curves)):
        same = [names[j] for j in range(i) if ks_distance(curves[j], c) < COINCIDE_KS]
        labels.append(f"{n} (overlaps {same[0]})" if same else n)
    return labels


#: Two series on one x grid closer than this share of the panel's span are one line to the eye.
COINCIDE_SHARE = 0.01


def _same_series(a, b, tol: float) -> bool:
    """Whether two series on one x grid are drawn as one line: missing (NaN) at the same
    points and within ``tol`` everywhere else."""
    import numpy as np

    a, b = np.asarray(a, float), np.asarray(b, float)
    gaps = np.isnan(a), np.isnan(b)
    return bool(np.array_equal(*gaps) and np.all(np.abs(a[~gaps[0]] - b[~gaps[0]]) <= tol))


def overlap_labels(names: list[str], series: list, span: float) -> list[str]:
    """Legend labels of series drawn on one x grid; a series within :data:`COINCIDE_SHARE`
    of ``span`` (the panel's range) of an earlier one everywhere says which it hides."""
    labels = []
    for i, (n, y) in enumerate(zip(names, series)):
        same = [names[j] for j in range(i) if _same_series(series[j], y, COINCIDE_SHARE * span)]
        labels.append(f"{n} (overlaps {same[0]})" if same else n)
    return labels


def dollars(value: float, _pos=None) -> str:
    """A tick in dollars as written: ``$2``, ``$0.60``, ``$1.50``, ``$1,000``, ``$0.005``."""
    if value >= 10 or value == round(value):
        return f"${value:,.0f}"
    return f"${value:.2f}" if value >= 0.01 else f"${value:.2g}"


def dollar_log_axis(axis) -> None:
    """Plain dollar ticks on a log axis (never ``2×10^0``): 1, 2, 5 per decade, finer
    steps when the data spans less than a decade; call after the data is drawn."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    lo, hi = axis.get_view_interval()
    subs = (1.0, 2.0, 5.0) if hi > 10 * lo else (1.0, 1.5, 2.0, 3.0, 5.0, 7.0)
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(dollars))
    axis.set_minor_formatter(NullFormatter())


#: File formats a figure may be written in (``--format``), and the default resolution.
FORMATS = ("png", "svg", "pdf")
DEFAULT_DPI = 120
#: (format, dpi) of the figures written in this context (:func:`figure_format`).
_FORMAT: ContextVar[tuple[str, int]] = ContextVar("figure_format", default=("png", DEFAULT_DPI))


@contextmanager
def figure_format(fmt: str = "png", dpi: int = DEFAULT_DPI):
    """Within it, :func:`save_png` writes ``fmt`` (png, svg or pdf; the file's suffix
    follows) at ``dpi`` dots per inch (the raster resolution of a PNG)."""
    from ..errors import InputError, Problem

    if fmt not in FORMATS:
        raise InputError(Problem("--format", fmt, "allowed: " + ", ".join(FORMATS)))
    if isinstance(dpi, bool) or not isinstance(dpi, int) or not 10 <= dpi <= 2400:
        raise InputError(Problem("--dpi", dpi, "allowed: an integer in [10, 2400]"))
    token = _FORMAT.set((fmt, dpi))
    try:
        yield
    finally:
        _FORMAT.reset(token)


def save_png(fig, path):
    """Write ``fig`` to ``path``, in the format of :func:`figure_format` (PNG at 120 dpi
    by default; another format changes the suffix); returns the path written."""
    import io

    from ..io import write_atomic

    fmt, dpi = _FORMAT.get()
    path = Path(path).with_suffix(f".{fmt}")
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=dpi, bbox_inches="tight")
    write_atomic(path, buf.getvalue())
    return path


def _names(results) -> list[str]:
    return list(results.doc["scenarios"])


def cost_cdf_figure(results):
    """CDF of cost per million output tokens, one curve per scenario."""
    names = _names(results)
    curves = [_sketch_points(results.summaries.metrics[(n, "cost_per_mtok_usd")]) for n in names]
    fig = new_figure(9.0)  # room for the legend beside the panel
    ax = fig.add_subplot()
    for i, ((x, p), label) in enumerate(zip(curves, coincident_labels(names, curves))):
        ax.step(x, p, where="post", label=label, **style(i))
    ax.set(xlabel="cost per million output tokens (USD per Mtok)", ylabel="share of trials with cost ≤ x (0–1)",
           title="Cost per token over uncertain worlds (left is cheaper)", ylim=(0, 1.02))
    ax.grid(alpha=0.3)
    ax.legend(**OUTSIDE_LEGEND)
    return fig


#: Minutes in a year (365.25 days, as everywhere): unavailability × this = downtime.
MINUTES_PER_YEAR = HOURS_PER_YEAR * 60


def availability_figure(results):
    """Complementary CDF of downtime (unavailability) per scenario, log scale (left is better).

    The axis is the unavailability 1 − availability as instance downtime in minutes per
    year, with ticks at 1, 2, 5 × 10^k: readable where availabilities differ in the fifth
    decimal, and without the colliding minor labels of a narrow log decade.
    """
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    names = _names(results)
    curves = []
    for n in names:
        x, p = _sketch_points(results.summaries.metrics[(n, "availability")])
        u = (1.0 - x)[::-1] * MINUTES_PER_YEAR  # increasing downtime
        curves.append((u, 1.0 - p[::-1]))  # share of trials with downtime < u, as a CDF
    fig = new_figure(9.0)  # room for the legend beside the panel
    ax = fig.add_subplot()
    for i, ((u, q), label) in enumerate(zip(curves, coincident_labels(names, curves))):
        ax.step(u, q, where="post", label=label, **style(i))
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:.2g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set(xlabel="downtime per instance (minutes per year) = (1 − availability) × 525,960, log scale",
           ylabel="share of trials with downtime ≤ x (0–1)", title="Instance availability over cluster lifetimes (left is better)",
           ylim=(0, 1.02))
    ax.grid(alpha=0.3, which="both")
    ax.legend(**OUTSIDE_LEGEND)
    return fig


#: Labels of the cost parts in the breakdown (``"cost_breakdown_per_mtok_usd"``), in stack order.
COST_PARTS = (("die", "die"), ("hbm", "HBM"), ("packaging", "packaging"), ("test", "test"), ("optics", "optics"),
              ("gpu_price", "GPU (given price)"), ("hosts", "hosts"), ("network", "scale-out network"),
              ("fabric", "scale-up fabric"), ("markup", "markup (vendor's margin)"), ("energy", "energy"), ("repairs", "repairs"),
              ("switch_tiers", "switch tiers"), ("facility", "facility (power, racks)"), ("cooling", "cooling"), ("floor", "floor"),
              ("capital", "cost of capital"))
_HATCHES = ("", "//", "..", "xx", "\\\\", "--", "++", "oo", "||", "**", "OO", "/.", "\\.", "x.", "-.", "+.", "o.")


def cost_breakdown_per_mtok(doc: dict) -> dict[str, dict[str, float]]:
    """Per scenario, the mean of each part of the cost per million output tokens (USD per
    Mtok), from the document's ``"cost_breakdown_per_mtok_usd"``: each part is its
    dollars ÷ the tokens that trial delivered, so the parts add up to the mean cost per
    Mtok and a design that delivers fewer tokens pays more per token for the same dollars.
    Package parts, hosts and fabric are at cost and the markup on them (where
    ``econ.markup_applies_to`` and ``econ.markup_scope`` put it) is its own part; a
    part the scenario does not have (the fabric's tiers, the hall, the cost of capital
    when off) is 0."""
    return {n: {label: s["cost_breakdown_per_mtok_usd"].get(part, {"mean": 0.0})["mean"] for part, label in COST_PARTS}
            for n, s in doc["scenarios"].items()}


def cost_breakdown_figure(doc: dict):
    """Stacked bars per design: die, HBM, packaging, test, optics, hosts, network, fabric
    (at cost), the markup, energy and repairs per million output tokens (parts that are zero in every design are
    left out of the legend)."""
    import numpy as np

    parts = cost_breakdown_per_mtok(doc)
    names = list(parts)
    # a design with trials that deliver no tokens (missed SLOs) has an infinite mean cost:
    # no bar, a note in its place
    finite = np.array([all(np.isfinite(v) for v in parts[n].values()) for n in names])
    fig = new_figure(max(7.0, 1.6 * len(names) + 3), 4.8)
    ax = fig.add_subplot()
    bottom = np.zeros(len(names))
    for i, (_, label) in enumerate(COST_PARTS):
        h = np.where(finite, [parts[n][label] for n in names], 0.0)
        if not h.any():
            continue
        ax.bar(range(len(names)), h, bottom=bottom, label=label, color=f"C{i % 10}", hatch=_HATCHES[i], edgecolor="white")
        bottom += h
    for x, total in enumerate(bottom):
        text = f"{total:.3f}" if finite[x] else "infinite mean:\nsome trials\nserve no tokens"
        ax.text(x, total, text, ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(names)), names, rotation=12, ha="right", fontsize=8)
    ax.set(ylabel="mean cost per million output tokens (USD per Mtok)", ylim=(0, max(bottom.max(), 1e-9) * 1.12),
           title="Cost per token by part: each part ÷ the tokens the cluster delivered")
    ax.grid(alpha=0.3, axis="y")
    if finite.any():
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return fig


#: Share of trials the paired-ratio histogram may leave out at each end (a sketch's
#: extreme points stretch the axis far past where the trials are).
RATIO_TAIL = 0.001


def central_range(curves: list[tuple], tail: float = RATIO_TAIL) -> tuple[float, float]:
    """(low, high) holding all but ``tail`` of each CDF (values, cumulative share) at each
    end, widened to take in ratio 1 (no difference) so the verdict's line is on the axis;
    an empty CDF (no trial where both sides serve tokens) takes no room, and with none but
    empty ones the range is 1 +- :data:`EMPTY_HALF_RANGE`."""
    import numpy as np

    curves = [(x, p) for x, p in curves if len(x)]
    lo = min((float(np.interp(tail, p, x)) for x, p in curves), default=1.0 - EMPTY_HALF_RANGE)
    hi = max((float(np.interp(1.0 - tail, p, x)) for x, p in curves), default=1.0 + EMPTY_HALF_RANGE)
    return min(lo, 1.0), max(hi, 1.0)


#: Half the width of the paired-ratio axis around 1 when no trial has a ratio to show.
EMPTY_HALF_RANGE = 0.1


def paired_ratio_figure(results):
    """Histogram of the paired ratio of cost per token of each scenario to the baseline,
    over the central range of the trials (:func:`central_range`); a curve that coincides
    with an earlier one is drawn thin over it, the earlier one thick beneath, so both show."""
    import numpy as np

    names = _names(results)
    base = names[0]
    curves = [_sketch_points(results.summaries.ratios[(n, "cost_per_mtok_usd")]) for n in names[1:]]
    labels = coincident_labels([f"{n} / {base}" for n in names[1:]], curves)
    hidden = {i for i, label in enumerate(labels) if "(overlaps " in label}
    beneath = {j for i in hidden for j in range(i) if ks_distance(curves[j], curves[i]) < COINCIDE_KS}
    fig = new_figure()
    ax = fig.add_subplot()
    lo, hi = central_range(curves)
    bins = np.linspace(lo, hi, 61)
    for i, ((x, p), label) in enumerate(zip(curves, labels)):
        s = style(i + 1)
        lw = 1.0 if i in hidden else 3.2 if i in beneath else s["lw"]
        inside = (x >= lo) & (x <= hi)
        ax.hist(x[inside], bins=bins, weights=np.diff(p, prepend=0.0)[inside], histtype="step", lw=lw, ls=s["ls"],
                color=s["color"], label=label)
    ax.axvline(1.0, color="k", lw=0.8, label="ratio 1: same cost")
    ax.set(xlabel=f"paired ratio of cost per token, B / {base} (dimensionless)", ylabel="share of trials per bin (0–1)",
           title=f"Paired comparison with {base} (left of 1: B cheaper per token)\n"
                 f"the central {100 * (1 - 2 * RATIO_TAIL):g} % of trials of each ratio")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


#: kind → figure function of :func:`run_figure` (``Results.plot(kind=...)``).
KINDS = {"cost_cdf": cost_cdf_figure, "availability": availability_figure,
         "cost_breakdown": lambda r: cost_breakdown_figure(r.doc), "paired_ratio": paired_ratio_figure}


def run_figure(results, kind: str = "cost_cdf"):
    """One figure of a run or compare by kind (see :data:`KINDS`); a Figure, not a file."""
    from ..errors import InputError, Problem

    if kind not in KINDS:
        raise InputError(Problem("kind", kind, f"allowed: {', '.join(KINDS)}"))
    if kind == "paired_ratio" and len(results.doc["scenarios"]) < 2:
        raise InputError(Problem("kind", kind, "needs two or more scenarios (compare)"))
    return KINDS[kind](results)


#: The figure files of a run (:func:`run_figures`), and the one a comparison adds.
RUN_FIGURES = ("cost_per_mtok_cdf.png", "availability.png", "cost_breakdown.png")
PAIRED_FIGURE = "paired_ratio.png"


def _run_figure_files(scenarios: int) -> list[str]:
    """The figure files of a run of ``scenarios`` scenarios, as PNG names."""
    return [*RUN_FIGURES, *([PAIRED_FIGURE] if scenarios > 1 else [])]


def run_figure_names(scenarios: int, verdict_map: bool = False) -> list[str]:
    """The file names :func:`write_figures` writes for a run of ``scenarios`` scenarios
    (in the format of :func:`figure_format`), with the verdict map's when ``verdict_map``."""
    fmt = _FORMAT.get()[0]
    names = [*_run_figure_files(scenarios), *([VERDICT_MAP_FIGURE] if verdict_map else [])]
    return [str(Path(name).with_suffix(f".{fmt}")) for name in names]


def run_figures(results) -> FigureSet:
    """{file name: Figure} of a run or compare (the paired ratio with two or more scenarios,
    the verdict map when the run has one)."""
    makers = dict(zip(RUN_FIGURES, (cost_cdf_figure, availability_figure, lambda r: cost_breakdown_figure(r.doc))), **{PAIRED_FIGURE: paired_ratio_figure})
    figures = {name: makers[name](results) for name in _run_figure_files(len(results.doc["scenarios"]))}
    if "verdict_map" in results.doc:
        figures[VERDICT_MAP_FIGURE] = verdict_map_figure(results.doc["verdict_map"])
    return FigureSet(figures)


#: The figure file of a run's verdict map (``run --verdict-map``).
VERDICT_MAP_FIGURE = "verdict_map.png"


def verdict_map_figure(vmap: dict):
    """The verdict map as a heat map: a row per pair B / A, a column per cell of the
    readings' grid (and the weighted total), coloured by the median paired cost ratio
    (below 1: B cheaper), each cell labelled with the ratio and P(B cheaper)."""
    import numpy as np

    pairs = list(vmap["cells"][0]["verdict"])
    columns = [(" / ".join(c["readings"].values()), c["verdict"]) for c in vmap["cells"]]
    if "total" in vmap:
        columns.append(("weighted total", vmap["total"]))
    ratio = np.array([[v[p]["cost_ratio"] for _, v in columns] for p in pairs])
    fig = new_figure(max(7.0, 1.3 * len(columns) + 2.5), 1.0 * len(pairs) + 2.6)
    ax = fig.add_subplot()
    span = max(abs(np.nanmax(ratio) - 1.0), abs(np.nanmin(ratio) - 1.0), 0.05)
    image = ax.imshow(ratio, cmap="RdBu_r", vmin=1.0 - span, vmax=1.0 + span, aspect="auto")
    for i, p in enumerate(pairs):
        for j, (_, v) in enumerate(columns):
            dark = abs(v[p]["cost_ratio"] - 1.0) > 0.6 * span  # white text on the strong colours
            ax.text(j, i, f"{v[p]['cost_ratio']:.3f}\nP={v[p]['p_cheaper']:.2f}", ha="center", va="center", fontsize=8, color="w" if dark else "k")
    ax.set_xticks(range(len(columns)), [name for name, _ in columns], rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(pairs)), pairs, fontsize=8)
    ax.set(xlabel=" / ".join(vmap["readings"]) + " (reading per cell)",
           title=f"Verdict map: median paired cost ratio B / A, P(B cheaper); {vmap['trials_per_cell']:,} trials a cell")
    fig.colorbar(image, ax=ax, label="median paired cost ratio (dimensionless; < 1: B cheaper)")
    return fig


def write_figures(results, out):
    """CDF of cost per Mtok, availability distribution, cost breakdown, paired ratios (PNG)."""
    out = Path(out)
    return [save_png(fig, out / name) for name, fig in run_figures(results).items()]
