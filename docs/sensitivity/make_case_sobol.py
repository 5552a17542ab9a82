"""Regenerate the case study's Sobol' ranking of docs/sensitivity.md: the total indices of
the paired cost ratio lite-h100-2x / h100 over every uncertain input, at N = 1,024 and
2,048 base trials, each for six seeds (independent designs).

    python docs/sensitivity/make_case_sobol.py     # rerun the twelve designs, rewrite case-sobol.json and the page's block

Each design is ``mcengine sensitivity h100 lite-h100-2x --method sobol --trials N --seed
S`` (:func:`mcengine.sensitivity.sobol`, with its default eight independent scramblings
behind the 95 % intervals); case-sobol.json keeps the documents whole (first-order
indices too). The block lists the drivers (total index >= 0.01 in a ranked design) with
the total index and half-interval of seeds 0 and 1 at each N, then per N the widest
total-index half-interval and whether both seeds rank the drivers alike, then per N and
driver the spread of the total index over the :data:`SPREAD_SEEDS` designs beside the
mean standard error the designs report (their ratio is 1 for honest intervals). The
timing of the N = 1,024 designs is the ``sobol`` benchmark (``python -m benchmarks
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

from benchmarks.harness.sobol import BASE_TRIALS, SCENARIOS, SEEDS, drivers  # noqa: E402  (the benchmark's designs)
from mcengine.sensitivity import sobol  # noqa: E402

#: Base trials of the designs: the benchmark's, and twice that.
TRIALS = (BASE_TRIALS, 2 * BASE_TRIALS)
#: Seeds of the designs whose spread is measured (the first ones, :data:`SEEDS`, are ranked).
SPREAD_SEEDS = tuple(range(6))


def _se(doc: dict, key: str) -> float:
    """The standard error behind a document's total-index half-interval of ``key``."""
    return doc["indices"][key]["ST_conf"] / stats.t.ppf(0.5 + doc["conf_level"] / 2, doc["scramblings"] - 1)


def block(docs: list[dict]) -> str:
    """The page's Markdown block from the documents of :func:`main` (per N, one per seed of
    :data:`SPREAD_SEEDS`; the ranked ones those of :data:`SEEDS`)."""
    ranked = [d for d in docs if d["seed"] in SEEDS]
    keys = list(dict.fromkeys(k for d in ranked for k in drivers(d)))
    head = " | ".join(f"N = {d['base_samples']:,}, seed {d['seed']}" for d in ranked)
    lines = [f"| total index ± 95 % half-interval | {head} |", "|---" * (1 + len(ranked)) + "|"]
    for key in keys:
        lines.append(f"| `{key}` | " + " | ".join(f"{d['indices'][key]['ST']:.3f} ± {d['indices'][key]['ST_conf']:.3f}" for d in ranked) + " |")
    lines.append("")
    sizes = list(dict.fromkeys(d["base_samples"] for d in docs))
    for n in sizes:
        same = [d for d in ranked if d["base_samples"] == n]
        widest = max(v["ST_conf"] for d in same for v in d["indices"].values())
        agree = all(drivers(d) == drivers(same[0]) for d in same)
        lines.append(f"- N = {n:,} ({same[0]['evaluations']:,} chain evaluations a design): widest total-index "
                     f"half-interval ± {widest:.3f}; both seeds rank the drivers alike: {'yes' if agree else 'no'}.")
    lines += ["", "| total index over the seeds | " + " | ".join(f"N = {n:,}: mean, spread (sd), reported se, se / spread" for n in sizes) + " |",
              "|---" * (1 + len(sizes)) + "|"]
    for key in keys:
        cells = []
        for n in sizes:
            same = [d for d in docs if d["base_samples"] == n]
            st = np.array([d["indices"][key]["ST"] for d in same])
            sd, se = st.std(ddof=1), np.mean([_se(d, key) for d in same])
            cells.append(f"{st.mean():.3f}, {sd:.4f}, {se:.4f}, {se / sd:.2f}")
        lines.append(f"| `{key}` | " + " | ".join(cells) + " |")
    lines += ["", "Spread and mean reported standard error over seeds " + ", ".join(map(str, SPREAD_SEEDS)) + " at each N."]
    return "\n".join(lines)


def main() -> None:
    docs = [sobol(list(SCENARIOS), trials=n, seed=seed) for n in TRIALS for seed in SPREAD_SEEDS]
    for doc in docs:
        doc.pop("elapsed_s")  # (timings live in the benchmark record)
    RESULT.write_text(json.dumps(docs, indent=1) + "\n")
    page = PAGE.read_text()
    start, stop = page.index(BEGIN) + len(BEGIN), page.index(END)
    PAGE.write_text(page[:start] + "\n" + block(docs) + "\n" + page[stop:])


if __name__ == "__main__":
    main()
