"""`mcengine validate`'s current-generation anchors (mcengine/validation/generation.py):
DeepSeek-V3's card passes its report's figures; the B200 fp4 compute efficiency is its fit
to the FP4 128 / 128 anchor, which then passes; the held-out B200 and DeepSeek serving
anchors report their errors and say why they miss."""

from __future__ import annotations

import pytest

from mcengine import validation
from mcengine.validation import generation


def test_generation_checks_pass_or_are_known_misses_with_their_error():
    checks = generation.checks()
    by_name = {c.name: c for c in checks}
    assert [c.status for c in checks[:5]] == ["pass"] * 5  # the card, the fp4 fit and its anchor
    assert by_name["B200 FP4 TP1 tok/s, 128 in / 128 out"].detail.startswith("[fit]")
    measured = checks[4:]
    assert len(measured) == len(generation.B200_ANCHORS) + len(generation.DEEPSEEK_ANCHORS) == 6
    for c in measured:
        assert c.status in ("pass", "known miss") and c.basis == "measured"
        assert f"{c.got / c.expected - 1:+.1%}" in c.detail
    assert sum("[held-out]" in c.detail for c in measured) == 5


def test_fp4_fit_meets_its_anchor():
    # the shipped median 0.35 is the fit (0.3465) rounded: the anchor lands within 1 %
    assert generation.fit_fp4_compute() == pytest.approx(0.3465, abs=5e-4)
    anchor = generation.B200_ANCHORS[0]
    assert anchor.value() / anchor.measured - 1 == pytest.approx(0.35 / 0.3465 - 1, abs=2e-3)


def test_deepseek_anchors_measure_per_gpu_phases():
    # SGLang's per-node figures over 8 GPUs; GB200's are per GPU already
    assert [a.measured for a in generation.DEEPSEEK_ANCHORS] == [22_300 / 8, 52_300 / 8, 9_087.0, 18_471.0]
    assert [a.phase for a in generation.DEEPSEEK_ANCHORS] == ["decode", "prefill"] * 2


def test_generation_checks_run_with_the_roofline_stage():
    checks = validation.all_checks()
    stages, names = [c.stage for c in checks], [c.name for c in checks]
    i = names.index("DeepSeek-V3 MLA KV bytes per token (bf16)")
    n = 1 + len(generation.B200_ANCHORS) + len(generation.DEEPSEEK_ANCHORS)  # the fp4 fit and the measured anchors
    assert stages[i] == "roofline" and stages[i + n] == "roofline" and stages[i + n + 1] == "training"  # the generation's anchors end the roofline's
