"""The memory explorer: its numbers are the memory module's, and the figure moves in place."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from lattn_edu.explorers.memory import GATED_DECAY, MemoryExplorer, STYLES, compute_memory
from lattn_edu.memory import RULES, memory_errors


@pytest.mark.parametrize("rule", RULES)
def test_errors_are_the_memory_modules(rule):
    result = compute_memory(19, 13, beta=0.7, correlation=0.3, d_v=5, seed=2)
    expected = memory_errors(19, 13, 5, rule, "random", 0.3, beta=0.7, decay=GATED_DECAY, seed=2)
    np.testing.assert_allclose(result["errors"][rule], expected, rtol=1e-12)
    assert result["singular"][rule].shape == (5,)  # min(m, d_v) singular values


def test_delta_beats_additive_and_the_gate_fades_the_oldest_pair():
    result = compute_memory(16, 16)
    errors = result["errors"]
    assert errors["delta"].mean() < errors["additive"].mean()
    assert errors["delta"][-1] < 1e-12  # β = 1: the last pair is read back exactly
    assert errors["gated delta"][0] > errors["gated delta"][-1]


def test_a_redraw_reuses_the_figure_and_moves_its_lines():
    explorer = MemoryExplorer()
    first = explorer.render(p=8)
    lines = first.axes[0].get_lines()
    second = explorer.draw(first, **explorer.settings(p=64, correlation=0.8))
    assert second is first and first.axes[0].get_lines() == lines  # updated in place
    assert len(lines[0].get_xdata()) == 64
    assert "P = 64" in second.get_suptitle()
    assert first.axes[0].get_ylim()[1] >= max(compute_memory(64, 16, correlation=0.8)["errors"]["additive"])


def test_each_rule_has_a_second_cue_besides_colour():
    styles = list(STYLES.values())
    assert len({s[1] for s in styles}) == len({s[2] for s in styles}) == len(RULES)
    fig = MemoryExplorer().plot(compute_memory(8, 16))
    assert [text.get_text() for text in fig.axes[1].get_legend().get_texts()] == list(RULES)


def test_the_fixed_axes_hold_every_setting_of_the_grid():
    """The axes never move (so the live widget never redraws them): every error and singular
    value the sliders can reach lies inside both panels' limits."""
    fig = MemoryExplorer().render()
    (error_low, error_high), (value_low, value_high) = (ax.get_ylim() for ax in fig.axes)
    for p, m, beta, correlation in itertools.product(*MemoryExplorer.controls.values()):
        result = compute_memory(p, m, beta, correlation)
        for rule in RULES:
            assert error_low <= result["errors"][rule].min() <= result["errors"][rule].max() <= error_high
            assert value_low <= result["singular"][rule].min() <= result["singular"][rule].max() <= value_high


def test_defaults_and_bad_setting():
    assert MemoryExplorer().defaults == {"p": 16, "m": 16, "beta": 1.0, "correlation": 0.0}
    with pytest.raises(ValueError, match="unknown"):
        MemoryExplorer().render(width=3)
