"""TTT-Linear and Titans with a linear memory (chapter 14): the primal and dual forms against each
other, the backends, autograd, their special cases, flash-linear-attention's naive references
(TTT: the same model; Titans: the same where both agree, and the differences named), bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import lattn_edu as la
from lattn_edu.test_time import inner_gradient

from conftest import assert_close, to_numpy
from fla_naive import load

torch = pytest.importorskip("torch")

FORMS = ("recurrent", "chunkwise")
B, H, D = 2, 3, 6


def make(rng, n, d=D, lead=(B, H), dtype=np.float64):
    """q, k, v, the layer norm [H, d] and a moderate starting (W, b), all float64 unless told."""
    q, k, v = rng.standard_normal((3,) + lead + (n, d))
    ln = rng.standard_normal((2, lead[-1], d)) if lead else rng.standard_normal((2, d))
    w0, b0 = 0.5 * rng.standard_normal(lead + (d, d)), 0.5 * rng.standard_normal(lead + (1, d))
    return tuple(x.astype(dtype) for x in (q, k, v, ln[0], ln[1], w0, b0))


def rates(rng, n, lead=(B, H)):
    """θ in [0, 0.3], α in [0, 0.5] with one α = 1, η in [0, 1] with one η = 0: Titans' gates."""
    theta, alpha, eta = rng.uniform(0, 0.3, lead + (n,)), rng.uniform(0, 0.5, lead + (n,)), rng.uniform(0, 1, lead + (n,))
    alpha[..., n // 3], eta[..., n // 2] = 1.0, 0.0
    return theta, alpha, eta


def ttt(rng, n, **options):
    q, k, v, lw, lb, w0, b0 = make(rng, n)
    return la.ttt_linear(q, k, v, rng.uniform(0, 0.5, (B, H, n)), lw, lb, initial_state=(w0, b0), **options)


# ---- the primal and the dual form agree (float64) ------------------------------------------

@pytest.mark.parametrize("n, mini_batch_size", [(45, 16), (63, 16), (100, 16), (48, 16), (20, 1), (20, 64)])
def test_ttt_forms_agree(rng, n, mini_batch_size):
    q, k, v, lw, lb, w0, b0 = make(rng, n)
    eta = rng.uniform(0, 0.5, (B, H, n))
    runs = [la.ttt_linear(q, k, v, eta, lw, lb, mini_batch_size=mini_batch_size, initial_state=(w0, b0),
                          return_state=True, form=form) for form in FORMS]
    assert_close(runs[1][0], runs[0][0], what="o")
    for part, (theirs, ours) in zip("Wb", zip(runs[0][1], runs[1][1])):
        assert_close(ours, theirs, what=part)


@pytest.mark.parametrize("n, mini_batch_size", [(45, 16), (63, 16), (100, 16), (20, 1), (20, 64)])
def test_titans_forms_agree(rng, n, mini_batch_size):
    q, k, v, lw, lb, w0, b0 = make(rng, n)
    gates, momentum = rates(rng, n), tuple(0.3 * rng.standard_normal(x.shape) for x in (w0, b0))
    runs = [la.titans_linear(q, k, v, *gates, lw, lb, mini_batch_size=mini_batch_size,
                             initial_state=(w0, b0) + momentum, return_state=True, form=form) for form in FORMS]
    assert_close(runs[1][0], runs[0][0], what="o")
    for part, (theirs, ours) in zip(("W", "b", "S_W", "S_b"), zip(runs[0][1], runs[1][1])):
        assert_close(ours, theirs, what=part)


def test_zero_start_and_shared_layer_norm(rng):
    """No initial state (zeros: the first gradient divides by sqrt(eps)) and ln [d] for every head."""
    q, k, v, lw, lb, _, _ = make(rng, 37)
    eta = rng.uniform(0, 0.5, (B, H, 37))
    outs = [la.ttt_linear(q, k, v, eta, lw[0], lb[0], form=form) for form in FORMS]
    assert_close(outs[1], outs[0])
    outs = [la.titans_linear(q, k, v, *rates(np.random.default_rng(3), 37), lw[0], lb[0], form=form) for form in FORMS]
    assert_close(outs[1], outs[0])
    # no leading axes: q [N, d], one layer norm [d]
    outs = [la.ttt_linear(q[0, 0], k[0, 0], v[0, 0], eta[0, 0], lw[0], lb[0], form=form) for form in FORMS]
    assert outs[0].shape == (37, D)
    assert_close(outs[1], outs[0])
    assert_close(outs[0], la.ttt_linear(q, k, v, eta, lw[0], lb[0], form="recurrent")[0, 0])


@pytest.mark.parametrize("form", FORMS)
def test_ttt_split_at_a_mini_batch_boundary(rng, form):
    q, k, v, lw, lb, w0, b0 = make(rng, 45)
    eta = rng.uniform(0, 0.5, (B, H, 45))
    whole, state = la.ttt_linear(q, k, v, eta, lw, lb, mini_batch_size=8, initial_state=(w0, b0), return_state=True,
                                 form=form)
    first, middle = la.ttt_linear(q[..., :16, :], k[..., :16, :], v[..., :16, :], eta[..., :16], lw, lb, mini_batch_size=8,
                                  initial_state=(w0, b0), return_state=True, form=form)
    rest, end = la.ttt_linear(q[..., 16:, :], k[..., 16:, :], v[..., 16:, :], eta[..., 16:], lw, lb, mini_batch_size=8,
                              initial_state=middle, return_state=True, form=form)
    assert_close(np.concatenate([first, rest], axis=-2), whole)
    assert_close(end[0], state[0])
    assert_close(end[1], state[1])
    # a split inside a mini-batch ends it early: the tokens before the split are read alike, the rest differs
    early, middle = la.ttt_linear(q[..., :12, :], k[..., :12, :], v[..., :12, :], eta[..., :12], lw, lb,
                                  mini_batch_size=8, initial_state=(w0, b0), return_state=True, form=form)
    later = la.ttt_linear(q[..., 12:, :], k[..., 12:, :], v[..., 12:, :], eta[..., 12:], lw, lb, mini_batch_size=8,
                          initial_state=middle, form=form)
    assert_close(early, whole[..., :12, :])
    assert not np.allclose(later, whole[..., 12:, :])


@pytest.mark.parametrize("form", FORMS)
def test_titans_split_at_a_mini_batch_boundary(rng, form):
    q, k, v, lw, lb, w0, b0 = make(rng, 45)
    theta, alpha, eta = rates(rng, 45)
    whole, state = la.titans_linear(q, k, v, theta, alpha, eta, lw, lb, mini_batch_size=8, return_state=True, form=form)
    cut = slice(None, 24), slice(24, None)
    first, middle = la.titans_linear(*(x[..., cut[0], :] for x in (q, k, v)), *(x[..., cut[0]] for x in (theta, alpha, eta)),
                                     lw, lb, mini_batch_size=8, return_state=True, form=form)
    rest, end = la.titans_linear(*(x[..., cut[1], :] for x in (q, k, v)), *(x[..., cut[1]] for x in (theta, alpha, eta)),
                                 lw, lb, mini_batch_size=8, initial_state=middle, return_state=True, form=form)
    assert_close(np.concatenate([first, rest], axis=-2), whole)
    for ours, theirs in zip(end, state):
        assert_close(ours, theirs)


# ---- backends, dtypes, autograd ------------------------------------------------------------

def run_both(arrays, form, **options):
    """ttt_linear and titans_linear on (q, k, v, ln_weight, ln_bias, W_0, b_0, η, θ, α, η_momentum)."""
    q, k, v, lw, lb, w0, b0, eta, theta, alpha, momentum = arrays
    return (la.ttt_linear(q, k, v, eta, lw, lb, initial_state=(w0, b0), mini_batch_size=4, form=form, **options),
            la.titans_linear(q, k, v, theta, alpha, momentum, lw, lb, initial_state=(w0, b0, w0, b0),
                             mini_batch_size=4, form=form, **options))


@pytest.mark.parametrize("form", FORMS)
def test_backends_and_dtypes(rng, form):
    """numpy in, numpy out and tensors in, tensors out (same dtype); float32 within its tolerance."""
    arrays = make(rng, 21) + (rng.uniform(0, 0.5, (B, H, 21)),) + rates(rng, 21)
    references = run_both(arrays, form)
    for ours, reference in zip(run_both(arrays, form, backend="torch"), references):
        assert isinstance(ours, np.ndarray)
        assert_close(ours, reference)
    for ours, reference in zip(run_both(tuple(map(torch.from_numpy, arrays)), form, backend="torch"), references):
        assert isinstance(ours, torch.Tensor) and ours.dtype == torch.float64
        assert_close(ours, reference)
    for ours, reference in zip(run_both(tuple(x.astype(np.float32) for x in arrays), form), references):
        assert ours.dtype == np.float32
        assert_close(ours, reference, rtol=1e-4)


@pytest.mark.parametrize("form", FORMS)
def test_gradcheck(rng, form):
    """Autograd through the public function, into every input, the layer norm and the start state."""
    q, k, v, lw, lb, w0, b0 = (torch.from_numpy(x).requires_grad_() for x in make(rng, 5, d=3, lead=(1, 2)))
    eta = torch.from_numpy(rng.uniform(0.1, 0.4, (1, 2, 5))).requires_grad_()
    theta, alpha, momentum = (torch.from_numpy(rng.uniform(0.1, 0.4, (1, 2, 5))).requires_grad_() for _ in range(3))
    ttt_run = lambda *x: la.ttt_linear(*x[:3], x[7], *x[3:5], initial_state=(x[5], x[6]), mini_batch_size=2,  # noqa: E731
                                       form=form, backend="torch")
    assert torch.autograd.gradcheck(ttt_run, (q, k, v, lw, lb, w0, b0, eta))
    titans_run = lambda *x: la.titans_linear(*x[:3], *x[7:], *x[3:5], initial_state=(x[5], x[6], x[5], x[6]),  # noqa: E731
                                             mini_batch_size=2, form=form, backend="torch")
    assert torch.autograd.gradcheck(titans_run, (q, k, v, lw, lb, w0, b0, theta, alpha, momentum))


def test_numba_has_no_kernel(rng):
    q, k, v, lw, lb, _, _ = make(rng, 8)
    with pytest.raises(ValueError, match="backend='numba' has no kernels for this model"):
        la.ttt_linear(q, k, v, np.full((B, H, 8), 0.1), lw, lb, backend="numba")
    with pytest.raises(ValueError, match="backend='numba' has no kernels for this model"):
        la.titans_linear(q, k, v, *rates(rng, 8), lw, lb, backend="numba")


# ---- special cases ---------------------------------------------------------------------------

@pytest.mark.parametrize("form", FORMS)
def test_titans_without_momentum_or_forgetting_is_ttt(rng, form):
    """η = α = 0: M_t = M_{t'} − Σ θ_s ∇ℓ_s, TTT's step with η_TTT = 2θ (Titans' loss has no ½):
    per token at mini_batch_size 1, and per mini-batch when θ is constant in each."""
    q, k, v, lw, lb, w0, b0 = make(rng, 30)
    zeros, theta = np.zeros((B, H, 30)), rng.uniform(0, 0.3, (B, H, 30))
    for size, rate in ((1, theta), (5, np.repeat(theta[..., ::5], 5, axis=-1))):
        titans, (w, b, _, _) = la.titans_linear(q, k, v, rate, zeros, zeros, lw, lb, mini_batch_size=size,
                                                initial_state=(w0, b0, 0 * w0, 0 * b0), return_state=True, form=form)
        ttt_o, ttt_state = la.ttt_linear(q, k, v, 2 * rate, lw, lb, mini_batch_size=size, initial_state=(w0, b0),
                                         return_state=True, form=form)
        assert_close(titans, ttt_o)
        assert_close(w, ttt_state[0])
        assert_close(b, ttt_state[1])


@pytest.mark.parametrize("form", FORMS)
def test_titans_forgetting_and_fixed_memory(rng, form):
    q, k, v, lw, lb, w0, b0 = make(rng, 24)
    theta, alpha, eta = rates(rng, 24)
    start = (w0, b0, 0.3 * w0, 0.3 * b0)
    # α = 1 and η = 0 at the end of a mini-batch: M = S = 0 after it, as if the call began there
    alpha[..., 7], eta[..., 7], theta[..., 7] = 1.0, 0.0, 0.0
    whole = la.titans_linear(q, k, v, theta, alpha, eta, lw, lb, mini_batch_size=8, initial_state=start, form=form)
    fresh = la.titans_linear(q[..., 8:, :], k[..., 8:, :], v[..., 8:, :], theta[..., 8:], alpha[..., 8:], eta[..., 8:],
                             lw, lb, mini_batch_size=8, form=form)
    assert_close(whole[..., 8:, :], fresh)
    # α = 1 at the last token: the memory is its momentum alone
    alpha[..., -1] = 1.0
    _, (w, b, s_w, s_b) = la.titans_linear(q, k, v, theta, alpha, eta, lw, lb, mini_batch_size=8, initial_state=start,
                                           return_state=True, form=form)
    assert_close(w, s_w)
    assert_close(b, s_b)
    # θ = 0, α = 0 and no momentum: M stays M_0, so every token reads z = scale · q W_0 + b_0
    zeros = np.zeros((B, H, 24))
    out, state = la.titans_linear(q, k, v, zeros, zeros, eta, lw, lb, initial_state=(w0, b0, 0 * w0, 0 * b0),
                                  return_state=True, form=form)
    z = q / np.sqrt(D) @ w0 + b0
    centred = z - z.mean(-1, keepdims=True)
    expected = z + lw[:, None] * centred / np.sqrt((centred ** 2).mean(-1, keepdims=True) + 1e-6) + lb[:, None]
    assert_close(out, expected)
    assert_close(state[0], w0)
    assert_close(state[1], b0)


def test_inner_gradient_is_the_loss_gradient(rng):
    """∇_z ½‖LN(z) − target‖², written out, against torch autograd."""
    z, target = (torch.from_numpy(x) for x in rng.standard_normal((2, 4, 7)))
    weight, bias = (torch.from_numpy(x) for x in rng.standard_normal((2, 7)))
    z.requires_grad_()
    loss = 0.5 * ((torch.nn.functional.layer_norm(z, (7,), weight, bias, eps=1e-6) - target) ** 2).sum()
    (expected,) = torch.autograd.grad(loss, z)
    assert_close(inner_gradient(z.detach(), target, weight, bias, 1e-6), expected)


def test_extreme_rates_stay_finite(rng):
    """N = 4,096 in float32 from zeros at the steepest rates. TTT with η = 10 (η has no upper bound):
    from W = 0 the first gradient divides by sqrt(eps), and after that the weights barely move, since
    the layer norm is scale-invariant (a step turns (W, b) and lengthens it, the gradient shrinks as
    1/‖W‖). Titans with θ = 10 and a momentum that never fades (η = 1, α = 0): the memory moves
    at the momentum's velocity, so it grows at most linearly in N."""
    q, k, v, lw, lb, _, _ = make(rng, 4096, d=8, lead=(1, 2), dtype=np.float32)
    high, zeros = np.full((1, 2, 4096), 10.0, np.float32), np.zeros((1, 2, 4096), np.float32)
    first = la.ttt_linear(q[..., :16, :], k[..., :16, :], v[..., :16, :], high[..., :16], lw, lb, return_state=True)[1]
    out, state = la.ttt_linear(q, k, v, high, lw, lb, return_state=True)
    assert out.dtype == np.float32 and np.isfinite(out).all() and np.isfinite(state[0]).all()
    assert np.linalg.norm(state[0]) <= 1.1 * np.linalg.norm(first[0])
    out, (w, b, s_w, s_b) = la.titans_linear(q, k, v, high, zeros, np.ones_like(zeros), lw, lb, return_state=True)
    assert out.dtype == np.float32 and all(np.isfinite(x).all() for x in (out, w, b, s_w, s_b))
    assert np.linalg.norm(w) <= 1.1 * 4096 * np.linalg.norm(s_w)


# ---- flash-linear-attention's naive references ----------------------------------------------

def bthd(x: np.ndarray):
    """[B, H, T, ...] -> fla's [B, T, H, ...] float32 tensor (a fresh one: fla scales q in place)."""
    return torch.from_numpy(np.ascontiguousarray(np.swapaxes(x, 1, 2))).float()


def bhtd(x) -> np.ndarray:
    return np.swapaxes(x.double().numpy(), 1, 2)


@pytest.mark.parametrize("n", [48, 45])
def test_ttt_against_fla(rng, n):
    """The same model as fla's ttt_linear (chunk_ttt_linear_ref pads a ragged end with zeros): o and W
    agree; with N not a multiple of the mini-batch, fla's final bias also takes the padding's
    gradients, which are exactly η_last · pad · ∇_z ℓ(z = b_{t'}, target 0)."""
    module = load("ttt/naive.py")
    q, k, v, lw, lb, w0, b0 = make(rng, n)
    eta = rng.uniform(0, 0.5, (B, H, n))
    o, w, b = module.chunk_ttt_linear_ref(bthd(q), bthd(k), bthd(v), torch.tensor(lw).float(), torch.tensor(lb).float(),
                                          bthd(eta[..., None]), initial_state=torch.tensor(w0).float(),
                                          initial_state_bias=torch.tensor(b0).float(), output_final_state=True,
                                          mini_batch_size=16)
    pad = -n % 16
    if not pad:  # the function it wraps, on [B, H, T, D] (it scales q in place: a fresh tensor)
        direct = module.ttt_linear(*(torch.tensor(x).float() for x in (q, k, v, lw, lb, eta[..., None])), D ** -0.5,
                                   1e-6, 16, torch.tensor(w0).float(), torch.tensor(b0).float(), True)
        for theirs, wrapped in zip(direct, (bhtd(o), w, b)):
            assert_close(theirs, wrapped, rtol=1e-6)
    for dtype, form, backend in itertools.product((np.float64, np.float32), FORMS, ("numpy", "torch")):
        args = [x.astype(dtype) for x in (q, k, v, eta, lw, lb, w0, b0)]
        ours = [torch.from_numpy(x) for x in args] if backend == "torch" else args
        out, (w_ours, b_ours) = la.ttt_linear(*ours[:6], initial_state=tuple(ours[6:]), return_state=True, form=form,
                                              backend=backend)
        what = f"ttt_linear {backend} {form} {np.dtype(dtype).name}"
        assert_close(out, bhtd(o), rtol=1e-4, what=what)
        assert_close(w_ours, w, rtol=1e-4, what=what + " W")
        b_ours = to_numpy(b_ours)
        if pad:
            _, (_, b_start) = la.ttt_linear(*(x[..., :n - n % 16, :] for x in args[:3]), args[3][..., :n - n % 16],
                                            *args[4:6], initial_state=tuple(args[6:]), return_state=True)
            padding = pad * inner_gradient(b_start, 0 * b_start, args[4][:, None], args[5][:, None], 1e-6)
            b_ours = b_ours - args[3][..., -1:, None] * padding
        assert_close(b_ours, b, rtol=1e-4, what=what + " b")


def fla_titans(module, q, k, v, ln, gates, m0, use_chunk):
    o, m = module.chunk_titans_linear_ref(bthd(q), bthd(k), bthd(v), *(torch.tensor(x).float() for x in ln),
                                          *(bthd(g[..., None]) for g in gates), chunk_size=16,
                                          initial_state=torch.tensor(m0).float(), output_final_state=True,
                                          use_chunk=use_chunk)
    return bhtd(o), m.double().numpy()


@pytest.mark.parametrize("n", [32, 45])
def test_titans_against_fla_where_they_agree(rng, n):
    """θ = 0 (no gradient: M_t = Π(1 − α) M_0) with scale = 1 (fla does not scale q) and no bias in the
    memory: fla's recurrent and chunk forms agree with ours, except that fla's chunk form, in log
    space, turns α = 1 into NaN, and with a ragged end fla's final M takes one more factor
    (1 − α_last) from the padding (which copies the last token's gates)."""
    module = load("titans/naive.py")
    q, k, v, lw, lb, w0, _ = make(rng, n)
    _, alpha, eta = rates(rng, n)
    theta, zero_bias = np.zeros((B, H, n)), np.zeros((B, H, 1, D))
    start = (w0, zero_bias, 0 * w0, zero_bias)
    alpha_below_one = np.minimum(alpha, 0.9)
    for form, backend in itertools.product(FORMS, ("numpy", "torch")):
        def ours(gates):  # titans_linear on this backend: (o, W) as numpy
            arrays = (q, k, v, *gates, lw, lb)
            state = start
            if backend == "torch":
                arrays, state = [torch.from_numpy(x) for x in arrays], tuple(torch.from_numpy(x) for x in start)
            out, (w, b, _, _) = la.titans_linear(*arrays, scale=1.0, initial_state=state, return_state=True,
                                                 form=form, backend=backend)
            assert not to_numpy(b).any()
            return to_numpy(out), to_numpy(w)
        for gates, use_chunk in (((theta, alpha, eta), False), ((theta, alpha_below_one, eta), True)):
            out, w = ours(gates)
            expected_m = w * (1 - gates[1][..., -1:, None]) if n % 16 else w
            o, m = fla_titans(module, q, k, v, (lw, lb), gates, w0, use_chunk=use_chunk)
            what = f"titans_linear {backend} {form} vs fla's {'chunk' if use_chunk else 'recurrent'} form"
            assert_close(out, o, rtol=1e-4, what=what)
            assert_close(expected_m, m, rtol=1e-4, what=what + " M")
    o, _ = fla_titans(module, q, k, v, (lw, lb), (theta, alpha, eta), w0, use_chunk=True)
    assert np.isnan(o).any()


def test_titans_fla_gradient_differs_by_one_parenthesis(rng):
    """fla's Titans computes the layer norm's backward as D·g − Σg/(σD) − ẑ Σ(g ẑ)/(σD) where TTT's
    (and the chain rule) has (D·g − Σg − ẑ Σ(g ẑ))/(σD). In one mini-batch every gradient is taken
    at M_0, so our final W (b_0 = 0: the bias, which fla's memory lacks, does not reach W there)
    equals fla's final M once that parenthesis is put back, and differs from fla as shipped."""
    shipped = "v_new = D * grad - grad.sum(-1, keepdim=True) / (rstd * D)"
    fixed = load("titans/naive.py", (shipped, "v_new = (D * grad - grad.sum(-1, keepdim=True)) / (rstd * D)"))
    module = load("titans/naive.py")
    q, k, v, lw, lb, w0, _ = make(rng, 16)
    theta, alpha, eta = rng.uniform(0, 0.1, (3, B, H, 16))
    zero_bias = np.zeros((B, H, 1, D))
    for form in FORMS:
        _, (w, _, _, _) = la.titans_linear(q, k, v, theta, alpha, eta, lw, lb, scale=1.0,
                                           initial_state=(w0, zero_bias, 0 * w0, zero_bias), return_state=True, form=form)
        for use_chunk in (False, True):
            _, m = fla_titans(fixed, q, k, v, (lw, lb), (theta, alpha, eta), w0, use_chunk)
            assert_close(w, m, rtol=1e-4)
            _, m = fla_titans(module, q, k, v, (lw, lb), (theta, alpha, eta), w0, use_chunk)
            assert np.linalg.norm(w - m) > 0.1 * np.linalg.norm(w - w0)


# ---- bad input -------------------------------------------------------------------------------

def test_bad_input_is_named(rng):
    q, k, v, lw, lb, w0, b0 = make(rng, 10)
    eta = np.full((B, H, 10), 0.1)
    theta, alpha, momentum = np.full((3, B, H, 10), 0.1)
    cases = [
        ({"v": v[..., :4]}, "v must have d_v equal to d_k"),
        ({"q": q[0, 0, 0]}, "q must have shape"),
        ({"k": np.where(np.arange(D) == 2, np.nan, k)}, "k must be finite"),
        ({"eta": -eta}, "eta must be >= 0"),
        ({"eta": eta[..., :9]}, "eta of shape"),
        ({"eta": np.where(np.arange(10) == 3, np.inf, eta)}, "eta must be finite"),
        ({"ln_weight": lw[:2]}, r"ln_weight must have shape \[3, 6\]"),
        ({"ln_bias": lb[0, :5]}, r"ln_bias must have shape \[6\]"),
        ({"ln_bias": np.where(np.arange(D) == 1, np.nan, lb)}, "ln_bias must be finite"),
        ({"mini_batch_size": 0}, "mini_batch_size must be a positive int"),
        ({"eps": 0.0}, "eps must be finite and > 0"),
        ({"form": "parallel"}, "form must be one of"),
        ({"initial_state": w0}, "initial_state must be a tuple"),
        ({"initial_state": (w0, b0[..., 0, :])}, r"initial_state b must have shape \[2, 3, 1, 6\]"),
        ({"scale": -1.0}, "scale must be finite and > 0"),
    ]
    base = {"q": q, "k": k, "v": v, "eta": eta, "ln_weight": lw, "ln_bias": lb}
    for change, message in cases:
        args = {**base, **change}
        with pytest.raises((ValueError, TypeError), match=message):
            la.ttt_linear(args.pop("q"), args.pop("k"), args.pop("v"), args.pop("eta"), args.pop("ln_weight"),
                          args.pop("ln_bias"), **args)
    gates = {"theta": theta, "alpha": alpha, "eta": momentum}
    titans_cases = [
        ({"theta": -theta}, "theta must be >= 0"),
        ({"alpha": alpha + 1}, r"alpha must lie in \[0.0, 1.0\]"),
        ({"alpha": np.where(np.arange(10) == 0, np.nan, alpha)}, "alpha must be finite"),
        ({"eta": momentum * 11}, r"eta must lie in \[0.0, 1.0\]"),
        ({"initial_state": (w0, b0)}, r"initial_state must be a tuple \(W, b, S_W, S_b\)"),
        ({"initial_state": (w0, b0, w0[..., :5], b0)}, r"initial_state S_W must have shape"),
    ]
    for change, message in titans_cases:
        args = {**gates, **change}
        with pytest.raises((ValueError, TypeError), match=message):
            la.titans_linear(q, k, v, args.pop("theta"), args.pop("alpha"), args.pop("eta"), lw, lb, **args)
