"""The timing helpers measure what they claim; slopes and crossovers on synthetic data."""

from __future__ import annotations

import numpy as np
import pytest

from lattn_edu.timing import crossover_size, loglog_slope, measure


def test_measure_counts_calls_and_orders_statistics():
    calls = []
    timing = measure(lambda: calls.append(1), repeats=5, warmup=2)
    assert len(calls) == 7 and timing.runs == 5
    assert 0 <= timing.median <= timing.p95


def test_measure_runs_until_min_seconds():
    timing = measure(lambda: None, repeats=1, warmup=0, min_seconds=0.02)
    assert timing.runs > 1


@pytest.mark.parametrize("exponent", [1.0, 2.0, 0.5])
def test_loglog_slope_recovers_a_power_law(exponent):
    sizes = np.array([128, 256, 512, 1024, 4096])
    assert loglog_slope(sizes, 3e-6 * sizes**exponent) == pytest.approx(exponent, rel=1e-12)


def test_crossover_of_quadratic_and_linear_costs():
    sizes = np.geomspace(16, 4096, 9)
    quadratic, linear = sizes**2, 64 * sizes  # equal at N = 64
    assert crossover_size(sizes, quadratic, linear) == pytest.approx(64, rel=1e-9)
    assert crossover_size(sizes, linear, quadratic) is None
    assert crossover_size(sizes, quadratic * 1e6, linear) == sizes[0]


def test_crossover_ignores_an_early_noisy_win():
    sizes = np.array([10, 20, 40, 80, 160])
    a = np.array([1.0, 1.0, 1.0, 1.0, 1.0])
    b = np.array([0.5, 2.0, 2.0, 1.0, 0.5])  # faster at 10 by noise, for good only after 80
    assert crossover_size(sizes, a, b) == pytest.approx(80, rel=1e-9)


def test_bad_input():
    with pytest.raises(ValueError, match="repeats"):
        measure(lambda: None, repeats=0)
    with pytest.raises(TypeError, match="fn must be callable"):
        measure(3)
    with pytest.raises(ValueError, match="positive"):
        loglog_slope([1, 2], [0.0, 1.0])
    with pytest.raises(ValueError, match="increasing"):
        crossover_size([2, 1], [1, 1], [1, 1])
