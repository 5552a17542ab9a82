"""Shared bounds of the scenario schema, each with the reason it is where it is.

Every numeric key has finite bounds (a test enforces it), chosen so that no legal value
can make a run's time or memory grow without bound, and stated in the key's ``why`` so
error messages and ``mcengine keys`` can show them.
"""

from __future__ import annotations

from ..units import HOURS_PER_YEAR

#: Most GPUs (active + spares) one scenario may have. The reliability kernel keeps
#: O(GPUs) state per lifetime and the fab stage builds one run of packages per trial.
MAX_TOTAL_GPUS = 2**21
#: Most expected failure and fault events in one cluster lifetime (reliability kernel
#: time is proportional: ~1 s per lifetime at 10^7 events).
MAX_EVENTS_PER_LIFETIME = 10**7
#: Longest duration a law may have: ~114,000 years, i.e. "never" (tests use 1e9 h so).
MAX_DURATION_HOURS = 1e9
#: The highest failure rate: one failure per unit-hour.
MAX_AFR = HOURS_PER_YEAR
#: Prices: a billion dollars per item is beyond any real price and keeps sums finite.
MAX_USD = 1e9
#: Most request classes in a workload mix. Every class is planned alone in every chunk
#: of trials (~0.4 s a class a chunk on two loaded cores: 32 classes took 18 s for 64
#: trials, 1,000 took 100 s), and a stop waits for the chunk under way, so this keeps a
#: chunk, and a stop, within seconds; a mix fitted to real traces has a handful.
MAX_CLASSES = 32

USD = dict(lo=0.0, hi=MAX_USD, why="a billion dollars per item is beyond any real price; keeps sums finite")
AFR = dict(lo=0.0, hi=MAX_AFR, why="one failure per unit-hour; the events per lifetime are bounded apart")
