"""Regenerate the figure gallery (docs/gallery.md): small real runs of every command.

    python docs/gallery/make_gallery.py          # about a minute once numba has compiled

Each figure is written by the same report function the command's ``--out`` uses, into
this folder. Samples are small (the figures show what each one draws, not final numbers).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # this checkout's mcengine

import mcengine.api as mc  # noqa: E402
from mcengine.report import figures, sensitivity, stages  # noqa: E402


def main() -> list[Path]:
    out = []
    res = mc.run(trials=4096, seed=0)  # the case study: h100 vs three Lite variants
    out += figures.write_figures(res, HERE)
    out += stages.figures_for_yield({"scenario": "lite-h100", "wafers": 2000, **mc.yield_("lite-h100", wafers=2000, seed=0)}, HERE)
    out += stages.figures_for_reliability(mc.reliability("lite-h100", lifetimes=200, seed=0), HERE)
    out += stages.figures_for_roofline(mc.roofline("lite-h100"), HERE)
    one = mc.sweep(["h100", "lite-h100-2x"], "B:gpu.hbm_tbps", ["0.84", "1.0", "1.2"], trials=1024, seed=0)
    two = mc.sweep(["h100", "lite-h100-2x"], ["B:gpu.hbm_tbps", "B:fab.optics_cost_per_gbps_usd"], [["0.84", "1.0", "1.2"], ["0", "0.89", "1.78"]],
                   trials=1024, seed=0)
    out += sensitivity.write_figures(one, HERE)
    out += sensitivity.write_figures(two, HERE)
    out += sensitivity.write_figures(mc.tornado(["lite-h100"], trials=1024, seed=0), HERE)
    out += sensitivity.write_figures(mc.sobol(["h100", "lite-h100-2x"], trials=64, seed=0), HERE)
    return out


if __name__ == "__main__":
    for path in main():
        print(path.relative_to(HERE.parents[1]))
