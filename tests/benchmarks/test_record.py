"""The benchmark record (benchmarks/harness/record.py): one section per harness, the
latest of each kept, with the machine and commit."""

from __future__ import annotations

from benchmarks.harness import record


def test_a_harness_replaces_its_own_section_and_keeps_the_others(tmp_path):
    path = tmp_path / "benchmarks.md"
    record.write(path, {"machine": {}, "quick": False, "memory": {"after": [{"trials": 10000, "peak_mb": 712.5}]}}, (1.0, 2.0, 3.0))
    record.write(path, {"machine": {}, "quick": True, "availability": {"h100": {"ceiling": 368.4}}}, (0.5, 0.5, 0.5))
    record.write(path, {"machine": {}, "quick": False, "memory": {"after": [{"trials": 10000, "peak_mb": 700.25}]}}, (1.0, 2.0, 3.0))
    text = path.read_text()
    assert text.startswith(record.TITLE)
    assert text.count("## memory") == 1 and text.count("## availability") == 1
    assert "| after[0].peak_mb | 700.25 |" in text and "712.5" not in text
    assert "| h100.ceiling | 368.4 |" in text
    memory = text[text.index("## memory"):]
    assert f"{record.cpu_model()}, " in memory and "load average (1/5/15 min) 1.0/2.0/3.0 before" in memory
    assert "Commit " + record.commit().split("+")[0] in memory and "Quick run" not in memory
