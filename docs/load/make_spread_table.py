"""Regenerate the small-spread validation table of docs/load.md#small-spread: the chain's fast
continuous model (through :func:`mcengine.standalone.serve.fast_latency`, which reads
``workload.load.length_cv``) against the request-level simulator with each request's prompt
and output drawn from a gamma law of CV :data:`LENGTH_CV`, for h100 and lite-h100, Poisson
and gamma (CV 2) arrivals, at make_fit_table.py's loads 0.1 to 0.9 on its 16 instances.

    python docs/load/make_spread_table.py               # rerun the grid, rewrite spread-table.csv and the page's block
    python docs/load/make_spread_table.py --model-only  # the fast model's columns anew, the simulated ones kept

The fit table's grid simulates every request at the mean length, where least-loaded
dispatch locks an instance's prompts into step (docs/load.md#lite-pairs); at a 2 % spread
that pattern is gone, and this table is the continuous mode's grid in that regime. Each
simulated point: one run of seed 0 of :data:`REQUESTS` requests, the first half left out
(with spread lengths no pattern is inherited over holding times, so the run settles well
within it), each statistic with its standard error by sectioning. A cell passes when the
fast model is within 10 % of the simulator's P99s and 5 % of its means (make_fit_table.py's
TOLERANCE)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from make_fit_table import ARRIVALS, DESIGNS, INSTANCES, LOADS, PAGE, point, refit, render  # noqa: E402

sys.path.insert(0, str(HERE.parent / "serve"))
from make_load_table import regenerate  # noqa: E402

CSV = HERE / "spread-table.csv"
#: The lengths' spread simulated: small enough that the mean lengths' model holds but for the
#: pattern equal lengths make (docs/load.md#lite-pairs), large enough to break that pattern.
LENGTH_CV = 0.02
#: Requests simulated per cell; the first half left out.
REQUESTS = 200_000
BEGIN, END = "<!-- spread-table:begin -->", "<!-- spread-table:end -->"


def spread_scenario(design: str):
    """``design``'s scenario, its lengths spread :data:`LENGTH_CV`."""
    from mcengine.scenario import load_scenario

    return load_scenario(design, (f"workload.load.length_cv={LENGTH_CV:g}",))


def spread_system(design: str, scenario=None):
    """The serving system of a cell: ``design``'s continuous plan on make_fit_table.py's
    instances, its lengths spread :data:`LENGTH_CV` (from ``scenario``, its
    :func:`spread_scenario`, when the caller has it)."""
    from mcengine.standalone.serve import serving_system

    return serving_system(spread_scenario(design) if scenario is None else scenario, "continuous", INSTANCES)


def grid(designs=DESIGNS, arrivals=ARRIVALS, loads=LOADS) -> pd.DataFrame:
    """Every cell of the grid: one row each."""
    rows = []
    for name in designs:
        scenario = spread_scenario(name)
        system = spread_system(name, scenario)
        for arrival, cv in arrivals:
            for load in loads:
                rows.append({"design": name, "mode": "continuous", "length_cv": LENGTH_CV, **point(scenario, system, load, arrival, cv, REQUESTS)})
                print(name, arrival, load, file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-only", action="store_true",
                        help="keep spread-table.csv's simulated columns, recompute the fast model's and rewrite the CSV and the page's block")
    args = parser.parse_args(argv)
    table = refit(pd.read_csv(CSV), lambda row: spread_system(row["design"])) if args.model_only else grid()
    regenerate(table, CSV, PAGE, BEGIN, END, render)
    return 0


if __name__ == "__main__":
    sys.exit(main())
