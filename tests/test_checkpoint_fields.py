"""A checkpoint forged with its checksum recomputed is refused field by field (issue 51
case 7): every summary's counts, moments, extremes, scale, offset and quantile sketches
are checked for what every state mcengine writes satisfies (mcengine/state_checks.py)
before a resume uses them; a genuine checkpoint resumes to the straight run's numbers."""

from __future__ import annotations

import json
import math

import pytest

from mcengine import api
from mcengine.runner.checkpoint import _state_sha256
from mcengine.errors import InputError

SMALL = ["cluster.instances=4", "cluster.spare_gpus=8"]


def _stopped(out):
    def stop(done, total):
        if done:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        api.run(["h100", "lite-h100"], trials=3000, seed=11, overrides=SMALL, keep_trials=False, chunk_trials=1024, out=out,
                progress=stop, figures=False)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    out = tmp_path_factory.mktemp("ck") / "run"
    _stopped(out)
    return out, (out / "checkpoint.json").read_text()


def _summary(state: dict, name: str = "lite-h100", metric: str = "cost_per_mtok_usd") -> dict:
    return next(s for n, m, s in state["metrics"] if (n, m) == (name, metric))


FORGERIES = {
    "m2 = -5": (lambda s: _summary(s).update(m2=-5.0), "m2 is -5.0"),
    'a sketch alpha = "x"': (lambda s: _summary(s)["sketch"].update(alpha="x"), "sketch.alpha is 'x'"),
    "alpha = 0": (lambda s: _summary(s)["sketch"].update(alpha=0.0), "sketch.alpha is 0.0"),
    "a bucket key of 11 digits": (lambda s: _summary(s)["sketch"]["positive"].update({"12345678901": 1}), "bucket 12345678901"),
    "mean = NaN": (lambda s: _summary(s).update(mean=math.nan), "mean is nan"),
    "mean beyond max": (lambda s: _summary(s).update(mean=_summary(s)["max"] * 2), "outside its min"),
    "min > max": (lambda s: _summary(s).update(min=_summary(s)["max"] + 1.0), "is above its max"),
    "scale = 0": (lambda s: _summary(s).update(scale=0.0), "scale is 0"),
    "scale not a power of two": (lambda s: _summary(s).update(scale=3.0), "scale is 3.0"),
    "offset = 0.5": (lambda s: _summary(s, metric="availability").update(offset=0.5), "offset is 0.5"),
    "count a float": (lambda s: _summary(s).update(count=1024.5), "count is 1024.5"),
    "a bucket of count 0": (lambda s: _summary(s)["sketch"]["positive"].update({"1": 0}), "not a positive count"),
}


@pytest.mark.parametrize("name", FORGERIES)
def test_a_forged_checkpoint_is_refused_naming_the_field(saved, tmp_path, name):
    import shutil

    out, text = saved
    forge, says = FORGERIES[name]
    folder = tmp_path / "run"
    shutil.copytree(out, folder)
    doc = json.loads(text)
    forge(doc["state"])
    doc["sha256"] = _state_sha256(doc["state"])
    (folder / "checkpoint.json").write_text(json.dumps(doc))
    with pytest.raises(InputError, match="does not describe this run") as info:
        api.run(None, out=folder, resume=True, figures=False)
    assert says in str(info.value)


def test_the_genuine_checkpoint_resumes_to_the_straight_numbers(saved, tmp_path):
    import shutil

    out, _ = saved
    shutil.copytree(out, tmp_path / "run")
    resumed = api.run(None, out=tmp_path / "run", resume=True, figures=False).summary()
    straight = api.run(["h100", "lite-h100"], trials=3000, seed=11, overrides=SMALL, keep_trials=False, chunk_trials=4096).summary()
    for doc in (resumed, straight):
        for key in ("elapsed_s", "figures", "provenance"):
            doc.pop(key, None)
    assert json.dumps(resumed, sort_keys=True) == json.dumps(straight, sort_keys=True)


MIX = ["workload.classes.chat.share=0.7", "workload.classes.chat.prompt_tokens=1024", "workload.classes.chat.output_tokens=128",
       "workload.classes.code.share=0.3", "workload.classes.code.prompt_tokens=2048", "workload.classes.code.output_tokens=32"]


@pytest.mark.parametrize("extra", [['run.sampler="sobol"'], ["workload.tpot_slo_ms=5"], MIX, [*MIX, "workload.classes.code.tpot_slo_ms=0.001"]],
                         ids=["sobol", "every trial misses its SLO", "a mix", "a mix one class of which no plan serves"])
def test_every_state_mcengine_writes_passes_the_checks(tmp_path, extra):
    """Scrambled replicates, +inf costs, a mix's per-class summaries: a checkpoint of each
    passes the field checks and resumes to the straight run's numbers."""
    def stop(done, total):
        if done:
            raise KeyboardInterrupt

    kw = dict(trials=2500, seed=3, overrides=[*SMALL, *extra], keep_trials=False, figures=False)
    with pytest.raises(KeyboardInterrupt):
        api.run(["h100", "lite-h100"], chunk_trials=1024, out=tmp_path / "run", progress=stop, **kw)
    resumed = api.run(None, out=tmp_path / "run", resume=True, figures=False).summary()
    straight = api.run(["h100", "lite-h100"], chunk_trials=4096, **kw).summary()
    for doc in (resumed, straight):
        for key in ("elapsed_s", "figures", "provenance"):
            doc.pop(key, None)
    assert json.dumps(resumed, sort_keys=True) == json.dumps(straight, sort_keys=True)
