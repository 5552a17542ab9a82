"""The sample phase: Saltelli designs on a scrambled Sobol' sequence, and their evaluation.

Design (Saltelli et al. 2010, sec. 5): a scrambled Sobol' sequence of dimension ``2d``
(:class:`scipy.stats.qmc.Sobol`, Owen scrambling) gives the two independent matrices A
(first ``d`` columns) and B (last ``d``); ``AB_i`` is A with column ``i`` taken from B.
The ``N`` rows are ``R`` independent scramblings of ``N / R`` rows each, stacked (each
seeded from the master seed and its index): their spread is what the confidence
intervals of :mod:`mcengine.sensitivity.analysis` measure. Points are shifted to the
middle of their ``2^-30`` cell, so every unit value is strictly inside (0, 1) and a
``ppf`` never sees 0 or 1.

**Model noise.** A stochastic model's own (aleatory) randomness is an extra input named
:data:`NOISE`, realised by the *trial index* that keys every random stream: A's rows use
trials ``[0, N)``, B's rows ``[N, 2N)``; ``AB_i`` keeps A's trials, and the extra matrix
``AB_noise`` is A's inputs on B's trials. Every block is so a contiguous trial range,
A and B have independent noise, and an input the output does not depend on has
``f(AB_i) == f(A)`` exactly: its indices are 0, not polluted by Monte Carlo noise.

References: see :mod:`mcengine.sensitivity.analysis`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.stats import qmc

from .. import interrupt
from ..errors import InputError, Problem
from ..options import DEFAULT_SCRAMBLINGS
from ..rng import STAGE_SENSITIVITY


#: Name of the extra input that stands for the model's own randomness.
NOISE = "model_noise"


#: Smallest base sample (rows of A and B).
MIN_BASE_SAMPLES = 16


#: Bits of the Sobol' points (scipy's default; allows up to 2**30 rows).
SOBOL_BITS = 30


#: ``evaluate(u, trial_start) -> y``: ``u`` float64 (m, d) in (0, 1), rows = trials
#: ``trial_start .. trial_start + m - 1``; ``y`` float64 (m,).
Evaluator = Callable[[np.ndarray, int], np.ndarray]


def check_base_samples(n: int, option: str = "--trials") -> int:
    """``n`` if it is a power of two >= :data:`MIN_BASE_SAMPLES` (Sobol' balance), else InputError."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < MIN_BASE_SAMPLES or n & (n - 1):
        raise InputError(Problem(option, n, f"allowed: a power of two >= {MIN_BASE_SAMPLES} (Sobol' balance), e.g. 256, 512, 1024"))
    return int(n)


def check_scramblings(scramblings: int, n: int) -> int:
    """``scramblings`` if it is a power of two >= 2 and at most ``n`` (each scrambling
    then keeps a power-of-two share of the ``n`` rows), else InputError."""
    if isinstance(scramblings, bool) or not isinstance(scramblings, (int, np.integer)) or scramblings < 2 or scramblings & (scramblings - 1) or scramblings > n:
        raise InputError(Problem("scramblings", scramblings, f"allowed: a power of two from 2 to the base sample ({n}), e.g. {DEFAULT_SCRAMBLINGS}"))
    return int(scramblings)


def saltelli_design(d: int, n: int, seed: int, scramblings: int = DEFAULT_SCRAMBLINGS) -> tuple[np.ndarray, np.ndarray]:
    """The (N, d) matrices A and B of unit values in (0, 1): ``scramblings`` independent
    2d-dimensional scrambled Sobol' sequences of ``N / scramblings`` rows, scrambling ``r``
    seeded by ``(seed, STAGE_SENSITIVITY, r)`` and filling rows ``r N / R .. (r + 1) N / R - 1``."""
    check_base_samples(n)
    rows = n // check_scramblings(scramblings, n)
    points = np.vstack([
        qmc.Sobol(d=2 * d, scramble=True, bits=SOBOL_BITS, rng=[int(seed), STAGE_SENSITIVITY, r]).random_base2(rows.bit_length() - 1)
        for r in range(scramblings)
    ]) + 2.0 ** -(SOBOL_BITS + 1)
    return points[:, :d], points[:, d:]


@dataclass(frozen=True)
class Block:
    """One design matrix and the first trial index of its rows."""

    name: str  # "A", "B", an input name (AB_i) or NOISE
    u: np.ndarray
    trial_start: int


def design_blocks(names: list[str], a: np.ndarray, b: np.ndarray, noise: bool) -> list[Block]:
    """A, B, every AB_i and (with ``noise``) AB_noise, with their trial ranges."""
    n = a.shape[0]
    blocks = [Block("A", a, 0), Block("B", b, n)]
    for i, name in enumerate(names):
        ab = a.copy()
        ab[:, i] = b[:, i]
        blocks.append(Block(name, ab, 0))
    if noise:
        blocks.append(Block(NOISE, a, n))
    return blocks


def evaluate_blocks(evaluate: Evaluator, blocks: list[Block], chunk: int, progress: Callable[[int, int], None] | None = None) -> list[np.ndarray]:
    """Outputs of every block, evaluated ``chunk`` rows (trials) at a time."""
    total = sum(b.u.shape[0] for b in blocks)
    done = 0
    outputs = []
    with interrupt.deferred():  # a signal stops between chunks
        for block in blocks:
            n = block.u.shape[0]
            y = np.empty(n)
            for start in range(0, n, chunk):
                stop = min(n, start + chunk)
                y[start:stop] = evaluate(block.u[start:stop], block.trial_start + start)
                done += stop - start
                if progress:
                    progress(done, total)
                interrupt.check()
            outputs.append(y)
    return outputs
