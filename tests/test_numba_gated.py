"""Pieces of the numba gated kernels that the public functions do not show: the triangular solve
wrapper, where a chunk is cut under strong vector decay, and the backend protocol."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from lattn_edu.backends import numba_backend, numba_blas, numba_decay, numba_gated, numpy_backend  # noqa: E402

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
