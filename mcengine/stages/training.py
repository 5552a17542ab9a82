"""Training stage: one synchronous job of ``workload.kind = "training"`` on the cluster
(docs/training.md).

Per trial: the job's step model and layout (:func:`mcengine.analytic.training.plan`), its
interruption rate from every unit it spans, its checkpoint interval and effective
training time ratio (Daly's expression, :func:`mcengine.analytic.training.ettr`), the
time to train ``workload.training.tokens`` and the cost per million trained tokens.

**Interruptions.** Any interruption of any unit of the job stops all of it. The job's
rate is the long-run (renewal) rate of every unit it spans, closed form per trial: for
each component class ``count x (1/MTTF + transient_afr)`` per GPU, per host or per NIC
(the ``[reliability]`` laws: ``1/MTTF`` = the rate of renewals of a unit replaced on
failure, whatever the Weibull shape), the host's ``host_afr + host_transient_afr`` per
host, times the job's GPUs, hosts (``job_gpus / gpus_per_host``) and NICs
(``job_gpus / gpus_per_nic``); plus the causes the hardware rates leave out (software,
NCCL timeouts, silent data corruption, thermal: ``[workload.training]``'s four rates,
per H100-equivalent or per GPU). Interruptions are taken as exponential at that rate
(Daly's model); a failed unit is replaced from the spare pool within the restart. The
wall time neither useful nor spent writing checkpoints (rollbacks and restarts,
``1 - ETTR (tau + delta) / tau``) is lost hours, split among the causes in proportion
to their rates (competing exponential risks): ``job_lost_hours.<cause>.per_day``.

**Cost.** The job pays its share ``job_gpus / active GPUs`` of the cluster's cost per
hour, the econ stage's total over the horizon at full load (``busy_fraction = 1``,
computed by the pipeline) divided by the horizon's hours.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ..analytic import training as at
from ..analytic.reliability import weibull_rate_per_hour
from ..analytic.roofline.weights import params_total
from ..errors import InputError, Problem
from ..scenario import Scenario
from ..scenario.sampling import TrialInputs
from ..scenario.sections.training import ALL, JOB_FAULT_KEYS, OPTIMAL
from ..units import HOURS_PER_YEAR

_KEY = "workload.training."
SECONDS_PER_HOUR, HOURS_PER_DAY, TOKENS_PER_MTOK = 3600.0, 24.0, 1e6


def job_gpus(scenario: Scenario) -> int:
    """The job's GPUs (``"all"``: every active GPU); InputError above the active GPUs."""
    wanted = scenario.workload.training.job_gpus
    if wanted == ALL:
        return scenario.active_gpus
    if wanted > scenario.active_gpus:
        raise InputError(Problem(_KEY + "job_gpus", wanted, f'allowed: "all" or at most the cluster\'s {scenario.active_gpus:,} '
                                 "active GPUs (cluster.instances x cluster.instance_gpus)"))
    return int(wanted)


def interruptions_per_hour(scenario: Scenario, inputs: TrialInputs, gpus: int) -> dict[str, np.ndarray]:
    """The job's interruption rate per hour by cause: each component class, ``host``, and
    the four job fault classes (module text)."""
    rel, cluster = scenario.reliability, scenario.cluster
    units = {"gpu": gpus, "host": gpus / cluster.gpus_per_host, "nic": gpus / cluster.gpus_per_nic}
    out = {}
    for name, comp in rel.components:
        key, prefix = comp.law_key(), f"reliability.components.{name}."
        permanent = 0.0
        if key is not None:
            shape = inputs[prefix + "weibull_shape"]
            permanent = weibull_rate_per_hour(key, inputs[prefix + key], shape) / special.gamma(1.0 + 1.0 / shape)
        out[name] = comp.count * units[comp.per] * (permanent + inputs[prefix + "transient_afr"] / HOURS_PER_YEAR)
    out["host"] = units["host"] * (inputs["reliability.host_afr"] + inputs["reliability.host_transient_afr"]) / HOURS_PER_YEAR
    t = scenario.workload.training
    silicon = gpus * (scenario.gpu.h100_equivalents.value if t.job_faults_per == "h100_equivalent" else 1.0)
    for key in JOB_FAULT_KEYS:
        out[key.removesuffix("_afr")] = silicon * inputs[_KEY + key] / HOURS_PER_YEAR
    return out


def checkpoint_hours(scenario: Scenario, inputs: TrialInputs) -> np.ndarray:
    """One checkpoint write: ``checkpoint_write_s``, else the checkpoint's bytes over ``checkpoint_gbps``."""
    t = scenario.workload.training
    if t.checkpoint_write_s is not None:
        return inputs[_KEY + "checkpoint_write_s"] / SECONDS_PER_HOUR
    nbytes = inputs[_KEY + "checkpoint_bytes_per_param"] * params_total(scenario.workload.model)
    return nbytes / (inputs[_KEY + "checkpoint_gbps"] * 1e9) / SECONDS_PER_HOUR


def training_peak_tflops(scenario: Scenario, inputs: TrialInputs) -> np.ndarray:
    """The dense peak a training job computes at: the bf16 entry of ``gpu.peak_tflops``
    (mixed-precision training in bf16, docs/training.md), whatever precision the serving
    side uses. The trials sample the peak in use (``gpu.peak_tflops``), so its draws are
    scaled by the bf16 entry over that entry (1 for a single number or for bf16 itself)."""
    peaks = scenario.gpu.peak_tflops
    return inputs["gpu.peak_tflops"] * (peaks.bf16.median() / scenario.peak_in_use().median())


def step_plan(scenario: Scenario, inputs: TrialInputs, gpus: int, domain_gpus: int) -> dict[str, np.ndarray]:
    """The job's layout and step (:func:`mcengine.analytic.training.plan`) at the trials'
    inputs; InputError where no layout fits the GPUs' memory."""
    t, w = scenario.workload.training, scenario.workload
    eff = inputs["workload.compute_efficiency"] if t.compute_efficiency == "auto" else inputs[_KEY + "compute_efficiency"]
    link_eff = inputs["workload.link_efficiency"]
    hw = at.Hardware(
        peak_flops=training_peak_tflops(scenario, inputs) * 1e12, efficiency=eff,
        hbm_bytes=inputs["gpu.hbm_gb"] * 1e9 * inputs["workload.hbm_usable_fraction"],
        link_Bps=inputs["gpu.link_gbps"] * 1e9 * link_eff, scale_out_Bps=inputs["gpu.scale_out_gbps"] * 1e9 * link_eff,
        alpha_s=inputs["workload.collective_start_us"] * 1e-6, hop_s=inputs["workload.hop_latency_us"] * 1e-6,
        scale_out_hop_s=inputs["workload.scale_out_hop_us"] * 1e-6, domain_gpus=domain_gpus)
    job = at.Job(gpus=gpus, sequence_tokens=t.sequence_tokens, global_batch_tokens=t.global_batch_tokens,
                 virtual_stages=t.virtual_stages, tp_overlap=inputs[_KEY + "tp_overlap"], dp_overlap=inputs[_KEY + "dp_overlap"],
                 activation_factor=inputs[_KEY + "activation_factor"],
                 shardings=("zero1", "zero3") if t.sharding == "auto" else (t.sharding,),
                 recomputes=("none", "full") if t.recompute == "auto" else (t.recompute,))
    out = at.plan(w.model, job, hw)
    if not np.isfinite(out["step_s"]).all():
        i = int(np.argmax(~np.isfinite(out["step_s"])))
        raise InputError(Problem(_KEY + "job_gpus", gpus, f"allowed: a job whose {w.model.name} fits some layout (tensor parallel within "
                                 f"the {domain_gpus}-GPU scale-up domain x pipeline x data parallel, with at least one of "
                                 f"{t.global_batch_tokens // t.sequence_tokens:,} sequences per replica) in gpu.hbm_gb x "
                                 f"workload.hbm_usable_fraction = {hw.hbm_bytes[i] / 1e9:.1f} GB per GPU (trial {inputs.trial_start + i})",
                                 "more GPUs, more HBM, recompute = \"auto\", sharding = \"auto\" or a larger global_batch_tokens"))
    return out


def domain_gpus(scenario: Scenario) -> int:
    """The scale-up domain the tensor-parallel groups stay in: ``cluster.scale_up_domain_gpus``,
    "auto" = one instance (``cluster.instance_gpus``)."""
    d = scenario.cluster.scale_up_domain_gpus
    return scenario.cluster.instance_gpus if d == "auto" else int(d)


def training(scenario: Scenario, inputs: TrialInputs, cost_at_full_load_usd: np.ndarray) -> dict[str, np.ndarray]:
    """The training columns of a block of trials (module text). ``cost_at_full_load_usd``:
    the cluster's total cost over the horizon with every GPU busy."""
    t = scenario.workload.training
    gpus = job_gpus(scenario)
    by_cause = interruptions_per_hour(scenario, inputs, gpus)
    rate = sum(by_cause.values())
    mtbf, delta = 1.0 / rate, checkpoint_hours(scenario, inputs)
    restart = inputs[_KEY + "restart_minutes"] / 60.0
    tau = at.optimal_interval(delta, mtbf) if t.checkpoint_interval_minutes == OPTIMAL else inputs[_KEY + "checkpoint_interval_minutes"] / 60.0
    effective = at.ettr(tau, delta, restart, mtbf)
    lost_share = 1.0 - effective * (tau + delta) / tau  # of wall time: neither useful nor writing checkpoints
    step = step_plan(scenario, inputs, gpus, domain_gpus(scenario))
    trained_per_s = step["tokens_per_s"] * effective
    horizon_hours = scenario.run.horizon_years.value * HOURS_PER_YEAR
    job_usd_per_hour = cost_at_full_load_usd / horizon_hours * gpus / scenario.active_gpus
    return {
        "ettr": effective,
        "job_interruptions_per_day": rate * HOURS_PER_DAY,
        "time_to_train_days": inputs[_KEY + "tokens"] / trained_per_s / SECONDS_PER_HOUR / HOURS_PER_DAY,
        "cost_per_mtok_trained_usd": job_usd_per_hour / (trained_per_s * SECONDS_PER_HOUR / TOKENS_PER_MTOK),
        "mfu": step["mfu"],
        "training_tokens_per_s": step["tokens_per_s"],
        "checkpoint_interval_minutes": tau * 60.0,
        "checkpoint_write_s": delta * SECONDS_PER_HOUR,
        **{f"training_{k}": step[k] for k in ("tensor_parallel", "pipeline_parallel", "data_parallel", "zero_stage", "recompute", "bubble")},
        **{f"job_interruptions.{cause}.per_day": r * HOURS_PER_DAY for cause, r in by_cause.items()},
        **{f"job_lost_hours.{cause}.per_day": lost_share * HOURS_PER_DAY * r / rate for cause, r in by_cause.items()},
    }
