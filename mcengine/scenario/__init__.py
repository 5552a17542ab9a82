"""Scenario system: load TOML, resolve ``extends``, apply ``--set``, validate, sample."""

from .dists import DISTS, LAWS, Dist, Fixed, Law
from .load import load_scenario, scenario_from_dict, shipped_names, shipped_scenarios
from .schema import Scenario

__all__ = [
    "DISTS",
    "LAWS",
    "Dist",
    "Fixed",
    "Law",
    "Scenario",
    "load_scenario",
    "scenario_from_dict",
    "shipped_names",
    "shipped_scenarios",
]
