"""Regenerate the length-spread validation table of docs/load.md#length-spread: the chain's
fast queueing model (:mod:`mcengine.analytic.queueing` through
:func:`mcengine.standalone.serve.fast_latency`, which reads ``workload.load.length_cv``)
against the request-level simulator with each request's prompt and output drawn from a
gamma law of CV ``length_cv``, for h100 and lite-h100 in each serving mode, Poisson
arrivals, at loads 0.3, 0.6 and 0.9 of the plan's saturated capacity at that spread
(:func:`spread_system`: the roofline's for continuous and disaggregated serving, whose
throughput the mean lengths set; static batches last their longest member's output, which
lowers theirs, docs/load.md#length-spread), length CV 0.77
and 2.1 (the Azure 2023 traces' range, docs/sources.md#load-length-spread), on
make_fit_table.py's 16 instances.

    python docs/load/make_length_table.py               # rerun the grid, rewrite length-table.csv and the page's block
    python docs/load/make_length_table.py --model-only  # the fast model's columns anew, the simulated ones kept

Each simulated point: one run of seed 0 of :data:`REQUESTS` requests of the mode,
make_fit_table.py's warm-up rule per mode (a modest length: the standard errors are in the
table), each statistic with its standard error by sectioning. A cell passes when the fast
model is within 10 % of the simulator's P99s and 5 % of its means (make_fit_table.py's
TOLERANCE)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from make_fit_table import DESIGNS, INSTANCES, MODES, PAGE, TOLERANCE, point, refit  # noqa: E402

sys.path.insert(0, str(HERE.parent / "serve"))
from make_load_table import regenerate  # noqa: E402

CSV = HERE / "length-table.csv"
LOADS = (0.3, 0.6, 0.9)
#: The spreads simulated: the Azure 2023 traces' least and widest (docs/sources.md#load-length-spread).
LENGTH_CVS = (0.77, 2.1)
#: Requests simulated per cell, per mode (the fit table's warm-up rule; continuous: the first half left out).
REQUESTS = {"static": 60_000, "continuous": 200_000, "disaggregated": 60_000}
BEGIN, END = "<!-- length-table:begin -->", "<!-- length-table:end -->"


def spread_system(design: str, mode: str, length_cv: float):
    """The serving system of a cell, its ``capacity_tokens_per_s`` the plan's saturated rate at
    the spread: static batches of ``b`` hold ``O M_b - 1`` decode steps (``M_b``:
    :func:`mcengine.analytic.queue_spread.longest_ratio`) for ``b O`` tokens, so the roofline's
    capacity times ``(P + (O - 1) d) / (P + (O M_b - 1) d)`` (``P``, ``d``: the full batch's
    prefill and decode step); the roofline's in the other modes."""
    import dataclasses

    from mcengine.analytic.queue_spread import longest_ratio
    from mcengine.scenario import load_scenario
    from mcengine.standalone.serve import serving_system

    system = serving_system(load_scenario(design, (f"workload.load.length_cv={length_cv:g}",)), mode, INSTANCES)
    if mode != "static":
        return system
    b, o = system.batch_max, system.output_tokens
    p, d = system.prefill_s[b], system.decode_s[b]
    ratio = (p + (o - 1.0) * d) / (p + (o * float(longest_ratio(b, length_cv)) - 1.0) * d)
    return dataclasses.replace(system, capacity_tokens_per_s=system.capacity_tokens_per_s * ratio)


def grid(designs=DESIGNS, modes=MODES, loads=LOADS, spreads=LENGTH_CVS) -> pd.DataFrame:
    """Every cell of the grid: one row each (Poisson arrivals)."""
    from mcengine.scenario import load_scenario

    rows = []
    for name in designs:
        for spread in spreads:
            scenario = load_scenario(name, (f"workload.load.length_cv={spread:g}",))
            for mode in modes:
                system = spread_system(name, mode, spread)
                for load in loads:
                    rows.append({"design": name, "mode": mode, "length_cv": spread,
                                 **point(scenario, system, load, "poisson", 1.0, REQUESTS[mode])})
                    print(name, mode, spread, load, file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def render(table: pd.DataFrame) -> str:
    """The page's block: per design, mode and length CV, the cells that pass and each statistic's error per load."""
    stats = ("ttft_p99", "ttft_mean", "tpot_p99", "tpot_mean")
    lines = ["| design | mode | length CV | cells within | P99 TTFT | mean TTFT | P99 TPOT | mean TPOT |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for (name, mode, spread), part in table.groupby(["design", "mode", "length_cv"], sort=False):
        cells = [" / ".join(f"{e:+.0%}" for e in part[f"err_{k}"]) for k in stats]
        lines.append(f"| {name} | {mode} | {spread:g} | {int(part.passes.sum())}/{len(part)} | " + " | ".join(cells) + " |")
    lines += ["", f"Errors at loads {' / '.join(f'{x:g}' for x in LOADS)}; {int(table.passes.sum())} of {len(table)} cells within the tolerance "
              f"({int((table[[f'err_{k}' for k in stats if 'p99' in k]].abs() <= TOLERANCE['ttft_p99']).all(axis=1).sum())} within it on both P99s, "
              f"{int((table[[f'err_{k}' for k in stats if 'mean' in k]].abs() <= TOLERANCE['ttft_mean']).all(axis=1).sum())} on both means)."]
    return "\n".join(lines)


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-only", action="store_true",
                        help="keep length-table.csv's simulated columns, recompute the fast model's and rewrite the CSV and the page's block")
    args = parser.parse_args(argv)
    table = refit(pd.read_csv(CSV), lambda row: spread_system(row["design"], row["mode"], row["length_cv"])) if args.model_only else grid()
    regenerate(table, CSV, PAGE, BEGIN, END, render)
    return 0


if __name__ == "__main__":
    sys.exit(main())
