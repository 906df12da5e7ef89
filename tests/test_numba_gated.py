"""Pieces of the numba gated kernels that the public functions do not show: the triangular solve
wrapper, where a chunk is cut under strong vector decay, the backend protocol, and the
chunkwise form's own finiteness checks."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

import lattn_edu as la  # noqa: E402
from lattn_edu.backends import numba_backend, numba_blas, numba_decay, numba_gated, numpy_backend  # noqa: E402
from lattn_edu.recurrence import checks_finite  # noqa: E402

from conftest import assert_close  # noqa: E402


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("c, width", [(1, 3), (9, 4), (17, 1)])
def test_unit_lower_solve_reads_only_the_strict_lower_triangle(c, width, dtype, rng):
    lower = np.tril(0.3 * rng.standard_normal((c, c)), -1)
    rhs = rng.standard_normal((c, width))
    expected = np.linalg.solve(np.eye(c) + lower, rhs)
    matrix = lower.astype(dtype)
    matrix[np.triu_indices(c)] = np.nan  # the diagonal and above: any read would show
    got = rhs.astype(dtype)
    numba_blas._unit_lower_solve(matrix, got, numba_blas._blas_arguments(np.dtype(dtype)))
    assert_close(got, expected, rtol=1e-10 if dtype == np.float64 else 1e-5)


def test_pieces_end_where_the_decay_would_pass_the_span():
    cumulative = np.cumsum(np.array([[-1.0, 0.0], [-4.0, -1.0], [-6.0, 0.0], [-1.0, -30.0], [0.0, 0.0]]), axis=0)
    # from row 0 (B = [-1, 0]): row 1 spans 4 <= 5, row 2 spans 10 > 5 -> the piece is rows 0..1
    assert numba_decay._piece_end(cumulative, 0, 5.0) == 2
    assert numba_decay._piece_end(cumulative, 2, 5.0) == 3  # a single row when the next step alone passes
    assert numba_decay._piece_end(cumulative, 3, 5.0) == 5
    assert numba_decay._piece_end(cumulative, 0, 100.0) == 5  # weak decay: one piece


def test_backend_protocol_matches_numpy():
    assert set(numba_backend.GATED_FORMS) == set(numpy_backend.GATED_FORMS)
    assert set(numba_backend.DELTA_FORMS) == set(numpy_backend.DELTA_FORMS)
    x = np.ones((2, 3))
    *arrays, restore = numba_backend.to_backend(x, None, x, x, None)
    assert arrays[0] is x and arrays[1] is None and arrays[4] is None and restore(x) is x


@pytest.mark.parametrize("name", ["q", "k", "v"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("gate", ["none", "scalar", "vector"])
def test_chunkwise_kernel_names_a_nonfinite_input_as_every_backend_does(name, bad, gate, rng):
    # The numba chunkwise form checks its own inputs (the public function skips its passes);
    # the error must be the one the other backends' up-front checks raise.
    inputs = dict(zip("qkv", rng.standard_normal((3, 2, 37, 5))))
    inputs[name][1, 33, 4] = bad  # the last chunk of the second sequence, the last column
    g = {"none": None, "scalar": -rng.uniform(0, 1, (2, 37)), "vector": -rng.uniform(0, 1, (2, 37, 5))}[gate]
    for backend in ("numba", "numpy"):
        with pytest.raises(ValueError, match=f"^{name} must be finite"):
            la.gated_linear_attention(inputs["q"], inputs["k"], inputs["v"], g, backend=backend, chunk_size=8)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, 0.25], ids=["nan", "inf", "-inf", "positive"])
@pytest.mark.parametrize("gate", ["scalar", "vector"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_chunkwise_kernel_refuses_a_bad_log_decay_as_every_backend_does(bad, gate, dtype, rng):
    # The numba chunkwise form checks the log decays' values itself (the public function checks
    # only their shape and dtype): the same error, word for word, as the numpy backend's.
    q, k, v = rng.standard_normal((3, 2, 37, 5)).astype(dtype)
    g = -rng.uniform(0, 1, (2, 37) if gate == "scalar" else (2, 37, 5)).astype(dtype)
    g[(1, 33) if gate == "scalar" else (1, 33, 4)] = bad  # the last chunk of the second sequence
    g[(0, 2) if gate == "scalar" else (0, 2, 1)] = 0.125  # above 0 too, in the other sequence
    messages = set()
    for backend in ("numba", "numpy"):
        with pytest.raises(ValueError) as refused:
            la.gated_linear_attention(q, k, v, g, backend=backend, chunk_size=8)
        messages.add(str(refused.value))
    assert len(messages) == 1
    expected = "log_decay must be <= 0 (a decay exp(g) in (0, 1]); got a largest value of 0.25"
    assert messages.pop() == expected if bad == 0.25 else messages.pop().startswith("log_decay must be finite")


def test_a_bad_q_is_named_before_a_bad_log_decay_by_the_kernel_as_by_the_checks(rng):
    q, k, v = rng.standard_normal((3, 2, 21, 5))
    q[0, 20, 0], g = np.nan, np.full((2, 21), 0.5)
    for backend in ("numba", "numpy"):
        with pytest.raises(ValueError, match="^q must be finite"):
            la.gated_linear_attention(q, k, v, g, backend=backend, chunk_size=8)


@pytest.mark.parametrize("form", ["chunkwise", "recurrent", "parallel"])
def test_an_overflow_is_the_same_error_on_every_form(form):
    q = np.full((2, 19, 3), 1e30, np.float32)  # q·k = 3e60: inf in float32
    for backend in ("numba", "numpy"):
        with pytest.raises(ValueError, match="overflowed"):
            la.gated_linear_attention(q, q, q, form=form, backend=backend, chunk_size=8)


def test_only_the_chunkwise_gated_form_checks_its_own_inputs():
    assert numba_backend.CHECKS_FINITE == {"gated": ("chunkwise",)}
    assert checks_finite("gated", "chunkwise", "numba")
    assert not checks_finite("gated", "recurrent", "numba")
    assert not checks_finite("delta", "chunkwise", "numba")
    assert not checks_finite("gated", "chunkwise", "numpy")


@pytest.mark.parametrize("gate", ["scalar", "vector"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
def test_the_deferred_decay_of_the_state_gives_the_scans_answer_row_by_row(gate, dtype, rng):
    # The chunkwise kernel keeps S as diag(frame) s and touches a row of s only when its frame
    # would fall below exp(-span): with these rates the rows cross that floor in different
    # chunks (or never: channel 0 does not decay), and steps of -5000 zero channel 2 (the
    # last one leaves that row of the state holding the last token's write alone).
    n, d_k, d_v, span = 203, 5, 3, numba_gated._SPAN[np.dtype(dtype)]
    q, k, v = rng.standard_normal((3, 2, n, d_k))
    v = v[..., :d_v]
    rates = np.array([0.0, 0.3, 1.1, 2.9, 0.05]) * span / 20  # per step, as multiples of the span
    g = -rates * rng.uniform(0.5, 1.5, (2, n, d_k))
    g[:, [150, n - 1], 2] = -5000.0
    if gate == "scalar":
        g = g[..., 3]  # one decay per step: every row crosses together
    initial = rng.standard_normal((2, d_k, d_v))
    run = dict(scale=0.7, initial_state=initial, return_state=True)
    o_ref, s_ref = la.gated_linear_attention(q, k, v, g, form="recurrent", **run)  # numpy, float64
    cast = [x.astype(dtype) for x in (q, k, v, g, initial)]
    o, s = la.gated_linear_attention(*cast[:4], backend="numba", chunk_size=9, scale=0.7, initial_state=cast[4],
                                     return_state=True)
    tolerance = 1e-10 if dtype == np.float64 else 1e-4  # float32: 3.3e-5 seen (factors up to exp(span))
    for got, expected in ((o, o_ref), (s, s_ref)):
        size = np.abs(expected).max(axis=-1, keepdims=True)  # each row against its own size
        assert np.all(np.abs(got - expected) <= tolerance * size + 1e-300), np.abs(got - expected).max()
    if gate == "vector":
        last_write = k[:, -1, 2, None] * v[:, -1]  # [2, d_v]
        assert_close(s[:, 2], last_write, rtol=tolerance)
