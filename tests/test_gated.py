"""gated_linear_attention: every form against a naive loop written here, state in and out,
numerics at long length and strong decay, and bad input (lattn_edu.gated)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lattn_edu as la
from conftest import assert_close
from gated_inputs import DECAYS, gated_inputs

FORMS = ("recurrent", "parallel", "chunkwise")


def naive_gated(q, k, v, g, scale, state=None):
    """S_t = diag(exp(g_t)) S_{t-1} + k_t v_tᵀ, o_t = scale S_tᵀ q_t, one sequence at a time in
    float64, with explicit Python loops: no code shared with the package."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    lead, (n, d_k), d_v = q.shape[:-2], q.shape[-2:], v.shape[-1]
    out = np.zeros(lead + (n, d_v))
    final = np.zeros(lead + (d_k, d_v))
    for idx in np.ndindex(*lead):
        s = np.zeros((d_k, d_v)) if state is None else np.array(state[idx], np.float64)
        for t in range(n):
            if g is not None:
                decay = np.exp(np.asarray(g[idx + (t,)], np.float64))  # scalar or [d_k]
                s = (decay * np.ones(d_k))[:, None] * s
            s = s + np.outer(k[idx + (t,)], v[idx + (t,)])
            out[idx + (t,)] = scale * s.T @ q[idx + (t,)]
        final[idx] = s
    return out, final


@pytest.mark.parametrize("decay", DECAYS)
@pytest.mark.parametrize("form", FORMS)
def test_every_form_matches_the_naive_loop(form, decay, rng):
    q, k, v, g, _ = gated_inputs(rng, (2, 3), 37, 5, 7, decay, initial_state=False)
    out, state = la.gated_linear_attention(q, k, v, g, form=form, chunk_size=8, return_state=True)
    ref_out, ref_state = naive_gated(q, k, v, g, 5 ** -0.5)
    assert_close(out, ref_out, what=f"{form} output")
    assert_close(state, ref_state, what=f"{form} final state")


@given(n=st.integers(1, 40), chunk=st.integers(1, 17), d_k=st.integers(1, 6), d_v=st.integers(1, 6),
       heads=st.integers(1, 3), decay=st.sampled_from(DECAYS), dtype=st.sampled_from([np.float32, np.float64]))
def test_chunkwise_and_parallel_agree_with_recurrent(n, chunk, d_k, d_v, heads, decay, dtype):
    rng = np.random.default_rng(n * 1000 + chunk)
    q, k, v, g, _ = gated_inputs(rng, (heads,), n, d_k, d_v, decay, dtype, initial_state=False)
    ref, ref_state = la.gated_linear_attention(q, k, v, g, form="recurrent", return_state=True)
    for form in ("parallel", "chunkwise"):
        out, state = la.gated_linear_attention(q, k, v, g, form=form, chunk_size=chunk, return_state=True)
        assert out.dtype == dtype and state.dtype == dtype
        assert_close(out, ref, what=form)
        assert_close(state, ref_state, what=f"{form} state")


@pytest.mark.parametrize("decay", DECAYS)
@pytest.mark.parametrize("form", FORMS)
def test_split_anywhere_and_carry_the_state(form, decay, rng):
    q, k, v, g, _ = gated_inputs(rng, (2,), 53, 4, 3, decay, initial_state=False)
    whole, whole_state = la.gated_linear_attention(q, k, v, g, form=form, chunk_size=6, return_state=True)
    for cut in (1, 17, 52):
        first, state = la.gated_linear_attention(q[:, :cut], k[:, :cut], v[:, :cut],
                                                 None if g is None else g[:, :cut], form=form,
                                                 chunk_size=6, return_state=True)
        second, end = la.gated_linear_attention(q[:, cut:], k[:, cut:], v[:, cut:],
                                                None if g is None else g[:, cut:], form=form,
                                                chunk_size=6, initial_state=state, return_state=True)
        assert_close(np.concatenate([first, second], axis=-2), whole, what=f"cut at {cut}")
        assert_close(end, whole_state, what=f"final state, cut at {cut}")


def test_scalar_decay_equals_the_same_decay_on_every_channel(rng):
    q, k, v, g, _ = gated_inputs(rng, (3,), 29, 4, 2, "scalar", initial_state=False)
    vector = np.repeat(g[..., None], 4, axis=-1)
    assert_close(la.gated_linear_attention(q, k, v, g), la.gated_linear_attention(q, k, v, vector))


def test_no_decay_is_causal_linear_attention_without_the_normaliser(rng):
    q, k, v, _, _ = gated_inputs(rng, (2,), 31, 4, 3, "none", initial_state=False)
    plain = la.gated_linear_attention(q, k, v, scale=1.0)
    assert_close(plain, np.tril(q @ k.swapaxes(-1, -2)) @ v)
    # with a column of ones in v the same recurrence carries the normaliser: o = num / den
    phi_q, phi_k = la.elu_plus_one(q), la.elu_plus_one(k)
    both = la.gated_linear_attention(phi_q, phi_k, np.concatenate([v, np.ones_like(v[..., :1])], -1), scale=1.0)
    assert_close(both[..., :-1] / (both[..., -1:] + 1e-6), la.linear_attention(q, k, v, causal=True))


def test_segment_sums_and_the_decay_mask_by_hand():
    g = np.array([-0.5, -1.0, -2.0])
    expected = np.array([[0.0, -np.inf, -np.inf], [-1.0, 0.0, -np.inf], [-3.0, -2.0, 0.0]])
    assert np.array_equal(la.segment_sums(g), expected)
    assert_close(la.decay_mask(g), np.exp(expected))


@pytest.mark.parametrize("bad", [np.nan, np.inf], ids=["nan", "+inf"])
def test_segment_sums_refuse_nan_and_plus_inf_by_name(bad):
    """A NaN in one log decay used to fill its row and column of the mask with NaN silently."""
    g = np.array([[-0.5, bad, -2.0, -0.1, -0.3], [-0.1] * 5])
    with pytest.raises(ValueError, match="log_decay must hold no NaN or \\+inf"):
        la.segment_sums(g)
    with pytest.raises(ValueError, match="log_decay"):
        la.decay_mask(g)
    assert np.isneginf(la.segment_sums(np.array([-0.5, -np.inf, -2.0]))[2, 0])  # a decay of 0 is legal


@pytest.mark.parametrize("decay", ["none", "strong"])
@pytest.mark.parametrize("form", ["recurrent", "chunkwise"])
def test_float32_at_65536_tokens_stays_finite(form, decay, rng):
    n, d = 65_536, 4
    q, k = (rng.standard_normal((n, d)).astype(np.float32) * 0.5 for _ in range(2))
    v = rng.standard_normal((n, 3)).astype(np.float32)
    g = None if decay == "none" else np.full(n, -5.0, np.float32)
    out, state = la.gated_linear_attention(q, k, v, g, form=form, return_state=True)
    assert np.isfinite(out).all() and np.isfinite(state).all()
    if decay == "strong":  # exp(-5) per step: the last output is nearly the last token alone
        last = 0.5 * (q[-1] @ k[-1]) * v[-1] + 0.5 * np.exp(-5) * (q[-1] @ k[-2]) * v[-2]
        assert_close(out[-1], last, rtol=1e-3)


def test_strong_vector_decay_parallel_form_does_not_overflow(rng):
    q, k, v, _, _ = gated_inputs(rng, (), 300, 3, 2, "none", initial_state=False)
    g = np.full((300, 3), -50.0)  # Σ g over the sequence is -15,000: exp of it and of its negative overflow
    out = la.gated_linear_attention(q, k, v, g, form="parallel")
    assert_close(out, naive_gated(q, k, v, g, 3 ** -0.5)[0])


BAD = [
    (lambda q, v: la.gated_linear_attention(q, q, v, np.full(q.shape[:-1], 0.1)), ValueError, "log_decay must be <= 0"),
    (lambda q, v: la.gated_linear_attention(q, q, v, np.full(q.shape[:-1], np.nan)), ValueError, "log_decay must be finite"),
    (lambda q, v: la.gated_linear_attention(q, q, v, np.zeros((2, 7))), ValueError, "log_decay"),
    (lambda q, v: la.gated_linear_attention(q, q, v, np.zeros((3, 2, 11))), ValueError, "does not broadcast"),
    (lambda q, v: la.gated_linear_attention(q, q, v, initial_state=np.zeros((3, 4, 5))), ValueError,
     r"initial_state must have shape \[3, 4, 2\]"),
    (lambda q, v: la.gated_linear_attention(q, q, v, initial_state=np.zeros((3, 4, 2), np.float32)), TypeError,
     "initial_state must have q's dtype"),
    (lambda q, v: la.gated_linear_attention(q.astype(int), q.astype(int), v.astype(int)), TypeError, "float32 or float64"),
    (lambda q, v: la.gated_linear_attention(q[:, :0], q[:, :0], v[:, :0]), ValueError, "N >= 1"),
    (lambda q, v: la.gated_linear_attention(q, q, v, form="quadratic"), ValueError, "form must be one of"),
    (lambda q, v: la.gated_linear_attention(q, q, v, scale=-1.0), ValueError, "scale must be"),
    (lambda q, v: la.gated_linear_attention(q, q, v, chunk_size=0), ValueError, "chunk_size"),
    (lambda q, v: la.gated_linear_attention(q, q, v[..., :5, :]), ValueError, "v must have the same length"),
]


@pytest.mark.parametrize("call,error,message", BAD, ids=[
    "positive decay", "nan decay", "decay wrong length", "decay does not broadcast", "state shape",
    "state dtype", "integers", "empty", "unknown form", "negative scale", "zero chunk", "v length"])
def test_bad_input_is_named(call, error, message, rng):
    q, v = rng.standard_normal((3, 11, 4)), rng.standard_normal((3, 11, 2))
    with pytest.raises(error, match=message):
        call(q, v)


def test_overflow_is_an_error_not_a_nan(rng):
    q = np.full((5, 2), 1e200)
    with pytest.raises(ValueError, match="overflowed"):
        la.gated_linear_attention(q, q, q)
