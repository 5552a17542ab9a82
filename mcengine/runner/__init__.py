"""Chunked, resumable, optionally distributed execution of the trial pipeline.

Trials stream through chunks of ``chunk_trials`` (a whole number of
:data:`~mcengine.summaries.BLOCK_TRIALS`; :mod:`.plan`); each chunk's columns fold into
streaming summaries in chunk order (:mod:`.accumulate`), so memory does not grow with
the trial count. Because every random number is keyed by (seed, stage, trial) and
summaries merge block by block in trial order, the result is bit-identical whatever the
chunk size, thread count, Dask workers or resume point. A local run on two or more numba
threads computes each next chunk while the one before is folded and saved, in the same
order (:mod:`.execution`). A run is kept in memory or saved in its output folder, behind
one interface (:mod:`.backends`); a saved run resumes from its checkpoint, whose
integrity a resume checks first (:mod:`.checkpoint`).
"""

from .accumulate import Accumulators, paired_metrics
from .backends import Backend, FolderBackend, MemoryBackend, trials_frame
from .checkpoint import CHECKPOINT_FILE, CHECKPOINT_FORMAT, check_state, checkpoint_text, saved_trials
from .execution import RunOutcome, execute
from .plan import CHUNK_GROWTH, DEFAULT_CHUNK_TRIALS, TARGET_CHUNK_S, check_chunk_trials, chunk_bounds, chunk_plan
from .spec import RUN_FILE, RunSpec

__all__ = [
    "Accumulators", "Backend", "CHECKPOINT_FILE", "CHECKPOINT_FORMAT", "CHUNK_GROWTH", "DEFAULT_CHUNK_TRIALS", "FolderBackend",
    "MemoryBackend", "RUN_FILE", "RunOutcome", "RunSpec", "TARGET_CHUNK_S", "check_chunk_trials", "check_state",
    "checkpoint_text", "chunk_bounds", "chunk_plan", "execute", "paired_metrics", "saved_trials", "trials_frame",
]
