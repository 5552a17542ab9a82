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


def shared_run(scenarios, **given) -> dict:
    """Each ``run.<key>`` of a command's scenarios: the given value (``--<key>``) if not
    None, else the scenarios' own, which must agree: one command draws one sample (paired
    trials) of one size from one seed. InputError naming each ``run.<key>`` that differs."""
    problems, out = [], {}
    for key, value in given.items():
        values = {s.name: getattr(s.run, key) for s in scenarios}
        if value is None and len(set(values.values())) > 1:
            problems.append(Problem(f"run.{key}", values, f"the scenarios of one command share one run.{key} (their trials are "
                                    f"paired): set it once for all (--set run.{key}=...), or give --{key}"))
        out[key] = next(iter(values.values())) if value is None else value
    if problems:
        raise InputError(problems)
    return out


def seed_of(scenarios, seed: int | None) -> int:
    """The master seed: ``--seed`` if given, else the scenarios' shared ``run.seed``
    (``scenarios``: one scenario or several)."""
    return check_seed(shared_run(scenarios if isinstance(scenarios, (list, tuple)) else [scenarios], seed=seed)["seed"])
