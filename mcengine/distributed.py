"""Running chunks on a Dask distributed cluster (``--scheduler tcp://HOST:PORT``).

Chunks are submitted a bounded window ahead and gathered strictly in chunk order, so
the driver merges them exactly as a local run would: identical numbers. Workers need
mcengine installed in the same version (``pip install 'mcengine[dask]'`` on each).

Nothing waits forever: the scheduler must answer within :data:`CONNECT_TIMEOUT_S`, a
worker must join within :data:`WORKER_WAIT_S`, and while a chunk is awaited the
cluster is polled every :data:`POLL_S`; a cluster left without workers for
:data:`WORKER_WAIT_S`, or a scheduler that goes away, ends the run with one line
(:class:`~mcengine.errors.ExecutionError`; the chunks finished before are checkpointed).
"""

from __future__ import annotations

import logging
import re
import time
from collections import deque

from .errors import ExecutionError, InputError, McEngineError, Problem
from .pipeline import run_chunk

#: Chunks in flight per worker thread (keeps workers busy, memory bounded).
WINDOW_PER_THREAD = 2
#: Seconds to reach the scheduler.
CONNECT_TIMEOUT_S = 10
#: Seconds the cluster may have no worker (at the start, or after losing them all).
WORKER_WAIT_S = 60.0
#: Seconds between checks of the cluster while a chunk is awaited.
POLL_S = 5.0
#: What --scheduler accepts: a Dask address with a protocol, or host:port.
ADDRESS = re.compile(r"^(?:(?:tcp|tls|ws|wss|inproc|ucx)://)?[\w.\-\[\]:]+:\d{1,5}$|^inproc://\S+$")


def connect(scheduler: str):
    if not isinstance(scheduler, str) or not ADDRESS.match(scheduler):
        raise InputError(Problem("--scheduler", scheduler, "allowed: a Dask scheduler address such as tcp://HOST:8786"))
    try:
        from dask.distributed import Client
    except ImportError:
        raise InputError(Problem("--scheduler", scheduler, "needs the dask extra: pip install 'mcengine[dask]'")) from None
    try:
        return Client(scheduler, timeout=f"{CONNECT_TIMEOUT_S}s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise InputError(Problem("--scheduler", scheduler, f"no Dask scheduler answers there ({exc})")) from None


def _wait_for_workers(client, scheduler: str) -> None:
    try:
        client.wait_for_workers(1, timeout=WORKER_WAIT_S)
    except TimeoutError:
        raise ExecutionError(f"no Dask worker joined the scheduler at {scheduler} within {WORKER_WAIT_S:.0f} s; "
                             f"start one with: dask worker {scheduler}") from None


def _result(client, future, scheduler: str, start: int):
    """The chunk's result, polling the cluster so that a lost cluster is an error, not a hang."""
    from dask.distributed import TimeoutError as DaskTimeout

    alone_since = None
    while True:
        try:
            return future.result(timeout=POLL_S)
        except (DaskTimeout, TimeoutError):
            try:
                workers = client.nthreads()
            except Exception as exc:  # noqa: BLE001 - the scheduler itself went away
                raise ExecutionError(f"lost the Dask scheduler at {scheduler} while chunk {start} ran ({type(exc).__name__})") from None
            if workers:
                alone_since = None
            elif alone_since is None:
                alone_since = time.monotonic()
            elif time.monotonic() - alone_since > WORKER_WAIT_S:
                raise ExecutionError(f"the Dask cluster at {scheduler} has had no worker for {WORKER_WAIT_S:.0f} s") from None
        except McEngineError:
            raise  # the chunk's own error (a NumericalError naming its trial), as a local run gives it
        except Exception as exc:  # noqa: BLE001 - a cancelled future, a closed comm, a worker that died
            raise ExecutionError(f"chunk {start} failed on the Dask cluster at {scheduler}: {type(exc).__name__}: {exc}") from None


def map_chunks(scheduler: str, spec, bounds):
    """Yield (start, chunk result) in chunk order, computed on the cluster."""
    quiet = logging.getLogger("distributed")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)  # one line of our own instead of the client's tracebacks
    try:
        with connect(scheduler) as client:
            _wait_for_workers(client, scheduler)
            threads = max(1, sum(client.nthreads().values()))
            window = WINDOW_PER_THREAD * threads
            pending: deque = deque()
            todo = iter(bounds)
            for start, n in todo:
                pending.append((start, client.submit(run_chunk, spec.scenarios, spec.seed, start, n, pure=False)))
                if len(pending) >= window:
                    break
            while pending:
                start, future = pending.popleft()
                result = _result(client, future, scheduler, start)
                future.release()
                nxt = next(todo, None)
                if nxt is not None:
                    pending.append((nxt[0], client.submit(run_chunk, spec.scenarios, spec.seed, nxt[0], nxt[1], pure=False)))
                yield start, result
    finally:
        quiet.setLevel(level)
