"""Chapter 15's exercises: each accepts its solution, its checker stands on the package's own counts
and code (lattn_edu.hybrid, lattn_edu.log_linear, lattn_edu.lm.decode), and it rejects the slips a
student is likely to make."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lattn_edu import hybrid
from lattn_edu.exercises import CATALOG, ExerciseFailed, ch15
from lattn_edu.lm import crossing_context
from lattn_edu.log_linear import fenwick_levels, levels_needed

IDS = ("ch15.hybrid_kv_bytes", "ch15.break_even_context", "ch15.log_linear_states",
       "ch15.window_matching_state", "ch15.decode_crossing", "ch15.traffic_break_even")


def check(exercise_id, answer):
    CATALOG[exercise_id].check(answer)


def test_chapter_15_has_its_exercises():
    assert set(IDS) == {i for i in CATALOG if i.startswith("ch15.")}
    assert all(CATALOG[i].kind == "code" for i in IDS)


@pytest.mark.parametrize("exercise_id", IDS)
def test_accepts_its_solution(exercise_id):
    check(exercise_id, CATALOG[exercise_id].solution)


# --- ch15.hybrid_kv_bytes

def test_kv_cases_cover_no_softmax_all_softmax_grouped_queries_and_every_dtype():
    cases = ch15._kv_cases()
    assert {case["softmax_per_group"] for case in cases} >= {0}
    assert any(case["softmax_per_group"] == case["group"] for case in cases)
    assert sum(case["query_heads"] != case["kv_heads"] for case in cases) >= 4
    assert {case["bytes_per_number"] for case in cases} == {1, 2, 4, 8}
    assert all(case["num_layers"] % case["group"] == 0 for case in cases)


def test_qwen3_next_kv_cache_at_128k_is_the_preset_s():
    qwen = hybrid.qwen3_next_80b_a3b()
    case = ch15._kv_cases()[0]
    expected = hybrid.kv_cache_bytes(qwen, 131_072)  # 12 layers · 131072 · 2 · 2 · 256 · 2 bytes = 3 GiB
    assert ch15.solution_hybrid_kv_bytes(**case) == expected == 3 * 2**30
    assert ch15.package_kv_bytes(**case) == expected


@pytest.mark.parametrize("wrong", [
    lambda **c: ch15.solution_hybrid_kv_bytes(**c) // 2,  # keys only: no factor 2
    lambda **c: c["num_layers"] * c["context"] * c["kv_heads"] * 2 * c["head_dim"] * c["bytes_per_number"],
    lambda **c: ch15.solution_hybrid_kv_bytes(**{**c, "kv_heads": c["query_heads"]}),
], ids=["keys only", "every layer softmax", "query heads"])
def test_kv_bytes_slips_are_rejected(wrong):
    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch15.hybrid_kv_bytes", wrong)


# --- ch15.break_even_context

def _ratio(stack):  # R/a of one replaced layer
    return stack.recurrent.step_macs() / stack.softmax.read_per_token()


def test_break_even_cases_have_windows_shorter_than_r_over_a():
    stacks = [case["stack"] for case in ch15._break_even_cases()]
    assert all(1 <= s.softmax.window < _ratio(s) for s in stacks)
    assert {s.recurrent.rule for s in stacks} == {"delta", "additive"}
    assert any(s.recurrent.conv_channels for s in stacks)
    assert {s.num_softmax / s.num_layers for s in stacks} >= {0.25, 0.5, 0.75}


def test_break_even_answer_is_where_the_costs_are_equal():
    """At the solution's N* the windowed hybrid's multiply–adds equal the twin's; just before
    the first whole context past it the hybrid costs more, at it no more."""
    for case in ch15._break_even_cases():
        stack = case["stack"]
        full, n_star = hybrid.full_attention(stack), ch15.solution_break_even_context(stack)
        assert n_star > stack.softmax.window  # past the window, as the derivation says
        whole = math.ceil(n_star)
        assert hybrid.decode_macs(stack, whole) <= hybrid.decode_macs(full, whole)
        if whole - 1 >= 1 and whole != n_star:
            assert hybrid.decode_macs(stack, whole - 1) > hybrid.decode_macs(full, whole - 1)


def test_the_short_window_formula_matches_the_package_by_hand():
    """Qwen3-Next, 1 softmax layer in 4, window 64: 64/4 + (3/4) · 196 = 163."""
    stack = hybrid.windowed(hybrid.interleave(hybrid.qwen3_next_80b_a3b(), 1, 4), 64)
    assert ch15.package_break_even(stack) == 64 / 4 + 3 / 4 * 196 == 163
    assert ch15.solution_break_even_context(stack) == 163


def test_with_a_short_window_the_break_even_depends_on_the_ratio():
    qwen = hybrid.qwen3_next_80b_a3b()
    evens = [ch15.package_break_even(hybrid.windowed(hybrid.interleave(qwen, k, 4), 64))
             for k in (1, 2, 3)]
    assert evens == sorted(evens, reverse=True) and len(set(evens)) == 3  # more softmax: earlier


def test_full_attention_puts_the_softmax_layer_in_place_of_each_recurrent_one():
    stack = hybrid.windowed(hybrid.interleave(hybrid.kimi_linear_48b_a3b(), 1, 4), 10)
    full = hybrid.full_attention(stack)
    assert full.num_softmax == full.num_layers == stack.num_layers
    assert full.softmax.window is None and full.softmax.query_heads == stack.softmax.query_heads


def _share(stack):
    return stack.num_softmax / stack.num_layers


@pytest.mark.parametrize("wrong", [
    _ratio,  # the unwindowed R/a
    lambda stack: (1 - _share(stack)) * stack.softmax.window + _share(stack) * _ratio(stack),
    lambda stack: float(stack.softmax.window),  # the window alone
    lambda stack: float(math.ceil(ch15.solution_break_even_context(stack))),  # rounded up
], ids=["unwindowed R/a", "shares swapped", "the window", "rounded up"])
def test_break_even_slips_are_rejected(wrong):
    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch15.break_even_context", wrong)


def test_break_even_refuses_the_package_function_and_restores_it():
    """The exercise asks for the closed form: an answer that calls hybrid.break_even_context
    (or cost_table, which calls it) is refused, and the function works again afterwards."""
    def calls_the_package(stack):
        return hybrid.break_even_context(stack, hybrid.full_attention(stack))

    def calls_the_table(stack):
        return hybrid.cost_table([stack])[0]["break_even_flops"]

    original = hybrid.break_even_context
    for answer in (calls_the_package, calls_the_table):
        with pytest.raises(ExerciseFailed, match="raised RuntimeError: .*break_even_context.*switched off"):
            check("ch15.break_even_context", answer)
        assert hybrid.break_even_context is original
    stack = ch15._break_even_cases()[0]["stack"]
    assert hybrid.break_even_context(stack, hybrid.full_attention(stack)) == pytest.approx(
        ch15.solution_break_even_context(stack))


# --- ch15.log_linear_states

def test_one_plus_popcount_counts_the_filled_levels_of_every_position_below_2048():
    levels = fenwick_levels(2048)  # [2048, 2048]
    t = np.arange(2048)
    filled = np.array([len(set(row[row >= 0])) for row in levels])
    np.testing.assert_array_equal(ch15.solution_log_linear_states(t), filled)
    assert all(ch15.solution_log_linear_states(int(i)) == filled[i] for i in (0, 1, 6, 1000, 2047))


def test_level_cases_reach_5000_and_include_scalars_and_arrays():
    cases = [case["t"] for case in ch15._level_cases()]
    assert {0, 1, 2, 3, 7, 8, 255, 1023, 1000} <= {t for t in cases if np.ndim(t) == 0}
    arrays = [t for t in cases if np.ndim(t) == 1]
    assert arrays and max(int(t.max()) for t in arrays) == 5000
    assert isinstance(ch15.solution_log_linear_states(7), int)


@pytest.mark.parametrize("wrong", [
    lambda t: np.vectorize(lambda x: bin(x).count("1"))(t),  # no level 0
    lambda t: np.vectorize(lambda x: levels_needed(x + 1))(t),  # allocated, not filled
    lambda t: np.vectorize(lambda x: x.bit_length())(t),
], ids=["popcount", "levels_needed", "bit_length"])
def test_level_count_slips_are_rejected(wrong):
    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch15.log_linear_states", lambda t: wrong(np.asarray(t, dtype=object)).astype(int))


# --- ch15.window_matching_state

def test_the_matching_window_fits_and_one_more_token_does_not():
    for case in ch15._window_cases():
        w = ch15.solution_window_matching_state(**case)
        numbers = case["heads"] * case["d_k"] * case["d_v"]
        per_token = 2 * case["kv_heads"] * case["head_dim"]
        assert w * per_token <= numbers < (w + 1) * per_token


def test_qwen3_next_window_matches_the_preset_s_layers():
    """The preset counts one state per value head (32 of 128 × 128); its attention layer caches
    2 KV heads of 256: a window of 512 tokens weighs one Gated DeltaNet state, convolution aside."""
    qwen = hybrid.qwen3_next_80b_a3b()
    rec, case = qwen.recurrent, ch15._window_cases()[0]
    assert (rec.heads, rec.key_dim, rec.value_dim) == (case["heads"], case["d_k"], case["d_v"])
    assert qwen.softmax.cache_width == 2 * case["kv_heads"] * case["head_dim"]
    assert ch15.solution_window_matching_state(**case) == 512


@pytest.mark.parametrize("wrong", [
    lambda heads, d_k, d_v, kv_heads, head_dim: heads * d_k * d_v // (kv_heads * head_dim),
    lambda heads, d_k, d_v, kv_heads, head_dim: -(-heads * d_k * d_v // (2 * kv_heads * head_dim)),
], ids=["keys only", "ceil"])
def test_window_slips_are_rejected(wrong):
    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch15.window_matching_state", wrong)


# --- ch15.decode_crossing

def test_crossing_by_hand():
    # gap −1 at 10, +1 at 30: zero half way
    assert crossing_context([10, 30], [1.0, 3.0], [2.0, 2.0]) == 20.0
    # equal at the timed 20, above from there: the crossing is the tie
    assert crossing_context([10, 20, 30], [1.0, 2.0, 3.0], [2.0, 2.0, 2.0]) == 20.0
    # a dip after an early excursion above is not a crossing into "above"
    assert crossing_context([1, 2, 3, 4], [0.0, 1.0, 3.0, 5.0], [2.0, 2.0, 2.0, 2.0]) == 2.5


def test_crossing_outside_the_range_and_bad_input_are_clear_errors():
    with pytest.raises(ValueError, match="not in the measured range"):
        crossing_context([1, 2, 3], [5.0, 6.0, 7.0], [1.0, 1.0, 1.0])  # above from the start
    with pytest.raises(ValueError, match="not in the measured range"):
        crossing_context([1, 2, 3], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0])  # never above
    with pytest.raises(ValueError, match="strictly increasing"):
        crossing_context([1, 1, 3], [0.0, 1.0, 3.0], [2.0, 2.0, 2.0])
    with pytest.raises(ValueError, match="one entry per context"):
        crossing_context([1, 2, 3], [0.0, 3.0], [2.0, 2.0, 2.0])
    with pytest.raises(ValueError, match="rising must be"):
        crossing_context([1, 2], [0.0, np.nan], [2.0, 2.0])


def test_crossing_cases_each_cross_once_inside_their_range_and_one_is_the_record():
    cases = ch15._crossing_cases()
    for case in cases:
        n = case["contexts"]
        assert n[0] < crossing_context(**case) <= n[-1]
    assert cases[0]["contexts"] == [256, 1024, 4096, 16384]


def _geometric(crossing, contexts):
    """The same share of the interval, taken on a log scale of the context."""
    i = int(np.searchsorted(contexts, crossing)) - 1
    lo, hi = contexts[max(i, 0)], contexts[max(i, 0) + 1]
    return lo * (hi / lo) ** ((crossing - lo) / (hi - lo))


@pytest.mark.parametrize("wrong", [
    lambda contexts, rising, flat: float(contexts[int(np.argmax(rising > flat))]),  # first timed above
    lambda contexts, rising, flat: float(contexts[int(np.argmax(rising > flat)) - 1]),  # last below
    lambda contexts, rising, flat: crossing_context(contexts, rising, np.full(len(flat), np.mean(flat))),
    lambda contexts, rising, flat: _geometric(crossing_context(contexts, rising, flat), contexts),
], ids=["first context above", "last context below", "flat taken as its mean", "geometric interpolation"])
def test_crossing_slips_are_rejected(wrong):
    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch15.decode_crossing", wrong)


# --- ch15.traffic_break_even

def test_qwen3_next_traffic_break_even_with_projections_by_hand():
    """n_S = 32·128·128 + 8,192·3 = 548,864, c = 2·2·256 = 1,024, P = 6,422,528:
    (2 · 548,864 + 6,422,528) / 1,024 = 7,344 tokens, in any one dtype."""
    qwen = hybrid.qwen3_next_80b_a3b()
    extra = hybrid.qwen3_next_projection_weights()["extra"]
    assert ch15._traffic_cases()[0] == {"stack": qwen, "extra_weights": extra}
    assert ch15.solution_traffic_break_even(qwen, extra) == 7344
    assert ch15.package_traffic_break_even(qwen, extra) == 7344
    assert ch15.package_traffic_break_even(qwen, extra, "float32") == 7344
    # without the projections: the traffic break-even, twice the held 536
    assert ch15.package_traffic_break_even(qwen, 0) == 1072


def test_traffic_cases_include_no_extra_fewer_weights_and_the_first_token():
    answers = [ch15.package_traffic_break_even(**case) for case in ch15._traffic_cases()]
    weights = [case["extra_weights"] for case in ch15._traffic_cases()]
    assert 0 in weights and any(w < 0 for w in weights) and 1 in answers
    assert answers[0] == answers[1]  # 1 or 2 softmax layers per 4: the count cancels
    assert len(set(answers[1:])) == len(answers) - 1


@pytest.mark.parametrize("wrong", [
    lambda stack, extra_weights: ch15.solution_traffic_break_even(stack, 0),  # no projections
    lambda stack, extra_weights: max(1, math.ceil(  # the state only read
        (stack.recurrent.state_numbers() + extra_weights) / stack.softmax.cache_width)),
    lambda stack, extra_weights: max(1, math.ceil(  # the weights read and written
        (2 * stack.recurrent.state_numbers() + 2 * extra_weights) / stack.softmax.cache_width)),
    lambda stack, extra_weights: max(1, math.floor(
        (2 * stack.recurrent.state_numbers() + extra_weights) / stack.softmax.cache_width)),
], ids=["no projections", "state read only", "weights counted twice", "floor"])
def test_traffic_slips_are_rejected(wrong):
    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch15.traffic_break_even", wrong)
