"""Regenerate the case study's Sobol' ranking of docs/sensitivity.md: the total indices of
the paired cost ratio lite-h100-2x / h100 over every uncertain input, for each design
shape of :data:`DESIGNS` (N base trials in R independent scramblings), each for six seeds
(independent designs).

    python docs/sensitivity/make_case_sobol.py     # rerun the eighteen designs, rewrite case-sobol.json and the page's block

Each design is ``mcengine sensitivity h100 lite-h100-2x --method sobol --trials N --seed
S --scramblings R`` (:func:`mcengine.sensitivity.sobol`, whose R scramblings give the
95 % intervals); case-sobol.json keeps the documents whole (first-order indices too).
The block lists the drivers (total index >= 0.01 in a ranked design) with the total
index and half-interval of seeds 0 and 1 of each shape, then per shape the widest
total-index half-interval and whether both seeds rank the drivers alike, then per shape
and driver the spread of the total index over the :data:`SPREAD_SEEDS` designs beside the
mean standard error the designs report (their ratio is 1 for honest intervals). The
timing of the benchmark's shape is the ``sobol`` benchmark (``python -m benchmarks
sobol``, docs/benchmarks.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from scipy import stats

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's mcengine and benchmarks
PAGE = ROOT / "docs" / "sensitivity.md"
RESULT = HERE / "case-sobol.json"
BEGIN, END = "<!-- case-sobol:begin -->", "<!-- case-sobol:end -->"

from benchmarks.harness.sobol import BASE_TRIALS, SCENARIOS, SCRAMBLINGS, SEEDS, drivers  # noqa: E402  (the benchmark's designs)
from mcengine.options import DEFAULT_SCRAMBLINGS  # noqa: E402
from mcengine.sensitivity import sobol  # noqa: E402

#: (base trials N, scramblings R) of the designs: the benchmark's N with the default R and
#: with the benchmark's, and twice that N with the default R.
DESIGNS = ((BASE_TRIALS, DEFAULT_SCRAMBLINGS), (BASE_TRIALS, SCRAMBLINGS), (2 * BASE_TRIALS, DEFAULT_SCRAMBLINGS))
#: Seeds of the designs whose spread is measured (the first ones, :data:`SEEDS`, are ranked).
SPREAD_SEEDS = tuple(range(6))


def _se(doc: dict, key: str) -> float:
    """The standard error behind a document's total-index half-interval of ``key``."""
    return doc["indices"][key]["ST_conf"] / stats.t.ppf(0.5 + doc["conf_level"] / 2, doc["scramblings"] - 1)


def shape(doc: dict) -> tuple[int, int]:
    """A document's design shape: (base trials N, scramblings R)."""
    return doc["base_samples"], doc["scramblings"]


def _label(n: int, r: int) -> str:
    return f"N = {n:,}, R = {r}"


def block(docs: list[dict]) -> str:
    """The page's Markdown block from the documents of :func:`main` (per design shape, one
    per seed of :data:`SPREAD_SEEDS`; the ranked ones those of :data:`SEEDS`)."""
    ranked = [d for d in docs if d["seed"] in SEEDS]
    keys = list(dict.fromkeys(k for d in ranked for k in drivers(d)))
    head = " | ".join(f"{_label(*shape(d))}, seed {d['seed']}" for d in ranked)
    lines = [f"| total index ± 95 % half-interval | {head} |", "|---" * (1 + len(ranked)) + "|"]
    for key in keys:
        lines.append(f"| `{key}` | " + " | ".join(f"{d['indices'][key]['ST']:.3f} ± {d['indices'][key]['ST_conf']:.3f}" for d in ranked) + " |")
    lines.append("")
    shapes = list(dict.fromkeys(shape(d) for d in docs))
    for n, r in shapes:
        same = [d for d in ranked if shape(d) == (n, r)]
        widest = max(v["ST_conf"] for d in same for v in d["indices"].values())
        agree = all(drivers(d) == drivers(same[0]) for d in same)
        lines.append(f"- {_label(n, r)} ({same[0]['evaluations']:,} chain evaluations a design, {r} scramblings of {n // r:,} rows): "
                     f"widest total-index half-interval ± {widest:.3f}; both seeds rank the drivers alike: {'yes' if agree else 'no'}.")
    lines += ["", "| total index over the seeds | " + " | ".join(f"{_label(n, r)}: mean, spread (sd), reported se, se / spread" for n, r in shapes) + " |",
              "|---" * (1 + len(shapes)) + "|"]
    for key in keys:
        cells = []
        for n, r in shapes:
            same = [d for d in docs if shape(d) == (n, r)]
            st = np.array([d["indices"][key]["ST"] for d in same])
            sd, se = st.std(ddof=1), np.mean([_se(d, key) for d in same])
            cells.append(f"{st.mean():.3f}, {sd:.4f}, {se:.4f}, {se / sd:.2f}")
        lines.append(f"| `{key}` | " + " | ".join(cells) + " |")
    lines += ["", "Spread and mean reported standard error over seeds " + ", ".join(map(str, SPREAD_SEEDS)) + " of each shape."]
    return "\n".join(lines)


def main() -> None:
    docs = [sobol(list(SCENARIOS), trials=n, seed=seed, scramblings=r) for n, r in DESIGNS for seed in SPREAD_SEEDS]
    for doc in docs:
        doc.pop("elapsed_s")  # (timings live in the benchmark record)
    RESULT.write_text(json.dumps(docs, indent=1) + "\n")
    page = PAGE.read_text()
    start, stop = page.index(BEGIN) + len(BEGIN), page.index(END)
    PAGE.write_text(page[:start] + "\n" + block(docs) + "\n" + page[stop:])


if __name__ == "__main__":
    main()
