"""What a person checks on every figure, as functions over a matplotlib Figure.

* :func:`axis_labels_carry_units`: a numeric axis (its tick labels are numbers) is named,
  with a unit in parentheses (``dimensionless`` and ``share`` count), and its ticks are
  plain numbers, never ``2×10^0``;
* :func:`texts_balanced`: every title, axis label, legend entry and note closes its
  parentheses;
* :func:`legends_list_every_series`: in a panel with two or more data lines, each is
  labelled; every labelled line, bar group or band is in a legend of the figure;
* :func:`overlaps_flagged`: a line drawn on top of another (same x, within 0.5 % of the
  panel's height everywhere) says in its legend entry which one it hides;
* :func:`no_text_over_lines`: no note, annotation or legend is drawn across a line of data
  or a reference line (of its panel or the panel's twin);
* :func:`labels_stay_in_their_panel`: a y label is no taller than its panel, and no two
  axis labels overlap.

:func:`check_figure` runs them all; each returns a list of problems (empty when fine),
so a failing test names every one at once.
"""

from __future__ import annotations

import re

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.lines import Line2D

#: A tick label that is a number as written: ``$1.50``, ``-0.2``, ``1,000``, ``40 %``, ``1e-05``.
NUMBER = re.compile(r"^[−\-+]?\$?[\d,]*\.?\d+(e[−\-+]?\d+)?\s*%?x?$")
#: A unit in parentheses somewhere in a label.
UNIT = re.compile(r"\([^()]*(\([^()]*\)[^()]*)*\)")
#: Tick labels in matplotlib's scientific notation, which reads as a formula, not a price.
SCI_TICK = re.compile(r"\\times|×10\^")
#: A line "on top of" another: within this share of the panel's height at every x.
OVERLAP_SHARE = 0.005


def _drawn(fig):
    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def _panels(fig):
    return [ax for ax in fig.axes if ax.axison]


def _tick_texts(axis) -> list[str]:
    """The tick labels shown (a twin's or a shared axis' hidden ones left out)."""
    if not axis.get_visible():
        return []
    labels = axis.get_majorticklabels() + axis.get_minorticklabels()
    return [lab.get_text() for lab in labels if lab.get_visible() and lab.get_text()]


def _is_reference(line: Line2D) -> bool:
    """axhline / axvline: drawn in axes coordinates along one direction."""
    return line.get_transform() is not line.axes.transData and len(line.get_xdata()) == 2


def _data_lines(ax) -> list[Line2D]:
    """Lines that draw data: not reference lines, not the caps of error bars, two points or more."""
    from matplotlib.container import ErrorbarContainer

    caps = {id(ln) for c in ax.containers if isinstance(c, ErrorbarContainer) for ln in c.lines[1]}
    return [ln for ln in ax.get_lines() if ln.get_visible() and not _is_reference(ln) and id(ln) not in caps
            and len(np.atleast_1d(ln.get_xdata())) > 1]


def _bar_series(ax) -> list[str]:
    """Labels of the labelled bar groups (unlabelled bars of a categorical chart are no series)."""
    from matplotlib.container import BarContainer

    return [c.get_label() for c in ax.containers if isinstance(c, BarContainer) and c.get_label() and not c.get_label().startswith("_")]


def _is_colorbar(ax) -> bool:
    return hasattr(ax, "_colorbar")


def axis_labels_carry_units(fig) -> list[str]:
    _drawn(fig)
    problems = []
    for ax in _panels(fig):
        for name, axis, label in (("x", ax.xaxis, ax.get_xlabel()), ("y", ax.yaxis, ax.get_ylabel())):
            ticks = _tick_texts(axis)
            if any(SCI_TICK.search(t) for t in ticks):
                problems.append(f"{ax.get_title()!r}: {name} ticks in scientific notation: {ticks}")
            numeric = ticks and all(NUMBER.match(t.replace("\u2212", "-")) or "mathdefault" in t for t in ticks)
            if numeric and not _is_colorbar(ax) and not UNIT.search(label):
                problems.append(f"{ax.get_title()!r}: numeric {name} axis labelled {label!r}, no unit in parentheses")
        if _is_colorbar(ax):
            cbar = ax.get_ylabel() or ax.get_xlabel()
            if not cbar:
                problems.append("a colour bar without a label")
    return problems


def _all_texts(fig) -> list[str]:
    texts = [fig._suptitle.get_text()] if fig._suptitle is not None else []
    for ax in fig.axes:
        texts += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()] + [t.get_text() for t in ax.texts]
        if ax.get_legend() is not None:
            texts += [t.get_text() for t in ax.get_legend().get_texts()]
    for leg in fig.legends:
        texts += [t.get_text() for t in leg.get_texts()]
    return texts


def texts_balanced(fig) -> list[str]:
    problems = []
    for text in _all_texts(fig):
        depth = 0
        for ch in text:
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth < 0:
                break
        if depth != 0:
            problems.append(f"unbalanced parentheses: {text!r}")
    return problems


def _legend_texts(fig) -> set[str]:
    texts = set()
    for leg in [ax.get_legend() for ax in fig.axes] + list(fig.legends):
        if leg is not None:
            texts |= {t.get_text() for t in leg.get_texts()}
    return texts


def legends_list_every_series(fig) -> list[str]:
    shown = _legend_texts(fig)
    problems = []
    for ax in _panels(fig):
        series = [(ln.get_label(), "line") for ln in _data_lines(ax)] + [(lab, "bars") for lab in _bar_series(ax)]
        labelled = [(lab, kind) for lab, kind in series if not lab.startswith("_")]
        if len(series) >= 2 and len(labelled) < len(series):
            problems.append(f"{ax.get_title()!r}: {len(series) - len(labelled)} of {len(series)} series without a label")
        for lab, kind in labelled:
            if lab not in shown:
                problems.append(f"{ax.get_title()!r}: {kind} {lab!r} is in no legend")
        for coll in ax.collections:
            lab = coll.get_label()
            if lab and not lab.startswith("_") and lab not in shown:
                problems.append(f"{ax.get_title()!r}: {lab!r} is in no legend")
    return problems


def overlaps_flagged(fig) -> list[str]:
    _drawn(fig)
    problems = []
    for ax in _panels(fig):
        lines = _data_lines(ax)
        height = ax.get_window_extent().height
        for i, a in enumerate(lines):
            for b in lines[i + 1:]:
                xa, xb = np.asarray(a.get_xdata(), float), np.asarray(b.get_xdata(), float)
                if xa.shape != xb.shape or not np.allclose(xa, xb):
                    continue
                ya = ax.transData.transform(np.column_stack([xa, np.asarray(a.get_ydata(), float)]))[:, 1]
                yb = ax.transData.transform(np.column_stack([xb, np.asarray(b.get_ydata(), float)]))[:, 1]
                both = np.isfinite(ya) & np.isfinite(yb)
                if both.any() and np.all(np.abs(ya[both] - yb[both]) <= OVERLAP_SHARE * height):
                    if "overlaps" not in b.get_label():
                        problems.append(f"{ax.get_title()!r}: {b.get_label()!r} is drawn over {a.get_label()!r} and does not say so")
    return problems


def _crosses(line: Line2D, box) -> bool:
    xy = line.get_transform().transform(np.column_stack([line.get_xdata(), line.get_ydata()]).astype(float))
    xy = xy[np.all(np.isfinite(xy), axis=1)]
    if line.get_linestyle() in ("None", "", " "):
        return any(box.contains(*p) for p in xy)
    from matplotlib.path import Path

    return len(xy) > 1 and Path(xy).intersects_bbox(box, filled=False)


def _same_place(ax) -> list:
    """``ax`` and its twins (axes drawn in the same box)."""
    box = ax.get_position().bounds
    return [other for other in ax.figure.axes if other.get_position().bounds == box]


def no_text_over_lines(fig) -> list[str]:
    renderer = _drawn(fig)
    problems = []
    for ax in _panels(fig):
        notes = [(f"text {t.get_text()!r}", t.get_window_extent(renderer)) for t in ax.texts if t.get_visible() and t.get_text().strip()]
        if ax.get_legend() is not None:
            notes.append(("its legend", ax.get_legend().get_window_extent(renderer)))
        for what, box in notes:
            for line in (ln for other in _same_place(ax) for ln in other.get_lines()):
                if line.get_visible() and _crosses(line, box):
                    problems.append(f"{ax.get_title()!r}: {what} is drawn over the line {line.get_label()!r}")
    return problems


def labels_stay_in_their_panel(fig) -> list[str]:
    renderer = _drawn(fig)
    problems = []
    boxes = []
    for ax in _panels(fig):
        panel = ax.get_window_extent(renderer)
        for label in (ax.xaxis.label, ax.yaxis.label):
            if label.get_text():
                boxes.append((label.get_text(), label.get_window_extent(renderer)))
        y = ax.yaxis.label
        if y.get_text():
            box = y.get_window_extent(renderer)
            if box.y0 < panel.y0 - 2 or box.y1 > panel.y1 + 2:
                problems.append(f"y label {y.get_text()!r} is taller than its panel ({box.height:.0f} px > {panel.height:.0f} px)")
    for i, (ta, a) in enumerate(boxes):
        for tb, b in boxes[i + 1:]:
            if a.overlaps(b):
                problems.append(f"axis labels {ta!r} and {tb!r} overlap")
    return problems


def ticks_read_directly(fig) -> list[str]:
    """No axis shifts its tick values by an offset printed at its end (matplotlib's
    "1e-6+9.998e-1"): the reader cannot add it in their head, and it lands on the axis title."""
    _drawn(fig)
    problems = []
    for ax in _panels(fig):
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            offset = axis.get_offset_text()
            if offset.get_visible() and "+" in offset.get_text():
                problems.append(f"{ax.get_title()!r}: {name} ticks are shifted by the offset {offset.get_text()!r}")
    return problems


CHECKS = (axis_labels_carry_units, texts_balanced, legends_list_every_series, overlaps_flagged, no_text_over_lines,
          labels_stay_in_their_panel, ticks_read_directly)


def check_figure(fig) -> list[str]:
    """Every problem every check finds on ``fig``."""
    return [p for check in CHECKS for p in check(fig)]
