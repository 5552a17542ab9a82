"""Regenerate the figure gallery (docs/gallery.md) from the current code and the shipped
scenarios: small real runs of every command, drawn by the same report functions as the
commands' ``--out``.

    python docs/gallery/make_gallery.py          # a few minutes on two cores once numba has compiled

Samples are modest (the figures show what each command draws and where today's model
puts it, not final digits). docs/gallery.md links exactly the files this script writes;
tests/test_gallery.py runs it on a tiny sample against the current code and checks the
two agree, so the gallery cannot go stale unseen.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # this checkout's mcengine

import mcengine.api as mc  # noqa: E402
from mcengine.report import figures, sensitivity, stages  # noqa: E402

#: Sample sizes of the gallery; :data:`SMOKE` those of the test that runs this script.
GALLERY = {"trials": 8192, "wafers": 2000, "lifetimes": 500, "sweep_trials": 2048, "tornado_trials": 1024, "sobol_base": 256}
SMOKE = {"trials": 64, "wafers": 100, "lifetimes": 10, "sweep_trials": 32, "tornado_trials": 16, "sobol_base": 16}
#: The pair the sweeps and Sobol' compare: the H100 and the Lite-GPU with 2x links.
PAIR = ["h100", "lite-h100-2x"]
#: The keys that decide the Lite's cost per token today (docs/case-study.md#what-decides-it): its
#: HBM bandwidth (decode is memory-bound) and its co-packaged optics price per GB/s of links.
HBM_KEY, HBM_TBPS = "B:gpu.hbm_tbps", ["0.84", "1.26", "1.68"]  # a quarter of the H100's, 1.5x, 2x
OPTICS_KEY, OPTICS_USD_PER_GBPS = "B:fab.optics_cost_per_gbps_usd", ["0", "1.78", "3.5"]  # free, the shipped median, 2x


def main(out: Path = HERE, sizes: dict = GALLERY) -> list[Path]:
    """Every gallery figure into ``out``; returns the paths written."""
    out = Path(out)
    paths = []
    res = mc.run(trials=sizes["trials"], seed=0)  # the case study: h100 against the Lite variants
    paths += figures.write_figures(res, out)
    fab = mc.yield_("lite-h100", wafers=sizes["wafers"], seed=0)
    paths += stages.figures_for_yield({"scenario": "lite-h100", "wafers": sizes["wafers"], **fab}, out)
    paths += stages.figures_for_reliability(mc.reliability("lite-h100", lifetimes=sizes["lifetimes"], seed=0), out)
    paths += stages.figures_for_roofline(mc.roofline("lite-h100"), out)
    paths += sensitivity.write_figures(mc.sweep(PAIR, HBM_KEY, HBM_TBPS, trials=sizes["sweep_trials"], seed=0), out)
    grid = mc.sweep(PAIR, [HBM_KEY, OPTICS_KEY], [HBM_TBPS, OPTICS_USD_PER_GBPS], trials=sizes["sweep_trials"], seed=0)
    paths += sensitivity.write_figures(grid, out)
    paths += sensitivity.write_figures(mc.tornado(["lite-h100"], trials=sizes["tornado_trials"], seed=0), out)
    paths += sensitivity.write_figures(mc.tornado(["lite-h100"], output="availability", trials=sizes["tornado_trials"], seed=0), out)
    paths += sensitivity.write_figures(mc.sobol(PAIR, trials=sizes["sobol_base"], seed=0), out)
    return paths


if __name__ == "__main__":
    for path in main():
        print(path.relative_to(HERE.parents[1]))
