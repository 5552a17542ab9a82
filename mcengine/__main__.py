"""The ``mcengine`` console script (and ``python -m mcengine``).

Signal handling is installed first, before the command line's heavy imports, so a
Ctrl-C at any moment ends with one line and exit status 130 (SIGTERM: 143), never a
traceback; see :mod:`mcengine.interrupt` for how a running computation stops.
"""

from __future__ import annotations

import signal
import sys


def _signal_of(exc: BaseException) -> int | None:
    """The signal that ended the imports: the exception's own (``Interrupted`` carries its
    ``signum``, ``KeyboardInterrupt`` is SIGINT), or one in its chain of causes (a signal
    inside an extension module's initialisation surfaces as that module's ImportError)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        signum = getattr(exc, "signum", None) or (signal.SIGINT if isinstance(exc, KeyboardInterrupt) else None)
        if signum:
            return signum
        exc = exc.__cause__ or exc.__context__
    return None


def main(argv: list[str] | None = None) -> int:
    from .interrupt import on_signal

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)
    try:
        from .cli import main as cli_main
    except BaseException as exc:  # a signal during the imports (anything else re-raised)
        signum = _signal_of(exc)
        if signum is None:
            raise
        sys.stderr.write("interrupted\n")
        return 128 + signum
    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
