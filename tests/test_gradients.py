"""gated_linear_attention_vjp: against finite differences of the numpy forward, against torch
autograd, recurrent against chunkwise, the dlog_decay identity, and bad input (lattn_edu.gradients)."""

from __future__ import annotations

import numpy as np
import pytest

import lattn_edu as la
from conftest import assert_close, central_differences

DECAYS = ("none", "scalar", "vector")
VJP_FORMS = ("recurrent", "chunkwise")


def make_problem(rng, lead, n, d_k, d_v, decay, dtype=np.float64):
    q, k = (rng.standard_normal(lead + (n, d_k)).astype(dtype) for _ in range(2))
    v, grad_o = (rng.standard_normal(lead + (n, d_v)).astype(dtype) for _ in range(2))
    shape = {"none": None, "scalar": lead + (n,), "vector": lead + (n, d_k)}[decay]
    g = None if shape is None else -rng.uniform(0.0, 0.7, shape).astype(dtype)
    return q, k, v, grad_o, g


def loss(q, k, v, g, grad_o, scale=None):
    """ℓ = Σ O ⊙ dO, whose gradient with respect to O is dO: the vjp is its gradient."""
    return float((la.gated_linear_attention(q, k, v, g, scale=scale, form="recurrent") * grad_o).sum())


def finite_differences(q, k, v, g, grad_o, scale=None, step=1e-6):
    """Central differences of ``loss`` for every entry of q, k, v (and g): exact to ~1e-9 here."""
    args = [q, k, v] + ([] if g is None else [g])
    return central_differences(
        lambda *a: loss(*a[:3], a[3] if g is not None else None, grad_o, scale), args, step)


@pytest.mark.parametrize("decay", DECAYS)
@pytest.mark.parametrize("form", VJP_FORMS)
def test_matches_finite_differences(form, decay):
    rng = np.random.default_rng(1201)
    q, k, v, grad_o, g = make_problem(rng, (2,), 7, 3, 4, decay)
    got = la.gated_linear_attention_vjp(q, k, v, grad_o, g, scale=0.7, form=form, chunk_size=3)
    expected = finite_differences(q, k, v, g, grad_o, scale=0.7)
    assert len(got) == (3 if g is None else 4)
    for name, a, e in zip(("dq", "dk", "dv", "dlog_decay"), got, expected):
        assert_close(a, e, rtol=1e-7, what=f"{name} ({form}, {decay})")


@pytest.mark.parametrize("decay", DECAYS)
@pytest.mark.parametrize("n, chunk_size", [(1, 4), (37, 8), (40, 8), (33, 1), (21, 64)],
                         ids=["N1", "N37-C8", "N40-C8", "N33-C1", "N21-C64"])
def test_chunkwise_equals_recurrent(n, chunk_size, decay):
    rng = np.random.default_rng(n * 7 + chunk_size)
    q, k, v, grad_o, g = make_problem(rng, (2, 3), n, 5, 3, decay)
    recurrent = la.gated_linear_attention_vjp(q, k, v, grad_o, g, form="recurrent")
    chunkwise = la.gated_linear_attention_vjp(q, k, v, grad_o, g, form="chunkwise", chunk_size=chunk_size)
    for a, e in zip(chunkwise[:3], recurrent[:3]):
        assert_close(a, e, what=f"chunkwise vs recurrent, {decay}")
    if g is not None:  # dg_0 is 0 up to rounding (g_0 decays the empty state): compare absolutely
        scale = np.abs(q * recurrent[0]).sum()
        np.testing.assert_allclose(chunkwise[3], recurrent[3], rtol=1e-10, atol=1e-12 * scale)


def test_log_decay_gradient_is_the_reverse_cumulative_sum():
    rng = np.random.default_rng(1203)
    q, k, v, grad_o, g = make_problem(rng, (), 29, 4, 6, "scalar")
    dq, dk, _, dg = la.gated_linear_attention_vjp(q, k, v, grad_o, g, chunk_size=5)
    per_step = (q * dq - k * dk).sum(-1)  # Σ_r (q ⊙ dq − k ⊙ dk)  [N]
    expected = np.array([per_step[t:].sum() for t in range(29)])
    assert_close(dg, expected, what="dlog_decay")
    assert abs(dg[0] - per_step.sum()) < 1e-9 * np.abs(per_step).sum()


def test_float32_stays_float32_and_close_to_float64():
    rng = np.random.default_rng(1204)
    q, k, v, grad_o, g = make_problem(rng, (3,), 45, 8, 5, "vector")
    exact = la.gated_linear_attention_vjp(q, k, v, grad_o, g, chunk_size=16)
    single = la.gated_linear_attention_vjp(*(x.astype(np.float32) for x in (q, k, v, grad_o, g)),
                                           chunk_size=16)
    for a, e in zip(single, exact):
        assert a.dtype == np.float32
        assert_close(a, e, rtol=1e-4)


def test_broadcast_log_decay_gets_a_gradient_of_its_own_shape():
    rng = np.random.default_rng(1205)
    q, k, v, grad_o, _ = make_problem(rng, (2, 3), 13, 4, 2, "none")
    shared = -rng.uniform(0, 0.5, (1, 3, 13))  # one decay per head, shared by the batch
    dg = la.gated_linear_attention_vjp(q, k, v, grad_o, shared, chunk_size=4)[3]
    full = la.gated_linear_attention_vjp(q, k, v, grad_o, np.broadcast_to(shared, (2, 3, 13)).copy(),
                                         chunk_size=4)[3]
    assert dg.shape == (1, 3, 13)
    assert_close(dg, full.sum(0, keepdims=True))


def test_no_decay_gives_the_causal_product_gradients():
    # Katharopoulos et al. (2020, §3.3.1): dq_i = S_i do_i, dk_j = (Σ_{i>=j} q_i do_iᵀ) v_j
    rng = np.random.default_rng(1206)
    q, k, v, grad_o, _ = make_problem(rng, (), 17, 3, 5, "none")
    dq, dk, dv = la.gated_linear_attention_vjp(q, k, v, grad_o, scale=1.0, form="recurrent")
    mask = np.tril(np.ones((17, 17)))
    assert_close(dq, (mask * (grad_o @ v.T)) @ k)
    assert_close(dk, (mask * (grad_o @ v.T)).T @ q)
    assert_close(dv, (mask * (q @ k.T)).T @ grad_o)


def torch_autograd(torch, q, k, v, grad_o, g, forward):
    tensors = [torch.tensor(x, requires_grad=True) for x in (q, k, v) + (() if g is None else (g,))]
    out = forward(*tensors)
    out.backward(torch.tensor(grad_o))
    return [t.grad.numpy() for t in tensors]


def naive_torch_gated(torch, q, k, v, g=None, scale=1.0):
    """The forward as a plain torch loop, independent of the package."""
    state = torch.zeros(q.shape[:-2] + (q.shape[-1], v.shape[-1]), dtype=q.dtype)
    outs = []
    for t in range(q.shape[-2]):
        if g is not None:
            decay = torch.exp(g[..., t]) if g.ndim == q.ndim - 1 else torch.exp(g[..., t, :])
            state = (decay[..., None, None] if g.ndim == q.ndim - 1 else decay[..., :, None]) * state
        state = state + k[..., t, :, None] * v[..., t, None, :]
        outs.append(scale * torch.einsum("...k,...kv->...v", q[..., t, :], state))
    return torch.stack(outs, dim=-2)


@pytest.mark.parametrize("decay", DECAYS)
def test_matches_torch_autograd_of_a_plain_loop(decay):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1207)
    q, k, v, grad_o, g = make_problem(rng, (2,), 23, 4, 3, decay)
    expected = torch_autograd(torch, q, k, v, grad_o, g,
                              lambda *t: naive_torch_gated(torch, *t, scale=0.5))
    got = la.gated_linear_attention_vjp(q, k, v, grad_o, g, scale=0.5, chunk_size=6)
    for a, e in zip(got, expected):
        assert_close(a, e)


@pytest.mark.parametrize("decay", DECAYS)
@pytest.mark.parametrize("torch_form", ["recurrent", "parallel", "chunkwise"])
def test_matches_torch_autograd_through_the_package(torch_form, decay):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1208)
    q, k, v, grad_o, g = make_problem(rng, (2, 2), 37, 5, 4, decay)
    expected = torch_autograd(torch, q, k, v, grad_o, g, lambda *t: la.gated_linear_attention(
        *t[:3], t[3] if g is not None else None, form=torch_form, backend="torch", chunk_size=8))
    for form in VJP_FORMS:
        got = la.gated_linear_attention_vjp(q, k, v, grad_o, g, form=form, chunk_size=8)
        for name, a, e in zip(("dq", "dk", "dv", "dlog_decay"), got, expected):
            assert_close(a, e, what=f"{name}: vjp {form} vs autograd through torch {torch_form}")


@pytest.mark.parametrize("change, message", [
    ({"grad_o": np.zeros((2, 9, 5))}, "grad_o must have the output's shape"),
    ({"grad_o": np.zeros((2, 9, 4), np.float32)}, "grad_o must have q's dtype"),
    ({"grad_o": np.full((2, 9, 4), np.nan)}, "grad_o must be finite"),
    ({"grad_o": "zeros"}, "grad_o must be a float32 or float64 array"),
    ({"form": "parallel"}, "form must be one of 'recurrent', 'chunkwise'"),
    ({"chunk_size": 0}, "chunk_size must be a positive int"),
    ({"log_decay": np.full((2, 9), 0.1)}, "log_decay must be <= 0"),
    ({"log_decay": np.zeros((2, 8))}, "log_decay of shape \\[2, 8\\] does not broadcast"),
    ({"scale": -1.0}, "scale must be finite and > 0"),
    ({"k": np.zeros((2, 9, 4))}, "k must have the same feature size"),
], ids=["grad_o-shape", "grad_o-dtype", "grad_o-nan", "grad_o-type", "form", "chunk", "decay-sign",
        "decay-shape", "scale", "k-width"])
def test_bad_input_is_named(change, message):
    rng = np.random.default_rng(1209)
    q, k = rng.standard_normal((2, 2, 9, 3))
    args = {"q": q, "k": k, "v": rng.standard_normal((2, 9, 4)), "grad_o": rng.standard_normal((2, 9, 4)),
            "log_decay": None, "scale": None, "form": "chunkwise", "chunk_size": 4, **change}
    with pytest.raises((ValueError, TypeError), match=message):
        la.gated_linear_attention_vjp(args.pop("q"), args.pop("k"), args.pop("v"), args.pop("grad_o"),
                                      args.pop("log_decay"), **args)


def test_torch_tensors_are_refused():
    torch = pytest.importorskip("torch")
    x = torch.zeros(5, 3, dtype=torch.float64)
    with pytest.raises(TypeError, match="plain numpy"):
        la.gated_linear_attention_vjp(x, x, x, x)
