"""benchmarks/favor_diagnosis.py (a script, imported by path): every variant builds a model that
runs, the swap of the registered favor mixer is undone, and the recorded file the book reads is complete."""

from __future__ import annotations


import numpy as np
import pytest

import benchmark_scripts

torch = pytest.importorskip("torch")

from lattn_edu import recall, records  # noqa: E402


@pytest.fixture(scope="module")
def script():
    return benchmark_scripts.load("favor_diagnosis")


@pytest.mark.parametrize("variant", ["favor", "favor, no d^-1/4", "favor, m = 64",
                                     "exp, no norm term"])
def test_every_variant_builds_a_model_and_restores_the_recorded_mixer(script, variant):
    config = recall.RecallConfig(d_model=16, num_heads=2)
    with script.mixer_variant(variant):
        model = recall.RecallModel("favor", config)
    assert recall.MIXERS["favor"] is script.RECORDED_MIXER
    tokens, _ = recall.make_batch(3, 2, config.num_keys, config.num_values,
                                  torch.Generator().manual_seed(0))
    logits = model(tokens)  # [B, N, vocab]
    assert logits.shape == (2, 9, config.num_keys + config.num_values)
    assert torch.isfinite(logits).all()


def test_a_failing_run_still_restores_the_recorded_mixer(script):
    with pytest.raises(RuntimeError, match="stop"), script.mixer_variant("favor, m = 64"):
        raise RuntimeError("stop")
    assert recall.MIXERS["favor"] is script.RECORDED_MIXER


def test_exp_without_norm_is_exp_of_the_projection_up_to_one_factor(script):
    features = script.FavorPlus(5, 5, seed=3)
    phi = script.ExpWithoutNorm(features)
    x = torch.from_numpy(np.random.default_rng(1).standard_normal((2, 7, 5))).float()
    got = phi(x)  # [2, 7, 5]
    plain = torch.exp(x @ torch.from_numpy(features.projection).float().T)
    ratio = got / plain  # one common factor per sequence
    assert (got > 0).all() and got.amax() <= 1
    torch.testing.assert_close(ratio, ratio[:, :1, :1].expand_as(ratio), rtol=1e-5, atol=0)


def test_the_recorded_diagnosis_holds_every_variant():
    record = records.load_record("favor_diagnosis.json")
    variants = [run["variant"] for run in record["results"]]
    assert sorted(variants) == sorted(["favor", "favor, no d^-1/4", "favor, m = 64",
                                       "exp, no norm term"])
    assert all(0 <= run["accuracy"] <= 1 and run["num_pairs"] == 8 for run in record["results"])
