"""``[run]``: the horizon and the default sample."""

from __future__ import annotations

from dataclasses import dataclass

from ..dists import Dist
from ...options import MAX_SAMPLE, SAMPLE_DEFAULTS
from ...units import HOURS_PER_YEAR
from ..fields import choice, integer, number

#: The shortest horizon: one hour. The cost per million tokens divides the horizon's cost
#: by its tokens, total x 10^6 / (tokens/s x horizon): a cluster that serves tokens at
#: all keeps it finite over an hour (within 10^6 / 3600 of total / (tokens/s)), while a
#: horizon of 1e-305 years gave 3.7e305 USD per M tokens and 1e-310 years overflowed.
MIN_HORIZON_YEARS = 1.0 / HOURS_PER_YEAR


@dataclass(frozen=True)
class RunSection:
    horizon_years: Dist = number(5.0, "Service life of the cluster over which costs and tokens add up.", "years", lo=MIN_HORIZON_YEARS, hi=30.0, uncertain=False,
                                 why="reliability run time grows with the horizon, and 30 years outlives any cluster; below one hour the cost "
                                     "per token (divided by the horizon's tokens) leaves float range, and no cluster lives that short")
    trials: int = integer(SAMPLE_DEFAULTS["scenario"].size, "Default number of trials of `mcengine run` (the `--trials` option wins).", lo=1, hi=MAX_SAMPLE,
                          why="the same bound as --trials: run time and the per-trial table grow with it")
    seed: int = integer(0, "Default master seed (the `--seed` option wins).", lo=0, hi=2**64 - 1, why="the generator's 64-bit key")
    sampler: str = choice("random", "How `run`, `compare` and `sweep` draw each trial's uncertain inputs: \"random\" (independent "
                          "pseudo-random draws, plain Monte Carlo) or \"sobol\" (randomised quasi-Monte Carlo: scrambled Sobol' "
                          "points indexed by trial number, standard errors from independent scramblings; the per-event laws keep "
                          "their pseudo-random streams). The `--sampler` option wins. Stage commands always draw \"random\".",
                          ("random", "sobol"))
    scramblings: int = integer(16, "Independent scramblings of the Sobol' sampler (trial i belongs to scrambling i mod this): "
                               "every standard error is the spread of the scramblings' means, with this many minus one "
                               "degrees of freedom. Read only with run.sampler = \"sobol\".",
                               lo=2, hi=1024, why="at least two for a standard error; more than 1,024 leaves too few points "
                               "per scrambling for the Sobol' points to gain over random ones")
