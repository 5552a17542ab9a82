"""Unit constants: the one place that converts (docs/model.md#units)."""

#: A year is 365.25 days everywhere (docs/interface.md#commands).
HOURS_PER_YEAR = 8766.0
MM2_PER_CM2 = 100.0
BYTES_PER_GB = 1e9
BYTES_PER_TB = 1e12
FLOPS_PER_TFLOP = 1e12
MS_PER_S = 1e3
US_PER_S = 1e6
W_PER_KW = 1e3
TOKENS_PER_MTOK = 1e6
