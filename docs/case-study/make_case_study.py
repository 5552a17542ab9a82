"""Regenerate the study tables the pages quote from the code: each shipped study's run, its
figures and its condensed table, the headline verdict of README.md, and the paper table
of docs/paper.md from docs/paper/summary.json, and README's verdict per generation
(:data:`GENERATIONS`, written to :data:`GENERATIONS_FILE`).

    python docs/case-study/make_case_study.py          # run the studies, rewrite the tables
    python docs/case-study/make_case_study.py --paper  # rewrite docs/paper.md's table only
    python docs/case-study/make_case_study.py --map    # rerun the headline's verdict map only
    python docs/case-study/make_case_study.py --beyond # rerun README's studies away from saturation only
    python docs/case-study/make_case_study.py --generations  # rerun README's verdict per generation only
    python docs/case-study/make_case_study.py --check  # exit 1 if a table and the runs differ

Each study of :data:`STUDIES` (``mcengine run NAME``: its own trial count, seed 0) is
written with ``--out`` into a folder of its name beside this script, so ``summary.json``,
``table.csv``, the resolved scenarios and every figure of ``run`` sit there. The block of
docs/case-study.md between ``<!-- study:NAME:begin -->`` and ``<!-- study:NAME:end -->``
is rendered from that ``summary.json`` by :func:`render_block`, and README.md's block
between ``<!-- verdict:case-study:begin -->`` and ``<!-- verdict:case-study:end -->`` by
:func:`render_verdict`; ``tests/test_readme_case_study.py`` checks both pages against the
committed summaries (fast) and the committed summaries against fresh runs of the current
code (slow), so neither can drift. The paper table (after ``python
docs/make_paper.py``) is the rows of :func:`mcengine.report.paper.claim_rows`, checked by
``tests/paper/test_page_table.py``.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
README = ROOT / "README.md"
#: The page of the case study's and the workload mixes' tables.
PAGE = ROOT / "docs" / "case-study.md"
#: The page of the paper study's table.
PAPER_PAGE = ROOT / "docs" / "paper.md"
SEED = 0
#: The shipped studies the case-study page quotes: the case study and the two workload mixes.
STUDIES = ("case-study", "mix-azure-2023", "mix-reasoning")
#: The study whose paired table README.md quotes as the headline verdict.
HEADLINE = "case-study"
#: Paired trials of each cell of the headline's verdict map (docs/verdict-map.md), the run
#: beside it at as many trials; written to :data:`MAP_FILE` (beside, not inside, the
#: headline's run folder, which mcengine replaces whole), quoted in README.md.
MAP_TRIALS = 512
MAP_FILE = HERE / "verdict_map.json"
#: The studies away from saturation README.md's second table quotes, each run (its own
#: trials, seed 0) into a folder of its name beside this script as :data:`STUDIES` are:
#: (study, its pairs B / A), each judged on the cost the verdict judges it on
#: (mcengine.columns.VERDICT_COSTS).
BEYOND = (
    ("load-diurnal", ("lite-h100 / h100", "lite-h100-2x / h100")),
    ("training-405b", ("train-lite-h100 / train-h100", "train-lite-h100-2x / train-h100")),
)

#: README's verdict per generation (docs/generation.md#b200): per row a generation's parent
#: against its Lite designs with electrical links and with co-packaged optics (the same
#: silicon), on a workload, run paired at :data:`GENERATIONS_TRIALS` trials, seed 0:
#: (workload label, scenarios parent / electrical / optical, overrides of every scenario,
#: GPUs per instance of the parent and of the Lites or None for the scenarios' own). Each
#: design keeps its cluster's GPUs (instances = GPUs / GPUs per instance). Written to
#: :data:`GENERATIONS_FILE`; the DeepSeek-V3 rows are the study ``gen-b200-deepseek``'s
#: workload; DeepSeek-V3 fp8 (671 GB) needs 16 H100s or 64 Lite-H100s an instance.
GENERATIONS_TRIALS = 2048
GENERATIONS_FILE = HERE / "generations.json"
_H100_DESIGNS = ("h100", "lite-h100-electrical", "lite-h100")
_B200_DESIGNS = ("b200", "lite-b200-electrical", "lite-b200")


def _deepseek() -> tuple[str, ...]:
    """The overrides of the shipped study ``gen-b200-deepseek`` (DeepSeek-V3 fp8, expert parallel)."""
    from mcengine.scenario.study import load_study

    return tuple(load_study("gen-b200-deepseek")["set"])


GENERATIONS = (
    ("Llama-3-70B bf16", _H100_DESIGNS, lambda: (), None),
    ("DeepSeek-V3 fp8, EP", _H100_DESIGNS, _deepseek, (16, 64)),
    ("DeepSeek-V3 fp8, wide EP", _H100_DESIGNS, _deepseek, (64, 64)),
    ("Llama-3-70B bf16", _B200_DESIGNS, lambda: (), None),
    ("DeepSeek-V3 fp8, EP", _B200_DESIGNS, _deepseek, None),
    ("DeepSeek-V3 fp8, wide EP", _B200_DESIGNS, _deepseek, (64, 64)),
)

#: (metric, label, formatter of a summary's statistics) rows of the per-scenario table.
SCENARIO_ROWS = (
    ("cost_per_mtok_usd", "cost per M output tokens", lambda s: f"{s['p50']:.3f} [{s['p05']:.3f}–{s['p95']:.3f}]"),
    ("cost_per_mtok_at_cost_usd", "the same at cost (no markup)", lambda s: f"{s['p50']:.3f}"),
    ("instance_availability", "instance availability", lambda s: f"{s['mean']:.5f}"),
    ("tokens_per_s", "cluster output tokens/s", lambda s: f"{s['p50']:,.0f}"),
    ("gpu_cost_usd", "fab cost per GPU package", lambda s: f"${s['p50']:,.0f}"),
    ("gpu_price_per_h100_equivalent_usd", "GPU price per H100-equivalent", lambda s: f"${s['p50']:,.0f}"),
    ("energy_j_per_token", "GPU energy per output token", lambda s: f"{s['p50']:.2f} J"),
    ("power_w_per_h100_equivalent", "GPU power per H100-equivalent", lambda s: f"{s['p50']:.0f} W"),
    ("interruptions_per_year", "instance interruptions / yr", lambda s: f"{s['mean']:,.0f}"),
)
MIX_COST = "mix.{}.cost_per_mtok_usd"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    """Plain text columns, each as wide as its widest cell plus two spaces."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return [" " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]


def _ratio(r: dict) -> str:
    return f"{r['p50']:.3f} [{r['p05']:.3f}–{r['p95']:.3f}]"


def render_block(doc: dict) -> str:
    """The case-study page's condensed tables of a ``run`` summary document.

    Per scenario: the median and 5–95 % of cost per token, the median at cost, mean
    instance availability and interruptions a year, medians of the rest, and for a
    workload mix each request class's share of the instances. Then the paired table of
    :func:`_paired_table`.
    """
    names = list(doc["scenarios"])
    sides = [doc["scenarios"][n] for n in names]
    classes = list(sides[0].get("mix", {}))
    rows = [[f"instances serving {c}", *(f"{s['mix'][c]['instance_share']['p50']:.2f}" for s in sides)] for c in classes]
    infeasible = doc.get("slo_infeasible_share", {})
    if any(infeasible.values()):
        rows.append(["share of trials no plan serves", *(f"{infeasible[n]:.3f}" for n in names)])
    lines = [_title(doc), ""] + _scenario_table(doc, SCENARIO_ROWS, rows) + [""] + _paired_table(doc, classes)
    return "\n".join(["```", *lines, "```"])


#: A design whose median ratio is within this of an earlier design's in every cell of the
#: map is not given columns of its own in README's map (the title names it).
MAP_SAME = 0.005


def render_map(vmap: dict) -> str:
    """README's verdict map: a row per cell of every reading's grid but the last (the shipped
    reading first), a column per design and option of the last reading, each the median
    paired cost ratio and, in brackets, P(Lite cheaper); a design within :data:`MAP_SAME`
    of an earlier one everywhere shares its columns."""
    *rows_by, last = list(vmap["readings"])
    all_pairs = list(vmap["cells"][0]["verdict"])
    ratio = {p: [c["verdict"][p]["cost_ratio"] for c in vmap["cells"]] for p in all_pairs}
    pairs, same = [], {}
    for p in all_pairs:
        twin = next((q for q in pairs if max(abs(a - b) for a, b in zip(ratio[p], ratio[q])) <= MAP_SAME), None)
        (same.setdefault(twin, []).append(p) if twin else pairs.append(p))
    options = list(dict.fromkeys(c["readings"][last] for c in vmap["cells"]))
    cells = {(tuple(c["readings"][r] for r in rows_by), c["readings"][last]): c["verdict"] for c in vmap["cells"]}
    keys = list(dict.fromkeys(k for k, _ in cells))
    header = [*rows_by, *(f"{p.split(' / ')[0]} {o.split('_')[0]}" for p in pairs for o in options)]
    rows = [[*k, *(f"{cells[(k, o)][p]['cost_ratio']:.3f} ({cells[(k, o)][p]['p_cheaper']:.3f})" for p in pairs for o in options)]
            for k in keys]
    base = all_pairs[0].split(" / ")[1]
    twins = "; ".join(f"{', '.join(t.split(' / ')[0] for t in ts)} as {q.split(' / ')[0]} within {MAP_SAME}" for q, ts in same.items())
    title = (f"{HEADLINE}: cost per token over {base}'s, median paired ratio (P(Lite cheaper)), {vmap['trials_per_cell']:,} "
             f"paired trials a cell, seed {SEED}; columns: design and {last} reading" + (f"; {twins}" if twins else ""))
    return "\n".join(["```", *textwrap.wrap(title, 100), "", *_table(header, rows), "```"])


def render_beyond(docs: dict[str, dict]) -> str:
    """README's table of the studies away from saturation (:data:`BEYOND`): per pair the
    median paired ratio of the cost its verdict is judged on, with its 5–95 %, and P(B cheaper)."""
    from mcengine.columns import VERDICT_COSTS, verdict_cost

    rows = []
    for study, pairs in BEYOND:
        for pair in pairs:
            metric = verdict_cost(docs[study]["paired_all"][pair])
            m = docs[study]["paired_all"][pair][metric]
            rows.append(f"| `{study}` | {pair} | cost {dict(VERDICT_COSTS)[metric]} | {_ratio(m['ratio'])} | {m['p_b_below_a']:.3f} |")
    header = ["| study | B / A | judged on | median ratio [5% – 95%] | P(B cheaper) |", "| --- | --- | --- | --- | --- |"]
    return "\n".join(header + rows)


def run_generation(workload: str, designs: tuple[str, ...], overrides, instance_gpus: tuple[int, int] | None) -> dict:
    """One row of :data:`GENERATIONS`: the paired run of its designs, condensed to each Lite
    design's median paired cost ratio over the parent (with 5–95 %), P(Lite cheaper), and
    every design's median cluster output tokens/s per H100-equivalent of silicon."""
    import mcengine.api as mc
    from mcengine.scenario import load_scenario

    sets = overrides()

    def scenario(i: int, name: str):
        s = load_scenario(name, sets)
        if instance_gpus is None:
            return s
        g = instance_gpus[min(i, 1)]
        return load_scenario(name, (*sets, f"cluster.instance_gpus={g}", f"cluster.instances={s.total_gpus // g}"))

    scenarios = [scenario(i, name) for i, name in enumerate(designs)]
    doc = mc.run(scenarios, trials=GENERATIONS_TRIALS, seed=SEED, keep_trials=False, figures=False).summary()
    parent = designs[0]

    def per_h100e(s) -> float:
        return doc["scenarios"][s.name]["tokens_per_s"]["p50"] / (s.total_gpus * s.gpu.h100_equivalents.value)

    row = {"workload": workload, "parent": parent, "trials": doc["trials"], "seed": doc["seed"], "set": list(sets),
           "instance_gpus": [s.cluster.instance_gpus for s in scenarios], "parent_tokens_per_s_per_h100e": per_h100e(scenarios[0]),
           "designs": {}}
    for kind, s in zip(("electrical", "optical"), scenarios[1:]):
        cost = doc["paired_all"][f"{s.name} / {parent}"]["cost_per_mtok_usd"]
        row["designs"][kind] = {"scenario": s.name, "ratio": {q: cost["ratio"][q] for q in ("p05", "p50", "p95")},
                                "p_cheaper": cost["p_b_below_a"], "tokens_per_s_per_h100e": per_h100e(s)}
    return row


def render_generations(rows: list[dict]) -> str:
    """README's verdict per generation: per row the Lite designs' median paired cost ratio
    over their parent [5–95 %] and P(Lite cheaper), and the tokens/s per H100-equivalent
    of parent, electrical and optical Lite."""
    def cell(d: dict) -> str:
        return f"{_ratio(d['ratio'])} ({d['p_cheaper']:.3f})"

    header = ["| parent | workload | GPUs per instance (parent / Lite) | Lite electrical (P cheaper) | Lite optical (P cheaper) "
              "| tokens/s per H100-eq. (parent / electrical / optical) |", "| --- | --- | --- | --- | --- | --- |"]
    body = [f"| {r['parent']} | {r['workload']} | {r['instance_gpus'][0]} / {r['instance_gpus'][1]} | {cell(r['designs']['electrical'])} | {cell(r['designs']['optical'])} "
            f"| {r['parent_tokens_per_s_per_h100e']:,.0f} / {r['designs']['electrical']['tokens_per_s_per_h100e']:,.0f} / "
            f"{r['designs']['optical']['tokens_per_s_per_h100e']:,.0f} |" for r in rows]
    return "\n".join(header + body)


def generations_summary() -> list[dict]:
    """The committed verdict per generation."""
    return json.loads(GENERATIONS_FILE.read_text(encoding="utf-8"))


def write_generations() -> None:
    """Run every row of :data:`GENERATIONS` and write them to :data:`GENERATIONS_FILE` (atomically)."""
    from mcengine.io import write_atomic

    rows = [run_generation(*spec) for spec in GENERATIONS]
    write_atomic(GENERATIONS_FILE, json.dumps(rows, indent=1, sort_keys=True) + "\n")


def beyond_summaries() -> dict[str, dict]:
    return {study: summary(study) for study, *_ in BEYOND}


def map_summary() -> dict:
    """The committed verdict map of the headline study."""
    return json.loads(MAP_FILE.read_text(encoding="utf-8"))


def run_map() -> dict:
    """The headline study's verdict map at :data:`MAP_TRIALS` paired trials a cell."""
    import mcengine.api as mc

    return mc.run([HEADLINE], trials=MAP_TRIALS, seed=SEED, verdict_map=MAP_TRIALS, keep_trials=False, figures=False).summary()["verdict_map"]


def render_verdict(doc: dict) -> str:
    """README's headline of a ``run`` summary document: the cost per token per scenario
    (the first row of :data:`SCENARIO_ROWS`) and the paired table."""
    lines = [_title(doc), ""] + _scenario_table(doc, SCENARIO_ROWS[:1]) + [""] + _paired_table(doc, [])
    return "\n".join(["```", *lines, "```"])


def _scenario_table(doc: dict, metrics: tuple, more: list[list[str]] = ()) -> list[str]:
    """One column per scenario, one row per metric of ``metrics`` the scenarios all have,
    then the rows ``more``."""
    sides = list(doc["scenarios"].values())
    rows = [[label, *(fmt(s[key]) for s in sides)] for key, label, fmt in metrics if all(key in s for s in sides)]
    return _table(["metric (median [5% – 95%])", *doc["scenarios"]], rows + list(more))


def _title(doc: dict) -> str:
    return f"{doc['scenario']}: {doc['trials']:,} paired trials, seed {doc['seed']}"


def _paired_table(doc: dict, classes: list[str]) -> list[str]:
    """Paired with the baseline: the median and 5–95 % of the cost ratio over the trials
    in which both serve, its median at cost, P(B cheaper per token) and P(B less
    available); for a mix, each request class's cost ratio served alone."""
    paired = []
    for pair, metrics in doc["paired_all"].items():
        cost, avail = metrics["cost_per_mtok_usd"], metrics["availability"]
        at_cost = metrics.get("cost_per_mtok_at_cost_usd")
        paired.append([pair, _ratio(cost["ratio"]), f"{at_cost['ratio']['p50']:.3f}" if at_cost else "",
                       f"{cost['p_b_below_a']:.3f}", f"{avail['p_b_below_a']:.3f}"])
        for c in classes:
            alone = metrics[MIX_COST.format(c)]
            paired.append([f"  {c} alone", _ratio(alone["ratio"]), "", f"{alone['p_b_below_a']:.3f}", ""])
    return _table([f"paired with {doc['baseline']}", "cost/Mtok ratio", "at cost", "P(cheaper per token)",
                   "P(less available)"], paired)


def markers(study: str, kind: str = "study") -> tuple[str, str]:
    return f"<!-- {kind}:{study}:begin -->", f"<!-- {kind}:{study}:end -->"


def block(text: str, study: str, kind: str = "study") -> str:
    """A page's current block of ``study`` (between its markers, markers excluded)."""
    begin, end = markers(study, kind)
    return text[text.index(begin) + len(begin):text.index(end)].strip("\n")


def summary(study: str) -> dict:
    """The committed summary of ``study``'s run."""
    return json.loads((HERE / study / "summary.json").read_text(encoding="utf-8"))


def _replace(text: str, study: str, kind: str, rendered: str) -> str:
    begin, end = markers(study, kind)
    start, stop = text.index(begin) + len(begin), text.index(end)
    return text[:start] + "\n" + rendered + "\n" + text[stop:]


def stale(docs: dict[str, dict], vmap: dict | None = None) -> list[str]:
    """The blocks of README.md and docs/case-study.md that differ from the rendering of
    ``docs`` (and README's verdict map from ``vmap``, the committed one by default)."""
    page, readme = PAGE.read_text(encoding="utf-8"), README.read_text(encoding="utf-8")
    out = [f"docs/case-study.md {s}" for s in STUDIES if block(page, s) != render_block(docs[s])]
    out += [f"README.md {HEADLINE}"] if block(readme, HEADLINE, "verdict") != render_verdict(docs[HEADLINE]) else []
    out += [f"README.md {HEADLINE} verdict map"] if block(readme, HEADLINE, "verdict-map") != render_map(vmap or map_summary()) else []
    out += ["README.md beyond saturation"] if block(readme, "beyond", "studies") != render_beyond(beyond_summaries()) else []
    return out + (["README.md generations"] if block(readme, "generations", "verdict") != render_generations(generations_summary()) else [])


def write_tables(docs: dict[str, dict]) -> None:
    """Replace each study's block of docs/case-study.md by the rendering of its document,
    and README.md's headline by :func:`render_verdict` of the case study (atomically)."""
    from mcengine.io import write_atomic

    text = PAGE.read_text(encoding="utf-8")
    for study, doc in docs.items():
        text = _replace(text, study, "study", render_block(doc))
    write_atomic(PAGE, text)
    text = _replace(README.read_text(encoding="utf-8"), HEADLINE, "verdict", render_verdict(docs[HEADLINE]))
    text = _replace(text, HEADLINE, "verdict-map", render_map(map_summary()))
    text = _replace(text, "beyond", "studies", render_beyond(beyond_summaries()))
    write_atomic(README, _replace(text, "generations", "verdict", render_generations(generations_summary())))


#: The paper table's header starts so (its columns follow the study's rows).
PAPER_HEADER = "| claim | paper's figure |"


def write_paper_table() -> None:
    """Replace docs/paper.md's table (header, rule and rows) by the rows of
    docs/paper/summary.json (atomically)."""
    from mcengine.io import write_atomic
    from mcengine.report.paper import claim_rows, table_header

    doc = json.loads((ROOT / "docs" / "paper" / "summary.json").read_text(encoding="utf-8"))
    lines = PAPER_PAGE.read_text(encoding="utf-8").split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(PAPER_HEADER))
    end = start
    while lines[end].startswith("|"):
        end += 1
    rows = claim_rows(doc)
    header = table_header(rows)
    body = ["| " + " | ".join(str(v) for v in row.values()) + " |" for row in rows]
    write_atomic(PAPER_PAGE, "\n".join(lines[:start] + [header, "|" + " --- |" * (header.count(" | ") + 1)] + body + lines[end:]))


def write_map() -> None:
    """Run the headline's verdict map and write it to :data:`MAP_FILE` (atomically)."""
    from mcengine.io import write_atomic

    write_atomic(MAP_FILE, json.dumps(run_map(), indent=1, sort_keys=True) + "\n")


def run(study: str, here: Path = HERE) -> dict:
    """Run the shipped ``study`` into the folder of its name under ``here`` (replacing the
    previous run's files), from the checkout with that folder relative to it: its
    provenance records ``mcengine run STUDY --seed 0 --out docs/.../STUDY --force``, the
    command of the call's arguments, and no path of the machine that regenerated it."""
    import contextlib

    import mcengine.api as mc

    with contextlib.chdir(ROOT):
        return mc.run([study], seed=SEED, out=(here / study).relative_to(ROOT), force=True, keep_trials=False).summary()


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        differ = stale({s: summary(s) for s in STUDIES})
        print(f"{differ} differ from docs/case-study/: run this script" if differ
              else "the study tables match docs/case-study/")
        return 1 if differ else 0
    sys.path.insert(0, str(ROOT))  # this checkout's mcengine
    if argv == ["--paper"]:
        write_paper_table()
        print("wrote docs/paper.md's table")
        return 0
    if argv == ["--map"]:
        write_map()
    elif argv == ["--beyond"]:
        for study, *_ in BEYOND:
            run(study)
    elif argv == ["--generations"]:
        write_generations()
    elif argv:
        print(__doc__)
        return 2
    else:
        for study in (*STUDIES, *(study for study, _ in BEYOND)):
            run(study)
        write_map()
        write_generations()
    write_tables({study: summary(study) for study in STUDIES})
    print("wrote docs/case-study/, docs/case-study.md's tables and README.md's headline and verdict map")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
