"""The dense peak per precision (issue 45, the FP8 trap): ``gpu.peak_tflops`` as a table
over bf16 / fp8 / fp4, the entry of ``workload.precision`` taken; one number stays the
peak at every precision; a partial table is warned about."""

from __future__ import annotations

import pytest

from mcengine import api
from mcengine.errors import InputError
from mcengine.scenario.consistency import consistency_warnings

FP8 = {"workload.precision": "fp8", "workload.bytes_per_param": 1}


def test_h100_in_fp8_serves_at_least_1_3x_its_bf16_tokens_per_s():
    bf16 = api.roofline("h100")["tokens_per_s_per_gpu"]
    fp8 = api.roofline("h100", FP8)["tokens_per_s_per_gpu"]
    assert fp8 >= 1.3 * bf16, (fp8, bf16)


def test_the_precision_in_use_picks_its_peak_and_derived_designs_scale_every_entry():
    assert api.check("h100").inputs()["gpu.peak_tflops"].value == 989.4
    assert api.check("h100", FP8).inputs()["gpu.peak_tflops"].value == 1978.9  # datasheet dense FP8
    assert api.check("h100", {"workload.bytes_per_param": 0.5}).inputs()["gpu.peak_tflops"].value == 1978.9  # fp4 on Hopper: the FP8 rate
    assert api.check("lite-h100", FP8).inputs()["gpu.peak_tflops"].value == 1978.9 / 4
    half = api.check("lite-h100-half", FP8)  # derived: fraction 0.5 of every precision's peak
    assert half.inputs()["gpu.peak_tflops"].value == 0.5 * 1978.9
    assert consistency_warnings(half) == []


def test_one_number_is_the_peak_at_every_precision_and_warned_about_off_bf16():
    s = api.check("h100", {"gpu.peak_tflops": 1000, **FP8})
    assert s.inputs()["gpu.peak_tflops"].value == 1000.0
    (text,) = consistency_warnings(s)
    assert "gpu.peak_tflops is one number" in text and "fp8 computes at it" in text
    assert consistency_warnings(api.check("h100", {"gpu.peak_tflops": 1000})) == []


def test_a_table_that_leaves_a_precision_out_is_warned_about_and_computes_it_at_bf16(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('extends = "h100"\n[gpu]\npeak_tflops = { bf16 = 900 }\n')  # replaces h100's table whole
    s = api.check(str(path), FP8)
    assert s.inputs()["gpu.peak_tflops"].value == 900.0
    (text,) = consistency_warnings(s)
    assert "gives bf16 but not fp8, fp4" in text
    one = api.check("h100", {"gpu.peak_tflops.fp8": 1500.0, **FP8})  # a sweep of one entry keeps the others
    assert one.inputs()["gpu.peak_tflops"].value == 1500.0 and consistency_warnings(one) == []


def test_a_peak_table_without_bf16_or_with_an_unknown_precision_is_an_error():
    with pytest.raises(InputError, match="gpu.peak_tflops.bf16"):
        api.check("h100", {"gpu.peak_tflops": {"fp8": 1500}})
    with pytest.raises(InputError, match="gpu.peak_tflops.int8"):
        api.check("h100", {"gpu.peak_tflops": {"bf16": 989.4, "int8": 1979}})
    with pytest.raises(InputError, match="gpu.peak_tflops.fp8"):
        api.check("h100", {"gpu.peak_tflops": {"bf16": 989.4, "fp8": -1}})
