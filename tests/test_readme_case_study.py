"""The study tables of docs/case-study.md and README.md's headline verdict are the current
code's output: each block = its committed summary's rendering (fast), each committed
summary = a fresh run of the shipped study (slow)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.docs_scripts import drifted

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("make_case_study", ROOT / "docs" / "case-study" / "make_case_study.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CS = _script()


@pytest.mark.parametrize("study", CS.STUDIES)
def test_page_block_is_the_committed_runs_rendering(study):
    assert CS.block(CS.PAGE.read_text(encoding="utf-8"), study) == CS.render_block(CS.summary(study))


def test_readme_headline_is_the_committed_case_studys_rendering():
    text = CS.README.read_text(encoding="utf-8")
    assert CS.block(text, CS.HEADLINE, "verdict") == CS.render_verdict(CS.summary(CS.HEADLINE))
    # the headline is the first screen: within the README's first 40 lines
    assert text.index(CS.markers(CS.HEADLINE, "verdict")[1]) < len("\n".join(text.splitlines()[:40]))
    assert not CS.stale({s: CS.summary(s) for s in CS.STUDIES})


def _sci(x: float) -> str:
    """A small share as the page writes it: 3.5e-5."""
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def case_study_figures(doc: dict) -> list[str]:
    """The phrases of docs/case-study.md's "How to read it" that quote the case study's
    run, rendered from its summary document."""
    s, paired = doc["scenarios"], doc["paired_all"]
    down = {n: 1 - s[n]["instance_availability"]["mean"] for n in s}
    return [
        f"distribution over {doc['trials']:,} possible worlds",
        f"four Lite packages cost ${4 * s['lite-h100']['gpu_cost_usd']['p50']:,.0f} against ${s['h100']['gpu_cost_usd']['p50']:,.0f} for one H100",
        f"({paired['lite-h100 / h100']['cost_per_mtok_at_cost_usd']['ratio']['p50']:.2f}× and "
        f"{paired['lite-h100-2x / h100']['cost_per_mtok_at_cost_usd']['ratio']['p50']:.2f}×)",
        f"(unavailability {_sci(down['lite-h100-2x-fastswap'])} vs {_sci(down['h100'])}; {_sci(down['lite-h100-2x'])} without them)",
        f"interrupted {s['lite-h100']['interruptions_per_year']['mean']:.0f} times a year against {s['h100']['interruptions_per_year']['mean']:.0f}",
    ]


def test_how_to_read_it_quotes_the_committed_run():
    """The figures the case study's prose quotes are its committed run's (edit the page
    when make_case_study.py changes them)."""
    text = " ".join(CS.PAGE.read_text(encoding="utf-8").split())
    missing = [phrase for phrase in case_study_figures(CS.summary("case-study")) if phrase not in text]
    assert not missing, f"docs/case-study.md no longer quotes its run: {missing}"


def test_the_prose_check_can_fail():
    doc = CS.summary("case-study")
    doc["scenarios"]["h100"]["interruptions_per_year"]["mean"] += 1
    text = " ".join(CS.PAGE.read_text(encoding="utf-8").split())
    assert [p for p in case_study_figures(doc) if p not in text] == [case_study_figures(doc)[-1]]


def test_the_check_can_fail():
    docs = {s: CS.summary(s) for s in CS.STUDIES}
    name = next(iter(docs["case-study"]["scenarios"]))
    docs["case-study"]["scenarios"][name]["cost_per_mtok_usd"]["p50"] += 0.01
    assert CS.stale(docs) == ["docs/case-study.md case-study", "README.md case-study"]


def test_a_mix_block_shows_each_class():
    doc = CS.summary("mix-reasoning")
    block = CS.render_block(doc)
    for cls in doc["scenarios"]["h100"]["mix"]:
        assert f"instances serving {cls}" in block and f"  {cls} alone" in block


@pytest.mark.slow
@pytest.mark.parametrize("study", (*CS.STUDIES, *(b[0] for b in CS.BEYOND)))
def test_committed_study_is_the_current_codes(study):
    import mcengine.api as mc

    committed = CS.summary(study)
    doc = mc.run([study], trials=committed["trials"], seed=committed["seed"], keep_trials=False, figures=False).summary()
    assert not (keys := drifted(committed, doc)), f"{study}: {keys} drifted: run python docs/case-study/make_case_study.py"


@pytest.mark.slow
def test_committed_verdict_map_is_the_current_codes():
    fresh = json.loads(json.dumps(CS.run_map()))
    assert fresh == CS.map_summary(), "docs/case-study/verdict_map.json drifted: run python docs/case-study/make_case_study.py --map"


def test_readme_generations_block_is_the_committed_rendering():
    """README's verdict per generation is docs/case-study/generations.json rendered, and
    that file holds one row per row of GENERATIONS (parent, workload, designs)."""
    rows = CS.generations_summary()
    assert CS.block(CS.README.read_text(encoding="utf-8"), "generations", "verdict") == CS.render_generations(rows)
    assert [(r["workload"], r["parent"], r["designs"]["electrical"]["scenario"], r["designs"]["optical"]["scenario"]) for r in rows] == \
        [(w, d[0], d[1], d[2]) for w, d, *_ in CS.GENERATIONS]
    assert all(r["trials"] == CS.GENERATIONS_TRIALS and r["seed"] == CS.SEED for r in rows)


def test_the_generations_check_can_fail():
    rows = CS.generations_summary()
    rows[0]["designs"]["optical"]["p_cheaper"] += 0.001
    assert CS.render_generations(rows) != CS.render_generations(CS.generations_summary())


@pytest.mark.slow
def test_committed_generation_row_is_the_current_codes():
    """One row of the verdict per generation (B200 on DeepSeek-V3, 8 / 32 per instance)
    rerun at its committed trials: the committed file is the current code's."""
    i = 4
    fresh = json.loads(json.dumps(CS.run_generation(*CS.GENERATIONS[i])))
    assert fresh == CS.generations_summary()[i], "docs/case-study/generations.json drifted: run python docs/case-study/make_case_study.py --generations"


def test_a_regenerated_study_records_its_command_without_a_path_of_the_machine(monkeypatch, tmp_path):
    """CS.run (and docs/facility/make_facility.py through it) runs a study from the checkout
    with --out relative to it, so the summary's provenance records the command of the call's
    own arguments with docs/case-study/STUDY, not this machine's path to it: the run itself
    is replaced by one that records the command and writes nothing."""
    import inspect
    from types import SimpleNamespace

    import mcengine.api as mc
    from mcengine.provenance import command_line

    seen = []

    def recorded(*args, **kwargs):
        seen.append((Path.cwd(), command_line()))
        return SimpleNamespace(summary=dict)

    recorded.__signature__ = inspect.signature(mc.run)
    monkeypatch.setattr(mc, "run", mc._records("run")(recorded))
    monkeypatch.chdir(tmp_path)
    CS.run("case-study")
    assert seen == [(ROOT, ["mcengine", "run", "case-study", "--seed", str(CS.SEED), "--out", "docs/case-study/case-study", "--force"])]
    assert Path.cwd() == tmp_path
