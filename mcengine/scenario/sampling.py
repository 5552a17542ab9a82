"""Drawing the uncertain inputs of a block of trials.

Input ``key`` of trial ``i`` is ``dist.ppf(u)``. With the ``"random"`` sampler (plain
Monte Carlo) ``u`` is the first uniform of the counter-based stream ``(seed,
STAGE_INPUTS, crc32(key), i)``. So a trial's inputs do not depend on the chunking, and
two scenarios that share a key (whatever their other keys) draw it at the same quantile
in the same trial: common random numbers.

With the ``"sobol"`` sampler (randomised quasi-Monte Carlo, :class:`Sampler`) trial ``i``
is point ``i // R`` of scrambling ``r = i % R`` of a Sobol' sequence (Sobol' 1967; the
direction numbers of Joe & Kuo 2008, as :class:`scipy.stats.qmc.Sobol` has them), one
dimension per uncertain key of the run (its keys sorted). Each scrambling is a random
linear matrix scramble plus a digital shift (Matoušek 1998), its bits drawn from the
streams ``(seed, STAGE_SCRAMBLE, crc32(key), r * (B + 1) + b)``: every scrambled point is
uniform on the grid of ``2**-B`` (``B`` = :data:`SOBOL_BITS`), and the random uniform of
the ``"random"`` sampler places it inside its cell, so ``u`` is exactly uniform on (0, 1)
and the R scramblings are independent, identically distributed estimates (Owen 1997,
L'Ecuyer & Lemieux 2002): a standard error is the spread of their means
(:class:`mcengine.summaries.Summary`). A trial's point is a function of its index alone,
so chunks, threads, Dask and resume give the same numbers; a key shared by two scenarios
of a run has the same dimension and scrambling in both (common random numbers).

An input whose ``dist`` table says ``shared = false`` is drawn per design instead, from
``(seed, STAGE_DESIGN_INPUTS, crc32(scenario name NUL key), i)``, with either sampler
pseudo-randomly (docs/model.md#per-design-inputs): its trials stay independent, so the
scramblings' means stay independent estimates.

References
----------
I. M. Sobol' (1967), "On the distribution of points in a cube and the approximate
evaluation of integrals", USSR Comput. Math. Math. Phys. 7(4):86-112.
S. Joe, F. Y. Kuo (2008), "Constructing Sobol sequences with better two-dimensional
projections", SIAM J. Sci. Comput. 30(5):2635-2654.
J. Matoušek (1998), "On the L2-discrepancy for anchored boxes", J. Complexity
14(4):527-556 (random linear scrambling).
A. B. Owen (1997), "Scrambled net variance for integrals of smooth functions", Ann.
Statist. 25(4):1541-1562.
P. L'Ecuyer, C. Lemieux (2002), "Recent advances in randomized quasi-Monte Carlo
methods", in Modeling Uncertainty, Kluwer, 419-474.
"""

from __future__ import annotations

import warnings
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
#: Samplers of the uncertain inputs (``run.sampler``).
SAMPLERS = ("random", "sobol")
#: Bits of a Sobol' point (``2**32`` points per scrambling: more than any run's trials).
SOBOL_BITS = 32
_BELOW_ONE = 1.0 - 2.0**-53  # largest double < 1


@dataclass(frozen=True)
class Sampler:
    """How a run draws its uncertain inputs: ``kind`` in :data:`SAMPLERS`; with
    ``"sobol"``, ``scramblings`` independent scramblings and ``dimensions``, the run's
    uncertain keys in the order of their Sobol' dimensions (sorted)."""

    kind: str = "random"
    scramblings: int = 0
    dimensions: tuple[str, ...] = ()

    @property
    def replicates(self) -> int:
        """Independent estimates the standard errors come from (0: every trial is one)."""
        return self.scramblings if self.kind == "sobol" else 0


def run_sampler(scenarios) -> Sampler:
    """The sampler of a run of ``scenarios``: their ``run.sampler`` and
    ``run.scramblings``, which must agree (the trials are paired)."""
    kinds = {(s.run.sampler, s.run.scramblings if s.run.sampler == "sobol" else 0) for s in scenarios}
    if len(kinds) > 1:
        raise InputError(Problem("run.sampler", sorted(kinds), "the scenarios of one run share one sampler and one "
                                 "run.scramblings (set them once for all, e.g. --sampler)"))
    kind, scramblings = kinds.pop()
    if kind == "random":
        return Sampler()
    keys = sorted({k for s in scenarios for k in s.uncertain_inputs()})
    return Sampler(kind, scramblings, tuple(keys))


def _sobol_integers(dimensions: int, first: int, n: int) -> np.ndarray:
    """Points ``first .. first + n - 1`` of the unscrambled Sobol' sequence as
    :data:`SOBOL_BITS`-bit integers, uint64[n, dimensions]."""
    from scipy.stats import qmc

    engine = qmc.Sobol(dimensions, scramble=False, bits=SOBOL_BITS)
    if first:
        engine.fast_forward(first)
    with warnings.catch_warnings():  # (a scrambling's share of a chunk is seldom a power of two)
        warnings.simplefilter("ignore", UserWarning)
        points = engine.random(n)
    return np.ldexp(points, SOBOL_BITS).astype(np.uint64)  # exact: multiples of 2**-SOBOL_BITS


def _scrambled(x: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """Matoušek's random linear scramble and digital shift of the integers ``x``:
    digit ``i`` (from the most significant) of the result is ``x_i`` plus the random
    combination ``bits[i]`` of the digits above it, plus shift digit ``i``
    (``bits[SOBOL_BITS]``), modulo 2."""
    y = np.zeros_like(x)
    for i in range(SOBOL_BITS):
        digit = np.uint64(SOBOL_BITS - 1 - i)
        above = ~np.uint64((1 << (SOBOL_BITS - i)) - 1) & np.uint64((1 << SOBOL_BITS) - 1)
        row = (np.uint64(1) << digit) | (bits[i] & above)
        y |= (np.bitwise_count(x & row).astype(np.uint64) & np.uint64(1)) << digit
    return y ^ bits[SOBOL_BITS]


def _sobol_uniforms(sampler: Sampler, key: str, seed: int, trial_start: int, n: int, jitter: np.ndarray,
                    points: dict) -> np.ndarray:
    """The uniforms of input ``key`` for trials ``trial_start ..`` (module text);
    ``points`` caches each scrambling's unscrambled points of this block."""
    from ..rng import STAGE_SCRAMBLE, uniforms_for_trials

    reps, words = sampler.scramblings, SOBOL_BITS + 1
    bits = uniforms_for_trials(np.uint64(seed), STAGE_SCRAMBLE, input_stream_id(key), 0, reps * words)
    bits = np.floor(np.ldexp(bits, SOBOL_BITS)).astype(np.uint64).reshape(reps, words)
    dim = sampler.dimensions.index(key)
    y = np.empty(n, dtype=np.uint64)
    for r in range(reps):
        at = range((r - trial_start) % reps, n, reps)  # the block's trials of scrambling r
        if not at:
            continue
        if r not in points:
            points[r] = _sobol_integers(len(sampler.dimensions), (trial_start + at.start) // reps, len(at))
        y[at.start::reps] = _scrambled(points[r][:, dim], bits[r])
    return np.minimum((y.astype(np.float64) + jitter) * 2.0**-SOBOL_BITS, _BELOW_ONE)


def per_trial(x, n: int) -> np.ndarray:
    """A number or per-trial array as a float array of shape (n,), one value per trial (a copy)."""
    return np.broadcast_to(np.asarray(x, float), (n,)).copy()


def end_to_end(items, get, ns=None) -> np.ndarray:
    """``get(item)`` of each of ``items`` laid one after another, the trials of several blocks
    (a mix's request classes) as one: each a per-trial array, or with ``ns`` a number or
    per-trial array broadcast to its ``ns[i]`` trials (:func:`per_trial`)."""
    return np.concatenate([get(x) for x in items] if ns is None else [per_trial(get(x), m) for x, m in zip(items, ns)])


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


def draw_inputs(scenario: Scenario, seed: int, trial_start: int, n: int, sampler: Sampler | None = None,
                shared: dict | None = None) -> TrialInputs:
    """Inputs of trials ``trial_start .. trial_start + n - 1``, drawn by ``sampler``
    (default: pseudo-random; a Sobol' sampler from :func:`run_sampler` holds every
    uncertain key of the scenario). ``shared``, a dict the scenarios of one block pass
    along, keeps each stream's uniforms (and the block's Sobol' points): a shared key's
    uniforms do not depend on the scenario, so a key several scenarios hold is drawn once.
    A fixed input's column is one array per value in ``shared`` (its ``n`` trials all at
    that value), read by every key and scenario fixed at it: the stages read their inputs
    and never write them."""
    from ..rng import uniforms_for_trials

    shared = {} if shared is None else shared
    values, points = {}, shared.setdefault(("sobol points",), {})
    for key, dist in scenario.inputs().items():
        if dist.is_fixed:
            fixed = ("fixed", type(dist.value), repr(dist.value), n)
            if fixed not in shared:
                shared[fixed] = np.full(n, dist.value)
            values[key] = shared[fixed]
            continue
        stream = input_stream(scenario, key, dist)  # (stage, stream id)
        if stream not in shared:
            u = uniforms_for_trials(np.uint64(seed), *stream, trial_start, n)
            if sampler is not None and sampler.kind == "sobol" and dist.shared:
                u = _sobol_uniforms(sampler, key, seed, trial_start, n, u, points)
            shared[stream] = u
        values[key] = dist.ppf(shared[stream])
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
