"""Checks of the command options shared by the API and the sensitivity methods, and the
one table of default sample sizes (:data:`SAMPLE_DEFAULTS`, docs/cli.md#sample-sizes)."""

from __future__ import annotations

import math
from dataclasses import dataclass

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


#: Independent scramblings of a design (the groups of its intervals' jackknife). Eight
#: keep a Student's t quantile of 2.36 (7 degrees of freedom) while each scrambling keeps
#: N / 8 rows of quasi-random balance: on the smooth Ishigami function at N = 1,024 they
#: give the narrowest intervals that cover the known indices at the nominal rate (32
#: scramblings of 32 rows double S1's). An output with kinks gains little from balance and
#: more from 32 (``--scramblings``; docs/sensitivity.md#scramblings).
DEFAULT_SCRAMBLINGS = 8


#: The rule every default sample size follows (docs/cli.md#sample-sizes).
SAMPLE_RULE = ("A command's default sample is sized by what it states. A figure stated as a result (a run's "
               "P(B better), a yield) gets a share's standard error 0.5/sqrt(N) of at most 0.005, so N >= 10,000 "
               "draws. A command that repeats the chain over many points (sweep values, tornado bars, Sobol' "
               "columns, the paper's claims and nearest-world searches) only ranks inputs or locates where a share "
               "crosses 0.5, so it takes fewer draws per point, with the standard error that buys stated beside it.")


@dataclass(frozen=True)
class SampleDefault:
    """One command's default sample: ``size`` draws of ``unit`` (the option ``option``
    sets it), and why that many under :data:`SAMPLE_RULE`."""

    commands: str  #: the commands (or scenario key) it is the default of
    option: str  #: the option (or key) that sets it
    size: int
    unit: str  #: what one draw is
    reason: str

    @property
    def share_sem(self) -> float:
        """The largest standard error of a share (a probability) over ``size`` independent
        draws: ``sqrt(p (1 - p) / N)`` at ``p = 0.5``."""
        return 0.5 / math.sqrt(self.size)

    def help(self, what: str) -> str:
        """A sample option's help text: ``what`` and the default, whose reason is in
        docs/cli.md#sample-sizes."""
        return f"{what} Default {self.size:,} {self.unit} (why: docs/cli.md#sample-sizes)."


#: Every command's default sample size, in one place (:data:`SAMPLE_RULE`); the commands'
#: options, the API's defaults, the paper study and docs/cli.md read it.
SAMPLE_DEFAULTS = {
    "study": SampleDefault("run, compare (a shipped study, e.g. the case study)", "trials (study file)", 20_000, "paired trials per scenario",
                           "the verdict's P(B better) to a standard error of 0.0035, below the rule's 0.005"),
    "scenario": SampleDefault("run, compare (scenario files)", "run.trials", 10_000, "paired trials per scenario",
                              "P(B better) to a standard error of 0.005, the rule's bound for a stated result"),
    "yield": SampleDefault("yield", "--wafers", 10_000, "wafers",
                           "the die yield, a share, from 10,000 wafers of tens to hundreds of dies each: within the rule's 0.005"),
    "reliability": SampleDefault("reliability", "--lifetimes", 1_000, "cluster lifetimes",
                                 "a share over lifetimes to 0.016; each lifetime is a whole cluster over the horizon (thousands of "
                                 "GPUs), so availability and failures per year are means over millions of GPU-years"),
    "sweep": SampleDefault("sweep", "--trials", 1_024, "paired trials per value",
                           "P(B better) per value to 0.016, enough to place where it crosses 0.5 between values"),
    "tornado": SampleDefault("sensitivity --method tornado", "--trials", 256, "paired trials per bar (two bars a key)",
                             "ranks the keys by the swing of the output between each key's two bars"),
    "sobol": SampleDefault("sensitivity --method sobol", "--trials", 256, "base samples N (N (d + 3) trials run)",
                           "the indices come with intervals from the design's independent scramblings; N (d + 3) trials in all for d keys"),
    "serve": SampleDefault("serve", "--requests", 100_000, "requests (MSER-5's warm-up left out)",
                           "the p99 latency with its standard error (ttft_sem_ms); continuous mode near half load settles over about 10^6 (docs/load.md#estimates)"),
    "paper": SampleDefault("paper", "--trials", 2_048, "paired trials per scenario",
                           "each claim and nearest-world point runs tens of scenarios: P(claim holds) to 0.011"),
    "paper_quick": SampleDefault("paper --quick", "--trials", 128, "paired trials per scenario",
                                 "a smoke run of every claim in seconds, not a result"),
}
