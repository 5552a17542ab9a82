"""Per-request length laws: the spread of prompt and output lengths across the requests
of one class (docs/model.md#lengths), in closed form on plain numbers or per-trial arrays.

Two laws, each a function of its parameters only (no sampling: the roofline reads a
law's mean and one quantile):

* lognormal with median ``m`` and log-sd ``sigma``: mean ``m exp(sigma^2 / 2)``,
  quantile ``q`` at ``m exp(sigma z_q)``, ``z_q`` the standard normal quantile;
* empirical: a quantile table ``(q_i, x_i)`` from ``q_0 = 0`` (the shortest request) to
  ``q_k = 1`` (the longest), the quantile function linear between its points (the
  lengths uniform between two tabulated quantiles): mean
  ``sum_i (q_{i+1} - q_i) (x_i + x_{i+1}) / 2``, quantile ``q`` by linear interpolation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri


def lognormal_mean(median, sigma) -> np.ndarray:
    """Mean of a lognormal law of ``median`` and log-sd ``sigma``: ``median exp(sigma^2/2)``."""
    return np.asarray(median, float) * np.exp(0.5 * np.asarray(sigma, float) ** 2)


def lognormal_quantile(median, sigma, q) -> np.ndarray:
    """Quantile ``q`` (< 1) of a lognormal law: ``median exp(sigma z_q)``."""
    return np.asarray(median, float) * np.exp(np.asarray(sigma, float) * ndtri(np.asarray(q, float)))


def empirical_mean(quantiles, tokens) -> float:
    """Mean of the law whose quantile function is linear between the points
    ``(quantiles[i], tokens[i])``, ``quantiles`` from 0 to 1: the trapezoid sum."""
    q, x = np.asarray(quantiles, float), np.asarray(tokens, float)
    return float(np.sum(np.diff(q) * (x[:-1] + x[1:]) / 2.0))


def lognormal_size_biased_mean(median, sigma) -> np.ndarray:
    """``E[X^2] / E[X]`` of a lognormal law, the mean length weighted by length:
    ``median exp(3 sigma^2 / 2)``."""
    return np.asarray(median, float) * np.exp(1.5 * np.asarray(sigma, float) ** 2)


def empirical_size_biased_mean(quantiles, tokens) -> float:
    """``E[X^2] / E[X]`` of the law with a quantile function linear between the points:
    ``sum_i (q_{i+1} - q_i) (x_i^2 + x_i x_{i+1} + x_{i+1}^2) / 3`` (a uniform segment's
    second moment) over :func:`empirical_mean`."""
    q, x = np.asarray(quantiles, float), np.asarray(tokens, float)
    second = float(np.sum(np.diff(q) * (x[:-1] ** 2 + x[:-1] * x[1:] + x[1:] ** 2) / 3.0))
    return second / empirical_mean(quantiles, tokens)


def empirical_quantile(quantiles, tokens, q) -> np.ndarray:
    """Quantile ``q`` of that law: ``tokens`` interpolated linearly at ``q``."""
    return np.interp(np.asarray(q, float), np.asarray(quantiles, float), np.asarray(tokens, float))


@dataclass(frozen=True)
class Lengths:
    """The request lengths a block of trials is served at (numbers or per-trial arrays,
    docs/model.md#lengths): ``prompt_tokens`` and ``output_tokens`` are the means over the
    requests (the prefill work of a prompt, the decode steps of a request),
    ``kv_prompt_tokens`` and ``kv_context_tokens`` the prompt and the whole context
    (prompt and output) at the KV quantile, which size every sequence's KV cache, and
    ``context_tokens`` the mean context a decode step reads, ``S + E[O^2] / (2 E[O])``: a
    request holds its batch slot for its ``O`` steps, so the slots hold long answers in
    proportion to their length, each at ``S + O/2`` on average over its steps (prompt and
    output lengths independent). Without a spread they are ``S``, ``O``, ``S``, ``S + O``
    and ``S + O/2``."""

    prompt_tokens: object
    output_tokens: object
    kv_prompt_tokens: object
    kv_context_tokens: object
    context_tokens: object

    @classmethod
    def fixed(cls, prompt_tokens, output_tokens) -> "Lengths":
        """Every request ``prompt_tokens`` / ``output_tokens`` long (no spread)."""
        return cls(prompt_tokens, output_tokens, prompt_tokens, prompt_tokens + output_tokens, prompt_tokens + output_tokens / 2.0)
