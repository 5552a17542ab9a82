"""The life kernel against saved outputs: every reliability column of the shipped
scenarios and of stock-out-heavy, reshard and variant (fast-swap pair) cases, bit for
bit, so that a change of the kernel's algorithm or of its compiled structure that moves
any number fails here.

The fixture ``fixtures/life_reference.npz`` was written by this module
(``python tests/kernels/test_life_fixtures.py --write``) with the kernel of commit
8ebb93d; regenerate it only for a change that is meant to move the numbers.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import FP8_FIT_EFFICIENCIES

FIXTURE = Path(__file__).parent / "fixtures" / "life_reference.npz"
SEED = 20261204

#: name -> (scenarios run in one reliability call, overrides, lifetimes)
CASES = {
    "h100": (("h100",), (), 32),
    "lite-h100": (("lite-h100",), (), 16),
    "fastswap-pair": (("lite-h100-2x", "lite-h100-2x-fastswap"), (), 12),
    # a shallow pool, few slow crews: stock-outs, queued repairs, the heap of repairs
    "stockout": (("lite-h100",), ("cluster.spare_gpus=6", "reliability.repair_crews=3", "reliability.repair_hours=400"), 12),
    # a pool that runs dry now and then: stock-outs between long spells with units to spare
    "stockout-mild": (("lite-h100",), ("cluster.spare_gpus=24", "reliability.repair_hours=150"), 12),
    "stockout-h100": (("h100",), ("cluster.spare_gpus=1", "reliability.repair_crews=1", "reliability.repair_hours=300"), 24),
    # the capacity table of the saved run: the static one that workload.plan = "median"
    # keeps, with the tensor-parallel attention its layouts used and the efficiencies of then
    "reshard": (("lite-h100",), ('cluster.on_failure="reshard"', "cluster.spare_gpus=8", 'workload.plan="median"', 'workload.attention="tensor"',
                                 *FP8_FIT_EFFICIENCIES), 8),
}


def columns(case: str) -> dict[str, np.ndarray]:
    """Every reliability column of ``case``, keyed ``<scenario>/<column>``."""
    from mcengine.scenario import load_scenario
    from mcengine.scenario.sampling import draw_inputs
    from mcengine.stages.reliability import lifetimes_of

    names, overrides, n = CASES[case]
    scenarios = [load_scenario(name, list(overrides)) for name in names]
    inputs = [draw_inputs(s, SEED, 5, n) for s in scenarios]
    out = {}
    for s, cols in zip(scenarios, lifetimes_of(scenarios, inputs, SEED)):
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


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    doc = {}
    for name in CASES:
        doc.update(columns(name))
    FIXTURE.parent.mkdir(exist_ok=True)
    np.savez_compressed(FIXTURE, **doc)
    print(f"{FIXTURE}: {len(doc)} columns")
