"""One reference for numpy and torch: the forms of :mod:`lattn_edu.gated` and :mod:`lattn_edu.delta`
are written once against the array API, and the torch backend runs those very functions on
tensors. A numpy call and a torch call give the same numbers, tensors stay tensors (dtype and
device), and autograd through the shared code gives the gradients of the package's hand-written
backward passes (which are checked against central differences in test_gradients.py and
test_delta_gradients.py)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import lattn_edu as la  # noqa: E402
from lattn_edu import delta, gated  # noqa: E402
from lattn_edu.backends import torch_backend  # noqa: E402

from conftest import assert_close  # noqa: E402
from gated_inputs import DECAYS, delta_inputs, gated_inputs  # noqa: E402

GATED_FORMS, DELTA_FORMS = ("recurrent", "parallel", "chunkwise"), ("recurrent", "chunkwise")


def tensors(*arrays, dtype=None, requires_grad=False):
    return [None if a is None else torch.tensor(a, dtype=dtype, requires_grad=requires_grad) for a in arrays]


def gated_form(form):
    return getattr(gated, f"{form}_gated_linear_attention")


def delta_form(form):
    return getattr(delta, f"{form}_delta_rule")


def test_the_torch_backend_is_the_shared_reference():
    """No second copy: the backend's forms are the reference functions, and it has no
    plain linear-attention kernels of its own."""
    assert {name: gated_form(name) for name in GATED_FORMS} == torch_backend.GATED_FORMS
    assert {name: delta_form(name) for name in DELTA_FORMS} == torch_backend.DELTA_FORMS
    assert not hasattr(torch_backend, "FORMS")


@pytest.mark.parametrize("initial", [False, True], ids=["zero-state", "initial-state"])
@pytest.mark.parametrize("decay", DECAYS)
@pytest.mark.parametrize("form", GATED_FORMS)
def test_gated_numpy_and_torch_calls_give_the_same_numbers(form, decay, initial, rng):
    q, k, v, g, s0 = gated_inputs(rng, lead=(2, 3), n=29, decay=decay, initial_state=initial)
    expected = gated_form(form)(q, k, v, g, 0.7, s0, 6)
    actual = gated_form(form)(*tensors(q, k, v, g), 0.7, *tensors(s0), 6)
    for got, want in zip(actual, expected):
        assert isinstance(got, torch.Tensor) and isinstance(want, np.ndarray)
        assert_close(got, want, rtol=1e-13)


@pytest.mark.parametrize("gated_decay", [False, True], ids=["deltanet", "gated"])
@pytest.mark.parametrize("form", DELTA_FORMS)
def test_delta_numpy_and_torch_calls_give_the_same_numbers(form, gated_decay, rng):
    """The chunkwise form solves for T by forward substitution on numpy and by one triangular
    solve on torch: the same numbers up to rounding."""
    q, k, v, beta, g, s0 = delta_inputs(rng, lead=(2, 3), n=29, gated=gated_decay)
    expected = delta_form(form)(q, k, v, beta, g, 0.7, s0, 6)
    actual = delta_form(form)(*tensors(q, k, v, beta, g), 0.7, *tensors(s0), 6)
    for got, want in zip(actual, expected):
        assert isinstance(got, torch.Tensor)
        assert_close(got, want, rtol=1e-13)


def test_helpers_take_tensors_and_agree_with_numpy(rng):
    q, k, v, beta, g, _ = delta_inputs(rng, lead=(3,), n=9)
    t_q, t_k, t_beta, t_g = tensors(q, k, beta, g)
    np.testing.assert_allclose(la.segment_sums(t_g).numpy(), la.segment_sums(g), rtol=1e-15)  # -inf above
    assert_close(la.decay_mask(t_g), la.decay_mask(g), rtol=1e-15)
    assert_close(la.ut_transform(t_k, t_beta, t_g), la.ut_transform(k, beta, g), rtol=1e-13)
    vector = gated.per_key_log_decay(-rng.uniform(0, 1, q.shape), q)  # one mask per key channel
    assert_close(gated.gated_weights(t_q, t_k, torch.tensor(vector)), gated.gated_weights(q, k, vector),
                 rtol=1e-13)


def test_helpers_refuse_nan_in_tensors_by_name():
    with pytest.raises(ValueError, match="log_decay must hold no NaN"):
        la.segment_sums(torch.tensor([-0.5, float("nan"), -1.0]))
    with pytest.raises(ValueError, match="beta must be finite"):
        la.ut_transform(torch.ones(3, 2), torch.tensor([1.0, float("inf"), 0.5]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_tensors_keep_their_dtype_in_every_form(dtype, rng):
    q, k, v, g, s0 = tensors(*gated_inputs(rng, lead=(2,), n=11, decay="vector"), dtype=dtype)
    for form in GATED_FORMS:
        out, state = gated_form(form)(q, k, v, g, 0.5, s0, 4)
        assert out.dtype == state.dtype == dtype and out.shape == v.shape, form
    q, k, v, beta, g, s0 = tensors(*delta_inputs(rng, lead=(2,), n=11), dtype=dtype)
    for form in DELTA_FORMS:
        out, state = delta_form(form)(q, k, v, beta, g, 0.5, s0, 4)
        assert out.dtype == state.dtype == dtype and state.shape == s0.shape, form
    assert la.ut_transform(k[..., :4, :], beta[..., :4]).dtype == dtype


@pytest.mark.parametrize("decay", DECAYS)
@pytest.mark.parametrize("form", GATED_FORMS)
def test_gated_autograd_equals_the_numpy_vjp(form, decay, rng):
    """Backpropagating dO through the shared code on tensors gives dq, dk, dv (and dg, a scalar or
    a vector decay's) of la.gated_linear_attention_vjp, in float64."""
    q, k, v, g, _ = gated_inputs(rng, lead=(2, 3), n=23, decay=decay, initial_state=False)
    grad_o = rng.standard_normal(v.shape)
    inputs = tensors(q, k, v, g, requires_grad=True)
    leaves = [x for x in inputs if x is not None]
    out = la.gated_linear_attention(*inputs, scale=0.6, form=form, backend="torch", chunk_size=7)
    grads = torch.autograd.grad(out, leaves, grad_outputs=torch.tensor(grad_o))
    expected = la.gated_linear_attention_vjp(q, k, v, grad_o, g, scale=0.6, form="recurrent")
    assert len(grads) == len(expected)
    for name, got, want in zip(("dq", "dk", "dv", "dg"), grads, expected):
        assert_close(got, want, what=name)


@pytest.mark.parametrize("gated_decay", [False, True], ids=["deltanet", "gated"])
@pytest.mark.parametrize("form", DELTA_FORMS)
def test_delta_autograd_equals_the_numpy_vjp(form, gated_decay, rng):
    q, k, v, beta, g, _ = delta_inputs(rng, lead=(2, 3), n=23, gated=gated_decay, initial_state=False)
    grad_o = rng.standard_normal(v.shape)
    inputs = tensors(q, k, v, beta, g, requires_grad=True)
    leaves = [x for x in inputs if x is not None]
    out = la.delta_rule(*inputs, scale=0.6, form=form, backend="torch", chunk_size=7)
    grads = torch.autograd.grad(out, leaves, grad_outputs=torch.tensor(grad_o))
    expected = la.delta_rule_vjp(q, k, v, beta, grad_o, g, scale=0.6, form="recurrent")
    assert len(grads) == len(expected)
    for name, got, want in zip(("dq", "dk", "dv", "dbeta", "dg"), grads, expected):
        assert_close(got, want, what=name)


def test_ut_transform_gradients_match_central_differences(rng):
    """torch's triangular solve, differentiated by autograd, against central differences."""
    _, k, _, beta, g, _ = delta_inputs(rng, lead=(2,), n=5, d_k=3)
    assert torch.autograd.gradcheck(la.ut_transform, tensors(k, beta, g, requires_grad=True))
