"""``[gpu]``: one GPU package as the roofline and econ stages see it."""

from __future__ import annotations

from dataclasses import dataclass

from ..dists import Dist
from ..fields import number, text


@dataclass(frozen=True)
class GpuSection:
    name: str = text("h100-sxm5", "Label of the GPU package.")
    peak_tflops: Dist = number(989.4, "Dense peak at the workload's precision (H100 SXM5 BF16: 989.4).", "TFLOP/s", lo=0.0, lo_open=True, hi=1e6,
                               why="1000x an H100; keeps step times meaningful")
    hbm_gb: Dist = number(80.0, "HBM capacity per package.", "GB", lo=0.0, lo_open=True, hi=1e5,
                          why="1000x an H100; keeps the batch that fits HBM within int64")
    hbm_tbps: Dist = number(3.35, "HBM bandwidth per package.", "TB/s", lo=0.0, lo_open=True, hi=1e4,
                            why="1000x an H100")
    link_gbps: Dist = number(450.0, "Scale-up bandwidth per direction per GPU for tensor-parallel traffic.", "GB/s", lo=0.0, lo_open=True, hi=1e6,
                             why="2000x NVLink 4")
    tdp_w: Dist = number(700.0, "Board power drawn while serving (TDP).", "W", lo=0.0, lo_open=True, hi=1e5,
                         why="100 kW per package is beyond any cooling")
    idle_w: Dist | None = number(None, "Board power of an idle GPU (clocks up, nothing to do); power = idle + (TDP - idle) x utilisation. Unset: the GPU draws its TDP whatever it does.", "W", lo=0.0, hi=1e5,
                                 why="as tdp_w; at most tdp_w in every trial")
    dvfs_scale: Dist = number(1.0, "Voltage/frequency operating point s: peak FLOP/s x s, dynamic power (TDP - idle) x s^3; 1 = the rated clocks.", lo=0.3, hi=1.5,
                              why="the cube law (voltage tracking frequency) holds only near the rated point; 0.3-1.5 spans every shipped clock range")
    h100_equivalents: Dist = number(1.0, "Silicon of this package in H100 dies (a quarter-die Lite-GPU is 0.25); used to report per-H100-equivalent figures.", lo=0.001, hi=1000.0, uncertain=False,
                                    why="per-H100-equivalent figures divide by it; a wafer holds fewer than 1000 H100 dies")
