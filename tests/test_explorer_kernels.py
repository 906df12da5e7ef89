"""The kernels explorer computes the package's weights and flags the map that breaks the rules."""

from __future__ import annotations

import numpy as np

import lattn_edu as la
from lattn_edu.explorers.kernels import METHODS, compute_kernels


def test_rows_are_normalised_and_only_identity_goes_negative():
    result = compute_kernels(n=13, scale=1.0, seed=3)
    for name in METHODS:
        sums = result["weights"][name].sum(-1)
        empty = np.abs(result["weights"][name]).sum(-1) == 0  # relu: no positive feature
        np.testing.assert_allclose(sums[~empty], 1.0, atol=1e-5, err_msg=name)
        assert empty.sum() == result["empty_rows"][name]
    assert result["empty_rows"]["relu"] > 0 and result["empty_rows"]["elu+1"] == 0
    assert result["negative"]["identity"] > 0
    assert all(result["negative"][name] == 0 for name in ("softmax", "elu+1", "relu"))
    assert result["min_denominator"]["elu+1"] > 0


def test_weights_are_the_packages():
    result = compute_kernels(n=11, scale=2.0, seed=5)
    q, k = 2.0 * np.random.default_rng(5).standard_normal((2, 11, 4))
    np.testing.assert_array_equal(result["weights"]["elu+1"], la.effective_attention_matrix(q, k))


def test_larger_scale_makes_softmax_sharper_but_not_elu():
    soft, sharp = compute_kernels(32, 0.5), compute_kernels(32, 4.0)
    assert sharp["weights"]["softmax"].max(-1).mean() > 2 * soft["weights"]["softmax"].max(-1).mean()
    assert sharp["weights"]["elu+1"].max(-1).mean() < 0.5
