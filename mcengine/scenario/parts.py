"""Shipped parts of derived GPUs (``configs/parts/shoreline.toml``): HBM generations per
stack and I/O technologies per mm of die edge, each figure sourced in ``docs/sources.md``
(``#derive-*``). ``[gpu.derive] hbm_generation`` and ``io`` name an entry."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType

from .files import configs_dir, read_toml


@dataclass(frozen=True)
class HbmGeneration:
    """One HBM generation as one stack delivers it."""

    name: str
    gb_per_stack: float
    tbps_per_stack: float
    w_per_stack: float


@dataclass(frozen=True)
class IoTechnology:
    """Off-package I/O on the die's edge: bandwidth per direction per mm, energy per bit."""

    name: str
    gbps_per_mm: float
    pj_per_bit: float


def _positive(table: dict, key: str, where: str) -> float:
    value = table.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"configs/parts/shoreline.toml [{where}] {key} = {value!r}: a positive number is needed")
    return float(value)


@lru_cache(maxsize=1)
def _table() -> dict:
    return read_toml(configs_dir() / "parts" / "shoreline.toml")


@lru_cache(maxsize=1)
def hbm_generations() -> Mapping[str, HbmGeneration]:
    """Every shipped HBM generation by name (read only: the cache's own mapping)."""
    return MappingProxyType({name: HbmGeneration(name, *(_positive(t, k, f"hbm.{name}") for k in ("gb_per_stack", "tbps_per_stack", "w_per_stack")))
            for name, t in _table()["hbm"].items()})


@lru_cache(maxsize=1)
def io_technologies() -> Mapping[str, IoTechnology]:
    """Every shipped I/O technology by name (read only: the cache's own mapping)."""
    return MappingProxyType({name: IoTechnology(name, *(_positive(t, k, f"io.{name}") for k in ("gbps_per_mm", "pj_per_bit")))
            for name, t in _table()["io"].items()})
