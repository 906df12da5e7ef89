"""Gated linear attention and the delta rule on torch tensors (the shared references of
lattn_edu.gated and lattn_edu.delta, run by the torch backend): autograd through every form,
tensors in and out on any device."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import lattn_edu as la  # noqa: E402

from conftest import assert_close  # noqa: E402
from gated_inputs import DECAYS, delta_inputs, gated_inputs  # noqa: E402

GATED_FORMS, DELTA_FORMS = ("recurrent", "parallel", "chunkwise"), ("recurrent", "chunkwise")


def tensors(*arrays, requires_grad=True, device="cpu"):
    return [None if a is None else torch.tensor(a, requires_grad=requires_grad, device=device) for a in arrays]


def loss_of(out, state):
    """A scalar that weighs every output and state entry differently (so no gradient cancels)."""
    return (out * torch.cos(out)).sum() + (state ** 2).sum()


def gated_call(form, chunk_size=4):
    return lambda q, k, v, g, s0: la.gated_linear_attention(q, k, v, g, form=form, backend="torch",
                                                            chunk_size=chunk_size, initial_state=s0,
                                                            return_state=True)


def delta_call(form, chunk_size=4):
    return lambda q, k, v, beta, g, s0: la.delta_rule(q, k, v, beta, g, form=form, backend="torch",
                                                      chunk_size=chunk_size, initial_state=s0,
                                                      return_state=True)


@pytest.mark.parametrize("decay", ["scalar", "vector"])
def test_recurrent_gated_gradients_match_finite_differences(decay, rng):
    """gradcheck in float64 on a tiny case: the scan's autograd is right, so it can judge the others."""
    inputs = tensors(*gated_inputs(rng, lead=(2,), n=4, d_k=2, d_v=2, decay=decay))
    assert torch.autograd.gradcheck(gated_call("recurrent"), inputs)


def test_recurrent_delta_gradients_match_finite_differences(rng):
    inputs = tensors(*delta_inputs(rng, lead=(2,), n=4, d_k=2, d_v=2))
    assert torch.autograd.gradcheck(delta_call("recurrent"), inputs)


@pytest.mark.parametrize("decay", DECAYS)
@pytest.mark.parametrize("form", ["parallel", "chunkwise"])
def test_gated_gradients_of_every_form_equal_the_scans(form, decay, rng):
    arrays = gated_inputs(rng, lead=(2, 3), n=23, decay=decay)
    grads = {}
    for name in ("recurrent", form):
        inputs = tensors(*arrays)
        leaves = [x for x in inputs if x is not None]
        grads[name] = torch.autograd.grad(loss_of(*gated_call(name, 7)(*inputs)), leaves)
    for got, expected in zip(grads[form], grads["recurrent"]):
        assert_close(got, expected)


@pytest.mark.parametrize("gated", [False, True], ids=["deltanet", "gated"])
def test_chunkwise_delta_gradients_equal_the_scans(gated, rng):
    arrays = delta_inputs(rng, lead=(2, 3), n=23, gated=gated)
    grads = {}
    for name in DELTA_FORMS:
        inputs = tensors(*arrays)
        leaves = [x for x in inputs if x is not None]
        grads[name] = torch.autograd.grad(loss_of(*delta_call(name, 7)(*inputs)), leaves)
    for got, expected in zip(grads["chunkwise"], grads["recurrent"]):
        assert_close(got, expected)


def test_no_nan_gradient_under_strong_decay(rng):
    """Masked entries are exp(-inf) = 0 with gradient 0: strong decay gives no inf * 0 anywhere."""
    q, k, v, g, s0 = tensors(*gated_inputs(rng, lead=(2,), n=40, decay="vector", strength=200.0))
    for form in GATED_FORMS:
        grads = torch.autograd.grad(loss_of(*gated_call(form, 16)(q, k, v, g, s0)), (q, k, v, g, s0))
        assert all(torch.isfinite(x).all() for x in grads), form


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_tensors_in_tensors_out_and_numpy_in_numpy_out(dtype, rng):
    q, k, v, g, s0 = gated_inputs(rng, decay="scalar", dtype=np.float64)
    q_t, k_t, v_t, g_t, s0_t = (torch.tensor(x, dtype=dtype) for x in (q, k, v, g, s0))
    out, state = la.gated_linear_attention(q_t, k_t, v_t, g_t, backend="torch", initial_state=s0_t,
                                           return_state=True)
    assert isinstance(out, torch.Tensor) and out.dtype == state.dtype == dtype
    out_np = la.gated_linear_attention(q, k, v, g, backend="torch")
    assert isinstance(out_np, np.ndarray) and out_np.dtype == np.float64
    assert_close(out_np, la.gated_linear_attention(q, k, v, g))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("decay", DECAYS)
def test_every_form_runs_on_cuda(decay, rng):
    arrays = gated_inputs(rng, decay=decay, dtype=np.float32)
    expected = la.gated_linear_attention(*arrays[:4], initial_state=arrays[4])
    for form in GATED_FORMS:
        out = gated_call(form)(*tensors(*arrays, requires_grad=False, device="cuda"))[0]
        assert out.device.type == "cuda"
        assert_close(out, expected)
    q, k, v, beta, g, s0 = delta_inputs(rng, dtype=np.float32)
    expected = la.delta_rule(q, k, v, beta, g, initial_state=s0)
    for form in DELTA_FORMS:
        assert_close(delta_call(form)(*tensors(q, k, v, beta, g, s0, requires_grad=False, device="cuda"))[0],
                     expected)
