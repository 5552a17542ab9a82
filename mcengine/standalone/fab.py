"""``mcengine yield``: the fab stage over N independent wafers, beside its closed forms.

Wafer ``w`` draws the scenario's uncertain inputs as trial ``w`` and its defects from
stream ``(seed, STAGE_FAB, STREAM_WAFER, w)`` (:func:`mcengine.stages.fab.simulate_wafer_block`);
the closed forms are those of :mod:`mcengine.analytic.fab` at the median inputs.
"""

from __future__ import annotations

import math

import numpy as np

from ..analytic import fab as analytic
from .. import interrupt
from ..options import check_seed, positive
from ..summaries import BLOCK_TRIALS, Summary
from ..scenario.sampling import draw_inputs, quantile_inputs
from ..scenario.dists import Choice
from ..scenario.sections.econ import PACKAGE_PARTS
from ..stages.econ import markup_scope, price_parts
from ..stages.fab import PART_COLUMN, FabModel, attempt_cost_usd, cost_inputs, expected_harvest_yield, expected_package_costs, fab_model, simulate_wafer_block

#: Wafers per kernel call in a yield summary (bounds the per-call arrays).
CHUNK_WAFERS = 1 << 16


class _BlockFeeder:
    """Feeds a :class:`~mcengine.summaries.Summary` whole blocks of ``BLOCK_TRIALS``
    values whatever the chunks it is given (e.g. the wafers with a good die of each
    chunk), so the summary's bits do not depend on the chunk size."""

    def __init__(self, name: str):
        self.name = name
        self.summary = Summary()
        self.pending = np.empty(0)

    def add(self, values: np.ndarray) -> None:
        values = np.concatenate([self.pending, np.asarray(values, dtype=float)])
        whole = values.size - values.size % BLOCK_TRIALS
        self.summary.add(values[:whole], self.name)
        self.pending = values[whole:]

    def to_dict(self) -> dict | None:
        """The summary, or ``None`` when no value was fed (no wafer had a good die)."""
        self.summary.add(self.pending, self.name)
        self.pending = np.empty(0)
        return self.summary.to_dict() if self.summary.count else None


def _median_inputs(scenario) -> dict[str, float]:
    """The ``[fab]`` inputs at their medians, with the effective stack and optics prices
    (:func:`mcengine.stages.fab.cost_inputs`)."""
    q = quantile_inputs(scenario, 0.5)
    med = {key.removeprefix("fab."): float(q[key][0]) for key in q.values if key.startswith("fab.")}
    med.update({name: float(v[0]) for name, v in cost_inputs(scenario, q).items()})
    return med


def analytic_at_median(scenario, model: FabModel | None = None) -> dict:
    """Closed forms at the median inputs: the five whole-die yields, the harvesting
    yield of the scenario's die model, and the expected costs built on the latter."""
    model = model or fab_model(scenario)
    med = _median_inputs(scenario)
    area = model.wafer.die_area_cm2
    m = area * med["defect_density_per_cm2"]
    yields = analytic.closed_form_yields(m, med["defect_clustering"])
    q = quantile_inputs(scenario, 0.5)
    harvest = float(expected_harvest_yield(model, q)[0])
    good = model.wafer.dies * harvest
    costs = expected_package_costs(scenario, q, model)
    return {
        "yields": {**yields, "harvesting": harvest},
        "cost": {"good_dies_per_wafer": good, "cost_per_good_die_usd": med["wafer_cost_usd"] / good, "gpu_cost_usd": float(costs["gpu_cost_usd"][0])},
        "cost_parts": {p: float(costs[PART_COLUMN.format(p)][0]) for p in PACKAGE_PARTS},
        "median_inputs": {"defect_density_per_cm2": med["defect_density_per_cm2"],
                          "defect_clustering": med["defect_clustering"], "die_defects_mean": m},
    }


def _price_breakdown(scenario, parts: dict | None) -> dict | None:
    """The package's price by part: the pooled cost parts with ``econ.gpu_markup`` at its
    median on the parts of ``econ.markup_applies_to`` (a choice at its median option,
    docs/model.md#cost), or ``econ.package_markup`` on all five with ``econ.markup_scope =
    "package"``; ``None`` when ``econ.gpu_price_usd`` is given, under value pricing
    (``markup_scope = "value"``: no part is marked up) or when no wafer had a good die."""
    e = scenario.econ
    if parts is None or e.gpu_price_usd is not None or e.markup_scope == "value":
        return None
    markup = (e.package_markup if e.markup_scope == "package" else e.gpu_markup).median()
    scope = e.markup_applies_to
    applies = markup_scope(scope, np.asarray(scope.median() if isinstance(scope, Choice) else 0.0))
    if e.markup_scope == "package":
        applies = {**applies, **{p: np.asarray(True) for p in PACKAGE_PARTS}}
    priced = price_parts({k: np.asarray(v) for k, v in parts.items()}, np.asarray(markup), applies)
    return {k: float(v) for k, v in priced.items()}


def yield_summary(scenario, wafers: int, seed: int) -> dict:
    """Body of ``mcengine yield``: ``wafers`` wafers at the scenario's inputs.

    Wafer ``w`` draws the scenario's uncertain inputs as trial ``w`` of
    :func:`~mcengine.scenario.sampling.draw_inputs` and its defects from stream
    ``(seed, STAGE_FAB, STREAM_WAFER, w)``; wafers run in chunks of
    :data:`CHUNK_WAFERS` (same numbers whatever the chunking or thread count).

    Returns
    -------
    dict
        ``dies_per_wafer`` (exact grid count), ``dies_per_wafer_formula`` (classic
        approximation, reference only), summaries over wafers of ``die_yield``,
        ``good_dies_per_wafer``, ``good_h100_equivalents_per_wafer``, and over wafers
        with at least one good die of ``cost_per_good_die_usd`` and ``gpu_cost_usd``
        (``None`` when no wafer had one, as are the pooled costs and ``harvested_share``);
        ``wafers_without_good_dies``; ``harvested_share`` (good dies that carry
        defects); ``pooled`` long-run ratios (total spend / total good output);
        ``analytic`` (the five named whole-die yields and ``harvesting`` at the median
        inputs), ``analytic_cost`` and ``median_inputs``; the package cost by part
        (docs/model.md#cost): ``gpu_cost_breakdown_usd`` (pooled ``die``, ``hbm``,
        ``packaging``, ``test``, ``optics``, adding up to the pooled ``gpu_cost_usd``),
        ``gpu_price_breakdown_usd`` (the same with the median markup on the parts of
        ``econ.markup_applies_to``, or the package markup on all five with ``markup_scope =
        "package"``; ``None`` with a given price or value pricing) and
        ``analytic_cost_breakdown_usd`` (the closed form's parts at the median inputs).
    """
    positive("--wafers", wafers)
    check_seed(seed)
    model = fab_model(scenario)
    dies = model.wafer.dies
    names = ("die_yield", "good_dies_per_wafer", "good_h100_equivalents_per_wafer", "cost_per_good_die_usd", "gpu_cost_usd")
    sums = {name: _BlockFeeder(f"fab {name}") for name in names}
    total = {"good": 0, "harvested": 0, "empty": 0}
    # per-wafer means of the pooled ratios (block-merged, so chunk-independent)
    money = {name: _BlockFeeder(f"fab {name}") for name in ("wafer_usd", "spend_usd", "packages", "optics_usd",
                                                             "hbm_usd", "packaging_usd", "test_usd")}
    with interrupt.deferred():  # a signal stops between chunks
        for start in range(0, int(wafers), CHUNK_WAFERS):
            inputs = draw_inputs(scenario, seed, start, min(CHUNK_WAFERS, int(wafers) - start))
            good, harvested = simulate_wafer_block(model, inputs, seed)
            kits = good / model.dies_per_package  # packages' worth of good dies
            c = cost_inputs(scenario, inputs)
            ok = good > 0
            sums["die_yield"].add(good / dies)
            sums["good_dies_per_wafer"].add(good)
            sums["good_h100_equivalents_per_wafer"].add(kits * model.h100_equivalents)
            sums["cost_per_good_die_usd"].add(c["wafer_cost_usd"][ok] / good[ok])
            sums["gpu_cost_usd"].add(analytic.cost_per_good_package(
                c["wafer_cost_usd"][ok], kits[ok], model.hbm_stacks, c["hbm_stack_cost_usd"][ok], c["hbm_stack_yield"][ok],
                c["package_cost_usd"][ok], c["test_cost_usd"][ok], c["assembly_yield"][ok], c["optics_cost_usd"][ok]))
            total["good"] += int(good.sum())
            total["harvested"] += int(harvested.sum())
            total["empty"] += int((~ok).sum())
            money["wafer_usd"].add(c["wafer_cost_usd"])
            money["spend_usd"].add(c["wafer_cost_usd"] + kits * attempt_cost_usd(model, c))
            money["packages"].add(kits * c["assembly_yield"])
            money["optics_usd"].add(c["optics_cost_usd"])
            money["hbm_usd"].add(kits * model.hbm_stacks * c["hbm_stack_cost_usd"] / c["hbm_stack_yield"])
            money["packaging_usd"].add(kits * c["package_cost_usd"])
            money["test_usd"].add(kits * c["test_cost_usd"])
            interrupt.check()
    mean = {name: feeder.to_dict()["mean"] for name, feeder in money.items()}
    good = total["good"]
    at = analytic_at_median(scenario, model)
    pooled_parts = None
    if good:
        pooled_parts = {"die": mean["wafer_usd"] / mean["packages"], "hbm": mean["hbm_usd"] / mean["packages"],
                        "packaging": mean["packaging_usd"] / mean["packages"], "test": mean["test_usd"] / mean["packages"],
                        "optics": mean["optics_usd"]}
    w = model.wafer
    f = scenario.fab
    return {
        "dies_per_wafer": dies,
        "dies_per_wafer_formula": analytic.dies_per_wafer_formula(
            f.wafer_diameter_mm.value, f.edge_exclusion_mm.value, w.die_w_mm, w.die_h_mm, f.scribe_mm.value),
        "die_area_mm2": w.die_w_mm * w.die_h_mm,
        **{name: s.to_dict() for name, s in sums.items()},
        "wafers_without_good_dies": total["empty"],
        "harvested_share": total["harvested"] / good if good else None,
        "harvesting": {"units_per_die": model.units, "units_required": model.units - model.spares,
                       "enabled": model.spares > 0},
        "pooled": {
            "die_yield": total["good"] / (dies * int(wafers)),
            # no good die in the sample: no cost per good die to report (None), not infinity
            "cost_per_good_die_usd": mean["wafer_usd"] * int(wafers) / good if good else None,
            "gpu_cost_usd": mean["spend_usd"] / mean["packages"] + mean["optics_usd"] if good else None,
        },
        "gpu_cost_breakdown_usd": pooled_parts,
        "gpu_price_breakdown_usd": _price_breakdown(scenario, pooled_parts),
        "analytic": at["yields"],
        "analytic_cost": at["cost"],
        "analytic_cost_breakdown_usd": at["cost_parts"],
        "analytic_out_of_range": sorted(k for k, v in {**at["yields"], **at["cost"]}.items() if not math.isfinite(v)),
        "median_inputs": at["median_inputs"],
    }
