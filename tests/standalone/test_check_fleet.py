"""The fleet the chain buys under load-diurnal's demand, checked in the request-level
simulator (docs/load/check_fleet.py, docs/load.md#fleet-check) for one design at a modest
request count."""

from __future__ import annotations

import pytest

from tests.docs_scripts import docs_script


@pytest.mark.slow
def test_h100s_bought_fleet_meets_the_slos_in_the_simulator_and_one_instance_fewer_is_saturated():
    """h100 at the median inputs: the chain buys U up instances (its pipeline's fleet less
    its headroom, the load stage's fewest_instances, asserted equal in chain_fleet); at the
    peak the simulator's P99 TTFT and P99 TPOT on U instances are within their SLOs up to 4
    SEM (4 independent runs of 100,000 requests, long enough that the fleet is filled: its
    measured utilisation within 2 % of the load, 0.996; the full check runs 8 x 200,000),
    and on U - 1 the peak is beyond the plan's saturated rate (the load over 1: its queue
    grows for as long as the peak lasts, past the TTFT SLO over the day's peak)."""
    check = docs_script("load/check_fleet")
    fleet = check.chain_fleet("h100")
    assert fleet["up"] == 87  # docs/load.md#fleet-check: the 88 bought less 1 for failures
    at_u = check.simulated(fleet, fleet["up"], 100_000, replications=4)
    assert at_u["load"] < 1.0
    assert at_u["utilisation"] == pytest.approx(at_u["load"], rel=0.02)
    assert at_u["sim_ttft_p99_ms"] <= at_u["ttft_slo_ms"] + 4 * at_u["sem_ttft_p99_ms"]
    assert at_u["sim_tpot_p99_ms"] <= at_u["tpot_slo_ms"] + 4 * at_u["sem_tpot_p99_ms"]
    per_instance = float(fleet["columns"]["tokens_per_s_instance"][0])
    assert fleet["peak_tokens_per_s"] > (fleet["up"] - 1) * per_instance


def test_the_pages_fleet_check_is_the_committed_csv():
    """docs/load.md's fleet-check block is rendered from docs/load/fleet-check.csv: every
    design at U and U - 1, U the fleet the page's measured table reports less its headroom
    (88 / 110 / 97 bought, 1 each for failures)."""
    import pandas as pd

    check = docs_script("load/check_fleet")
    table = pd.read_csv(check.CSV)
    assert list(table.design) == [d for d in check.DESIGNS for _ in range(2)]
    assert list(table.instances) == [87, 86, 109, 108, 96, 95]
    assert (table.requests == check.REQUESTS).all() and (table.replications == check.REPLICATIONS).all()
    text = check.PAGE.read_text()
    assert text[text.index(check.BEGIN) + len(check.BEGIN):text.index(check.END)].strip() == check.render(table)
