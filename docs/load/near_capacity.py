"""Regenerate docs/load.md's near-capacity table: the chain's fast model (as the fit table,
:mod:`make_fit_table`) against the request-level simulator at loads 0.95, 0.98 and 0.99 of
the roofline's capacity, where the bought fleet runs at its peak (docs/load.md#fleet-check)
and the fit grid (0.1-0.9) does not reach: each design's plan in each mode on 16
instances, Poisson arrivals, each cell one run as the fit table's (its length and warm-up
per mode, seed 0).

    python docs/load/near_capacity.py     # rerun the cells, rewrite near-capacity.csv and the page's block

The simulator's served share (``utilisation``: tokens served over the roofline's
capacity) below the load marks a cell with no steady state (a disaggregated plan's prefill
pool whose full passes serve fewer prompts a second than arrive): its figures grow with
the run's length, and the fast model holds that pool at its highest utilisation.

    python docs/load/near_capacity.py --render   # rewrite the page's block from the committed CSV
    python docs/load/near_capacity.py --model-only
                                                 # the fast model's columns anew, the simulated ones kept
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from make_fit_table import ARRIVALS, PAGE, grid, refit, regenerate  # noqa: E402  (the fit table's cells, refit, tolerance and writer)

CSV = HERE / "near-capacity.csv"
LOADS = (0.95, 0.98, 0.99)
BEGIN, END = "<!-- near-capacity:begin -->", "<!-- near-capacity:end -->"


#: The statistics shown, in the table's order.
SHOWN = ("ttft_p99", "ttft_mean", "tpot_p99", "tpot_mean")


def _err(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:+.0%}"


def render(table: pd.DataFrame) -> str:
    """The page's block: per design, mode and load, the simulator's served share and P99 TTFT
    (± its standard error) and the fast model's signed error on each statistic."""
    lines = ["| design | mode | load | served (sim) | sim P99 TTFT, ms | P99 TTFT | mean TTFT | P99 TPOT | mean TPOT |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in table.itertuples(index=False):
        errs = " | ".join(_err(getattr(row, f"err_{k}")) for k in SHOWN)
        lines.append(f"| {row.design} | {row.mode} | {row.load:g} | {row.utilisation:.3f} | {row.sim_ttft_p99_ms:,.0f} ± {row.sim_ttft_p99_sem_ms:,.0f} | {errs} |")
    lines.append("")
    lines.append(f"{int(table.passes.sum())} of {len(table)} cells within the fit table's tolerance.")
    return "\n".join(lines)


def main(argv=None) -> int:
    """Rerun the cells and rewrite the CSV and the page's block; ``--render``: the block only,
    from the committed CSV; ``--model-only``: the committed CSV's fast-model columns
    recomputed from the model as it is now (its simulated columns kept), the CSV and the
    block rewritten."""
    args = list(argv if argv is not None else sys.argv[1:])
    if args == ["--render"]:
        from mcengine.io import write_block

        write_block(PAGE, BEGIN, END, render(pd.read_csv(CSV)))
        return 0
    if args == ["--model-only"]:
        regenerate(refit(pd.read_csv(CSV)), CSV, PAGE, BEGIN, END, render)
        return 0
    if args:
        print(f"near_capacity.py {' '.join(args)}: allowed no option, --render or --model-only", file=sys.stderr)
        return 2
    poisson = tuple(a for a in ARRIVALS if a[0] == "poisson")
    regenerate(grid(LOADS, arrivals=poisson), CSV, PAGE, BEGIN, END, render)
    return 0


if __name__ == "__main__":
    sys.exit(main())
