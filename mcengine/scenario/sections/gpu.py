"""``[gpu]``: one GPU package as the roofline and econ stages see it, typed in or derived
from a parent die (``[gpu.derive]``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..dists import Dist, Fixed
from ...errors import Problem
from ..fields import choice, integer, number, parse_section, text
from ..parts import hbm_generations, io_technologies


_HBM_GENERATIONS = tuple(hbm_generations())
_IO_TECHNOLOGIES = tuple(io_technologies())
_SHARE_WHY = "a share of the die's perimeter"


@dataclass(frozen=True)
class DeriveSection:
    """``[gpu.derive]``: a GPU built from a fraction of a parent scenario's die; the die's
    perimeter (shoreline) bounds its HBM stacks and its link bandwidth
    (docs/model.md#derive, defaults in docs/sources.md#derive).

    The keys that fix the die and its integer stack count are structural (one number):
    the fab stage lays out one die geometry per scenario and builds packages with a
    whole number of stacks. The per-mm, per-stack and per-mm² rates may be ``dist``
    tables; the link bandwidth and TDP they give are then derived per trial.

    Sources: HBM edge, stack edge and stack cap docs/sources.md#derive-hbm-edge; HBM
    generations #derive-hbm3, #derive-hbm3e, #derive-hbm-power; I/O technologies
    #derive-io-electrical, #derive-io-cpo; die power #derive-tdp."""

    parent: str = text("h100", "Scenario (a shipped name or a path) whose [fab] die, units and [gpu] peak FLOP/s the design is a fraction of.")
    fraction: Dist = number(0.25, "Share of the parent's die area (1/2, 1/4, 1/8 ...); units per die and peak FLOP/s scale with it.", lo=0.0, lo_open=True, hi=1.0, uncertain=False,
                            why="a fraction of the parent's die")
    uncore_area_mm2: Dist = number(0.0, "Die area every die carries whatever its fraction (memory PHY logic, PCIe, GSP, the optics interface): "
                                        "the die is fraction x (parent's area - this) + this; units and FLOP/s scale with the fraction "
                                        "(docs/model.md#derive, docs/sources.md#derive-uncore).", "mm2", lo=0.0, hi=10_000.0, uncertain=False,
                                   why="more than any reticle; the parent's die bounds it too")
    aspect: Dist = number(None, "Die height / width; unset = the parent's.", lo=0.1, hi=10.0, uncertain=False,
                          why="a 10:1 die is a sliver no floorplan uses")
    hbm_edge_share: Dist = number(0.548, "Share of the die perimeter given to HBM PHYs (H100: both 31.4 mm edges, 62.8 of 114.6 mm); the rest carries I/O.", lo=0.0, hi=1.0, uncertain=False,
                                  why=_SHARE_WHY)
    hbm_phy_edge_mm: Dist = number(11.0, "Die edge one HBM stack needs (its footprint along the edge).", "mm", lo=1.0, hi=100.0, uncertain=False,
                                   why="9x an HBM stack's 11 mm footprint; at 1 mm a perimeter holds 1,800 stacks")
    hbm_stacks_max: int = integer(8, "Most HBM stacks the package holds, whatever the edge allows (B200, MI300X: 8).", lo=1, hi=64,
                                  why="8x the most stacks on any package, as fab.hbm_stacks")
    hbm_generation: str = choice("hbm3-h100", "HBM generation of each stack: GB, TB/s and W per stack from configs/parts/shoreline.toml.", _HBM_GENERATIONS)
    hbm_w_per_stack: Dist = number(None, "Power of one HBM stack at its bandwidth; unset = the generation's figure.", "W", lo=0.0, hi=1000.0,
                                   why="25x an HBM3E stack at full bandwidth")
    io: str = choice("electrical", "I/O technology on the non-HBM edge: GB/s per mm and pJ/bit from configs/parts/shoreline.toml.", _IO_TECHNOLOGIES)
    io_gbps_per_mm: Dist = number(None, "Link bandwidth per direction per mm of I/O edge; unset = the io technology's figure.", "GB/s/mm", lo=0.0, lo_open=True, hi=10_000.0,
                                  why="7x UCIe-2.5D's 1.3 TB/s per mm, the densest die-edge interface published")
    io_pj_per_bit: Dist = number(None, "Energy per link bit sent; unset = the io technology's figure.", "pJ/bit", lo=0.0, hi=1000.0,
                                 why="50x a pluggable optical module's ~20 pJ/bit")
    tdp_w_per_mm2: Dist = number(0.71, "Power of the die per mm² at full load (H100: 700 W less its HBM and links over 813 mm²).", "W/mm^2", lo=0.0, hi=100.0,
                                 why="100x an H100 die; beyond any cooling")


def parse_derive(raw, key: str, problems: list[Problem]) -> DeriveSection | None:
    """``[gpu.derive]`` (None when absent). Its ``resolved`` table, which `mcengine check`
    adds, is recomputed on load and so skipped here."""
    if raw is None:
        return None
    if isinstance(raw, dict) and isinstance(raw.get("resolved"), dict):
        raw = {k: v for k, v in raw.items() if k != "resolved"}
    return parse_section(DeriveSection, raw, f"{key}.", problems)


#: Number formats with a dense peak of their own in a ``gpu.peak_tflops`` table.
PEAK_PRECISIONS = ("bf16", "fp8", "fp4")
#: The input of a training job's bf16 peak where the serving side computes at another
#: entry of ``gpu.peak_tflops`` (:meth:`mcengine.scenario.Scenario.training_peak`).
TRAINING_PEAK_KEY = "gpu.peak_tflops.bf16"
_PEAK_SPEC = number(989.4, "Dense peak FLOP/s: one number (the peak at every precision: the bf16 peak of the shipped files) or a table "
                    "{bf16, fp8, fp4} of the dense peak per number format, the one workload.precision computes in taken "
                    "(H100 SXM5: bf16 989.4, fp8 1978.9, fp4 1978.9; docs/sources.md#fab-h100-specs, docs/model.md#precision). "
                    "A table must give bf16; a format it leaves out computes at the bf16 peak (a warning).", "TFLOP/s",
                    lo=0.0, lo_open=True, hi=1e6, why="1000x an H100; keeps step times meaningful")


@dataclass(frozen=True)
class PeakTable:
    """``gpu.peak_tflops``: the dense peak per number format (docs/model.md#precision).
    ``given`` names the formats the file gave (a single number gives every format the
    same peak and is marked ``scalar``); a format not given computes at the bf16 peak."""

    peaks: tuple[tuple[str, Dist], ...]
    scalar: bool = True

    @classmethod
    def of(cls, peak: Dist | float) -> "PeakTable":
        """One number (or dist table) as the peak at every precision."""
        return cls(((PEAK_PRECISIONS[0], peak if isinstance(peak, Dist) else Fixed(float(peak))),))

    @property
    def bf16(self) -> Dist:
        """The bf16 peak (the one the shipped per-design numbers scale from)."""
        return dict(self.peaks)[PEAK_PRECISIONS[0]]

    @property
    def given(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.peaks)

    def at(self, precision: str) -> Dist:
        """The peak ``precision`` computes at (the bf16 peak when not given)."""
        return dict(self.peaks).get(precision, self.bf16)

    def missing(self) -> tuple[str, ...]:
        """Formats of a table that it leaves out (none for a single number)."""
        return () if self.scalar else tuple(p for p in PEAK_PRECISIONS if p not in self.given)

    @property
    def is_fixed(self) -> bool:
        return all(d.is_fixed for _, d in self.peaks)

    def scaled(self, factor: float) -> "PeakTable":
        """Every format's (fixed) peak times ``factor`` (a derived design's share of the die)."""
        return PeakTable(tuple((name, Fixed(factor * d.value)) for name, d in self.peaks), self.scalar)

    def to_toml(self):
        if self.scalar:
            return self.bf16.to_toml()
        return {name: d.to_toml() for name, d in self.peaks}


def parse_peak(raw, key: str, problems: list[Problem]) -> PeakTable | None:
    """``gpu.peak_tflops``: a number or dist table (the peak at every precision) or a table
    of :data:`PEAK_PRECISIONS` whose entries are numbers or dist tables; bf16 required."""
    spec = _PEAK_SPEC.metadata["spec"]
    if raw is None:
        return PeakTable.of(_PEAK_SPEC.default)
    if not isinstance(raw, dict) or "dist" in raw:
        dist = spec.parse(raw, key, problems)
        return None if dist is None else PeakTable.of(dist)
    before = len(problems)
    for name in raw:
        if name not in PEAK_PRECISIONS:
            problems.append(Problem(f"{key}.{name}", raw[name], "allowed precisions: " + ", ".join(PEAK_PRECISIONS) + ' (or one number, or a dist table with "dist")'))
    if PEAK_PRECISIONS[0] not in raw:
        problems.append(Problem(f"{key}.{PEAK_PRECISIONS[0]}", None, "required in a peak table: the bf16 peak (a format left out computes at it)"))
    peaks = tuple((name, spec.parse(raw[name], f"{key}.{name}", problems)) for name in PEAK_PRECISIONS if name in raw)
    return None if len(problems) > before else PeakTable(peaks, scalar=False)


@dataclass(frozen=True)
class GpuSection:
    name: str = text("h100-sxm5", "Label of the GPU package.")
    peak_tflops: PeakTable = field(default=PeakTable.of(989.4), metadata={"help": _PEAK_SPEC.metadata["spec"].help, "spec": _PEAK_SPEC.metadata["spec"]})
    hbm_gb: Dist = number(80.0, "HBM capacity per package.", "GB", lo=0.0, lo_open=True, hi=1e5,
                          why="1000x an H100; keeps the batch that fits HBM within int64")
    hbm_tbps: Dist = number(3.35, "HBM bandwidth per package.", "TB/s", lo=0.0, lo_open=True, hi=1e4,
                            why="1000x an H100")
    hbm_part: str = choice("typed", 'The HBM stack the package carries: "typed" (hbm_gb and hbm_tbps as given) or a part of the catalogue '
                                    "(configs/parts/shoreline.toml: hbm3, hbm3-h100, hbm3e, hbm3e-h200), which replaces both by "
                                    "fab.hbm_stacks x the part's GB and TB/s per stack: a whole number of real stacks (docs/model.md#hbm-part).",
                           ("typed", *_HBM_GENERATIONS))
    link_gbps: Dist = number(450.0, "Scale-up bandwidth per direction per GPU for tensor-parallel traffic.", "GB/s", lo=0.0, lo_open=True, hi=1e6,
                             why="2000x NVLink 4")
    scale_out_gbps: Dist = number(50.0, "Scale-out (NIC) bandwidth per direction per GPU, for collectives and pipeline hops that leave a scale-up domain "
                                        "(H100: one 400 Gb/s ConnectX-7 per GPU; docs/sources.md#roof-scale-up-domain).", "GB/s", lo=0.0, lo_open=True, hi=1e6,
                                  why="2000x a 400 Gb/s NIC")
    tdp_w: Dist = number(700.0, "Board power drawn while serving (TDP).", "W", lo=0.0, lo_open=True, hi=1e5,
                         why="100 kW per package is beyond any cooling")
    core_tdp_w: Dist | None = number(None, "Board power at full load without the scale-up links (die, HBM, board). Set with link_pj_per_bit, it replaces tdp_w: "
                                     "TDP = core_tdp_w + link_pj_per_bit x link_gbps (docs/model.md#power).", "W", lo=0.0, lo_open=True, hi=1e5,
                                     why="as tdp_w")
    link_pj_per_bit: Dist | None = number(None, "Energy per bit the scale-up links send; with core_tdp_w, the link power pJ/bit x 8 x link_gbps is charged in the TDP "
                                          "(docs/sources.md#power-link-energy).", "pJ/bit", lo=0.0, hi=1000.0,
                                          why="50x a pluggable optical module's ~20 pJ/bit, as gpu.derive.io_pj_per_bit")
    idle_w: Dist | None = number(None, "Board power of an idle GPU (clocks up, nothing to do); power = idle + (TDP - idle) x utilisation. Unset: the GPU draws its TDP whatever it does.", "W", lo=0.0, hi=1e5,
                                 why="as tdp_w; at most tdp_w in every trial")
    dvfs_scale: Dist = number(1.0, "Voltage/frequency operating point s: peak FLOP/s x s, dynamic power (TDP - idle) x s^3; 1 = the rated clocks.", lo=0.3, hi=1.5,
                              why="the cube law (voltage tracking frequency) holds only near the rated point; 0.3-1.5 spans every shipped clock range")
    h100_equivalents: Dist = number(1.0, "Silicon of this package in H100 dies (a quarter-die Lite-GPU is 0.25); used to report per-H100-equivalent figures.", lo=0.001, hi=1000.0, uncertain=False,
                                    why="per-H100-equivalent figures divide by it; a wafer holds fewer than 1000 H100 dies")
    dies_per_package: int = integer(1, "Dies of equal size in one package (B200: 2). The fab stage splits the [fab] die (its area, units and required "
                                       "units: the package's silicon) into this many dies side by side along its width, each yielded and tested on its own, "
                                       "and assembles a package from as many known-good dies (docs/model.md#fab, docs/sources.md#gen-b200-dies).",
                                    lo=1, hi=16, why="16 reticle-size dies exceed any interposer")
    derive: DeriveSection | None = field(default=None, metadata={"help": "Derive the GPU from a fraction of a parent die (docs/model.md#derive); explicit [gpu] and [fab] values override."})
