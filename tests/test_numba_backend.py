"""Tests of what is numba's own: the BLAS wrappers, the chunkwise kernel's features and division
inside the kernel, DeltaProduct's chunkwise kernel that reads only after each token's last step,
and the softmax kernel (linear attention on every backend: test_linear_backends.py)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

import lattn_edu as la  # noqa: E402
from lattn_edu.backends import numba_backend, numba_blas, numba_delta, numba_gated, numba_softmax  # noqa: E402
from lattn_edu.delta_product import on_substeps  # noqa: E402

from conftest import assert_close  # noqa: E402
from naive import make_qkv  # noqa: E402

DTYPES = (np.float64, np.float32)


def test_torch_tensors_are_refused():
    torch = pytest.importorskip("torch")
    q = torch.ones(4, 3, dtype=torch.float64)
    with pytest.raises(TypeError, match="backend='torch'"):
        la.linear_attention(q, q, q, backend="numba")


def _blas_call(function, *arrays_and_options):
    """Run one of the backend's BLAS wrappers with its per-thread argument scratch."""
    dtype = arrays_and_options[0].dtype
    return function(*arrays_and_options, numba_blas._blas_arguments(dtype))


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
    _blas_call(numba_blas._gemm, a, b, out, transpose_a, transpose_b, beta)
    assert_close(out, expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_lower_triangle_matmul_ignores_the_upper_triangle(dtype, rng):
    weights = rng.standard_normal((9, 9)).astype(dtype)
    values = rng.standard_normal((9, 4)).astype(dtype)
    expected = np.tril(weights) @ values
    weights[np.triu_indices(9, 1)] = np.nan  # any read of the masked half would show
    _blas_call(numba_blas._lower_triangle_matmul, weights, values)
    assert_close(values, expected)


def in_kernel(q, k, v, feature_map="elu+1", eps=1e-6, chunk_size=64, initial_state=None):
    """The chunkwise gated form with the features and the division in the kernel: (o, [S | z])."""
    return numba_gated.chunkwise_gated_linear_attention(q, k, v, None, 1.0, initial_state, chunk_size,
                                                        feature_map=feature_map, normaliser_eps=eps)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("feature_map", ["elu+1", "relu"])
@pytest.mark.parametrize("chunk_size", [1, 16, 64, 300], ids=lambda c: f"C{c}")
def test_features_in_the_kernel_equal_features_then_the_gated_form(chunk_size, feature_map, dtype, rng):
    """The kernel that computes φ and divides itself gives the numpy gated reference on
    (φ(Q), φ(K), [V | 1]) divided by its last column, and the same state [S | z]."""
    q, k, v = make_qkv(rng, (2, 3), 100, d=8, d_v=6, dtype=dtype)
    q, k = q * dtype(4), k * dtype(4)  # both branches of elu, and exp far below 1
    start = np.abs(rng.standard_normal((2, 3, 8, 7))).astype(dtype)  # a carried [S | z]
    phi = la.feature_maps.resolve_feature_map(feature_map)
    values = np.concatenate([v, np.ones_like(v[..., :1])], -1)
    both, want_state = la.gated.chunkwise_gated_linear_attention(phi(q), phi(k), values, None, 1.0, start,
                                                                 chunk_size)
    got, state = in_kernel(q, k, v, feature_map, chunk_size=chunk_size, initial_state=start)
    assert got.dtype == state.dtype == dtype and state.shape == (2, 3, 8, 7)
    assert_close(got, both[..., :-1] / (both[..., -1:] + dtype(1e-6)), what=f"{feature_map} in the kernel")
    assert_close(state, want_state, what="state [S | z]")


def test_linear_attention_leaves_elementwise_maps_to_the_chunkwise_kernel(rng, monkeypatch):
    calls = []
    form = numba_backend.GATED_FORMS["chunkwise"]
    monkeypatch.setitem(numba_backend.GATED_FORMS, "chunkwise",
                        lambda *args, **options: calls.append(options.get("feature_map")) or form(*args, **options))
    q, k, v = make_qkv(rng, (2,), 70, dtype=np.float32)
    la.linear_attention(q, k, v, causal=True, form="chunkwise", backend="numba")
    la.linear_attention(q, k, v, causal=True, form="chunkwise", backend="numba", feature_map=la.FavorPlus(5, 7))
    assert calls == ["elu+1", None]  # FAVOR+'s features come stabilised from the map itself


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: t.__name__)
def test_elu_in_the_kernel_underflows_as_numpy_does(dtype):
    """exp of very negative inputs underflows to the same subnormals and zeros as numpy's."""
    x = np.linspace(-120, 2, 64 * 5, dtype=dtype).reshape(64, 5)
    q, v = x[::-1].copy(), np.ones((64, 2), dtype)
    got, _ = in_kernel(q, x, v, chunk_size=16)
    want = la.quadratic_linear_attention(la.elu_plus_one(q), la.elu_plus_one(x), v, True, 1e-6)
    assert_close(got, want, what="elu+1 in the kernel near underflow")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: t.__name__)
def test_vanished_denominator_in_the_kernel_is_reported(dtype):
    """elu+1 of -800 is exp(-800) = 0 in both precisions: with eps=0 the 0/0 must reach the NaN check."""
    q = np.full((4, 3), -800.0, dtype)
    with pytest.raises(ValueError, match="denominator"):
        la.linear_attention(q, q, np.ones((4, 2), dtype), eps=0.0, causal=True, form="chunkwise",
                            backend="numba")


def test_kernel_alone_refuses_a_non_causal_call(rng):
    q, k, v = make_qkv(rng, (), 10)
    with pytest.raises(ValueError, match="causal must be True"):
        numba_backend.chunkwise_elu_linear_attention(q, k, v, False)
    assert_close(numba_backend.chunkwise_elu_linear_attention(q, k, v),
                 la.linear_attention(q, k, v, causal=True), what="the kernel alone")


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


@pytest.mark.parametrize("n_h", [1, 2, 3])
@pytest.mark.parametrize("chunk", [1, 5, 64])
@pytest.mark.parametrize("gated", [False, True], ids=["ungated", "gated"])
def test_delta_product_reads_only_after_each_tokens_last_step(n_h, chunk, gated, rng):
    # The kernel skips the reads between a token's steps (q = 0 there on the substep path);
    # the outputs and state must be those of the delta rule run on every substep.
    lead, n, d_k, d_v = (2, 3), 23, 5, 4
    q = rng.standard_normal(lead + (n, d_k))
    k = rng.standard_normal(lead + (n, n_h, d_k))
    k /= np.linalg.norm(k, axis=-1, keepdims=True)
    v, beta = rng.standard_normal(lead + (n, n_h, d_v)), rng.uniform(0, 2, lead + (n, n_h))
    g = -rng.uniform(0, 1, lead + (n,)) if gated else None
    s0 = rng.standard_normal(lead + (d_k, d_v))
    out, state = numba_delta.chunkwise_delta_product(q, k, v, beta, g, 0.7, s0, chunk)
    want_out, want_state = on_substeps(numba_delta.chunkwise_delta_rule, q, k, v, beta, g, 0.7, s0, chunk)
    assert out.shape == lead + (n, d_v) and out.flags.c_contiguous
    assert_close(out, want_out, rtol=1e-12)
    assert_close(state, want_state, rtol=1e-12)
