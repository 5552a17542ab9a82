"""The continuous fast model at a small length spread against the simulator
(docs/load.md#small-spread): the committed table is the page's and the model's as it is now."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.docs_scripts import docs_script
from tests.standalone.fit_checks import assert_block_is_committed_and_model, replicated


@pytest.fixture(scope="module")
def table():
    return docs_script("load/make_spread_table")


def test_the_spread_table_on_the_page_is_the_committed_grid_and_the_model(table):
    """docs/load.md's block is rendered from docs/load/spread-table.csv, and the committed
    fast-model columns are the model's now (the refit of the simulated columns)."""
    committed = assert_block_is_committed_and_model(table, lambda row: table.spread_system(row["design"]))
    assert set(committed.length_cv) == {table.LENGTH_CV} and len(committed) == 36


def test_the_spread_table_counts_do_not_fall(table):
    """The committed grid's count, which a change to the model may raise but not lower: 6 of
    the 36 cells within the criterion (the light loads)."""
    assert pd.read_csv(table.CSV).passes.sum() >= 6


@pytest.mark.slow
@pytest.mark.parametrize("name, arrival, cv, load", [("h100", "poisson", 1.0, 0.8), ("lite-h100", "gamma", 2.0, 0.5)])
def test_the_committed_simulated_cells_are_settled(table, name, arrival, cv, load):
    """Each table cell is one run of seed 0; three independent replications of the same
    length (seed 1) give its mean and P99 TTFT within 4 of their standard errors and
    its own (the run's sectioning) added in quadrature: a 2 % spread leaves no pattern that
    a run inherits over holding times (docs/load.md#lite-pairs), so the table's runs are
    settled."""
    system = table.spread_system(name)
    rate = load * system.capacity_tokens_per_s / system.output_tokens
    sim, sem = replicated(system, rate, table.REQUESTS, 3, 1, 0.5, arrival, cv)
    row = pd.read_csv(table.CSV).query("design == @name and arrival == @arrival and load == @load").iloc[0]
    for i, k in enumerate(("ttft_p99", "ttft_mean")):
        assert abs(sim[i] - row[f"sim_{k}_ms"]) <= 4.0 * np.hypot(sem[i], row[f"sim_{k}_sem_ms"]), (k, sim[i], sem[i], row[f"sim_{k}_ms"])
