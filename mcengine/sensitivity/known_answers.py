"""Known answers: closed-form Sobol' indices of standard test functions (tests and
``mcengine validate`` check the estimators against them).

* **Ishigami** (Ishigami & Homma 1990), ``x_i ~ U(-pi, pi)``:
  ``Y = sin x1 + a sin^2 x2 + b x3^4 sin x1``. With ``V1 = (1 + b pi^4 / 5)^2 / 2``,
  ``V2 = a^2 / 8``, ``V13 = 8 b^2 pi^8 / 225`` and ``V = V1 + V2 + V13``:
  ``S1 = (V1, V2, 0) / V``, ``ST = (V1 + V13, V2, V13) / V``
  (Sobol' & Levitan 1999; Saltelli et al. 2008, *Global Sensitivity Analysis: The
  Primer*, Wiley, sec. 4.8). For ``a = 7, b = 0.1``: S1 = 0.3139, 0.4424, 0;
  ST = 0.5576, 0.4424, 0.2437.
* **Linear additive**, ``x_i ~ U(0, 1)``: ``Y = sum c_i x_i`` has
  ``S1_i = ST_i = c_i^2 / sum c_j^2`` (no interactions).

Functions take the unit-cube design ``u`` (shape ``(n, d)``, values in (0, 1)) as the
Sobol' machinery of :mod:`mcengine.sensitivity.sampling` hands it to a model, and return ``(n,)``.
"""

from __future__ import annotations

import math

import numpy as np

ISHIGAMI_A = 7.0
ISHIGAMI_B = 0.1


def ishigami(u: np.ndarray, a: float = ISHIGAMI_A, b: float = ISHIGAMI_B) -> np.ndarray:
    """Ishigami function of the first three columns of ``u`` mapped to (-pi, pi).

    Further columns are dummy inputs the output does not depend on (their indices are 0).
    """
    x = -math.pi + 2.0 * math.pi * np.asarray(u, dtype=float)[:, :3]
    return np.sin(x[:, 0]) + a * np.sin(x[:, 1]) ** 2 + b * x[:, 2] ** 4 * np.sin(x[:, 0])


def ishigami_indices(a: float = ISHIGAMI_A, b: float = ISHIGAMI_B) -> tuple[np.ndarray, np.ndarray, float]:
    """(S1, ST, variance) of the Ishigami function, each index array of shape (3,)."""
    v1 = 0.5 * (1.0 + b * math.pi**4 / 5.0) ** 2
    v2 = a * a / 8.0
    v13 = 8.0 * b * b * math.pi**8 / 225.0
    var = v1 + v2 + v13
    return np.array([v1, v2, 0.0]) / var, np.array([v1 + v13, v2, v13]) / var, var


def linear(u: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
    """``sum_i c_i u_i`` over the columns of ``u``."""
    return np.asarray(u, dtype=float) @ np.asarray(coefficients, dtype=float)


def linear_indices(coefficients: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(S1, ST) of :func:`linear` with uniform inputs: both ``c_i^2 / sum c_j^2``."""
    c2 = np.asarray(coefficients, dtype=float) ** 2
    s = c2 / c2.sum()
    return s, s.copy()
