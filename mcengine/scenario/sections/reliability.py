"""``[reliability]``: failure laws, recovery and repair (docs/model.md#reliability).

A GPU is a series system of component classes, one ``[reliability.components.NAME]``
table each. Rates are per unit-year with a year of 8,766 h. A class's permanent-failure
law is ``weibull_shape`` (1 = exponential) with one of ``afr`` (the exponential law's
rate; with another shape it is read as 1/MTTF, as in old files), ``mttf_hours``,
``scale_hours`` or ``first_year_fraction`` (F(8,766 h)): whichever its source gives.
:func:`mcengine.analytic.reliability.weibull_rate_per_hour` is the one conversion the
stage, the references and ``mcengine check``'s ``resolved`` view share. Sources: ``docs/sources.md`` (Reliability).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ...analytic.reliability import resolved_law
from ...errors import Problem
from ..dists import Dist, Law
from ..fields import choice, integer, law, number, parse_section
from ..limits import AFR, MAX_DURATION_HOURS, MAX_TOTAL_GPUS

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
