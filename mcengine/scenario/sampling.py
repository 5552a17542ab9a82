"""Drawing the uncertain inputs of a block of trials.

Input ``key`` of trial ``i`` is ``dist.ppf(u)`` with ``u`` the first uniform of the
counter-based stream ``(seed, STAGE_INPUTS, crc32(key), i)``. So a trial's inputs do not
depend on the chunking, and two scenarios that share a key (whatever their other keys)
draw it at the same quantile in the same trial: common random numbers. An input whose
``dist`` table says ``shared = false`` is drawn per design instead, from
``(seed, STAGE_DESIGN_INPUTS, crc32(scenario name NUL key), i)``
(docs/model.md#per-design-inputs).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from ..errors import InputError, Problem
from .derive import apply_trials
from .dists import Law
from .schema import Scenario


def input_stream_id(key: str) -> int:
    """Stable 32-bit stream id of an input key (never depends on the input's position)."""
    return zlib.crc32(key.encode("utf-8"))


def input_stream(scenario: Scenario, key: str, dist) -> tuple[int, int]:
    """(stage, stream id) of an input: the common stream of its key, or for a ``shared =
    false`` input one of the scenario's own, so each design draws it independently."""
    from ..rng import STAGE_DESIGN_INPUTS, STAGE_INPUTS

    if dist.shared:
        return STAGE_INPUTS, input_stream_id(key)
    return STAGE_DESIGN_INPUTS, input_stream_id(f"{scenario.name}\x00{key}")


@dataclass(frozen=True)
class TrialInputs:
    """Per-trial values of every number-valued input: ``values[key]`` has shape (n,)."""

    trial_start: int
    n: int
    values: dict[str, np.ndarray]

    def __getitem__(self, key: str) -> np.ndarray:
        return self.values[key]

    def law_values(self, key: str, law: Law) -> dict[str, np.ndarray]:
        """The parameters of law ``key`` by suffix (``"median"``, ``"parts.1.sigma"``)."""
        return {suffix: self.values[f"{key}.{suffix}"] for suffix, _ in law.param_items()}


def draw_inputs(scenario: Scenario, seed: int, trial_start: int, n: int) -> TrialInputs:
    """Inputs of trials ``trial_start .. trial_start + n - 1``."""
    from ..rng import uniforms_for_trials

    values = {}
    for key, dist in scenario.inputs().items():
        if dist.is_fixed:
            values[key] = np.full(n, dist.value)
        else:
            u = uniforms_for_trials(np.uint64(seed), *input_stream(scenario, key, dist), trial_start, n)
            values[key] = dist.ppf(u)
    apply_trials(scenario, values, n)
    return TrialInputs(trial_start, n, values)


def quantile_inputs(scenario: Scenario, q: float = 0.5, at: dict[str, float] | None = None) -> TrialInputs:
    """One trial with every input at quantile ``q`` (the median by default), except the
    inputs in ``at`` (key -> quantile): the tornado and `mcengine roofline` use this."""
    at = at or {}
    unknown = [k for k in at if k not in scenario.inputs()]
    if unknown:
        raise InputError([Problem(k, at[k], "not an input of this scenario") for k in unknown])
    values = {key: np.array([dist.quantile(at.get(key, q))]) for key, dist in scenario.inputs().items()}
    apply_trials(scenario, values, 1)
    return TrialInputs(0, 1, values)


def inputs_from_columns(scenario: Scenario, columns: dict[str, np.ndarray]) -> TrialInputs:
    """Trials whose uncertain inputs are given (e.g. a Sobol design); the rest at their
    fixed value or median."""
    n = len(next(iter(columns.values())))
    values = {}
    for key, dist in scenario.inputs().items():
        values[key] = np.asarray(columns[key], dtype=float) if key in columns else np.full(n, dist.median())
    apply_trials(scenario, values, n)
    return TrialInputs(0, n, values)
