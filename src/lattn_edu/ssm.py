"""State-space scans, written so that linear attention is visibly a special case (chapter 8).

One recurrence covers the family. The state H_i is an [m, d_v] matrix:

    H_i = diag(a_i) H_{i-1} + b_i x_iᵀ,     y_i = H_iᵀ c_i

- linear attention (numerator): a_i = 1, b_i = φ(k_i), c_i = φ(q_i), x_i = v_i;
  its denominator is the same scan with x_i = 1;
- RetNet retention: a_i = γ, b_i = k_i, c_i = q_i;
- a diagonal (S4D-like) SSM: a, b, c fixed in time;
- a selective (Mamba-like) SSM: a_i, b_i, c_i computed from the input x_i.

Only how the state is carried forward (a_i) and written (b_i) changes, and the scan is
:func:`lattn_edu.gated_linear_attention` itself (q = c, k = b, v = x, log decay log a_i).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._checks import check_decay_values, check_sequence, is_torch_tensor
from .gated import gated_linear_attention, gated_weights, per_key_log_decay


def _check_decay(decay: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Decays a_i in (0, 1], broadcast to ``shape`` = [..., N, m]."""
    decay = check_decay_values(decay, "decay", dtype)
    try:
        return np.broadcast_to(decay, shape)
    except ValueError:
        raise ValueError(f"decay must broadcast to [..., N, m] = {shape} (a float, [m], "
                         f"[..., N, 1] or [..., N, m]); got shape {decay.shape}") from None


def _check_scan_inputs(decay: Any, b: Any, c: Any, x: Any | None = None) -> tuple:
    """Validate b, c [..., N, m], x [..., N, d_v] and the decays."""
    b, c = check_sequence(b, "b"), check_sequence(c, "c")
    arrays = {"b": b, "c": c}
    if x is not None:
        arrays["x"] = check_sequence(x, "x")
    if any(is_torch_tensor(a) for a in arrays.values()):
        raise TypeError("the SSM scans take numpy arrays; got a torch.Tensor")
    if len({a.dtype for a in arrays.values()}) > 1:
        raise TypeError(f"{', '.join(arrays)} must share one dtype; got "
                        f"{', '.join(str(a.dtype) for a in arrays.values())}")
    if b.shape != c.shape:
        raise ValueError(f"b and c must have the same shape [..., N, m]; got {b.shape} and {c.shape}")
    if x is not None and x.shape[:-1] != b.shape[:-1]:
        raise ValueError(f"x must have shape [{', '.join(map(str, b.shape[:-1]))}, d_v] to match b; "
                         f"got {x.shape}")
    return _check_decay(decay, b.shape, b.dtype), b, c, arrays.get("x")


def _log_decay(decay: np.ndarray, requested: Any) -> np.ndarray:
    """log a_i as gated linear attention takes it: [..., N] when the caller gave one decay per
    step (a float or [..., N, 1]), else one per state row [..., N, m]."""
    log_decay = np.log(decay)
    if np.ndim(requested) == 0 or np.shape(requested)[-1] == 1:
        return np.ascontiguousarray(log_decay[..., 0])
    return log_decay


def ssm_scan(decay: Any, b: Any, c: Any, x: Any) -> np.ndarray:
    """The recurrence H_i = diag(a_i) H_{i-1} + b_i x_iᵀ, y_i = H_iᵀ c_i.

    This is :func:`lattn_edu.gated_linear_attention` with q = c, k = b, v = x, log decay
    log a_i and scale 1: the SSM view and the attention view are one computation.

    Parameters
    ----------
    decay : float or array broadcasting to [..., N, m]
        a_i in (0, 1]: how much of each state row survives a step.
    b : array [..., N, m]
        How token i writes into the state (the "key").
    c : array [..., N, m]
        How token i reads the state (the "query").
    x : array [..., N, d_v]
        What is written (the "value").

    Returns
    -------
    y : array [..., N, d_v]
    """
    checked, b, c, x = _check_scan_inputs(decay, b, c, x)
    return gated_linear_attention(c, b, x, _log_decay(checked, decay), scale=1.0)


def ssm_mixing_matrix(decay: Any, b: Any, c: Any) -> np.ndarray:
    """The causal N×N matrix A with y = A x: A[i, j] = Σ_r c_i[r] b_j[r] Π_{j<l<=i} a_l[r].

    The "attention matrix" of an SSM: with a = 1 it is the unnormalised φ(Q)φ(K)ᵀ masked
    to j <= i; with a = γ it is retention's (Q Kᵀ) ⊙ L. Returns [..., N, N].
    """
    checked, b, c, _ = _check_scan_inputs(decay, b, c)
    return gated_weights(c, b, per_key_log_decay(_log_decay(checked, decay), c))


def diagonal_ssm(x: Any, a: Any, b: Any, c: Any) -> np.ndarray:
    """A time-invariant diagonal SSM applied to every channel of x (S4D-like).

    h_i = a ⊙ h_{i-1} + b x_i,  y_i = c·h_i, for each of the d channels of x [..., N, d],
    with a, b, c of shape [m] (a in (0, 1]). Because nothing depends on i, y is also a
    convolution of x with the kernel κ_t = Σ_r c_r a_r^t b_r. Returns [..., N, d].
    """
    x = check_sequence(x, "x")
    params = {name: np.asarray(p) for name, p in (("a", a), ("b", b), ("c", c))}
    for name, p in params.items():
        if p.ndim != 1 or p.shape != params["a"].shape or p.dtype.kind not in "fiu":
            raise ValueError(f"a, b and c must be real vectors of one shape [m]; got {name} "
                             f"with shape {p.shape} and dtype {p.dtype}")
    n, m = x.shape[-2], params["a"].shape[0]
    lead = x.shape[:-2] + (n, m)
    b_t = np.broadcast_to(params["b"].astype(x.dtype), lead)  # b_i = b for every token
    c_t = np.broadcast_to(params["c"].astype(x.dtype), lead)
    return ssm_scan(params["a"], b_t, c_t, x)


def selective_ssm_gates(x: Any, a_log: Any, w_b: Any, w_c: Any, w_delta: Any,
                        delta_bias: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The input-dependent (decay, b, c) that :func:`selective_ssm` feeds to :func:`ssm_scan`.

    Δ_i = softplus(x_i·w_Δ + bias)                  how far the state moves at token i
    a_i = exp(-Δ_i · exp(a_log))    [m], in (0, 1)   large Δ forgets, small Δ keeps
    b_i = Δ_i · x_i W_b             [m]              what to write
    c_i = x_i W_c                   [m]              what to read

    x [..., N, d]; a_log [m]; w_b, w_c [d, m]; w_delta [d]. Returns three [..., N, m] arrays.
    """
    x = check_sequence(x, "x")
    d = x.shape[-1]
    a_log, w_b, w_c, w_delta = (np.asarray(p, dtype=x.dtype) for p in (a_log, w_b, w_c, w_delta))
    m = a_log.shape[0] if a_log.ndim == 1 else -1
    expected = {"a_log": (a_log, (m,)), "w_b": (w_b, (d, m)), "w_c": (w_c, (d, m)),
                "w_delta": (w_delta, (d,))}
    for name, (p, shape) in expected.items():
        if p.shape != shape or m < 1:
            raise ValueError(f"{name} must have shape {list(shape)} (d={d}, m=len(a_log)); "
                             f"got {list(p.shape)}")
        if not np.isfinite(p).all():
            raise ValueError(f"{name} must be finite")
    delta = np.logaddexp(0, x @ w_delta + x.dtype.type(delta_bias))[..., None]  # softplus  [..., N, 1]
    decay = np.exp(-delta * np.exp(a_log))  # [..., N, m]
    # a tiny floor keeps a_i > 0 where Δ is huge: the state is forgotten, never NaN.
    decay = np.maximum(decay, np.finfo(x.dtype).tiny)
    return decay, delta * (x @ w_b), x @ w_c


def selective_ssm(x: Any, a_log: Any, w_b: Any, w_c: Any, w_delta: Any,
                  delta_bias: float = 0.0) -> np.ndarray:
    """A selective (Mamba-like) scan: the step size, write and read all depend on x_i.

    The gates come from :func:`selective_ssm_gates`; then y = ssm_scan(a, b, c, x).
    x [..., N, d]; a_log [m]; w_b, w_c [d, m]; w_delta [d]. Returns [..., N, d].
    """
    decay, b, c = selective_ssm_gates(x, a_log, w_b, w_c, w_delta, delta_bias)
    return ssm_scan(decay, b, c, check_sequence(x, "x"))
