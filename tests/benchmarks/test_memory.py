"""The memory harness's report of the chunks a run made (benchmarks/harness/memory.py)."""

from __future__ import annotations

from benchmarks.harness.memory import _runs


def test_chunk_sizes_are_reported_as_runs_in_order():
    assert _runs([1024, 1024, 2048, 4096, 16384, 16384, 16384, 1696]) == "1024 x 2, 2048 x 1, 4096 x 1, 16384 x 3, 1696 x 1"
    assert _runs([16384]) == "16384 x 1"
