"""Shared cases of the roofline closed-form tests: a model small enough to do by hand and
round rates (tests/analytic/test_roofline_*.py)."""

from __future__ import annotations

from mcengine.analytic.roofline import model as rm
from mcengine.scenario.cards import ModelCard, load_model_card

#: A model small enough to do by hand: P_attn = 16 + 16 + 16 = 48, P_mlp = 3*4*8 = 96,
#: P_layer = 48 + 96 + 2*4 = 152, P_stream = 2*152 + 10*4 = 344, P_total = 384.
TINY = ModelCard(name="tiny", layers=2, hidden=4, heads=2, kv_heads=1, head_dim=2, ffn=8, vocab=10)
#: Round unit-less rates: F = 1000 FLOP/s, W = 100 B/s, W_link = 10 B/s, alpha = 1 s + 0.5 s/hop,
#: overhead 2 s/step + 0.25 s/layer, bf16 weights, 1-byte KV.
RATES = rm.Rates(1000.0, 100.0, 10.0, 1.0, 0.5, 2.0, 0.25, bytes_per_param=2.0, kv_bytes=1.0)


def card(name: str) -> ModelCard:
    return load_model_card(name, "workload.model", [])
