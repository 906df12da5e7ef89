"""The small helpers chapters share from lattn_edu.book: comparing two results for the prose."""

from __future__ import annotations

import numpy as np
import pytest

from lattn_edu.book import difference_text, relative_difference


def test_relative_difference_is_the_frobenius_ratio():
    rng = np.random.default_rng(7)
    b = rng.standard_normal((5, 3))
    a = b + 1e-3 * rng.standard_normal((5, 3))
    expected = np.sqrt(((a - b) ** 2).sum() / (b**2).sum())
    assert relative_difference(a, b) == pytest.approx(expected, rel=1e-12)
    assert relative_difference(b, b) == 0.0
    assert relative_difference(2 * b, b) == pytest.approx(1.0, rel=1e-12)  # ‖2b − b‖ / ‖b‖


def test_relative_difference_refuses_other_shapes_and_a_zero_reference():
    with pytest.raises(ValueError, match=r"one shape; got \(3,\) and \(3, 1\)"):
        relative_difference(np.ones(3), np.ones((3, 1)))  # would broadcast to 3×3 silently
    with pytest.raises(ValueError, match="b is all zeros"):
        relative_difference(np.ones(3), np.zeros(3))


@pytest.mark.parametrize("value, text", [(0.0, "0"), (3.14159e-16, "3.1e-16"), (0.0271, "2.7e-02")])
def test_difference_text_says_zero_only_for_an_exact_zero(value, text):
    assert difference_text(value) == text
