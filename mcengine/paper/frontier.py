"""The SLO frontier: cost per million output tokens against the TPOT SLO, for H100 and
each Lite design, with P(Lite cheaper) along it.

Every design runs at every SLO in one paired chain run (same seed and trials); the
SLO only moves the roofline's batch and layout, so each design's fab and lifetimes are
shared across its SLO points. A trial whose SLO cannot be met serves one sequence at a
time (its cost is still counted); ``slo_met`` is the share of trials that met it.
"""

from __future__ import annotations

import numpy as np

from ._common import Settings, chain, interval, scenario, variant

#: H100 and every shipped Lite design: the paper's quarter die at 1x and 2x links (and fast
#: swaps), and the shoreline-derived quarter, half and eighth dies (docs/model.md#derive).
DESIGNS = ("h100", "lite-h100", "lite-h100-2x", "lite-h100-2x-fastswap", "lite-h100-shoreline", "lite-h100-half",
           "lite-h100-eighth")
SLO_KEY = "workload.tpot_slo_ms"
SLO_VALUES_MS = (20.0, 30.0, 40.0, 50.0, 75.0, 100.0, 150.0, 200.0)


def compute(settings: Settings) -> dict:
    """``{"slo_ms", "designs": {name: {"cost_per_mtok_usd": [interval per SLO], "slo_met": [...],
    "p_cheaper_than_h100": [...]}}, "baseline"}``."""
    settings.note("SLO frontier")
    values = settings.grid(SLO_VALUES_MS)
    bases = [scenario(d) for d in DESIGNS]
    runs = {(b.name, v): variant(b, f"{b.name}.slo-{v:g}", [f"{SLO_KEY}={v!r}"]) for b in bases for v in values}
    cols = chain(list(runs.values()), settings)
    base = DESIGNS[0]
    out = {"slo_ms": [float(v) for v in values], "baseline": base, "model": bases[0].workload.model.name, "designs": {}}
    for d in DESIGNS:
        cost = [cols[runs[(d, v)].name]["cost_per_mtok_usd"] for v in values]
        row = {"cost_per_mtok_usd": [interval(c) for c in cost],
               "slo_met": [float(np.mean(cols[runs[(d, v)].name]["slo_met"])) for v in values]}
        if d != base:
            row["p_cheaper_than_h100"] = [float(np.mean(c < cols[runs[(base, v)].name]["cost_per_mtok_usd"])) for c, v in zip(cost, values)]
        out["designs"][d] = row
    return out
