"""``[fab]``: wafer, defects, harvesting and packaging of one GPU package.

Sources: ``docs/sources.md`` (Fab: wafers, yield and package cost).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..dists import Dist
from ..fields import integer, number
from ..limits import USD

_YIELD = dict(lo=0.01, hi=1.0, why="below 1% a run needs 100x the attempts (runs stop at 100,000 wafers)")
_UNITS = "harvesting tables grow with the spare units; GH100 has 144 SMs"


@dataclass(frozen=True)
class FabSection:
    wafer_diameter_mm: Dist = number(300.0, "Wafer diameter.", "mm", lo=25.0, hi=450.0, uncertain=False,
                                     why="1-inch to 450 mm, the largest wafer ever specified")
    edge_exclusion_mm: Dist = number(3.0, "Unusable ring at the wafer edge (2-5 mm typical).", "mm", lo=0.0, hi=225.0, uncertain=False,
                                     why="half the largest wafer; less than half this wafer is checked apart")
    scribe_mm: Dist = number(0.1, "Saw street between dies (0.08-0.2 mm typical).", "mm", lo=0.0, hi=10.0, uncertain=False,
                             why="50x the widest saw street")
    die_width_mm: Dist = number(25.9, "Die width (GH100 assumed 25.9 x 31.4 mm).", "mm", lo=1.0, hi=450.0, uncertain=False,
                                why="the kernel visits every die: 1 mm keeps a 450 mm wafer under 160,000 dies; at most the largest wafer")
    die_height_mm: Dist = number(31.4, "Die height.", "mm", lo=1.0, hi=450.0, uncertain=False,
                                 why="the kernel visits every die: 1 mm keeps a 450 mm wafer under 160,000 dies; at most the largest wafer")
    defect_density_per_cm2: Dist = number(0.1, "Mean killer-defect density D0 (TSMC N5 at HVM ~0.10).", "defects/cm^2", lo=0.0, hi=100.0,
                                          why="1000x a mature process: a 1 cm^2 die yields e^-100; a wide lognormal still fits")
    defect_clustering: Dist = number(3.0, 'Negative-binomial clustering shape alpha (gamma-mixed Poisson); "inf" = Poisson.', lo=0.01, hi=1e6, inf_ok=True,
                                     why='below 0.01 the gamma draw of a wafer\'s density underflows; above 10^6 it is Poisson: say "inf"')
    defect_edge_ratio: Dist = number(1.0, "Radial profile: defect density at the usable edge / at the centre, density ~ 1 + (ratio - 1)(r/R)^2; 1 = flat.", lo=0.0, lo_open=True, hi=100.0,
                                     why="placing defects by rejection slows in proportion to the ratio")
    units_per_die: int = integer(144, "Identical repairable units (SMs) per die.", lo=1, hi=100_000, why=_UNITS)
    units_required: int = integer(144, "Clean units a sellable die needs; = units_per_die means no harvesting.", lo=1, hi=100_000, why=_UNITS)
    unit_area_fraction: Dist = number(0.8, "Share of the die area inside the repairable units (the rest is non-redundant).", lo=0.0, hi=1.0, why="a share")
    wafer_cost_usd: Dist = number(17000.0, "Processed wafer price (N5 ~ $17k, 13.5-20k).", "USD", **USD)
    hbm_stacks: int = integer(5, "HBM stacks bonded per package.", lo=0, hi=64, why="8x the most stacks on any package")
    hbm_stack_cost_usd: Dist = number(280.0, "Price of one known-good HBM stack; used when hbm_cost_per_gb_usd is unset.", "USD", **USD)
    hbm_cost_per_gb_usd: Dist | None = number(None, "HBM price per GB of gpu.hbm_gb; when set, a stack costs its GB x this + hbm_stack_assembly_usd and hbm_stack_cost_usd is not used.", "USD/GB", lo=0.0, hi=1e6,
                                              why="a million dollars per GB is beyond any memory; keeps sums finite")
    hbm_stack_assembly_usd: Dist = number(0.0, "Per-stack cost that does not grow with capacity (base die, TSV stacking, stack test); with hbm_cost_per_gb_usd only.", "USD", **USD)
    hbm_stack_yield: Dist = number(1.0, "Share of bought stacks that survive incoming test (known-good stacks: ~1).", **_YIELD)
    assembly_yield: Dist = number(0.98, "Share of assemblies that pass; a failure scraps the die and the bonded stacks (CoWoS > 98%).", **_YIELD)
    package_cost_usd: Dist = number(750.0, "Packaging (interposer, substrate, CoWoS) per assembly attempt.", "USD", **USD)
    test_cost_usd: Dist = number(900.0, "Test and assembly labour per assembly attempt.", "USD", **USD)
    # -- the package-cost law (docs/model.md#package-cost-law, docs/sources.md#fab-package-law)
    cost_reference_area_mm2: Dist | None = number(None, "Die area the reference package and test costs are quoted at (the parent's die); "
                                                        "with package_cost_reference_usd and package_cost_area_exponent set, package_cost_usd = "
                                                        "reference x (die area / this)^exponent, per trial (test_cost_usd alike).", "mm2",
                                                  lo=1.0, hi=202500.0, uncertain=False, why="a 450 mm square is the largest die any wafer holds")
    package_cost_reference_usd: Dist | None = number(None, "Packaging cost of the reference die (cost_reference_area_mm2); replaced by a typed-in "
                                                           "package_cost_usd (docs/sources.md#fab-package-law).", "USD", **USD)
    package_cost_area_exponent: Dist | None = number(None, "Exponent k of packaging cost ~ die area^k (docs/sources.md#fab-package-law).",
                                                     lo=0.0, hi=4.0, why="k = 4 is beyond any cost-area law; 0 = a fixed cost")
    test_cost_reference_usd: Dist | None = number(None, "Test and assembly cost of the reference die (cost_reference_area_mm2); replaced by a typed-in "
                                                        "test_cost_usd (docs/sources.md#fab-package-law).", "USD", **USD)
    test_cost_area_exponent: Dist | None = number(None, "Exponent k of test cost ~ die area^k (docs/sources.md#fab-package-law).",
                                                  lo=0.0, hi=4.0, why="k = 4 is beyond any cost-area law; 0 = a fixed cost")
    optics_cost_usd: Dist = number(0.0, "Co-packaged optics per good package, fixed part.", "USD", **USD)
    optics_cost_per_gbps_usd: Dist = number(0.0, "Co-packaged optics per GB/s of gpu.link_gbps (per direction), added to optics_cost_usd: 2x the links, 2x this part.", "USD per GB/s", lo=0.0, hi=1e6,
                                            why="a million dollars per GB/s is beyond any optics; keeps sums finite")
