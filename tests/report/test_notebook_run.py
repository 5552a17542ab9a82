"""A notebook that uses the API, executed in a real Jupyter kernel (nbclient): the
signature help shows the options, the run draws a progress bar, the comparison, its
frame with the paired rows and the figures display (slow: a kernel starts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import procs

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "api_tour.ipynb"


def _outputs(cell) -> tuple[str, list[dict]]:
    text = "".join(o.get("text", "") for o in cell.outputs if o["output_type"] == "stream")
    return text, [o for o in cell.outputs if o["output_type"] in ("display_data", "execute_result", "update_display_data")]


@pytest.mark.slow
def test_the_notebook_runs_with_a_progress_bar_and_displays(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    # the kernel imports the mcengine the tests import (tests/procs.py), from a folder that is not the checkout
    NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute(env=procs.env())
    signature, _ = _outputs(nb.cells[1])
    assert "trials" in signature and "seed" in signature and "**kwargs" not in signature
    _, shown = _outputs(nb.cells[2])
    html = [o["data"].get("text/html", "") for o in shown]
    assert any("<progress value='2048' max='2048'" in h or "<progress value='1024'" in h for h in html), html
    assert any(h.startswith("<table>") and "lite-h100" in h for h in html)
    _, frame = _outputs(nb.cells[3])
    assert "lite-h100 / h100" in frame[0]["data"]["text/plain"] and "cost_per_mtok_usd ratio" in frame[0]["data"]["text/plain"]
    _, fig = _outputs(nb.cells[4])
    assert "image/png" in fig[0]["data"]
    _, figs = _outputs(nb.cells[5])
    assert "<img src='data:image/png;base64," in figs[0]["data"]["text/html"]
