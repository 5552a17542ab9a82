"""The static mode's fast model against the simulator across pool sizes (docs/load.md#fleet-size):
the fit table's static cells (:mod:`make_fit_table`: h100 and lite-h100, Poisson and gamma CV 2
arrivals, loads 0.1 to 0.9 of the roofline's capacity) on :data:`POOLS` instances, where the
chain's bought fleets (90-120 instances in ``load-diurnal``) are far from the fit table's 16.

    python docs/load/fleet_size.py                 # rerun the grid, rewrite fleet-size-table.csv and the page's block
    python docs/load/fleet_size.py --model-only    # the fast model's columns anew, the simulated ones kept
    python docs/load/fleet_size.py --instances 4,128 --loads 0.2
                                                   # a part of the grid, printed (nothing rewritten)
    python docs/load/fleet_size.py --waits --design h100 --arrival poisson --loads 0.2,0.3,0.4
                                                   # a part's waits in the simulator (:func:`waits`), printed

Each simulated cell: one run of seed 0 of :func:`requests_of` requests (in proportion to the
pool, so that a run spans as many batch cycles of one instance on every pool), MSER-5's
warm-up left out, each statistic with its standard error by sectioning (the ``sim_*_sem_ms``
columns; docs/load.md#estimates). ``a/c`` is ``lambda T(1) / c``, the arrivals one instance
gets in a lone request's cycle. A cell passes as in the fit table (10 % on the P99s, 5 % on
the means).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from make_fit_table import ARRIVALS, DESIGNS, LOADS, PAGE, TOLERANCE, point, refit, regenerate  # noqa: E402  (the fit table's grid and criterion)

CSV = HERE / "fleet-size-table.csv"
BEGIN, END = "<!-- fleet-size:begin -->", "<!-- fleet-size:end -->"
#: Instances simulated (the fit table's 16 among them).
POOLS = (4, 8, 16, 32, 64, 128)
#: Requests a cell per instance, and the least a cell (the fit table's 200,000 up to 16 instances).
REQUESTS_PER_INSTANCE, LEAST_REQUESTS = 12_500, 200_000
#: The most requests a ``--waits`` cell (its per-request rows are grouped by batch).
WAIT_REQUESTS = 400_000


def requests_of(instances: int) -> int:
    """Requests simulated on ``instances`` instances: :data:`REQUESTS_PER_INSTANCE` each, at least :data:`LEAST_REQUESTS`."""
    return max(LEAST_REQUESTS, REQUESTS_PER_INSTANCE * instances)


def pool_system(design: str, instances: int):
    """The serving system of a cell: ``design``'s static plan on ``instances`` instances."""
    from mcengine.scenario import load_scenario
    from mcengine.standalone.serve import serving_system

    return serving_system(load_scenario(design), "static", instances)


def offered_per_instance(system, load: float) -> float:
    """``a/c = lambda T(1) / c`` at ``load`` (a lone request's cycle ``prefill(1) + (O - 1) decode(1)``)."""
    rate = load * system.capacity_tokens_per_s / system.output_tokens
    return rate * (system.prefill_s[1] + (system.output_tokens - 1) * system.decode_s[1]) / system.instances


def grid(pools=POOLS, loads=LOADS, designs=DESIGNS, arrivals=ARRIVALS) -> pd.DataFrame:
    """Every cell asked: one row each (the fit table's columns, with ``instances``, ``a/c`` and ``requests``)."""
    from mcengine.scenario import load_scenario

    rows = []
    for name in designs:
        scenario = load_scenario(name)
        for c in pools:
            system = pool_system(name, c)
            for arrival, cv in arrivals:
                for load in loads:
                    n = requests_of(c)
                    cell = point(scenario, system, load, arrival, cv, n)
                    rows.append({"design": name, "mode": "static", "instances": c, "a/c": offered_per_instance(system, load), "requests": n, **cell})
                    print(name, c, arrival, load, file=sys.stderr)
    return pd.DataFrame(rows)


def waits(design: str, instances: int, load: float, arrival: str, cv: float, requests: int) -> dict:
    """One cell's waits in the simulator (``--waits``; :mod:`static_gaps`' reading of the
    per-request rows: a batch is the requests sharing an instance and a first token): the
    mean batch ``k``, the share of requests finding an instance idle (``idle``; the model's
    beside it), a waiting request's mean wait ``W`` (s) and its P99 (s), ``n_eff = T(k) / W``
    (``c + 1`` for independent phases) and the fast model's ``W``, ``g (1 + c_g^2) / 2``."""
    import numpy as np

    from mcengine.analytic import queue_static as qs
    from mcengine.scenario import load_scenario
    from mcengine.standalone.serve import serve_summary
    from static_gaps import batch_rows, gap_measures

    s = pool_system(design, instances)
    top, o = s.batch_max, s.output_tokens
    cycle_1, cycle_top = s.prefill_s[1] + (o - 1) * s.decode_s[1], s.prefill_s[top] + (o - 1) * s.decode_s[top]
    rate = load * s.capacity_tokens_per_s / o
    _, df = serve_summary(load_scenario(design), load * s.capacity_tokens_per_s, requests, 0, arrival, cv, "static", instances)
    start, batches = batch_rows(df, s.prefill_s)
    kept = df.measured.to_numpy()
    wait = (start - df.arrival_s.to_numpy())[kept]
    wait = wait[wait > 1e-9]
    k = float(batches["size"][batches.measured.to_numpy()].mean())
    gaps = qs.completion_gaps(rate, instances, cycle_1, cycle_top, top, qs.STATIC_GAP_CV2, cv)
    return {"design": design, "instances": instances, "arrival": arrival, "load": load, "k": k, "idle": gap_measures(df, (start, batches))["idle"],
            "idle model": float(gaps.idle_probability), "W": float(wait.mean()), "W p99": float(np.quantile(wait, 0.99)),
            "n_eff": (cycle_1 + (cycle_top - cycle_1) / max(top - 1, 1) * (k - 1.0)) / float(wait.mean()),
            "W model": float(gaps.gap_s * (1.0 + 1.0 / gaps.shape) / 2.0)}


def render(table: pd.DataFrame) -> str:
    """The page's block: per design, arrivals and pool, the cells that pass and the worst error of each TTFT statistic."""
    lines = ["| design | arrivals | instances | cells within | worst P99 TTFT | worst mean TTFT | largest SEM/P99 |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for (name, arrival, cv, c), part in table.groupby(["design", "arrival", "cv", "instances"], sort=False):
        cells = []
        for k in ("ttft_p99", "ttft_mean"):
            worst = part.loc[part[f"err_{k}"].abs().idxmax()]
            cells.append(f"{worst[f'err_{k}']:+.0%} at {worst.load:g}")
        sem = (part.sim_ttft_p99_sem_ms / part.sim_ttft_p99_ms).max()
        lines.append(f"| {name} | {arrival}{'' if arrival == 'poisson' else f' CV {cv:g}'} | {c} | {int(part.passes.sum())}/{len(part)} | "
                     + " | ".join(cells) + f" | {sem:.1%} |")
    lines.append("")
    per_pool = ", ".join(f"{c}: {int(p.passes.sum())}/{len(p)}" for c, p in table.groupby("instances"))
    lines.append(f"{int(table.passes.sum())} of {len(table)} cells within the tolerance (by instances: {per_pool}).")
    return "\n".join(lines)


def model_only(table: pd.DataFrame) -> pd.DataFrame:
    """The committed table with its fast-model columns recomputed (the simulated ones kept)."""
    return refit(table, lambda row: pool_system(row["design"], int(row["instances"])))


def main(argv=None) -> int:
    """The whole grid rewrites fleet-size-table.csv and the page's block; ``--model-only`` the
    fast columns of the committed CSV; a part (``--instances``, ``--design``, ``--arrival``,
    ``--loads``) is printed."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", default=None, help="comma-separated pool sizes")
    parser.add_argument("--design", default=None, help=f"comma-separated subset of {','.join(DESIGNS)}")
    parser.add_argument("--arrival", default=None, help=f"comma-separated subset of {','.join(a for a, _ in ARRIVALS)}")
    parser.add_argument("--loads", default=None, help="comma-separated loads (fractions of capacity)")
    parser.add_argument("--model-only", action="store_true", help="keep the CSV's simulated columns, recompute the fast model's")
    parser.add_argument("--waits", action="store_true", help="print the part's waits in the simulator instead (at most 400,000 requests a cell)")
    args = parser.parse_args(argv)
    part = (args.instances, args.design, args.arrival, args.loads)
    if args.model_only:
        if part != (None, None, None, None):
            parser.error("--model-only: allowed alone (it refits the whole committed table)")
        regenerate(model_only(pd.read_csv(CSV)), CSV, PAGE, BEGIN, END, render)
        return 0
    if part == (None, None, None, None) and not args.waits:
        regenerate(grid(), CSV, PAGE, BEGIN, END, render)
        return 0
    pools = POOLS if args.instances is None else tuple(int(x) for x in args.instances.split(","))
    designs = DESIGNS if args.design is None else tuple(args.design.split(","))
    names = tuple(a for a, _ in ARRIVALS)
    arrivals = ARRIVALS if args.arrival is None else tuple(a for a in ARRIVALS if a[0] in args.arrival.split(","))
    loads = LOADS if args.loads is None else tuple(float(x) for x in args.loads.split(","))
    if not set(designs) <= set(DESIGNS) or not (args.arrival is None or set(args.arrival.split(",")) <= set(names)):
        parser.error(f"--design / --arrival: allowed subsets of {','.join(DESIGNS)} / {','.join(names)}")
    if not all(c >= 1 for c in pools) or not all(0.0 < x < 1.0 for x in loads):
        parser.error("--instances: whole numbers >= 1; --loads: strictly between 0 and 1")
    if args.waits:
        rows = [waits(name, c, x, a, cv, min(requests_of(c), WAIT_REQUESTS)) for name in designs for c in pools for a, cv in arrivals for x in loads]
        print(pd.DataFrame(rows).to_string(index=False, float_format="{:.3f}".format))
        return 0
    table = grid(pools, loads, designs, arrivals)
    cols = ["design", "instances", "arrival", "load", "a/c", *(f"err_{k}" for k in TOLERANCE), "passes"]
    print(table[cols].to_string(index=False, float_format="{:+.3f}".format))
    print(render(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
