"""The worked-example explorer: chapter 5's numbers at the defaults, o a weighted average of the
values for every query, and φ(q) = 0 refused."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from lattn_edu.explorers import ImpossibleSetting
from lattn_edu.explorers.worked_example import WorkedExampleExplorer, compute_worked_example


def test_defaults_give_the_chapter_numbers():
    result = compute_worked_example(3, 1, 2)
    np.testing.assert_array_equal(result["S"], [[1, 0], [0, 2]])
    np.testing.assert_array_equal(result["z"], [1, 1])
    np.testing.assert_array_equal(result["numerator"], [3, 2])
    assert result["denominator"] == 4
    np.testing.assert_allclose(result["weights"], [0.75, 0.25])
    np.testing.assert_allclose(result["o"], [0.75, 0.5])


@pytest.mark.parametrize("q1, q2, scale", [p for p in itertools.product((0, 1, 3, 6), (0, 1, 3), (1, 2, 4))
                                           if p[:2] != (0, 0)], ids=str)
def test_output_is_the_weighted_average_of_the_values(q1, q2, scale):
    result = compute_worked_example(q1, q2, scale)
    weights = result["weights"]
    np.testing.assert_allclose(weights, np.array([q1, q2]) / (q1 + q2))
    np.testing.assert_allclose(weights.sum(), 1.0)
    np.testing.assert_allclose(result["o"], weights @ result["values"], rtol=1e-12)
    np.testing.assert_allclose(result["o"], [q1, q2 * scale] / np.float64(q1 + q2), rtol=1e-12)


def test_zero_query_is_an_impossible_setting():
    with pytest.raises(ImpossibleSetting, match="denominator is 0"):
        compute_worked_example(0, 0, 2)
    with pytest.raises(ImpossibleSetting, match="φ\\(q\\) = 0"):
        WorkedExampleExplorer().render(q1=0, q2=0)
    assert len(WorkedExampleExplorer().frames()) == 4 * 3 * 3  # the page still has the message frames


def test_fractional_inputs_and_the_figure_shows_the_numbers():
    result = compute_worked_example(0.5, 1.5, 4)
    np.testing.assert_allclose(result["o"], [0.25, 3.0])  # [0.5, 1.5·4] / 2
    fig = WorkedExampleExplorer().plot(compute_worked_example(3, 1, 2))
    assert "= [0.75, 0.50]" in fig.get_suptitle() and "[3, 2] / 4" in fig.get_suptitle()
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert "o = [0.75, 0.50]" in texts and "3/4\n= 0.75" in texts and "1/4\n= 0.25" in texts
