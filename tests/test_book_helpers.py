"""The comparison every chapter, test and benchmark uses (lattn_edu.compare), and how the
chapters word it (lattn_edu.book)."""

from __future__ import annotations

import numpy as np
import pytest

from lattn_edu.book import difference_text, signed_text
from lattn_edu.compare import relative_error


def test_relative_error_is_the_frobenius_ratio():
    rng = np.random.default_rng(7)
    b = rng.standard_normal((5, 3))
    a = b + 1e-3 * rng.standard_normal((5, 3))
    expected = np.sqrt(((a - b) ** 2).sum() / (b**2).sum())
    assert relative_error(a, b) == pytest.approx(expected, rel=1e-12)
    assert relative_error(b, b) == 0.0
    assert relative_error(2 * b, b) == pytest.approx(1.0, rel=1e-12)  # ‖2b − b‖ / ‖b‖


def test_relative_error_is_computed_in_float64():
    b = np.float32(1.0) + np.arange(7, dtype=np.float32)
    a = b + np.float32(1e-7) * b  # the difference is below float32's rounding of a − b's norm
    exact = np.linalg.norm(a.astype(np.float64) - b) / np.linalg.norm(b.astype(np.float64))
    assert relative_error(a, b) == pytest.approx(exact, rel=1e-12)


def test_relative_error_takes_torch_tensors():
    torch = pytest.importorskip("torch")
    b = torch.linspace(1.0, 2.0, 9, dtype=torch.float32, requires_grad=True)
    assert relative_error(2 * b, b) == pytest.approx(1.0, rel=1e-7)


def test_relative_error_refuses_other_shapes_a_zero_reference_and_non_numbers():
    with pytest.raises(ValueError, match=r"one shape; got \(3,\) and \(3, 1\)"):
        relative_error(np.ones(3), np.ones((3, 1)))  # would broadcast to 3×3 silently
    with pytest.raises(ValueError, match="expected is all zeros"):
        relative_error(np.ones(3), np.zeros(3))
    with pytest.raises(TypeError, match="actual must be an array of numbers; got str"):
        relative_error("abc", np.ones(3))


@pytest.mark.parametrize("value, text", [(0.0, "0"), (3.14159e-16, "3.1e-16"), (0.0271, "2.7e-02")])
def test_difference_text_says_zero_only_for_an_exact_zero(value, text):
    assert difference_text(value) == text


@pytest.mark.parametrize("value, places, text", [(0.0123, 3, "+0.012"), (-0.0111, 3, "−0.011"),
                                                 (-0.0004, 3, "0.000"), (0.0004, 3, "0.000"),
                                                 (-0.0004, 4, "−0.0004"), (2.5, 1, "+2.5")])
def test_signed_text_shows_the_sign_with_a_true_minus_and_no_negative_zero(value, places, text):
    assert signed_text(value, places) == text
