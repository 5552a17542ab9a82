"""Wear-out hazards and unit lives of the life kernel (:mod:`mcengine.kernels.life`).

A GPU's Weibull groups are rows ``(shape, scale hours)`` of ``wb`` (``WB_SHAPE``,
``WB_SCALE``); a group is *thinned* (it joins the superposed clock at its hazard at the
horizon, Lewis & Shedler 1979) or keeps one clock per unit (``wear[g] == 0``). The
Weibull hazard ``h(a) = (k / eta) (a / eta)**(k - 1)`` and cumulative hazard ``H(a) =
(a / eta)**k`` are those of docs/sources.md#rel-weibull-shape.
"""

from __future__ import annotations

import math

import numpy as np

from mcengine.jit import kernel, linked_kernel
from mcengine.kernels.life.indices import WB_SCALE, WB_SHAPE
from mcengine.rng import uniform

@kernel
def hazard(shape, scale, age):
    """Weibull hazard per hour at ``age`` hours: ``(k / eta) * (age / eta)**(k - 1)``."""
    return shape / scale * (age / scale) ** (shape - 1.0)


@kernel
def thinned(shape, scale, horizon, thin_max):
    """Whether a Weibull law is thinned: wear-out (k >= 1) with ``k * H(horizon) <= thin_max``."""
    return shape >= 1.0 and shape * (horizon / scale) ** shape <= thin_max


#: Margins of :func:`past_uniform`, relative and absolute on the cumulative hazard: far
#: above the rounding of a log, a power and an exp (a few 1e-16), so a uniform below the
#: cut gives a life past the bound also in floating point (for shapes below 1e5).
_CUT_REL, _CUT_ABS = 1e-9, 1e-15


@kernel
def past_uniform(shape, scale, bound):
    """The uniform below which :func:`life_within`'s Weibull life certainly exceeds
    ``bound`` hours: ``exp(-H)`` with ``H`` the cumulative hazard ``(bound / scale)**shape``
    raised by the margins ``_CUT_REL``, ``_CUT_ABS`` (the life ``scale * (-log u)**(1/shape)``
    falls as ``u`` rises). 0 (never cut) when ``bound`` is infinite."""
    return math.exp(-((bound / scale) ** shape * (1.0 + _CUT_REL) + _CUT_ABS))


@kernel
def life_within(st, scale, shape, u_past):
    """A Weibull life, :func:`~mcengine.rng.weibull_scale`'s draw (one uniform, the same
    arithmetic), or ``inf`` without its log and power when the uniform is below ``u_past``
    (:func:`past_uniform`: the life is past the bound; ``u_past = 0`` computes every life).
    The same draws either way: a life past the horizon arms no clock, whenever it starts,
    so a lifetime draws every unit's life but computes only the few that can fall within
    it (about 1 % of the shipped Lite's 4,096 module lives at its start)."""
    u = uniform(st)
    if u < u_past:
        return np.inf + 0.0 * st.size  # (st lives to the end: see rng.uniform)
    return weibull_life(u, scale, shape) + 0.0 * st.size


@linked_kernel
def weibull_life(u, scale, shape):
    """The Weibull life of uniform ``u`` by inversion, ``scale * (-log u)**(1/shape)``
    (:func:`~mcengine.rng.weibull_scale`'s arithmetic)."""
    return scale * (-math.log(u)) ** (1.0 / shape)


@linked_kernel
def unit_life(st, wb, n_wb, wear, u_past, row):
    """A new unit's time to its first failure among the GPU Weibull groups not thinned
    (one draw per such group, in group order), and the group that fails then (-1: none, or
    every life past the bound of ``u_past[row, g]``, :func:`life_within`)."""
    life, group = np.inf, -1
    for g in range(n_wb):
        if wear[g] == 0.0:
            x = life_within(st, wb[g, WB_SCALE], wb[g, WB_SHAPE], u_past[row, g])
            if x < life:
                life, group = x, g
    return life, group


@linked_kernel
def gpu_wear_hazard(wb, n_wb, wear, age):
    """The summed hazard per hour of a GPU's thinned Weibull groups at ``age`` hours."""
    hz = 0.0
    for g in range(n_wb):
        if wear[g] > 0.0:
            hz += hazard(wb[g, WB_SHAPE], wb[g, WB_SCALE], age)
    return hz


@linked_kernel
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


@linked_kernel
def module_life(st, mwb, n_mwb, u_past, row):
    """A new field-replaceable module's life: the first failure among its Weibull groups
    (rows of ``mwb``, ``n_mwb`` used; docs/model.md#modules); ``inf`` if every group's
    is past the bound of ``u_past[row, g]`` (:func:`life_within`)."""
    life = np.inf
    for g in range(n_mwb):
        life = min(life, life_within(st, mwb[g, WB_SCALE], mwb[g, WB_SHAPE], u_past[row, g]))
    return life
