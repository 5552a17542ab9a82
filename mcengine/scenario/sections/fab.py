"""``[fab]``: wafer, defects, harvesting and packaging of one GPU package.

Sources: ``docs/sources.md`` (Fab: wafers, yield and package cost).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dists import Dist
from ..fields import integer, number

_YIELD = dict(lo=0.0, lo_open=True, hi=1.0)


@dataclass(frozen=True)
class FabSection:
    wafer_diameter_mm: Dist = number(300.0, "Wafer diameter.", "mm", lo=25.0, hi=450.0, uncertain=False)
    edge_exclusion_mm: Dist = number(3.0, "Unusable ring at the wafer edge (2-5 mm typical).", "mm", lo=0.0, uncertain=False)
    scribe_mm: Dist = number(0.1, "Saw street between dies (0.08-0.2 mm typical).", "mm", lo=0.0, uncertain=False)
    die_width_mm: Dist = number(25.9, "Die width (GH100 assumed 25.9 x 31.4 mm).", "mm", lo=0.0, lo_open=True, uncertain=False)
    die_height_mm: Dist = number(31.4, "Die height.", "mm", lo=0.0, lo_open=True, uncertain=False)
    defect_density_per_cm2: Dist = number(0.1, "Mean killer-defect density D0 (TSMC N5 at HVM ~0.10).", "defects/cm^2", lo=0.0)
    defect_clustering: Dist = number(3.0, 'Negative-binomial clustering shape alpha (gamma-mixed Poisson); "inf" = Poisson.', lo=0.0, lo_open=True, inf_ok=True)
    defect_edge_ratio: Dist = number(1.0, "Radial profile: defect density at the usable edge / at the centre, density ~ 1 + (ratio - 1)(r/R)^2; 1 = flat.", lo=0.0, lo_open=True)
    units_per_die: int = integer(144, "Identical repairable units (SMs) per die.", lo=1, hi=100_000)
    units_required: int = integer(144, "Clean units a sellable die needs; = units_per_die means no harvesting.", lo=1, hi=100_000)
    unit_area_fraction: Dist = number(0.8, "Share of the die area inside the repairable units (the rest is non-redundant).", lo=0.0, hi=1.0)
    wafer_cost_usd: Dist = number(17000.0, "Processed wafer price (N5 ~ $17k, 13.5-20k).", "USD", lo=0.0)
    hbm_stacks: int = integer(5, "HBM stacks bonded per package.", lo=0, hi=64)
    hbm_stack_cost_usd: Dist = number(280.0, "Price of one known-good HBM stack.", "USD", lo=0.0)
    hbm_stack_yield: Dist = number(1.0, "Share of bought stacks that survive incoming test (known-good stacks: ~1).", **_YIELD)
    assembly_yield: Dist = number(0.98, "Share of assemblies that pass; a failure scraps the die and the bonded stacks (CoWoS > 98%).", **_YIELD)
    package_cost_usd: Dist = number(750.0, "Packaging (interposer, substrate, CoWoS) per assembly attempt.", "USD", lo=0.0)
    test_cost_usd: Dist = number(900.0, "Test and assembly labour per assembly attempt.", "USD", lo=0.0)
    optics_cost_usd: Dist = number(0.0, "Co-packaged optics per good package.", "USD", lo=0.0)
