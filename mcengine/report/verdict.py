"""The verdict block: the answer of a comparison in a few lines per design.

For each design B paired with the baseline A (docs/interface.md#json-summaries, the
``"paired_all"`` of ``run``/``compare``) it restates numbers the run already has, and
adds nothing to the model:

* the median paired cost ratio B/A with its 90% interval (p05–p95), P(B cheaper)
  (P(B < A)) and, where some trial ties, P(B = A), of the cost the column registry
  judges the pair on (:data:`mcengine.columns.VERDICT_COSTS`): per token served by a
  fleet sized for the demand when a demand is set (docs/load.md), per trained token for
  a pair of training jobs (docs/training.md), whose clusters may serve no token at all,
  else per output token;
* both designs' availability as downtime, minutes a year at the median (docs/model.md#units:
  a year of 8,766 hours);
* the drivers: a quick sensitivity over the run's own paired trials, the Spearman rank
  correlation of the ratio with each uncertain input B draws (inputs that do not vary
  are left out), when the per-trial table is at hand; labelled as such;
* the nearest flip: the nearest world the paper study found for that pair (``mcengine
  paper``, docs/paper/summary.json, ``"verdict"``: the smallest move of the inputs, in
  shares of their plausible ranges, under which B is no dearer), when it is known.
"""

from __future__ import annotations

import json

from ..columns import VERDICT_COSTS, verdict_cost
from ..results import scenario_rows
from .metrics import downtime_minutes

#: The cost metric of a plain comparison, and the one read as downtime.
COST, AVAILABILITY = "cost_per_mtok_usd", "availability"
#: What each verdict cost is a cost per, as the first line says it.
PER = dict(VERDICT_COSTS)
#: Prefix of the per-trial table's input columns (the uncertain inputs drawn).
INPUT_PREFIX = "input."
#: B's input columns read at once for the drivers (8 MB each at 10⁶ trials; measured in
#: docs/performance.md#memory: 4 holds as little as one at a time, in a quarter of the scans).
DRIVER_COLUMNS = 4
#: Inputs named among the drivers, largest |rank correlation| first.
TOP_DRIVERS = 3
#: Changed inputs of the nearest world named in its line, largest move first.
TOP_MOVES = 2
#: P(B cheaper) from which the first line says "cheaper" (below 1 − this: "dearer").
CLEAR = 0.95


def stored_paper() -> dict | None:
    """The paper study's stored summary (docs/paper/summary.json, written by ``mcengine
    paper --out docs/paper``; an installed package carries it as
    ``configs/paper/summary.json``, pyproject.toml), or None where neither is."""
    from ..scenario.files import configs_dir

    for path in (configs_dir() / "paper" / "summary.json", configs_dir().parent / "docs" / "paper" / "summary.json"):
        if path.is_file():
            return json.loads(path.read_text())
    return None


def _drivers(table, a: str, b: str, cost: str = COST) -> dict:
    """The quick sensitivity of the pair's ratio of ``cost``: rank correlation with each
    input of B. ``table``: the per-trial DataFrame or the :class:`~mcengine.results.TrialsFile`
    a run wrote, read a few columns at a time (the pair's costs, then B's inputs
    :data:`DRIVER_COLUMNS` at a time), so its memory is a few columns of the trials, never
    the whole table, in a few passes over it; each correlation is that of the two columns
    alone, as in one frame of them all."""
    if table is None or "scenario" not in table.columns:
        return {"source": "none: the per-trial table was not kept (run --keep-trials, or the API)", "inputs": []}
    if cost not in table.columns:
        return {"source": f"none: the per-trial table has no {cost} column", "inputs": []}
    import pandas as pd  # (imported here: a run that keeps no trials needs no pandas)

    cost_a = scenario_rows(table, a, ["trial", cost]).set_index("trial")[cost]
    cost_b = scenario_rows(table, b, ["trial", cost]).set_index("trial")[cost]
    ratio = (cost_b / cost_a).rename("ratio")
    trials = int((ratio.abs() < float("inf")).sum())  # the paired trials with a finite ratio
    rho = {}
    inputs = [c for c in table.columns if c.startswith(INPUT_PREFIX)]
    for at in range(0, len(inputs), DRIVER_COLUMNS):
        columns = scenario_rows(table, b, ["trial", *inputs[at:at + DRIVER_COLUMNS]]).set_index("trial")
        for name in columns.columns:
            column = columns[[name]]
            if column[name].nunique() <= 1:  # an input B does not vary
                continue
            frame = column.join(ratio)
            frame = frame[frame["ratio"].abs() < float("inf")]
            rho[name] = frame.rank().corr()["ratio"][name]
        del columns  # (freed before the next columns are read)
    rho = pd.Series(rho, dtype=float).dropna()
    top = rho.reindex(rho.abs().sort_values(ascending=False).index)[:TOP_DRIVERS]
    return {"source": f"quick sensitivity: Spearman rank correlation of the ratio with each input, over this run's {trials:,} paired trials",
            "inputs": [{"key": k[len(INPUT_PREFIX):], "rank_correlation": float(v)} for k, v in top.items()]}


def _nearest_flip(paper: dict | None, a: str, b: str) -> dict | None:
    """The paper's nearest world of the pair (a, b), in the order of its search, or None."""
    world = (paper or {}).get("verdict", {}).get("nearest_world", {})
    if sorted(world.get("scenarios", ())) != sorted((a, b)) or not world.get("worlds"):
        return None
    near = world["worlds"][0]
    moves = sorted(near["changed"], key=lambda c: -abs(c["move"]))
    return {"source": "stored paper search (mcengine paper, docs/paper/summary.json)", "distance": near["distance"],
            "p_holds": near["p_holds"], "changed": [{k: c[k] for k in ("key", "label", "shipped", "value", "move")} for c in moves]}


def _number(x) -> str:
    return f"{x:.3g}" if isinstance(x, (int, float)) and not isinstance(x, bool) else str(x)


def _lines(entry: dict) -> list[str]:
    """The block's four to six lines for one pair."""
    a, b, r, p = entry["a"], entry["b"], entry["cost_ratio"], entry["p_cheaper"]
    word = "cheaper" if p >= CLEAR else "dearer" if p <= 1.0 - CLEAR else "no clear winner"
    lines = [f"{b} vs {a}: {word} {PER[entry.get('cost', COST)]}",
             f"  cost B/A {r['p50']:.3f} [{r['p05']:.3f} – {r['p95']:.3f}]; P(B cheaper) {p:.3f}"
             + (f", P(tie) {entry['p_tie']:.3f}" if entry.get("p_tie") else "")]
    if "downtime_minutes_per_year" in entry:
        d = entry["downtime_minutes_per_year"]
        lines.append(f"  downtime: {a} {d['a']:,.0f}, {b} {d['b']:,.0f} minutes a year")
    drivers = entry["drivers"]
    if drivers["inputs"]:
        named = ", ".join(f"{i['key']} {i['rank_correlation']:+.2f}" for i in drivers["inputs"])
        lines.append(f"  drivers ({drivers['source'].split(':')[0]}): {named}")
    else:
        lines.append(f"  drivers: {drivers['source']}")
    flip = entry.get("nearest_flip")
    if flip:
        moves = "; ".join(f"{c['label']} {_number(c['shipped'])} → {_number(c['value'])}" for c in flip["changed"][:TOP_MOVES])
        more = len(flip["changed"]) - TOP_MOVES
        lines.append(f"  nearest flip (stored paper search): {moves}" + (f" (+{more} smaller moves)" if more > 0 else "")
                     + f"; distance {flip['distance']:.2f}")
    return lines


def verdict(doc: dict, table=None, paper: dict | None = None) -> dict:
    """``{"B / A": entry}`` for each design paired with the baseline in ``doc`` (a
    ``run``/``compare`` document): module text; ``table`` the per-trial table (for the
    drivers), ``paper`` the paper study's summary (for the nearest flip). Each entry holds
    its numbers and ``"lines"``, the text the block prints. Empty without pairs."""
    out = {}
    base = doc.get("baseline")
    for pair, metrics in doc.get("paired_all", {}).items():
        cost = verdict_cost(metrics)
        if cost is None:
            continue
        b = pair.split(" / ")[0]
        m = metrics[cost]
        entry: dict = {"a": base, "b": b, "cost": cost, "cost_ratio": {q: m["ratio"][q] for q in ("p50", "p05", "p95")},
                       "p_cheaper": m["p_b_below_a"]}
        if "p_tie" in m:
            entry["p_tie"] = m["p_tie"]
        if all(AVAILABILITY in doc["scenarios"][n] for n in (base, b)):
            entry["downtime_minutes_per_year"] = {side: downtime_minutes(doc["scenarios"][n][AVAILABILITY]["p50"])
                                                  for side, n in (("a", base), ("b", b))}
        entry["drivers"] = _drivers(table, base, b, cost)
        flip = _nearest_flip(paper, base, b)
        if flip is not None:
            entry["nearest_flip"] = flip
        entry["lines"] = _lines(entry)
        out[pair] = entry
    return out


def render_verdict(doc: dict):
    """The verdict block of a document that has one (``"verdict"``), as rich text: a
    heading, then each pair's lines (wrapped at the console's width)."""
    from rich.text import Text

    block = doc.get("verdict") or {}
    text = Text("verdict: median [90% interval] of the paired ratio B/A (same trials, common random numbers); "
                "downtime at the median availability; drivers: rank correlation with the ratio\n", style="bold")
    for entry in block.values():
        text.append("\n".join(entry["lines"]) + "\n")
    return text

