"""Progress of a run shown in a Jupyter notebook.

:class:`NotebookBar` draws an HTML ``<progress>`` bar in the cell's output and updates it
in place through an IPython display handle (``display(..., display_id=True)``), so it
needs nothing beyond IPython, which every Jupyter kernel has. :func:`progress_for` turns
the API's ``progress`` argument into the callback the runner calls with
``(trials done, trials in all)``.
"""

from __future__ import annotations

import sys
import time
from html import escape


def in_notebook() -> bool:
    """True inside a Jupyter kernel (IPython with a kernel attached), False in a plain
    interpreter, a script or IPython in a terminal. IPython is never imported here."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return getattr(shell, "kernel", None) is not None


class NotebookBar:
    """A progress bar in the notebook cell that runs the computation: ``bar(done, total)``
    draws or updates it (trials done, trials in all, trials per second)."""

    def __init__(self, label: str):
        self.label = label
        self.handle = None
        self.start = time.perf_counter()

    def html(self, done: int, total: int) -> str:
        elapsed = time.perf_counter() - self.start
        rate = f", {done / elapsed:,.0f} trials/s" if done and elapsed > 0 else ""
        return (f"<div>{escape(self.label)}: <progress value='{done}' max='{max(total, 1)}' style='width:40%'></progress> "
                f"{done:,} / {total:,} trials{rate}, {elapsed:,.0f} s</div>")

    def __call__(self, done: int, total: int) -> None:
        from IPython.display import HTML, display

        if self.handle is None:
            self.handle = display(HTML(self.html(done, total)), display_id=True)
        else:
            self.handle.update(HTML(self.html(done, total)))


def progress_for(progress, label: str):
    """The runner's callback for the API's ``progress``: ``"auto"`` or ``True``, a
    :class:`NotebookBar` inside a Jupyter kernel and nothing elsewhere (library code never
    writes to a terminal); ``None`` or ``False``, nothing; a callable, itself."""
    if progress is True or progress == "auto":
        return NotebookBar(label) if in_notebook() else None
    return progress or None
