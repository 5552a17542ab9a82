"""``[workload.training]``: the training job of ``workload.kind = "training"``
(docs/training.md). Sources: ``docs/sources.md`` (Training).

Read only when ``workload.kind = "training"``: an inference scenario's numbers do not
depend on these keys.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dists import Dist
from ...errors import Problem
from ..fields import AUTO, choice, flag, integer, number, parse_section

#: ``job_gpus``'s word for "every active GPU of the cluster".
ALL = "all"
#: ``checkpoint_interval_minutes``'s word for the interval of least expected time (per trial).
OPTIMAL = "optimal"
#: The job's interruption classes the hardware rates of ``[reliability]`` leave out
#: (Llama 3's software, NCCL, SDC and thermal interruptions), by key.
JOB_FAULT_KEYS = ("software_afr", "nccl_timeout_afr", "sdc_afr", "thermal_afr")

_RATE = dict(lo=0.0, hi=100.0, why="100 per H100-equivalent-year is one every 3.7 days per GPU: no job runs")
_SHARE = dict(lo=0.0, hi=1.0, why="a share")


@dataclass(frozen=True)
class TrainingSection:
    tokens: Dist = number(15.6e12, "Tokens to train (Llama 3 405B: 15.6 T; docs/sources.md#train-llama3-job).", "tokens",
                          lo=1e6, hi=1e16, why="10^16 tokens is ~600x Llama 3's pre-training")
    sequence_tokens: int = integer(8192, "Tokens per training sequence (Llama 3: 8,192; docs/sources.md#train-llama3-job).", "tokens",
                                   lo=1, hi=10**7, why="10^7 tokens is ~100x the longest context")
    global_batch_tokens: int = integer(16_777_216, "Tokens per optimizer step (Llama 3 405B: 16 M; docs/sources.md#train-llama3-job); "
                                       "global_batch_tokens / sequence_tokens sequences, at least one per data-parallel replica.",
                                       "tokens", lo=1, hi=10**10, why="10^10 tokens per step is ~600x Llama 3's batch")
    job_gpus: int | str = integer(ALL, 'GPUs of the one job: "all" = every active GPU of the cluster (cluster.instances x '
                                  "instance_gpus), or a number (several jobs share the cluster; the job pays its share of the "
                                  "cluster's cost).", "GPUs", lo=1, hi=2**24, auto_ok=True, auto_word=ALL, why="cluster.instances x instance_gpus bound")
    checkpoint_interval_minutes: Dist | str = number(
        OPTIMAL, 'Compute time between checkpoints: "optimal" = the interval of least expected wall time per trial (the exact '
        "minimiser of Daly's expression for the job's interruption rate and checkpoint cost, docs/training.md#ettr), or a number "
        "(or dist).", "minutes", lo=0.0, lo_open=True, hi=1e6, auto_ok=True, auto_word=OPTIMAL, why="~2 years between checkpoints")
    checkpoint_write_s: Dist | None = number(
        None, "Seconds the job stalls to write one checkpoint; unset: checkpoint_bytes_per_param x the model's parameters / "
        "checkpoint_gbps.", "s", lo=0.0, lo_open=True, hi=1e6, why="11 days per checkpoint write")
    checkpoint_bytes_per_param: Dist = number(
        14.0, "Checkpoint bytes per parameter: bf16 weights + fp32 master weights + Adam's two fp32 moments = 2 + 4 + 4 + 4 "
        "(docs/sources.md#train-checkpoint).", "bytes", lo=0.0, lo_open=True, hi=64.0, why="fp64 everything with room to spare")
    checkpoint_gbps: Dist = number(
        2000.0, "Aggregate write bandwidth of the job's checkpoints (Llama 3's Tectonic: 2 TB/s sustained, 7 TB/s peak; "
        "docs/sources.md#train-checkpoint).", "GB/s", lo=0.0, lo_open=True, hi=1e7, why="5,000x Llama 3's storage")
    restart_minutes: Dist = number(
        12.5, "Time from an interruption to training again (detection, rescheduling onto hot spares, reloading the checkpoint), "
        "derived from Llama 3's ~17 min lost per interruption (docs/sources.md#train-restart).", "minutes",
        lo=0.0, hi=1e5, why="~70 days per restart: no job")
    swap_wait_minutes: Dist = number(
        0.0, "Time from a permanent failure (a unit to replace: a component class's permanent failures, the host's) until "
        "its replacement can join the job, counted from the interruption; 0 = a hot spare joins within the restart, as "
        "Llama 3's ~17 min lost per interruption implies (docs/sources.md#train-elastic). Beyond restart_minutes the job "
        "waits for it, or with elastic = true trains on without the lost replicas.", "minutes",
        lo=0.0, hi=1e5, why="~70 days per swap: no job")
    elastic: bool = flag(False, "Elastic data parallelism: after a permanent failure the job restarts (restart_minutes) on the "
                                "data-parallel replicas left and trains at their share of the throughput until the replacement "
                                "joins (swap_wait_minutes), instead of standing idle for it (docs/training.md#elastic).")
    software_afr: Dist = number(0.0223, "Job interruptions by software bugs per H100-equivalent-year (Llama 3: 54 in 54 days; "
                                        "docs/sources.md#train-job-faults).", "1/year", **_RATE)
    nccl_timeout_afr: Dist = number(0.0029, "Job interruptions by NCCL watchdog timeouts per H100-equivalent-year (Llama 3: 7; "
                                            "docs/sources.md#train-job-faults).", "1/year", **_RATE)
    sdc_afr: Dist = number(0.0025, "Job interruptions by silent data corruption per H100-equivalent-year (Llama 3: 6; "
                                   "docs/sources.md#train-job-faults).", "1/year", **_RATE)
    thermal_afr: Dist = number(0.0025, "Job interruptions by GPU thermal interface and sensor faults per H100-equivalent-year "
                                       "(Llama 3: 6; docs/sources.md#train-job-faults).", "1/year", **_RATE)
    job_faults_per: str = choice(
        "h100_equivalent", 'What the four job fault rates above count per: "h100_equivalent" (silicon: a Lite-GPU of a quarter H100 '
        'has a quarter of the rate) or "gpu" (every package, every rank, whatever its size).', ("h100_equivalent", "gpu"))
    compute_efficiency: Dist | str = number(
        0.74, "Achieved share of peak FLOP/s in the training GEMMs, fitted to Llama 3 405B's 43 % MFU on 8,192 H100s "
        '(docs/training.md#anchors); "auto" = workload.compute_efficiency in use (the roofline\'s precision table).', auto_ok=True, lo=0.0, lo_open=True, hi=1.0, why="a share of the peak")
    tp_overlap: Dist = number(0.0, "Share of tensor-parallel collective time hidden under compute (Megatron-LM exposes it by "
                                   "default; docs/sources.md#train-overlap).", **_SHARE)
    dp_overlap: Dist = number(0.9, "Share of the data-parallel reduce-scatter and all-gather hidden under the backward and forward "
                                   "passes (Megatron-LM's overlap-grad-reduce / overlap-param-gather; docs/sources.md#train-overlap).",
                              **_SHARE)
    virtual_stages: int = integer(4, "Interleaved pipeline chunks per GPU v: bubble (p - 1) / (v m + p - 1) (Megatron-LM's "
                                     "interleaved 1F1B, used by Llama 3; docs/sources.md#train-pipeline); at most the layers per stage.",
                                  lo=1, hi=1024, why="more chunks than any model's layers per stage")
    activation_factor: Dist = number(
        34.0, "Activation bytes per token per layer per hidden unit without recomputation, with sequence parallelism (Korthikanti et "
        "al. 2022: 34 s b h / t; docs/sources.md#train-activations).", "bytes", lo=0.0, lo_open=True, hi=1e3, why="30x the published 34")
    sharding: str = choice(AUTO, 'Optimizer sharding over data-parallel ranks: "zero1" (optimizer states), "zero3" (states, gradients '
                                 'and weights, gathered per layer), or "auto" = the planner picks per trial.', (AUTO, "zero1", "zero3"))
    recompute: str = choice(AUTO, 'Activation recomputation: "none", "full" (each layer\'s input kept, the forward run again in the '
                                  'backward) or "auto" = the planner picks per trial.', (AUTO, "none", "full"))


def parse_training(raw, key: str, problems: list[Problem]) -> TrainingSection | None:
    """``[workload.training]`` (its defaults when absent)."""
    if raw is None:
        return TrainingSection()
    if not isinstance(raw, dict):
        problems.append(Problem(key, raw, "allowed: a table of training keys, e.g. [workload.training] tokens = 15.6e12"))
        return None
    return parse_section(TrainingSection, raw, f"{key}.", problems)
