"""Child Python processes that import the same mcengine as the tests.

``python -m mcengine`` started from the checkout would put the checkout first on
``sys.path`` (the working folder), whereas the tests may import the installed copy of it
(tests/conftest.py): numba would then compile every kernel again for the other path.
:func:`python` starts Python with ``-P`` (no working folder on ``sys.path``) and
:func:`env` puts the folder of the mcengine the tests imported first on ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def python(*args: str) -> list[str]:
    """``[python, -P, *args]``: a child interpreter whose imports follow :func:`env`."""
    return [sys.executable, "-P", *args]


def env(**extra: str) -> dict[str, str]:
    """The environment with the imported mcengine's folder first on ``PYTHONPATH``."""
    import mcengine

    folder = str(Path(mcengine.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (folder, os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}
