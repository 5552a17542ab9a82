"""Claim 7, fault tolerance in training: does a Lite cluster's finer failure domain carry
over to a synchronous training job, or do its extra packages and optics cost it there?

The paper argues that a Lite-GPU failure takes out a smaller share of the cluster (claim
3). A synchronous training job spans every unit it runs on: any interruption of any of
them stops all of it, which then loses the work since its last checkpoint and a restart
(docs/training.md). The Lite cluster with the silicon of 16,384 H100s has four times the
packages, each with its co-packaged optics and laser, so its job is interrupted more often.

Figure: the job's effective training time ratio (ETTR), Lite over H100, paired trial by
trial on the training study's clusters (configs/studies/training-405b.toml: Llama-3.1-405B,
15.6 T tokens); the claim holds in a trial where the Lite job's ETTR is at least the
H100 job's (ratio >= 1). Beside it the paired cost per trained token and the lost hours
a day by the unit the causes strike (gpu, host, nic, job).

* paper's reading: the finer failure domain as elastic training, the job training on
  without the failed unit's data-parallel replicas while a technician swaps it (2 h,
  docs/sources.md#train-elastic), both designs;
* shipped: hot spares that join within the restart, Llama 3's practice (the study as shipped).

The sweep moves the restart time on both sides (``workload.training.restart_minutes``):
the cost of each extra interruption. Every scenario of the claim shares its design's
lifetimes (one life-kernel run per design: the variants change training keys only).
"""

from __future__ import annotations

import numpy as np

from ..columns import JOB_PREFIXES
from ._common import Settings, boundary, entry, interval, paired_ratio, scenario, shared_chain, variant

PAPER_FIGURE = 1.0
#: The training study's clusters and job (configs/studies/training-405b.toml).
DESIGNS = {"h100": "training/train-h100.toml", "lite-h100": "training/train-lite-h100.toml"}
JOB = ('workload.kind="training"', 'workload.model="llama-3.1-405b"', "workload.bytes_per_param=2",
       'workload.training.compute_efficiency={dist="uniform", low=0.68, high=0.80}')
#: The paper's reading: elastic jobs waiting for a technician's swap (docs/sources.md#train-elastic).
ELASTIC = ("workload.training.elastic=true", "workload.training.swap_wait_minutes=120")
SWEEP_KEY = "workload.training.restart_minutes"
SWEEP_VALUES = (2.0, 5.0, 12.5, 25.0, 50.0)  # minutes; 12.5 is the shipped default
UNITS = ("gpu", "host", "nic", "job")
QUESTION = "does the Lite job train at least as effectively as the H100 job (ETTR Lite / H100 >= 1)?"


def designs() -> dict[str, object]:
    """The two training clusters with the study's job."""
    from ..scenario.files import configs_dir

    return {name: variant(scenario(str(configs_dir() / ref)), name, JOB) for name, ref in DESIGNS.items()}


def _columns(settings: Settings) -> tuple[dict, list[float]]:
    """Per-trial columns of every scenario of the claim, one paired run (the shipped and
    elastic readings and the sweep's restarts, both designs)."""
    base = designs()
    values = settings.grid(SWEEP_VALUES)
    runs = []
    for name, s in base.items():
        runs += [s, variant(s, f"{name}.elastic", ELASTIC)]
        runs += [variant(s, f"{name}.restart-{v:g}", [f"{SWEEP_KEY}={v!r}"]) for v in values]
    return shared_chain("fault_tolerance", runs, settings), values


def side(cols: dict, a: str, b: str) -> dict:
    """One reading's figures: the paired ETTR and cost per trained token ratios (B / A),
    P(holds), P(Lite cheaper per trained token), each job's interruptions a day and lost
    hours a day by unit (medians)."""
    ettr = paired_ratio(cols[b]["ettr"], cols[a]["ettr"])
    cost = paired_ratio(cols[b]["cost_per_mtok_trained_usd"], cols[a]["cost_per_mtok_trained_usd"])
    by_unit = JOB_PREFIXES[2] + "{}.per_day"
    return {"scenarios": [a, b], "figure": interval(ettr), "p_holds": float(np.mean(ettr >= PAPER_FIGURE)),
            "cost_per_trained_token_ratio": interval(cost), "p_lite_cheaper_per_trained_token": float(np.mean(cost < 1.0)),
            "job_interruptions_per_day": {n: interval(cols[n]["job_interruptions_per_day"]) for n in (a, b)},
            "ettr": {n: interval(cols[n]["ettr"]) for n in (a, b)},
            "lost_hours_per_day_by_unit": {n: {u: float(np.median(cols[n][by_unit.format(u)])) for u in UNITS} for n in (a, b)}}


def compute(settings: Settings) -> dict:
    settings.note("claim 7: fault tolerance in training")
    cols, values = _columns(settings)
    paper, shipped = side(cols, "h100.elastic", "lite-h100.elastic"), side(cols, "h100", "lite-h100")
    figures = [paired_ratio(cols[f"lite-h100.restart-{v:g}"]["ettr"], cols[f"h100.restart-{v:g}"]["ettr"]) for v in values]
    b = boundary(SWEEP_KEY, values, figures, lambda f: f >= PAPER_FIGURE, lambda f: f > 1.0,
                 "the training study's h100 and lite-h100 jobs (hot spares) at each restart time, both sides")
    cross = b["crossing_holds"]
    holds = (f"restart <= {cross[0]:.3g} min with hot spares" if cross else
             f"never over restarts of {values[0]:g}-{values[-1]:g} min with hot spares: the Lite job spans 4x the packages, "
             "each with its optics and laser") + f"; elastic jobs waiting 2 h for a swap: P(holds) {paper['p_holds']:.2f}"
    return entry(
        number=7, key="fault_tolerance", claim="A finer failure domain: a failure takes out a smaller share (in a synchronous training job)",
        metric="effective training time ratio, Lite / H100 (Llama-3.1-405B on the silicon of 16,384 H100s)",
        paper_figure=PAPER_FIGURE, paper_figure_text="no loss of effective training time (ETTR ratio >= 1)",
        source="the paper's fault-tolerance argument (claim 3) read for a synchronous job; no figure for training",
        confirmed=False, paper_assumptions=paper, shipped=shipped, boundary_=b, holds_when=holds, unit="ratio",
        model="training stage: job interruptions from the life kernel's events, Daly's ETTR at the optimal checkpoint interval, "
              "the step model's layout; paper: elastic jobs, 2 h technician swaps; shipped: hot spares within the restart",
        extra={"question": QUESTION},
    )
