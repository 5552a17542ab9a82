"""Regenerate the fast model's validation table of docs/load.md: the chain's fast queueing
model (:mod:`mcengine.analytic.queueing`, through :func:`mcengine.standalone.serve.fast_latency`)
against the request-level simulator's mean and P99 TTFT and TPOT, for h100 and lite-h100
in each serving mode, Poisson and gamma (CV 2) arrivals, at loads 0.1 to 0.9 of the
roofline's saturated capacity, on :data:`INSTANCES` instances.

    python docs/load/make_fit_table.py           # rerun the grid, rewrite fit-table.csv and the page's block
    python docs/load/make_fit_table.py --mode static --print   # one mode's cells, printed (nothing written)

Each simulated point: :data:`REQUESTS` requests, seed 0, the first 20% left out. A
cell passes when the fast model is within 10% of the simulator's P99s and 5% of its
means (:data:`TOLERANCE`); the page's block lists the share of cells that pass and the
worst ones.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's mcengine
PAGE = ROOT / "docs" / "load.md"
CSV = HERE / "fit-table.csv"

sys.path.insert(0, str(HERE.parent / "serve"))
from make_load_table import ARRIVALS, DESIGNS, MODES, regenerate  # noqa: E402  (the serve load table's designs, modes and arrivals)

LOADS = tuple(round(0.1 * i, 1) for i in range(1, 10))
REQUESTS = 100_000
#: Instances simulated: each design's plan on 16 instances (the fast model is per instance
#: and pooled over them; 128 instances would hold 20,000 requests in flight near capacity).
INSTANCES = 16
#: Relative tolerance per statistic: 10% on the P99s, 5% on the means (issue 43).
TOLERANCE = {"ttft_p99": 0.10, "tpot_p99": 0.10, "ttft_mean": 0.05, "tpot_mean": 0.05}
BEGIN, END = "<!-- fit-table:begin -->", "<!-- fit-table:end -->"


def point(scenario, system, load: float, arrival: str, cv: float, requests: int = REQUESTS, seed: int = 0) -> dict:
    """One cell: the simulator's and the fast model's mean and P99 TTFT and TPOT (ms) and their relative errors."""
    from mcengine.standalone.serve import fast_latency, serve_summary

    demand = load * system.capacity_tokens_per_s
    body, _ = serve_summary(scenario, demand, requests, seed, arrival, cv, system.mode, system.instances)
    fast = fast_latency(system, demand / system.output_tokens, cv, 0.99)
    sim = {"ttft_p99": body["ttft_ms"]["p99"], "ttft_mean": body["ttft_ms"]["mean"], "tpot_p99": body["tpot_ms"]["p99"], "tpot_mean": body["tpot_ms"]["mean"]}
    model = {"ttft_p99": fast.ttft_q_s, "ttft_mean": fast.ttft_mean_s, "tpot_p99": fast.tpot_q_s, "tpot_mean": fast.tpot_mean_s}
    row = {"load": load, "arrival": arrival, "cv": cv, "utilisation": body["utilisation"]}
    for k, v in sim.items():
        m = float(model[k]) * 1e3
        row |= {f"sim_{k}_ms": v, f"fast_{k}_ms": m, f"err_{k}": m / v - 1.0}
    row["passes"] = all(abs(row[f"err_{k}"]) <= t for k, t in TOLERANCE.items())
    return row


def grid(loads=LOADS, requests: int = REQUESTS, modes=MODES) -> pd.DataFrame:
    """Every cell of the grid (of ``modes``): one row each."""
    from mcengine.scenario import load_scenario
    from mcengine.standalone.serve import serving_system

    rows = []
    for name in DESIGNS:
        scenario = load_scenario(name)
        for mode in modes:
            system = serving_system(scenario, mode, INSTANCES)
            for arrival, cv in ARRIVALS:
                for load in loads:
                    rows.append({"design": name, "mode": mode, **point(scenario, system, load, arrival, cv, requests)})
                    print(name, mode, arrival, load, file=sys.stderr)
    return pd.DataFrame(rows)


def render(table: pd.DataFrame) -> str:
    """The page's block: per design, mode and arrivals, the cells that pass and the worst error of each statistic."""
    head = "| design | mode | arrivals | cells within | worst P99 TTFT | worst mean TTFT | worst P99 TPOT | worst mean TPOT |"
    lines = [head, "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for (name, mode, arrival, cv), part in table.groupby(["design", "mode", "arrival", "cv"], sort=False):
        cells = []
        for k in ("ttft_p99", "ttft_mean", "tpot_p99", "tpot_mean"):
            worst = part.loc[part[f"err_{k}"].abs().idxmax()]
            cells.append(f"{worst[f'err_{k}']:+.0%} at {worst.load:g}")
        lines.append(f"| {name} | {mode} | {arrival}{'' if arrival == 'poisson' else f' CV {cv:g}'} | {int(part.passes.sum())}/{len(part)} | "
                     + " | ".join(cells) + " |")
    n = len(table)
    lines.append("")
    lines.append(f"{int(table.passes.sum())} of {n} cells within the tolerance.")
    return "\n".join(lines)


def main(argv=None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", action="append", choices=MODES, help="only this serving mode's cells (repeatable; default: every mode)")
    parser.add_argument("--print", dest="show", action="store_true", help="print the block and the cells; write neither the CSV nor the page")
    args = parser.parse_args(argv)
    table = grid(modes=tuple(args.mode or MODES))
    if args.show or args.mode:
        print(table.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
        print(render(table))
        return
    regenerate(table, CSV, PAGE, BEGIN, END, render)


if __name__ == "__main__":
    main()
