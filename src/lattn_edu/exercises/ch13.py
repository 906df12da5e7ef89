"""Exercises for chapter 13 (state tracking): the spectrum of the generalised Householder
I − βkkᵀ, how fast a positive diagonal recurrence settles on a constant input (why it cannot
track parity), a two-step DeltaProduct token as one transition and one write, the exponentials
KDA's chunk computes beyond Gated DeltaNet's, and every permutation of three things as one
DeltaProduct token of two generalised reflections.

The checkers compare with the package: the transition I − βkkᵀ as ``la.delta_rule``'s state
after one step from S_0 = I with v = 0, the settling step by simulating
``la.gated_linear_attention`` until it has settled, a token's A and B from ``la.delta_product``'s
state, and the count of exponentials by enumerating them one by one.
"""

from __future__ import annotations

import itertools

import numpy as np

import lattn_edu as la

from .base import Exercise, ExerciseFailed, _as_array, call_answer, check_function


def solution_householder_spectrum(k, beta):
    """Eigenvalues of I − β k kᵀ, ascending: [d_k].

    Every x ⊥ k is kept (eigenvalue 1, d_k − 1 times) and
    (I − β k kᵀ) k = (1 − β‖k‖²) k.
    """
    ones = np.ones(len(k) - 1)  # the plane orthogonal to k
    return np.sort(np.append(ones, 1 - beta * (k @ k)))


def _spectrum_cases():
    rng = np.random.default_rng(13)
    cases = []
    for d_k, beta, length in ((1, 0.7, 0.5), (3, 1.0, 1.2), (5, 1.6, 0.8), (7, 0.0, 1.3),
                              (3, 0.7, 1.5), (5, 1.0, 0.6), (7, 1.6, 1.1)):
        k = rng.standard_normal(d_k)
        unit = k / np.linalg.norm(k)
        cases += [{"k": unit, "beta": beta}, {"k": length * unit, "beta": beta}]  # ‖k‖ = 1, ≠ 1
    cases.append({"k": np.array([1.0, -1.0, 0.0]), "beta": 1.0})  # β‖k‖² = 2: a reflection
    cases.append({"k": np.array([0.0, 1.5, 0.0, 0.0, 0.0]), "beta": 1.6})  # β‖k‖² = 3.6 > 2
    return cases


def package_transition(k, beta):
    """I − β k kᵀ as la.delta_rule's state after one step from S_0 = I with v = 0: [d_k, d_k]."""
    d_k = len(k)
    _, state = la.delta_rule(np.ones((1, d_k)), k[None], np.zeros((1, d_k)), np.array([beta]),
                             scale=1.0, form="recurrent", initial_state=np.eye(d_k), return_state=True)
    return state


def _check_householder_spectrum(answer):
    check_function(answer, lambda k, beta: np.sort(np.linalg.eigvalsh(package_transition(k, beta))),
                   _spectrum_cases(), rtol=1e-9)


def solution_settling_steps(decay, write, initial, tolerance):
    """The first T with max_i |h_t,i − h*_i| <= tolerance for every t >= T.

    h_t − h* = decay^t ⊙ (h_0 − h*), h* = write / (1 − decay): each
    channel needs decay_i^t |h_0 − h*|_i <= tolerance.
    """
    gap = np.abs(initial - write / (1 - decay))  # |h_0 − h*|  [d]
    steps = np.log(tolerance / gap) / np.log(decay)  # real t per channel
    return max(0, int(np.ceil(steps.max())))


def _settling_cases():
    rng = np.random.default_rng(131)
    cases = []
    for d, tolerance in ((1, 1e-2), (3, 1e-3), (5, 3e-3), (7, 1e-4)):
        decay = rng.uniform(0.3, 0.95, d)
        decay[-1] = 0.99  # the slowest channel sets T: several hundred steps
        cases.append({"decay": decay, "write": rng.standard_normal(d),
                      "initial": 5 * rng.standard_normal(d), "tolerance": tolerance})
    decay, write = rng.uniform(0.5, 0.9, 5), rng.standard_normal(5)
    near = write / (1 - decay) + rng.uniform(-0.5, 0.5, 5) * 1e-2  # h_0 already within tolerance
    cases.append({"decay": decay, "write": write, "initial": near, "tolerance": 1e-2})
    return cases


def simulated_settling_steps(decay, write, initial, tolerance, block=128):
    """T measured on la.gated_linear_attention: one channel per batch row, d_k = d_v = 1, run
    in blocks of steps (the state carried across) until a block ends within tolerance."""
    fixed = write / (1 - decay)  # h*  [d]
    ones = np.ones((len(decay), block, 1))  # the same token every step
    state = initial[:, None, None]  # h_0 as a state [d, 1, 1]
    last_outside = -1 if np.abs(initial - fixed).max() <= tolerance else 0  # last t out of reach
    done = 0  # steps simulated so far
    while True:
        out, state = la.gated_linear_attention(ones, write[:, None, None] * ones, ones,
                                               np.log(decay)[:, None] * ones[..., 0], scale=1.0,
                                               form="recurrent", initial_state=state, return_state=True)
        error = np.abs(out[..., 0] - fixed[:, None]).max(axis=0)  # error of h_{done+1..done+block}
        outside = np.flatnonzero(error > tolerance)
        if outside.size:
            last_outside = done + 1 + int(outside[-1])
        done += block
        if error[-1] <= tolerance:
            return last_outside + 1


def _check_settling_steps(answer):
    check_function(answer, simulated_settling_steps, _settling_cases(), rtol=0)


def solution_two_step_transition(k, v, beta):
    """(A [d_k, d_k], B [d_k, d_v]): S_after = A S_before + B for one
    DeltaProduct token of n_h = 2 steps, step 1 first."""
    h1, h2 = (np.eye(k.shape[1]) - b * np.outer(key, key)
              for key, b in zip(k, beta))  # I − β_j k_j k_jᵀ
    write_1 = beta[0] * np.outer(k[0], v[0])  # β_1 k_1 v_1ᵀ  [d_k, d_v]
    return h2 @ h1, h2 @ write_1 + beta[1] * np.outer(k[1], v[1])


def _transition_cases():
    rng = np.random.default_rng(132)
    cases = []
    for d_k, d_v, beta in ((1, 2, (0.6, 1.3)), (3, 4, (2.0, 0.0)), (5, 2, (1.1, 2.0)),
                           (3, 2, (0.0, 1.7)), (5, 4, (2.0, 2.0))):
        k = rng.standard_normal((2, d_k))
        cases.append({"k": k / np.linalg.norm(k, axis=1, keepdims=True),
                      "v": rng.standard_normal((2, d_v)), "beta": np.array(beta)})
    return cases


def package_token_transition(k, v, beta):
    """(A, B) from la.delta_product's state after one token: B from S_0 = 0, A from S_0 = I
    with v = 0 (d_v = d_k), since the state after is A S_0 + B."""
    d_k = k.shape[1]

    def state_after(values, initial_state):
        _, state = la.delta_product(np.ones((1, d_k)), k[None], values[None], beta[None], scale=1.0,
                                    form="recurrent", initial_state=initial_state, return_state=True)
        return state

    return state_after(np.zeros((2, d_k)), np.eye(d_k)), state_after(v, None)


def _check_two_step_transition(answer):
    check_function(answer, package_token_transition, _transition_cases(), rtol=1e-9, outputs=2)


def solution_kda_extra_exponentials(c, d_k):
    """(d_k − 1)(C(C+1)/2 + 2C): per key channel rather than once, the
    mask exp(G_i − G_j) for j <= i, exp(G_t) and exp(G_C − G_t)."""
    per_width = c * (c + 1) // 2 + 2 * c  # for one decay channel
    return (d_k - 1) * per_width


def counted_exponentials(c, width):
    """The exponentials of segment sums one chunk of c tokens computes with ``width`` decay
    channels (1: Gated DeltaNet, d_k: KDA), each named and collected once."""
    mask = {("mask", i, j, r) for i, j, r in itertools.product(range(c), range(c), range(width)) if j <= i}
    read = {("exp(G_t)", t, r) for t, r in itertools.product(range(c), range(width))}
    update = {("exp(G_C - G_t)", t, r) for t, r in itertools.product(range(c), range(width))}
    return len(mask | read | update)


def _check_kda_extra_exponentials(answer):
    cases = [{"c": c, "d_k": d_k} for c, d_k in ((1, 1), (1, 5), (7, 3), (16, 64), (64, 128))]
    check_function(answer, lambda c, d_k: counted_exponentials(c, d_k) - counted_exponentials(c, 1),
                   cases, rtol=0)


def solution_s3_reflections(permutation):
    """(keys [2, 3], betas [2]): one DeltaProduct token with transition P_σ.

    β = 2 with k = (e_i − e_j)/√2 swaps e_i and e_j; β = 0 is I. Step 2
    is the swap (0 σ(0)), step 1 the rest τ = (0 σ(0)) ∘ σ, which fixes 0.
    """
    eye = np.eye(3)

    def swap(i, j):  # (key, β) of the step exchanging e_i and e_j
        if i == j:
            return eye[0], 0.0  # any unit key: β = 0 leaves S alone
        return (eye[i] - eye[j]) / np.sqrt(2), 2.0

    first = permutation[0]
    undo = {0: first, first: 0}  # the transposition (0 σ(0))
    tau_1 = undo.get(permutation[1], permutation[1])  # τ(1)
    (k_1, b_1), (k_2, b_2) = swap(1, tau_1), swap(0, first)
    return np.stack([k_1, k_2]), np.array([b_1, b_2])


def permutation_matrix(permutation):
    """P_σ with P e_j = e_{σ(j)}: column j has its one in row σ(j)."""
    return np.eye(len(permutation))[:, list(permutation)]


def _diagnosis(got, permutation):
    """What a wrong transition is: another permutation's matrix (and which), or none."""
    for other in itertools.permutations(range(3)):
        if np.allclose(got, permutation_matrix(other), rtol=0, atol=1e-9):
            reason = f"the transition is the permutation matrix of {other}"
            if other == tuple(np.argsort(permutation)):  # σ⁻¹ ≠ σ: a 3-cycle
                reason += (" (σ⁻¹): the two reflections are in the wrong order; the transition is "
                           "H_2 H_1, so step 1 acts on the state first")
            is_transposition = sum(i == s for i, s in enumerate(permutation)) == 1
            if other == (0, 1, 2) and is_transposition:
                reason += ("; a transposition has determinant −1 and each β = 2 reflection adds a "
                           "factor −1, so it needs one reflection and one β = 0 step")
            return reason
    return f"the transition is not a permutation matrix:\n{np.array2string(got, precision=4)}"


def _checked_pair(got, name, permutation):
    """(keys [2, 3], betas [2]) as float arrays with unit keys and betas in [0, 2]."""
    where = f"{name} for σ = {permutation}"
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise ExerciseFailed(f"{where} must return a pair (keys, betas); got {type(got).__name__}")
    keys, betas = _as_array(got[0], f"{where} (keys)"), _as_array(got[1], f"{where} (betas)")
    if keys.shape != (2, 3) or betas.shape != (2,):
        raise ExerciseFailed(f"{where} returned keys of shape {list(keys.shape)} and betas of shape "
                             f"{list(betas.shape)}; expected shapes [2, 3] and [2]")
    if not (np.isfinite(keys).all() and np.isfinite(betas).all()):
        raise ExerciseFailed(f"{where} returned NaN or inf; expected finite keys and betas")
    norms = np.linalg.norm(keys, axis=1)
    if np.abs(norms - 1).max() > 1e-9:
        raise ExerciseFailed(f"{where}: the keys must have norm 1 (a generalised reflection I − β k kᵀ "
                             f"with ‖k‖ = 1); got norms {np.array2string(norms, precision=6)}")
    if betas.min() < 0 or betas.max() > 2:
        raise ExerciseFailed(f"{where}: each β must lie in [0, 2] (so no step amplifies the state); "
                             f"got {np.array2string(betas, precision=4)}")
    return keys, betas


def _check_s3(answer):
    if not callable(answer):
        raise ExerciseFailed(f"expected a function; got {type(answer).__name__}")
    name = getattr(answer, "__name__", "your function")
    for permutation in itertools.permutations(range(3)):
        keys, betas = _checked_pair(call_answer(answer, {"permutation": permutation}), name, permutation)
        _, got = la.delta_product(np.ones((1, 3)), keys[None], np.zeros((1, 2, 3)), betas[None],
                                  scale=1.0, form="recurrent", initial_state=np.eye(3), return_state=True)
        if not np.allclose(got, permutation_matrix(permutation), rtol=0, atol=1e-9):
            raise ExerciseFailed(f"for σ = {permutation}: {_diagnosis(got, permutation)}\nexpected "
                                 f"P_σ =\n{permutation_matrix(permutation)}")


EXERCISES = [
    Exercise("ch13.householder_spectrum", "Eigenvalues of the generalised Householder I − βkkᵀ",
             "code", solution_householder_spectrum, _check_householder_spectrum),
    Exercise("ch13.settling_steps", "How fast a positive diagonal recurrence settles on a constant input",
             "code", solution_settling_steps, _check_settling_steps),
    Exercise("ch13.two_step_transition", "A two-step DeltaProduct token as one transition A and one write B",
             "code", solution_two_step_transition, _check_two_step_transition),
    Exercise("ch13.kda_extra_exponentials", "Exponentials KDA's chunk needs beyond Gated DeltaNet's",
             "code", solution_kda_extra_exponentials, _check_kda_extra_exponentials),
    Exercise("ch13.s3_reflections", "Each permutation of three things as two generalised reflections",
             "construction", solution_s3_reflections, _check_s3),
]
