"""Fixtures of the analytic tests."""

from __future__ import annotations

import pytest

from .roofline_cases import card


@pytest.fixture(scope="module")
def llama70():
    return card("llama-3-70b")
