"""The request-level serving simulator (docs/serve.md): :func:`.loop.simulate`."""

from .loop import (ARRIVAL_GAMMA, ARRIVAL_POISSON, LENGTH_FIXED, LENGTH_GEOMETRIC, MODE_CONTINUOUS, MODE_DISAGGREGATED, MODE_STATIC,
                   simulate)

__all__ = ["ARRIVAL_GAMMA", "ARRIVAL_POISSON", "LENGTH_FIXED", "LENGTH_GEOMETRIC", "MODE_CONTINUOUS", "MODE_DISAGGREGATED",
           "MODE_STATIC", "simulate"]
