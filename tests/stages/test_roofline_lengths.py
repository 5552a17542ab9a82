"""Request lengths as dist tables and per-request length laws through the roofline stage
(docs/model.md#lengths).

By hand: a lognormal prompt law prefills its mean ``M exp(sigma^2/2)`` tokens and sizes
every sequence's KV cache at ``M exp(sigma z_q) + O``; a dist-table length is, trial by
trial, the scenario with that trial's drawn number; a one-class mix with laws is the
scenario without classes to the bit; over the legal range every law gives finite
columns or an InputError naming an input.
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.special import ndtri

from mcengine import api
from mcengine.analytic import lengths as al
from mcengine.analytic.roofline import model as rm, weights as rw, steps as rt
from mcengine.errors import InputError
from mcengine.pipeline import run_block
from mcengine.rng import uniforms_for_trials
from mcengine.scenario.sampling import TrialInputs, draw_inputs, quantile_inputs
from mcengine.stages import roofline
from mcengine.stages.roofline.layout import evaluate, lengths_of, rates_of

SMALL = ["cluster.instances=4", "cluster.spare_gpus=8"]
#: One plan, fixed: H100 TP 8, heads sharded, static batches chosen at the median.
ONE_LAYOUT = ["workload.plan='median'", "workload.serving='static'", "workload.tensor_parallel=8", "workload.pipeline_parallel=1",
              "workload.attention='tensor'"]
LOGNORMAL = 'workload.prompt_tokens={law="lognormal", median=1000, sigma=0.5}'


def test_a_lognormal_prompt_law_prefills_its_mean_and_sizes_the_kv_cache_at_its_quantile():
    s = api.check("h100", [*ONE_LAYOUT, LOGNORMAL, "workload.output_tokens=200", "workload.kv_length_quantile=0.99"])
    median = quantile_inputs(s, 0.5)
    mean_prompt = 1000 * math.exp(0.5 * 0.5**2)  # 1,133.1 tokens
    z99 = 2.3263478740408408  # standard normal 0.99 quantile
    kv_context = 1000 * math.exp(0.5 * z99) + 200  # 3,201.1 + 200 tokens
    lengths = lengths_of(s, median)
    assert float(lengths.prompt_tokens[0]) == pytest.approx(mean_prompt, rel=1e-14)
    assert float(lengths.kv_context_tokens[0]) == pytest.approx(kv_context, rel=1e-14)
    layout = rm.Layout(8, 1)
    e = evaluate(s, layout, median)
    # KV memory: 80 layers x 1 KV head per rank x 128 x 2 (K and V) x 2 bytes per token per GPU
    per_token_gpu = 80 * 1 * 128 * 2 * 2
    free = 0.9 * 80e9 - 2.0 * rw.params_total(s.workload.model) / 8
    assert int(e.batch_memory[0]) == math.floor(free / (kv_context * per_token_gpu))
    # prefill work: the batch's prompts at the mean length (the compute term is linear in B S
    # plus the attention's S^2), and a decode step at the mean context S + O/2
    r = rates_of(s, median)
    b = e.batch
    assert e.prefill.compute_s[0] == pytest.approx(rt.prefill(s.workload.model, layout, b, mean_prompt, r).compute_s[0], rel=1e-14)
    assert e.decode.total_s[0] == pytest.approx(rt.decode_step(s.workload.model, layout, b, mean_prompt + 100, r).total_s[0], rel=1e-14)
    tokens = float(b[0]) * 200 / (e.prefill.total_s[0] + 200 * e.decode.total_s[0])
    assert e.tokens_per_s_instance[0] == pytest.approx(tokens, rel=1e-14)


def test_a_decode_step_reads_the_length_weighted_mean_answer():
    """A request holds its slot for its O steps: the slots hold answers in proportion to
    their length, so a decode step reads S + E[O^2] / (2 E[O]) (lognormal: E[O^2]/E[O] =
    m exp(3 sigma^2 / 2)), in static and in continuous serving alike."""
    from mcengine.analytic import serving as sv
    from mcengine.stages.roofline.serving import evaluate_continuous

    law = 'workload.output_tokens={law="lognormal", median=200, sigma=0.8}'
    s = api.check("h100", [*ONE_LAYOUT, "workload.prompt_tokens=1000", law])
    median = quantile_inputs(s, 0.5)
    context = 1000 + 0.5 * 200 * math.exp(1.5 * 0.8**2)  # 1,000 + 261.2 tokens (S + O/2 would read 1,000 + 137.7)
    assert float(lengths_of(s, median).context_tokens[0]) == pytest.approx(context, rel=1e-14)
    layout, r = rm.Layout(8, 1), rates_of(s, median)
    e = evaluate(s, layout, median)
    assert e.decode.total_s[0] == pytest.approx(rt.decode_step(s.workload.model, layout, e.batch, context, r).total_s[0], rel=1e-14)
    c = evaluate_continuous(s, layout, median)
    mean_answer = 200 * math.exp(0.5 * 0.8**2)
    step = sv.continuous_step(s.workload.model, layout, c.batch, 1000.0, mean_answer, r, context)
    assert c.step.total_s[0] == pytest.approx(step.total_s[0], rel=1e-14)
    assert c.step.total_s[0] > sv.continuous_step(s.workload.model, layout, c.batch, 1000.0, mean_answer, r).total_s[0]


def test_the_empirical_length_weighted_mean_is_that_of_its_requests():
    # E[X^2] of 200,000 requests drawn by inverse transform against E[X] E[X^2]/E[X]; 4 SEM
    quantiles, tokens = (0.0, 0.5, 0.9, 1.0), (10.0, 100.0, 400.0, 1000.0)
    x = al.empirical_quantile(quantiles, tokens, uniforms_for_trials(np.uint64(7), 0, 12, 0, 200_000))
    second = al.empirical_size_biased_mean(quantiles, tokens) * al.empirical_mean(quantiles, tokens)
    # by hand: 0.5 (10^2 + 10 100 + 100^2)/3 + 0.4 (100^2 + 100 400 + 400^2)/3 + 0.1 (400^2 + 400 1000 + 1000^2)/3
    assert second == pytest.approx(0.5 * 11100 / 3 + 0.4 * 210000 / 3 + 0.1 * 1560000 / 3, rel=1e-14)
    assert abs((x**2).mean() - second) < 4 * (x**2).std() / math.sqrt(x.size)


@pytest.mark.parametrize("law, mean", [(("lognormal", 1000.0, 0.8), 1000 * math.exp(0.32)),
                                       (("empirical", (0.0, 0.5, 0.9, 1.0), (10.0, 100.0, 400.0, 1000.0)),
                                        0.5 * 55 + 0.4 * 250 + 0.1 * 700)])
def test_the_law_means_are_the_means_of_the_requests_they_describe(law, mean):
    # 200,000 requests drawn by inverse transform on the counter-based streams; 4 SEM
    u = uniforms_for_trials(np.uint64(7), 0, 11, 0, 200_000)
    if law[0] == "lognormal":
        x = law[1] * np.exp(law[2] * ndtri(u))
        closed = al.lognormal_mean(law[1], law[2])
    else:
        x = al.empirical_quantile(law[1], law[2], u)
        closed = al.empirical_mean(law[1], law[2])
    assert closed == pytest.approx(mean, rel=1e-14)
    assert abs(x.mean() - closed) < 4 * x.std() / math.sqrt(x.size)


def test_a_dist_table_length_is_each_trial_at_its_drawn_number():
    lengths = ['workload.output_tokens={dist="uniform", low=100, high=400}', 'workload.prompt_tokens={dist="triangular", low=500, mode=1500, high=4000}']
    s = api.check("h100", SMALL + lengths)
    inputs = draw_inputs(s, 5, 0, 6)
    got = roofline.throughput(s, inputs)
    for i in range(inputs.n):
        o, p = float(inputs["workload.output_tokens"][i]), float(inputs["workload.prompt_tokens"][i])
        at = api.check("h100", SMALL + [f"workload.output_tokens={o!r}", f"workload.prompt_tokens={p!r}"])
        one = TrialInputs(i, 1, {k: v[i:i + 1] for k, v in inputs.values.items()})
        want = roofline.throughput(at, one)
        for column, value in want.items():
            assert got[column][i] == value[0], (i, column)
    assert np.array_equal(got["output_tokens_per_request"], inputs["workload.output_tokens"])


def test_a_one_class_mix_with_length_laws_is_the_scenario_without_classes_to_the_bit():
    prompt = '{law="empirical", quantiles=[0, 0.5, 0.99, 1], tokens=[2, 1020, 4142, 14050]}'
    output = '{law="lognormal", median=129, sigma=0.8}'  # (a dist table here draws on its key's own stream)
    plain = api.check("h100", SMALL + [f"workload.prompt_tokens={prompt}", f"workload.output_tokens={output}"])
    mixed = api.check("h100", SMALL + ["workload.classes.only.share=1", f"workload.classes.only.prompt_tokens={prompt}",
                                       f"workload.classes.only.output_tokens={output}"])
    a, b = run_block(plain, 3, 0, 24), run_block(mixed, 3, 0, 24)
    for column in a:
        assert np.array_equal(a[column], b[column]), column


def test_a_higher_kv_quantile_never_admits_a_larger_batch():
    base = SMALL + [*ONE_LAYOUT, 'workload.output_tokens={law="lognormal", median=200, sigma=1.0}']
    limits = [int(evaluate(s, rm.Layout(8, 1), quantile_inputs(s, 0.5)).batch_memory[0])
              for s in (api.check("h100", base + [f"workload.kv_length_quantile={q}"]) for q in (0.5, 0.9, 0.99, 0.999))]
    assert limits == sorted(limits, reverse=True) and limits[0] > limits[-1]


def test_a_law_with_a_non_positive_median_exits_2_naming_the_key():
    cmd = [sys.executable, "-m", "mcengine", "check", "h100", "--set", 'workload.classes.code.share=1', "--set",
           'workload.classes.code.prompt_tokens=100', "--set", 'workload.classes.code.output_tokens={law="lognormal", median=0, sigma=0.5}']
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "workload.classes.code.output_tokens.median" in r.stderr and "got 0" in r.stderr and "allowed" in r.stderr


@st.composite
def length_keys(draw):
    """A legal length law or dist table for the prompt or the output."""
    key = draw(st.sampled_from(["workload.prompt_tokens", "workload.output_tokens"]))
    median = draw(st.floats(1.0, 1e7))
    kind = draw(st.sampled_from(["lognormal", "empirical", "dist", "number"]))
    if kind == "lognormal":
        return key, f'{{law="lognormal", median={median!r}, sigma={draw(st.floats(0.01, 5.0))!r}}}'
    if kind == "empirical":
        low = draw(st.floats(1.0, median))
        return key, f'{{law="empirical", quantiles=[0, 0.5, 1], tokens=[{low!r}, {median!r}, 10000000]}}'
    if kind == "dist":
        return key, f'{{dist="uniform", low=1, high={max(median, 1.5)!r}}}'
    return key, repr(median)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(length_keys(), st.floats(0.5, 0.9999))
def test_any_legal_length_gives_finite_columns_or_names_its_inputs(case, q):
    key, value = case
    s = api.check("h100", SMALL + [f"{key}={value}", f"workload.kv_length_quantile={q!r}"])
    inputs = draw_inputs(s, 1, 0, 4)
    try:
        columns = roofline.throughput(s, inputs)
    except InputError as exc:  # a context that fits no plan: refused, naming the lengths
        assert key in str(exc) and "gpu.hbm_gb" in str(exc), str(exc)
        return
    for column, x in columns.items():
        assert np.all(np.isfinite(x)), column
    assert np.all(columns["tokens_per_s_instance"] >= 0.0)


def test_the_pessimistic_plan_takes_long_prompts_and_short_answers():
    """Long prompts and a high KV quantile, short answers: each side the one that serves
    fewer output tokens/s (a longer answer spreads its prompt's prefill over more tokens)."""
    from mcengine.scenario.sampling import TrialInputs
    from mcengine.pipeline import ahead_weights, planning_weight
    from mcengine.stages.roofline import rule_of
    from mcengine.stages.roofline.planner import pessimistic_inputs

    s = api.check("h100", ['workload.output_tokens={law="lognormal", median={dist="uniform", low=100, high=300}, sigma=0.5}',
                           'workload.prompt_tokens={dist="uniform", low=1000, high=3000}', 'workload.kv_length_quantile={dist="uniform", low=0.9, high=0.99}'])
    at = pessimistic_inputs(s, 0.1)
    assert at["workload.output_tokens.median"][0] == pytest.approx(120.0, rel=1e-12)
    assert at["workload.prompt_tokens"][0] == pytest.approx(2800.0, rel=1e-12)
    assert at["workload.kv_length_quantile"][0] == pytest.approx(0.981, rel=1e-12)
    assert at["workload.compute_efficiency"][0] < s.workload.efficiency_of("compute").median()
    longer_answers = TrialInputs(at.trial_start, at.n, {**at.values, "workload.output_tokens.median": np.full(1, 280.0)})
    tokens = [float(rule_of(s).plan(s, x, planning_weight(s, x), ahead_weights(s))[1].tokens_per_s_instance[0]) for x in (at, longer_answers)]
    assert tokens[0] < tokens[1]


def test_a_context_no_sequence_fits_is_named_as_the_lengths_under_the_median_plan():
    """The weights fit (17.6 GB of 72 GB per GPU), one sequence of up to 3 M prompt tokens does
    not: the refusal names the request lengths, not the model."""
    s = api.check("h100", ["workload.plan='median'", 'workload.prompt_tokens={dist="uniform", low=1000, high=3000000}'])
    with pytest.raises(InputError) as caught:
        roofline.throughput(s, draw_inputs(s, 0, 0, 8))
    text = str(caught.value)
    assert "workload.prompt_tokens + workload.output_tokens" in text and "17.64 GB of weights" in text and "72.00 GB" in text
