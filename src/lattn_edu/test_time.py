"""Test-time training with a linear inner model: TTT-Linear and Titans (chapter 14).

The state is the weights of a small model, f(x) = LN(x W + b) (a layer norm with the layer's
``ln_weight`` and ``ln_bias`` over a linear map, W [d, d], b [1, d]), which each token trains
by gradient descent on ℓ_t = ½‖f(k_t) − (v_t − k_t)‖²: the inner model with its residual,
x + f(x), should map k_t to v_t. The output reads the trained weights at the scaled query,
z_t = (scale · q_t) W_t + b_t and o_t = z_t + LN(z_t), as flash-linear-attention's references
do (the TTT authors' code adds the query instead, q_t + LN(z_t): the inner model's residual).

Mini-batch gradient descent: the sequence is cut into mini-batches of b tokens from the start
of each call (the last one shorter when b does not divide N), and every gradient of a
mini-batch is taken at the weights it started from, W_{t'}, so the gradients of a mini-batch
need no sequential step and form matrix products (the dual form).

TTT-Linear (Sun et al. 2024, "Learning to (Learn at Test Time): RNNs with Expressive Hidden
States", arXiv 2407.04620), with flash-linear-attention's reading of its learning rate:

    W_t = W_{t'} − η_t Σ_{s=t'+1..t} k_sᵀ ∇_z ℓ_s(W_{t'}),   b_t likewise with ∇_z ℓ_s alone,

one learning rate η_t per token scaling the whole running sum of its mini-batch (the authors'
code has a matrix η[t, s] = lr(x_s)/(position of t in its mini-batch, from 1); the two agree
when lr is constant over a mini-batch, with η_t = lr/position). As the one recurrence
S_t = A_t S_{t−1} + B_t of chapter 8, with the state (W, b): A = I, and each mini-batch ends
with the write B = −η_last Σ_s [k_s; 1] ∇_z ℓ_sᵀ, which depends on the state at the
mini-batch's start through the layer norm (the model is not linear in its state).

Titans with a linear memory (Behrouz, Zhong and Mirrokni 2024, "Titans: Learning to Memorize
at Test Time", arXiv 2501.00663, section 3.1): the paper's loss ‖M(k_t) − v_t‖² (no ½) with
this module's inner model as the memory, M(k) = k + LN(k W + b), so ℓ_t = ‖f(k_t) − (v_t − k_t)‖²
(the paper's memory is a plain map with target v_t; the layer norm and its residual are TTT's
and flash-linear-attention's reading, which the API's ``ln_weight`` and ``ln_bias`` ask for),
and the paper's momentum S (the "surprise") and forgetting gate, for W and b alike:

    S_t = η_t S_{t−1} − θ_t ∇ℓ(M_{t'}; x_t),   M_t = (1 − α_t) M_{t−1} + S_t,

so the pair (M, S) is S_t = A_t S_{t−1} + B_t with A_t = [[(1 − α_t) I, η_t I], [0, η_t I]]
and B_t = −θ_t ∇ℓ_t in both rows. Within a mini-batch the two gated sums are products of
gates over segments (:func:`segment_products`), the decay masks of chapter 11 without logs,
so α_t = 1 (forget everything) and η_t = 0 stay exact.

Forms: 'recurrent' (the primal form: one weight update and one read per token) and
'chunkwise' (the dual form: one mini-batch at a time, masked matrix products). Their
arguments are checked arrays; each returns ``(o, final_state)``.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from array_api_compat import device

from ._checks import (array_namespace, check_bool, check_choice, check_per_step_range, check_positive_int,
                      check_qkv, check_scale, check_state_part)
from .recurrence import run_recurrence

TEST_TIME_FORMS = ("recurrent", "chunkwise")


def layer_norm(z: Any, weight: Any, bias: Any, eps: float) -> Any:
    """weight ⊙ (z − mean) / sqrt(var + eps) + bias over the last axis: [..., d] -> [..., d]."""
    xp = array_namespace(z)
    centred = z - xp.mean(z, axis=-1, keepdims=True)
    return weight * centred / xp.sqrt(xp.mean(centred * centred, axis=-1, keepdims=True) + eps) + bias


def inner_gradient(z: Any, target: Any, weight: Any, bias: Any, eps: float) -> Any:
    """∂/∂z of ½‖LN(z) − target‖², one row per token: z, target [..., C, d] -> [..., C, d].

    The gradient of the weights is then k_tᵀ times this row, and of the bias the row itself.
    """
    xp = array_namespace(z)
    centred = z - xp.mean(z, axis=-1, keepdims=True)
    rstd = 1 / xp.sqrt(xp.mean(centred * centred, axis=-1, keepdims=True) + eps)  # 1/σ  [..., C, 1]
    z_hat = centred * rstd
    g = (weight * z_hat + bias - target) * weight  # ∂ℓ/∂ẑ  [..., C, d]
    # back through ẑ = (z − μ)/σ: remove the mean and the part along ẑ, which the norm ignores
    return rstd * (g - xp.mean(g, axis=-1, keepdims=True) - z_hat * xp.mean(g * z_hat, axis=-1, keepdims=True))


def zero_weights(k: Any, count: int) -> tuple[Any, ...]:
    """``count`` pairs of zeros (W [..., d, d], b [..., 1, d]), flattened into one tuple."""
    xp, lead, d = array_namespace(k), tuple(k.shape[:-2]), k.shape[-1]
    pair = (xp.zeros(lead + (d, d), dtype=k.dtype, device=device(k)),
            xp.zeros(lead + (1, d), dtype=k.dtype, device=device(k)))
    return pair * count


def segment_products(a: Any) -> Any:
    """P[..., t, i] = Π_{l=i+1..t} a_l for i <= t, and 0 above the diagonal: [..., C] -> [..., C, C].

    A plain product over each segment (no logarithms), so a gate of exactly 0 is exact.
    """
    xp, c = array_namespace(a), a.shape[-1]
    index = xp.arange(c, device=device(a))
    inside = (index[None, :, None] < index) & (index <= index[:, None, None])  # [t, i, l]: i < l <= t
    factors = xp.where(inside, a[..., None, None, :], 1.0)  # [..., C, C, C]
    return xp.where(index <= index[:, None], xp.prod(factors, axis=-1), 0.0)  # an empty product above is 1


def recurrent_ttt_linear(q: Any, k: Any, v: Any, eta: Any, ln_weight: Any, ln_bias: Any, scale: float,
                         initial_state: Any = None, chunk_size: int = 16, eps: float = 1e-6) -> tuple[Any, Any]:
    """The primal form: per token, its gradient at the mini-batch's start weights, then its weights and read."""
    xp = array_namespace(q)
    w, b = zero_weights(k, 1) if initial_state is None else initial_state  # [..., d, d], [..., 1, d]
    outputs = []  # o_t  [..., 1, d] each
    for start in range(0, q.shape[-2], chunk_size):
        w_start, b_start = w, b  # W_{t'}: every gradient of this mini-batch is taken here
        sum_w, sum_b = xp.zeros_like(w), xp.zeros_like(b)  # Σ_s ∇ℓ_s(W_{t'}) so far
        for t in range(start, min(start + chunk_size, q.shape[-2])):
            k_t, v_t = k[..., t:t + 1, :], v[..., t:t + 1, :]  # [..., 1, d]
            grad = inner_gradient(k_t @ w_start + b_start, v_t - k_t, ln_weight, ln_bias, eps)  # ∇_z ℓ_t
            sum_w, sum_b = sum_w + xp.matrix_transpose(k_t) @ grad, sum_b + grad
            eta_t = eta[..., t:t + 1, None]  # [..., 1, 1]
            w, b = w_start - eta_t * sum_w, b_start - eta_t * sum_b  # W_t = W_{t'} − η_t Σ_s k_sᵀ∇_z ℓ_s
            z = (scale * q[..., t:t + 1, :]) @ w + b  # z_t = scale · q_t W_t + b_t
            outputs.append(z + layer_norm(z, ln_weight, ln_bias, eps))
    return xp.concat(outputs, axis=-2), (w, b)


def chunkwise_ttt_linear(q: Any, k: Any, v: Any, eta: Any, ln_weight: Any, ln_bias: Any, scale: float,
                         initial_state: Any = None, chunk_size: int = 16, eps: float = 1e-6) -> tuple[Any, Any]:
    """The dual form: a mini-batch's C gradients at once, its reads as one masked product.

    With G the rows ∇_z ℓ_s(W_{t'}) and Q scaled: Z = Q W + b − diag(η) (tril(Q Kᵀ + 1) G),
    W_after = W − η_last Kᵀ G and b_after = b − η_last Σ_s G_s.
    """
    xp = array_namespace(q)
    w, b = zero_weights(k, 1) if initial_state is None else initial_state  # [..., d, d], [..., 1, d]
    outputs = []  # one [..., C, d] per mini-batch
    for start in range(0, q.shape[-2], chunk_size):
        chunk = slice(start, start + chunk_size)
        q_c, k_c, v_c = scale * q[..., chunk, :], k[..., chunk, :], v[..., chunk, :]  # [..., C, d]
        eta_c = eta[..., chunk, None]  # [..., C, 1]
        grad = inner_gradient(k_c @ w + b, v_c - k_c, ln_weight, ln_bias, eps)  # ∇_z ℓ_s at W_{t'}  [..., C, d]
        index = xp.arange(q_c.shape[-2], device=device(q))
        # q_t·k_s + 1 for s <= t: what gradient row s adds to z_t through W and through b  [..., C, C]
        reach = xp.where(index <= index[:, None], q_c @ xp.matrix_transpose(k_c) + 1.0, 0.0)
        z = q_c @ w + b - eta_c * (reach @ grad)  # z_t = q_t W_t + b_t  [..., C, d]
        outputs.append(z + layer_norm(z, ln_weight, ln_bias, eps))
        eta_last = eta_c[..., -1:, :]  # the mini-batch's last token sets the weights it hands on  [..., 1, 1]
        w = w - eta_last * (xp.matrix_transpose(k_c) @ grad)
        b = b - eta_last * xp.sum(grad, axis=-2, keepdims=True)
    return xp.concat(outputs, axis=-2), (w, b)


def recurrent_titans_linear(q: Any, k: Any, v: Any, theta: Any, alpha: Any, eta: Any, ln_weight: Any, ln_bias: Any,
                            scale: float, initial_state: Any = None, chunk_size: int = 16,
                            eps: float = 1e-6) -> tuple[Any, Any]:
    """The primal form: per token, its gradient at the mini-batch's start memory, then S_t, M_t and the read."""
    xp = array_namespace(q)
    w, b, s_w, s_b = zero_weights(k, 2) if initial_state is None else initial_state  # M = (W, b), S alike
    outputs = []  # o_t  [..., 1, d] each
    for start in range(0, q.shape[-2], chunk_size):
        w_start, b_start = w, b  # M_{t'}: every gradient of this mini-batch is taken here
        for t in range(start, min(start + chunk_size, q.shape[-2])):
            k_t, v_t = k[..., t:t + 1, :], v[..., t:t + 1, :]  # [..., 1, d]
            theta_t, keep_t, eta_t = theta[..., t:t + 1, None], 1 - alpha[..., t:t + 1, None], eta[..., t:t + 1, None]
            grad = 2 * inner_gradient(k_t @ w_start + b_start, v_t - k_t, ln_weight, ln_bias, eps)  # ∇_z ℓ_t
            s_w = eta_t * s_w - theta_t * (xp.matrix_transpose(k_t) @ grad)  # S_t = η_t S_{t−1} − θ_t ∇ℓ_t
            s_b = eta_t * s_b - theta_t * grad
            w, b = keep_t * w + s_w, keep_t * b + s_b  # M_t = (1 − α_t) M_{t−1} + S_t
            z = (scale * q[..., t:t + 1, :]) @ w + b  # z_t = scale · q_t W_t + b_t
            outputs.append(z + layer_norm(z, ln_weight, ln_bias, eps))
    return xp.concat(outputs, axis=-2), (w, b, s_w, s_b)


def chunkwise_titans_linear(q: Any, k: Any, v: Any, theta: Any, alpha: Any, eta: Any, ln_weight: Any, ln_bias: Any,
                            scale: float, initial_state: Any = None, chunk_size: int = 16,
                            eps: float = 1e-6) -> tuple[Any, Any]:
    """The dual form: both scans of a mini-batch as products of gates over segments.

    With K_a[t, i] = Π_{(i, t]} (1 − α) and K_η[t, j] = Π_{(j, t]} η, gradient row u_j enters
    S_t with weight N[t, j] = K_η[t, j] θ_j and M_t with G = K_a N; the starting momentum S
    enters M_t with f = K_a m, where m_t = Π_{[1, t]} η and β_t = Π_{[1, t]} (1 − α) decays M.
    """
    xp = array_namespace(q)
    w, b, s_w, s_b = zero_weights(k, 2) if initial_state is None else initial_state  # M = (W, b), S alike
    outputs = []  # one [..., C, d] per mini-batch
    for start in range(0, q.shape[-2], chunk_size):
        chunk = slice(start, start + chunk_size)
        q_c, k_c, v_c = scale * q[..., chunk, :], k[..., chunk, :], v[..., chunk, :]  # [..., C, d]
        keep, eta_c = 1 - alpha[..., chunk], eta[..., chunk]  # [..., C]
        keeps, carries = segment_products(keep), segment_products(eta_c)  # K_a, K_η  [..., C, C]
        decay = keeps[..., :, :1] * keep[..., :1, None]  # β_t  [..., C, 1]
        momentum = carries[..., :, :1] * eta_c[..., :1, None]  # m_t  [..., C, 1]
        steps = carries * theta[..., None, chunk]  # N  [..., C, C]
        writes, reach = keeps @ steps, keeps @ momentum  # G [..., C, C], f [..., C, 1]
        grad = 2 * inner_gradient(k_c @ w + b, v_c - k_c, ln_weight, ln_bias, eps)  # u_j at M_{t'}  [..., C, d]
        # z_t = q_t W_t + b_t:  M_0 decayed, S_0 carried, and every gradient row so far
        z = decay * (q_c @ w + b) + reach * (q_c @ s_w + s_b) - (writes * (q_c @ xp.matrix_transpose(k_c) + 1.0)) @ grad
        outputs.append(z + layer_norm(z, ln_weight, ln_bias, eps))
        last_write, last_step = writes[..., -1:, :], steps[..., -1:, :]  # rows of the chunk's last token  [..., 1, C]
        w, b = (decay[..., -1:, :] * w + reach[..., -1:, :] * s_w - (xp.matrix_transpose(k_c) * last_write) @ grad,
                decay[..., -1:, :] * b + reach[..., -1:, :] * s_b - last_write @ grad)
        s_w, s_b = (momentum[..., -1:, :] * s_w - (xp.matrix_transpose(k_c) * last_step) @ grad,
                    momentum[..., -1:, :] * s_b - last_step @ grad)
    return xp.concat(outputs, axis=-2), (w, b, s_w, s_b)


def check_eps(eps: Any) -> float:
    """The layer norm's eps: a finite real > 0 (with eps = 0 a constant row divides 0 by 0)."""
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real):
        raise TypeError(f"eps must be a real number; got {type(eps).__name__} {eps!r}")
    if not np.isfinite(eps) or eps <= 0:
        raise ValueError(f"eps must be finite and > 0 (the layer norm divides by sqrt(var + eps)); got {eps}")
    return float(eps)


def check_square(q: Any, v: Any) -> None:
    """The inner model maps k to v − k, so d_v must equal d_k."""
    if v.shape[-1] != q.shape[-1]:
        raise ValueError(f"v must have d_v equal to d_k = {q.shape[-1]} (the inner model's target is v − k); "
                         f"got v of shape {list(v.shape)}")


def check_ln_parameter(x: Any, name: str, q: Any) -> Any:
    """ln_weight or ln_bias, [d] or [H, d] with H = q.shape[-3], as [1, d] or [H, 1, d] (broadcasts over tokens)."""
    d, ndim = q.shape[-1], x.ndim if hasattr(x, "ndim") else np.ndim(x)
    heads = q.shape[-3] if q.ndim >= 3 else None
    if ndim == 2 and heads is not None:
        return check_state_part(x, name, q, (heads, d), "[H, d]")[..., None, :]
    return check_state_part(x, name, q, (d,), "[d]" if heads is None else f"[d] or [H, d] = [{heads}, {d}]")[None, :]


def check_weights(state: Any, q: Any, names: tuple[str, ...]) -> Any:
    """A tuple of (W [..., d, d], b [..., 1, d]) pairs named by ``names``; None passes."""
    if state is None:
        return None
    if not isinstance(state, tuple) or len(state) != len(names):
        raise TypeError(f"initial_state must be a tuple ({', '.join(names)}) or None; got "
                        f"{type(state).__name__}" + (f" of length {len(state)}" if isinstance(state, tuple) else ""))
    lead, d = tuple(q.shape[:-2]), q.shape[-1]
    shapes = [(lead + (d, d), "[..., d, d]"), (lead + (1, d), "[..., 1, d]")] * (len(names) // 2)
    return tuple(check_state_part(x, f"initial_state {name}", q, *shape)
                 for x, name, shape in zip(state, names, shapes))


def check_common(q: Any, k: Any, v: Any, ln_weight: Any, ln_bias: Any, form: Any, mini_batch_size: Any,
                 eps: Any, return_state: Any) -> tuple:
    """The checks TTT and Titans share: q, k, v [..., N, d], the layer norm, the options."""
    form = check_choice(form, "form", TEST_TIME_FORMS)
    mini_batch_size = check_positive_int(mini_batch_size, "mini_batch_size")
    return_state = check_bool(return_state, "return_state")
    q, k, v = check_qkv(q, k, v, causal=True)
    check_square(q, v)
    return (q, k, v, check_ln_parameter(ln_weight, "ln_weight", q), check_ln_parameter(ln_bias, "ln_bias", q),
            form, mini_batch_size, check_eps(eps), return_state)


def ttt_linear(q: Any, k: Any, v: Any, eta: Any, ln_weight: Any, ln_bias: Any, *, mini_batch_size: int = 16,
               scale: float | None = None, eps: float = 1e-6, initial_state: tuple[Any, Any] | None = None,
               return_state: bool = False, form: str = "chunkwise", backend: str = "numpy") -> Any:
    """TTT-Linear: the weights of f(x) = LN(x W + b) trained on each token by mini-batch gradient descent.

    ℓ_s = ½‖LN(k_s W + b) − (v_s − k_s)‖²;  within a mini-batch starting after token t',
    W_t = W_{t'} − η_t Σ_{s=t'+1..t} k_sᵀ ∇_z ℓ_s(W_{t'}, b_{t'}) and b_t likewise;
    z_t = (scale · q_t) W_t + b_t and o_t = z_t + LN(z_t). flash-linear-attention's
    ``ttt_linear`` (its naive reference) computes the same.

    Parameters
    ----------
    q, k : array [..., N, d]
    v : array [..., N, d]
        d_v = d_k: the inner model's target is v − k.
    eta : array [..., N]
        Learning rates η_t >= 0; η_t scales the sum of its mini-batch's gradients up to t
        (η_t = η/(position in the mini-batch) makes it the running mean). The layer norm keeps
        any finite η bounded: f is scale-invariant, so a step only turns (W, b) and lengthens it.
    ln_weight, ln_bias : array [d] or [H, d]
        The layer norm's weight and bias (H = q.shape[-3]: one per head), used by the inner
        model and by the output's norm alike.
    mini_batch_size : int
        b >= 1. Mini-batches start at each call's first token; the last one is shorter when b
        does not divide N (its last token sets the final state). A call split at a multiple of
        b and continued from ``initial_state`` equals the whole run; a split inside a
        mini-batch ends that mini-batch early (a different, equally valid run).
    scale : float, optional
        Multiplies q; None means d**-0.5.
    eps : float
        The layer norm's eps > 0.
    initial_state : tuple (W [..., d, d], b [..., 1, d]), optional
        Zeros when None (as flash-linear-attention; the paper starts from learned weights):
        the first mini-batch then reads z = 0, whose layer norm divides by sqrt(eps), so its
        gradients are about 1/sqrt(eps) times larger than later ones.
    return_state : bool
    form : 'recurrent' | 'chunkwise'
        The primal form (token by token) or the dual form (a mini-batch of matrix products).
    backend : 'numpy' | 'torch'
        The reference forms run on numpy arrays or torch tensors (differentiable); 'numba'
        has no kernel for this model.

    Returns
    -------
    o : array [..., N, d], or ``(o, (W, b))`` with W [..., d, d] and b [..., 1, d].
    """
    q, k, v, ln_weight, ln_bias, form, mini_batch_size, eps, return_state = check_common(
        q, k, v, ln_weight, ln_bias, form, mini_batch_size, eps, return_state)
    eta = check_per_step_range(eta, "eta", q, 0.0, np.inf, "learning rate", "learning rate >= 0")
    initial_state = check_weights(initial_state, q, ("W", "b"))
    return run_recurrence("ttt_linear", (q, k, v, eta, ln_weight, ln_bias), check_scale(scale, q.shape[-1]), form,
                          backend, mini_batch_size, initial_state, return_state, eps=eps)


def titans_linear(q: Any, k: Any, v: Any, theta: Any, alpha: Any, eta: Any, ln_weight: Any, ln_bias: Any, *,
                  mini_batch_size: int = 16, eps: float = 1e-6, scale: float | None = None,
                  initial_state: tuple[Any, Any, Any, Any] | None = None, return_state: bool = False,
                  form: str = "chunkwise", backend: str = "numpy") -> Any:
    """Titans' neural memory with a linear inner model: gradient steps with momentum and forgetting.

    M = (W, b) of f(x) = LN(x W + b), ℓ_t = ‖LN(k_t W + b) − (v_t − k_t)‖² (no ½, as the paper);
    S_t = η_t S_{t−1} − θ_t ∇ℓ(M_{t'}; x_t), M_t = (1 − α_t) M_{t−1} + S_t, with M_{t'} the
    memory at the start of t's mini-batch; z_t = (scale · q_t) W_t + b_t, o_t = z_t + LN(z_t).
    With η = α = 0 this is :func:`ttt_linear` at mini_batch_size=1 with its η_t = 2 θ_t.

    Parameters
    ----------
    q, k, v : array [..., N, d]
        d_v = d_k: the inner model's target is v − k.
    theta : array [..., N]
        Learning rates θ_t >= 0 (θ = 0 keeps the memory's gradient out: M only decays).
    alpha : array [..., N]
        Forgetting gates α_t in [0, 1] (α_t = 1 forgets everything before t's own momentum).
    eta : array [..., N]
        Momentum gates η_t in [0, 1] (η = 0: no momentum, each step is its own gradient).
    ln_weight, ln_bias : array [d] or [H, d]
        The layer norm's weight and bias, one per head when [H, d] (H = q.shape[-3]).
    mini_batch_size : int
        b >= 1: every gradient of a mini-batch is taken at its starting memory. Mini-batches
        start at each call's first token; the last one is shorter when b does not divide N. A
        call split at a multiple of b and continued from ``initial_state`` equals the whole run.
    eps : float
        The layer norm's eps > 0.
    scale : float, optional
        Multiplies q; None means d**-0.5 (the paper and flash-linear-attention use 1).
    initial_state : tuple (W [..., d, d], b [..., 1, d], S_W [..., d, d], S_b [..., 1, d]), optional
        Memory and momentum; zeros when None (the first gradients are then large, as in
        :func:`ttt_linear`).
    return_state : bool
    form : 'recurrent' | 'chunkwise'
    backend : 'numpy' | 'torch'

    Returns
    -------
    o : array [..., N, d], or ``(o, (W, b, S_W, S_b))``.
    """
    q, k, v, ln_weight, ln_bias, form, mini_batch_size, eps, return_state = check_common(
        q, k, v, ln_weight, ln_bias, form, mini_batch_size, eps, return_state)
    theta = check_per_step_range(theta, "theta", q, 0.0, np.inf, "learning rate", "learning rate >= 0")
    alpha = check_per_step_range(alpha, "alpha", q, 0.0, 1.0, "forgetting gate", "forgetting gate")
    eta = check_per_step_range(eta, "eta", q, 0.0, 1.0, "momentum gate", "momentum gate")
    initial_state = check_weights(initial_state, q, ("W", "b", "S_W", "S_b"))
    return run_recurrence("titans_linear", (q, k, v, theta, alpha, eta, ln_weight, ln_bias),
                          check_scale(scale, q.shape[-1]), form, backend, mini_batch_size, initial_state,
                          return_state, eps=eps)
