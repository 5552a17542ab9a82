"""Training stage: one synchronous job of ``workload.kind = "training"`` on the cluster
(docs/training.md).

Per trial: the job's step model and layout (:func:`mcengine.analytic.training.plan`), its
interruption rate from every unit it spans, its checkpoint interval and effective
training time ratio (Daly's expression, :func:`mcengine.analytic.training.ettr`), the
time to train ``workload.training.tokens`` and the cost per million trained tokens.

**Interruptions.** Any interruption of any unit of the job stops all of it. Per trial,
the job's interruptions by cause (:func:`causes`: each component class, the host, the
four job fault classes) come from the life kernel's events of that trial's lifetime: each
class's permanent failures and transient faults over the cluster (the reliability
stage's ``failures_by_class`` columns) times the job's share of the cluster's units
(:func:`simulated_rates`); the causes the hardware rates leave out (software, NCCL
timeouts, silent data corruption, thermal: ``[workload.training]``'s four rates, per
H100-equivalent or per GPU) at their rates. Their closed form, the long-run (renewal)
rate of every unit the job spans (:func:`renewal_rates`: ``count x 1/MTTF`` and ``count x
transient_afr`` per GPU, host or NIC, whatever the Weibull shape), is their mean (a test
within 4 SEM) and what the stage uses without the kernel's columns. Interruptions are
taken as exponential at that rate (Daly's model).

**Swaps and elastic jobs** (docs/training.md#elastic). A permanent failure needs its unit
replaced; the replacement joins ``swap_wait_minutes`` after the interruption (0: a hot
spare from the pool joins within the restart, Llama 3's practice). Beyond the restart a
job stands idle for it; with ``elastic = true`` it restarts on the data-parallel replicas
left and trains at their share until the replacement joins, losing only the share of the
replicas the failed unit held. Daly's expression is read with the restart these waits
make (:func:`mcengine.analytic.training.restart_with_swaps`: exact for a job that waits
idle, interruptions striking during the waits too; an elastic job's slower training is
read as idle time of the share it loses).

**Lost hours.** The wall time neither useful nor spent writing checkpoints (rollbacks,
restarts, waits: ``1 - ETTR (tau + delta) / tau``) is split among the causes as their
first-order costs (competing exponential risks, :func:`lost_hours_per_day`):
``job_lost_hours.<cause>.per_day``, summed by the unit each strikes (gpu, host, nic, job)
as ``job_lost_hours_by_unit.<unit>.per_day``.

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
from ..columns import CLASS_PREFIX
from ..errors import InputError, Problem
from ..scenario import Scenario
from ..scenario.sampling import TrialInputs
from ..scenario.sections.gpu import TRAINING_PEAK_KEY
from ..scenario.sections.reliability import HOST_CLASS
from ..scenario.sections.training import ALL, JOB_FAULT_KEYS, OPTIMAL
from ..units import HOURS_PER_YEAR

_KEY = "workload.training."
SECONDS_PER_HOUR, HOURS_PER_DAY, TOKENS_PER_MTOK = 3600.0, 24.0, 1e6


def serves(scenario: Scenario) -> bool:
    """Whether the chain plans the scenario's serving side: always for inference; for a
    training job unless its model's weights cannot fit one instance's HBM in any trial
    (``workload.bytes_per_param`` at its least over ``cluster.instance_gpus x gpu.hbm_gb x
    workload.hbm_usable_fraction`` at their most): a cluster that trains need not be
    servable, and its serving columns then say it serves no tokens (docs/training.md)."""
    if scenario.workload.kind != "training":
        return True
    w, g = scenario.workload, scenario.gpu
    weights = params_total(w.model) * w.bytes_per_param.support()[0]
    room = scenario.cluster.instance_gpus * g.hbm_gb.support()[1] * 1e9 * w.hbm_usable_fraction.support()[1]
    return bool(weights <= room)


def job_gpus(scenario: Scenario) -> int:
    """The job's GPUs (``"all"``: every active GPU); InputError above the active GPUs."""
    wanted = scenario.workload.training.job_gpus
    if wanted == ALL:
        return scenario.active_gpus
    if wanted > scenario.active_gpus:
        raise InputError(Problem(_KEY + "job_gpus", wanted, f'allowed: "all" or at most the cluster\'s {scenario.active_gpus:,} '
                                 "active GPUs (cluster.instances x cluster.instance_gpus)"))
    return int(wanted)


def causes(scenario: Scenario) -> dict[str, str]:
    """Every cause of the job's interruptions and the unit it strikes: each component class
    its ``per`` (``"gpu"``, ``"host"``, ``"nic"``), the host's own law ``"host"``, the four
    job fault classes ``"job"``."""
    out = {name: comp.per for name, comp in scenario.reliability.components}
    out[HOST_CLASS] = "host"
    out.update({key.removesuffix("_afr"): "job" for key in JOB_FAULT_KEYS})
    return out


def unit_gpus(scenario: Scenario) -> dict[str, int]:
    """GPUs one unit of each kind holds (a job fault strikes one rank: 1)."""
    c = scenario.cluster
    return {"gpu": 1, "host": c.gpus_per_host, "nic": c.gpus_per_nic, "job": 1}


def _job_fault_rates(scenario: Scenario, inputs: TrialInputs, gpus: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The four job fault classes per hour (restarts only: no unit to replace)."""
    t = scenario.workload.training
    silicon = gpus * (scenario.gpu.h100_equivalents.value if t.job_faults_per == "h100_equivalent" else 1.0)
    return {key.removesuffix("_afr"): (np.zeros(inputs.n), silicon * inputs[_KEY + key] / HOURS_PER_YEAR) for key in JOB_FAULT_KEYS}


def renewal_rates(scenario: Scenario, inputs: TrialInputs, gpus: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The job's interruptions per hour by cause (:func:`causes`), closed form, as ``(needing
    a swap, restart only)``: each component class's ``count x 1/MTTF`` and ``count x
    transient_afr`` per unit times the job's units, the host's ``host_afr`` and
    ``host_transient_afr`` per host, and the job fault classes (module text)."""
    rel, cluster = scenario.reliability, scenario.cluster
    units = {"gpu": gpus, "host": gpus / cluster.gpus_per_host, "nic": gpus / cluster.gpus_per_nic}
    out = {}
    for name, comp in rel.components:
        key, prefix = comp.law_key(), f"reliability.components.{name}."
        permanent = np.zeros(inputs.n)
        if key is not None:
            shape = inputs[prefix + "weibull_shape"]
            permanent = weibull_rate_per_hour(key, inputs[prefix + key], shape) / special.gamma(1.0 + 1.0 / shape)
        per_unit = comp.count * units[comp.per]
        out[name] = (per_unit * permanent, per_unit * inputs[prefix + "transient_afr"] / HOURS_PER_YEAR)
    out[HOST_CLASS] = (units["host"] * inputs["reliability.host_afr"] / HOURS_PER_YEAR,
                       units["host"] * inputs["reliability.host_transient_afr"] / HOURS_PER_YEAR)
    return {**out, **_job_fault_rates(scenario, inputs, gpus)}


def simulated_rates(scenario: Scenario, inputs: TrialInputs, lifetimes: dict[str, np.ndarray], gpus: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The job's interruptions per hour by cause from the life kernel's events of each
    trial, as ``(needing a swap, restart only)``: every class's permanent failures and
    transient faults over the cluster's lifetime (the reliability stage's
    ``failures_by_class.<class>.failures_per_year`` and ``.faults_per_year``; a
    field-replaceable module's failures from ``module_swaps_per_year``) times the
    job's share of the cluster's units, ``job_gpus / active GPUs``; the job fault classes,
    which no unit's hardware law holds, at their rates. :func:`renewal_rates` is its
    long-run mean (a test, within 4 SEM)."""
    share = gpus / scenario.active_gpus
    out = {name: tuple(lifetimes[f"{CLASS_PREFIX}{name}.{kind}"] * share / HOURS_PER_YEAR for kind in ("failures_per_year", "faults_per_year"))
           for name, unit in causes(scenario).items() if unit != "job"}
    # a field-replaceable module's failures are module swaps (``module_swaps_per_year``, every
    # such class together): each class its share by its long-run rate
    modules = [name for name, comp in scenario.reliability.components if comp.replace_unit == "module"]
    if modules:
        renewal = renewal_rates(scenario, inputs, gpus)
        total = sum(renewal[name][0] for name in modules)
        for name in modules:
            with np.errstate(divide="ignore", invalid="ignore"):
                part = np.where(total > 0.0, renewal[name][0] / total, 0.0)
            out[name] = (lifetimes["module_swaps_per_year"] * share * part / HOURS_PER_YEAR, out[name][1])
    return {**out, **_job_fault_rates(scenario, inputs, gpus)}


def checkpoint_hours(scenario: Scenario, inputs: TrialInputs) -> np.ndarray:
    """One checkpoint write: ``checkpoint_write_s``, else the checkpoint's bytes over ``checkpoint_gbps``."""
    t = scenario.workload.training
    if t.checkpoint_write_s is not None:
        return inputs[_KEY + "checkpoint_write_s"] / SECONDS_PER_HOUR
    nbytes = inputs[_KEY + "checkpoint_bytes_per_param"] * params_total(scenario.workload.model)
    return nbytes / (inputs[_KEY + "checkpoint_gbps"] * 1e9) / SECONDS_PER_HOUR


def training_peak_tflops(scenario: Scenario, inputs: TrialInputs) -> np.ndarray:
    """The dense peak a training job computes at, per trial: the bf16 entry of
    ``gpu.peak_tflops`` (mixed-precision training in bf16, docs/training.md), whatever
    precision the serving side uses: its own drawn input ``gpu.peak_tflops.bf16`` where
    the serving side computes at another entry, else ``gpu.peak_tflops``, the bf16 peak
    itself (:meth:`mcengine.scenario.Scenario.training_peak`)."""
    return inputs[TRAINING_PEAK_KEY if scenario.training_peak() is not None else "gpu.peak_tflops"]


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


def training(scenario: Scenario, inputs: TrialInputs, cost_at_full_load_usd: np.ndarray,
             lifetimes: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """The training columns of a block of trials (module text). ``cost_at_full_load_usd``:
    the cluster's total cost over the horizon with every GPU busy; ``lifetimes``: the
    reliability stage's columns of these trials (the job's interruptions from their
    events, :func:`simulated_rates`), None for the renewal closed form (:func:`renewal_rates`)."""
    t = scenario.workload.training
    gpus = job_gpus(scenario)
    by_cause = renewal_rates(scenario, inputs, gpus) if lifetimes is None else simulated_rates(scenario, inputs, lifetimes, gpus)
    rates = {cause: swap + restart_only for cause, (swap, restart_only) in by_cause.items()}
    rate = sum(rates.values())
    mtbf, delta = 1.0 / rate, checkpoint_hours(scenario, inputs)
    restart = inputs[_KEY + "restart_minutes"] / 60.0
    wait = inputs[_KEY + "swap_wait_minutes"] / 60.0
    step = step_plan(scenario, inputs, gpus, domain_gpus(scenario))
    unit_of, held = causes(scenario), unit_gpus(scenario)
    idle_share = {cause: at.replicas_lost_share(held[unit_of[cause]], step["tensor_parallel"], step["data_parallel"]) if t.elastic
                  else np.ones(inputs.n) for cause in by_cause}
    swaps = [swap for swap, _ in by_cause.values()]
    restart_read = at.restart_with_swaps(restart, wait, swaps, rate, list(idle_share.values()), mtbf)
    tau = at.optimal_interval(delta, mtbf) if t.checkpoint_interval_minutes == OPTIMAL else inputs[_KEY + "checkpoint_interval_minutes"] / 60.0
    effective = at.ettr(tau, delta, restart_read, mtbf)
    trained_per_s = step["tokens_per_s"] * effective
    horizon_hours = scenario.run.horizon_years.value * HOURS_PER_YEAR
    job_usd_per_hour = cost_at_full_load_usd / horizon_hours * gpus / scenario.active_gpus
    lost = lost_hours_per_day(effective, tau, delta, restart, np.maximum(0.0, wait - restart), by_cause, idle_share)
    by_unit = {unit: sum(lost[c] for c in lost if unit_of[c] == unit) for unit in dict.fromkeys(unit_of.values())}
    return {
        "ettr": effective,
        "job_interruptions_per_day": rate * HOURS_PER_DAY,
        "time_to_train_days": inputs[_KEY + "tokens"] / trained_per_s / SECONDS_PER_HOUR / HOURS_PER_DAY,
        "cost_per_mtok_trained_usd": job_usd_per_hour / (trained_per_s * SECONDS_PER_HOUR / TOKENS_PER_MTOK),
        "mfu": step["mfu"],
        "training_tokens_per_s": step["tokens_per_s"],
        "checkpoint_interval_minutes": tau * 60.0,
        "checkpoint_write_s": delta * SECONDS_PER_HOUR,
        "job_lost_hours_per_day": sum(lost.values()),
        **{f"training_{k}": step[k] for k in ("tensor_parallel", "pipeline_parallel", "data_parallel", "zero_stage", "recompute", "bubble")},
        **{f"job_interruptions.{cause}.per_day": r * HOURS_PER_DAY for cause, r in rates.items()},
        **{f"job_lost_hours.{cause}.per_day": h for cause, h in lost.items()},
        **{f"job_lost_hours_by_unit.{unit}.per_day": h for unit, h in by_unit.items()},
    }


def lost_hours_per_day(effective, tau, delta, restart, beyond, by_cause, idle_share) -> dict[str, np.ndarray]:
    """Hours a day the job loses by cause: the wall time neither useful nor spent writing
    checkpoints, ``24 (1 - ETTR (tau + delta) / tau)`` (Daly's expression, exact),
    split among the causes in proportion to each one's first-order cost a day, its rate
    times the rollback and restart ``tau / 2 + R`` plus, for its interruptions needing a
    swap, the wait beyond the restart ``beyond`` times the share of the job it idles
    (``idle_share``: 1, or an elastic job's lost replicas); competing exponential risks."""
    weights = {cause: (swap + restart_only) * (tau / 2.0 + restart) + swap * beyond * idle_share[cause]
               for cause, (swap, restart_only) in by_cause.items()}
    total = sum(weights.values())
    day = HOURS_PER_DAY * (1.0 - effective * (tau + delta) / tau)
    return {cause: day * w / total for cause, w in weights.items()}
