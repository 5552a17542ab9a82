"""`mcengine validate`'s current-generation anchors (mcengine/validation/generation.py):
DeepSeek-V3's card passes its report's figures; the held-out B200 anchors report their
errors and say why they miss."""

from __future__ import annotations

from mcengine import validation
from mcengine.validation import generation


def test_generation_checks_pass_or_are_known_misses_with_their_error():
    checks = generation.checks()
    assert [c.status for c in checks[:3]] == ["pass"] * 3
    for c in checks[3:]:
        assert c.status in ("pass", "known miss") and c.basis == "measured"
        assert "held-out" in c.detail and f"{c.got / c.expected - 1:+.1%}" in c.detail


def test_generation_checks_run_with_the_roofline_stage():
    checks = validation.all_checks()
    stages, names = [c.stage for c in checks], [c.name for c in checks]
    i = names.index("DeepSeek-V3 MLA KV bytes per token (bf16)")
    assert stages[i] == "roofline" and stages[i + 3] == "training"  # the generation's anchors end the roofline's
