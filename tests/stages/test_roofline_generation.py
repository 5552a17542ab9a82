"""The roofline stage with the generation features on (docs/generation.md): a request
class's own prefix-cache hit rate, speculative decoding's tokens per step per trial."""

from __future__ import annotations

import numpy as np
import pytest

from mcengine import api
from mcengine.scenario.sampling import draw_inputs, quantile_inputs
from mcengine.stages.roofline import class_inputs, class_scenario
from mcengine.stages.roofline.layout import prefix_cache_share, rates_of

MIX = ['workload.classes.chat.share=0.7', 'workload.classes.chat.prompt_tokens=2048', 'workload.classes.chat.output_tokens=256',
       'workload.classes.chat.prefix_hit_rate=0.8',
       'workload.classes.code.share=0.3', 'workload.classes.code.prompt_tokens=4096', 'workload.classes.code.output_tokens=512']


def test_a_class_hit_rate_reaches_only_that_class_with_the_default_cache_share():
    s = api.check("h100", MIX)
    inputs = quantile_inputs(s)
    chat, code = (class_scenario(s, n) for n in ("chat", "code"))
    chat_in, code_in = class_inputs(s, "chat", inputs), class_inputs(s, "code", inputs)
    assert float(np.ravel(rates_of(chat, chat_in).prefix_hit)[0]) == 0.8
    assert float(np.ravel(rates_of(code, code_in).prefix_hit)[0]) == 0.0
    assert prefix_cache_share(chat, chat_in) == 0.1 and prefix_cache_share(code, code_in) == 0.0


def test_tokens_per_step_column_is_each_trials_expected_tokens():
    s = api.check("h100", ["cluster.instances=4", "workload.speculative.draft_tokens=2",
                           'workload.speculative.acceptance={dist="uniform", low=0.5, high=0.9}'])
    inputs = draw_inputs(s, 3, 0, 8)
    from mcengine.stages.roofline import throughput
    cols = throughput(s, inputs)
    a = np.asarray(inputs["workload.speculative.acceptance"])
    np.testing.assert_allclose(cols["tokens_per_step"], 1 + a + a * a, rtol=1e-15)
    assert len(set(np.round(a, 6))) == 8  # drawn per trial
