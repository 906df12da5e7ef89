"""Hybrid stacks' costs: hand-worked counts, how each grows with the context, the window's cap,
the break-even context as the root of cost_hybrid = cost_full, and the shipped presets."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lattn_edu import attention_cost, hybrid
from lattn_edu.hybrid import (LayerStack, RecurrentLayer, SoftmaxLayer, break_even_context, decode_bytes,
                              decode_flops, decode_macs, full_attention, interleave, kv_bytes_per_token,
                              kv_cache_bytes, state_bytes, windowed)

# five layers, softmax at 1 and 4; d_k != d_v and odd sizes so that no two counts coincide
SMALL_SOFTMAX = SoftmaxLayer.gqa(query_heads=6, kv_heads=3, head_dim=5, value_dim=7)
SMALL_RECURRENT = RecurrentLayer(heads=3, key_dim=5, value_dim=7, rule="delta", conv_channels=11,
                                 conv_kernel=4)
SMALL = LayerStack("small", 5, (4, 1), SMALL_SOFTMAX, SMALL_RECURRENT)
CONTEXTS = (1, 9, 45, 63, 100, 4097)


def test_a_small_stack_counted_by_hand():
    assert SMALL.softmax_layers == (1, 4) and SMALL.pattern == "RSRRS"
    assert SMALL.num_softmax == 2 and SMALL.num_recurrent == 3
    # per token: 2 softmax layers × 3 KV heads × (5 + 7) numbers = 72, bf16 = 144 bytes
    assert kv_bytes_per_token(SMALL) == 144 and kv_bytes_per_token(SMALL, "float32") == 288
    assert kv_cache_bytes(SMALL, 45) == 72 * 45 * 2 == 6480
    # 3 recurrent layers × (3 heads × 5 × 7 + 11 channels × 3 past inputs) = 414 numbers
    assert state_bytes(SMALL) == 414 * 2 and state_bytes(SMALL, "float64") == 414 * 8
    # softmax: 2 layers × 6 query heads × 45 tokens × 12;
    # recurrent: 3 layers × (3 heads × 3 passes × 35 + 11 channels × 4 taps)
    assert decode_macs(SMALL, 45) == 2 * 6 * 45 * 12 + 3 * (3 * 3 * 35 + 11 * 4) == 7557
    assert decode_flops(SMALL, 45) == 2 * 7557
    assert decode_bytes(SMALL, 45) == 6480 + 2 * 828
    additive = LayerStack("additive", 5, (1, 4), SMALL_SOFTMAX, RecurrentLayer(3, 5, 7, rule="additive"))
    assert decode_macs(additive, 45) == 2 * 6 * 45 * 12 + 3 * 3 * 2 * 35  # two passes, no convolution


def test_the_counts_are_chapter_ones_attention_cost():
    for n in CONTEXTS:
        one_head = attention_cost(n, 5, 7, m=5)
        assert kv_cache_bytes(SMALL, n, "float64") == 2 * 3 * one_head.kv_cache_entries * 8
        softmax_reads = 2 * 6 * one_head.kv_cache_entries  # every query head reads the whole cache
        recurrent = 3 * (3 * (one_head.linear_macs // n + 35) + 11 * 4)  # delta: one pass more
        assert decode_macs(SMALL, n) == softmax_reads + recurrent


def test_mla_caches_its_latent_once_and_every_head_reads_it():
    layer = SoftmaxLayer.mla(query_heads=4, rank=10, rope_dim=3)
    assert (layer.key_dim, layer.value_dim, layer.cache_width) == (13, 10, 13)
    stack = LayerStack("mla", 3, (0, 1, 2), layer, None)
    assert kv_cache_bytes(stack, 63) == 3 * 13 * 63 * 2
    assert decode_macs(stack, 63) == 3 * 4 * 63 * (13 + 10)


def test_mla_absorbed_up_projections_cost_every_head_both_widths_times_the_rank():
    layer = SoftmaxLayer.mla(query_heads=4, rank=10, rope_dim=3, head_widths=(7, 5))
    # by hand: each of 4 heads maps q through W_k^T [7, 10] and its read-out through W_v [5, 10]
    assert layer.absorbed_macs() == 4 * 7 * 10 + 4 * 5 * 10
    kimi = hybrid.preset("Kimi Linear 48B-A3B").softmax
    assert kimi.absorbed_macs() == 32 * (128 + 128) * 512
    with pytest.raises(ValueError, match="head_widths"):
        SoftmaxLayer.mla(query_heads=4, rank=10, rope_dim=3).absorbed_macs()


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_full_attention_grows_linearly_and_a_recurrent_stack_stays_flat(dtype):
    full = full_attention(SMALL)
    recurrent = interleave(SMALL, 0)
    assert full.pattern == "SSSSS" and recurrent.pattern == "RRRRR"
    per_token = kv_bytes_per_token(full, dtype)
    for n in CONTEXTS:
        assert kv_cache_bytes(full, n, dtype) == per_token * n
        assert kv_cache_bytes(full, 2 * n, dtype) == 2 * kv_cache_bytes(full, n, dtype)
        assert state_bytes(full, dtype) == 0
        assert kv_cache_bytes(recurrent, n, dtype) == 0
        assert decode_macs(recurrent, n) == decode_macs(recurrent, 1) == 5 * SMALL_RECURRENT.step_macs()
        numbers = 5 * SMALL_RECURRENT.state_numbers()
        assert state_bytes(recurrent, dtype) == numbers * hybrid.bytes_per_number(dtype)
    work = [decode_macs(full, n) for n in CONTEXTS]
    np.testing.assert_array_equal(np.diff(work) / np.diff(CONTEXTS), 5 * SMALL_SOFTMAX.read_per_token())


@pytest.mark.parametrize("window", [1, 16, 45])
def test_the_window_caps_the_cache_and_the_reads(window):
    capped = windowed(SMALL, window)
    assert capped.softmax.window == window and SMALL.softmax.window is None
    for n in CONTEXTS:
        tokens = min(n, window)
        assert kv_cache_bytes(capped, n) == kv_cache_bytes(SMALL, tokens) == 144 * tokens
        assert decode_macs(capped, n) == decode_macs(SMALL, tokens)
        assert state_bytes(capped) == state_bytes(SMALL)
    assert kv_cache_bytes(capped, 10 * window) == kv_cache_bytes(capped, window)
    assert full_attention(capped).softmax.window is None  # the baseline attends to everything


def interpolated(cost, stack, context):
    """cost(stack, ·) at a real context: integer costs are affine between windows' corners."""
    low = max(math.floor(context), 1)
    return cost(stack, low) + (context - low) * (cost(stack, low + 1) - cost(stack, low))


@pytest.mark.parametrize("measure,cost", [("flops", decode_flops), ("bytes", decode_bytes)])
@pytest.mark.parametrize("name", ["Qwen3-Next-80B-A3B", "Kimi Linear 48B-A3B", "MiniMax-Text-01",
                                  "round 32-layer stack"])
def test_the_break_even_context_solves_cost_hybrid_equals_cost_full(measure, cost, name):
    stack = hybrid.preset(name)
    full = full_attention(stack)
    context = break_even_context(stack, full, measure)
    assert 1 < context < 10_000
    hybrid_side, full_side = interpolated(cost, stack, context), interpolated(cost, full, context)
    assert hybrid_side == pytest.approx(full_side, rel=1e-12)
    before, after = math.floor(context), math.floor(context) + 1
    assert cost(stack, before) >= cost(full, before) and cost(stack, after) < cost(full, after)
    # no window: the closed form (a_hybrid − a_full) / (b_full − b_hybrid)
    one, two = cost(stack, 1), cost(stack, 2)
    full_slope = cost(full, 2) - cost(full, 1)
    closed = (one - (two - one) - (cost(full, 1) - full_slope)) / (full_slope - (two - one))
    assert context == pytest.approx(closed, rel=1e-12)


@pytest.mark.parametrize("window", [64, 200, 1000])
def test_a_window_moves_the_break_even_and_it_still_solves_the_equation(window):
    # without a window the round stack decodes more cheaply than full attention from 192 tokens on
    stack = windowed(hybrid.preset("round 32-layer stack"), window)
    full = full_attention(stack)
    context = break_even_context(stack, full)
    if window <= 192:  # capped early: the hybrid's reads stop growing at the window
        assert context < 192
    else:
        assert context == pytest.approx(192)
    full_side = interpolated(decode_flops, full, context)
    assert interpolated(decode_flops, stack, context) == pytest.approx(full_side, rel=1e-12)


def test_break_even_at_the_ends_zero_and_never():
    small_full = full_attention(SMALL)
    assert break_even_context(small_full, small_full) == math.inf  # equal forever: never cheaper
    assert break_even_context(small_full, windowed(small_full, 16)) == math.inf  # the window wins for good
    assert break_even_context(windowed(small_full, 16), small_full) == 16.0  # equal up to the window
    cheap = LayerStack("cheap", 5, (), None, RecurrentLayer(1, 1, 1, rule="additive"))
    expensive = LayerStack("dear", 5, (), None, RecurrentLayer(9, 9, 9))
    assert break_even_context(cheap, expensive) == 0.0  # cheaper at every context


def test_interleave_places_the_softmax_layers_at_the_end_of_each_group():
    stack = hybrid.preset("round 32-layer stack")
    assert interleave(stack, 1).pattern == "RRRS" * 8 == stack.pattern
    assert interleave(stack, 2).pattern == "RRSS" * 8
    assert interleave(stack, 1, group=8).pattern == "RRRRRRRS" * 4
    assert interleave(stack, 4).pattern == full_attention(stack).pattern
    kimi = hybrid.preset("Kimi Linear 48B-A3B")
    assert interleave(kimi, 1).num_softmax == 6 and kimi.num_softmax == 7  # shipped: layer 27 too


def test_the_shipped_presets_match_their_configurations():
    qwen = hybrid.preset("Qwen3-Next-80B-A3B")
    assert qwen.pattern == "RRRS" * 12 and qwen.num_recurrent == 36
    assert kv_bytes_per_token(qwen) == 12 * 2 * (256 + 256) * 2  # 12 layers, 2 KV heads of 256
    assert qwen.recurrent.state_numbers() == 32 * 128 * 128 + (2 * 16 * 128 + 32 * 128) * 3
    kimi = hybrid.preset("Kimi Linear 48B-A3B")
    assert [i + 1 for i in kimi.softmax_layers] == [4, 8, 12, 16, 20, 24, 27]
    assert kv_bytes_per_token(kimi) == 7 * (512 + 64) * 2
    # "up to 75% less KV cache": 7 of 27 MLA layers keep 26% of full MLA's cache
    ratio = kv_cache_bytes(kimi, 131_072) / kv_cache_bytes(full_attention(kimi), 131_072)
    assert ratio == pytest.approx(7 / 27) and 1 - ratio > 0.74
    minimax = hybrid.preset("MiniMax-Text-01")
    assert minimax.pattern == "RRRRRRRS" * 10 and minimax.recurrent.rule == "additive"
    assert state_bytes(minimax) == 70 * 64 * 128 * 128 * 2
    said = hybrid.minimax_text_01.__doc__
    assert "Not verified" in said and "num_key_value_heads = 8" in said
    m2 = hybrid.preset("MiniMax-M2")
    assert m2.num_recurrent == 0 and state_bytes(m2) == 0 and kv_bytes_per_token(m2) == 62 * 8 * 256 * 2


def test_the_table_at_128k():
    rows = hybrid.cost_table([hybrid.preset("Qwen3-Next-80B-A3B"), hybrid.preset("MiniMax-Text-01")])
    qwen, minimax = rows
    assert qwen["kv_bytes"] == 24_576 * 131_072 and qwen["full_kv_bytes"] == 4 * qwen["kv_bytes"]
    assert qwen["total_bytes"] == qwen["kv_bytes"] + qwen["state_bytes"]
    assert minimax["full_kv_bytes"] == 8 * minimax["kv_bytes"]  # 80 layers against 10
    assert qwen["decode_flops"] < qwen["full_decode_flops"] and qwen["break_even_flops"] < 131_072


@pytest.mark.parametrize("build,error,match", [
    (lambda: SoftmaxLayer.gqa(6, 4, 5), ValueError, "kv_heads must divide query_heads"),
    (lambda: SoftmaxLayer.gqa(6, 3, 0), ValueError, "head_dim"),
    (lambda: SoftmaxLayer.gqa(6, 3, 5, window=0), ValueError, "window"),
    (lambda: SoftmaxLayer.gqa(6, 3, 5, window=4.5), TypeError, "window"),
    (lambda: SoftmaxLayer.mla(4, 10, -1), ValueError, "rope_dim"),
    (lambda: SoftmaxLayer.mla(4, 10, 3, head_widths=(7,)), TypeError, "head_widths"),
    (lambda: SoftmaxLayer.mla(4, 10, 3, head_widths=(7, 0)), ValueError, "head_widths"),
    (lambda: RecurrentLayer(3, 5, 7, rule="hebbian"), ValueError, "rule must be one of"),
    (lambda: RecurrentLayer(3, 5, 7, conv_channels=8), ValueError, "conv_channels and conv_kernel"),
    (lambda: RecurrentLayer(True, 5, 7), TypeError, "heads"),
    (lambda: LayerStack("x", 5, (1, 5), SMALL_SOFTMAX, SMALL_RECURRENT), ValueError, "softmax_layers"),
    (lambda: LayerStack("x", 5, (1, 1), SMALL_SOFTMAX, SMALL_RECURRENT), ValueError, "softmax_layers"),
    (lambda: LayerStack("x", 5, (1,), None, SMALL_RECURRENT), TypeError, "softmax must be a SoftmaxLayer"),
    (lambda: LayerStack("x", 5, (1,), SMALL_SOFTMAX, None), TypeError, "recurrent must be a RecurrentLayer"),
    (lambda: LayerStack("x", 0, (), None, SMALL_RECURRENT), ValueError, "num_layers"),
    (lambda: kv_cache_bytes(SMALL, 0), ValueError, "n must be a positive int"),
    (lambda: kv_cache_bytes(SMALL, 45, "int4"), ValueError, "dtype must be one of"),
    (lambda: decode_flops("small", 45), TypeError, "stack must be a LayerStack"),
    (lambda: break_even_context(SMALL, None), TypeError, "full must be a LayerStack"),
    (lambda: break_even_context(SMALL, SMALL, "seconds"), ValueError, "measure must be one of"),
    (lambda: interleave(SMALL, 5), ValueError, "softmax_per_group must be at most"),
    (lambda: windowed(LayerStack("r", 5, (), None, SMALL_RECURRENT), 16), ValueError, "no softmax layer"),
    (lambda: full_attention(LayerStack("r", 5, (), None, SMALL_RECURRENT)), ValueError, "no softmax layer"),
    (lambda: hybrid.preset("GPT-5"), ValueError, "name must be one of"),
])
def test_bad_input_is_refused_by_name(build, error, match):
    with pytest.raises(error, match=match):
        build()


def test_qwen3_next_projection_weights_counted_by_hand():
    weights = hybrid.qwen3_next_projection_weights()
    # Gated DeltaNet: 2,048 · (4,096 q,k + 4,096 v + 4,096 gate + 64 β, decay) + 4,096 · 2,048
    assert weights["deltanet"] == 2048 * 12_352 + 4096 * 2048 == 33_685_504
    # gated attention: 2,048 · (4,096 q + 4,096 gate + 512 k + 512 v) + 4,096 · 2,048
    assert weights["attention"] == 2048 * 9216 + 4096 * 2048 == 27_262_976
    assert weights["extra"] == 6_422_528 == weights["deltanet"] - weights["attention"]
    # the widths agree with the preset's shape
    qwen = hybrid.preset("Qwen3-Next-80B-A3B")
    deltanet, attention = qwen.recurrent, qwen.softmax
    assert attention.query_heads * attention.value_dim == deltanet.heads * deltanet.value_dim == 2 * 2048
    assert (attention.query_heads, attention.key_dim, attention.cache_width) == (16, 256, 1024)
    assert (deltanet.heads, deltanet.key_dim, deltanet.value_dim) == (32, 128, 128)
    assert deltanet.conv_channels == 2 * 16 * 128 + 32 * 128  # q and k: 16 key heads
    # counted with the projections, the batch-1 traffic break-even is a whole 7,344 tokens
    assert (2 * deltanet.state_numbers() + weights["extra"]) / attention.cache_width == 7344


def test_qwen3_next_projection_shapes_are_the_weights_matrices():
    shapes = hybrid.qwen3_next_projection_shapes()
    # by hand, (inputs, outputs): 16 + 16 key heads of 128 and 32 value heads of 128 plus the
    # 4,096-wide gate z; β and the decay, 32 each; 4,096 value channels back to 2,048
    assert shapes["deltanet"] == {"in_proj_qkvz": (2048, 12_288), "in_proj_ba": (2048, 64),
                                  "out_proj": (4096, 2048)}
    # q (16 heads of 256) and its gate; k and v, 2 heads of 256; 4,096 back to 2,048
    assert shapes["attention"] == {"q_proj": (2048, 8192), "k_proj": (2048, 512),
                                   "v_proj": (2048, 512), "o_proj": (4096, 2048)}
    weights = hybrid.qwen3_next_projection_weights()
    assert 2048 * 12_288 + 2048 * 64 + 4096 * 2048 == weights["deltanet"]
    assert 2048 * 8192 + 2 * 2048 * 512 + 4096 * 2048 == weights["attention"]
