"""A key no model reads (``workload.load.service_cv``, docs/load.md#queue) is accepted, so
that older scenarios load, but is no input: a dist on it is never drawn, changes no output
column, names no driver of the verdict nor any sensitivity factor, and ``mcengine check``
warns of it (exit 0)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mcengine import api
from mcengine.pipeline import run_block
from mcengine.report.verdict import _drivers
from mcengine.scenario.sampling import run_sampler
from mcengine.sensitivity.methods import _union_inputs

KEY = "workload.load.service_cv"
SPREAD = f'{KEY}={{dist="uniform", low=0.2, high=3}}'
LOAD = ["workload.load.demand=200000", "workload.load.peak_to_mean=1.5", 'cluster.instances="auto"', "run.sampler=\"sobol\""]
N = 16


def test_a_dist_on_service_cv_changes_no_column_and_is_no_input():
    """h100 and lite-h100 under load, with and without the spread on service_cv: the same
    columns, bit for bit (no input column for it); it is no input, no Sobol' dimension, no
    sensitivity factor, and the verdict's drivers, computed on the pair, never name it."""
    plain = [api.check(name, LOAD) for name in ("h100", "lite-h100")]
    spread = [api.check(name, [*LOAD, SPREAD]) for name in ("h100", "lite-h100")]
    assert spread[0].unread_keys() == {KEY: spread[0].workload.load.service_cv} and not spread[0].workload.load.service_cv.is_fixed
    assert plain[0].unread_keys() == {}
    assert KEY not in spread[0].inputs() and KEY not in run_sampler(spread).dimensions
    assert not [label for label in _union_inputs(spread) if KEY in label]
    tables = []
    for a, b in zip(plain, spread):
        x, y = run_block(a, 0, 0, N), run_block(b, 0, 0, N)
        assert sorted(x) == sorted(y) and "input." + KEY not in y
        for column in x:
            np.testing.assert_array_equal(x[column], y[column], err_msg=column)
        tables.append(pd.DataFrame({"scenario": b.name, "trial": np.arange(N), **{k: v for k, v in y.items() if np.ndim(v) == 1}}))
    drivers = _drivers(pd.concat(tables, ignore_index=True), "h100", "lite-h100")
    assert drivers["inputs"] and not [d for d in drivers["inputs"] if d["key"] == KEY]


def test_check_warns_of_a_key_no_model_reads(cli):
    """``mcengine check`` with service_cv set: exit 0, a warning naming the key and that no
    model reads it; without it, no such warning."""
    r = cli("check", "h100", "--set", SPREAD)
    assert r.code == 0 and f"warning: h100: {KEY} = " in r.err and "read by no model" in r.err, r.err
    r = cli("check", "h100")
    assert r.code == 0 and KEY not in r.err, r.err
