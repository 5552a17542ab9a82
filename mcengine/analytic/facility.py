"""Closed forms of the data hall: rack power, the cooling it needs, the facility's capex
per MW of IT load and its PUE (docs/model.md#facility, docs/sources.md#facility-capex,
docs/sources.md#facility-cooling).

A rack draws the rated power of what it holds; air cooling serves racks up to a limit
(``air_limit_kw``), liquid (direct-to-chip) cooling those above it. The hall is built for
the cluster's rated IT power: power delivery and shell at a price per MW, cooling at the
chosen kind's price per MW; the energy bill is the IT energy times the kind's PUE. The
building is priced by its floor: each rack position takes its footprint, its share of the
aisles and of the power and cooling rooms (docs/sources.md#facility-floor), so a design of
half the rack power needs twice the floor for the same IT load.
"""

from __future__ import annotations

import numpy as np

W_PER_MW = 1e6


def liquid_cooled(rack_kw, air_limit_kw):
    """Whether a rack needs liquid cooling: its power above the air limit (kW)."""
    return np.asarray(rack_kw, float) > np.asarray(air_limit_kw, float)


def by_cooling(liquid, air_value, liquid_value):
    """The liquid kind's value where ``liquid``, else the air kind's (a PUE, a price per MW)."""
    return np.where(liquid, liquid_value, air_value)


def capex_usd(it_power_w, usd_per_mw):
    """A facility part built for ``it_power_w`` of IT load at ``usd_per_mw`` per MW."""
    return np.asarray(it_power_w, float) / W_PER_MW * usd_per_mw


def floor_usd(racks, m2_per_rack, usd_per_m2):
    """The building's floor for ``racks`` rack positions: ``racks x m2 per rack x USD per m2``."""
    return racks * np.asarray(m2_per_rack, float) * usd_per_m2
