"""One block of trials through the chained stages: inputs → fab → reliability → roofline → econ.

Trial *i* of seed *s* draws every random number from streams keyed by (s, stage, i), so
the same trial of two scenarios shares its inputs wherever the scenarios share a key
(common random numbers), and a block gives the same numbers however the trials are
chunked.
"""

from __future__ import annotations

import numpy as np

from .errors import NumericalError
from .scenario import Scenario
from .scenario.sampling import TrialInputs, draw_inputs

#: Per-trial metrics summarised by `mcengine run` / `compare` (INTERFACE.md names first).
METRICS = (
    "cost_per_mtok_usd",
    "availability",
    "tokens_per_s",
    "gpu_cost_usd",
    "capex_usd",
    "energy_usd",
    "repair_usd",
    "interruptions_per_year",
    "stockout_hours",
    "tokens_per_s_per_gpu",
)

#: Metrics that can be zero in a trial (a count such as stock-out hours), so that a
#: ratio of them would mean nothing.
MAY_BE_ZERO = ("repair_usd", "interruptions_per_year", "stockout_hours")

#: Metrics compared as paired ratios B/A: those positive in every trial.
PAIRED_METRICS = tuple(m for m in METRICS if m not in MAY_BE_ZERO)

#: Prefix of the input columns in the per-trial table.
INPUT_PREFIX = "input."


def _check_finite(stage: str, scenario: Scenario, columns: dict[str, np.ndarray], inputs: TrialInputs) -> None:
    """Fail loudly on a non-finite output, naming the stage, the trial and its inputs."""
    for name, values in columns.items():
        bad = ~np.isfinite(np.asarray(values, dtype=float))
        if bad.any():
            i = int(np.argmax(bad))
            drawn = {k: float(v[i]) for k, v in inputs.values.items() if k in scenario.uncertain_inputs()}
            raise NumericalError(
                f"{stage} stage of scenario {scenario.name!r}: {name} = {values[i]} at trial {inputs.trial_start + i}; drawn inputs: {drawn}"
            )


def reliability_key(scenario: Scenario) -> tuple:
    """What the reliability stage reads: two scenarios equal here, with drawn inputs, have
    bit-identical lifetimes (their inputs share keys, so they share their draws)."""
    return (scenario.cluster, scenario.reliability, scenario.run.horizon_years)


def run_block(
    scenario: Scenario,
    seed: int,
    trial_start: int,
    n: int,
    inputs: TrialInputs | None = None,
    lifetimes_memo: dict | None = None,
) -> dict[str, np.ndarray]:
    """All per-trial columns of trials ``trial_start .. trial_start + n - 1`` of one scenario.

    ``inputs`` replaces the drawn uncertain inputs (sensitivity designs); the stages' own
    per-event randomness still comes from the trials' streams. ``lifetimes_memo`` lets the
    scenarios of one chunk share the reliability columns of equal :func:`reliability_key`
    (the dearest stage: lite-h100 and lite-h100-2x differ only in their links).
    """
    from .stages import econ, fab, roofline

    if inputs is None:
        inputs = draw_inputs(scenario, seed, trial_start, n)
    elif inputs.trial_start != trial_start or inputs.n != n:
        inputs = TrialInputs(trial_start, n, inputs.values)
    columns: dict[str, np.ndarray] = {"trial": np.arange(trial_start, trial_start + n, dtype=np.int64)}
    for stage, produce in (
        ("fab", lambda: fab.production_runs(scenario, inputs, seed)),
        ("reliability", lambda: _lifetimes(scenario, inputs, seed, lifetimes_memo)),
        ("roofline", lambda: roofline.throughput(scenario, inputs)),
        ("econ", lambda: econ.economics(scenario, inputs, columns)),
    ):
        produced = produce()
        _check_finite(stage, scenario, produced, inputs)
        columns.update(produced)
    columns["tokens_per_s_per_h100_equivalent"] = columns["tokens_per_s_per_gpu"] / scenario.gpu.h100_equivalents.value
    for key in scenario.uncertain_inputs():
        columns[INPUT_PREFIX + key] = inputs[key]
    return columns


def _lifetimes(scenario: Scenario, inputs: TrialInputs, seed: int, memo: dict | None) -> dict[str, np.ndarray]:
    from .stages import reliability

    if memo is None:
        return reliability.lifetimes(scenario, inputs, seed)
    key = reliability_key(scenario)
    if key not in memo:
        memo[key] = reliability.lifetimes(scenario, inputs, seed)
    return dict(memo[key])


def run_chunk(scenarios: tuple[Scenario, ...], seed: int, trial_start: int, n: int) -> dict[str, dict[str, np.ndarray]]:
    """One chunk of every scenario (the unit of work of the runner and of Dask workers)."""
    memo: dict = {}
    return {s.name: run_block(s, seed, trial_start, n, lifetimes_memo=memo) for s in scenarios}
