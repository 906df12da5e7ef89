"""Chapter 12's derivation exercises: each accepts its solution, rejects the mistakes a student is
likely to make, and its checker's measured reference agrees with torch's autograd."""

from __future__ import annotations

import numpy as np
import pytest

import lattn_edu as la
from lattn_edu import exercises
from lattn_edu.exercises import ExerciseFailed, ch12

IDS = ("ch12.initial_state_gradient", "ch12.delta_log_decay", "ch12.ut_backward")


def test_chapter_12_has_its_derivations():
    assert set(IDS) == {i for i in exercises.CATALOG if i.startswith("ch12.")}


@pytest.mark.parametrize("exercise_id", IDS)
def test_accepts_its_solution(exercise_id):
    exercise = exercises.CATALOG[exercise_id]
    exercise.check(exercise.solution)


def test_initial_state_gradient_without_the_first_decay_is_rejected():
    def from_the_second_step(q, k, v, log_decay, grad_o):  # forgets that a_1 multiplies S_0
        return ch12.solution_initial_state_gradient(q, k, v, np.r_[0.0, log_decay[1:]], grad_o)

    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch12.initial_state_gradient"].check(from_the_second_step)


def test_initial_state_gradient_that_ignores_decay_is_rejected():
    def undecayed(q, k, v, log_decay, grad_o):
        return q.T @ grad_o

    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch12.initial_state_gradient"].check(undecayed)


def reverse_sum(per_step):
    return np.cumsum(per_step[::-1])[::-1]


def test_delta_log_decay_with_linear_attentions_identity_is_rejected():
    def keys_not_values(q, k, v, dq, dk, dv):  # Σ_{i>=t} (q·dq − k·dk), chapter 12's GLA rule
        return reverse_sum((q * dq).sum(1) - (k * dk).sum(1))

    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch12.delta_log_decay"].check(keys_not_values)


def test_delta_log_decay_as_a_forward_sum_is_rejected():
    def forward_sum(q, k, v, dq, dk, dv):
        return np.cumsum((q * dq).sum(1) - (v * dv).sum(1))

    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch12.delta_log_decay"].check(forward_sum)


def test_delta_log_decay_identity_matches_autograd():
    """The identity the solution uses is the gradient torch computes, not the package's own dg."""
    torch = pytest.importorskip("torch")
    case = ch12._delta_cases(9)[2]
    leaves = {n: torch.tensor(case[n], requires_grad=n == "log_decay") for n in case}
    out = la.delta_rule(*(leaves[n] for n in ("q", "k", "v", "beta", "log_decay")), scale=1.0,
                        backend="torch", form="recurrent")
    out.backward(leaves["grad_o"])
    np.testing.assert_allclose(ch12.solution_delta_log_decay(**ch12.delta_backward_inputs(**case)),
                               leaves["log_decay"].grad.numpy(),
                               rtol=1e-9, atol=1e-12)


def test_delta_log_decay_reference_is_independent_of_the_packages_backward(monkeypatch):
    """The checker measures dg from the forward, so it cannot agree with a wrong delta_rule_vjp."""
    def refuse(*args, **kwargs):
        raise AssertionError("the reference called delta_rule_vjp")

    case = ch12._delta_cases(10)[1]
    expected = ch12.solution_delta_log_decay(**ch12.delta_backward_inputs(**case))
    monkeypatch.setattr(la, "delta_rule_vjp", refuse)
    np.testing.assert_allclose(ch12.measured_delta_log_decay(**case), expected, rtol=1e-6, atol=1e-8)


def test_delta_log_decay_answer_gets_no_route_to_the_packages_dg():
    """The answer receives q, k, v, dq, dk, dv only: beta, log_decay and dO stay with the checker."""
    seen = {}

    def record(**arguments):
        seen.update(arguments)
        return ch12.solution_delta_log_decay(**arguments)

    exercises.CATALOG["ch12.delta_log_decay"].check(record)
    assert set(seen) == {"q", "k", "v", "dq", "dk", "dv"}


def test_delta_log_decay_off_by_a_small_factor_is_rejected():
    def slightly_off(q, k, v, dq, dk, dv):
        return 1.0001 * ch12.solution_delta_log_decay(q, k, v, dq, dk, dv)

    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch12.delta_log_decay"].check(slightly_off)


def test_ut_backward_without_the_triangular_mask_is_rejected():
    def unmasked(k, beta, d_t):  # lets the constant diagonal and upper triangle of I + A move
        t_matrix = np.linalg.inv(np.eye(len(k)) + np.tril(beta[:, None] * (k @ k.T), -1))
        d_gamma = -t_matrix.T @ d_t @ t_matrix.T
        weighted = beta[:, None] * d_gamma
        return (weighted + weighted.T) @ k, (d_gamma * (k @ k.T)).sum(1)

    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch12.ut_backward"].check(unmasked)


def test_ut_backward_with_one_sided_key_gradient_is_rejected():
    def one_sided(k, beta, d_t):  # k_j appears in row j and in column j of Γ; this keeps only rows
        dk, d_beta = ch12.solution_ut_backward(k, beta, d_t)
        t_matrix = np.linalg.inv(np.eye(len(k)) + np.tril(beta[:, None] * (k @ k.T), -1))
        d_gamma = np.tril(-t_matrix.T @ d_t @ t_matrix.T, -1)
        return (beta[:, None] * d_gamma) @ k, d_beta

    with pytest.raises(ExerciseFailed, match="wrong value"):
        exercises.CATALOG["ch12.ut_backward"].check(one_sided)


def test_measured_references_agree_with_autograd():
    """The checkers' references (measured from the package's forwards) are the gradients."""
    torch = pytest.importorskip("torch")
    case = ch12._segment_cases(7)[2]
    state = torch.zeros(case["k"].shape[1], case["v"].shape[1], dtype=torch.float64, requires_grad=True)
    out = la.gated_linear_attention(*(torch.tensor(case[n]) for n in ("q", "k", "v", "log_decay")),
                                    scale=1.0, backend="torch", form="recurrent", initial_state=state)
    out.backward(torch.tensor(case["grad_o"]))
    np.testing.assert_allclose(ch12.measured_initial_state_gradient(**case), state.grad.numpy(),
                               rtol=1e-9, atol=1e-9)
    ut_case = ch12._ut_cases(8)[1]
    k, beta = (torch.tensor(ut_case[n], requires_grad=True) for n in ("k", "beta"))
    a = torch.tril(beta[:, None] * (k @ k.T), -1)
    t_matrix = torch.linalg.inv(torch.eye(len(k), dtype=torch.float64) + a)
    (t_matrix * torch.tensor(ut_case["d_t"])).sum().backward()
    for measured, exact in zip(ch12.measured_ut_gradient(**ut_case), (k.grad, beta.grad)):
        np.testing.assert_allclose(measured, exact.numpy(), rtol=1e-6, atol=1e-8)
