"""la.linear_attention on torch tensors (backend='torch'): every form against the numpy reference."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lattn_edu as la
from conftest import assert_close
from naive import make_qkv
from lattn_edu.backends import get_backend

torch = pytest.importorskip("torch")

FORMS = ("quadratic", "parallel", "recurrent", "chunkwise")
DTYPES = [pytest.param(np.float64, id="float64"), pytest.param(np.float32, id="float32")]
CAUSAL = [pytest.param(False, id="full"), pytest.param(True, id="causal")]
LEADS = [pytest.param((), id="lead=none"), pytest.param((2,), id="lead=B"),
         pytest.param((2, 3), id="lead=BH")]
FEATURE_MAPS = ("elu+1", "relu", "favor+")


def feature_map(name, d):
    """A name the dispatcher knows, or FAVOR+ with m != d (q, k scaled by d**-0.25 by the caller)."""
    return la.FavorPlus(d, 2 * d + 1, seed=7) if name == "favor+" else name


def check_torch_matches_numpy(q, k, v, **options):
    """Run the torch backend on tensors and the numpy reference on arrays; assert they agree.

    The reference runs in float64 on the same values, so a float32 result is measured
    against the exact answer (tolerance by the result's dtype, see conftest).
    """
    expected = la.linear_attention(*(x.astype(np.float64) for x in (q, k, v)), backend="numpy",
                                   **options)
    tensors = [torch.from_numpy(x) for x in (q, k, v)]
    actual = la.linear_attention(*tensors, backend="torch", **options)
    assert isinstance(actual, torch.Tensor)
    assert actual.dtype == tensors[2].dtype
    assert_close(actual, expected, what=str(options))
    return actual


@pytest.mark.parametrize("n", [1, 2, 63, 100, 257], ids=lambda n: f"N={n}")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", CAUSAL)
@pytest.mark.parametrize("form", FORMS)
def test_form_matches_numpy_reference(rng, form, causal, dtype, n):
    q, k, v = make_qkv(rng, n=n, dtype=dtype)
    check_torch_matches_numpy(q, k, v, form=form, causal=causal, chunk_size=7)


@pytest.mark.parametrize("lead", LEADS)
@pytest.mark.parametrize("causal", CAUSAL)
@pytest.mark.parametrize("form", FORMS)
def test_leading_axes(rng, form, causal, lead):
    q, k, v = make_qkv(rng, lead=lead, n=100, d=4, d_v=6)
    out = check_torch_matches_numpy(q, k, v, form=form, causal=causal, chunk_size=64)
    assert out.shape == lead + (100, 6)


@pytest.mark.parametrize("n", [63, 100, 257], ids=lambda n: f"N={n}")
@pytest.mark.parametrize("chunk_size", [1, 7, 64, 300], ids=lambda c: f"C={c}")
@pytest.mark.parametrize("causal", CAUSAL)
def test_chunkwise_chunk_sizes(rng, causal, chunk_size, n):
    """Chunk sizes that do not divide N (padded last chunk), C = 1, and C > N (one chunk)."""
    q, k, v = make_qkv(rng, lead=(2,), n=n)
    check_torch_matches_numpy(q, k, v, form="chunkwise", causal=causal, chunk_size=chunk_size)


@pytest.mark.parametrize("n_q, n", [(1, 63), (100, 7), (257, 100)], ids=lambda x: str(x))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", FORMS)
def test_non_causal_query_length_differs(rng, form, dtype, n_q, n):
    q, k, v = make_qkv(rng, n=n, n_q=n_q, dtype=dtype)
    out = check_torch_matches_numpy(q, k, v, form=form, causal=False, chunk_size=7)
    assert out.shape == (2, 3, n_q, 3)


@pytest.mark.parametrize("name", FEATURE_MAPS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", CAUSAL)
@pytest.mark.parametrize("form", FORMS)
def test_feature_maps(rng, form, causal, dtype, name):
    d = 5
    q, k, v = make_qkv(rng, n=100, d=d, dtype=dtype)
    q, k = q * dtype(d ** -0.25), k * dtype(d ** -0.25)
    check_torch_matches_numpy(q, k, v, feature_map=feature_map(name, d), form=form,
                              causal=causal, chunk_size=7)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, variant", [("elu+1", "__call__"), ("relu", "__call__"),
                                           ("favor+", "__call__"), ("favor+", "rescaled_q"),
                                           ("favor+", "rescaled_k")],
                         ids=lambda x: x.strip("_"))
def test_feature_maps_on_tensors_match_numpy(rng, name, variant, dtype):
    """The shared feature maps give tensors of the input's dtype, with the same features as numpy."""
    x = rng.standard_normal((2, 63, 5)).astype(dtype)
    phi = la.FavorPlus(5, 11, seed=7) if name == "favor+" else la.feature_maps.FEATURE_MAPS[name]
    rescaled = {"rescaled_q": lambda x: phi.rescaled_features(x, x)[0],
                "rescaled_k": lambda x: phi.rescaled_features(x, x)[1]}
    apply = rescaled[variant] if variant in rescaled else getattr(phi, variant)
    features = apply(torch.from_numpy(x))
    assert isinstance(features, torch.Tensor) and features.dtype == torch.from_numpy(x).dtype
    assert_close(features, apply(x.astype(np.float64)), what=f"{name}.{variant}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", FORMS)
def test_tensors_in_tensors_out(rng, form, dtype):
    q, k, v = (torch.from_numpy(x) for x in make_qkv(rng, n=10, dtype=dtype))
    out = la.linear_attention(q, k, v, form=form, backend="torch", causal=True, chunk_size=3)
    assert isinstance(out, torch.Tensor)
    assert (out.dtype, out.device, out.shape) == (v.dtype, v.device, (2, 3, 10, 3))
    assert not out.requires_grad


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", FORMS)
def test_numpy_in_numpy_out(rng, form, dtype):
    q, k, v = make_qkv(rng, n=10, dtype=dtype)
    out = la.linear_attention(q, k, v, form=form, backend="torch", causal=True, chunk_size=3)
    assert isinstance(out, np.ndarray) and out.dtype == dtype
    assert_close(out, la.linear_attention(q, k, v, form=form, causal=True, chunk_size=3))


def test_numpy_views_and_read_only_arrays(rng):
    """Reversed (negative-stride) and read-only arrays convert without error or warning,
    and the caller's arrays are left untouched."""
    q, k, v = make_qkv(rng, n=20)
    q = q[..., ::-1, :]
    k.setflags(write=False)
    originals = [x.copy() for x in (q, k, v)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = la.linear_attention(q, k, v, form="chunkwise", backend="torch", causal=True, chunk_size=6)
    assert_close(out, la.linear_attention(q, k, v, form="chunkwise", causal=True, chunk_size=6))
    for x, original in zip((q, k, v), originals):
        np.testing.assert_array_equal(x, original)


def _gradients(q, k, v, **options):
    """Gradients of a fixed random projection of the output with respect to (q, k, v)."""
    leaves = [torch.from_numpy(x).requires_grad_() for x in (q, k, v)]
    out = la.linear_attention(*leaves, backend="torch", **options)
    cotangent = torch.from_numpy(np.random.default_rng(5).standard_normal(tuple(out.shape)))
    (out * cotangent).sum().backward()
    return [leaf.grad for leaf in leaves]


@pytest.mark.parametrize("name", ["elu+1", "favor+"])
@pytest.mark.parametrize("causal", CAUSAL)
@pytest.mark.parametrize("form", FORMS)
def test_gradients_flow_and_agree(rng, form, causal, name):
    """backward() reaches q, k and v with finite gradients, equal to those of the quadratic form."""
    q, k, v = make_qkv(rng, lead=(2,), n=63, d=4)
    options = dict(feature_map=feature_map(name, 4), causal=causal, chunk_size=7)
    grads = _gradients(q, k, v, form=form, **options)
    expected = _gradients(q, k, v, form="quadratic", **options)
    for grad, reference, role in zip(grads, expected, "qkv"):
        assert grad is not None and torch.isfinite(grad).all(), f"d/d{role} missing or not finite"
        assert_close(grad, reference, what=f"{form} d/d{role}")


@pytest.mark.parametrize("causal", CAUSAL)
@pytest.mark.parametrize("form", FORMS)
def test_gradcheck(rng, form, causal):
    """Autograd's gradients match finite differences (float64, small sizes)."""
    leaves = [torch.from_numpy(x).requires_grad_() for x in make_qkv(rng, lead=(2,), n=6, d=3, d_v=2)]

    def attention(q, k, v):
        return la.linear_attention(q, k, v, form=form, backend="torch", causal=causal, chunk_size=4)

    assert torch.autograd.gradcheck(attention, leaves)


def test_chunkwise_gradients_finite_with_zero_eps(rng):
    """The padding of the last chunk must not leak 0/0 into the gradients when eps = 0."""
    q, k, v = make_qkv(rng, n=10)
    grads = _gradients(q, k, v, form="chunkwise", causal=True, chunk_size=4, eps=0.0)
    assert all(torch.isfinite(grad).all() for grad in grads)


def test_backend_protocol():
    """The contract is the gated family's forms and to_backend; linear attention has no kernels
    of its own (causal is the gated recurrence on [V | 1], non-causal two products)."""
    backend = get_backend("torch")
    assert "torch" in la.available_backends()
    assert tuple(backend.GATED_FORMS) == la.gated.GATED_FORMS
    assert tuple(backend.DELTA_FORMS) == la.delta.DELTA_FORMS
    assert callable(backend.to_backend) and not hasattr(backend, "FORMS")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", CAUSAL)
@pytest.mark.parametrize("form", FORMS)
def test_cuda_matches_cpu(rng, form, causal, dtype):
    cpu = [torch.from_numpy(x) for x in make_qkv(rng, n=100, dtype=dtype)]
    options = dict(form=form, backend="torch", causal=causal, chunk_size=7)
    expected = la.linear_attention(*cpu, **options)
    actual = la.linear_attention(*(x.to("cuda") for x in cpu), **options)
    assert actual.device.type == "cuda" and actual.dtype == expected.dtype
    assert_close(actual, expected, what=f"cuda {form}")


@given(lead=st.lists(st.integers(1, 3), max_size=2).map(tuple), n=st.integers(1, 40),
       n_q=st.integers(1, 40), d=st.integers(1, 6), d_v=st.integers(1, 6),
       form=st.sampled_from(FORMS), causal=st.booleans(), chunk_size=st.integers(1, 20),
       dtype=st.sampled_from([np.float64, np.float32]), seed=st.integers(0, 2**32 - 1))
def test_property_torch_equals_numpy(lead, n, n_q, d, d_v, form, causal, chunk_size, dtype, seed):
    q, k, v = make_qkv(np.random.default_rng(seed), lead=lead, n=n, d=d, d_v=d_v, dtype=dtype,
                       n_q=n if causal else n_q)
    check_torch_matches_numpy(q, k, v, form=form, causal=causal, chunk_size=chunk_size)
