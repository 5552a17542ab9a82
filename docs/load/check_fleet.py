"""The fleet the chain buys, checked in the request-level simulator (docs/load.md#fleet-check).

For each design of the shipped study ``load-diurnal`` (``cluster.instances = "auto"``), at
the median inputs: the chain's own pipeline (:func:`mcengine.pipeline.run_block` on
:func:`~mcengine.scenario.sampling.quantile_inputs`) gives the plan the planner under load
chooses and ``U``, the fewest up instances whose per-mode model meets both SLO quantiles at
the peak (``load.fleet_instances - load.headroom_instances``; the same count as the load
stage's :func:`~mcengine.stages.load.fewest_instances` on its :class:`~mcengine.stages.load.Plans`,
asserted). The peak demand (mean x peak-to-mean) is then simulated on ``U`` and ``U - 1``
instances of that plan (:func:`mcengine.standalone.serve.simulate_requests` and
:func:`~mcengine.standalone.serve.latency_summary`, the study's
arrivals) and the simulator's P99 TTFT and P99 TPOT are set beside the chain's model
(:meth:`Plans.latency` at the same rate and count) and the SLOs.

``mcengine serve`` simulates the plan the roofline serves at saturation
(:func:`~mcengine.standalone.serve.serving_system`); the check simulates the best plan of
the serving mode the planner under load chose and fails (exit 1) unless its description,
top batch and tokens/s per instance are the load plan's.

Each point is :data:`REPLICATIONS` independent runs of the simulator (its replication
streams), each measured after its first :data:`WARMUP` share of requests; the P99 is their
mean and its standard error their spread over ``sqrt(REPLICATIONS)`` (consecutive batches
of one run are not independent near the saturated rate: their P99s wander for 100,000
requests and more).

    python docs/load/check_fleet.py              # every design: rewrite fleet-check.csv and the page's block
    python docs/load/check_fleet.py --design h100 --requests 100000
                                                 # a part, or other run lengths: printed (nothing rewritten)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's mcengine
PAGE = ROOT / "docs" / "load.md"
CSV = HERE / "fleet-check.csv"
BEGIN, END = "<!-- fleet-check:begin -->", "<!-- fleet-check:end -->"

STUDY = "load-diurnal"
#: The study's designs checked (lite-h100-2x-fastswap differs from lite-h100-2x in reliability alone).
DESIGNS = ("h100", "lite-h100", "lite-h100-2x")
#: Requests simulated per run: near the saturated rate the fleet's 14,000-17,000 requests in
#: flight turn over about every 12 s; 200,000 requests span about 170 s at the peak.
REQUESTS = 200_000
#: Share of the first requests left out (the simulator starts empty).
WARMUP = 0.25
#: Independent runs (the simulator's replication streams) whose spread gives the P99s' standard errors.
REPLICATIONS = 8
SEED = 0


def chain_fleet(name: str) -> dict:
    """The chain at the median inputs of ``name`` in :data:`STUDY`: its scenario and inputs,
    the plan the planner under load chooses (at the served availability of the pipeline's
    one reliability lifetime, seed :data:`SEED`, which the choice reads for the energy of the
    demand), that plan's per-mode model (:class:`Plans`), the peak rate (requests/s) and ``U``."""
    from mcengine.pipeline import planning_demand, run_block
    from mcengine.scenario import load_scenario
    from mcengine.scenario.load import load_study
    from mcengine.scenario.sampling import quantile_inputs
    from mcengine.stages import econ, load
    from mcengine.stages.roofline import planner
    from mcengine.standalone.roofline import plan_weight

    scenario = load_scenario(name, load_study(STUDY)["set"])
    median = quantile_inputs(scenario, 0.5)
    columns = run_block(scenario, SEED, 0, 1, median)
    demand = planning_demand(scenario, median, econ.served_availability(scenario, columns), columns["instance_availability"])
    weight = plan_weight(scenario, median)
    plan = planner.plan_per_trial(scenario, median, weight, None, demand).plan_of(0)
    saturated_plan = planner.plan_per_trial(scenario, median, weight).plan_of(0)
    plans = load.Plans.of(scenario, median, columns)
    mean, peak_to_mean = (float(x[0]) for x in load.demand_of(median))
    out = columns["output_tokens_per_request"]
    rate = mean * peak_to_mean / out
    up = float(columns["load.fleet_instances"][0] - columns["load.headroom_instances"][0])
    searched = float(load.fewest_instances(plans, rate, columns["tokens_per_s_instance"] / out)[0])
    if up != searched:
        raise SystemExit(f"{name}: the chain's fleet has {up:g} up instances, fewest_instances finds {searched:g}")
    return {"scenario": scenario, "plan": plan, "saturated_plan": saturated_plan, "plans": plans, "columns": columns,
            "peak_tokens_per_s": mean * peak_to_mean, "rate_per_s": float(rate[0]), "up": int(up),
            "arrival": scenario.workload.load.arrival, "arrival_cv": float(load.arrival_cv(scenario, median)[0])}


def simulated(fleet: dict, instances: int, requests: int, replications: int = REPLICATIONS, seed: int = SEED) -> dict:
    """The simulator's P99 TTFT and TPOT (ms: the mean over ``replications`` independent runs
    of ``requests`` requests, each measured after its first :data:`WARMUP` share) and their
    standard errors (the runs' spread over ``sqrt(replications)``), and the utilisation, of
    the fleet's plan on ``instances`` instances at the peak; beside them the chain's model at
    the same rate and count."""
    from mcengine.standalone.serve import latency_summary, serving_system, simulate_requests

    scenario, plan, columns = fleet["scenario"], fleet["plan"], fleet["columns"]
    system = serving_system(scenario, plan.mode, instances)
    same = (system.plan == plan.describe() and system.batch_max == int(columns["batch"][0])
            and system.capacity_tokens_per_s == instances * float(columns["tokens_per_s_instance"][0]))
    if not same:
        raise SystemExit(f"{scenario.name}: serve's best {plan.mode} plan ({system.plan}, batch {system.batch_max}) is not the plan "
                         f"the planner under load chose ({plan.describe()}, batch {int(columns['batch'][0])})")
    runs = []
    for r in range(replications):
        df, busy = simulate_requests(system, fleet["rate_per_s"], requests, seed, r, fleet["arrival"], fleet["arrival_cv"])
        runs.append(latency_summary(df, busy, system, WARMUP))
    model = fleet["plans"].latency(fleet["rate_per_s"], float(instances))
    row = {"design": scenario.name, "plan": system.plan, "instances": instances, "load": fleet["rate_per_s"] * system.output_tokens / system.capacity_tokens_per_s,
           "utilisation": float(np.mean([x["utilisation"] for x in runs])), "requests": requests, "replications": replications}
    for k, slo in (("ttft", system.ttft_slo_s), ("tpot", system.tpot_slo_s)):
        p99 = np.array([x[f"{k}_ms"]["p99"] for x in runs])
        row |= {f"sim_{k}_p99_ms": float(p99.mean()), f"sem_{k}_p99_ms": float(p99.std(ddof=1) / np.sqrt(replications)),
                f"chain_{k}_p99_ms": float(getattr(model, f"{k}_q_s")[0]) * 1e3, f"{k}_slo_ms": slo * 1e3}
    return row


def check(names=DESIGNS, requests: int = REQUESTS, replications: int = REPLICATIONS) -> pd.DataFrame:
    """One row per design and count (``U``, ``U - 1``)."""
    rows = []
    for name in names:
        fleet = chain_fleet(name)
        if fleet["plan"] != fleet["saturated_plan"]:
            print(f"{name}: the planner under load chose {fleet['plan'].describe()}, at saturation {fleet['saturated_plan'].describe()}", file=sys.stderr)
        for count in (fleet["up"], fleet["up"] - 1):
            rows.append(simulated(fleet, count, requests, replications))
            print(name, count, file=sys.stderr)
    return pd.DataFrame(rows)


def render(table: pd.DataFrame) -> str:
    """The page's table: per design and count, the simulator's P99s (± SEM) beside the chain's and the SLOs."""

    def ms(x):
        return "inf" if not np.isfinite(x) else f"{x:,.1f}"

    lines = ["| design | plan | up instances | load | P99 TTFT sim ± SEM / chain / SLO, ms | P99 TPOT sim ± SEM / chain / SLO, ms |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in table.itertuples():
        lines.append(f"| {r.design} | {r.plan} | {r.instances} | {r.load:.4f} | {ms(r.sim_ttft_p99_ms)} ± {ms(r.sem_ttft_p99_ms)} / "
                     f"{ms(r.chain_ttft_p99_ms)} / {r.ttft_slo_ms:g} | {ms(r.sim_tpot_p99_ms)} ± {r.sem_tpot_p99_ms:.2f} / "
                     f"{ms(r.chain_tpot_p99_ms)} / {r.tpot_slo_ms:g} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--design", default=",".join(DESIGNS), help=f"comma-separated subset of {','.join(DESIGNS)}")
    parser.add_argument("--requests", type=int, default=REQUESTS, help="requests simulated per run")
    parser.add_argument("--replications", type=int, default=REPLICATIONS, help="independent runs per point")
    args = parser.parse_args(argv)
    names = tuple(args.design.split(","))
    if not set(names) <= set(DESIGNS):
        parser.error(f"--design {args.design}: allowed a comma-separated subset of {','.join(DESIGNS)}")
    if names == DESIGNS and args.requests == REQUESTS and args.replications == REPLICATIONS:
        sys.path.insert(0, str(HERE.parent / "serve"))
        from make_load_table import regenerate  # the serve load table's writer: the CSV, then the page's block rendered from it

        regenerate(check(), CSV, PAGE, BEGIN, END, render)
        print(render(pd.read_csv(CSV)))
        return 0
    print(render(check(names, args.requests, args.replications)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
