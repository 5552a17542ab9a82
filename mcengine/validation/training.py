"""`mcengine validate` checks of the training stage (docs/training.md#anchors): Daly's
expected wall time against a Monte Carlo of the same job, and the Llama 3 405B job on
H100s against its report (MFU at 8,192 GPUs: the fit of
``workload.training.compute_efficiency``; MFU at 16,384: held out; interruptions in 54
days and ETTR: the rates and the restart are derived from that job, so they check the
arithmetic, role "derived")."""

from __future__ import annotations

import numpy as np

from ..analytic import training as at
from ..scenario import load_scenario
from ..scenario.files import configs_dir
from ..scenario.sampling import quantile_inputs
from ..stages import training
from .check import Check, mc_check

STAGE = "training"
#: The training study's overrides of its H100 cluster (configs/studies/training-405b.toml).
LLAMA3_JOB = ('workload.kind="training"', 'workload.model="llama-3.1-405b"', "workload.bytes_per_param=1")
#: Half-width of the done-when bands: 15 % of the reported figure.
BAND = 0.15


def simulated_segment_hours(tau: float, delta: float, restart, mtbf: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """Wall time of ``n`` segments of ``tau`` compute and a ``delta`` checkpoint write, each
    retried after an exponential interruption (mean ``mtbf``, striking during restarts
    too) and a restart ``restart``: the model Daly's expression is exact for. ``restart``
    may be ``(lengths, probabilities)``: each restart's length drawn afresh (the kinds of
    interruption, some waiting for a replacement unit:
    :func:`mcengine.analytic.training.restart_with_swaps`)."""
    total, pending = np.zeros(n), np.ones(n, bool)
    while pending.any():
        idx = np.flatnonzero(pending)
        x = rng.exponential(mtbf, idx.size)
        done = x >= tau + delta
        total[idx[done]] += tau + delta
        total[idx[~done]] += x[~done]
        restarting = idx[~done]
        while restarting.size:  # a restart completes only without an interruption in it
            y = rng.exponential(mtbf, restarting.size)
            length = restart if np.isscalar(restart) else rng.choice(restart[0], restarting.size, p=restart[1])
            ok = y >= length
            total[restarting[ok]] += length if np.isscalar(length) else length[ok]
            total[restarting[~ok]] += y[~ok]
            restarting = restarting[~ok]
        pending[idx[done]] = False
    return total


def llama3_job(gpus: int) -> dict[str, float]:
    """The training stage's columns of Llama 3 405B on ``gpus`` of the study's 16,384-H100
    cluster at the median inputs."""
    s = load_scenario(str(configs_dir() / "training" / "train-h100.toml"), [*LLAMA3_JOB, f"workload.training.job_gpus={gpus}"])
    cols = training.training(s, quantile_inputs(s, 0.5), np.ones(1))
    return {k: float(v[0]) for k, v in cols.items()}


def checks() -> list[Check]:
    out = []
    mtbf, delta, restart = 3.0, 0.02, 0.25
    for tau in (0.15, 1.5, 6.0):
        wall = simulated_segment_hours(tau, delta, restart, mtbf, 100_000, np.random.default_rng(44))
        out.append(mc_check(STAGE, f"Daly's expected wall time per checkpoint segment, tau/M = {tau / mtbf:g}", wall,
                            tau * float(at.daly_wall_factor(tau, delta, restart, mtbf)),
                            f"M = {mtbf} h, delta = {delta} h, R = {restart} h; docs/training.md#ettr", "segments"))
    src = "Llama 3, arXiv:2407.21783 (docs/sources.md#train-llama3-job)"
    for gpus, mfu, role in ((8192, 0.43, "fit"), (16384, 0.41, "held-out")):
        out.append(Check(STAGE, f"calibration: Llama 3 405B BF16 MFU on {gpus:,} H100s", mfu, llama3_job(gpus)["mfu"], BAND * mfu,
                         f"[{role}] +-15 %; {src}", basis="measured"))
    job = llama3_job(16384)
    out.append(Check(STAGE, "Llama 3 405B job: interruptions in 54 days on 16,384 H100s", 419.0, job["job_interruptions_per_day"] * 54,
                     BAND * 419.0, "[derived: the shipped rates and the job fault classes come from these counts] +-15 %; "
                     "docs/sources.md#train-job-faults", basis="measured"))
    out.append(Check(STAGE, "Llama 3 405B job: effective training time ratio above 90 %", 0.95, job["ettr"], 0.05,
                     "[derived: restart_minutes is derived from the report's ~17 min per interruption] the report's band "
                     "(0.90, 1]; docs/sources.md#train-restart", basis="measured"))
    return out
