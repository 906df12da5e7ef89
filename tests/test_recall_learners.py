"""The recall lab's test-time learners (chapter 14): ttt_linear, titans_linear and least_squares."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

import lattn_edu as la
from conftest import assert_close

torch = pytest.importorskip("torch")

from lattn_edu import cli, recall  # noqa: E402  (needs torch, skipped above when missing)

SMALL = replace(recall.TINY, d_model=20, num_heads=2)  # d_head = 10
LEARNERS = ("ttt_linear", "titans_linear", "least_squares")
F = torch.nn.functional


def inputs(batch=3, n=37, seed=0, dtype=torch.float64):
    return torch.randn(batch, n, SMALL.d_model, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def numpy(t):
    return t.detach().numpy()


@pytest.mark.parametrize("name", LEARNERS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_learner_keeps_the_shape_and_dtype(name, dtype):
    torch.manual_seed(0)
    mixer = recall.make_mixer(name, SMALL, layer=0).to(dtype)
    out = mixer(inputs(n=21, dtype=dtype))
    assert out.shape == (3, 21, SMALL.d_model) and out.dtype == dtype and torch.isfinite(out).all()
    assert mixer.d_qk == mixer.d_head == 10  # TTT and Titans need a square inner model


def per_head(projection, x):
    return projection(x).transpose(1, 2)  # [B, H, N]


def test_ttt_mixer_is_ttt_linear_on_its_projections_and_gates():
    torch.manual_seed(1)
    mixer = recall.make_mixer("ttt_linear", SMALL, layer=0).double()
    x = inputs()  # 37 tokens: mini-batches of 16, 16 and 5
    q, k, v = mixer.project(x)
    position = torch.arange(37, dtype=torch.float64) % 16 + 1
    eta = torch.sigmoid(per_head(mixer.lr, x)) / (10 * position)  # [B, H, N]
    start = tuple(numpy(p.expand(3, *p.shape)) for p in (mixer.w0, mixer.b0))
    expected = la.ttt_linear(numpy(q), numpy(k), numpy(v), numpy(eta), numpy(mixer.ln_weight),
                             numpy(mixer.ln_bias), mini_batch_size=16, scale=1.0, initial_state=start,
                             form="recurrent")
    assert_close(mixer.mix_selective(x, q, k, v).detach(), expected, what="ttt_linear mixer")


def test_titans_mixer_is_titans_linear_on_its_projections_and_gates():
    torch.manual_seed(2)
    mixer = recall.make_mixer("titans_linear", SMALL, layer=0).double()
    x = inputs()
    q, k, v = mixer.project(x)
    theta = F.softplus(per_head(mixer.theta, x))
    alpha, eta = (torch.sigmoid(per_head(p, x)) for p in (mixer.alpha, mixer.eta))
    w0, b0 = (numpy(p.expand(3, *p.shape)) for p in (mixer.w0, mixer.b0))
    unit_q, unit_k = (numpy(t / t.norm(dim=-1, keepdim=True)) for t in (q, k))
    expected = la.titans_linear(unit_q, unit_k, numpy(v), numpy(theta), numpy(alpha), numpy(eta),
                                numpy(mixer.ln_weight), numpy(mixer.ln_bias), mini_batch_size=16, scale=1.0,
                                initial_state=(w0, b0, np.zeros_like(w0), np.zeros_like(b0)), form="recurrent")
    assert_close(mixer.mix_selective(x, q, k, v).detach(), expected, what="titans_linear mixer")


def test_least_squares_mixer_is_mesanet_on_its_projections_and_gates():
    torch.manual_seed(3)
    mixer = recall.make_mixer("least_squares", SMALL, layer=0).double()
    x = inputs(n=45)  # chunks of 16, the last one ragged
    q, k, v = mixer.project(x)
    beta = torch.sigmoid(per_head(mixer.beta, x))
    step = F.softplus(mixer.decay.dt(x) + mixer.decay.dt_bias)  # [B, N, H]
    g = (-mixer.decay.A_log.exp() * step).transpose(1, 2)  # [B, H, N]
    ridge = 0.25 + F.softplus(mixer.ridge_raw)  # [H, d_qk]
    unit_q, unit_k = (numpy(t / t.norm(dim=-1, keepdim=True)) for t in (q, k))
    expected = la.least_squares_attention(unit_q, unit_k, numpy(v), numpy(beta), numpy(g), ridge=numpy(ridge),
                                          scale=1.0, form="recurrent")
    assert_close(mixer.mix_selective(x, q, k, v).detach(), expected, what="least_squares mixer")


def test_gates_stay_in_their_legal_ranges_for_extreme_inputs():
    torch.manual_seed(4)
    x = 1e4 * inputs(n=20, dtype=torch.float32)  # saturates every sigmoid and softplus
    ttt, titans, mesa = (recall.make_mixer(name, SMALL, layer=0) for name in LEARNERS)
    with torch.no_grad():
        eta = ttt.learning_rates(x)
        assert torch.isfinite(eta).all() and (eta >= 0).all() and (eta <= 1 / 10).all()
        theta, alpha, momentum = titans.gates(x)
        assert torch.isfinite(theta).all() and (theta >= 0).all()
        assert all(((gate >= 0) & (gate <= 1)).all() for gate in (alpha, momentum))
        beta, g = mesa.input_gates(x), mesa.decay(x)
        assert ((beta >= 0) & (beta <= 1)).all() and (g <= 0).all() and not torch.isnan(g).any()
        mesa.ridge_raw.fill_(-1e4)
        assert (mesa.ridge() >= 0.25).all()
        for mixer in (ttt, titans, mesa):  # the package's own range checks pass, and the output is finite
            assert torch.isfinite(mixer(x)).all(), type(mixer).__name__


def test_gates_start_where_recall_needs_them():
    torch.manual_seed(5)
    titans = recall.make_mixer("titans_linear", replace(SMALL, d_model=64, num_heads=4), layer=0)
    x = torch.randn(2, 9, 64) * 0.1  # small inputs: each gate is then its bias
    alpha = titans.gates(x)[1].detach()
    assert ((1 - alpha) ** 128).min() > 0.2  # a key survives a 128-token gap before training
    mesa = recall.make_mixer("least_squares", SMALL, layer=0)
    assert torch.allclose(mesa.ridge(), torch.ones(2, 10))


@pytest.mark.parametrize("name", LEARNERS)
def test_a_training_step_reaches_every_parameter(name):
    torch.manual_seed(6)
    model = recall.RecallModel(name, SMALL)
    tokens, targets = recall.make_batch(3, 5, SMALL.num_keys, SMALL.num_values, torch.Generator().manual_seed(4))
    logits = model(tokens, last=3)  # [B, P, vocab]
    F.cross_entropy(logits.flatten(0, 1), targets[:, -3:].flatten()).backward()
    for param_name, param in model.mixers[0].named_parameters():
        assert param.grad is not None and torch.isfinite(param.grad).all(), param_name
        assert param.grad.abs().sum() > 0, param_name


def test_state_sizes_count_what_each_learner_carries():
    sizes = {name: recall.make_mixer(name, SMALL, layer=0).state_size() for name in LEARNERS}
    # per head, d = 10: TTT's W and b; Titans' memory and momentum, each (W, b); MesaNet's H and G
    assert sizes == {"ttt_linear": 2 * 110, "titans_linear": 2 * 2 * 110, "least_squares": 2 * 200}


def test_tiny_recall_run_with_the_learners_finishes_with_a_finite_loss(tmp_path):
    out = tmp_path / "recall.json"
    assert cli.main(["recall", "--tiny", "--models", *LEARNERS, "--pairs", "2", "--steps", "2",
                     "--no-progress", "--out", str(out)]) == 0
    results = json.loads(out.read_text(encoding="utf-8"))["results"]
    assert [r["model"] for r in results] == list(LEARNERS)
    assert all(np.isfinite(r["final_loss"]) and 0 <= r["accuracy"] <= 1 for r in results)


def test_the_default_sweep_leaves_the_learners_out():
    assert recall.RECALL_MODELS == ("softmax", "linear", "favor", "retnet", "based", "deltanet",
                                    "gated_deltanet", "gla", "mamba2")
    assert recall.RecallConfig().models == recall.RECALL_MODELS
    assert recall.MODELS[11:14] == LEARNERS  # registered, reachable by --models
