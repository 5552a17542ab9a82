"""``[reliability]``: failure laws, recovery and repair (docs/model.md#reliability).

A GPU is a series system of component classes, one ``[reliability.components.NAME]``
table each. Rates are per unit-year with a year of 8,766 h; ``afr`` is 1/MTTF, so a
Weibull component's scale follows from its shape. Sources:
``docs/sources.md`` (Reliability).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ...errors import Problem
from ..dists import Dist, Law
from ..fields import choice, integer, law, number, parse_section
from ..limits import AFR, MAX_DURATION_HOURS, MAX_TOTAL_GPUS

_RATE = AFR
_SHAPE = dict(lo=0.05, hi=20.0, why="Gamma(1 + 1/shape) overflows below 0.05; above 20 the life is all but fixed")
_DURATION = dict(lo=0.0, hi=MAX_DURATION_HOURS, why="10^9 h (~114,000 years) already means never; keeps event times finite")


@dataclass(frozen=True)
class Component:
    """One component class of a GPU package (die, HBM stack, optics, ...)."""

    count: int = integer(1, "How many of this component one GPU package has (series).", lo=1, hi=10_000,
                         why="scales the failure rate; the events per lifetime are bounded apart")
    afr: Dist = number(0.0, "Permanent failures per component-year (swap + repair).", "1/year", **_RATE)
    transient_afr: Dist = number(0.0, "Restart-only faults per component-year.", "1/year", **_RATE)
    weibull_shape: Dist = number(1.0, "Weibull shape of the permanent-failure law: 1 exponential, <1 infant mortality, >1 wear-out.", **_SHAPE)


def parse_components(raw, key: str, problems: list[Problem]) -> tuple[tuple[str, Component], ...] | None:
    """``[reliability.components]``: a table of component tables, in file order."""
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        problems.append(Problem(key, raw, "allowed: a table of component tables, e.g. [reliability.components.die]"))
        return None
    out = []
    for name, body in raw.items():
        comp = parse_section(Component, body, f"{key}.{name}.", problems)
        if comp is not None:
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
    replace_unit: str = choice("gpu", "What is swapped from the pool and repaired: a GPU, or its whole host.", ("gpu", "host"))
    components: tuple = field(default=(), metadata={"help": "Component classes of one GPU package, one table each."})

    def component(self, name: str) -> Component | None:
        return dict(self.components).get(name)
