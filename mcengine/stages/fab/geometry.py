"""Wafer maps: the exact whole-die layout of a die size on a wafer (fab stage).

:func:`wafer_map` validates the geometry, runs the offset search of
:mod:`mcengine.kernels.geometry` and returns a :class:`WaferMap` holding every die's
position, the row table that maps a point to its die, and each die's mean ``(r/R)^2``
(for the radial defect profile).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from ...errors import InputError, Problem
from ...units import MM2_PER_CM2

#: ``y0`` grid of the offset search (then polished exactly, see
#: :func:`mcengine.kernels.geometry.best_offset`): 1/1024 of the pitch.
Y_STEPS = 1024
POLISH_ROUNDS = 4


@dataclass(frozen=True, eq=False)
class WaferMap:
    """Whole dies of one die size on the usable disc (mm; origin at the wafer centre).

    Attributes
    ----------
    radius_mm : float
        Usable radius ``wafer_diameter / 2 - edge_exclusion``.
    die_w_mm, die_h_mm, pitch_x_mm, pitch_y_mm : float
        Die size and grid pitch (die + scribe).
    x0_mm, y0_mm : float
        The grid offset that maximises the count.
    corners : float64[n, 2]
        Lower-left corner of each die; die ``k`` is row ``k`` of this array.
    j_first : int
    rows : int64[n_rows, 3]
        Row table (:func:`mcengine.kernels.geometry.die_layout`).
    r2_fraction : float64[n]
        Mean of ``(r/R)^2`` over each die.
    """

    radius_mm: float
    die_w_mm: float
    die_h_mm: float
    pitch_x_mm: float
    pitch_y_mm: float
    x0_mm: float
    y0_mm: float
    corners: np.ndarray
    j_first: int
    rows: np.ndarray
    r2_fraction: np.ndarray

    @property
    def dies(self) -> int:
        """Whole dies per wafer (the exact count)."""
        return int(self.corners.shape[0])

    @property
    def die_area_cm2(self) -> float:
        return self.die_w_mm * self.die_h_mm / MM2_PER_CM2

    @property
    def centres(self) -> np.ndarray:
        """Die centres, float64[n, 2] (mm)."""
        return self.corners + np.array([self.die_w_mm / 2.0, self.die_h_mm / 2.0])

    def weights(self, edge_ratio: float) -> np.ndarray:
        """Relative defect density of each die under the radial profile ``rho``:
        ``(1 + (rho - 1) * mean (r/R)^2) / (1 + (rho - 1) / 2)`` (1 for a flat profile)."""
        return (1.0 + (edge_ratio - 1.0) * self.r2_fraction) / (1.0 + 0.5 * (edge_ratio - 1.0))

    def clearance_mm(self) -> float:
        """Smallest distance from a die corner to the usable circle (> 0 when valid)."""
        far = 0.0
        for dx in (0.0, self.die_w_mm):
            for dy in (0.0, self.die_h_mm):
                far = max(far, float(np.hypot(self.corners[:, 0] + dx, self.corners[:, 1] + dy).max()))
        return self.radius_mm - far


def wafer_map(wafer_diameter_mm: float, edge_exclusion_mm: float, die_width_mm: float,
              die_height_mm: float, scribe_mm: float) -> WaferMap:
    """The exact, offset-optimised whole-die layout (computed once per geometry; each call
    gets its own copy of the arrays, so no caller can change what the next one reads).

    Raises
    ------
    InputError
        For non-positive sizes, an edge exclusion that leaves no disc, or a die that
        does not fit whole anywhere on the usable disc.
    """
    cached = _wafer_map(float(wafer_diameter_mm), float(edge_exclusion_mm), float(die_width_mm),
                        float(die_height_mm), float(scribe_mm))
    return replace(cached, corners=cached.corners.copy(), rows=cached.rows.copy(), r2_fraction=cached.r2_fraction.copy())


@lru_cache(maxsize=64)
def _wafer_map(diameter, edge, width, height, scribe) -> WaferMap:
    from ...kernels.geometry import best_offset, die_layout, mean_r2_fraction

    problems = []
    for key, value in (("fab.wafer_diameter_mm", diameter), ("fab.die_width_mm", width), ("fab.die_height_mm", height)):
        if not (math.isfinite(value) and value > 0):
            problems.append(Problem(key, value, "allowed: a positive finite length in mm"))
    for key, value in (("fab.edge_exclusion_mm", edge), ("fab.scribe_mm", scribe)):
        if not (math.isfinite(value) and value >= 0):
            problems.append(Problem(key, value, "allowed: a non-negative finite length in mm"))
    if problems:
        raise InputError(problems)
    radius = diameter / 2.0 - edge
    if radius <= 0:
        raise InputError(Problem("fab.edge_exclusion_mm", edge, f"allowed: less than half the wafer diameter ({diameter / 2:g} mm)"))
    count, x0, y0 = best_offset(radius, width, height, width + scribe, height + scribe, Y_STEPS, POLISH_ROUNDS)
    if count < 1:
        raise InputError(
            Problem("fab.die_width_mm", f"{width:g} x {height:g} mm",
                    f"impossible geometry: no whole die fits on the usable disc of radius {radius:g} mm "
                    "(fab.wafer_diameter_mm / 2 - fab.edge_exclusion_mm)")
        )
    corners, j_first, rows = die_layout(radius, width, height, width + scribe, height + scribe, x0, y0)
    return WaferMap(
        radius_mm=radius, die_w_mm=width, die_h_mm=height, pitch_x_mm=width + scribe,
        pitch_y_mm=height + scribe, x0_mm=float(x0), y0_mm=float(y0), corners=corners,
        j_first=int(j_first), rows=rows, r2_fraction=mean_r2_fraction(corners, width, height, radius),
    )


def scenario_wafer_map(scenario) -> WaferMap:
    """:func:`wafer_map` of one die of a scenario's package: the ``[fab]`` die split into
    ``gpu.dies_per_package`` dies along its width (the whole ``[fab]`` die when 1)."""
    f = scenario.fab
    return wafer_map(f.wafer_diameter_mm.value, f.edge_exclusion_mm.value, f.die_width_mm.value / scenario.gpu.dies_per_package,
                     f.die_height_mm.value, f.scribe_mm.value)
