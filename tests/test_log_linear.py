"""log_linear_attention: every form against a naive loop written here and against fla's naive
reference, the state carried across a split, Mamba-2 as the case of equal level weights,
autograd, a long strongly decaying sequence, and bad input (lattn_edu.log_linear)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import lattn_edu as la
from conftest import assert_close
from fla_naive import load

torch = pytest.importorskip("torch")

FORMS = ("recurrent", "parallel", "chunkwise")
BACKENDS = ("numpy", "torch")


def inputs(rng, lead=(2, 3), n=45, d_k=6, d_v=5, n_levels=None, dtype=np.float64):
    """q, k, v, log decays in [log 0.5, 0] and level weights in [0, 2] (L = ceil(log2 n) + 1)."""
    n_levels = n_levels or math.ceil(math.log2(n)) + 1
    q, k = rng.standard_normal((2, *lead, n, d_k))
    v = rng.standard_normal((*lead, n, d_v))
    g = np.log(rng.uniform(0.5, 1.0, (*lead, n)))
    lam = rng.uniform(0.0, 2.0, (*lead, n, n_levels))
    return tuple(x.astype(dtype) for x in (q, k, v, g, lam))


def naive_log_linear(q, k, v, g, lam, scale, position=0):
    """o_t = scale Σ_{s<=t} λ_t^(ℓ(t,s)) exp(Σ_{s<l<=t} g_l) (q_t·k_s) v_s with ℓ(t, s) the bit
    length of t xor s (absolute positions): Python loops, no code shared with the package."""
    lead, n = q.shape[:-2], q.shape[-2]
    out = np.zeros(lead + (n, v.shape[-1]))
    for idx in np.ndindex(*lead):
        for t in range(n):
            for s in range(t + 1):
                level = ((position + t) ^ (position + s)).bit_length()
                weight = lam[idx + (t, level)] * np.exp(g[idx][s + 1:t + 1].sum())
                out[idx + (t,)] += scale * weight * (q[idx + (t,)] @ k[idx + (s,)]) * v[idx + (s,)]
    return out


def as_backend(arrays, backend):
    return tuple(torch.from_numpy(x) if backend == "torch" else x for x in arrays)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("form", FORMS)
def test_every_form_matches_the_naive_loop(form, backend, rng):
    arrays = inputs(rng, n=45)
    out = la.log_linear_attention(*as_backend(arrays, backend), form=form, backend=backend, chunk_size=8)
    assert_close(out, naive_log_linear(*arrays, 6 ** -0.5), what=f"{form} on {backend}")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n, chunk", [(45, 16), (63, 16), (100, 12), (100, 64), (1, 4), (2, 1)])
def test_forms_agree_with_the_recurrent_form(n, chunk, backend, rng):
    arrays = as_backend(inputs(rng, n=n, d_k=4, d_v=3), backend)
    ref, (ref_bank, ref_position) = la.log_linear_attention(*arrays, form="recurrent", backend=backend,
                                                             return_state=True)
    for form in ("parallel", "chunkwise"):
        out, (bank, position) = la.log_linear_attention(*arrays, form=form, backend=backend, chunk_size=chunk,
                                                        return_state=True)
        assert type(out) is type(arrays[0]) and out.dtype == arrays[0].dtype
        assert bank.shape == arrays[0].shape[:-2] + (arrays[4].shape[-1], 4, 3)
        assert position == ref_position == n
        assert_close(out, ref, what=form)
        assert_close(bank, ref_bank, what=f"{form} bank")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("form", FORMS)
def test_the_state_continues_a_split_sequence_exactly(form, backend, rng):
    q, k, v, g, lam = as_backend(inputs(rng, n=63, d_k=4, d_v=3), backend)
    whole, (bank, _) = la.log_linear_attention(q, k, v, g, lam, form="recurrent", backend=backend,
                                               return_state=True)
    for split in (1, 16, 37, 62):
        first, state = la.log_linear_attention(q[..., :split, :], k[..., :split, :], v[..., :split, :],
                                               g[..., :split], lam[..., :split, :], form=form, backend=backend,
                                               chunk_size=8, return_state=True)
        assert state[1] == split
        rest, (end_bank, end) = la.log_linear_attention(q[..., split:, :], k[..., split:, :], v[..., split:, :],
                                                        g[..., split:], lam[..., split:, :], form=form,
                                                        backend=backend, chunk_size=8, initial_state=state,
                                                        return_state=True)
        joined = np.concatenate([np.asarray(first), np.asarray(rest)], axis=-2)
        assert end == 63
        assert_close(joined, whole, what=f"{form} split at {split}")
        assert_close(end_bank, bank, what=f"{form} bank split at {split}")


def test_a_continuation_uses_the_absolute_positions(rng):
    """Started at position p, the levels are those of tokens p, p + 1, ...: the naive loop agrees."""
    q, k, v, g, lam = inputs(rng, lead=(2,), n=20, n_levels=6)
    bank = np.zeros((2, 6, 6, 5))
    for form in FORMS:
        out = la.log_linear_attention(q, k, v, g, lam, form=form, chunk_size=8, initial_state=(bank, 11))
        assert_close(out, naive_log_linear(q, k, v, g, lam, 6 ** -0.5, position=11), what=form)


def test_equal_level_weights_give_mamba2(rng):
    q, k, v, g, lam = inputs(rng, n=100)
    for form in FORMS:
        out = la.log_linear_attention(q, k, v, g, np.ones_like(lam), form=form, chunk_size=16)
        assert_close(out, la.gated_linear_attention(q, k, v, g, form="recurrent"), what=form)


def test_extra_levels_are_unused(rng):
    q, k, v, g, lam = inputs(rng, n=45)
    wider = np.concatenate([lam, rng.uniform(0, 2, lam.shape[:-1] + (3,))], axis=-1)
    for form in FORMS:
        assert_close(la.log_linear_attention(q, k, v, g, wider, form=form, chunk_size=16),
                     la.log_linear_attention(q, k, v, g, lam, form=form, chunk_size=16), what=form)


def test_fenwick_levels_partition_the_prefix_into_buckets():
    levels = la.fenwick_levels(64)
    for t in range(64):
        row = levels[t, :t + 1]
        assert row[t] == 0 and np.all(levels[t, t + 1:] == -1)
        for level in range(1, 7):
            size = int(np.sum(row == level))
            assert size == (2 ** (level - 1) if t >> (level - 1) & 1 else 0)  # bit ℓ−1 of t set
            assert np.all(np.diff(row) <= 0)  # older tokens lie in coarser buckets


@pytest.mark.parametrize("form", FORMS)
def test_gradients_match_finite_differences(form, rng):
    q, k, v, g, lam = (torch.from_numpy(x).requires_grad_() for x in inputs(rng, lead=(1,), n=5, d_k=2, d_v=2))
    bank = torch.from_numpy(rng.standard_normal((1, 4, 2, 2))).requires_grad_()

    def call(q, k, v, g, lam, bank):
        out, (end, _) = la.log_linear_attention(q, k, v, g, lam, form=form, backend="torch", chunk_size=2,
                                                initial_state=(bank, 3), return_state=True)
        return out, end
    assert torch.autograd.gradcheck(call, (q, k, v, g, lam, bank))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("form", FORMS)
def test_against_fla_naive_reference(form, backend, rng):
    """fla's layout is [B, T, H, ·] and level_scales [B, T, H, L]; its scale defaults to 1.0 (ours
    to d_k^-1/2), so it is passed explicitly. Negative level weights, as fla's own tests use."""
    module = load("log_linear_attn/naive.py")
    q, k, v, g, _ = inputs(rng, n=45)
    lam = rng.standard_normal((2, 3, 45, 7))

    def theirs(dtype):
        bthd = [torch.from_numpy(np.ascontiguousarray(np.swapaxes(x, 1, 2))).to(dtype)
                for x in (q, k, v, g, lam)]
        return np.swapaxes(module.naive_log_linear_attn(*bthd, scale=0.7).double().numpy(), 1, 2)
    for dtype, torch_dtype in ((np.float64, torch.float64), (np.float32, torch.float32)):
        ours = la.log_linear_attention(*as_backend([x.astype(dtype) for x in (q, k, v, g, lam)], backend),
                                       scale=0.7, form=form, backend=backend, chunk_size=16)
        assert_close(ours, theirs(torch_dtype), what=f"{form} on {backend}, {dtype.__name__}")


def test_a_long_strongly_decaying_sequence_stays_finite_and_local(rng):
    """N = 65,536 float32 with α = e^-30: finite, and the last chunk depends on itself alone."""
    n, d = 65_536, 8
    q, k, v = rng.standard_normal((3, 1, n, d)).astype(np.float32)
    g = np.full((1, n), -30.0, np.float32)
    lam = rng.uniform(0, 1, (1, n, 17)).astype(np.float32)
    out = la.log_linear_attention(q, k, v, g, lam)
    assert np.isfinite(out).all()
    tail = slice(n - 64, n)
    alone = la.log_linear_attention(q[:, tail], k[:, tail], v[:, tail], g[:, tail], lam[:, tail],
                                    initial_state=(np.zeros((1, 17, d, d), np.float32), n - 64))
    assert_close(out[:, tail], alone)


def bad_call(rng, **changes):
    args = dict(zip(("q", "k", "v", "log_decay", "level_weights"), inputs(rng, lead=(2,), n=9, n_levels=5)))
    args.update(changes)
    return lambda: la.log_linear_attention(**args)


@pytest.mark.parametrize("change, error, match", [
    (lambda a: {"level_weights": a[4][..., :4]}, ValueError, "level_weights must have L >= 5"),
    (lambda a: {"level_weights": a[4][..., :8, :]}, ValueError, "level_weights must have shape"),
    (lambda a: {"level_weights": np.where(a[4] > 1, np.nan, a[4])}, ValueError, "level_weights must be finite"),
    (lambda a: {"level_weights": a[4].astype(np.float32)}, TypeError, "level_weights must have q's dtype"),
    (lambda a: {"log_decay": np.abs(a[3])}, ValueError, "log_decay must be <= 0"),
    (lambda a: {"log_decay": np.full_like(a[3], np.nan)}, ValueError, "log_decay must be finite"),
    (lambda a: {"log_decay": None}, TypeError, "log_decay must be an array"),
    (lambda a: {"log_decay": a[4]}, ValueError, "log_decay must have shape"),
    (lambda a: {"initial_state": np.zeros((2, 5, 6, 5))}, TypeError, "initial_state must be the pair"),
    (lambda a: {"initial_state": (np.zeros((2, 5, 6, 5)), 0)}, ValueError, "position must be an int >= 1"),
    (lambda a: {"initial_state": (np.zeros((2, 5, 6, 5)), True)}, ValueError, "position must be an int >= 1"),
    (lambda a: {"initial_state": (np.zeros((2, 4, 6, 5)), 3)}, ValueError, "initial_state's bank must have"),
    (lambda a: {"initial_state": (np.zeros((2, 5, 6, 5)), 8)}, ValueError, r"L >= 6 .*positions 0\.\.16"),
    (lambda a: {"form": "scan"}, ValueError, "form must be one of"),
    (lambda a: {"chunk_size": 0}, ValueError, "chunk_size"),
])
def test_bad_input_is_refused_by_name(change, error, match):
    rng = np.random.default_rng(0)
    arrays = inputs(rng, lead=(2,), n=9, n_levels=5)
    with pytest.raises(error, match=match):
        bad_call(rng, **change(arrays))()


def test_a_position_needing_more_levels_is_refused(rng):
    """8 tokens from position 8 reach position 15 (L = 5 ok); from position 9 they reach 16 (L = 6)."""
    q, k, v, g, lam = inputs(rng, lead=(1,), n=8, n_levels=5)
    bank = np.zeros((1, 5, 6, 5))
    la.log_linear_attention(q, k, v, g, lam, initial_state=(bank, 8))
    with pytest.raises(ValueError, match="level_weights must have L >= 6"):
        la.log_linear_attention(q, k, v, g, lam, initial_state=(bank, 9))


def test_the_numba_backend_has_no_kernel(rng):
    pytest.importorskip("numba")
    with pytest.raises(ValueError, match="backend='numba' has no kernels for this model"):
        la.log_linear_attention(*inputs(rng, lead=(1,), n=4), backend="numba")
