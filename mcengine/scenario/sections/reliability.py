"""``[reliability]``: failure laws, recovery and repair (docs/model.md#reliability).

A GPU is a series system of component classes, one ``[reliability.components.NAME]``
table each. Rates are per unit-year with a year of 8,766 h. A class's permanent-failure
law is ``weibull_shape`` (1 = exponential) with one of ``afr`` (the exponential law's
rate; with another shape it is read as 1/MTTF, as in old files), ``mttf_hours``,
``scale_hours`` or ``first_year_fraction`` (F(8,766 h)): whichever its source gives.
:func:`weibull_rate_per_hour` is the one conversion the stage, the references and
``mcengine check``'s ``resolved`` view share. Sources: ``docs/sources.md`` (Reliability).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import special

from ...errors import Problem
from ..dists import Dist, Law
from ..fields import choice, integer, law, number, parse_section
from ..limits import AFR, MAX_DURATION_HOURS, MAX_TOTAL_GPUS
from ...units import HOURS_PER_YEAR

_RATE = AFR
_SHAPE = dict(lo=0.05, hi=20.0, why="Gamma(1 + 1/shape) overflows below 0.05; above 20 the life is all but fixed")
_LIFE = dict(lo=1.0, hi=1e12, why="1 h is afr's bound of one failure per unit-hour; 10^12 h (0.001 FIT) never fails in any horizon")
_FRACTION = dict(lo=0.0, hi=0.999999, why="1 would make the scale 0 (every unit dead at once)")
_DURATION = dict(lo=0.0, hi=MAX_DURATION_HOURS, why="10^9 h (~114,000 years) already means never; keeps event times finite")


@dataclass(frozen=True)
class Component:
    """One component class of a GPU package (die, HBM stack, optics, ...)."""

    count: int = integer(1, "How many of this component one GPU package has (series).", lo=1, hi=10_000,
                         why="scales the failure rate; the events per lifetime are bounded apart")
    afr: Dist | None = number(None, "Permanent failures per component-year (swap + repair): the exponential law's rate. With weibull_shape != 1 "
                                    "it is read as 1/MTTF (old files); give mttf_hours, scale_hours or first_year_fraction instead. "
                                    "At most one of the four; none = never fails.", "1/year", **_RATE)
    transient_afr: Dist = number(0.0, "Restart-only faults per component-year.", "1/year", **_RATE)
    weibull_shape: Dist = number(1.0, "Weibull shape of the permanent-failure law: 1 exponential, <1 infant mortality, >1 wear-out.", **_SHAPE)
    mttf_hours: Dist | None = number(None, "Mean time to permanent failure of one component (any shape); instead of afr.", "hours", **_LIFE)
    scale_hours: Dist | None = number(None, "Weibull scale eta of the permanent-failure law, F(t) = 1 - exp(-(t/eta)^shape); instead of afr.", "hours", **_LIFE)
    first_year_fraction: Dist | None = number(None, "Share of components failing within their first year in service, F(8,766 h); instead of afr.", **_FRACTION)
    replace_unit: str = choice("unit", "What a permanent failure of this class replaces: \"unit\" (default) or \"gpu\"/\"host\" (the same: "
                                       "reliability.replace_unit's unit from the pool, sent to repair), or \"module\": a field-replaceable "
                                       "module (a pluggable laser) swapped in place in reliability.module_swap_hours, from the module pool "
                                       "(cluster.spare_modules); no GPU pool unit, no repair (docs/model.md#modules).", ("unit", "gpu", "host", "module"))

    per: str = choice("gpu", "The unit this class is counted per: \"gpu\" (count per GPU package, default), \"host\" (count per host: "
                             "its failures are host failures, its faults host faults) or \"nic\" (count per scale-out NIC of "
                             "cluster.gpus_per_nic GPUs: a fault restarts the NIC's instance, a failure swaps the NIC in place in "
                             "reliability.nic_swap_hours; docs/model.md#per-unit). Per host or NIC: exponential only (weibull_shape = 1).",
                      ("gpu", "host", "nic"))

    def law_key(self) -> str | None:
        """The key that sets the permanent-failure law's scale (None: never fails)."""
        return next((k for k in LAW_KEYS if getattr(self, k) is not None), None)


#: The host's own class in the outputs keyed by class (``failures_by_class``), beside the
#: GPU's component classes: no component class may take its name.
HOST_CLASS = "host"
#: The keys of which a component gives at most one to set its permanent-failure law.
LAW_KEYS = ("afr", "mttf_hours", "scale_hours", "first_year_fraction")
#: The keys of a component's ``resolved`` view (``mcengine check``), derived from its law.
RESOLVED_KEYS = ("afr_long_run", "mttf_hours", "scale_hours", "first_year_fraction")


def weibull_rate_per_hour(law_key: str, value, shape):
    """``1/eta`` per hour of a Weibull law (shape ``k``) given by one law key.

    ``afr``: ``afr Γ(1 + 1/k) / 8766`` (afr read as 1/MTTF); ``mttf_hours``:
    ``Γ(1 + 1/k) / MTTF``; ``scale_hours``: ``1/eta``; ``first_year_fraction`` ``F``:
    ``(-ln(1 - F))^(1/k) / 8766``, from ``F = 1 - exp(-(8766/eta)^k)``
    (docs/sources.md#rel-unit-conversions). At ``k = 1`` it is the exponential rate.
    Works on floats and float64 arrays alike.
    """
    if law_key == "afr":
        return value * special.gamma(1.0 + 1.0 / shape) / HOURS_PER_YEAR
    if law_key == "mttf_hours":
        return special.gamma(1.0 + 1.0 / shape) / value
    if law_key == "scale_hours":
        return 1.0 / value
    if law_key == "first_year_fraction":
        return (-np.log1p(-value)) ** (1.0 / shape) / HOURS_PER_YEAR
    raise ValueError(f"not a law key: {law_key!r}")


def renewals_bound(rate_per_hour: float, shape: float, horizon_hours: float) -> float:
    """An upper bound on the expected renewals of one unit in ``[0, T]`` under replace on
    failure, a Weibull law of shape ``k`` and ``1/eta = rate_per_hour``
    (docs/sources.md#rel-renewal-bound).

    Wear-out and exponential (``k >= 1``, NBUE): ``M(T) <= T / MTTF``. Infant mortality
    (``k < 1``), where ``M(T)`` exceeds ``T / MTTF`` and renewals restart the clock at its
    steepest: the smaller of ``F(T) / (1 - F(T))`` (each of ``n`` renewals needs ``n``
    lives shorter than ``T``) and Lorden's ``T / MTTF + E[X^2] / MTTF^2 - 1``.
    """
    scaled = horizon_hours * rate_per_hour  # T / eta (0 when it underflows: no renewal)
    if scaled <= 0.0:
        return 0.0
    log_mean_scale = math.lgamma(1.0 + 1.0 / shape)  # MTTF = eta * Gamma(1 + 1/k)
    cycles = math.exp(min(math.log(scaled) - log_mean_scale, 700.0))  # T / MTTF
    if shape >= 1.0:
        return cycles
    lorden = cycles + math.exp(min(math.lgamma(1.0 + 2.0 / shape) - 2.0 * log_mean_scale, 700.0)) - 1.0
    cum_hazard = scaled ** shape  # H(T); F / (1 - F) = e^H - 1
    return min(lorden, math.expm1(cum_hazard) if cum_hazard < 700.0 else math.inf)


def series_renewals_bound(terms: list[tuple[float, float]], horizon_hours: float) -> float:
    """An upper bound on the expected renewals in ``[0, T]`` of a series system renewed
    as a whole at its first failure (a GPU and its component classes), with cumulative
    hazard ``H(t) = sum c t**k`` over ``terms = [(k, c)]`` (docs/sources.md#rel-renewal-bound).

    The minimum of ``n`` Weibull(k, eta) lives is Weibull(k, eta n**(-1/k)): for ``k < 1``
    the series fails far sooner than ``n`` separate renewals suggest. The same bounds as
    :func:`renewals_bound`, on the series law: ``T / MTTF`` when every shape is at least 1
    (a series of IFR lives is IFR), else the smaller of ``e**H(T) - 1`` and Lorden's
    ``T / MTTF + E[X^2] / MTTF^2 - 1``, the moments by quadrature in ``log t``
    (``e**H(T) - 1`` alone for a law too extreme for the quadrature).
    """
    terms = [(float(k), float(c)) for k, c in terms if c > 0.0]
    if not terms or horizon_hours <= 0.0:
        return 0.0
    cum_hazard = sum(math.exp(min(math.log(c) + k * math.log(horizon_hours), 700.0)) for k, c in terms)  # H(T)
    tail = math.expm1(cum_hazard) if cum_hazard < 700.0 else math.inf  # F / (1 - F): any law
    # in u = log t: S(t) = exp(-H(t)) is ~1 below u_lo and below e**-60 above u_hi
    u_hi = min((math.log(60.0) - math.log(c)) / k for k, c in terms)
    if not -600.0 < u_hi < 600.0:  # lives beyond 10^260 h (hardly any renewal) or below
        return tail  # 10^-260 h (countless): F / (1 - F) says how few or many
    u_lo = min(min((math.log(1e-12) - math.log(c)) / k for k, c in terms), u_hi - math.log(1e12))
    u = np.linspace(u_lo, u_hi, 4001)
    with np.errstate(all="ignore"):  # (extreme laws: an overflow or 0/0 leaves F / (1 - F))
        t = np.exp(u)
        surv = np.exp(-sum(np.exp(np.minimum(math.log(c) + k * u, 700.0)) for k, c in terms))
        t_lo = math.exp(u_lo)
        mean = t_lo + np.trapezoid(surv * t, u)  # int_0^inf S(t) dt
        second = t_lo ** 2 + np.trapezoid(2.0 * surv * t * t, u)  # E[X^2] = int_0^inf 2 t S(t) dt
        cycles = np.float64(horizon_hours) / mean
        bound = cycles if all(k >= 1.0 for k, _ in terms) else cycles + second / mean ** 2 - 1.0  # (Lorden's)
    if math.isnan(bound):
        return tail
    return float(bound) if all(k >= 1.0 for k, _ in terms) else min(float(bound), tail)


def resolved_law(law_key: str | None, value: float, shape: float) -> dict[str, float | str]:
    """The four equivalent statements of one class's law (the ``resolved`` view).

    ``afr_long_run`` is the long-run renewal rate 1/MTTF per unit-year (elementary
    renewal theorem, docs/sources.md#rel-renewal); ``"inf"`` marks a law that never fails.
    """
    rate = 0.0 if law_key is None else float(weibull_rate_per_hour(law_key, value, shape))
    if rate <= 0.0:
        return {"afr_long_run": 0.0, "mttf_hours": "inf", "scale_hours": "inf", "first_year_fraction": 0.0}
    mttf = float(special.gamma(1.0 + 1.0 / shape)) / rate
    law = {"afr_long_run": HOURS_PER_YEAR / mttf, "mttf_hours": mttf, "scale_hours": 1.0 / rate,
           "first_year_fraction": float(-np.expm1(-((HOURS_PER_YEAR * rate) ** shape)))}
    return {k: float(f"{v:.15g}") for k, v in law.items()}  # 876600, not 876599.9999999999


def component_resolved(comp: "Component") -> dict[str, float | str]:
    """:func:`resolved_law` of a component at its median inputs."""
    key = comp.law_key()
    return resolved_law(key, 0.0 if key is None else getattr(comp, key).median(), comp.weibull_shape.median())


def _law_problems(comp: "Component", key: str, resolved) -> list[Problem]:
    """At most one law key; a Weibull shape needs one; a ``resolved`` table must agree."""
    given = [k for k in LAW_KEYS if getattr(comp, k) is not None]
    out = []
    if len(given) > 1:
        out.append(Problem(f"{key}.{given[1]}", ", ".join(f"{k} = {getattr(comp, k).to_toml()}" for k in given),
                           "allowed: exactly one of " + ", ".join(LAW_KEYS) + " per component (they state the same law)",
                           "keep the one your source gives"))
    elif not given and not (comp.weibull_shape.is_fixed and comp.weibull_shape.value == 1.0):
        out.append(Problem(f"{key}.weibull_shape", comp.weibull_shape.to_toml(),
                           "allowed with one of mttf_hours, scale_hours, first_year_fraction (or afr, read as 1/MTTF): "
                           "a Weibull law needs its scale"))
    if resolved is None or out:
        return out
    if not isinstance(resolved, dict):
        return [Problem(f"{key}.resolved", resolved, "allowed: the table mcengine check shows (derived from the law; edit the law keys instead)")]
    shown = component_resolved(comp)
    for name, value in resolved.items():
        want = shown.get(name)
        same = (value == want or (isinstance(value, (int, float)) and isinstance(want, float)
                                  and math.isclose(value, want, rel_tol=1e-9, abs_tol=1e-300)))
        if not same:
            out.append(Problem(f"{key}.resolved.{name}", value,
                               f"allowed: {want!r}, derived from the law (mcengine check shows it); "
                               "change weibull_shape or the one of " + ", ".join(LAW_KEYS) + " that is set instead"))
    return out


def parse_components(raw, key: str, problems: list[Problem]) -> tuple[tuple[str, Component], ...] | None:
    """``[reliability.components]``: a table of component tables, in file order."""
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        problems.append(Problem(key, raw, "allowed: a table of component tables, e.g. [reliability.components.die]"))
        return None
    out = []
    for name, body in raw.items():
        if name == HOST_CLASS:
            problems.append(Problem(f"{key}.{name}", name, f"allowed: any component name but {HOST_CLASS!r}, the host's own class "
                                    "in failures_by_class (its law is reliability.host_afr, host_weibull_shape)",
                                    "rename the class, e.g. host_board"))
            continue
        resolved = body.get("resolved") if isinstance(body, dict) else None  # mcengine check's derived view
        if isinstance(body, dict):
            body = {k: v for k, v in body.items() if k != "resolved"}
        comp = parse_section(Component, body, f"{key}.{name}.", problems)
        if comp is not None:
            problems += _law_problems(comp, f"{key}.{name}", resolved)
            out.append((name, comp))
    return tuple(out)


@dataclass(frozen=True)
class ReliabilitySection:
    host_afr: Dist = number(0.07, "Permanent host failures per host-year; take all the host's GPUs down (Llama 3: ~0.07).", "1/year", **_RATE)
    host_transient_afr: Dist = number(0.11, "Restart-only host faults per host-year (Llama 3 unplanned host maintenance ~0.11).", "1/year", **_RATE)
    host_weibull_shape: Dist = number(1.0, "Weibull shape of the host permanent-failure law.", **_SHAPE)
    repair_hours: Law = law(72.0, "Time to repair one failed unit, drawn per repair (a law).", **_DURATION)
    repair_crews: int | float = integer(math.inf, 'Repairs in progress at once (FIFO queue beyond); "inf" = unlimited.', lo=1, hi=MAX_TOTAL_GPUS, inf_ok=True,
                                        why="more crews than GPUs is the same as \"inf\"; the kernel keeps one slot per crew")
    swap_hours: Law = law(0.1, "Time to move a spare into a failed slot.", **_DURATION)
    restart_hours: Law = law(0.25, "Time to restart an instance after a fault or a swap.", **_DURATION)
    replace_unit: str = choice("gpu", "What is swapped from the pool and repaired: a GPU, or its whole host (the default of every component class).", ("gpu", "host"))
    module_swap_hours: Dist = number(0.1, "Time to swap a failed field-replaceable module (a component class with replace_unit = \"module\") in "
                                          "place: a hot-pluggable front-panel laser (ELSFP) comes out in minutes (docs/sources.md#rel-module-swap).",
                                     "hours", **_DURATION)
    module_restock_hours: Dist = number(672.0, "Lead time of a new field-replaceable module ordered for a failed one (replace_unit = \"module\"; "
                                               "the failed module is replaced, not repaired): it joins cluster.spare_modules then; a module swap "
                                               "with the pool empty waits for it. Optical modules ship in 2-4 weeks, 10-16 in a shortage "
                                               "(docs/sources.md#rel-module-pool).", "hours", **_DURATION)
    host_failure: str = choice("gpus", "What a permanent host failure does: \"gpus\" (each of its GPUs is swapped from the GPU pool and "
                                       "repaired, the host renewed) or \"host\": the host is the unit (replaced from cluster.spare_hosts in "
                                       "host_swap_hours, or it waits for a host repair; the failed host repaired in repair_hours), its GPUs "
                                       "stay in place, neither repaired nor replaced (docs/model.md#host-units). With replace_unit = \"host\" the host "
                                       "is the replaced unit already: both read the same.", ("gpus", "host"))
    host_swap_hours: Dist = number(2.0, "Time to put a spare host in a failed host's place (reliability.host_failure = \"host\"): a "
                                        "technician moves the GPU baseboard or trays to a spare chassis, as a GPU swap, 2-4 h "
                                        "(docs/sources.md#rel-technician-swap).", "hours", **_DURATION)
    nic_swap_hours: Dist = number(0.5, "Time to swap a failed scale-out NIC, cable, transceiver or switch port in place (a per = \"nic\" "
                                       "class's permanent failure): a hot-pluggable part, under an hour (assumed; docs/sources.md#rel-per-nic).",
                                  "hours", **_DURATION)
    components: tuple = field(default=(), metadata={"help": "Component classes of one GPU package, one table each."})

    def component(self, name: str) -> Component | None:
        return dict(self.components).get(name)
