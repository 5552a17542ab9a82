"""The roofline stage's per-trial columns of an evaluated plan (docs/model.md#roofline):
one plan for every trial (:func:`evaluation_columns`) or each trial's own
(:func:`planned_columns`), each checked finite (:func:`checked`)."""

from __future__ import annotations

import numpy as np

from ...errors import InputError, NumericalError, Problem
from ...scenario.sampling import TrialInputs
from ...units import MS_PER_S
from .planner import PlannedBlock


def at_trial(x: np.ndarray, i: int = 0) -> float:
    """Element ``i`` of a per-trial array (or a scalar) as a float."""
    return float(np.ravel(x)[i])


def evaluation_columns(e, inputs: TrialInputs, serving: str, chosen: str = "at the median inputs") -> dict[str, np.ndarray]:
    """The per-trial columns of an evaluation of any serving mode (checked finite)."""
    misfit = ~e.fits
    if misfit.any():
        i = int(np.argmax(misfit))
        raise InputError(
            Problem(
                "workload.serving",
                serving,
                f"in trial {inputs.trial_start + i} the weights, the batch's KV cache or the prefill chunk do not fit at the layout "
                f"chosen {chosen} (tensor {e.layout.tensor} x pipeline {e.layout.pipeline}); allowed: inputs whose "
                "whole range fits them (gpu.hbm_gb, workload.hbm_usable_fraction, workload.prefill_chunk_tokens), or workload.plan = \"per_trial\"",
            )
        )
    served = e.slo_met
    return checked({
        "tokens_per_s_instance": np.where(served, e.tokens_per_s_instance, 0.0),
        "tokens_per_s_per_gpu": np.where(served, e.tokens_per_s_per_gpu, 0.0),
        "ttft_ms": e.ttft_s * MS_PER_S,
        "tpot_ms": e.tpot_s * MS_PER_S,
        "batch": e.batch.astype(np.int64),
        "slo_met": served.astype(np.float64),
        "busy_fraction": e.busy_fraction,
    }, inputs)


def planned_columns(block: PlannedBlock, inputs: TrialInputs) -> dict[str, np.ndarray]:
    """The per-trial columns of each trial's own plan (``slo_met`` 0 and no tokens where no
    plan meets the SLOs: the trial is infeasible)."""
    served = block.feasible
    return checked({
        "tokens_per_s_instance": np.where(served, block.column("tokens_per_s_instance"), 0.0),
        "tokens_per_s_per_gpu": np.where(served, block.column("tokens_per_s_per_gpu"), 0.0),
        "ttft_ms": block.column("ttft_s") * MS_PER_S,
        "tpot_ms": block.column("tpot_s") * MS_PER_S,
        "batch": block.column("batch").astype(np.int64),
        "slo_met": served.astype(np.float64),
        "busy_fraction": block.column("busy_fraction"),
    }, inputs)


def checked(columns: dict[str, np.ndarray], inputs: TrialInputs) -> dict[str, np.ndarray]:
    """``columns``, after checking every value finite (NumericalError naming the trial)."""
    for name, values in columns.items():
        bad = ~np.isfinite(values.astype(float))
        if bad.any():
            i = int(np.argmax(bad))
            raise NumericalError(f"roofline stage: {name} = {values[i]} at trial {inputs.trial_start + i}")
    return columns
