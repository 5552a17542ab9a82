"""Every class of bad input: exit 2, the key named, no traceback (via the CLI)."""

from __future__ import annotations

import pytest


def _bad(cli, *args, key, also=()):
    r = cli(*args)
    assert r.code == 2, (r.code, r.out, r.err)
    assert key in r.err, r.err
    for word in also:
        assert word in r.err, r.err
    assert "Traceback" not in r.err + r.out
    assert r.out == ""
    return r


@pytest.mark.parametrize(
    "override, key, words",
    [
        ("fab.defect_clustring=2", "fab.defect_clustring", ["did you mean 'defect_clustering'"]),
        ("reliability.components.die.afrr=1", "reliability.components.die.afrr", ["did you mean 'afr'"]),
        ("cluster.instance_gpus=0", "cluster.instance_gpus", ["[1,"]),
        ("fab.die_width_mm=-3", "fab.die_width_mm", ["[1, 450]"]),
        ("fab.assembly_yield=1.5", "fab.assembly_yield", ["[0.01, 1]"]),
        ("fab.hbm_stack_yield=0", "fab.hbm_stack_yield", ["[0.01, 1]"]),
        ("fab.defect_clustering=0", "fab.defect_clustering", ["[0.01, 1000000]", '"inf"']),
        ("fab.units_required=200", "fab.units_required", ["units_per_die = 144"]),
        ("fab.die_width_mm=300", "fab.die_width_mm", ["does not fit"]),
        ("fab.hbm_stacks=1.5", "fab.hbm_stacks", ["integer"]),
        ('run.horizon_years="five"', "run.horizon_years", ["five"]),
        ("workload.batch=oops", "workload.batch", ['"auto"']),
        ("workload.model=llama-9", "workload.model", ["unknown model card", "llama-3"]),
        ("reliability.replace_unit=rack", "reliability.replace_unit", ["'gpu'", "'host'"]),
        ('fab.defect_density_per_cm2={dist="lognorml", median=0.1, sigma=0.2}', "fab.defect_density_per_cm2.dist", ["did you mean 'lognormal'"]),
        ('fab.defect_density_per_cm2={dist="lognormal", median=0.1}', "fab.defect_density_per_cm2.sigma", ["missing"]),
        ('fab.defect_density_per_cm2={dist="lognormal", median=0.1, sigma=0.2, mode=1}', "fab.defect_density_per_cm2.mode", ["unknown key"]),
        ('fab.defect_density_per_cm2={dist="uniform", low=0.2, high=0.1}', "fab.defect_density_per_cm2", ["low < high"]),
        ('workload.compute_efficiency={dist="normal", mean=0.5, sd=0.1}', "workload.compute_efficiency", ["(0, 1]"]),
        ('reliability.repair_hours={law="gamma", mean=3}', "reliability.repair_hours.law", ["allowed: fixed, exponential"]),
        ('reliability.repair_hours={law="weibull", mean=3}', "reliability.repair_hours.shape", ["missing"]),
        ('reliability.repair_hours={law="lognormal", median=-1, sigma=0.5}', "reliability.repair_hours.median", ["[0, 1000000000]"]),
        ('reliability.repair_hours={law="mixture", parts=[{weight=-1, law="fixed", value=2}]}', "reliability.repair_hours.parts.0.weight", ["positive"]),
        ("reliability.repair_crews=0", "reliability.repair_crews", ['"inf"']),
        ("workload.tensor_parallel=3", "workload.tensor_parallel", ["divisor"]),
        ("cluster.spare_gpus=-1", "cluster.spare_gpus", ["[0,"]),
        ("colour=1", "colour", ["unknown key"]),
    ],
)
def test_bad_value_names_key(cli, override, key, words):
    _bad(cli, "check", "h100", "--set", override, key=key, also=words)


def test_all_problems_reported_at_once(cli):
    r = _bad(cli, "check", "h100", "--set", "fab.assembly_yield=2", "--set", "cluster.instances=0", "--set", "reliability.components.die.count=0", key="fab.assembly_yield")
    assert "cluster.instances" in r.err and "reliability.components.die.count" in r.err
    assert "3 problems" in r.err


def test_replace_host_needs_whole_hosts_of_spares(cli):
    _bad(cli, "check", "h100", "--set", "reliability.replace_unit=host", "--set", "cluster.spare_gpus=3", key="cluster.spare_gpus", also=["multiple"])


def test_a_nic_serves_gpus_of_one_host(cli):
    """Issue 51 minor: gpus_per_nic = 64 with 8 GPUs per host was accepted against the
    key's own bound (a NIC serves GPUs of one host)."""
    _bad(cli, "check", "h100", "--set", "cluster.gpus_per_nic=64", key="cluster.gpus_per_nic", also=["divisor of cluster.gpus_per_host = 8"])
    _bad(cli, "check", "lite-h100", "--set", "cluster.gpus_per_nic=3", key="cluster.gpus_per_nic", also=["= 16"])


def test_a_mix_has_at_most_32_request_classes(cli):
    """Issue 51 case 8: 1,000 classes took 100 s for 64 trials (each class is planned alone
    in every chunk) and a SIGTERM waited for the chunk."""
    def classes(n):
        return [a for i in range(n) for kv in (f"workload.classes.c{i}.share=1", f"workload.classes.c{i}.prompt_tokens={500 + i}",
                                               f"workload.classes.c{i}.output_tokens=100") for a in ("--set", kv)]

    assert cli("check", "h100", *classes(32)).code == 0
    _bad(cli, "check", "h100", *classes(33), key="workload.classes", also=["33 classes", "at most 32"])


def test_malformed_toml_names_file_and_line(cli, tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text('name = "x"\n[fab]\ndie_width_mm = = 3\n')
    _bad(cli, "check", str(path), key=str(path), also=["malformed TOML", "line 3"])


def test_unknown_key_inside_file(cli, tmp_path):
    path = tmp_path / "typo.toml"
    path.write_text('extends = "h100"\n[fab]\nwafer_cost = 1\n')
    _bad(cli, "check", str(path), key="fab.wafer_cost", also=["did you mean 'wafer_cost_usd'"])


def test_missing_file_and_unknown_name(cli, tmp_path):
    _bad(cli, "check", str(tmp_path / "nope.toml"), key="scenario", also=["no such file"])
    _bad(cli, "check", "lite-h10", key="scenario", also=["did you mean 'lite-h100'"])


def test_extends_cycle(cli, tmp_path):
    (tmp_path / "a.toml").write_text('extends = "b.toml"\n')
    (tmp_path / "b.toml").write_text('extends = "a.toml"\n')
    _bad(cli, "check", str(tmp_path / "a.toml"), key="extends", also=["cycle"])


def test_override_path_through_a_value(cli):
    _bad(cli, "check", "h100", "--set", "fab.scribe_mm.x=1", key="fab.scribe_mm", also=["not a table"])


def test_negative_sample_sizes(cli):
    _bad(cli, "yield", "h100", "--wafers", "-5", key="--wafers", also=["positive"])
    _bad(cli, "reliability", "h100", "--lifetimes", "0", key="--lifetimes", also=["positive"])


def test_threads_out_of_range(cli):
    _bad(cli, "yield", "h100", "--threads", "0", key="--threads")


def test_usage_error_is_exit_2(cli):
    r = cli("check")
    assert r.code == 2
    assert "Traceback" not in r.err
