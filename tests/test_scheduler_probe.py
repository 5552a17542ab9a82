"""Every wait has a deadline: an address where no Dask scheduler listens (a web server, a
socket that accepts and never replies, another protocol) is exit 2 naming --scheduler
within the documented time (mcengine/distributed.py), without starting a cluster."""

from __future__ import annotations

import pytest

from mcengine import distributed
from mcengine.errors import InputError

def _listener(greeting: bytes | None):
    """A local server that accepts and sends ``greeting`` (None: never a byte)."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    kept = []

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            kept.append(conn)
            if greeting:
                conn.sendall(greeting)

    threading.Thread(target=serve, daemon=True).start()
    return server, f"tcp://127.0.0.1:{server.getsockname()[1]}"


@pytest.mark.parametrize(("greeting", "says"), [
    (None, "nothing answered within 1 s"),  # a web server (waits for a request), or a socket that never replies
    (b"SSH-2.0-OpenSSH_9.6\r\n", "not a Dask scheduler"),
    (b"\x10\x00\x00\x00\x00\x00\x00\x00" + b"x" * 16, "not a Dask scheduler"),
], ids=["silent", "ssh", "framed-junk"])
def test_an_address_that_is_not_a_dask_scheduler_is_refused_within_the_deadline(monkeypatch, greeting, says):
    """Issue 34 case 7: an http.server or a silent socket as --scheduler never ended."""
    import time

    monkeypatch.setattr(distributed, "CONNECT_TIMEOUT_S", 1)
    server, address = _listener(greeting)
    start = time.monotonic()
    try:
        with pytest.raises(InputError, match="--scheduler") as err:
            distributed.connect(address)
    finally:
        server.close()
    assert says in str(err.value) and time.monotonic() - start < distributed.CLIENT_DEADLINE_S
