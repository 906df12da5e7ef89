"""The hybrid_memory explorer: every number is lattn_edu.hybrid's for the stack the controls
describe, the lines and markers move in place to them, and the picture says what it shows."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from matplotlib.legend import Legend

from lattn_edu import explorers, hybrid
from lattn_edu.explorers.base import moving_artists
from lattn_edu.explorers.hybrid_memory import (CONTEXTS, PRESET_NAMES, ROUND, X_RANGE, HybridMemoryExplorer,
                                               compute_hybrid_memory, readable, summary,
                                               whole_tokens)
from lattn_edu.style import PALETTE

GRID = list(itertools.product(*HybridMemoryExplorer.controls.values()))


@pytest.mark.parametrize("preset_name,per_4,window,context", GRID)
def test_every_number_is_the_hybrid_modules(preset_name, per_4, window, context):
    result = compute_hybrid_memory(preset_name, per_4, window, context)
    shape = hybrid.preset(preset_name)
    stack = result["stack"]
    assert stack.pattern == "".join("S" if i % 4 >= 4 - per_4 else "R" for i in range(shape.num_layers))
    assert stack.softmax.window == (None if window == "full" else window)
    assert result["kv"] == hybrid.kv_cache_bytes(stack, context)
    assert result["state"] == hybrid.state_bytes(stack)
    assert result["flops"] == hybrid.decode_flops(stack, context)
    full = hybrid.full_attention(shape)
    assert result["full_kv"] == hybrid.kv_cache_bytes(full, context)
    assert result["full_flops"] == hybrid.decode_flops(full, context)
    assert result["break_even"] == hybrid.break_even_context(stack, full)
    contexts = result["contexts"]
    expected_kv = [hybrid.kv_cache_bytes(stack, int(n)) for n in contexts]
    np.testing.assert_array_equal(result["curves"]["kv"], expected_kv)
    np.testing.assert_array_equal(result["curves"]["total"], np.array(expected_kv) + result["state"])
    full_flops = [hybrid.decode_flops(full, int(n)) for n in contexts]
    np.testing.assert_array_equal(result["full"]["flops"], full_flops)
    recurrent_state = hybrid.state_bytes(hybrid.interleave(shape, 0))
    np.testing.assert_array_equal(result["recurrent"]["total"], recurrent_state)  # flat: no cache
    if preset_name == ROUND:
        assert result["shipped"] is None
    else:
        shipped_kv = [hybrid.kv_cache_bytes(shape, int(n)) for n in contexts]
        np.testing.assert_array_equal(result["shipped"]["kv"], shipped_kv)


@pytest.mark.parametrize("preset_name", PRESET_NAMES)
def test_a_window_flattens_the_curves_from_its_corner_on(preset_name):
    result = compute_hybrid_memory(preset_name, 2, 4096, CONTEXTS[0])
    contexts, curves = result["contexts"], result["curves"]
    assert 4096 in contexts and contexts[0] == X_RANGE[0] and contexts[-1] == X_RANGE[1]
    beyond = contexts >= 4096
    assert np.all(curves["kv"][beyond] == curves["kv"][beyond][0])
    assert np.all(curves["flops"][beyond] == curves["flops"][beyond][0])
    assert np.all(np.diff(curves["kv"][~beyond]) > 0)  # growing up to the corner
    assert np.all(result["full"]["flops"][beyond] > curves["flops"][beyond])


def test_the_figure_moves_its_lines_in_place():
    explorer = HybridMemoryExplorer()
    fig = explorer.render()
    memory_ax, work_ax = fig.axes
    lines = list(memory_ax.lines) + list(work_ax.lines)
    settings = explorer.settings(preset_name="Kimi Linear 48B-A3B", softmax_per_4=2, window=4096,
                                 context=1_048_576)
    again = explorer.draw(fig, **settings)
    assert again is fig and list(memory_ax.lines) + list(work_ax.lines) == lines
    result = compute_hybrid_memory(**settings)
    blue = [line for line in memory_ax.lines if line.get_linewidth() == 2.2][0]
    np.testing.assert_array_equal(blue.get_xdata(), result["contexts"])
    np.testing.assert_array_equal(blue.get_ydata(), result["curves"]["total"])
    markers = [line for ax in fig.axes for line in ax.lines if line.get_marker() == "o"]
    assert [m.get_ydata()[0] for m in markers] == [result["kv"] + result["state"], result["flops"]]
    assert all(m.get_xdata()[0] == 1_048_576 for m in markers)
    crossing = [line for line in work_ax.lines if line.get_color() == PALETTE["vermillion"]][0]
    assert crossing.get_xdata()[0] == pytest.approx(result["break_even"])
    title = fig.get_suptitle()
    assert readable(result["kv"], "B") in title and readable(result["flops"], "FLOP") in title
    assert "13 of 27" in title and "window 4,096" in title
    round_fig = explorer.render(preset_name=ROUND)
    shipped = [line for line in round_fig.axes[0].lines if len(line.get_xdata()) == 0]
    assert len(shipped) == 1  # the round stack was never shipped: no dotted line


def test_the_legend_is_decoration_and_not_redrawn_on_a_move():
    fig = HybridMemoryExplorer().render()
    legends = [artist for artist in fig.axes[0].artists if isinstance(artist, Legend)]
    assert len(legends) == 1 and not set(legends) & set(moving_artists(fig))
    said = [text.get_text() for text in legends[0].get_texts()]
    assert said[0] == "this stack: KV + state" and "same shape, full attention" in said


def test_the_default_is_qwen3_next_as_shipped_and_says_so_in_one_line():
    explorer = HybridMemoryExplorer()
    result = explorer.compute(**explorer.defaults)
    shipped = hybrid.preset("Qwen3-Next-80B-A3B")
    assert result["stack"].pattern == shipped.pattern
    np.testing.assert_array_equal(result["curves"]["total"], result["shipped"]["total"])
    said = explorer.describe(**explorer.defaults)
    assert "\n" not in said and "12 of 48" in said and "3.22 GB" in said and "39.5 MB" in said
    assert "from N = 196 in work (in traffic, bytes moved: 1,072)" in said  # R/a, 2 n_S/c: whole
    assert explorer.describe("no reason", **explorer.defaults).endswith("Not drawn: no reason")


def test_break_evens_are_rounded_up_to_whole_tokens_as_the_chapter_rounds_them():
    assert [whole_tokens(x) for x in (196.0, 46.588, 1948.44, 0.0, math.inf)] == [
        "196", "47", "1,949", "0", "never"]
    kimi = summary(compute_hybrid_memory("Kimi Linear 48B-A3B", 1, "full", CONTEXTS[0]))[2]
    shape = hybrid.preset("Kimi Linear 48B-A3B")
    traffic = hybrid.break_even_context(shape, hybrid.full_attention(shape), "bytes")
    assert 1948 < traffic < 1949 and "bytes moved: 1,949)" in kimi and "from N = 47 in work" in kimi


def test_readable_numbers():
    assert readable(3_221_225_472, "B") == "3.22 GB" and readable(512, "B") == "512 B"
    assert readable(25.9e9, "FLOP") == "25.9 GFLOP" and readable(2e12, "B") == "2 TB"


def test_the_grid_stays_small_and_the_explorer_is_catalogued():
    assert explorers.CATALOG["hybrid_memory"] is HybridMemoryExplorer
    assert math.prod(len(options) for options in HybridMemoryExplorer.controls.values()) <= 60


@pytest.mark.parametrize("settings,error,match", [
    ({"preset_name": "GPT-5"}, ValueError, "preset_name must be one of"),
    ({"softmax_per_4": 3}, ValueError, "softmax_per_4 must be 1 or 2"),
    ({"window": 1024}, ValueError, "window must be one of"),
    ({"context": 1000}, ValueError, "context must be one of"),
])
def test_bad_settings_are_named(settings, error, match):
    values = {**HybridMemoryExplorer.defaults, **settings}
    with pytest.raises(error, match=match):
        compute_hybrid_memory(**values)
    with pytest.raises(ValueError, match="unknown"):
        HybridMemoryExplorer().render(ratio=3)
