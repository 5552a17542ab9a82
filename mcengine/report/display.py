"""A set of named figures that shows itself in a notebook.

The figure helpers (:func:`mcengine.report.stages.yield_figures`,
:func:`mcengine.report.sensitivity.sensitivity_figures`,
:func:`mcengine.report.figures.run_figures`, ...) return a :class:`FigureSet`: a dict of
file name → matplotlib ``Figure`` (``figs["die_yield.png"]`` is the Figure itself) that
Jupyter draws as the cell's output, each figure under its name.
"""

from __future__ import annotations

import base64
import io
from html import escape


def png_bytes(fig) -> bytes:
    """The figure as PNG bytes at its own resolution."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=fig.dpi)
    return buf.getvalue()


def displayable(fig):
    """``fig`` (a matplotlib Figure built without pyplot) given a PNG representation, so a
    notebook draws it as a cell's value even when no pyplot backend was ever started
    (mcengine never switches the backend). Returns the same Figure."""
    fig._repr_png_ = lambda: png_bytes(fig)
    return fig


class FigureSet(dict):
    """``{file name: matplotlib Figure}`` that displays every figure in a notebook; each
    Figure also displays alone (:func:`displayable`)."""

    def __init__(self, figures: dict):
        super().__init__({name: displayable(fig) for name, fig in figures.items()})

    def _repr_html_(self) -> str:
        parts = []
        for name, fig in self.items():
            data = base64.b64encode(png_bytes(fig)).decode("ascii")
            parts.append(f"<figure><img src='data:image/png;base64,{data}' alt='{escape(name)}'/>"
                         f"<figcaption>{escape(name)}</figcaption></figure>")
        return "".join(parts)

    def __repr__(self) -> str:
        return f"FigureSet({', '.join(self)})"
