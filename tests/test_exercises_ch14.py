"""Chapter 14's exercises: each accepts its solution and rejects the mistakes a student is likely
to make, with a message that says what went wrong; the checkers' references (the package's
delta rule and least squares, an inverse, a stacked recurrence, the normal equations) agree
with the closed forms and with the package where the chapter says they do."""

from __future__ import annotations

import numpy as np
import pytest

import lattn_edu as la
from lattn_edu.exercises import CATALOG, ExerciseFailed, ch14
from lattn_edu.memory import make_keys, make_values

IDS = ("ch14.delta_gradient", "ch14.sherman_morrison", "ch14.momentum_state", "ch14.longhorn_step",
       "ch14.least_squares_leftover")


def check(exercise_id, answer):
    CATALOG[exercise_id].check(answer)


def test_chapter_14_has_its_exercises():
    assert set(IDS) == {i for i in CATALOG if i.startswith("ch14.")}
    assert all(CATALOG[i].kind == "code" for i in IDS)


@pytest.mark.parametrize("exercise_id", IDS)
def test_accepts_its_solution(exercise_id):
    check(exercise_id, CATALOG[exercise_id].solution)


# --- ch14.delta_gradient

def test_delta_cases_cover_non_unit_keys_the_whole_beta_range_and_odd_sizes():
    cases = ch14._state_cases(141)
    lengths = {round(float(np.linalg.norm(case["k"])), 6) for case in cases}
    assert 1.0 in lengths and len(lengths) >= 5
    assert {case["beta"] for case in cases} >= {0.0, 2.0}
    assert all(0 <= case["beta"] <= 2 for case in cases)
    assert any(case["state"].shape[0] != case["state"].shape[1] for case in cases)
    assert {case["state"].shape[0] for case in cases} >= {1, 3, 5, 7}


def test_package_delta_step_is_the_gradient_step(rng):
    state, k, v = rng.standard_normal((4, 3)), 1.7 * rng.standard_normal(4), rng.standard_normal(3)
    expected = state - 0.8 * np.outer(k, state.T @ k - v)
    np.testing.assert_allclose(ch14.package_delta_step(state, k, v, 0.8), expected, rtol=1e-13)


def test_delta_step_up_the_gradient_is_rejected():
    def ascent(state, k, v, beta):
        return state + beta * np.outer(k, state.T @ k - v)

    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch14.delta_gradient", ascent)


def test_delta_step_with_normalised_keys_is_rejected():
    def unit_keys(state, k, v, beta):  # right for ‖k‖ = 1 only
        return ch14.solution_delta_gradient(state, k / np.linalg.norm(k), v, beta)

    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch14.delta_gradient", unit_keys)


def test_delta_step_returning_the_gradient_is_rejected():
    def gradient_only(state, k, v, beta):
        return np.outer(k, state.T @ k - v)

    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch14.delta_gradient", gradient_only)


def test_delta_step_reading_with_s_instead_of_s_transpose_is_caught():
    def untransposed(state, k, v, beta):  # S k: [d_v] only when d_k = d_v
        return state - beta * np.outer(k, state @ k - v)

    with pytest.raises(ExerciseFailed, match="raised ValueError.*state: float64 \\[1, 2\\]"):
        check("ch14.delta_gradient", untransposed)


# --- ch14.sherman_morrison

def test_inverse_cases_are_inverses_of_positive_definite_matrices_with_every_past():
    cases = ch14._inverse_cases()
    for case in cases:
        inverse = case["inverse"]
        np.testing.assert_allclose(inverse, inverse.T, rtol=0, atol=1e-12)
        assert np.linalg.eigvalsh(inverse).min() > 0
        assert 0 <= case["beta"] <= 1
    assert {len(case["k"]) for case in cases} >= {1, 3, 5, 7}
    assert {case["beta"] for case in cases} >= {0.0, 1.0}


def test_sherman_morrison_that_updates_as_if_given_h_is_rejected():
    def as_if_h(inverse, k, beta):  # H + βkkᵀ: the update of H, not of its inverse
        return inverse + beta * np.outer(k, k)

    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch14.sherman_morrison", as_if_h)


def test_sherman_morrison_with_the_wrong_sign_is_rejected():
    def plus(inverse, k, beta):
        pk = inverse @ k
        return inverse + beta * np.outer(pk, pk) / (1 + beta * (k @ pk))

    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch14.sherman_morrison", plus)


def test_sherman_morrison_without_beta_in_the_denominator_is_rejected():
    def unweighted_denominator(inverse, k, beta):
        pk = inverse @ k
        return inverse - beta * np.outer(pk, pk) / (1 + k @ pk)

    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch14.sherman_morrison", unweighted_denominator)


def test_sherman_morrison_with_p_only_on_the_left_is_rejected():
    def one_sided(inverse, k, beta):  # P k kᵀ instead of P k kᵀ P
        pk = inverse @ k
        return inverse - beta * np.outer(pk, k) / (1 + beta * (k @ pk))

    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch14.sherman_morrison", one_sided)


INVERSIONS = {  # H = P⁻¹ four ways, then the inverse of H + βkkᵀ the same way (looked up when called)
    "inv": lambda a: np.linalg.inv(a),
    "pinv": lambda a: np.linalg.pinv(a),
    "solve": lambda a: np.linalg.solve(a, np.eye(len(a))),
    "lstsq": lambda a: np.linalg.lstsq(a, np.eye(len(a)), rcond=None)[0],
}


@pytest.mark.parametrize("solver", sorted(INVERSIONS))
def test_sherman_morrison_refuses_numpy_inverses_and_restores_them(solver):
    def by_inversion(inverse, k, beta):
        invert = INVERSIONS[solver]
        return invert(invert(inverse) + beta * np.outer(k, k))

    with pytest.raises(ExerciseFailed, match=f"raised RuntimeError: .*np.linalg.*{solver}.*switched off"):
        check("ch14.sherman_morrison", by_inversion)
    assert all(getattr(np.linalg, name).__module__.startswith("numpy") for name in ch14.SOLVERS)
    np.testing.assert_allclose(INVERSIONS[solver](2 * np.eye(2)), np.eye(2) / 2)


def test_repeated_sherman_morrison_is_the_least_squares_read_of_the_package(rng):
    """Recursive least squares: P_t from P_0 = I/λ, one key at a time, reads o_t = G_tᵀ P_t q_t,
    MesaNet's exact read (la.least_squares_attention, no decay)."""
    n, d_k, d_v, ridge = 23, 5, 3, 0.3
    q, k = rng.standard_normal((2, n, d_k))
    v, beta = rng.standard_normal((n, d_v)), rng.uniform(0, 1, n)
    inverse, g, outputs = np.eye(d_k) / ridge, np.zeros((d_k, d_v)), []
    for t in range(n):
        inverse = ch14.solution_sherman_morrison(inverse, k[t], beta[t])
        g = g + beta[t] * np.outer(k[t], v[t])  # G_t = Σ β_s k_s v_sᵀ
        outputs.append(g.T @ inverse @ q[t])
    expected = la.least_squares_attention(q, k, v, beta, ridge=ridge, scale=1.0)
    np.testing.assert_allclose(np.array(outputs), expected, rtol=1e-10, atol=1e-12)


# --- ch14.momentum_state

def test_momentum_cases_cover_no_momentum_no_forgetting_and_odd_sizes():
    cases = ch14._momentum_cases()
    assert {case["eta"] for case in cases} >= {0.0} and {case["alpha"] for case in cases} >= {0.0, 1.0}
    assert {len(case["k"]) for case in cases} >= {1, 7, 13, 31, 45}
    assert any(case["k"].shape[1] != case["v"].shape[1] for case in cases)


def test_momentum_that_moves_s_before_updating_m_is_rejected():
    def stale_momentum(k, v, theta, alpha, eta):  # S_t = (1 − α) S_{t−1} + M_{t−1}
        state = momentum = np.zeros((k.shape[1], v.shape[1]))
        for k_t, v_t in zip(k, v):
            gradient = np.outer(k_t, state.T @ k_t - v_t)
            state = (1 - alpha) * state + momentum
            momentum = eta * momentum - theta * gradient
        return state, momentum

    with pytest.raises(ExerciseFailed, match=r"output 1\) gave a wrong value"):
        check("ch14.momentum_state", stale_momentum)


def test_momentum_with_the_gradient_at_the_decayed_state_is_rejected():
    def decay_first(k, v, theta, alpha, eta):  # ∇ℓ_t((1 − α) S_{t−1}): the gated delta rule's order
        state = momentum = np.zeros((k.shape[1], v.shape[1]))
        for k_t, v_t in zip(k, v):
            state = (1 - alpha) * state
            momentum = eta * momentum - theta * np.outer(k_t, state.T @ k_t - v_t)
            state = state + momentum
        return state, momentum

    with pytest.raises(ExerciseFailed, match=r"output 1\) gave a wrong value"):
        check("ch14.momentum_state", decay_first)


def test_momentum_that_forgets_m_as_well_is_rejected():
    def decayed_sum(k, v, theta, alpha, eta):  # S_t = (1 − α)(S_{t−1} + M_t)
        state, momentum = ch14.solution_momentum_state(k[:0], v[:0], theta, alpha, eta)
        for k_t, v_t in zip(k, v):
            momentum = eta * momentum - theta * np.outer(k_t, state.T @ k_t - v_t)
            state = (1 - alpha) * (state + momentum)
        return state, momentum

    with pytest.raises(ExerciseFailed, match=r"output 1\) gave a wrong value"):
        check("ch14.momentum_state", decayed_sum)


def test_momentum_returned_in_the_wrong_order_or_alone_is_rejected():
    def swapped(**case):
        return ch14.solution_momentum_state(**case)[::-1]

    def state_only(**case):
        return ch14.solution_momentum_state(**case)[0]

    with pytest.raises(ExerciseFailed, match=r"output 1\) gave a wrong value"):
        check("ch14.momentum_state", swapped)
    with pytest.raises(ExerciseFailed, match="must return 2 values"):
        check("ch14.momentum_state", state_only)


def test_without_momentum_the_rule_is_the_gated_delta_rule_with_rescaled_beta_and_values():
    cases = [{name: case[name] for name in ("k", "v", "theta", "alpha")} for case in ch14._momentum_cases()
             if case["alpha"] < 1 and case["theta"] / (1 - case["alpha"]) <= 2]
    assert len(cases) == 5
    for case in cases:
        state = ch14.solution_momentum_state(**case, eta=0.0)[0]
        np.testing.assert_allclose(ch14.momentum_free_state(**case), state, rtol=1e-12, atol=1e-14)


def test_without_momentum_the_plain_gated_delta_rule_differs_unless_nothing_is_forgotten():
    """la.delta_rule with log_decay = log(1 − α) and β = θ decays before its gradient step,
    so it matches the rule only at α = 0, where it is DeltaNet at β = θ."""
    case = ch14._momentum_cases()[4]  # N = 45, α = 0.3
    n, theta = len(case["k"]), case["theta"]

    def delta_rule(alpha):
        log_decay = np.full(n, np.log(1 - alpha))
        _, state = la.delta_rule(case["k"], case["k"], case["v"], np.full(n, theta), log_decay,
                                 scale=1.0, form="recurrent", return_state=True)
        return state

    def rule(alpha):
        return ch14.solution_momentum_state(case["k"], case["v"], theta, alpha, 0.0)[0]

    assert np.abs(delta_rule(0.3) - rule(0.3)).max() > 1e-2 * np.abs(rule(0.3)).max()
    np.testing.assert_allclose(delta_rule(0.0), rule(0.0), rtol=1e-12, atol=1e-14)


# --- ch14.longhorn_step

def test_longhorn_cases_reach_far_above_two_with_non_unit_keys():
    cases = ch14._longhorn_cases()
    assert max(case["beta"] for case in cases) >= 1e3 and 0.0 in {case["beta"] for case in cases}
    assert any(abs(np.linalg.norm(case["k"]) - 1) > 0.2 for case in cases if case["beta"] > 2)


def test_longhorn_step_is_the_delta_rule_at_the_shrunk_step_size():
    """β_eff = β/(1 + β‖k‖²) on the key as given; on the unit key k/‖k‖ (values v/‖k‖) the step is
    β‖k‖²/(1 + β‖k‖²) < 1, inside la.delta_rule's [0, 2] for every β."""
    for case in ch14._longhorn_cases():
        k, beta = case["k"], case["beta"]
        length = np.linalg.norm(k)
        unit_step = beta * length**2 / (1 + beta * length**2)
        expected = ch14.package_delta_step(case["state"], k / length, case["v"] / length, unit_step)
        np.testing.assert_allclose(ch14.solution_longhorn_step(**case), expected, rtol=1e-12, atol=1e-14)
        if beta / (1 + beta * length**2) <= 2:
            as_given = ch14.package_delta_step(case["state"], k, case["v"], beta / (1 + beta * length**2))
            np.testing.assert_allclose(as_given, expected, rtol=1e-12, atol=1e-14)


def test_longhorn_step_is_a_minimum_of_its_objective(rng):
    state, k, v, beta = rng.standard_normal((4, 3)), 1.4 * rng.standard_normal(4), rng.standard_normal(3), 5.0

    def objective(s):
        return 0.5 * ((s - state) ** 2).sum() + 0.5 * beta * ((s.T @ k - v) ** 2).sum()

    best = ch14.solution_longhorn_step(state, k, v, beta)
    for _ in range(5):
        assert objective(best) < objective(best + 1e-4 * rng.standard_normal(best.shape))


def test_longhorn_as_an_explicit_delta_step_is_rejected():
    def explicit(state, k, v, beta):
        return state + beta * np.outer(k, v - state.T @ k)

    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch14.longhorn_step", explicit)


def test_longhorn_forgetting_the_key_length_is_rejected():
    def unit_key(state, k, v, beta):  # β/(1 + β): right for ‖k‖ = 1 only
        return state + beta / (1 + beta) * np.outer(k, v - state.T @ k)

    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch14.longhorn_step", unit_key)


def test_longhorn_at_the_infinite_step_limit_is_rejected():
    def projection(state, k, v, beta):  # β → ∞: the error along k removed completely
        return state + np.outer(k, v - state.T @ k) / (k @ k)

    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch14.longhorn_step", projection)


# --- ch14.least_squares_leftover

def test_least_squares_reads_every_stored_value_back_when_the_keys_are_independent():
    """P <= d_k independent keys and λ → 0: every retrieval error vanishes (chapter 10's measure)."""
    for pairs, d_k in ((3, 5), (7, 7), (9, 16)):
        keys, values = make_keys(pairs, d_k, seed=pairs), make_values(pairs, 4, seed=pairs)
        q = np.concatenate([keys, keys])  # P writes, then P reads that write nothing (β = 0)
        k = np.concatenate([keys, np.zeros_like(keys)])
        v = np.concatenate([values, np.zeros_like(values)])
        beta = np.concatenate([np.ones(pairs), np.zeros(pairs)])
        read = la.least_squares_attention(q, k, v, beta, ridge=1e-10, scale=1.0)[pairs:]
        assert np.linalg.norm(read - values, axis=1).max() < 1e-6  # unit values: relative errors


def test_leftover_is_the_mean_over_random_unit_values(rng):
    """tr(I − Π) is the expectation of the total squared retrieval error: a sample mean agrees."""
    d_k, pairs, draws = 4, 11, 400
    keys = np.random.default_rng(0).standard_normal((pairs, d_k))  # measured_leftover's keys
    values = rng.standard_normal((draws, pairs, 3))
    values /= np.linalg.norm(values, axis=-1, keepdims=True)
    fit = np.linalg.lstsq(keys, values.transpose(1, 0, 2).reshape(pairs, -1), rcond=None)[0]
    misses = (keys @ fit).reshape(pairs, draws, 3).transpose(1, 0, 2) - values
    mean = (misses**2).sum(axis=(1, 2)).mean()
    assert mean == pytest.approx(ch14.measured_leftover(d_k, pairs), rel=0.05)
    assert ch14.measured_leftover(d_k, pairs) == ch14.solution_least_squares_leftover(d_k, pairs)


def test_leftover_cases_have_fewer_as_many_and_more_pairs_than_dimensions():
    signs = {np.sign(case["pairs"] - case["d_k"]) for case in ch14._leftover_cases()}
    assert signs == {-1, 0, 1}


@pytest.mark.parametrize("wrong", [
    lambda d_k, pairs: pairs - d_k,  # negative when P < d_k
    lambda d_k, pairs: max(0, 1 - d_k / pairs),  # a fraction of P, not the total
    lambda d_k, pairs: max(0, pairs - d_k - 1),
])
def test_leftover_wrong_counts_are_rejected(wrong):
    with pytest.raises(ExerciseFailed, match="wrong value"):
        check("ch14.least_squares_leftover", wrong)
