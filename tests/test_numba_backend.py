"""Tests for lattn_edu.backends.numba_backend: every numba form against the numpy reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("numba")

import lattn_edu as la  # noqa: E402
from lattn_edu.backends import numba_backend, numba_softmax, numpy_backend  # noqa: E402

from conftest import assert_close  # noqa: E402
from naive import make_qkv  # noqa: E402

FORMS = ("quadratic", "parallel", "recurrent", "chunkwise")
DTYPES = (np.float64, np.float32)
D, D_V = 5, 3  # make_qkv's default sizes: d != d_v, both odd


def numba_and_numpy(q, k, v, **options):
    """The same call on both backends: (numba output, numpy reference output)."""
    return (la.linear_attention(q, k, v, backend="numba", **options),
            la.linear_attention(q, k, v, backend="numpy", **options))


def test_protocol_matches_numpy_backend():
    assert set(numba_backend.FORMS) == set(numpy_backend.FORMS) == set(FORMS)
    assert "numba" in la.available_backends()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("lead", [(), (2,), (2, 3)], ids=["no-batch", "batch", "batch-heads"])
@pytest.mark.parametrize("n", [1, 2, 63, 100, 257], ids=lambda n: f"N{n}")
@pytest.mark.parametrize("form", FORMS)
def test_form_matches_numpy(form, n, lead, causal, dtype, rng):
    q, k, v = make_qkv(rng, lead, n, dtype=dtype)
    got, want = numba_and_numpy(q, k, v, form=form, causal=causal)
    assert got.dtype == dtype
    assert_close(got, want, what=f"numba {form}")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("n", [63, 100, 257], ids=lambda n: f"N{n}")
@pytest.mark.parametrize("chunk_size", [1, 7, 64, 300], ids=lambda c: f"C{c}")
def test_chunkwise_chunk_sizes(chunk_size, n, causal, dtype, rng):
    q, k, v = make_qkv(rng, (2,), n, dtype=dtype)
    got, want = numba_and_numpy(q, k, v, form="chunkwise", causal=causal, chunk_size=chunk_size)
    assert_close(got, want, what=f"numba chunkwise C={chunk_size}")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("form", FORMS)
def test_fewer_queries_than_keys(form, dtype, rng):
    q, k, v = make_qkv(rng, (2, 3), 100, dtype=dtype, n_q=37)
    got, want = numba_and_numpy(q, k, v, form=form, chunk_size=16)
    assert got.shape == (2, 3, 37, D_V)
    assert_close(got, want, what=f"numba {form}, N_q=37, N=100")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("feature_map", ["elu+1", "relu", la.FavorPlus(D, 11)],
                         ids=["elu+1", "relu", "favor+m11"])
@pytest.mark.parametrize("form", FORMS)
def test_feature_maps(form, feature_map, causal, dtype, rng):
    q, k, v = make_qkv(rng, (2,), 63, dtype=dtype)
    q, k = q * dtype(D ** -0.25), k * dtype(D ** -0.25)  # the softmax scaling FAVOR+ expects
    got, want = numba_and_numpy(q, k, v, form=form, causal=causal, feature_map=feature_map,
                                chunk_size=16)
    assert_close(got, want, what=f"numba {form} with {feature_map}")


@pytest.mark.parametrize("form", FORMS)
def test_eps_guard_matches_numpy(form, rng):
    """relu zeroes whole feature rows, so some denominators are eps alone."""
    q, k, v = make_qkv(rng, (2,), 63)
    q[:, ::4] = -np.abs(q[:, ::4])  # queries with every feature 0 under relu
    got, want = numba_and_numpy(q, k, v, form=form, causal=True, feature_map="relu", eps=0.25)
    assert_close(got, want, what=f"numba {form}, eps=0.25")


@pytest.mark.parametrize("form", FORMS)
def test_vanished_denominator_is_reported_not_raised_by_numba(form):
    """eps=0 and a query with no features: 0/0 must reach linear_attention's NaN check
    (numba's default Python error model would raise ZeroDivisionError instead)."""
    q, k, v = -np.ones((4, 3)), np.ones((4, 3)), np.ones((4, 2))
    with pytest.raises(ValueError, match="denominator"):
        la.linear_attention(q, k, v, feature_map="relu", eps=0.0, form=form, backend="numba")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("form", FORMS)
def test_output_dtype_is_input_dtype(form, dtype, rng):
    q, k, v = make_qkv(rng, (), 10, dtype=dtype)
    assert la.linear_attention(q, k, v, form=form, backend="numba").dtype == dtype


def test_torch_tensors_are_refused():
    torch = pytest.importorskip("torch")
    q = torch.ones(4, 3, dtype=torch.float64)
    with pytest.raises(TypeError, match="backend='torch'"):
        la.linear_attention(q, q, q, backend="numba")


@given(lead=st.lists(st.integers(1, 3), max_size=2), n=st.integers(1, 40), n_q=st.integers(1, 40),
       d=st.integers(1, 6), d_v=st.integers(1, 6), causal=st.booleans(),
       form=st.sampled_from(FORMS), chunk_size=st.integers(1, 20),
       dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**32 - 1))
def test_numba_equals_numpy_on_random_shapes(lead, n, n_q, d, d_v, causal, form, chunk_size,
                                             dtype, seed):
    n_q = n if causal else n_q
    q, k, v = make_qkv(np.random.default_rng(seed), tuple(lead), n, dtype=dtype, n_q=n_q, d=d, d_v=d_v)
    got, want = numba_and_numpy(q, k, v, form=form, causal=causal, chunk_size=chunk_size)
    assert got.dtype == dtype
    assert_close(got, want, what=f"numba {form}")


def _blas_call(function, *arrays_and_options):
    """Run one of the backend's BLAS wrappers with its per-thread argument scratch."""
    dtype = arrays_and_options[0].dtype
    return function(*arrays_and_options, numba_backend._blas_arguments(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("beta", [0.0, 1.0])
def test_gemm_wrapper_matches_numpy(transpose_a, transpose_b, beta, dtype, rng):
    m, inner, n = 7, 5, 3  # all different, so a swapped dimension cannot pass
    a = rng.standard_normal((inner, m) if transpose_a else (m, inner)).astype(dtype)
    b = rng.standard_normal((n, inner) if transpose_b else (inner, n)).astype(dtype)
    out = rng.standard_normal((m, n)).astype(dtype)
    expected = (a.T if transpose_a else a) @ (b.T if transpose_b else b) + beta * out
    _blas_call(numba_backend._gemm, a, b, out, transpose_a, transpose_b, beta)
    assert_close(out, expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_lower_triangle_matmul_ignores_the_upper_triangle(dtype, rng):
    weights = rng.standard_normal((9, 9)).astype(dtype)
    values = rng.standard_normal((9, 4)).astype(dtype)
    expected = np.tril(weights) @ values
    weights[np.triu_indices(9, 1)] = np.nan  # any read of the masked half would show
    _blas_call(numba_backend._lower_triangle_matmul, weights, values)
    assert_close(values, expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("chunk_size", [1, 16, 64, 300], ids=lambda c: f"C{c}")
def test_fused_elu_chunkwise_equals_features_then_kernel(chunk_size, causal, dtype, rng):
    """The kernel that computes elu+1 itself matches the numpy reference fed la.elu_plus_one."""
    q, k, v = make_qkv(rng, (2, 3), 100, d=8, d_v=6, dtype=dtype)
    q, k = q * dtype(4), k * dtype(4)  # both branches of elu, and exp far below 1
    got = numba_backend.chunkwise_elu_linear_attention(q, k, v, causal, 1e-6, chunk_size)
    want = la.chunkwise_linear_attention(la.elu_plus_one(q), la.elu_plus_one(k), v, causal, 1e-6,
                                         chunk_size)
    assert got.dtype == dtype
    assert_close(got, want, what=f"fused elu+1 chunkwise C={chunk_size}")


def test_linear_attention_takes_the_fused_kernel_for_elu_chunkwise(rng, monkeypatch):
    calls = []
    fused = numba_backend.FUSED[("chunkwise", "elu+1")]
    monkeypatch.setitem(numba_backend.FUSED, ("chunkwise", "elu+1"),
                        lambda *args: calls.append(1) or fused(*args))
    q, k, v = make_qkv(rng, (2,), 70, dtype=np.float32)
    la.linear_attention(q, k, v, causal=True, form="chunkwise", backend="numba")
    la.linear_attention(q, k, v, causal=True, form="chunkwise", backend="numba", feature_map="relu")
    assert calls == [1]  # elu+1 only; any other feature map goes through FORMS


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: t.__name__)
def test_fused_elu_underflow_matches_numpy(dtype):
    """exp of very negative inputs underflows to the same subnormals and zeros as numpy's."""
    x = np.linspace(-120, 2, 64 * 5, dtype=dtype).reshape(64, 5)
    q, v = x[::-1].copy(), np.ones((64, 2), dtype)
    got = numba_backend.chunkwise_elu_linear_attention(q, x, v, False, 1e-6, 16)
    want = la.chunkwise_linear_attention(la.elu_plus_one(q), la.elu_plus_one(x), v, False, 1e-6, 16)
    assert_close(got, want, what="fused elu+1 near underflow")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: t.__name__)
def test_fused_vanished_denominator_is_reported(dtype):
    """elu+1 of -800 is exp(-800) = 0 in both precisions: with eps=0 the 0/0 must reach the NaN check."""
    q = np.full((4, 3), -800.0, dtype)
    with pytest.raises(ValueError, match="denominator"):
        la.linear_attention(q, q, np.ones((4, 2), dtype), eps=0.0, causal=True, form="chunkwise",
                            backend="numba")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("name", ["q", "k", "v"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
def test_fused_kernel_finds_every_nonfinite_input_itself(bad, name, causal, dtype, rng):
    """linear_attention leaves these checks to the fused kernel: one bad entry anywhere, even
    the last one of a short last chunk in the last sequence, raises the usual error."""
    inputs = dict(zip("qkv", make_qkv(rng, (2, 3), 70, dtype=dtype)))
    for index in [(0, 0, 0, 0), (1, 2, 69, -1), (1, 1, 33, 2)]:
        spoiled = {key: value.copy() for key, value in inputs.items()}
        spoiled[name][index] = bad
        with pytest.raises(ValueError, match=f"^{name} must be finite"):
            la.linear_attention(**spoiled, causal=causal, form="chunkwise", backend="numba")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("n", [1, 63, 100, 257], ids=lambda n: f"N{n}")
@pytest.mark.parametrize("block_size", [16, 64], ids=lambda b: f"block{b}")
def test_numba_softmax_matches_reference(block_size, n, causal, dtype, rng):
    q, k, v = make_qkv(rng, (2, 3), n, dtype=dtype)
    q, k = q * dtype(3), k * dtype(3)  # peaked rows: the running maximum matters
    got = numba_softmax.softmax_attention(q, k, v, causal=causal, block_size=block_size)
    assert got.dtype == dtype
    assert_close(got, la.softmax_attention(q, k, v, causal=causal), what="numba softmax")


@pytest.mark.parametrize("scale", [None, 0.05, 2.0])
def test_numba_softmax_fewer_queries_and_scale(scale, rng):
    q, k, v = make_qkv(rng, (2,), 150, n_q=37)
    got = numba_softmax.softmax_attention(q, k, v, scale=scale, block_size=32)
    assert_close(got, la.softmax_attention(q, k, v, scale=scale), what=f"numba softmax scale={scale}")


def test_numba_softmax_refuses_bad_input(rng):
    q, k, v = make_qkv(rng, (), 10)
    with pytest.raises(ValueError, match="scale"):
        numba_softmax.softmax_attention(q, k, v, scale=-1.0)
    with pytest.raises(ValueError, match="causal"):
        numba_softmax.softmax_attention(q[:5], k, v, causal=True)
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="numpy"):
        numba_softmax.softmax_attention(torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v))
