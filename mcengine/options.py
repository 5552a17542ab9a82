"""Checks of the command options shared by the API and the sensitivity studies."""

from __future__ import annotations

import numpy as np

from .errors import InputError, Problem


def positive(option: str, value: int) -> int:
    """``value`` if it is a positive integer, else InputError naming ``option``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InputError(Problem(option, value, "allowed: a positive integer"))
    return int(value)


def check_seed(seed) -> int:
    """``seed`` if it is a valid master seed (an integer in [0, 2**64 - 1]), else InputError."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**64:
        raise InputError(Problem("--seed", seed, "allowed: an integer in [0, 2**64 - 1]"))
    return int(seed)


def seed_of(scenario, seed: int | None) -> int:
    """The master seed: ``--seed`` if given, else the scenario's ``run.seed``."""
    return check_seed(scenario.run.seed if seed is None else seed)
