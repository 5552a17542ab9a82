"""mcengine: Monte Carlo answers, with error bars, to "Lite-GPUs or H100s?".

Importing the package is cheap (numba loads only when a stage runs).
"""

__version__ = "0.1.0"
