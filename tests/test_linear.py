"""The four numpy forms of linear attention agree, match hand-worked answers, and refuse bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import lattn_edu as la
from lattn_edu.linear import FORMS
from conftest import assert_close
from naive import make_qkv, naive_linear_attention

LEADS = {"no-lead": (), "B": (3,), "BH": (2, 3)}
LENGTHS = (1, 2, 63, 100, 257)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_quadratic_form_matches_the_definition(rng, causal):
    q, k, v = make_qkv(rng, (), 23)
    out = la.linear_attention(q, k, v, causal=causal, form="quadratic")
    assert_close(out, naive_linear_attention(q, k, v, causal), what="quadratic vs loops")


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("lead", LEADS.values(), ids=LEADS.keys())
@pytest.mark.parametrize("n", LENGTHS, ids=lambda n: f"N{n}")
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_every_form_agrees_with_the_quadratic_form(rng, causal, n, lead, dtype):
    q, k, v = make_qkv(rng, lead, n, dtype=dtype)
    reference = la.linear_attention(q, k, v, causal=causal, form="quadratic")
    for form in FORMS:
        for chunk_size in (7, 64) if form == "chunkwise" else (64,):
            out = la.linear_attention(q, k, v, causal=causal, form=form, chunk_size=chunk_size)
            assert out.dtype == dtype and out.shape == lead + (n, v.shape[-1])
            assert_close(out, reference, what=f"{form} (C={chunk_size})")


@pytest.mark.parametrize("form", FORMS)
def test_non_causal_queries_may_outnumber_keys(rng, form):
    q, k, v = make_qkv(rng, (2,), 31, n_q=45)
    out = la.linear_attention(q, k, v, form=form, chunk_size=8)
    assert out.shape == (2, 45, v.shape[-1])
    assert_close(out, la.linear_attention(q, k, v, form="quadratic"), what=form)


def test_causal_output_ignores_the_future(rng):
    q, k, v = make_qkv(rng, (), 40)
    before = la.linear_attention(q, k, v, causal=True)
    k[25:] += 3.0
    v[25:] *= -2.0
    after = la.linear_attention(q, k, v, causal=True)
    np.testing.assert_array_equal(before[:25], after[:25])
    assert np.abs(before[25:] - after[25:]).min() > 0


def test_hand_worked_case_two_tokens():
    # φ = identity on positive inputs: weights are plain dot products.
    q = np.array([[1.0, 0.0], [1.0, 1.0]])
    k = np.array([[2.0, 0.0], [0.0, 1.0]])
    v = np.array([[10.0], [20.0]])
    out = la.linear_attention(q, k, v, feature_map="relu", causal=True, eps=0.0)
    # token 0 sees only itself: 10. token 1 weights (2, 1): (2·10 + 1·20) / 3.
    np.testing.assert_allclose(out[:, 0], [10.0, 40.0 / 3.0], rtol=1e-15)
    out = la.linear_attention(q, k, v, feature_map="relu", causal=False, eps=0.0)
    # token 0 weights (2, 0): 10 exactly.
    np.testing.assert_allclose(out[:, 0], [10.0, 40.0 / 3.0], rtol=1e-15)


def test_uniform_keys_average_the_values(rng):
    # identical keys give every position the same weight: the output is the mean of v.
    q = rng.standard_normal((9, 4))
    k = np.tile(rng.standard_normal(4), (9, 1))
    v = rng.standard_normal((9, 3))
    out = la.linear_attention(q, k, v, eps=0.0)
    assert_close(out, np.tile(v.mean(0), (9, 1)), what="mean of values")


def test_seed_worked_example_through_the_forms():
    # φ(k1)=[1,0], v1=[1,0]; φ(k2)=[0,1], v2=[0,2]; φ(q)=[3,1] -> o = [0.75, 0.5].
    phi_k = np.array([[1.0, 0.0], [0.0, 1.0]])
    v = np.array([[1.0, 0.0], [0.0, 2.0]])
    phi_q = np.array([[3.0, 1.0]])
    for form in FORMS:
        out = la.linear_attention(phi_q, phi_k, v, feature_map="identity", form=form, eps=0.0)
        np.testing.assert_allclose(out, [[0.75, 0.5]], rtol=1e-15, err_msg=form)


def test_a_zero_denominator_without_eps_raises_instead_of_nan():
    q = -np.ones((4, 3))  # relu features of q are all zero: weight total 0
    k, v = np.ones((4, 3)), np.ones((4, 2))
    for form in FORMS:
        with pytest.raises(ValueError, match="denominator"):
            la.linear_attention(q, k, v, feature_map="relu", form=form, eps=0.0)


def test_eps_guards_an_all_zero_denominator():
    q = -np.ones((4, 3))  # relu features of q are all zero
    k, v = np.ones((4, 3)), np.ones((4, 2))
    for form in FORMS:
        out = la.linear_attention(q, k, v, feature_map="relu", form=form, causal=True)
        np.testing.assert_array_equal(out, 0.0)


def test_float32_stays_close_to_float64(rng):
    q, k, v = make_qkv(rng, (2,), 257)
    exact = la.linear_attention(q, k, v, causal=True, form="quadratic")
    for form in FORMS:
        single = la.linear_attention(*(x.astype(np.float32) for x in (q, k, v)), causal=True, form=form)
        assert_close(single, exact, rtol=1e-4, what=f"{form} float32 vs float64")


shapes = st.tuples(st.integers(0, 2), st.integers(1, 40), st.integers(1, 6), st.integers(1, 6),
                   st.integers(1, 9))


@given(shape=shapes, causal=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_forms_agree_on_random_shapes(shape, causal, seed):
    n_lead, n, d, d_v, chunk = shape
    rng = np.random.default_rng(seed)
    q, k, v = make_qkv(rng, (2,) * n_lead, n, d, d_v)
    reference = la.linear_attention(q, k, v, causal=causal, form="quadratic")
    for form in ("parallel", "recurrent", "chunkwise"):
        out = la.linear_attention(q, k, v, causal=causal, form=form, chunk_size=chunk)
        assert_close(out, reference, what=form)


@given(x=arrays(np.float64, (6, 3), elements=st.floats(-50, 50)))
def test_forms_agree_on_extreme_values(x):
    q, k, v = x, x[::-1].copy(), x * 0.5
    reference = la.linear_attention(q, k, v, causal=True, form="quadratic")
    for form in ("parallel", "recurrent", "chunkwise"):
        out = la.linear_attention(q, k, v, causal=True, form=form, chunk_size=4)
        assert_close(out, reference, rtol=1e-9, what=form)


BAD_INPUTS = {
    "d mismatch": (dict(k=np.zeros((5, 4))), ValueError, "k must have the same feature size d"),
    "N mismatch k v": (dict(v=np.zeros((6, 2))), ValueError, "v must have the same length N"),
    "N mismatch causal": (dict(q=np.zeros((4, 3)), causal=True), ValueError, "same length N"),
    "ndim 1": (dict(q=np.zeros(3)), ValueError, r"q must have shape \[\.\.\., N, d\]"),
    "ndim differ": (dict(q=np.zeros((1, 5, 3))), ValueError, "same number of dims"),
    "lead differ": (dict(q=np.zeros((2, 5, 3)), k=np.zeros((3, 5, 3)), v=np.zeros((3, 5, 2))),
                    ValueError, "leading"),
    "int dtype": (dict(q=np.zeros((5, 3), dtype=np.int64)), TypeError, "q must have dtype float32 or float64"),
    "float16": (dict(v=np.zeros((5, 2), dtype=np.float16)), TypeError, "v must have dtype"),
    "mixed dtype": (dict(q=np.zeros((5, 3), dtype=np.float32)), TypeError, "share one dtype"),
    "nan": (dict(k=np.full((5, 3), np.nan)), ValueError, "k must be finite"),
    "inf": (dict(v=np.full((5, 2), np.inf)), ValueError, "v must be finite"),
    "empty N": (dict(q=np.zeros((0, 3)), k=np.zeros((0, 3)), v=np.zeros((0, 2))), ValueError, "N >= 1"),
    "string": (dict(q="abc"), TypeError, "q must be a float32 or float64 array"),
    "form": (dict(form="fast"), ValueError, "form must be one of"),
    "backend": (dict(backend="jax"), ValueError, "backend must be one of"),
    "feature map name": (dict(feature_map="softmax"), ValueError, "feature_map must be one of"),
    "feature map type": (dict(feature_map=3), TypeError, "feature_map must be a name"),
    "feature map shape": (dict(feature_map=lambda x: x[..., :-1, :]), ValueError, "feature_map must map q"),
    "feature map nan": (dict(feature_map=lambda x: x * np.nan), ValueError, "feature_map"),
    "chunk 0": (dict(chunk_size=0, form="chunkwise"), ValueError, "chunk_size must be a positive int"),
    "chunk float": (dict(chunk_size=8.0), TypeError, "chunk_size must be a positive int"),
    "chunk bool": (dict(chunk_size=True), TypeError, "chunk_size"),
    "eps negative": (dict(eps=-1.0), ValueError, "eps must be finite and >= 0"),
    "eps nan": (dict(eps=float("nan")), ValueError, "eps"),
    "causal str": (dict(causal="yes"), TypeError, "causal must be True or False"),
}


@pytest.mark.parametrize("change, error, message", BAD_INPUTS.values(), ids=BAD_INPUTS.keys())
def test_bad_input_raises_a_clear_error(change, error, message):
    args = dict(q=np.zeros((5, 3)), k=np.zeros((5, 3)), v=np.zeros((5, 2)))
    args.update(change)
    with pytest.raises(error, match=message):
        la.linear_attention(**args)


@given(n_q=st.integers(1, 6), n=st.integers(1, 6), d_q=st.integers(1, 4), d_k=st.integers(1, 4))
def test_mismatched_shapes_always_raise(n_q, n, d_q, d_k):
    q, k, v = np.zeros((n_q, d_q)), np.zeros((n, d_k)), np.zeros((n, 2))
    if d_q == d_k and n_q == n:
        assert la.linear_attention(q, k, v, causal=True).shape == (n, 2)
        return
    with pytest.raises(ValueError, match="q|k"):
        la.linear_attention(q, k, v, causal=True)


def test_torch_tensor_with_numpy_backend_is_refused():
    torch = pytest.importorskip("torch")
    x = torch.zeros(4, 3, dtype=torch.float64)
    with pytest.raises(TypeError, match="backend='torch'"):
        la.linear_attention(x, x, x, backend="numpy")


def test_available_backends_lists_numpy_first():
    backends = la.available_backends()
    assert backends[0] == "numpy" and set(backends) <= {"numpy", "numba", "torch"}


def test_favor_plus_keeps_float32(rng):
    q, k, v = make_qkv(rng, (2,), 33, dtype=np.float32)
    out = la.linear_attention(q, k, v, feature_map=la.FavorPlus(5, 11), causal=True)
    assert out.dtype == np.float32


def test_big_endian_input_is_read_as_its_value(rng):
    q, k, v = make_qkv(rng, (), 12)
    swapped = [x.astype(">f8") for x in (q, k, v)]
    assert_close(la.linear_attention(*swapped), la.linear_attention(q, k, v))


def test_torch_parameters_are_tensors_too():
    torch = pytest.importorskip("torch")
    q = torch.nn.Parameter(torch.randn(9, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(3)))
    out = la.linear_attention(q, q.detach(), q.detach(), backend="torch")
    out.sum().backward()
    assert q.grad is not None and torch.isfinite(q.grad).all()


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
@pytest.mark.parametrize("form", ["quadratic", "parallel", "recurrent", "chunkwise"])
def test_state_out_and_back_in_equals_one_call(form, causal, rng):
    """Split anywhere, carry (S, z): the outputs of one call over the whole sequence (causal);
    non-causal, the state after all keys is the same however the keys were split."""
    q, k, v = rng.standard_normal((3, 2, 47, 5))
    whole, (s_whole, z_whole) = la.linear_attention(q, k, v, causal=causal, form=form, chunk_size=6,
                                                    return_state=True)
    assert_close(whole, la.linear_attention(q, k, v, causal=causal, form=form, chunk_size=6))
    phi_k = la.elu_plus_one(k)
    assert_close(s_whole, phi_k.swapaxes(-1, -2) @ v, what="S")
    assert_close(z_whole, phi_k.sum(-2), what="z")
    for cut in (1, 23, 46):
        first, state = la.linear_attention(q[:, :cut], k[:, :cut], v[:, :cut], causal=causal, form=form,
                                           chunk_size=6, return_state=True)
        second, (s_end, _) = la.linear_attention(q[:, cut:], k[:, cut:], v[:, cut:], causal=causal, form=form,
                                                 chunk_size=6, initial_state=state, return_state=True)
        assert_close(s_end, s_whole, what=f"S after the cut at {cut}")
        if causal:
            assert_close(np.concatenate([first, second], -2), whole, what=f"outputs, cut at {cut}")


@pytest.mark.parametrize("backend", ["numba", "torch"])
@pytest.mark.parametrize("form", ["quadratic", "parallel", "recurrent", "chunkwise"])
def test_state_carries_across_a_split_on_every_backend(form, backend, rng):
    """The same split-and-carry identity through the compiled and the torch engines."""
    if backend not in la.available_backends():
        pytest.skip(f"{backend} is not installed")
    q, k, v = rng.standard_normal((3, 2, 29, 4))
    whole = la.linear_attention(q, k, v, causal=True)  # the numpy reference
    first, state = la.linear_attention(q[:, :11], k[:, :11], v[:, :11], causal=True, form=form,
                                       backend=backend, chunk_size=4, return_state=True)
    second = la.linear_attention(q[:, 11:], k[:, 11:], v[:, 11:], causal=True, form=form,
                                 backend=backend, chunk_size=4, initial_state=state)
    assert_close(np.concatenate([first, second], -2), whole, what=f"{backend} {form}")


@pytest.mark.parametrize("backend", [pytest.param(name, marks=pytest.mark.skipif(
    name not in la.available_backends(), reason=f"{name} is not installed")) for name in ("numpy", "numba", "torch")])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
@pytest.mark.parametrize("scale", [1.0, 8.0, 30.0])
def test_favor_plus_state_carried_across_a_split_equals_one_call(scale, causal, backend, rng):
    """FAVOR+ keeps its state in per-feature units that follow the largest key feature seen
    (S, z, log_scale): carried across any cut it gives the outputs and the state of one call
    without state, also where plain features underflow (scale 30: |x| about 60)."""
    q, k = scale * rng.standard_normal((2, 2, 31, 5)) * 5**-0.25
    v = rng.standard_normal((2, 31, 3))
    fp = la.FavorPlus(5, 9, seed=3)
    for form in FORMS:
        options = dict(feature_map=fp, causal=causal, form=form, backend=backend, chunk_size=4)
        whole = la.linear_attention(q, k, v, **options)
        _, state_whole = la.linear_attention(q, k, v, return_state=True, **options)
        for cut in (1, 12, 30):
            first, state = la.linear_attention(q[:, :cut], k[:, :cut], v[:, :cut], return_state=True, **options)
            second, state_end = la.linear_attention(q[:, cut:], k[:, cut:], v[:, cut:], initial_state=state,
                                                    return_state=True, **options)
            if causal:
                assert_close(np.concatenate([first, second], -2), whole, what=f"{form}, cut at {cut}")
            for part, name in zip(range(3), ("S", "z", "log_scale")):
                assert_close(state_end[part], state_whole[part], what=f"{form}, {name} after the cut at {cut}")


def test_favor_plus_state_in_the_maps_own_units_is_read_as_such(rng):
    """A pair (S, z) in φ's own units (log_scale 0) continues a FAVOR+ sequence too; a row with
    z = 0 is a row with no key, and S must be 0 there."""
    q, k, v = rng.standard_normal((3, 23, 5)) * 5**-0.25
    fp = la.FavorPlus(5, 9, seed=3)
    whole = la.linear_attention(q, k, v, feature_map=fp, causal=True, eps=0.0)
    plain_s, plain_z = fp(k[:10]).T @ v[:10], fp(k[:10]).sum(0)  # [m, d_v], [m]
    rest = la.linear_attention(q[10:], k[10:], v[10:], feature_map=fp, causal=True, eps=0.0,
                               initial_state=(plain_s, plain_z))  # other units: equal only with eps = 0
    assert_close(rest, whole[10:], what="continued from the plain pair")
    plain_s[2], plain_z[2] = 1.0, 0.0
    with pytest.raises(ValueError, match="initial_state z must be >= 0"):
        la.linear_attention(q[10:], k[10:], v[10:], feature_map=fp, causal=True, initial_state=(plain_s, plain_z))


@pytest.mark.parametrize("state,error,message", [
    ("S", TypeError, "initial_state must be a pair"),
    ((np.zeros((2, 5, 3)), np.zeros((2, 5))), ValueError, r"initial_state S must have shape \[2, 5, 5\]"),
    ((np.zeros((2, 5, 5)), np.zeros((2, 4))), ValueError, r"initial_state z must have shape \[2, 5\]"),
    ((np.zeros((2, 5, 5), np.float32), np.zeros((2, 5))), TypeError, "dtype"),
], ids=["not a pair", "S shape", "z shape", "S dtype"])
def test_bad_initial_state_is_named(state, error, message, rng):
    q = rng.standard_normal((2, 7, 5))
    with pytest.raises(error, match=message):
        la.linear_attention(q, q, q, causal=True, initial_state=state)
