"""`mcengine validate` checks of the reliability stage, and the toy scenarios behind them.

Each check runs a few hundred small cluster lifetimes through the real stage
(:func:`mcengine.stages.reliability.lifetimes`) in a regime where a closed form of
:mod:`mcengine.analytic.reliability` is exact, with a tolerance of 4 standard errors of
the Monte Carlo mean (from the sample). The published-scale points use the Llama 3
per-part interruption counts (docs/sources.md#rel-llama3-interruptions) and the Kokolis et al. job-MTTF
scaling (docs/sources.md#rel-kokolis). Tests reuse :func:`toy_scenario` and the tables here.
"""

from __future__ import annotations

import math

import numpy as np

from ..analytic import reliability as ar
from ..scenario import scenario_from_dict
from ..scenario.sampling import draw_inputs
from ..stages.reliability import lifetimes as columns
from ..units import HOURS_PER_YEAR
from .check import Check, mc_check as _mc_check

# Llama 3 405B pre-training, 16,384 H100 in 2,048 hosts of 8, 54 days: unexpected
# interruptions by root cause (Llama Team 2024, arXiv 2407.21783, Table 5; docs/sources.md#rel-llama3-interruptions).
LLAMA3_GPUS = 16_384
LLAMA3_GPUS_PER_HOST = 8
LLAMA3_DAYS = 54
LLAMA3_GPU_CAUSES = {  # per-GPU parts (NIC: one per GPU)
    "faulty_gpu": 148, "hbm3": 72, "software": 54, "network": 35, "sram": 19, "gsp": 17,
    "nic": 7, "nccl_watchdog": 7, "sdc": 6, "thermal": 6,
}
LLAMA3_HOST_CAUSES = {  # per-host parts
    "host_maintenance": 32, "ssd": 3, "psu": 3, "chassis": 2, "io_board": 2, "dependency": 2,
    "cpu": 2, "memory": 2,
}
LLAMA3_UNEXPECTED = 419
#: ~16.7 min lost per interruption (0.1 x 54 x 24 / 466 h, docs/sources.md#rel-llama3-restart).
LLAMA3_RESTART_HOURS = 0.278

# Kokolis et al. (HPCA 2025, arXiv 2410.21680; docs/sources.md#rel-kokolis): job MTTF ~47 days at 8 GPUs,
# ~8 h at 1,024 GPUs (a series system: MTTF ~ 1/N).
KOKOLIS_MTTF_8_GPUS_HOURS = 47 * 24.0
KOKOLIS_MTTF_1024_GPUS_HOURS = 8.0


def toy_scenario(*, instances: int, instance_gpus: int = 1, gpus_per_host: int = 1, spare_gpus: int = 0,
                 horizon_years: float = 1.0, components: dict | None = None, afr: float = 0.0,
                 transient_afr: float = 0.0, weibull_shape: float = 1.0, host_afr: float = 0.0,
                 host_transient_afr: float = 0.0, host_weibull_shape: float = 1.0, repair_hours=0.0,
                 swap_hours=0.0, restart_hours=0.0, repair_crews="inf", replace_unit: str = "gpu", name: str = "toy"):
    """A minimal scenario for a closed-form check (everything outside reliability at defaults).

    ``components`` (name -> component table) replaces the single class ``gpu`` built from
    ``afr``, ``transient_afr`` and ``weibull_shape``. Laws are scenario-file values (a
    number or a ``{law = ...}`` table).
    """
    comps = components if components is not None else {
        "gpu": {"afr": afr, "transient_afr": transient_afr, "weibull_shape": weibull_shape}}
    return scenario_from_dict({
        "name": name,
        "run": {"horizon_years": horizon_years},
        "cluster": {"instances": instances, "instance_gpus": instance_gpus, "gpus_per_host": gpus_per_host,
                    "spare_gpus": spare_gpus},
        "reliability": {
            "host_afr": host_afr, "host_transient_afr": host_transient_afr, "host_weibull_shape": host_weibull_shape,
            "repair_hours": repair_hours, "swap_hours": swap_hours, "restart_hours": restart_hours,
            "repair_crews": repair_crews, "replace_unit": replace_unit, "components": comps,
        },
    })


def llama3_rates() -> tuple[dict, dict]:
    """Per-part interruption rates (per unit-year) from the Llama 3 counts (docs/sources.md#rel-llama3-rates).

    Returns ``(gpu_afr, host_afr)``: count / unit-years observed, with 16,384 GPU and
    2,048 host units over 54 days.
    """
    gpu_years = LLAMA3_GPUS * LLAMA3_DAYS * 24 / HOURS_PER_YEAR
    host_years = gpu_years / LLAMA3_GPUS_PER_HOST
    return ({k: v / gpu_years for k, v in LLAMA3_GPU_CAUSES.items()},
            {k: v / host_years for k, v in LLAMA3_HOST_CAUSES.items()})


def llama3_scenario(instance_gpus: int):
    """The Llama 3 cluster with every cause a restart-only class (docs/sources.md#rel-llama3-interruptions)."""
    gpu_afr, host_afr = llama3_rates()
    return toy_scenario(
        instances=LLAMA3_GPUS // instance_gpus, instance_gpus=instance_gpus, gpus_per_host=LLAMA3_GPUS_PER_HOST,
        horizon_years=LLAMA3_DAYS * 24 / HOURS_PER_YEAR, components={k: {"transient_afr": v} for k, v in gpu_afr.items()},
        host_transient_afr=sum(host_afr.values()), restart_hours=LLAMA3_RESTART_HOURS, name=f"llama3-{instance_gpus}")


def run(scenario, lifetimes: int, seed: int = 20240723) -> dict:
    """Per-lifetime columns of ``lifetimes`` lifetimes of ``scenario``."""
    return columns(scenario, draw_inputs(scenario, seed, 0, lifetimes), seed)


def mc_check(name: str, sample: np.ndarray, expected: float, detail: str) -> Check:
    """Monte Carlo mean of ``sample`` (one value per lifetime) against ``expected``, 4 SEM."""
    return _mc_check("reliability", name, sample, expected, detail, "lifetimes")


def checks() -> list[Check]:
    """The reliability cross-checks (a few seconds on a warm numba cache)."""
    out = []
    lam, mu = 0.05, 0.5  # worked values of docs/sources.md#rel-machine-repairman
    for crews in (1, 2):
        s = toy_scenario(instances=10, afr=lam * HOURS_PER_YEAR, repair_hours={"law": "exponential", "mean": 1 / mu},
                         repair_crews=crews, horizon_years=0.5)
        out.append(mc_check(f"machine repairman M/M/{crews}//10 availability", run(s, 100)["instance_availability"],
                            ar.machine_repairman(10, lam, mu, crews)["availability"], "docs/sources.md#rel-machine-repairman"))
    s = toy_scenario(instances=4096, afr=0.1, repair_hours={"law": "exponential", "mean": 72}, repair_crews=4, horizon_years=5)
    out.append(mc_check("machine repairman M/M/4//4096 (the bench case)", run(s, 40)["instance_availability"],
                        ar.machine_repairman(4096, 0.1 / HOURS_PER_YEAR, 1 / 72, 4)["availability"], "docs/sources.md#rel-machine-repairman"))
    s = toy_scenario(instances=8, spare_gpus=2, afr=0.02 * HOURS_PER_YEAR, repair_hours={"law": "exponential", "mean": 4},
                     repair_crews=1, horizon_years=1.0)
    out.append(mc_check("8 active + 2 spares, 1 crew: active fraction", run(s, 100)["instance_availability"],
                        ar.spares_birth_death(8, 2, 1, 0.02, 0.25)["active_fraction"], "docs/sources.md#rel-spares-birth-death (0.954228)"))
    mttf, mean_repair = 100.0, 5.0
    s = toy_scenario(instances=16, instance_gpus=8, gpus_per_host=8, afr=HOURS_PER_YEAR / mttf, horizon_years=0.5,
                     repair_hours={"law": "lognormal", "median": mean_repair / math.exp(0.5), "sigma": 1.0})
    out.append(mc_check("a^n, 8-GPU instances, unlimited crews, no spares, lognormal repair",
                        run(s, 100)["instance_availability"],
                        ar.series_availability(ar.alternating_renewal(mttf, mean_repair), 8), "docs/sources.md#rel-series-availability"))
    swap = 2.0
    s = toy_scenario(instances=32, instance_gpus=8, gpus_per_host=8, spare_gpus=64, afr=5.0, swap_hours=swap,
                     repair_hours=24.0, horizon_years=2.0)
    out.append(mc_check("ample pool, swap only: (1 + lambda t_swap)^-n", run(s, 100)["instance_availability"],
                        ar.series_availability(1 / (1 + 5.0 / HOURS_PER_YEAR * swap), 8), "docs/sources.md#rel-series-availability"))
    host_rate = 2.0
    s = toy_scenario(instances=32, instance_gpus=8, gpus_per_host=8, spare_gpus=64, host_afr=host_rate,
                     swap_hours=swap, repair_hours=24.0, horizon_years=2.0)
    out.append(mc_check("host failures, gpu swaps: 1 / (1 + lambda_host t_swap)", run(s, 100)["instance_availability"],
                        1 / (1 + host_rate / HOURS_PER_YEAR * swap), "blast radius of a host; docs/sources.md#rel-series-availability"))
    shape, horizon_y = 2.0, 3.0
    s = toy_scenario(instances=256, afr=0.5, weibull_shape=shape, repair_hours=1e9, horizon_years=horizon_y)
    out.append(mc_check("Weibull k=2 time-averaged survival, no repair", run(s, 100)["instance_availability"],
                        ar.weibull_mean_survival(horizon_y * HOURS_PER_YEAR, ar.weibull_scale(2 * HOURS_PER_YEAR, shape), shape),
                        "docs/sources.md#rel-unit-conversions, docs/sources.md#rel-renewal"))
    out.extend(_published_checks())
    return out


def _published_checks() -> list[Check]:
    """Llama 3 interruptions and uptime; Kokolis job MTTF at 8 and 1,024 GPUs."""
    gpu_afr, host_afr = llama3_rates()
    rate_gpu = sum(gpu_afr.values()) / HOURS_PER_YEAR
    rate_host = sum(host_afr.values()) / HOURS_PER_YEAR
    hours = LLAMA3_DAYS * 24
    years = hours / HOURS_PER_YEAR
    per_host = ar.restart_only(8 * rate_gpu + rate_host, LLAMA3_RESTART_HOURS)
    expected = LLAMA3_GPUS / 8 * per_host["interruptions_per_hour"] * hours
    out = [mc_check(f"Llama 3: interruptions in 54 days, 16,384 GPUs in 8-GPU instances (published {LLAMA3_UNEXPECTED})",
                    run(llama3_scenario(8), 64)["interruptions_per_year"] * years, expected,
                    "[fitted: the per-part rates are derived from these counts, so this checks the kernel against "
                    "their arithmetic, not the rates] per-part rates of Table 5; restart-only, 0.278 h each")]
    job = ar.restart_only(LLAMA3_GPUS * rate_gpu + LLAMA3_GPUS / 8 * rate_host, LLAMA3_RESTART_HOURS)
    out.append(mc_check("Llama 3: whole-cluster job uptime (published > 90%)",
                        run(llama3_scenario(LLAMA3_GPUS), 64)["instance_availability"], job["availability"],
                        "[independent of the fit: the uptime is not an input] exp(-Lambda r): a fault during a restart starts it over"))
    rate = 1 / (8 * KOKOLIS_MTTF_8_GPUS_HOURS)  # per GPU-hour, so an 8-GPU job has MTTF 47 days
    for n, instances in ((8, 64), (1024, 1)):
        s = toy_scenario(instances=instances, instance_gpus=n, gpus_per_host=8, transient_afr=rate * HOURS_PER_YEAR,
                         horizon_years=1.0)
        per_job = run(s, 64)["interruptions_per_year"] / instances
        out.append(mc_check(f"Kokolis: job interruptions per year at {n} GPUs (MTTF {1 / (n * rate):.1f} h; "
                            f"published {KOKOLIS_MTTF_8_GPUS_HOURS if n == 8 else KOKOLIS_MTTF_1024_GPUS_HOURS:.0f} h)",
                            per_job, n * rate * HOURS_PER_YEAR,
                            ("[fitted: the rate is the 8-GPU MTTF's] " if n == 8 else "[held out: predicted from the 8-GPU MTTF] ")
                            + "series system of GPUs, MTTF = 1/(n lambda)"))
    return out
