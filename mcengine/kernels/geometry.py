"""Wafer geometry kernels: whole dies on a grid inside the usable disc.

Model
-----
The usable disc has radius ``R = wafer_diameter / 2 - edge_exclusion`` (mm), centred at
the origin. Dies are ``W x H`` rectangles on a grid of pitch ``px = W + scribe``,
``py = H + scribe``: die ``(i, j)`` has its lower-left corner at
``(x0 + i px, y0 + j py)``. A die is *whole* when all of it lies inside the disc (the
saw street around it may fall outside). The offset ``(x0, y0)`` is free in
``[0, px) x [0, py)`` and chosen to maximise the number of whole dies.

Row ``j`` spans ``[y_j, y_j + H]``; its worst height is ``h = max(|y_j|, |y_j + H|)``
and, if ``h < R``, its dies must lie in ``[-c, c]`` with the half-chord
``c = sqrt(R^2 - h^2)``. The row then holds every ``i`` with
``x0 + i px >= -c`` and ``x0 + i px + W <= c``.

Offset search (documented in :func:`best_offset`): for a fixed ``y0`` the best ``x0`` is
found *exactly*, because the count only changes where a row's left or right end
touches the circle (``x0 = -c_j mod px`` or ``x0 = c_j - W mod px``); the count is
evaluated just beside each such breakpoint (``± CLEARANCE_MM``), so every counted die
has positive clearance. ``y0`` is searched on a uniform grid, then the best grid points
are polished by alternating exact searches along ``y`` (the same argument with the axes
swapped) and ``x``.

All lengths are in mm; functions are serial :data:`~mcengine.jit.kernel` s.
"""

from __future__ import annotations

import math

import numpy as np

from mcengine.jit import inline_kernel, kernel, linked_kernel

#: Distance beside a breakpoint at which a count is evaluated (mm, 0.1 nm): counted
#: dies clear the circle by about this much, so no count rests on a touching corner.
CLEARANCE_MM = 1e-7

#: At most this many grid points that tie for the grid maximum are polished (spread
#: evenly over the ties).
MAX_POLISH_STARTS = 16


@inline_kernel
def _row_range(radius_mm, die_w_mm, die_h_mm, pitch_x_mm, pitch_y_mm, x0_mm, y0_mm, j):
    """Column range ``(i_lo, i_hi)`` of whole dies in row ``j``; empty when ``i_hi < i_lo``."""
    y_bottom = y0_mm + j * pitch_y_mm
    h = max(abs(y_bottom), abs(y_bottom + die_h_mm))
    if h >= radius_mm:
        return 0, -1
    c = math.sqrt(radius_mm * radius_mm - h * h)
    i_lo = math.ceil((-c - x0_mm) / pitch_x_mm)
    i_hi = math.floor((c - die_w_mm - x0_mm) / pitch_x_mm)
    return np.int64(i_lo), np.int64(i_hi)


@inline_kernel
def _row_span(radius_mm, pitch_y_mm, y0_mm):
    """First and last row index that can intersect the disc."""
    return (np.int64(math.floor((-radius_mm - y0_mm) / pitch_y_mm)) - 1,
            np.int64(math.ceil((radius_mm - y0_mm) / pitch_y_mm)) + 1)


@kernel
def count_dies(radius_mm, die_w_mm, die_h_mm, pitch_x_mm, pitch_y_mm, x0_mm, y0_mm):
    """Number of whole dies for the grid offset ``(x0_mm, y0_mm)``.

    Returns
    -------
    int64
        ``sum_j max(0, i_hi(j) - i_lo(j) + 1)`` over the rows (see the module model).
    """
    j_first, j_last = _row_span(radius_mm, pitch_y_mm, y0_mm)
    total = np.int64(0)
    for j in range(j_first, j_last + 1):
        i_lo, i_hi = _row_range(radius_mm, die_w_mm, die_h_mm, pitch_x_mm, pitch_y_mm, x0_mm, y0_mm, j)
        if i_hi >= i_lo:
            total += i_hi - i_lo + 1
    return total


@linked_kernel
def best_x_offset(radius_mm, die_w_mm, die_h_mm, pitch_x_mm, pitch_y_mm, y0_mm):
    """Exact best ``x0`` in ``[0, pitch_x)`` for a fixed ``y0``.

    The count is piecewise constant in ``x0`` and changes only at the breakpoints where
    a row's end touches the circle, so its maximum over ``x0`` is the best of the counts
    evaluated just left and right (``± CLEARANCE_MM``) of every breakpoint.

    Returns
    -------
    (int64, float64)
        The best count and an ``x0`` (mm) achieving it with positive clearance.
    """
    j_first, j_last = _row_span(radius_mm, pitch_y_mm, y0_mm)
    best = np.int64(-1)
    best_x = 0.0
    for j in range(j_first, j_last + 1):
        y_bottom = y0_mm + j * pitch_y_mm
        h = max(abs(y_bottom), abs(y_bottom + die_h_mm))
        if h >= radius_mm:
            continue
        c = math.sqrt(radius_mm * radius_mm - h * h)
        for edge in (-c, c - die_w_mm):
            base = edge % pitch_x_mm
            for side in (-CLEARANCE_MM, CLEARANCE_MM):
                x0 = (base + side) % pitch_x_mm
                n = count_dies(radius_mm, die_w_mm, die_h_mm, pitch_x_mm, pitch_y_mm, x0, y0_mm)
                if n > best:
                    best = n
                    best_x = x0
    if best < 0:  # no row meets the disc: any offset gives zero
        return np.int64(0), 0.0
    return best, best_x


@kernel
def best_offset(radius_mm, die_w_mm, die_h_mm, pitch_x_mm, pitch_y_mm, y_steps, polish_rounds):
    """Grid offset maximising the number of whole dies.

    Search: ``y0`` on ``y_steps`` uniform points of ``[0, pitch_y)``, the best ``x0``
    exactly for each (:func:`best_x_offset`); then, from up to ``MAX_POLISH_STARTS``
    grid points that reached the grid maximum (spread evenly over them), up to ``polish_rounds`` rounds of an exact ``y0`` search for the
    current ``x0`` (axes swapped) followed by an exact ``x0`` search, kept while the
    count grows.

    Returns
    -------
    (int64, float64, float64)
        The count and the offset ``(x0_mm, y0_mm)``.
    """
    counts = np.empty(y_steps, dtype=np.int64)
    xs = np.empty(y_steps, dtype=np.float64)
    for k in range(y_steps):
        y0 = pitch_y_mm * k / y_steps
        counts[k], xs[k] = best_x_offset(radius_mm, die_w_mm, die_h_mm, pitch_x_mm, pitch_y_mm, y0)
    grid_best, n_ties = np.int64(-1), 0
    for k in range(y_steps):  # (loops, not counts.max() and np.flatnonzero: each compiles a NumPy routine)
        if counts[k] > grid_best:
            grid_best, n_ties = counts[k], 0
        if counts[k] == grid_best:
            n_ties += 1
    stride = max(1, n_ties // MAX_POLISH_STARTS)
    best, best_x, best_y = np.int64(-1), 0.0, 0.0
    tie = -1
    for k in range(y_steps):
        if counts[k] != grid_best:
            continue
        tie += 1
        if tie % stride != 0:  # every stride-th tie, from the first
            continue
        n, x0, y0 = counts[k], xs[k], pitch_y_mm * k / y_steps
        for _ in range(polish_rounds):
            # exact y0 for this x0: the x-search with the axes swapped
            ny, y1 = best_x_offset(radius_mm, die_h_mm, die_w_mm, pitch_y_mm, pitch_x_mm, x0)
            nx, x1 = best_x_offset(radius_mm, die_w_mm, die_h_mm, pitch_x_mm, pitch_y_mm, y1)
            if nx <= n:
                break
            n, x0, y0 = nx, x1, y1
        if n > best:
            best, best_x, best_y = n, x0, y0
    return best, best_x, best_y


@kernel
def die_layout(radius_mm, die_w_mm, die_h_mm, pitch_x_mm, pitch_y_mm, x0_mm, y0_mm):
    """Every whole die of the offset, and the row table that maps points to dies.

    Returns
    -------
    corners : float64[n, 2]
        Lower-left corner ``(x, y)`` of each die (mm), rows bottom to top, then left
        to right; the die index is the row position.
    j_first : int64
        Row index of ``rows[0]``.
    rows : int64[n_rows, 3]
        Per row from ``j_first``: ``(i_lo, i_hi, index of die (i_lo, j))``; empty rows
        have ``i_hi < i_lo``.
    """
    j_first, j_last = _row_span(radius_mm, pitch_y_mm, y0_mm)
    n_rows = j_last - j_first + 1
    rows = np.empty((n_rows, 3), dtype=np.int64)
    n = np.int64(0)
    for r in range(n_rows):
        i_lo, i_hi = _row_range(radius_mm, die_w_mm, die_h_mm, pitch_x_mm, pitch_y_mm, x0_mm, y0_mm, j_first + r)
        rows[r, 0] = i_lo
        rows[r, 1] = i_hi
        rows[r, 2] = n
        if i_hi >= i_lo:
            n += i_hi - i_lo + 1
    corners = np.empty((n, 2), dtype=np.float64)
    for r in range(n_rows):
        for i in range(rows[r, 0], rows[r, 1] + 1):
            d = rows[r, 2] + i - rows[r, 0]
            corners[d, 0] = x0_mm + i * pitch_x_mm
            corners[d, 1] = y0_mm + (j_first + r) * pitch_y_mm
    return corners, j_first, rows


@kernel
def die_at(x_mm, y_mm, die_w_mm, die_h_mm, pitch_x_mm, pitch_y_mm, x0_mm, y0_mm, j_first, rows):
    """Index of the whole die containing point ``(x_mm, y_mm)``, or -1 (street or edge).

    ``rows`` and ``j_first`` come from :func:`die_layout` for the same offset.
    """
    j = np.int64(math.floor((y_mm - y0_mm) / pitch_y_mm))
    if y_mm - (y0_mm + j * pitch_y_mm) > die_h_mm:
        return np.int64(-1)  # horizontal street
    r = j - j_first
    if r < 0 or r >= rows.shape[0]:
        return np.int64(-1)
    i = np.int64(math.floor((x_mm - x0_mm) / pitch_x_mm))
    if x_mm - (x0_mm + i * pitch_x_mm) > die_w_mm:
        return np.int64(-1)  # vertical street
    if i < rows[r, 0] or i > rows[r, 1]:
        return np.int64(-1)  # partial die at the edge
    return rows[r, 2] + i - rows[r, 0]


@kernel
def mean_r2_fraction(corners, die_w_mm, die_h_mm, radius_mm):
    """Mean of ``(r / R)^2`` over each die's area (exact).

    ``∫∫ (x^2 + y^2) dx dy`` over ``[x1, x2] x [y1, y2]`` is
    ``(x2^3 - x1^3)(y2 - y1) / 3 + (y2^3 - y1^3)(x2 - x1) / 3``; divided by the die area
    and ``R^2``. With the radial defect profile ``1 + (rho - 1)(r/R)^2`` a die's expected
    defect count is proportional to ``1 + (rho - 1) * mean_r2_fraction``.

    Returns
    -------
    float64[n]
    """
    n = corners.shape[0]
    out = np.empty(n, dtype=np.float64)
    area = die_w_mm * die_h_mm
    for d in range(n):
        x1 = corners[d, 0]
        y1 = corners[d, 1]
        x2 = x1 + die_w_mm
        y2 = y1 + die_h_mm
        integral = ((x2**3 - x1**3) * die_h_mm + (y2**3 - y1**3) * die_w_mm) / 3.0
        out[d] = integral / (area * radius_mm * radius_mm)
    return out
