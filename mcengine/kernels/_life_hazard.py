"""Wear-out hazards and unit lives of the life kernel (:mod:`mcengine.kernels.life`).

A GPU's Weibull groups are rows ``(shape, scale hours)`` of ``wb`` (``WB_SHAPE``,
``WB_SCALE``); a group is *thinned* (it joins the superposed clock at its hazard at the
horizon, Lewis & Shedler 1979) or keeps one clock per unit (``wear[g] == 0``). The
Weibull hazard ``h(a) = (k / eta) (a / eta)**(k - 1)`` and cumulative hazard ``H(a) =
(a / eta)**k`` are those of docs/sources.md#rel-weibull-shape.
"""

from __future__ import annotations

import numpy as np

from mcengine.jit import kernel
from mcengine.rng import weibull_scale

__all__ = ["WB_SHAPE", "WB_SCALE", "hazard", "thinned", "unit_life", "gpu_wear_hazard", "wear_group", "module_life"]

# ---- Weibull groups of a GPU: wb[g, :] = (shape, scale hours)
WB_SHAPE = 0
WB_SCALE = 1


@kernel
def hazard(shape, scale, age):
    """Weibull hazard per hour at ``age`` hours: ``(k / eta) * (age / eta)**(k - 1)``."""
    return shape / scale * (age / scale) ** (shape - 1.0)


@kernel
def thinned(shape, scale, horizon, thin_max):
    """Whether a Weibull law is thinned: wear-out (k >= 1) with ``k * H(horizon) <= thin_max``."""
    return shape >= 1.0 and shape * (horizon / scale) ** shape <= thin_max


@kernel
def unit_life(st, wb, n_wb, wear):
    """A new unit's time to its first failure among the GPU Weibull groups not thinned
    (one draw per such group, in group order), and the group that fails then (-1: none)."""
    life, group = np.inf, -1
    for g in range(n_wb):
        if wear[g] == 0.0:
            x = weibull_scale(st, wb[g, WB_SCALE], wb[g, WB_SHAPE])
            if x < life:
                life, group = x, g
    return life, group


@kernel
def gpu_wear_hazard(wb, n_wb, wear, age):
    """The summed hazard per hour of a GPU's thinned Weibull groups at ``age`` hours."""
    hz = 0.0
    for g in range(n_wb):
        if wear[g] > 0.0:
            hz += hazard(wb[g, WB_SHAPE], wb[g, WB_SCALE], age)
    return hz


@kernel
def wear_group(wb, n_wb, wear, age, u):
    """The thinned group an accepted wear-out candidate belongs to: the first whose
    cumulated hazard at ``age`` exceeds ``u`` (the acceptance uniform, ``u <
    gpu_wear_hazard``), so group ``g`` with probability ``h_g / sum h``, no draw."""
    hz, last = 0.0, -1
    for g in range(n_wb):
        if wear[g] > 0.0:
            hz += hazard(wb[g, WB_SHAPE], wb[g, WB_SCALE], age)
            last = g
            if u < hz:
                return g
    return last


@kernel
def module_life(st, mwb, n_mwb):
    """A new field-replaceable module's life: the first failure among its Weibull groups
    (rows of ``mwb``, ``n_mwb`` used; docs/model.md#modules)."""
    life = np.inf
    for g in range(n_mwb):
        life = min(life, weibull_scale(st, mwb[g, WB_SCALE], mwb[g, WB_SHAPE]))
    return life
