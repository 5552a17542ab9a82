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


@pytest.mark.parametrize("mode", ["static", "continuous", "disaggregated"])
def test_speculative_decoding_reaches_every_serving_mode(mode):
    # one sequence on TP8 is weight-bound: with k = 3, alpha = 0.8, draft_cost 0.05 each mode's
    # TPOT falls by ~tau / (1 + k c) = 2.952 / 1.15 = 2.57 (docs/generation.md#speculative)
    from mcengine.analytic.roofline import model as rm
    from mcengine.stages.roofline.serving import Plan, evaluate_plan
    pinned = ["workload.batch=1", "workload.tensor_parallel=8", "workload.pipeline_parallel=1", "workload.attention='tensor'"]
    spec = ["workload.speculative.draft_tokens=3", "workload.speculative.acceptance=0.8", "workload.speculative.draft_cost=0.05"]
    plan = Plan(mode, rm.Layout(8, allreduce="auto"), rm.Layout(8, allreduce="auto") if mode == "disaggregated" else None)
    tpot = []
    for extra in ([], spec):
        s = api.check("h100", [*pinned, *extra])
        tpot.append(float(evaluate_plan(s, plan, quantile_inputs(s)).tpot_s[0]))
    assert tpot[0] / tpot[1] == pytest.approx(2.952 / 1.15, rel=0.05)
