"""Input hardening: NaN and undocumented inf refused, every numeric key bounded, safe
names, and load-time failures reported as bad input (exit 2) naming the file or key.

Each test here failed on the code before the hardening (dfdd3f3): NaN and inf passed,
unsafe names passed, and the load failures were exit 1 with a raw Python error.
"""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import fields

import pytest

from mcengine.errors import InputError
from mcengine.options import MAX_SAMPLE, positive
from mcengine.scenario import load_scenario
from mcengine.scenario.fields import spec_of
from mcengine.scenario.limits import MAX_TOTAL_GPUS
from mcengine.scenario.cards import ModelCard, model_names
from mcengine.scenario.files import configs_dir
from mcengine.scenario.load import load_study, shipped_names, study_names
from mcengine.scenario.schema import SECTIONS
from mcengine.scenario.sections.training import TrainingSection
from mcengine.scenario.sections.reliability import Component
from mcengine.scenario.sections.run import RunSection


def _bad(cli, *args, key, also=()):
    r = cli(*args)
    assert r.code == 2, (r.code, r.out, r.err)
    assert key in r.err, r.err
    for word in also:
        assert word in r.err, r.err
    assert "Traceback" not in r.err + r.out and r.out == ""
    return r


# --------------------------------------------------------------------------- 1. NaN / inf

@pytest.mark.parametrize(
    "override, key, words",
    [
        ("gpu.hbm_gb=nan", "gpu.hbm_gb", ["nan", "(0, 100000]"]),
        ("fab.defect_density_per_cm2=nan", "fab.defect_density_per_cm2", ["nan"]),
        ("cluster.instances=nan", "cluster.instances", ["nan", "integer"]),
        ('fab.defect_density_per_cm2={dist="lognormal", median=0.1, sigma=nan}', "fab.defect_density_per_cm2.sigma", ["nan"]),
        ('fab.defect_density_per_cm2={dist="lognormal", median=nan, sigma=0.3}', "fab.defect_density_per_cm2.median", ["nan"]),
        ('workload.compute_efficiency={dist="uniform", low=nan, high=0.5}', "workload.compute_efficiency.low", ["nan"]),
        ('workload.compute_efficiency={dist="normal", mean=0.5, sd=0.1, low=nan}', "workload.compute_efficiency.low", ["nan"]),
        ('fab.defect_density_per_cm2={dist="lognormal", median=0.1, sigma=inf}', "fab.defect_density_per_cm2", ["finite sigma"]),
        ('econ.pue={dist="uniform", low=1.1, high=inf}', "econ.pue", ["finite high"]),
        ('fab.defect_clustering={dist="uniform", low=1, high=inf}', "fab.defect_clustering", ["finite high"]),
        ("reliability.repair_hours=nan", "reliability.repair_hours", ["nan"]),
        ("reliability.repair_hours=inf", "reliability.repair_hours", ["finite duration"]),
        ('reliability.repair_hours={law="lognormal", median=nan, sigma=0.5}', "reliability.repair_hours.median", ["nan"]),
        ('reliability.repair_hours={law="lognormal", median=72, sigma=inf}', "reliability.repair_hours.sigma", ["(0, 5]"]),
        ('reliability.swap_hours={law="weibull", mean=1, shape=nan}', "reliability.swap_hours.shape", ["nan"]),
        ('reliability.swap_hours={law="exponential", mean={dist="uniform", low=0.1, high=nan}}', "reliability.swap_hours.mean.high", ["nan"]),
        ('reliability.repair_hours={law="mixture", parts=[{weight=nan, law="fixed", value=2}]}', "reliability.repair_hours.parts.0.weight", ["nan"]),
        ('reliability.repair_hours={law="mixture", parts=[{weight=1e308, law="fixed", value=2}, {weight=1e308, law="fixed", value=3}]}',
         "reliability.repair_hours.parts.0.weight", ["sum finite"]),
        ("reliability.components.die.afr=nan", "reliability.components.die.afr", ["nan"]),
        ("run.horizon_years=inf", "run.horizon_years", ["[0.000114077, 30]"]),
        ("fab.defect_clustering=-inf", "fab.defect_clustering", ['"inf"']),
    ],
)
def test_nan_and_undocumented_inf_are_refused(cli, override, key, words):
    _bad(cli, "check", "h100", "--set", override, key=key, also=words)


@pytest.mark.parametrize("override", ["fab.defect_clustering=inf", 'fab.defect_clustering="inf"', "reliability.repair_crews=inf",
                                      'reliability.repair_crews="inf"'])
def test_documented_inf_is_still_accepted(override):
    s = load_scenario("h100", [override])
    value = s.fab.defect_clustering.value if override.startswith("fab") else s.reliability.repair_crews
    assert math.isinf(value) and value > 0


def test_nan_defect_density_no_longer_hangs_the_fab_kernel():
    # before: the fab kernel looped for ever on a NaN density; now refused before any kernel
    cmd = [sys.executable, "-m", "mcengine.cli", "yield", "h100", "--wafers", "10", "--set", "fab.defect_density_per_cm2=nan"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "fab.defect_density_per_cm2" in r.stderr and "nan" in r.stderr


# --------------------------------------------------------------------------- 2. bounds


def _numeric_specs():
    """(dotted key, Spec) of every numeric key of the schema, from the field metadata."""
    out = []
    for table, cls, _special in SECTIONS:
        for f in fields(cls):
            spec = spec_of(f)
            if spec is not None and spec.kind in ("number", "integer", "law", "length"):
                out.append((f"{table}.{f.name}", spec))
    out += [(f"reliability.components.die.{f.name}", spec_of(f)) for f in fields(Component)
            if spec_of(f).kind in ("number", "integer", "law")]
    out += [(f"workload.model.{f.name}", spec_of(f)) for f in fields(ModelCard) if spec_of(f).kind == "integer"]
    out += [(f"workload.training.{f.name}", spec_of(f)) for f in fields(TrainingSection) if spec_of(f).kind in ("number", "integer")]
    return out


NUMERIC = _numeric_specs()


def test_the_schema_has_numeric_keys_of_every_section():
    tables = {key.split(".")[0] for key, _ in NUMERIC}
    assert tables == {t for t, _c, _s in SECTIONS}
    assert len(NUMERIC) > 60


@pytest.mark.parametrize("key, spec", NUMERIC, ids=[k for k, _ in NUMERIC])
def test_every_numeric_key_has_finite_bounds_and_says_why(key, spec):
    assert spec.lo is not None and spec.hi is not None, key
    assert math.isfinite(spec.lo) and math.isfinite(spec.hi) and spec.lo < spec.hi, key
    assert spec.why and spec.why in spec.allowed(), key


@pytest.mark.parametrize(
    "overrides, key, words",
    [
        (["cluster.instances=1000000"], "cluster.instances", [f"{MAX_TOTAL_GPUS:,}"]),
        (["cluster.instances=2000000"], "cluster.instances", ["[1, 1048576]"]),
        (["cluster.instance_gpus=1000000"], "cluster.instance_gpus", ["[1, 65536]"]),
        (["fab.die_width_mm=0.001", "fab.die_height_mm=0.001"], "fab.die_width_mm", ["[1, 450]", "160,000 dies"]),
        (["fab.defect_density_per_cm2=1e6"], "fab.defect_density_per_cm2", ["[0, 100]"]),
        (["reliability.components.die.afr=1e12"], "reliability.components.die.afr", ["[0, 8766]"]),
        (["reliability.components.die.afr=8000"], "reliability.components.die.afr", ["per lifetime", "1e+07"]),
        (["reliability.repair_crews=10000000"], "reliability.repair_crews", ["2097152"]),
        (["reliability.repair_hours=1e12"], "reliability.repair_hours.value", ["1000000000"]),
        (["econ.gpu_markup=1e300"], "econ.gpu_markup", ["(0, 1000]"]),
        (['fab.defect_density_per_cm2={dist="lognormal", median=0.1, sigma=3}'], "fab.defect_density_per_cm2", ["this lognormal can take"]),
        (["workload.tpot_slo_ms=1e300"], "workload.tpot_slo_ms", ["1000000"]),
    ],
)
def test_values_that_would_make_a_run_unbounded_are_refused(cli, overrides, key, words):
    args = [a for o in overrides for a in ("--set", o)]
    _bad(cli, "check", "h100", *args, key=key, also=words)


def test_shipped_scenarios_studies_and_model_cards_stay_valid():
    for name in shipped_names():
        load_scenario(name)
    for study in study_names():
        for ref in load_study(study)["scenarios"]:
            load_scenario(ref)
    for card in model_names():
        load_scenario("h100", [f"workload.model={card}", "cluster.instance_gpus=64"])


# --------------------------------------------------------------------------- 3. sample sizes


def test_sample_size_is_bounded_like_run_trials(cli):
    assert positive("--trials", MAX_SAMPLE) == MAX_SAMPLE
    with pytest.raises(InputError, match="--trials"):
        positive("--trials", 2**40)
    with pytest.raises(InputError, match="--trials"):
        positive("--trials", MAX_SAMPLE + 1)
    run_trials = spec_of(next(f for f in fields(RunSection) if f.name == "trials"))
    assert run_trials.hi == MAX_SAMPLE
    _bad(cli, "yield", "h100", "--wafers", str(2**40), key="--wafers", also=["1,000,000,000"])
    _bad(cli, "reliability", "h100", "--lifetimes", str(2**40), key="--lifetimes")


# --------------------------------------------------------------------------- 4. names


@pytest.mark.parametrize("name", ["/abs/path/owned", "../../x", "a/b", "x\x00y", "", ".hidden", "-rf", "a" * 65, "sp ace"])
def test_unsafe_scenario_names_are_refused(cli, tmp_path, name):
    import json

    path = tmp_path / "s.toml"
    path.write_text(f'extends = "h100"\nname = {json.dumps(name)}\n', encoding="utf-8")
    _bad(cli, "check", str(path), key="name", also=["A-Z a-z 0-9"])
    with pytest.raises(InputError, match="name"):
        load_scenario("h100", [f"name={json.dumps(name)}"])


def test_shipped_and_ordinary_names_pass():
    for name in shipped_names():
        assert load_scenario(name).name == name
    assert load_scenario("h100", ['name="lite_v2.1-a"']).name == "lite_v2.1-a"


# --------------------------------------------------------------------------- 5. load errors


def test_non_utf8_scenario_file(cli, tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes('extends = "h100"\n# caf\xe9\n'.encode("latin-1"))
    _bad(cli, "check", str(path), key=str(path), also=["not UTF-8", "0xe9"])


def test_deeply_nested_toml(cli, tmp_path):
    path = tmp_path / "deep.toml"
    path.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    _bad(cli, "check", str(path), key=str(path), also=["nested too deeply"])
    path.write_text("a = " + "[" * 100 + "]" * 100 + "\n")  # parses, but deeper than any scenario
    _bad(cli, "check", str(path), key=str(path), also=["nested too deeply"])


def test_deeply_nested_set_value(cli):
    _bad(cli, "check", "h100", "--set", "fab.scribe_mm=" + "[" * 5000 + "]" * 5000, key="--set fab.scribe_mm", also=["nested too deeply"])


def test_directory_as_scenario(cli, tmp_path):
    (tmp_path / "d.toml").mkdir()
    _bad(cli, "check", str(tmp_path / "d.toml"), key="scenario", also=["is a directory"])
    _bad(cli, "check", str(tmp_path), key="scenario", also=["is a directory"])


@pytest.mark.parametrize("literal", ["[1,", '{dist="lognormal", median=0.1', '"unterminated', "1.2.3", 'say "hi"'])
def test_malformed_set_literal_says_so_and_how_to_quote(cli, literal):
    r = _bad(cli, "check", "h100", "--set", f"gpu.name={literal}", key="--set gpu.name", also=["malformed TOML", "quoted string"])
    assert "column 5" not in r.err or literal.startswith("[1")  # columns are those of the user's text


def test_bare_words_are_still_strings():
    s = load_scenario("h100", ["reliability.replace_unit=host", "workload.model=llama-3-8b", "gpu.name=my gpu v2"])
    assert (s.reliability.replace_unit, s.workload.model.name, s.gpu.name) == ("host", "llama-3-8b", "my gpu v2")


def test_extends_to_a_non_utf8_or_missing_file(cli, tmp_path):
    (tmp_path / "latin1.toml").write_bytes("# caf\xe9\n".encode("latin-1"))
    (tmp_path / "a.toml").write_text('extends = "latin1.toml"\n')
    _bad(cli, "check", str(tmp_path / "a.toml"), key="latin1.toml", also=["not UTF-8"])
    (tmp_path / "b.toml").write_text('extends = "missing.toml"\n')
    r = _bad(cli, "check", str(tmp_path / "b.toml"), key="extends", also=["missing.toml", "no such file"])
    assert str(tmp_path / "b.toml") in r.err  # the file whose extends is wrong


# --------------------------------------------------------------------------- 6. all at once


def test_new_problems_are_collected_with_the_old_ones(cli):
    r = _bad(cli, "check", "h100", "--set", "gpu.hbm_gb=nan", "--set", 'name="../x"', "--set", "fab.scribe_mm=1e9",
             "--set", "cluster.instances=0", key="gpu.hbm_gb")
    assert "name" in r.err and "fab.scribe_mm" in r.err and "cluster.instances" in r.err
    assert "4 problems" in r.err


def test_configs_dir_is_the_checkout_or_package():
    assert (configs_dir() / "h100.toml").is_file()
