"""Regenerate the load table of docs/serve.md: the request-level simulator's latency over
loads 0.1 to 0.9 of the roofline's capacity, for h100 and lite-h100 in each serving mode,
with Poisson and gamma (CV 2) arrivals, on the scenarios' ``cluster.instances``.

    python docs/serve/make_load_table.py           # rerun the grid, rewrite load-table.csv and the table

Each point is one ``mcengine serve`` body (:func:`mcengine.standalone.serve.serve_summary`,
seed 0, :data:`REQUESTS` requests, the first 20% left out). ``load-table.csv`` beside this
script holds every point (the reference the chain's fast queueing model is validated
against); docs/serve.md's block between ``<!-- load-table:begin -->`` and
``<!-- load-table:end -->`` shows the P99s and the attainment.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's mcengine
PAGE = ROOT / "docs" / "serve.md"
CSV = HERE / "load-table.csv"

DESIGNS = ("h100", "lite-h100")
MODES = ("static", "continuous", "disaggregated")
ARRIVALS = (("poisson", 1.0), ("gamma", 2.0))
LOADS = (0.1, 0.3, 0.5, 0.7, 0.9)
REQUESTS = 200_000
BEGIN, END = "<!-- load-table:begin -->", "<!-- load-table:end -->"


def grid() -> pd.DataFrame:
    """Every point of the grid: one row each."""
    from mcengine.scenario import load_scenario
    from mcengine.standalone.serve import serve_summary, serving_system

    rows = []
    for name in DESIGNS:
        scenario = load_scenario(name)
        for mode in MODES:
            capacity = serving_system(scenario, mode).capacity_tokens_per_s
            for arrival, cv in ARRIVALS:
                for load in LOADS:
                    body, _ = serve_summary(scenario, load * capacity, REQUESTS, 0, arrival, cv, mode, warmup=0.2)
                    rows.append({"design": name, "mode": mode, "plan": body["plan"], "arrival": arrival, "cv": cv, "load": load,
                                 "demand_tokens_per_s": body["demand_tokens_per_s"],
                                 **{f"ttft_{k}_ms": v for k, v in body["ttft_ms"].items()},
                                 **{f"tpot_{k}_ms": v for k, v in body["tpot_ms"].items()},
                                 "slo_attainment": body["slo_attainment"], "utilisation": body["utilisation"],
                                 "preemptions_per_request": body["preemptions_per_request"]})
                    print(name, mode, arrival, load, file=sys.stderr)
    return pd.DataFrame(rows)


def render(table: pd.DataFrame) -> str:
    """The page's block: P99 TTFT / P99 TPOT (ms) and attainment per design, mode, arrival and load."""
    head = "| design | mode | arrivals | " + " | ".join(f"load {x:g}" for x in LOADS) + " |"
    lines = [head, "| --- | --- | --- | " + " | ".join("---" for _ in LOADS) + " |"]
    for (name, mode, arrival, cv), part in table.groupby(["design", "mode", "arrival", "cv"], sort=False):
        cells = [f"{r.ttft_p99_ms:,.0f} / {r.tpot_p99_ms:.1f} ({r.slo_attainment:.0%})" for r in part.itertuples()]
        lines.append(f"| {name} | {mode} | {arrival}{'' if arrival == 'poisson' else f' CV {cv:g}'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def regenerate(frame: pd.DataFrame, csv: Path, page: Path, begin: str, end: str, render_table) -> None:
    """Write ``frame`` to ``csv`` and the page's block between ``begin`` and ``end`` as
    ``render_table`` renders the CSV read back (the committed grid, as its test reads it)."""
    from mcengine.io import write_block

    frame.to_csv(csv, index=False, float_format="%.6g")
    write_block(page, begin, end, render_table(pd.read_csv(csv)))


def main() -> int:
    regenerate(grid(), CSV, PAGE, BEGIN, END, render)
    return 0


if __name__ == "__main__":
    sys.exit(main())
