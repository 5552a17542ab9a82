"""Checks of the command options shared by the API and the sensitivity methods."""

from __future__ import annotations

import numpy as np

from .errors import InputError, Problem


#: Largest sample size (``--trials``, ``--wafers``, ``--lifetimes``, ``run.trials``).
#: The per-trial work and the per-trial table (``trials.parquet``, ~100 bytes a trial)
#: grow with it: 10^9 trials is already ~100 GB of table and hours of chain time, while
#: 2**40 allocated 7 GB of bookkeeping before the first trial. ``run.trials`` has the same
#: bound, so a scenario's default sample is always a legal ``--trials``.
MAX_SAMPLE = 10**9


def positive(option: str, value: int, limit: int = MAX_SAMPLE) -> int:
    """``value`` if it is an integer in ``[1, limit]``, else InputError naming ``option``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= limit:
        raise InputError(Problem(option, value, f"allowed: a positive integer up to {limit:,} (run time and per-trial storage grow with it)"))
    return int(value)


def check_seed(seed) -> int:
    """``seed`` if it is a valid master seed (an integer in [0, 2**64 - 1]), else InputError."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**64:
        raise InputError(Problem("--seed", seed, "allowed: an integer in [0, 2**64 - 1]"))
    return int(seed)


def seed_of(scenario, seed: int | None) -> int:
    """The master seed: ``--seed`` if given, else the scenario's ``run.seed``."""
    return check_seed(scenario.run.seed if seed is None else seed)
