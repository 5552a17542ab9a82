"""The examples of README.md and of every page under docs/ run: every fenced ``toml``,
``bash`` and ``python`` block, except one marked ``<!-- not run by tests: REASON -->`` on
the line before its fence (README's install commands, which CI runs as written: .ci/run).
Sample sizes are cut to a few dozen trials so the pages run in seconds; what is checked is
that each example works as a user would type it (exit 0, the scenario and study files
load), not its numbers."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIP = re.compile(r"<!-- not run by tests: .+ -->")
#: Trials for every command and API call of the README (numbers are not checked here).
SMALL_TRIALS = 32
#: Commands whose sample size the test cuts to SMALL_TRIALS (the rest have none, or a fixed one).
SAMPLED = {"run", "compare", "sweep", "sensitivity"}


#: The pages whose examples run: README.md and every page under docs/.
PAGES = ("README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")))


def readme_blocks(page: str = "README.md") -> list[tuple[int, str, str]]:
    """(line, language, text) of every fenced block of ``page`` with a language, not marked as skipped."""
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        fence = re.fullmatch(r"```(\w+)", lines[i])
        if fence is None:
            i += 1 if not lines[i].startswith("```") else _skip_fence(lines, i)
            continue
        end = lines.index("```", i + 1)
        if not (i > 0 and SKIP.fullmatch(lines[i - 1].strip())):
            blocks.append((i + 1, fence.group(1), "\n".join(lines[i + 1:end])))
        i = end + 1
    return blocks


def _skip_fence(lines: list[str], i: int) -> int:
    """Lines to skip past a block without a language (program output)."""
    return lines.index("```", i + 1) + 1 - i


def _ids(kind: str) -> list:
    return [pytest.param(text, id=f"{page}:{line}") for page in PAGES for line, lang, text in readme_blocks(page) if lang == kind]


#: The two commands that set everything up on a fresh machine (CI runs them as written: .ci/run).
SETUP = ("pip install . && mcengine run", "pip install '.[test]' && pytest")
#: The README is the landing page: the answer, the two commands, a tour and links.
README_MAX_LINES = 200


def test_the_readme_is_a_landing_page():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; reference material belongs under docs/"
    skipped = ["\n".join(lines[i + 2:lines.index("```", i + 2)]) for i, line in enumerate(lines) if SKIP.fullmatch(line.strip())]
    assert skipped == list(SETUP)


def test_the_readme_has_examples_of_each_kind():
    kinds = [lang for _, lang, _ in readme_blocks()]
    assert {"toml", "bash", "python"} <= set(kinds), kinds


def small(args: list[str]) -> list[str]:
    """``args`` with the sample size cut to SMALL_TRIALS (added when the command has none)."""
    if args[0] not in SAMPLED:
        return args
    out = list(args)
    if "--trials" in out:
        out[out.index("--trials") + 1] = str(SMALL_TRIALS)
    else:
        out += ["--trials", str(SMALL_TRIALS)]
    return out


def commands(text: str) -> list[list[str]]:
    """The ``mcengine`` command lines of a bash block (continuation lines joined)."""
    joined = text.replace("\\\n", " ")
    lines = [shlex.split(line) for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert all(words[0] == "mcengine" for words in lines), f"a page's bash block runs something else: {lines}"
    return [words[1:] for words in lines]


@pytest.mark.parametrize("text", _ids("bash"))
def test_readme_commands_run(text, cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for args in commands(text):
        r = cli(*small(args))
        assert r.code == 0, (args, r.err[-2000:])


@pytest.mark.parametrize("text", _ids("toml"))
def test_readme_toml_loads(text, tmp_path):
    """A scenario block loads and validates as saved from the README (`mcengine check`
    on the file); a study block loads with every scenario it lists."""
    import tomllib

    from mcengine import api
    from mcengine.scenario.study import load_study

    raw = tomllib.loads(text)
    path = tmp_path / f"{raw['name']}.toml"
    path.write_text(text, encoding="utf-8")
    if "scenarios" in raw:
        study = load_study(str(path))
        assert [s.name for s in api.resolve_scenarios([str(path)])[1]] == raw["scenarios"] and study["trials"] == raw["trials"]
    else:
        assert api.check(str(path)).name == raw["name"]


@pytest.mark.parametrize("page", [p for p in PAGES if any(lang == "python" for _, lang, _ in readme_blocks(p))])
def test_readme_python_runs(page, tmp_path, monkeypatch):
    """A page's Python API blocks, in order, in one namespace (as in one notebook)."""
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for _, lang, text in readme_blocks(page):
        if lang == "python":
            code = re.sub(r"trials=[\d_]+", f"trials={SMALL_TRIALS}", text)
            exec(compile(code, page, "exec"), namespace)  # noqa: S102 - the page's own code
    assert (tmp_path / "trials.parquet").exists()
