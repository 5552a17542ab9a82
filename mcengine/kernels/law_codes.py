"""Kernel codes of the duration-law kinds, and the width of a law table.

The kernels switch on these codes (:mod:`mcengine.kernels.laws`); the scenario system
tags each parsed law with one (:mod:`mcengine.scenario.dists`). They are never
renumbered. Plain constants: importing this module loads neither numba nor scenarios.
"""

LAW_FIXED = 0
LAW_EXPONENTIAL = 1
LAW_LOGNORMAL = 2
LAW_WEIBULL = 3

#: The most parts a mixture law may have (kernels use a fixed-width table).
MAX_LAW_PARTS = 8
