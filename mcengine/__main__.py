"""The ``mcengine`` console script (and ``python -m mcengine``).

Signal handling is installed first, before the command line's heavy imports, so a
Ctrl-C at any moment ends with one line and exit status 130 (SIGTERM: 143), never a
traceback; see :mod:`mcengine.interrupt` for how a running computation stops.
"""

from __future__ import annotations

import signal
import sys


def main(argv: list[str] | None = None) -> int:
    from .interrupt import on_signal

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, on_signal)
    try:
        from .cli import main as cli_main
    except BaseException as exc:  # a signal during the imports (anything else re-raised)
        signum = getattr(exc, "signum", None) or (signal.SIGINT if isinstance(exc, KeyboardInterrupt) else None)
        if signum is None:
            raise
        sys.stderr.write("interrupted\n")
        return 128 + signum
    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
