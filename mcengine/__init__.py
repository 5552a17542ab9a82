"""mcengine: Monte Carlo answers, with error bars, to "Lite-GPUs or H100s?".

The functions of :mod:`mcengine.api` are here too: ``mcengine.run``,
``mcengine.compare``, ``mcengine.sweep``, ``mcengine.tornado``, ``mcengine.sobol``,
``mcengine.yield_``, ``mcengine.reliability``, ``mcengine.roofline``, ``mcengine.serve``, ``mcengine.check``,
``mcengine.scenarios``, ``mcengine.keys``, ``mcengine.validate``, ``mcengine.bench``
(``mcengine.paper`` and ``mcengine.report`` are packages; their commands are
:func:`mcengine.api.paper` and :func:`mcengine.api.report`).
Each is imported on first use, so importing the package is cheap (numba loads only when
a stage runs).
"""

__version__ = "0.1.0"

#: The functions of :mod:`mcengine.api` reachable as ``mcengine.<name>``.
API = ("run", "compare", "sweep", "tornado", "sobol", "yield_", "reliability", "roofline", "serve", "check", "scenarios", "keys",
       "validate", "bench")

__all__ = ["__version__", *API]


def __getattr__(name: str):
    """``mcengine.run`` and the rest of :data:`API`, from :mod:`mcengine.api` when first asked for."""
    if name in API:  # by name: the modules that read __version__ from here import no layer above them
        import importlib

        return getattr(importlib.import_module(".api", __name__), name)
    raise AttributeError(f"module 'mcengine' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *API})
