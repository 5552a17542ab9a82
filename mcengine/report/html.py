"""`mcengine report RUN_DIR`: one self-contained HTML page of a run's ``--out`` folder.

The page holds the verdict block (made from the summary and, when kept, the per-trial
table: :mod:`mcengine.report.verdict`), the run's tables as
the terminal prints them, table.csv as an HTML table, every PNG figure of the folder
embedded as base64 (nothing is fetched: it opens offline), and the provenance. It
restates the folder's numbers and computes none of its own.
"""

from __future__ import annotations

import base64
import json
from html import escape
from pathlib import Path

from ..errors import InputError, Problem

#: The page's file name in the run's folder (``--output`` for another path).
REPORT_FILE = "report.html"
#: The first line of every page written here: a file without it is never replaced.
MARKER = "<!-- mcengine report -->"
#: Width of the terminal tables on the page (characters).
TABLE_WIDTH = 100

_STYLE = """body{font-family:system-ui,sans-serif;max-width:64rem;margin:2rem auto;padding:0 1rem;color:#222}
pre{background:#f6f6f6;padding:.8rem;overflow-x:auto;font-size:.8rem}
table.csv{border-collapse:collapse;font-size:.75rem}table.csv td,table.csv th{border:1px solid #ccc;padding:2px 5px;text-align:right}
figure{margin:1rem 0}img{max-width:100%}.verdict{background:#eef4ff;border-left:4px solid #36c;padding:.6rem 1rem}"""


#: Once the page has loaded, ``<body data-figures-loaded="N">``: the figures the browser
#: decoded (a check that they display, without a screenshot).
_COUNT_LOADED = ("window.addEventListener('load',function(){document.body.dataset.figuresLoaded="
                 "Array.from(document.images).filter(function(i){return i.complete&&i.naturalWidth>0}).length;});")


def _summary(folder: Path) -> dict:
    path = folder / "summary.json"
    if not path.is_file():
        raise InputError(Problem("RUN_DIR", str(folder), "allowed: the --out folder of `mcengine run` or `compare` (it holds summary.json)"))
    doc = json.loads(path.read_text())
    if "scenarios" not in doc or "trials" not in doc:
        raise InputError(Problem("RUN_DIR", str(folder), "allowed: the --out folder of `mcengine run` or `compare` (its summary.json has no scenarios)"))
    return doc


def _verdict(doc: dict, folder: Path) -> dict:
    """The verdict of the folder's summary, with its drivers from trials.parquet when kept."""
    if "paired_all" not in doc:
        return {}
    from .verdict import stored_paper, verdict

    table = None
    if (folder / "trials.parquet").exists():
        from ..results import TrialsFile

        table = TrialsFile(folder / "trials.parquet")
    return verdict(doc, table, stored_paper())


def _terminal_text(doc: dict) -> str:
    """The run's tables as `mcengine run` prints them, at :data:`TABLE_WIDTH` columns."""
    from .tables import as_text, render_run

    return as_text(render_run({**doc, "verdict": None}), TABLE_WIDTH)


def _csv_table(folder: Path) -> str:
    path = folder / "table.csv"
    if not path.is_file():
        return ""
    import pandas as pd

    return pd.read_csv(path).to_html(index=False, classes="csv", na_rep="", float_format=lambda x: f"{x:.6g}")


def _figures(folder: Path) -> list[str]:
    """Every PNG and SVG figure of the folder as a ``<figure>`` with its data inline (base64)."""
    out = []
    for path in sorted([*folder.glob("*.png"), *folder.glob("*.svg")]):
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        mime = "image/svg+xml" if path.suffix == ".svg" else "image/png"
        out.append(f'<figure><img alt="{escape(path.name)}" src="data:{mime};base64,{data}"><figcaption>{escape(path.name)}</figcaption></figure>')
    return out


def report_html(folder: Path) -> str:
    """The page of run folder ``folder`` (module text)."""
    folder = Path(folder)
    doc = _summary(folder)
    block = _verdict(doc, folder)
    title = f"mcengine: {doc.get('scenario', '')}, {doc['trials']:,} paired trials, seed {doc.get('seed')}"
    parts = [MARKER, "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', f"<title>{escape(title)}</title>",
             f"<style>{_STYLE}</style></head><body>", f"<h1>{escape(title)}</h1>"]
    if block:
        lines = "\n".join(line for entry in block.values() for line in entry["lines"])
        parts += ['<section class="verdict" id="verdict"><h2>Verdict</h2>',
                  "<p>Median [90% interval] of the paired ratio B/A (same trials, common random numbers); downtime at the "
                  "median availability; drivers: rank correlation of the ratio with each input.</p>",
                  f"<pre>{escape(lines)}</pre></section>"]
    parts += ['<section id="tables"><h2>Tables</h2>', f"<pre>{escape(_terminal_text(doc))}</pre>"]
    csv = _csv_table(folder)
    if csv:
        parts += ["<h3>table.csv</h3>", csv]
    parts.append("</section>")
    figures = _figures(folder)
    if figures:
        parts += ['<section id="figures"><h2>Figures</h2>', *figures, "</section>"]
    parts += ['<section id="provenance"><h2>Provenance</h2>',
              f"<pre>{escape(json.dumps(doc.get('provenance', {}), indent=1, sort_keys=True))}</pre></section>",
              f"<script>{_COUNT_LOADED}</script>", "</body></html>"]
    return "\n".join(parts) + "\n"


def write_report(folder: Path, output: Path | None = None) -> Path:
    """Write the page of ``folder`` to ``output`` (default ``folder/report.html``); a file
    there that this function did not write is never replaced."""
    from ..io import write_atomic

    output = Path(output) if output is not None else Path(folder) / REPORT_FILE
    if output.exists() and not output.read_text(errors="replace").startswith(MARKER):
        raise InputError(Problem("--output", str(output), "exists and is not an mcengine report: give another path"))
    return write_atomic(output, report_html(Path(folder)))
