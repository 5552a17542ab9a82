"""Chain trials/s with a demand (the load stage, the per-trial choice under load and the
fleet bought, docs/load.md) against ``"saturate"``: the same trials of the case study's
designs through :func:`mcengine.pipeline.run_chunk`, warmed up outside the timer, the
cases timed in alternation (saturate, fixed cluster, fleet bought, saturate, ...: a shared
machine's drift falls on all alike), the best of each, in wall seconds and in this
process's CPU seconds (user + system of every thread, what a shared machine's other jobs
disturb least); the ratios of the times per trial are what the demand costs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcengine import api
from mcengine.pipeline import run_chunk

#: The case study's designs; the demand and fleet of configs/studies/load-diurnal.toml.
DESIGNS = ("h100", "lite-h100", "lite-h100-2x", "lite-h100-2x-fastswap")
DEMAND = ["workload.load.demand=200000", "workload.load.peak_to_mean=1.5", 'cluster.instances="auto"']
#: The cases timed: saturated, the demand on the scenarios' fixed clusters, the fleet bought.
CASES = {"saturate": [], "fixed": DEMAND[:2], "demand": DEMAND}
#: With ``mix``: the shipped Azure 2023 mix of request classes (docs/load.md#chain) in place
#: of the case study's designs, its h100 and lite-h100.
MIX_DESIGNS = tuple(str(Path(__file__).resolve().parents[2] / "docs" / "case-study" / "mix-azure-2023" / f"{n}.toml") for n in ("h100", "lite-h100"))


def _seconds(scenarios: tuple, start: int, trials: int) -> tuple[float, float]:
    """Wall and CPU seconds of one chunk of ``trials`` of ``scenarios`` from trial ``start``."""
    wall, cpu = time.perf_counter(), time.process_time()
    run_chunk(scenarios, 0, start, trials)
    return time.perf_counter() - wall, time.process_time() - cpu


def run(quick: bool = False, mix: bool = False) -> dict:
    """Trials/s of the case study (with ``mix``, the Azure 2023 mix, :data:`MIX_DESIGNS`)
    saturated, at the load-diurnal demand on fixed clusters and with the fleet bought (the
    best of ``repeats`` alternating chunks each, after a warm-up of each), and the ratios of
    their times per trial to saturation's, wall and CPU."""
    trials, repeats = (256, 1) if quick else (2048, 3)
    cases = {k: tuple(api.check(n, v) for n in (MIX_DESIGNS if mix else DESIGNS)) for k, v in CASES.items()}
    for scenarios in cases.values():
        run_chunk(scenarios, 0, 0, min(trials, 64))
    wall, cpu = dict.fromkeys(cases, float("inf")), dict.fromkeys(cases, float("inf"))
    for r in range(repeats):
        for k, scenarios in cases.items():
            w, c = _seconds(scenarios, (r + 1) * trials, trials)
            wall[k], cpu[k] = min(wall[k], w), min(cpu[k], c)
    return {"trials": trials, "repeats": repeats, "demand": DEMAND, "saturate_trials_per_s": trials / wall["saturate"],
            "demand_trials_per_s": trials / wall["demand"], "fixed_trials_per_s": trials / wall["fixed"],
            "time_per_trial_ratio": wall["demand"] / wall["saturate"], "fixed_time_per_trial_ratio": wall["fixed"] / wall["saturate"],
            "cpu_time_per_trial_ratio": cpu["demand"] / cpu["saturate"], "fixed_cpu_time_per_trial_ratio": cpu["fixed"] / cpu["saturate"]}


#: The ratios :func:`side_by_side` reports per round.
RATIOS = ("time_per_trial_ratio", "fixed_time_per_trial_ratio", "cpu_time_per_trial_ratio", "fixed_cpu_time_per_trial_ratio")


def _in_child(root: Path, quick: bool, mix: bool = False) -> dict:
    """:func:`run` in a fresh process importing the tree at ``root``, with the load average
    at its end."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    argv = ["load", *(["--quick"] if quick else []), *(["--mix"] if mix else [])]
    code = f"import runpy, sys; sys.argv = {argv!r}; runpy.run_path({str(Path(__file__).resolve())!r}, run_name='__main__')"
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"the load harness failed in {root}: {proc.stderr[-2000:]}")
    return {**json.loads(proc.stdout), "load_average": os.getloadavg()}


def side_by_side(against: str, quick: bool = False, mix: bool = False) -> dict:
    """:func:`run` on this tree (``after``) and on a checkout of ``against`` (``before``),
    interleaved: ``rounds`` fresh processes each, alternately (the first of a tree compiles
    its kernels outside the timers), each round's ratios and the load average at its end;
    ``best`` the least of each ratio over the rounds."""
    from .compile import ROOT, _checkout

    rounds = 1 if quick else 3
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"before": _checkout(against, tmp), "after": ROOT}
        docs: dict = {side: [] for side in trees}
        for _ in range(rounds):
            for side, root in trees.items():
                docs[side].append(_in_child(root, quick, mix))
    per_round = {side: [{k: d[k] for k in (*RATIOS, "load_average")} for d in got] for side, got in docs.items()}
    best = {side: {k: min(d[k] for d in got) for k in RATIOS} for side, got in docs.items()}
    return {"against": against, "mix": mix, "rounds": rounds, "per_round": per_round, "best": best, "runs": docs}


if __name__ == "__main__":  # the child of side_by_side: this harness on the tree PYTHONPATH names
    print(json.dumps(run("--quick" in sys.argv, "--mix" in sys.argv)))
