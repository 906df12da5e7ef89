"""delta_rule: recurrent and chunkwise (UT transform) forms against a naive loop written here,
the gradient-step view, stability, state in and out, and bad input (lattn_edu.delta)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lattn_edu as la
from conftest import assert_close
from gated_inputs import delta_inputs


def naive_delta(q, k, v, beta, g, scale, state=None):
    """S_t = (I − β k kᵀ)(exp(g_t) S_{t−1}) + β k vᵀ with explicit matrices, float64, per sequence."""
    lead, (n, d_k), d_v = q.shape[:-2], q.shape[-2:], v.shape[-1]
    out, final = np.zeros(lead + (n, d_v)), np.zeros(lead + (d_k, d_v))
    for idx in np.ndindex(*lead):
        s = np.zeros((d_k, d_v)) if state is None else np.array(state[idx], np.float64)
        for t in range(n):
            kt, b = np.asarray(k[idx + (t,)], np.float64), float(beta[idx + (t,)])
            decay = 1.0 if g is None else np.exp(float(g[idx + (t,)]))
            s = (np.eye(d_k) - b * np.outer(kt, kt)) @ (decay * s) + b * np.outer(kt, v[idx + (t,)])
            out[idx + (t,)] = scale * s.T @ q[idx + (t,)]
        final[idx] = s
    return out, final


@pytest.mark.parametrize("gated", [False, True], ids=["deltanet", "gated"])
@pytest.mark.parametrize("form", ["recurrent", "chunkwise"])
def test_forms_match_the_naive_loop(form, gated, rng):
    q, k, v, beta, g, _ = delta_inputs(rng, (2, 3), 41, 6, 5, gated, initial_state=False)
    out, state = la.delta_rule(q, k, v, beta, g, form=form, chunk_size=8, return_state=True)
    ref_out, ref_state = naive_delta(q, k, v, beta, g, 6 ** -0.5)
    assert_close(out, ref_out, what=form)
    assert_close(state, ref_state, what=f"{form} state")


@given(n=st.integers(1, 40), chunk=st.integers(1, 19), d_k=st.integers(1, 6), d_v=st.integers(1, 5),
       gated=st.booleans(), dtype=st.sampled_from([np.float32, np.float64]))
def test_chunkwise_agrees_with_recurrent(n, chunk, d_k, d_v, gated, dtype):
    rng = np.random.default_rng(7 * n + chunk)
    q, k, v, beta, g, _ = delta_inputs(rng, (2,), n, d_k, d_v, gated, dtype, initial_state=False)
    ref, ref_state = la.delta_rule(q, k, v, beta, g, form="recurrent", return_state=True)
    out, state = la.delta_rule(q, k, v, beta, g, form="chunkwise", chunk_size=chunk, return_state=True)
    assert out.dtype == dtype
    assert_close(out, ref)
    assert_close(state, ref_state)


@pytest.mark.parametrize("form", ["recurrent", "chunkwise"])
def test_split_anywhere_and_carry_the_state(form, rng):
    q, k, v, beta, g, _ = delta_inputs(rng, (3,), 45, 4, 3, True, initial_state=False)
    whole = la.delta_rule(q, k, v, beta, g, form=form, chunk_size=7)
    for cut in (1, 20, 44):
        first, state = la.delta_rule(q[:, :cut], k[:, :cut], v[:, :cut], beta[:, :cut], g[:, :cut],
                                     form=form, chunk_size=7, return_state=True)
        second = la.delta_rule(q[:, cut:], k[:, cut:], v[:, cut:], beta[:, cut:], g[:, cut:],
                               form=form, chunk_size=7, initial_state=state)
        assert_close(np.concatenate([first, second], axis=-2), whole, what=f"cut at {cut}")


def test_one_step_is_a_gradient_step_on_the_retrieval_error(rng):
    """S_t = S − β ∇_S ½‖Sᵀk − v‖², whose gradient is k (Sᵀk − v)ᵀ."""
    s0 = rng.standard_normal((5, 3))
    q, k, v = rng.standard_normal(5), rng.standard_normal(5), rng.standard_normal(3)
    k /= np.linalg.norm(k)
    beta = 0.7
    _, s1 = la.delta_rule(q[None], k[None], v[None], np.array([beta]), initial_state=s0, return_state=True)
    assert_close(s1, s0 - beta * np.outer(k, s0.T @ k - v))


def test_beta_one_with_unit_keys_stores_exactly(rng):
    """β = 1: after writing (k, v), reading with k returns v exactly, whatever was there before."""
    s0 = rng.standard_normal((6, 4))
    k = rng.standard_normal(6)
    k /= np.linalg.norm(k)
    v = rng.standard_normal(4)
    _, s1 = la.delta_rule(k[None], k[None], v[None], np.ones(1), initial_state=s0, return_state=True)
    assert_close(s1.T @ k, v)


def test_ut_transform_inverts_i_plus_a(rng):
    k = rng.standard_normal((2, 9, 4))
    beta, g = rng.uniform(0, 2, (2, 9)), -rng.uniform(0, 1, (2, 9))
    t = la.ut_transform(k, beta, g)
    a = np.tril(beta[..., :, None] * (k @ k.swapaxes(-1, -2)) * la.decay_mask(g), -1)
    assert_close(t @ (np.eye(9) + a), np.broadcast_to(np.eye(9), t.shape))


@pytest.mark.parametrize("where", ["k", "beta", "log_decay"])
def test_ut_transform_refuses_nan_by_name(where, rng):
    """A NaN used to spread through the forward substitution into T without a word."""
    parts = {"k": rng.standard_normal((3, 7, 5)), "beta": rng.uniform(0, 2, (3, 7)),
             "log_decay": -rng.uniform(0, 1, (3, 7))}
    parts[where][1, 4] = np.nan
    with pytest.raises(ValueError, match=f"{where} must"):
        la.ut_transform(parts["k"], parts["beta"], parts["log_decay"])


def test_unit_keys_and_beta_in_range_stay_bounded_and_large_keys_blow_up(rng):
    n = 400
    q, k, v, beta, _, _ = delta_inputs(rng, (), n, 8, 4, False, initial_state=False)
    stable = la.delta_rule(q, k, v, beta, form="recurrent")
    assert np.abs(stable).max() < 20
    with pytest.raises(ValueError, match="overflowed"):  # ‖k‖ = 3: I − β k kᵀ stretches by |1 − 9β|
        f32 = [x.astype(np.float32) for x in (q, 3 * k, v, np.full(n, 1.9))]
        la.delta_rule(*f32, form="recurrent")


BAD = [
    (lambda q, b: la.delta_rule(q, q, q, b + 2.5), ValueError, r"beta must lie in \[0, 2\]"),
    (lambda q, b: la.delta_rule(q, q, q, -b), ValueError, r"beta must lie in \[0, 2\]"),
    (lambda q, b: la.delta_rule(q, q, q, b[..., :3]), ValueError, "beta"),
    (lambda q, b: la.delta_rule(q, q, q, b, np.zeros(q.shape[:-1] + (4,))), ValueError, "log_decay of shape"),
    (lambda q, b: la.delta_rule(q, q, q, b, form="parallel"), ValueError, "form must be one of"),
    (lambda q, b: la.delta_rule(q, q, q, b.astype(np.float32)), TypeError, "beta must have q's dtype"),
]


@pytest.mark.parametrize("call,error,message", BAD, ids=[
    "beta too large", "beta negative", "beta wrong length", "decay of the wrong width", "no parallel form", "beta dtype"])
def test_bad_input_is_named(call, error, message, rng):
    q, b = rng.standard_normal((2, 9, 3)), rng.uniform(0, 0.6, (2, 9))
    with pytest.raises(error, match=message):
        call(q, b)
