"""generalized_delta_rule (lattn_edu.generalized_delta): the recurrent and chunkwise forms against
explicit matrices and each other, both reference backends, autograd, flash-linear-attention's naive
DPLR, IPLR and KDA references, the delta rule as a special case, stability, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lattn_edu as la
from conftest import assert_close
from fla_naive import load
from gated_inputs import gated_inputs

torch = pytest.importorskip("torch")

FORMS = ("recurrent", "chunkwise")
DECAYS = ("none", "scalar", "vector")


def dplr_inputs(rng, lead=(2, 3), n=45, d_k=6, d_v=5, decay="vector", dtype=np.float64, strength=1.0):
    """q, k, v, a, b, log decay, S_0: a and b random (not a delta-rule pair) with ‖a‖, ‖b‖ about
    0.4, so that A_t = diag(exp g) + a bᵀ is a generic DPLR matrix that stays near norm 1."""
    q, k, v, g, s0 = gated_inputs(rng, lead, n, d_k, d_v, decay, np.float64, strength)
    a, b = 0.4 * rng.standard_normal((2,) + lead + (n, d_k)) / np.sqrt(d_k)
    return tuple(None if x is None else x.astype(dtype) for x in (q, k, v, a, b, g, s0))


def naive_dplr(q, k, v, a, b, g, scale, state=None):
    """S_t = (diag(exp g_t) + a_t b_tᵀ) S_{t−1} + k_t v_tᵀ with explicit matrices, float64."""
    lead, (n, d_k), d_v = q.shape[:-2], q.shape[-2:], v.shape[-1]
    out, final = np.zeros(lead + (n, d_v)), np.zeros(lead + (d_k, d_v))
    for idx in np.ndindex(*lead):
        s = np.zeros((d_k, d_v)) if state is None else np.array(state[idx], np.float64)
        for t in range(n):
            decay = np.ones(d_k) if g is None else np.broadcast_to(np.exp(g[idx + (t,)]), (d_k,))
            transition = np.diag(decay) + np.outer(a[idx + (t,)], b[idx + (t,)])
            s = transition @ s + np.outer(k[idx + (t,)], v[idx + (t,)])
            out[idx + (t,)] = scale * s.T @ q[idx + (t,)]
        final[idx] = s
    return out, final


def tensors(*arrays, dtype=None, requires_grad=False):
    """numpy arrays (None passes) as torch tensors."""
    out = []
    for x in arrays:
        if x is not None:
            x = torch.tensor(x, dtype=dtype, requires_grad=requires_grad)
        out.append(x)
    return out


@pytest.mark.parametrize("decay", DECAYS)
@pytest.mark.parametrize("form", FORMS)
def test_forms_match_explicit_matrices(form, decay, rng):
    q, k, v, a, b, g, s0 = dplr_inputs(rng, (2, 3), 45, 6, 5, decay)
    out, state = la.generalized_delta_rule(q, k, v, a, b, g, form=form, chunk_size=7, initial_state=s0,
                                           return_state=True)
    ref_out, ref_state = naive_dplr(q, k, v, a, b, g, 6 ** -0.5, s0)
    assert_close(out, ref_out, what=form)
    assert_close(state, ref_state, what=f"{form} state")


@pytest.mark.parametrize("n", [45, 63, 100])
@pytest.mark.parametrize("chunk", [1, 7, 64])
def test_chunkwise_agrees_with_recurrent_in_float64(n, chunk, rng):
    q, k, v, a, b, g, s0 = dplr_inputs(rng, (2, 3), n, 6, 4, "vector")
    ref, ref_state = la.generalized_delta_rule(q, k, v, a, b, g, form="recurrent", initial_state=s0,
                                               return_state=True)
    out, state = la.generalized_delta_rule(q, k, v, a, b, g, chunk_size=chunk, initial_state=s0,
                                           return_state=True)
    assert_close(out, ref, rtol=1e-10)
    assert_close(state, ref_state, rtol=1e-10)


@given(n=st.integers(1, 40), chunk=st.integers(1, 19), d_k=st.integers(1, 6), d_v=st.integers(1, 5),
       decay=st.sampled_from(DECAYS), dtype=st.sampled_from([np.float32, np.float64]))
def test_chunkwise_agrees_with_recurrent_anywhere(n, chunk, d_k, d_v, decay, dtype):
    rng = np.random.default_rng(7 * n + chunk)
    q, k, v, a, b, g, _ = dplr_inputs(rng, (2,), n, d_k, d_v, decay, dtype)
    ref = la.generalized_delta_rule(q, k, v, a, b, g, form="recurrent")
    out = la.generalized_delta_rule(q, k, v, a, b, g, chunk_size=chunk)
    assert out.dtype == dtype
    assert_close(out, ref)


def test_a_scalar_decay_is_the_same_decay_in_every_channel(rng):
    q, k, v, a, b, g, s0 = dplr_inputs(rng, (2, 3), 45, 6, 5, "scalar")
    wide = np.broadcast_to(g[..., None], a.shape)
    for form in FORMS:
        assert_close(la.generalized_delta_rule(q, k, v, a, b, g, form=form, chunk_size=8),
                     la.generalized_delta_rule(q, k, v, a, b, wide, form=form, chunk_size=8), what=form)


@pytest.mark.parametrize("form", FORMS)
def test_split_anywhere_and_carry_the_state(form, rng):
    q, k, v, a, b, g, _ = dplr_inputs(rng, (2, 3), 45, 5, 3, "vector")
    whole = la.generalized_delta_rule(q, k, v, a, b, g, form=form, chunk_size=7)
    for cut in (1, 20, 44):
        first, state = la.generalized_delta_rule(*(x[..., :cut, :] for x in (q, k, v, a, b, g)), form=form,
                                                 chunk_size=7, return_state=True)
        second = la.generalized_delta_rule(*(x[..., cut:, :] for x in (q, k, v, a, b, g)), form=form,
                                           chunk_size=7, initial_state=state)
        assert_close(np.concatenate([first, second], axis=-2), whole, what=f"cut at {cut}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("form", FORMS)
def test_torch_backend_and_array_types(form, dtype, rng):
    arrays = dplr_inputs(rng, (2, 3), 63, 6, 5, "vector")
    ref, ref_state = la.generalized_delta_rule(*arrays[:6], form="recurrent", initial_state=arrays[6],
                                               return_state=True)
    torch_dtype = getattr(torch, np.dtype(dtype).name)
    *inputs, s0 = tensors(*arrays, dtype=torch_dtype)
    out, state = la.generalized_delta_rule(*inputs, form=form, backend="torch", chunk_size=16, initial_state=s0,
                                           return_state=True)
    assert isinstance(out, torch.Tensor) and out.dtype == torch_dtype
    assert isinstance(state, torch.Tensor) and state.dtype == out.dtype
    assert_close(out, ref)
    assert_close(state, ref_state)
    mine = la.generalized_delta_rule(*(x.astype(dtype) for x in arrays[:6]), form=form, chunk_size=16)
    assert isinstance(mine, np.ndarray) and mine.dtype == dtype


@pytest.mark.parametrize("decay", ["scalar", "vector"])
@pytest.mark.parametrize("form", FORMS)
def test_gradients_match_finite_differences(form, decay, rng):
    inputs = tensors(*dplr_inputs(rng, (1,), 5, 2, 2, decay), requires_grad=True)

    def call(q, k, v, a, b, g, s0):
        return la.generalized_delta_rule(q, k, v, a, b, g, form=form, backend="torch", chunk_size=3,
                                         initial_state=s0, return_state=True)

    # fast mode (random directions) for the chunkwise form: its many tiny torch calls are slow
    assert torch.autograd.gradcheck(call, inputs, fast_mode=form == "chunkwise")


def test_chunkwise_gradients_equal_the_scans(rng):
    """Every input's gradient through the chunkwise form equals the one through the scan."""
    arrays = dplr_inputs(rng, (2,), 23, 4, 3, "vector")
    grads = {}
    for form in FORMS:
        inputs = tensors(*arrays, requires_grad=True)
        out, state = la.generalized_delta_rule(*inputs[:6], form=form, backend="torch", chunk_size=7,
                                               initial_state=inputs[6], return_state=True)
        ((out ** 2).sum() + (state ** 3).sum()).backward()
        grads[form] = [x.grad for x in inputs]
    for name, mine, ref in zip("q k v a b g s0".split(), grads["chunkwise"], grads["recurrent"]):
        assert_close(mine, ref, what=f"d/d{name}")


def test_numba_has_no_kernel_for_this_model(rng):
    pytest.importorskip("numba")
    q, k, v, a, b, g, _ = dplr_inputs(rng, (2,), 8, 3, 2)
    with pytest.raises(ValueError, match="backend='numba' has no kernels for this model"):
        la.generalized_delta_rule(q, k, v, a, b, g, backend="numba")


# ---- special cases: the delta rule and Kimi Delta Attention ------------------------------------

@pytest.mark.parametrize("gated", [False, True], ids=["deltanet", "gated-deltanet"])
@pytest.mark.parametrize("form", FORMS)
def test_the_delta_rule_is_a_special_case(form, gated, rng):
    """(I − β k kᵀ)(α S) = (α I − αβ k kᵀ) S: a = −α β k, b = k, and the write β k vᵀ."""
    q, k, v, g, s0 = gated_inputs(rng, (2, 3), 45, 6, 5, "scalar" if gated else "none")
    k /= np.linalg.norm(k, axis=-1, keepdims=True)
    beta = rng.uniform(0, 2, q.shape[:-1])[..., None]  # [..., N, 1]
    alpha = 1.0 if g is None else np.exp(g)[..., None]
    out, state = la.generalized_delta_rule(q, beta * k, v, -alpha * beta * k, k, g, form=form, chunk_size=8,
                                           initial_state=s0, return_state=True)
    ref, ref_state = la.delta_rule(q, k, v, beta[..., 0], g, form="recurrent", initial_state=s0,
                                   return_state=True)
    assert_close(out, ref)
    assert_close(state, ref_state)


# ---- flash-linear-attention's naive references (float32) ---------------------------------------

def ours_against(reference, arrays, form, backend, decay):
    """Our output and state next to theirs (float32): theirs ``(o, S)``, ours from float64 numpy
    or float32 torch."""
    q, k, v, a, b, g, s0 = arrays
    if backend == "torch":
        q, k, v, a, b, g, s0 = tensors(*arrays, dtype=torch.float32)
    out, state = la.generalized_delta_rule(q, k, v, a, b, g if decay else None, form=form, backend=backend,
                                           chunk_size=16, initial_state=s0, return_state=True)
    assert_close(reference[0], out, rtol=1e-4, what="output")
    assert_close(reference[1], state, rtol=1e-4, what="final state")


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("theirs", ["dplr_recurrence", "dplr_chunkwise"])
def test_against_fla_dplr(theirs, form, backend, rng):
    """fla's DPLR step is exp(gk) ⊙ S + beta (alphaᵀ S) in the same [B, H, T, D] layout: their
    alpha is our b (the read), their beta our a (the write). Their chunkwise form needs T to be a
    multiple of its chunk size."""
    module = load("generalized_delta_rule/dplr/naive.py")
    arrays = dplr_inputs(rng, (2, 3), 64, 6, 5, "vector")
    q, k, v, a, b, g, s0 = tensors(*arrays, dtype=torch.float32)
    options = {"chunk_size": 16} if theirs == "dplr_chunkwise" else {}
    reference = getattr(module, theirs)(q, k, v, alpha=b, beta=a, gk=g, initial_state=s0, **options)
    ours_against(reference, arrays, form, backend, decay=True)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("theirs", ["iplr_recurrence", "iplr_chunkwise"])
def test_against_fla_iplr(theirs, form, backend, rng):
    """IPLR is DPLR without the decay: S + beta (alphaᵀ S) + k vᵀ."""
    module = load("generalized_delta_rule/iplr/naive.py")
    arrays = dplr_inputs(rng, (2, 3), 64, 6, 5, "none")
    q, k, v, a, b, _, s0 = tensors(*arrays, dtype=torch.float32)
    options = {"chunk_size": 16} if theirs == "iplr_chunkwise" else {}
    reference = getattr(module, theirs)(q, k, v, alpha=b, beta=a, initial_state=s0, **options)
    ours_against(reference, arrays, form, backend, decay=False)


@pytest.mark.parametrize("form", FORMS)
def test_kimi_delta_attention_is_a_special_case(form, rng):
    """KDA decays first, S ← (I − β k kᵀ) diag(exp g) S + β k vᵀ, and
    (I − β k kᵀ) diag(α) = diag(α) − β k (α ⊙ k)ᵀ: a = −β k, b = exp(g) ⊙ k, the write β k vᵀ.
    fla's naive KDA works in [B, T, H, D]."""
    module = load("kda/naive.py")
    q, k, v, g, s0 = gated_inputs(rng, (2, 3), 45, 6, 5, "vector")
    k /= np.linalg.norm(k, axis=-1, keepdims=True)
    beta = rng.uniform(0, 2, q.shape[:-1])
    bthd = [torch.from_numpy(np.ascontiguousarray(np.swapaxes(x, 1, 2))).float() for x in (q, k, v, g, beta)]
    o, s = module.naive_recurrent_kda(*bthd, initial_state=torch.from_numpy(s0).float(), output_final_state=True)
    out, state = la.generalized_delta_rule(q, beta[..., None] * k, v, -beta[..., None] * k, np.exp(g) * k, g,
                                           form=form, chunk_size=8, initial_state=s0, return_state=True)
    assert_close(np.swapaxes(o.double().numpy(), 1, 2), out, rtol=1e-4)
    assert_close(s, state, rtol=1e-4)


# ---- stability and extremes --------------------------------------------------------------------

def test_strong_decay_over_65536_steps_stays_finite_in_float32(rng):
    """Per-channel log decays down to −40 per step: every factor is exp of a segment sum <= 0."""
    q, k, v, a, b, g, _ = dplr_inputs(rng, (1,), 65536, 4, 3, "vector", np.float32, strength=40.0)
    out = la.generalized_delta_rule(q, k, v, a, b, g, chunk_size=64)
    assert np.isfinite(out).all()
    tail = slice(-300, None)
    ref = la.generalized_delta_rule(*(x[..., tail, :].astype(np.float64) for x in (q, k, v, a, b, g)),
                                    form="recurrent")  # 40 per step: the earlier steps are long forgotten
    assert_close(out[..., -200:, :], ref[..., -200:, :], rtol=1e-4)


@pytest.mark.parametrize("c", ["deltanet-beta-2", "rwkv7-equal-channels"])
def test_a_non_expanding_parametrisation_stays_bounded_for_thousands_of_steps(c, rng):
    """a = −c k̂, b = k̂ with unit k̂: A = diag(d) − c k̂k̂ᵀ has ‖A‖₂ <= 1 for 0 <= c <= 1 + min d,
    so ‖S_t‖_F <= ‖S_0‖_F + Σ ‖k‖‖v‖ (DeltaNet with β = 2 and no decay; RWKV-7 with one a_rwkv)."""
    q, k, v, _, _, g, s0 = dplr_inputs(rng, (2,), 4000, 8, 4, "vector", np.float64, strength=0.05)
    unit = k / np.linalg.norm(k, axis=-1, keepdims=True)
    if c == "deltanet-beta-2":
        g, coeff = None, 2.0
    else:
        coeff = (1 + np.exp(g).min(axis=-1, keepdims=True)) * rng.uniform(0, 1, g.shape[:-1] + (1,))
    q, k, v, a, b, s0 = (x.astype(np.float32) for x in (q, unit, v, -coeff * unit, unit, s0))
    g = None if g is None else g.astype(np.float32)
    out, state = la.generalized_delta_rule(q, k, v, a, b, g, initial_state=s0, return_state=True)
    bound = np.linalg.norm(s0, axis=(-2, -1)) + np.linalg.norm(v, axis=-1).sum(axis=-1)
    assert np.isfinite(out).all() and (np.linalg.norm(state, axis=(-2, -1)) <= bound).all()


def test_rwkv7_per_channel_step_can_expand_the_state():
    """The docstring's example: A = diag(0.99) − (a_rwkv ⊙ k̂) k̂ᵀ with a_rwkv = (1, 0), k̂ = (1, 1)/√2
    has eigenvalues 0.49 and 0.99 but spectral norm 1.13: one step grows a state along its top
    right singular vector."""
    unit = np.array([[1.0, 1.0]]) / np.sqrt(2)
    a, b, g = unit * np.array([1.0, 0.0]), -unit, np.log(np.full((1, 2), 0.99))
    transition = np.diag(np.exp(g[0])) + np.outer(a[0], b[0])
    assert np.abs(np.linalg.eigvals(transition)).max() <= 1 < np.linalg.norm(transition, 2)
    s0 = np.linalg.svd(transition)[2][0][:, None]  # [d_k, d_v = 1]
    zeros = np.zeros((1, 2))
    _, s1 = la.generalized_delta_rule(zeros, zeros, zeros[:, :1], a, b, g, initial_state=s0, return_state=True)
    assert np.linalg.norm(s1) == pytest.approx(np.linalg.norm(transition, 2))


def test_rwkv7_per_channel_steps_can_grow_the_state_without_bound(rng):
    """The docstring's second example: two RWKV-7 steps whose eigenvalues lie in [−1, 1] but whose
    product has spectral radius 1.22; alternating them (no writes) grows any generic state."""
    unit = np.array([[1.0, 2.0], [2.0, 1.0]]) / np.sqrt(5)
    a_rwkv = np.eye(2)
    n = 200
    a, b = np.tile(a_rwkv * unit, (n // 2, 1)), np.tile(-unit, (n // 2, 1))  # [N, 2], steps alternate
    g, zeros, s0 = np.full((n, 2), np.log(0.99)), np.zeros((n, 2)), rng.standard_normal((2, 3))
    _, state = la.generalized_delta_rule(zeros, zeros, zeros[:, :1].repeat(3, 1), a, b, g, initial_state=s0,
                                         return_state=True)
    assert np.linalg.norm(state) > 1e6 * np.linalg.norm(s0)


def test_an_overflow_is_reported_not_returned(rng):
    q, k, v, _, _, _, _ = dplr_inputs(rng, (1,), 300, 4, 3, "none", np.float32)
    grow = np.full((1, 300, 4), 0.5, np.float32)  # A = I + ¼·11ᵀ: eigenvalue 2 along 1
    with pytest.raises(ValueError, match="overflowed"):
        la.generalized_delta_rule(q, k, v, grow, grow)


# ---- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name, bad, error, match", [
    ("a", lambda a: a[..., 0], ValueError, "a must have shape"),
    ("b", lambda b: b[..., :-1], ValueError, "b of shape"),
    ("a", lambda a: np.where(np.arange(a.shape[-1]) == 1, np.nan, a), ValueError, "a must be finite"),
    ("b", lambda b: np.where(np.arange(b.shape[-1]) == 1, np.inf, b), ValueError, "b must be finite"),
    ("a", lambda a: a.astype(np.float32), TypeError, "a must have q's dtype"),
    ("b", lambda b: torch.from_numpy(b), TypeError, "b must be a ndarray like q"),
    ("g", lambda g: -g, ValueError, "log_decay must be <= 0"),
    ("g", lambda g: np.where(g < -0.5, -np.inf, g), ValueError, "log_decay must be finite"),
    ("g", lambda g: g[..., :-1, :], ValueError, "log_decay of shape"),
    ("s0", lambda s: s[..., :-1], ValueError, "initial_state must have shape"),
])
def test_bad_input_is_refused_by_name(name, bad, error, match, rng):
    args = dict(zip(("q", "k", "v", "a", "b", "g", "s0"), dplr_inputs(rng, (2,), 9, 3, 2)))
    args[name] = bad(args[name])
    with pytest.raises(error, match=match):
        la.generalized_delta_rule(args["q"], args["k"], args["v"], args["a"], args["b"], args["g"],
                                  initial_state=args["s0"])


@pytest.mark.parametrize("option, value, match", [
    ("form", "parallel", "form must be one of 'recurrent', 'chunkwise'"),
    ("chunk_size", 0, "chunk_size"),
    ("return_state", 1, "return_state"),
    ("scale", -1.0, "scale"),
])
def test_bad_options_are_refused_by_name(option, value, match, rng):
    q, k, v, a, b, g, _ = dplr_inputs(rng, (2,), 9, 3, 2)
    with pytest.raises((ValueError, TypeError), match=match):
        la.generalized_delta_rule(q, k, v, a, b, g, **{option: value})
