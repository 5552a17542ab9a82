"""The life kernel against saved outputs: every reliability column of the shipped
scenarios and of stock-out-heavy, reshard and variant (fast-swap pair) cases, bit for
bit, so that a change of the kernel's algorithm or of its compiled structure that moves
any number fails here.

The fixture ``fixtures/life_reference.npz`` was written by this module
(``python tests/kernels/test_life_fixtures.py --write``) with the kernel of commit
8ebb93d, and the ``units-*`` cases (hosts as units, classes per NIC, the shipped
designs since) with the kernel that added them, after checking every other case
against the file as it was; the ``units-module-*`` cases (the module pool) and every
case's ``module_stockout_hours`` column likewise, every other column of the file kept
bit for bit; the ``units-clocked*`` and ``units-stockout`` cases with the kernel of
commit 27af731 (before lives past the horizon were left uncomputed and modules took the
fast paths); the ``units-module-reshard`` case's columns with the kernel that keeps a
GPU lost under reshard until the module its position waits for is in (its capacity
availability moved in 2 of 8 lifetimes, every other column the same bits); regenerate it
only for a change that is meant to move the numbers. The reshard cases pin the
collectives in series (``workload.comm_overlap = 0``, a dist since issue 45) and, through
the explicit efficiencies, the KV cache read at the memory efficiency: the capacity
tables their fixtures were written with.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import FP8_FIT_EFFICIENCIES

FIXTURE = Path(__file__).parent / "fixtures" / "life_reference.npz"
SEED = 20261204

#: The shipped designs as they were before hosts were units and classes were counted per
#: NIC (every host failure a failure of its GPUs, network faults per GPU package, the Lite's
#: laser an assumed wear-out law on the package): the cases below that use these keep the
#: numbers of the kernel of commit 8ebb93d, bit for bit.
OLD_H100 = ('reliability.host_failure="gpus"', 'reliability.components.network.per="gpu"')
OLD_LITE = ('reliability.host_failure="gpus"', "reliability.host_afr=0.07", "reliability.host_transient_afr=0.11",
            "reliability.components={die={afr=0.00625, transient_afr=0.011}, hbm={afr=0.002, transient_afr=0.004}, "
            "gsp={afr=0.002, transient_afr=0.005}, network={afr=0.0034, transient_afr=0.0105}, "
            "laser={first_year_fraction=0.01, weibull_shape=2.0}}")

#: Per-unit clocks for every kind of unit: dies and hosts with infant mortality (shape < 1),
#: the laser modules wearing out, a second module class of its own shape.
CLOCKED = ("reliability.components.die.weibull_shape=0.7", "reliability.host_weibull_shape=0.8",
           "reliability.components.laser.weibull_shape=2.0",
           'reliability.components.laser2={afr=0.002, replace_unit="module"}')

#: The Lite's optics without link flaps, as the shipped designs were when the ``units-*``
#: cases were saved (docs/sources.md#rel-cpo-mtbf has the flaps since): the same inputs bit
#: for bit, so these cases keep checking the kernel.
NO_FLAPS = ("reliability.components.optics.transient_afr=0.0",)

#: name -> (scenarios run in one reliability call, overrides, lifetimes)
CASES = {
    "h100": (("h100",), OLD_H100, 32),
    "lite-h100": (("lite-h100",), OLD_LITE, 16),
    "fastswap-pair": (("lite-h100-2x", "lite-h100-2x-fastswap"), OLD_LITE, 12),
    # a shallow pool, few slow crews: stock-outs, queued repairs, the heap of repairs
    "stockout": (("lite-h100",), OLD_LITE + ("cluster.spare_gpus=6", "reliability.repair_crews=3", "reliability.repair_hours=400"), 12),
    # a pool that runs dry now and then: stock-outs between long spells with units to spare
    "stockout-mild": (("lite-h100",), OLD_LITE + ("cluster.spare_gpus=24", "reliability.repair_hours=150"), 12),
    "stockout-h100": (("h100",), OLD_H100 + ("cluster.spare_gpus=1", "reliability.repair_crews=1", "reliability.repair_hours=300"), 24),
    # the capacity table of the saved run: the static one that workload.plan = "median"
    # keeps, with the tensor-parallel attention its layouts used and the efficiencies of then
    "reshard": (("lite-h100",), OLD_LITE + ('cluster.on_failure="reshard"', "cluster.spare_gpus=8", 'workload.plan="median"', 'workload.attention="tensor"',
                                           *FP8_FIT_EFFICIENCIES, "workload.comm_overlap=0"), 8),
    # the shipped designs: hosts as units with host pools, network faults per NIC, the
    # Lite's laser an external module (saved by the kernel of this commit's parent's change)
    "units-h100": (("h100",), (), 32),
    "units-lite-h100": (("lite-h100",), NO_FLAPS, 16),
    "units-fastswap-pair": (("lite-h100-2x", "lite-h100-2x-fastswap"), NO_FLAPS, 12),
    # host stock-outs: one spare host, slow host repairs
    "units-host-stockout": (("lite-h100",), NO_FLAPS + ("cluster.spare_hosts=1", "reliability.repair_hours=400", "reliability.host_afr=0.5"), 12),
    "units-reshard": (("lite-h100",), NO_FLAPS + ('cluster.on_failure="reshard"', "cluster.spare_gpus=8", "cluster.spare_hosts=1", 'workload.plan="median"',
                                       'workload.attention="tensor"', "reliability.host_afr=0.5", "reliability.repair_hours=200", *FP8_FIT_EFFICIENCIES, "workload.comm_overlap=0"), 8),
    # module stock-outs: a pool of one laser module, a long restock, lasers failing often
    "units-module-stockout": (("lite-h100",), NO_FLAPS + ("cluster.spare_modules=1", "reliability.module_restock_hours=2000",
                                               "reliability.components.laser.afr=0.002"), 12),
    "units-module-reshard": (("lite-h100",), NO_FLAPS + ('cluster.on_failure="reshard"', "cluster.spare_modules=1", 'workload.plan="median"',
                                              'workload.attention="tensor"', "reliability.module_restock_hours=2000",
                                              "reliability.components.laser.afr=0.002", *FP8_FIT_EFFICIENCIES, "workload.comm_overlap=0"), 8),
    # per-unit clocks everywhere: infant-mortality dies and hosts, two module groups (one
    # wear-out), alone and as the fast-swap pair (variants parting at a clock armed later)
    "units-clocked": (("lite-h100",), NO_FLAPS + CLOCKED, 12),
    "units-clocked-pair": (("lite-h100-2x", "lite-h100-2x-fastswap"), NO_FLAPS + CLOCKED, 8),
    # modules beside a dry GPU pool (and so a module pool of 6), queued repairs and one spare host
    "units-stockout": (("lite-h100",), NO_FLAPS + ("cluster.spare_gpus=6", "reliability.repair_crews=3", "reliability.repair_hours=400",
                                        "cluster.spare_hosts=1", "reliability.host_afr=0.3",
                                        'reliability.components.laser2={afr=0.02, replace_unit="module"}'), 12),
}


def columns(case: str) -> dict[str, np.ndarray]:
    """Every reliability column of ``case``, keyed ``<scenario>/<column>``."""
    from mcengine.pipeline import reshard_capacity
    from mcengine.scenario import load_scenario
    from mcengine.scenario.sampling import draw_inputs
    from mcengine.stages.reliability import lifetimes_of

    names, overrides, n = CASES[case]
    scenarios = [load_scenario(name, list(overrides)) for name in names]
    inputs = [draw_inputs(s, SEED, 5, n) for s in scenarios]
    out = {}
    for s, cols in zip(scenarios, lifetimes_of(scenarios, inputs, SEED, [reshard_capacity(s) for s in scenarios])):
        out.update({f"{case}:{s.name}/{k}": np.asarray(v) for k, v in cols.items()})
    return out


@pytest.fixture(scope="module")
def reference():
    with np.load(FIXTURE) as f:
        return dict(f)


@pytest.mark.parametrize("case", list(CASES))
def test_every_column_equals_the_reference_bit_for_bit(case, reference):
    got = columns(case)
    want = {k: v for k, v in reference.items() if k.startswith(case + ":")}
    assert want and set(got) == set(want)
    for key, value in want.items():
        assert got[key].dtype == value.dtype and np.array_equal(got[key], value), key


def test_the_stockout_cases_do_run_out_of_stock(reference):
    for case in ("stockout", "stockout-mild", "stockout-h100"):
        hours = [v for k, v in reference.items() if k.startswith(case + ":") and k.endswith("/stockout_hours")]
        assert hours and (hours[0] > 0).mean() > 0.5, case
    hours = [v for k, v in reference.items() if k.startswith("units-host-stockout:") and k.endswith("/host_stockout_hours")]
    assert hours and (hours[0] > 0).mean() > 0.5


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    doc = {}
    for name in CASES:
        doc.update(columns(name))
    FIXTURE.parent.mkdir(exist_ok=True)
    np.savez_compressed(FIXTURE, **doc)
    print(f"{FIXTURE}: {len(doc)} columns")
