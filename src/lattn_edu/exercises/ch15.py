"""Exercises for chapter 15 (hybrids, log-linear attention, sliding windows): the KV cache of a
hybrid as a function of its ratio and the context, the context from which a hybrid whose softmax
layers have a short window decodes with fewer multiply–adds than full attention, how many
Fenwick level states log-linear attention holds after a token, the sliding window whose cache weighs as much as one recurrent state, the
context at which one measured decode time overtakes another (the clock's crossing), and the
batch-1 traffic break-even with the projection weights counted.

What each checker compares with (the package's own counts, never the solutions):

- ``ch15.hybrid_kv_bytes``: :func:`lattn_edu.hybrid.kv_cache_bytes` of the stack built with
  :func:`lattn_edu.hybrid.interleave` (softmax layers ``SoftmaxLayer.gqa``), in the dtype whose
  :func:`lattn_edu.hybrid.bytes_per_number` is the case's; exact (rtol 0).
- ``ch15.break_even_context``: :func:`lattn_edu.hybrid.break_even_context` (``hybrid``,
  ``full_attention(hybrid)``, "flops") of hybrids whose softmax layers have a window shorter
  than R/a, against the unwindowed twin; rtol 1e-9. The exercise asks for the closed form, so
  ``hybrid.break_even_context`` is switched off (it raises) while the answer runs, and
  restored after; the answer may read the stack's attributes and counting methods.
- ``ch15.log_linear_states``: the distinct levels (entries >= 0) in row t of
  :func:`lattn_edu.log_linear.fenwick_levels`, one table of 5001 positions for every case.
- ``ch15.window_matching_state``: the largest W found by bisection with the package's bytes,
  :func:`lattn_edu.hybrid.kv_cache_bytes` of a one-layer windowed stack at context W against
  :func:`lattn_edu.hybrid.state_bytes` of a one-layer recurrent stack without a convolution.
- ``ch15.decode_crossing``: :func:`lattn_edu.lm.decode.crossing_context`; rtol 1e-9. Its first
  case is the recorded decode benchmark (``lm_decode.json``), softmax against Gated DeltaNet.
- ``ch15.traffic_break_even``: the first whole context N >= 1 found by bisection at which
  :func:`lattn_edu.hybrid.decode_bytes` of the hybrid plus its replaced layers' extra projection
  weights (read once per step, same dtype) is at most ``decode_bytes`` of ``full_attention``;
  exact. Its first case is Qwen3-Next with
  :func:`lattn_edu.hybrid.qwen3_next_projection_weights`.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .. import hybrid
from ..lm.decode import crossing_context
from ..log_linear import fenwick_levels, levels_needed
from ..records import load_record
from .base import Exercise, check_function, without_package

# --- ch15.hybrid_kv_bytes


def solution_hybrid_kv_bytes(num_layers, softmax_per_group, group,
                             query_heads, kv_heads, head_dim, context,
                             bytes_per_number):
    """KV-cache bytes of a hybrid at ``context`` tokens: an int.

    Only the softmax layers cache, and only their KV heads: the
    query heads read the cache but add nothing to it.
    """
    softmax_layers = num_layers // group * softmax_per_group
    per_token = kv_heads * 2 * head_dim  # a key and a value per KV head
    return softmax_layers * context * per_token * bytes_per_number


DTYPE_OF_BYTES = {hybrid.bytes_per_number(dtype): dtype for dtype in ("float8", "bfloat16", "float32",
                                                                        "float64")}


def _kv_cases():
    """Qwen3-Next's shape at 128k, pure recurrent and full attention, MHA and MQA, odd sizes."""
    names = ("num_layers", "softmax_per_group", "group", "query_heads", "kv_heads", "head_dim",
             "context", "bytes_per_number")
    shapes = ((48, 1, 4, 16, 2, 256, 131_072, 2),  # Qwen3-Next-80B-A3B
              (8, 0, 4, 8, 2, 64, 1000, 2),  # pure recurrent: no cache
              (12, 3, 3, 6, 6, 32, 77, 4),  # every layer softmax, multi-head attention
              (45, 2, 5, 9, 3, 17, 1001, 1),
              (21, 1, 7, 15, 5, 48, 4097, 8),
              (30, 2, 3, 12, 1, 96, 9, 2),  # multi-query attention
              (80, 1, 8, 64, 8, 128, 1_000_000, 2))  # MiniMax-Text-01's shape at a million
    return [dict(zip(names, shape)) for shape in shapes]


def package_kv_bytes(num_layers, softmax_per_group, group, query_heads, kv_heads, head_dim, context,
                     bytes_per_number):
    """hybrid.kv_cache_bytes of the interleaved stack (the recurrent layers' shape does not matter)."""
    recurrent = hybrid.LayerStack("recurrent", num_layers, (), hybrid.SoftmaxLayer.gqa(
        query_heads, kv_heads, head_dim), hybrid.RecurrentLayer(heads=1, key_dim=1, value_dim=1))
    stack = hybrid.interleave(recurrent, softmax_per_group, group)
    return hybrid.kv_cache_bytes(stack, context, DTYPE_OF_BYTES[bytes_per_number])


def _check_hybrid_kv_bytes(answer):
    check_function(answer, package_kv_bytes, _kv_cases(), rtol=0.0)


# --- ch15.break_even_context


def solution_break_even_context(stack):
    """Context N* at which ``stack``, its softmax layers windowed to
    w < R/a, does as many multiply–adds per token as full_attention(stack):
    a float.

    Beyond w the hybrid does s·a·w + (L − s)·R, its twin L·a·N: equal at
    N* = (s/L)·w + (1 − s/L)·R/a, which lies beyond w since R/a > w.
    """
    share = stack.num_softmax / stack.num_layers  # s/L
    window = stack.softmax.window  # w
    ratio = stack.recurrent.step_macs() / stack.softmax.read_per_token()  # R/a
    return share * window + (1 - share) * ratio


def _short_windows(stack):
    """Three windows shorter than the stack's R/a: 1, about a third of it, and its last whole
    token below it."""
    ratio = stack.recurrent.step_macs() / stack.softmax.read_per_token()
    last = math.ceil(ratio) - 1  # the largest whole w < R/a
    return sorted({1, max(1, last // 3), last})


def _break_even_cases():
    """The round stack and the presets' hybrids at 1, 2 and 3 softmax layers per 4, and odd
    shapes with a convolution and an additive rule, each windowed to three windows shorter than
    its R/a."""
    bases = [hybrid.round_stack(), hybrid.qwen3_next_80b_a3b(), hybrid.kimi_linear_48b_a3b(),
             hybrid.minimax_text_01()]
    stacks = [hybrid.interleave(base, per_group, 4) for base in bases for per_group in (1, 2, 3)]
    stacks.append(hybrid.LayerStack("odd additive", 7, (2, 5), hybrid.SoftmaxLayer.gqa(9, 3, 5, 7),
                                    hybrid.RecurrentLayer(5, 3, 7, "additive", 11, 3)))
    stacks.append(hybrid.LayerStack("odd delta", 9, (4,), hybrid.SoftmaxLayer.gqa(15, 5, 11),
                                    hybrid.RecurrentLayer(7, 13, 9, "delta", conv_channels=5,
                                                          conv_kernel=4)))
    return [{"stack": hybrid.windowed(stack, w)} for stack in stacks for w in _short_windows(stack)]


def package_break_even(stack):
    """hybrid.break_even_context of the windowed hybrid against its unwindowed twin (FLOPs)."""
    return hybrid.break_even_context(stack, hybrid.full_attention(stack), "flops")


def _check_break_even_context(answer):
    check_function(without_package(answer, "hybrid.break_even_context"), package_break_even,
                   _break_even_cases(), rtol=1e-9)


# --- ch15.log_linear_states


def solution_log_linear_states(t):
    """Non-empty Fenwick levels after the token at position t (0-based):
    an int, or an int array like t.

    Level 0 holds token t; level l >= 1 holds the 2^(l−1) tokens before
    t's l−1 low bits, non-empty when bit l−1 of t is set: 1 + popcount(t).
    """
    t = np.asarray(t)
    count = np.ones_like(t)  # level 0: the token itself
    for bit in range(int(t.max()).bit_length()):  # level bit + 1
        count += (t >> bit) & 1
    return count if count.ndim else int(count)


TABLE_POSITIONS = 5001  # one level table covers every case


@functools.lru_cache(maxsize=2)
def filled_level_counts(n):
    """The distinct levels (entries >= 0) in each row of fenwick_levels(n): [n]."""
    levels = fenwick_levels(n)  # row t: level(t, s) for s <= t, −1 after  [n, n]
    return sum((levels == level).any(axis=1).astype(int) for level in range(levels_needed(n)))


def package_level_states(t):
    """The distinct levels in row t of fenwick_levels: the same shape as t."""
    t = np.asarray(t)
    return filled_level_counts(max(TABLE_POSITIONS, int(t.max()) + 1))[t]


def _level_cases():
    """The first positions, powers of two and one before them, and random ones up to 5000."""
    positions = [{"t": t} for t in (0, 1, 2, 3, 7, 8, 255, 1023, 1000)]
    random = np.random.default_rng(153).integers(0, TABLE_POSITIONS, 11)
    return positions + [{"t": random}, {"t": np.array([0, 4096, 4095, 5000])}]


def _check_log_linear_states(answer):
    check_function(answer, package_level_states, _level_cases(), rtol=0.0)


# --- ch15.window_matching_state


def solution_window_matching_state(heads, d_k, d_v, kv_heads, head_dim):
    """Largest sliding window W whose KV cache holds no more numbers
    than one recurrent layer's state: an int (0 if not even one token).

    The state holds heads·d_k·d_v numbers; the window caches W tokens
    of kv_heads keys and values of head_dim numbers.
    """
    state = heads * d_k * d_v
    per_token = kv_heads * 2 * head_dim  # a key and a value per KV head
    return state // per_token  # floor: W + 1 tokens would not fit


def _window_cases():
    """Qwen3-Next's and MiniMax-Text-01's layers, the round stack's, odd sizes, one too small."""
    names = ("heads", "d_k", "d_v", "kv_heads", "head_dim")
    shapes = ((32, 128, 128, 2, 256),  # Qwen3-Next: 32 value heads' states, 2 KV heads of 256
              (32, 128, 128, 8, 128),  # the round stack
              (64, 128, 128, 8, 128),  # MiniMax-Text-01
              (5, 3, 7, 2, 5), (7, 9, 11, 3, 13), (16, 64, 96, 1, 80),
              (1, 3, 5, 2, 7))  # 15 numbers: less than one token's 28
    return [dict(zip(names, shape)) for shape in shapes]


def _first_whole(holds):
    """The smallest whole n >= 1 with holds(n), for a ``holds`` that stays true once true: by
    doubling, then bisection."""
    if holds(1):
        return 1
    low, high = 1, 2  # not holds(low); high is to be tried
    while not holds(high):
        low, high = high, 2 * high
    while high - low > 1:  # not holds(low), holds(high)
        middle = (low + high) // 2
        low, high = (low, middle) if holds(middle) else (middle, high)
    return high


def package_matching_window(heads, d_k, d_v, kv_heads, head_dim):
    """The largest W with kv_cache_bytes(window W, at context W) <= state_bytes, by bisection."""
    state = hybrid.state_bytes(hybrid.LayerStack("one recurrent layer", 1, (), None, hybrid.RecurrentLayer(
        heads, d_k, d_v, conv_channels=0, conv_kernel=0)))
    softmax = hybrid.SoftmaxLayer.gqa(query_heads=kv_heads, kv_heads=kv_heads, head_dim=head_dim)
    layer = hybrid.LayerStack("one softmax layer", 1, (0,), softmax, None)

    def too_big(window):
        return hybrid.kv_cache_bytes(hybrid.windowed(layer, window), window) > state

    return _first_whole(too_big) - 1


def _check_window_matching_state(answer):
    check_function(answer, package_matching_window, _window_cases(), rtol=0.0)


# --- ch15.decode_crossing


def solution_decode_crossing(contexts, rising, flat):
    """Context where rising's time first exceeds flat's: a float.

    Find the first timed interval whose gap rising − flat goes from <= 0
    to > 0, and put the crossing where the straight line between the
    two gaps is zero.
    """
    gap = np.asarray(rising, dtype=float) - np.asarray(flat, dtype=float)
    for i in range(len(contexts) - 1):
        if gap[i] <= 0 < gap[i + 1]:
            share = -gap[i] / (gap[i + 1] - gap[i])  # of the interval, before zero
            return contexts[i] + share * (contexts[i + 1] - contexts[i])
    raise ValueError("no crossing inside the timed contexts")


def _crossing_cases():
    """The recorded decode benchmark's softmax against Gated DeltaNet, a tie at a timed context,
    a crossing after an earlier dip, odd spacings and units; each crosses inside its range."""
    rng = np.random.default_rng(161)
    decode = load_record("lm_decode.json")
    median = {(r["model"], r["context"]): r["median_ms"] for r in decode["rows"]}
    contexts = decode["settings"]["contexts"]
    cases = [(contexts, [median["softmax", n] for n in contexts],
              [median["gated_deltanet", n] for n in contexts]),
             ([10, 20, 30], [1.0, 2.0, 3.0], [2.0, 2.0, 2.0]),  # equal at 20, above from there
             ([1, 3, 7, 15, 31], [5.0, 4.0, 4.5, 6.0, 9.0], [5.5, 5.5, 5.5, 5.5, 5.5]),
             ([100, 250], [0.5, 0.9], [0.6, 0.61])]
    for size in (5, 9):
        contexts = np.cumsum(rng.integers(1, 50, size)).tolist()
        flat = rng.uniform(1.0, 2.0, size)
        rising = np.linspace(0.2, 4.0, size) + rng.uniform(0.0, 0.05, size)
        cases.append((contexts, rising, flat))
    return [{"contexts": c, "rising": np.asarray(r, dtype=float), "flat": np.asarray(f, dtype=float)}
            for c, r, f in cases]


def _check_decode_crossing(answer):
    check_function(answer, crossing_context, _crossing_cases(), rtol=1e-9)


# --- ch15.traffic_break_even


def solution_traffic_break_even(stack, extra_weights):
    """Smallest context N >= 1 at which ``stack`` moves no more bytes per
    decoded token (batch 1) than full_attention(stack), counting that each
    recurrent layer has ``extra_weights`` more projection weights than
    the softmax layer it replaces: an int.

    Per replaced layer: its state is read and written (2 n_S numbers) and
    its extra weights read once (P_extra), against c·N cached numbers read. One
    bytes-per-number multiplies every term, so it cancels.
    """
    state = stack.recurrent.state_numbers()  # n_S, convolution included
    width = stack.softmax.cache_width  # c, numbers cached per token
    return max(1, math.ceil((2 * state + extra_weights) / width))


def _traffic_cases():
    """Qwen3-Next with its projections (1 and 2 softmax layers per 4), the round stack without
    extra weights, a recurrent layer with fewer weights than its softmax layer, odd shapes."""
    qwen = hybrid.qwen3_next_80b_a3b()
    extra = hybrid.qwen3_next_projection_weights()["extra"]
    cases = [(qwen, extra), (hybrid.interleave(qwen, 2, 4), extra), (hybrid.round_stack(), 0),
             (hybrid.minimax_text_01(), 1_000_003), (hybrid.kimi_linear_48b_a3b(), 777_777),
             (hybrid.round_stack(), -1_000_000),  # fewer weights: break-even earlier
             (hybrid.round_stack(), -10**9)]  # cheaper from the first token
    cases.append((hybrid.LayerStack("odd delta", 9, (4,), hybrid.SoftmaxLayer.gqa(15, 5, 11),
                                    hybrid.RecurrentLayer(7, 13, 9, "delta", conv_channels=5,
                                                          conv_kernel=4)), 1234))
    return [{"stack": stack, "extra_weights": weights} for stack, weights in cases]


def package_traffic_break_even(stack, extra_weights, dtype="bfloat16"):
    """The first whole N where the hybrid's decode_bytes plus its extra weights' bytes is at most
    the twin's decode_bytes, by bisection on the package's counts."""
    full = hybrid.full_attention(stack)
    extra = stack.num_recurrent * extra_weights * hybrid.bytes_per_number(dtype)

    def no_more(n):
        return hybrid.decode_bytes(stack, n, dtype) + extra <= hybrid.decode_bytes(full, n, dtype)

    return _first_whole(no_more)


def _check_traffic_break_even(answer):
    check_function(answer, package_traffic_break_even, _traffic_cases(), rtol=0.0)


EXERCISES = [
    Exercise("ch15.hybrid_kv_bytes", "The KV cache of a hybrid: ratio and context",
             "code", solution_hybrid_kv_bytes, _check_hybrid_kv_bytes),
    Exercise("ch15.break_even_context", "The work break-even with a short window",
             "code", solution_break_even_context, _check_break_even_context),
    Exercise("ch15.log_linear_states", "How many level states log-linear attention holds",
             "code", solution_log_linear_states, _check_log_linear_states),
    Exercise("ch15.window_matching_state", "The sliding window that weighs one recurrent state",
             "code", solution_window_matching_state, _check_window_matching_state),
    Exercise("ch15.decode_crossing", "Where one measured decode time overtakes another",
             "code", solution_decode_crossing, _check_decode_crossing),
    Exercise("ch15.traffic_break_even", "The traffic break-even with the projections counted",
             "code", solution_traffic_break_even, _check_traffic_break_even),
]
