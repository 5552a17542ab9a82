"""Running chunks on a Dask distributed cluster (``--scheduler tcp://HOST:PORT``).

Chunks are submitted a bounded window ahead and gathered strictly in chunk order, so
the driver merges them exactly as a local run would: identical numbers. Workers need
mcengine installed in the same version (``pip install 'mcengine[dask]'`` on each).

Nothing waits forever:

* Before the Dask client is made, a ``tcp://`` address (or ``HOST:PORT``) is probed: a
  Dask scheduler sends its handshake (a length-prefixed message) as soon as it accepts a
  connection, so anything else that listens there (a web server, a socket that accepts
  and never replies) is told apart within :data:`CONNECT_TIMEOUT_S` and refused
  (InputError naming ``--scheduler``, exit 2). Any address is then given at most
  :data:`CLIENT_DEADLINE_S` to yield a connected client (exit 2 naming ``--scheduler``
  beyond it, or when the client cannot read what answers): a run against a wrong
  address ends within :data:`CLIENT_DEADLINE_S` s.
* A worker must join within :data:`WORKER_WAIT_S` (exit 1 naming the address).
* While a chunk is awaited the cluster is polled every :data:`POLL_S`; a scheduler that
  goes away mid-run, or a cluster left without workers for :data:`WORKER_WAIT_S`, ends
  the run with one line (:class:`~mcengine.errors.ExecutionError`, exit 1, within about
  :data:`WORKER_WAIT_S` + :data:`POLL_S` s; the chunks finished before are checkpointed).
"""

from __future__ import annotations

import logging
import re
import socket
import struct
import threading
import time
from collections import deque

from .errors import ExecutionError, InputError, McEngineError, Problem
from .pipeline import run_chunk

#: Chunks in flight per worker thread (keeps workers busy, memory bounded).
WINDOW_PER_THREAD = 2
#: Seconds to reach the scheduler (and, for tcp://, to receive its handshake).
CONNECT_TIMEOUT_S = 10
#: Seconds the Dask client may take to connect, whatever the address: beyond it, exit 2.
CLIENT_DEADLINE_S = 3 * CONNECT_TIMEOUT_S
#: Largest handshake a Dask scheduler sends on connection (it is a few hundred bytes).
HANDSHAKE_MAX_BYTES = 1 << 16
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
    _probe(scheduler)
    made: dict = {}

    def make() -> None:
        try:
            made["client"] = Client(scheduler, timeout=f"{CONNECT_TIMEOUT_S}s")
        except BaseException as exc:  # noqa: BLE001 - reported by the caller's thread
            made["error"] = exc

    maker = threading.Thread(target=make, name="mcengine-dask-connect", daemon=True)
    maker.start()
    maker.join(CLIENT_DEADLINE_S)
    if maker.is_alive():
        raise InputError(Problem("--scheduler", scheduler, f"no Dask client connected within {CLIENT_DEADLINE_S} s "
                                 "(not a Dask scheduler, or it does not answer)"))
    exc = made.get("error")
    if isinstance(exc, (OSError, TimeoutError, ValueError)):
        raise InputError(Problem("--scheduler", scheduler, f"no Dask scheduler answers there ({_why(exc)})")) from None
    if isinstance(exc, Exception) and not isinstance(exc, McEngineError):  # a reply the client could not read
        raise InputError(Problem("--scheduler", scheduler, f"what answers there greets like a Dask scheduler but does not reply "
                                 f"like one ({_why(exc)}); allowed: a Dask scheduler address such as tcp://HOST:8786")) from None
    if exc is not None:
        raise exc
    return made["client"]


def _why(exc: BaseException) -> str:
    """An exception in words: its type, and its message when it has one."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _recv(sock: socket.socket, n: int, deadline: float) -> bytes:
    data = b""
    while len(data) < n:
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        piece = sock.recv(n - len(data))
        if not piece:
            raise ConnectionError("the connection was closed")
        data += piece
    return data


def _probe(scheduler: str) -> None:
    """Refuse a ``tcp://`` address (or ``HOST:PORT``) where no Dask scheduler listens: a
    scheduler sends its handshake (8 bytes of length, then a message holding its
    ``pickle-protocol``) right after accepting; silence for :data:`CONNECT_TIMEOUT_S`
    or anything else is InputError naming ``--scheduler``. Other protocols are left to
    the client (within :data:`CLIENT_DEADLINE_S`)."""
    protocol, _, rest = scheduler.rpartition("://")
    if protocol not in ("", "tcp"):
        return
    host, _, port = rest.rpartition(":")
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S) as sock:
            (size,) = struct.unpack("Q", _recv(sock, 8, deadline))
            if not 0 < size <= HANDSHAKE_MAX_BYTES or b"pickle-protocol" not in _recv(sock, size, deadline):
                raise InputError(Problem("--scheduler", scheduler, "something answers there that is not a Dask scheduler "
                                         "(no Dask handshake); allowed: a Dask scheduler address such as tcp://HOST:8786"))
    except (socket.timeout, TimeoutError):
        raise InputError(Problem("--scheduler", scheduler, f"nothing answered within {CONNECT_TIMEOUT_S} s like a Dask scheduler "
                                 "(a Dask scheduler greets every connection at once); allowed: a Dask scheduler address such as tcp://HOST:8786")) from None
    except OSError as exc:
        raise InputError(Problem("--scheduler", scheduler, f"no Dask scheduler answers there ({exc.strerror or _why(exc)})")) from None


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
