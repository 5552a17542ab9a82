"""Discoverable (issue 50, item 8): the API at the top level, imported lazily; overrides
as a mapping; `run` names the files `--out` writes; the notebook under examples/."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import mcengine
from mcengine import api
from tests.procs import env, python

ROOT = Path(__file__).resolve().parents[2]


def test_import_mcengine_is_light_and_exposes_the_api():
    code = ("import sys, mcengine; light = not any(m in sys.modules for m in ('numba', 'mcengine.api', 'pandas')); "
            "import mcengine.api as api; print(light, all(getattr(mcengine, n) is getattr(api, n) for n in mcengine.API))")
    got = subprocess.run(python("-c", code), capture_output=True, text=True, env=env(), timeout=120)
    assert got.stdout.split() == ["True", "True"], got.stderr
    assert {"run", "compare", "sweep", "tornado", "sobol", "yield_", "reliability", "roofline", "check"} <= set(mcengine.API)
    assert "run" in dir(mcengine)
    with pytest.raises(AttributeError):
        mcengine.nonsense  # noqa: B018


def test_overrides_as_a_mapping_equal_the_strings():
    mapping = {"fab.defect_density_per_cm2": {"dist": "lognormal", "median": 0.2, "sigma": 0.3}, "econ.gpu_markup": 1.5,
               "workload.serving": "continuous", "fab.defect_clustering": float("inf"), "B:econ.power_usd_per_kwh": 0.1}
    strings = ['fab.defect_density_per_cm2={dist = "lognormal", median = 0.2, sigma = 0.3}', "econ.gpu_markup=1.5",
               'workload.serving="continuous"', "fab.defect_clustering=inf", "B:econ.power_usd_per_kwh=0.1"]
    assert api.check("h100", dict(list(mapping.items())[:4])).to_dict() == api.check("h100", strings[:4]).to_dict()
    assert api.override_plan(["h100", "lite-h100"], mapping) == api.override_plan(["h100", "lite-h100"], strings)


def test_a_bad_mapping_value_names_it():
    from mcengine.errors import InputError

    with pytest.raises(InputError, match="object"):
        api.check("h100", {"econ.gpu_markup": object()})


def test_run_names_the_files_out_would_write(tmp_path):
    got = subprocess.run(python("-m", "mcengine", "run", "h100", "lite-h100", "--trials", "1024", "--quiet"),
                         capture_output=True, text=True, env=env(), timeout=600, cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    text = " ".join(got.stdout.split())
    assert ("--out DIR writes summary.json, table.csv, cost_per_mtok_cdf.png, availability.png, cost_breakdown.png, "
            "paired_ratio.png, h100.toml, lite-h100.toml (and trials.parquet with --keep-trials)") in text
    assert api.run_out_files(["h100"]) == ["summary.json", "table.csv", "cost_per_mtok_cdf.png", "availability.png",
                                           "cost_breakdown.png", "h100.toml"]


def test_the_notebook_is_an_example_that_imports_the_top_level():
    nb = json.loads((ROOT / "examples" / "api_tour.ipynb").read_text())
    assert "import mcengine as mc" in "".join(nb["cells"][1]["source"])
    assert not (ROOT / "tests" / "report" / "api_tour.ipynb").exists()
