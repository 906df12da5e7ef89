"""delta_rule_vjp: against finite differences of the numpy forward, torch autograd through the
package's torch forward (float64), flash-linear-attention's naive references (float32), both forms
against each other, broadcast step sizes, and bad input (lattn_edu.delta_gradients)."""

from __future__ import annotations


import numpy as np
import pytest

import lattn_edu as la
from conftest import assert_close, central_differences
from fla_naive import load

VJP_FORMS = ("recurrent", "chunkwise")
NAMES = ("dq", "dk", "dv", "dbeta", "dlog_decay")


def make_problem(rng, lead, n, d_k, d_v, gated, dtype=np.float64):
    """Unit keys (the regime the delta rule is meant for), β in [0, 2], g in [−0.7, 0]."""
    q, k = (rng.standard_normal(lead + (n, d_k)) for _ in range(2))
    k /= np.linalg.norm(k, axis=-1, keepdims=True)
    v, grad_o = (rng.standard_normal(lead + (n, d_v)) for _ in range(2))
    beta = rng.uniform(0, 2, lead + (n,))
    g = -rng.uniform(0, 0.7, lead + (n,)) if gated else None
    return tuple(None if x is None else x.astype(dtype) for x in (q, k, v, beta, grad_o, g))


def loss(q, k, v, beta, g, grad_o, scale):
    """ℓ = Σ O ⊙ dO, whose gradient with respect to O is dO: the vjp is its gradient."""
    return float((la.delta_rule(q, k, v, beta, g, scale=scale, form="recurrent") * grad_o).sum())


def finite_differences(q, k, v, beta, g, grad_o, scale, step=1e-6):
    args = [q, k, v, beta] + ([] if g is None else [g])
    return central_differences(
        lambda *a: loss(*a[:4], a[4] if g is not None else None, grad_o, scale), args, step)


@pytest.mark.parametrize("gated", [False, True], ids=["deltanet", "gated"])
@pytest.mark.parametrize("form", VJP_FORMS)
def test_matches_finite_differences(form, gated):
    rng = np.random.default_rng(1210)
    q, k, v, beta, grad_o, g = make_problem(rng, (2,), 7, 3, 4, gated)
    beta = np.minimum(beta, 1.9)  # room for the ± step inside [0, 2]
    got = la.delta_rule_vjp(q, k, v, beta, grad_o, g, scale=0.7, form=form, chunk_size=3)
    expected = finite_differences(q, k, v, beta, g, grad_o, scale=0.7)
    assert len(got) == (5 if gated else 4)
    for name, a, e in zip(NAMES, got, expected):
        assert_close(a, e, rtol=1e-7, what=f"{name} ({form}, gated={gated})")


def torch_autograd(q, k, v, beta, g, grad_o, scale=None):
    torch = pytest.importorskip("torch")
    leaves = [torch.tensor(x, requires_grad=True) for x in (q, k, v, beta) + (() if g is None else (g,))]
    out = la.delta_rule(*leaves, scale=scale, backend="torch", form="recurrent")
    out.backward(torch.tensor(grad_o))
    return [leaf.grad.numpy() for leaf in leaves]


@pytest.mark.parametrize("gated", [False, True], ids=["deltanet", "gated"])
@pytest.mark.parametrize("n, chunk_size", [(1, 4), (37, 8), (40, 8), (33, 1), (21, 64)],
                         ids=["N1", "N37-C8", "N40-C8", "N33-C1", "N21-C64"])
@pytest.mark.parametrize("form", VJP_FORMS)
def test_matches_torch_autograd(form, n, chunk_size, gated):
    rng = np.random.default_rng(1211 + n)
    q, k, v, beta, grad_o, g = make_problem(rng, (2, 3), n, 5, 3, gated)
    expected = torch_autograd(q, k, v, beta, g, grad_o)
    got = la.delta_rule_vjp(q, k, v, beta, grad_o, g, form=form, chunk_size=chunk_size)
    for name, a, e in zip(NAMES, got, expected):
        assert a.shape == e.shape and a.dtype == np.float64
        assert_close(a, e, rtol=1e-8, what=f"{name} ({form}, N={n}, C={chunk_size})")


def test_a_scale_and_keys_that_are_not_unit():
    rng = np.random.default_rng(1212)
    q, k, v, beta, grad_o, g = make_problem(rng, (3,), 19, 4, 6, gated=True)
    k *= rng.uniform(0.5, 1.2, k.shape[:-1] + (1,))
    expected = torch_autograd(q, k, v, beta, g, grad_o, scale=1.3)
    for form in VJP_FORMS:
        got = la.delta_rule_vjp(q, k, v, beta, grad_o, g, scale=1.3, form=form, chunk_size=5)
        for name, a, e in zip(NAMES, got, expected):
            assert_close(a, e, rtol=1e-8, what=f"{name} ({form})")


def test_forms_agree_in_float32():
    rng = np.random.default_rng(1213)
    problem = make_problem(rng, (2,), 50, 6, 5, gated=True, dtype=np.float32)
    q, k, v, beta, grad_o, g = problem
    recurrent = la.delta_rule_vjp(q, k, v, beta, grad_o, g, form="recurrent")
    chunkwise = la.delta_rule_vjp(q, k, v, beta, grad_o, g, form="chunkwise", chunk_size=16)
    reference = la.delta_rule_vjp(*(x.astype(np.float64) for x in (q, k, v, beta, grad_o, g)))
    for name, a, b, e in zip(NAMES, recurrent, chunkwise, reference):
        assert a.dtype == b.dtype == np.float32
        assert_close(a, e, rtol=1e-4, what=f"{name} recurrent")
        assert_close(b, e, rtol=1e-4, what=f"{name} chunkwise")


def test_broadcast_step_sizes_and_decays_get_summed_gradients():
    """β [1, H, N] shared by the batch and g [B, 1, N] by the heads: their gradients are summed."""
    rng = np.random.default_rng(1214)
    q, k, v, _, grad_o, _ = make_problem(rng, (2, 3), 13, 4, 3, gated=False)
    beta, g = rng.uniform(0, 1, (1, 3, 13)), -rng.uniform(0, 0.5, (2, 1, 13))
    shared = la.delta_rule_vjp(q, k, v, beta, grad_o, g, form="chunkwise", chunk_size=4)
    full = la.delta_rule_vjp(q, k, v, np.broadcast_to(beta, (2, 3, 13)).copy(), grad_o,
                             np.broadcast_to(g, (2, 3, 13)).copy())
    assert shared[3].shape == (1, 3, 13) and shared[4].shape == (2, 1, 13)
    assert_close(shared[3], full[3].sum(0, keepdims=True), rtol=1e-10)
    assert_close(shared[4], full[4].sum(1, keepdims=True), rtol=1e-10)


def test_first_decay_gradient_vanishes():
    """g_1 only multiplies the empty state S_0 = 0, so no output depends on it."""
    rng = np.random.default_rng(1215)
    q, k, v, beta, grad_o, g = make_problem(rng, (), 29, 4, 3, gated=True)
    d_g = la.delta_rule_vjp(q, k, v, beta, grad_o, g)[4]
    assert abs(d_g[0]) < 1e-12 * np.abs(d_g).max() and np.abs(d_g[1:]).min() > 0


# flash-linear-attention's naive references (tests/fla_naive.py): DeltaNet's is [B, H, T, D], Gated
# DeltaNet's [B, T, H, D]; both scale q by d_k^-1/2 and compute in float32.
def fla_gradients(run, arrays, grad_o, to_theirs, from_theirs):
    """Autograd through one of fla's references, with float32 leaves in their layout."""
    torch = pytest.importorskip("torch")
    leaves = [to_theirs(torch.from_numpy(x).float()).requires_grad_() for x in arrays]
    out = run(*leaves)
    out.backward(to_theirs(torch.from_numpy(grad_o).float()))
    return [from_theirs(leaf.grad).double().numpy() for leaf in leaves]


@pytest.mark.parametrize("form", VJP_FORMS)
def test_matches_fla_deltanet(form):
    module = load("delta_rule/naive.py")
    rng = np.random.default_rng(1216)
    q, k, v, beta, grad_o, _ = make_problem(rng, (2, 3), 45, 6, 5, gated=False)
    theirs = fla_gradients(lambda *x: module.delta_rule_recurrence(*x)[0], (q, k, v, beta), grad_o,
                           lambda t: t, lambda t: t)
    ours = la.delta_rule_vjp(q, k, v, beta, grad_o, form=form, chunk_size=16)
    for name, a, e in zip(NAMES, ours, theirs):
        assert_close(a, e, rtol=1e-4, what=f"{name} ({form})")


@pytest.mark.parametrize("form", VJP_FORMS)
def test_matches_fla_gated_deltanet(form):
    module = load("gated_delta_rule/naive.py")
    rng = np.random.default_rng(1217)
    q, k, v, beta, grad_o, g = make_problem(rng, (2, 3), 45, 6, 5, gated=True)
    bthd = lambda t: t.transpose(1, 2)  # noqa: E731  ours [B, H, T, ·] <-> theirs [B, T, H, ·]
    theirs = fla_gradients(lambda *x: module.naive_recurrent_gated_delta_rule(*x)[0], (q, k, v, beta, g),
                           grad_o, bthd, bthd)
    ours = la.delta_rule_vjp(q, k, v, beta, grad_o, g, form=form, chunk_size=16)
    for name, a, e in zip(NAMES, ours, theirs):
        assert_close(a, e, rtol=1e-4, what=f"{name} ({form})")


def test_bad_input_is_named():
    rng = np.random.default_rng(1218)
    q, k, v, beta, grad_o, g = make_problem(rng, (2,), 6, 3, 2, gated=True)
    with pytest.raises(ValueError, match="grad_o must have the output's shape"):
        la.delta_rule_vjp(q, k, v, beta, grad_o[..., :1], g)
    with pytest.raises(ValueError, match="grad_o"):
        la.delta_rule_vjp(q, k, v, beta, np.where(grad_o > 0, np.nan, grad_o), g)
    with pytest.raises(ValueError, match="beta must lie in"):
        la.delta_rule_vjp(q, k, v, beta + 2.5, grad_o, g)
    with pytest.raises(ValueError, match="log_decay must have shape"):
        la.delta_rule_vjp(q, k, v, beta, grad_o, -np.ones(q.shape))
    with pytest.raises(ValueError, match="log_decay must be <= 0"):
        la.delta_rule_vjp(q, k, v, beta, grad_o, -g)
    with pytest.raises(ValueError, match="form"):
        la.delta_rule_vjp(q, k, v, beta, grad_o, form="parallel")
    with pytest.raises(TypeError, match="grad_o must have q's dtype"):
        la.delta_rule_vjp(q, k, v, beta, grad_o.astype(np.float32))
    with pytest.raises(TypeError, match="chunk_size"):
        la.delta_rule_vjp(q, k, v, beta, grad_o, chunk_size=2.0)


def test_torch_input_is_refused_by_name():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1219)
    q, k, v, beta, grad_o, _ = (torch.tensor(x) if x is not None else None
                                for x in make_problem(rng, (), 4, 3, 2, gated=False))
    with pytest.raises(TypeError, match="delta_rule_vjp is plain numpy"):
        la.delta_rule_vjp(q, k, v, beta, grad_o)
