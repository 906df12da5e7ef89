"""The kernels' exponential of numbers <= 0 (lattn_edu.backends.numba_blas): the float32
polynomial against numpy's exp, in the normal range, where the result is subnormal, and where
it underflows to 0; float64 (and float32 without ``fast_exp``) is numpy's exp itself."""

import numpy as np
import pytest

from lattn_edu.backends.numba_blas import _exp_nonpositive


def exp_of(x: np.ndarray, fast_exp: bool) -> np.ndarray:
    out = x.copy()
    _exp_nonpositive(out, out.size, fast_exp)
    return out


def test_the_float32_polynomial_is_within_five_units_in_the_last_place_of_exp():
    rng = np.random.default_rng(11)
    x = np.concatenate([-rng.random(10_007) * 87.0, -rng.random(101) * 1e-3,
                        np.float32([0.0, -0.0, -1e-30, -np.log(2), -87.0])]).astype(np.float32)
    got, want = exp_of(x, True), np.exp(x.astype(np.float64))
    ulp = np.spacing(want.astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got - want) / ulp) <= 5.0  # 4.5 at worst over a dense grid of [-87.3, 0]


def test_results_below_the_smallest_normal_float_are_subnormal_as_numpys_and_0_below_minus_104():
    x = np.float32(np.linspace(-103.9, -87.4, 997))
    got, want = exp_of(x, True), np.exp(x.astype(np.float64))
    smallest = np.float64(np.finfo(np.float32).smallest_subnormal)
    assert np.max(np.abs(got - want)) <= 4 * smallest
    assert np.all(got[want >= 4 * smallest] > 0)  # subnormal, not flushed to 0
    assert np.all(exp_of(np.float32([-104.0, -150.0, -1e30, -np.inf]), True) == 0)


def test_positive_numbers_are_clamped_to_exp_0():
    assert np.all(exp_of(np.float32([1e-6, 3.0, 1e30]), True) == 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_without_the_polynomial_it_is_numpys_exp_of_min_x_0(dtype):
    x = np.array([-0.5, -3.25, -90.0, 2.0], dtype)
    np.testing.assert_array_equal(exp_of(x, False), np.exp(np.minimum(x, 0)))
