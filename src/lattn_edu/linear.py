"""Linear attention: four numpy forms that teach it (chapters 3 and 4), and the function every
chapter calls (chapters 3, 4 and 9).

    o_i = φ(q_i)ᵀ S / (φ(q_i)ᵀ z + eps),   S = Σ_j φ(k_j) v_jᵀ  [m, d_v],   z = Σ_j φ(k_j)  [m]

with the sums over j <= i when causal. The four numpy functions below are the teaching
references, written to be read next to their equations; tests check every backend against
them. They take features, not raw q and k: ``phi_q`` [..., N_q, m], ``phi_k`` [..., N, m],
``v`` [..., N, d_v].

- ``quadratic``: build the N×N weight matrix φ(Q)φ(K)ᵀ, then normalise (O(N²)).
- ``parallel``: move the parentheses, φ(Q)(φ(K)ᵀV) (O(N)); causal via prefix sums.
- ``recurrent``: scan the tokens with a running state S_i, z_i (O(1) per token).
- ``chunkwise``: quadratic inside chunks, a carried state between them (production kernels).

:func:`linear_attention` has no kernels of its own. Causal, it is the plain case of
:func:`lattn_edu.gated_linear_attention` (no decay, scale 1) run on [V | 1], the column of
ones carrying z beside S, followed by one division, on every backend and whether or not a
state is carried in or handed back; its ``form`` picks the recurrence's form. Not causal,
it is two matrix products, φ(Q)(φ(K)ᵀ[V | 1]) (or, with form='quadratic', the N×N order
(φ(Q)φ(K)ᵀ)[V | 1]). A map that gives its features in log space (FAVOR+) hands over
features already in stable units (:func:`~lattn_edu.feature_maps.stabilised`), where the
state changes units whenever a key brings a larger feature, a per-feature decay of the same
recurrence, and every denominator is at least 1; so ``eps`` is always one float.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._checks import (array_namespace, check_bool, check_choice, check_finite, check_nonnegative_float,
                      check_positive_int, check_qkv, check_state_part, nonfinite_output_error)
from .feature_maps import checked_features, has_log_features, stabilised
from .recurrence import check_finite_result, run_recurrence

FORMS = ("quadratic", "parallel", "recurrent", "chunkwise")
# The recurrence's form for each form of linear attention: it has no prefix-sum form, so
# 'parallel' runs its chunkwise one (O(N)), and 'quadratic' its masked N×N one.
_RECURRENCE_FORMS = {"quadratic": "parallel", "parallel": "chunkwise", "recurrent": "recurrent",
                     "chunkwise": "chunkwise"}


def quadratic_linear_attention(phi_q: np.ndarray, phi_k: np.ndarray, v: np.ndarray,
                               causal: bool = False, eps: float = 1e-6) -> np.ndarray:
    """(φ(Q)φ(K)ᵀ) V: materialise the N×N weights, then normalise each row."""
    weights = phi_q @ phi_k.swapaxes(-1, -2)  # [..., N_q, N]
    if causal:
        weights = np.tril(weights)  # query i sees keys j <= i
    numerator = weights @ v  # [..., N_q, d_v]
    denominator = weights.sum(-1, keepdims=True)  # [..., N_q, 1]
    return numerator / (denominator + eps)


def parallel_linear_attention(phi_q: np.ndarray, phi_k: np.ndarray, v: np.ndarray,
                              causal: bool = False, eps: float = 1e-6) -> np.ndarray:
    """φ(Q)(φ(K)ᵀV): contract the sequence axis first; causal uses prefix sums of states."""
    if not causal:
        state = phi_k.swapaxes(-1, -2) @ v  # S = φ(K)ᵀV   [..., m, d_v]
        normaliser = phi_k.sum(-2)  # z = φ(K)ᵀ1   [..., m]
        numerator = phi_q @ state  # [..., N_q, d_v]
        denominator = (phi_q @ normaliser[..., None])  # [..., N_q, 1]
        return numerator / (denominator + eps)
    states = np.cumsum(phi_k[..., :, :, None] * v[..., :, None, :], axis=-3)  # S_i  [..., N, m, d_v]
    normalisers = np.cumsum(phi_k, axis=-2)  # z_i  [..., N, m]
    numerator = np.einsum("...nm,...nmv->...nv", phi_q, states)  # φ(q_i)ᵀ S_i
    denominator = np.einsum("...nm,...nm->...n", phi_q, normalisers)[..., None]  # φ(q_i)ᵀ z_i
    return numerator / (denominator + eps)


def recurrent_linear_attention(phi_q: np.ndarray, phi_k: np.ndarray, v: np.ndarray,
                               causal: bool = False, eps: float = 1e-6) -> np.ndarray:
    """The RNN view: S_i = S_{i-1} + φ(k_i)v_iᵀ, z_i = z_{i-1} + φ(k_i), one token at a time."""
    lead, (n_keys, m), d_v = phi_k.shape[:-2], phi_k.shape[-2:], v.shape[-1]
    state = np.zeros(lead + (m, d_v), dtype=v.dtype)  # S  [..., m, d_v]
    normaliser = np.zeros(lead + (m,), dtype=v.dtype)  # z  [..., m]
    out = np.empty(phi_q.shape[:-1] + (d_v,), dtype=v.dtype)  # [..., N_q, d_v]
    for i in range(n_keys):
        state += phi_k[..., i, :, None] * v[..., i, None, :]  # rank-1 update
        normaliser += phi_k[..., i, :]
        if causal:
            out[..., i, :] = _read(phi_q[..., i, :], state, normaliser, eps)
    if not causal:  # every query reads the final state
        for i in range(phi_q.shape[-2]):
            out[..., i, :] = _read(phi_q[..., i, :], state, normaliser, eps)
    return out


def _read(phi_q_i: np.ndarray, state: np.ndarray, normaliser: np.ndarray, eps: float) -> np.ndarray:
    """o_i = φ(q_i)ᵀ S / (φ(q_i)ᵀ z + eps) for one position: [..., m] -> [..., d_v]."""
    numerator = np.einsum("...m,...mv->...v", phi_q_i, state)
    denominator = np.einsum("...m,...m->...", phi_q_i, normaliser)[..., None]
    return numerator / (denominator + eps)


def chunkwise_linear_attention(phi_q: np.ndarray, phi_k: np.ndarray, v: np.ndarray,
                               causal: bool = False, eps: float = 1e-6,
                               chunk_size: int = 64) -> np.ndarray:
    """Chunks of C tokens: quadratic (masked) inside a chunk, the carried state S, z across chunks.

    Work is O(N·C·m + N·m·d_v): matrix products of size C, the shape BLAS and tensor cores like.
    """
    if not causal:  # accumulate the state chunk by chunk, then one read for every query
        state = sum(phi_k[..., s:s + chunk_size, :].swapaxes(-1, -2) @ v[..., s:s + chunk_size, :]
                    for s in range(0, phi_k.shape[-2], chunk_size))
        normaliser = phi_k.sum(-2)[..., None]  # [..., m, 1]
        return (phi_q @ state) / (phi_q @ normaliser + eps)
    lead, (n, m), d_v = phi_k.shape[:-2], phi_k.shape[-2:], v.shape[-1]
    state = np.zeros(lead + (m, d_v), dtype=v.dtype)  # S before the chunk  [..., m, d_v]
    normaliser = np.zeros(lead + (m, 1), dtype=v.dtype)  # z before the chunk  [..., m, 1]
    out = np.empty(lead + (n, d_v), dtype=v.dtype)
    for start in range(0, n, chunk_size):
        chunk = slice(start, start + chunk_size)
        q_c, k_c, v_c = phi_q[..., chunk, :], phi_k[..., chunk, :], v[..., chunk, :]  # [..., C, ·]
        weights = np.tril(q_c @ k_c.swapaxes(-1, -2))  # intra-chunk  [..., C, C]
        numerator = weights @ v_c + q_c @ state  # inside the chunk + everything before it
        denominator = weights.sum(-1, keepdims=True) + q_c @ normaliser
        out[..., chunk, :] = numerator / (denominator + eps)
        state = state + k_c.swapaxes(-1, -2) @ v_c  # carry the chunk into the state
        normaliser = normaliser + k_c.sum(-2)[..., None]
    return out


def linear_attention(q: Any, k: Any, v: Any, feature_map: Any = "elu+1", causal: bool = False,
                     form: str = "parallel", backend: str = "numpy", eps: float = 1e-6,
                     chunk_size: int = 64, *, initial_state: Any = None, return_state: bool = False) -> Any:
    """Kernel (linear) attention o_i = φ(q_i)ᵀ S / (φ(q_i)ᵀ z + eps).

    Parameters
    ----------
    q : array [..., N_q, d]
    k : array [..., N, d]
    v : array [..., N, d_v]
        float32 or float64; leading (batch, head) axes optional and equal across q, k, v.
        Causal attention needs N_q == N.
    feature_map : 'elu+1' | 'relu' | 'identity' | callable [..., N, d] -> [..., N, m]
        A map that also offers ``log_features`` (FAVOR+) is computed in the stable units it
        gives (:func:`~lattn_edu.feature_maps.stabilised`), whatever the form, backend or state.
    causal : bool
        Query i sees keys j <= i only.
    form : 'quadratic' | 'parallel' | 'recurrent' | 'chunkwise'
        The same output (to rounding) computed four ways. Causal: the gated recurrence's
        masked N×N form, its chunkwise form (for both 'parallel' and 'chunkwise'), or its
        scan. Not causal: 'quadratic' forms the N×N weights first, the others the state.
    backend : 'numpy' | 'numba' | 'torch'
        numpy is the reference; numba runs JIT kernels (its chunkwise kernel computes the
        elementwise maps and the division itself); torch takes tensors on any device.
    eps : float
        Guard added to every denominator. For a map in log space (FAVOR+) it is added in the
        stable units, where every denominator is at least 1: it then changes no output by
        more than eps relative (the features are positive, so nothing needs guarding).
    chunk_size : int
        Chunk length C of the chunkwise form.
    initial_state : (S [..., m, d_v], z [..., m]), optional
        The state of the tokens before these (zeros when None), in the units of the feature
        map's own features. A map in log space also takes the triple (S, z, log_scale) that
        it returns, log_scale [..., m]: its state in its own units is exp(log_scale)·(S, z),
        row by row (numbers that would under- or overflow if multiplied out).
    return_state : bool
        Also return the state after the last key, (S, z), or (S, z, log_scale) for a map in
        log space: splitting a sequence anywhere and carrying it gives the outputs of one
        call over the whole sequence.

    Returns
    -------
    o : array [..., N_q, d_v], same dtype (and, for torch, same type and device) as v;
        or ``(o, state)`` when ``return_state``.
    """
    from .backends import get_backend

    causal = check_bool(causal, "causal")
    form = check_choice(form, "form", FORMS)
    eps = check_nonnegative_float(eps, "eps")
    chunk_size = check_positive_int(chunk_size, "chunk_size")
    return_state = check_bool(return_state, "return_state")
    kernels = get_backend(backend)
    if causal and _RECURRENCE_FORMS[form] == "chunkwise" and _in_kernel(feature_map, kernels):
        return _chunkwise_in_kernel(q, k, v, feature_map, kernels, eps, chunk_size, initial_state,
                                    return_state)
    q, k, v = check_qkv(q, k, v, causal)
    xp = array_namespace(v)
    values = xp.concatenate([v, xp.ones_like(v[..., :1])], -1)  # [V | 1]  [..., N, d_v + 1]
    phi_q, phi_k, log_decay, start, log_scale = _features_and_start(feature_map, q, k, v, causal,
                                                                     initial_state)
    if causal:  # the recurrence's forms are all causal
        both, state = run_recurrence("gated", (phi_q, phi_k, values, log_decay), 1.0, _RECURRENCE_FORMS[form],
                                     backend, chunk_size, start, return_state=True)
    else:
        both, state = _two_products(phi_q, phi_k, values, start, form, kernels)
    with np.errstate(divide="ignore", invalid="ignore"):  # a 0/0 is reported just below
        out = both[..., :-1] / (both[..., -1:] + eps)
    _check_output(out, feature_map, eps)
    return _with_state(out, state, log_scale) if return_state else out


def _in_kernel(feature_map: Any, kernels: Any) -> bool:
    """Whether the backend's chunkwise gated form computes these features itself (an
    elementwise map it names), so that the input is read once."""
    return isinstance(feature_map, str) and feature_map in getattr(kernels, "KERNEL_FEATURE_MAPS", ())


def _chunkwise_in_kernel(q: Any, k: Any, v: Any, feature_map: str, kernels: Any, eps: float,
                         chunk_size: int, initial_state: Any, return_state: bool) -> Any:
    """The chunkwise gated recurrence on [V | 1] with the features and the division inside the
    kernel, which checks q, k, v and the output for NaN and inf in its own passes."""
    q, k, v = check_qkv(q, k, v, causal=True, finite=False)
    start = _joined_state(initial_state, k, v)  # an elementwise map keeps the width: m = d
    q, k, v, start, restore = kernels.to_backend(q, k, v, start)
    out, state = kernels.GATED_FORMS["chunkwise"](q, k, v, None, 1.0, start, chunk_size,
                                                  feature_map=feature_map, normaliser_eps=eps)
    if not return_state:
        return restore(out)
    check_finite_result(out, state, out_checked=True)  # the kernel checked out; the state is left
    return _with_state(restore(out), restore(state), None)


def _features_and_start(feature_map: Any, q: Any, k: Any, v: Any, causal: bool, initial_state: Any) -> tuple:
    """(φ(q), φ(k), log decay or None, carried [S | z] or None, log_scale or None): for a map in
    log space the features and state in the stable units the map gives, where a change of units
    is a decay (see :func:`~lattn_edu.random_features.stabilise`)."""
    if not has_log_features(feature_map):
        phi_q, phi_k = checked_features(feature_map, q, k)  # [..., N_q, m], [..., N, m]
        return phi_q, phi_k, None, _joined_state(initial_state, phi_k, v), None
    read_state = None if initial_state is None else (
        lambda log_k: _state_parts(initial_state, log_k, v, with_scale=True))
    features, start = stabilised(feature_map, q, k, causal, read_state)
    return features.phi_q, features.phi_k, features.log_decay, start, features.log_scale


def _two_products(phi_q: Any, phi_k: Any, values: Any, start: Any, form: str, kernels: Any) -> tuple:
    """Non-causal: every query reads the state after the last key, φ(Q)(φ(K)ᵀ[V | 1]); with
    form='quadratic' the other order, (φ(Q)φ(K)ᵀ)[V | 1], the N_q×N weights first (chapter 3)."""
    phi_q, phi_k, values, start, restore = kernels.to_backend(phi_q, phi_k, values, start)
    state = phi_k.swapaxes(-1, -2) @ values  # [S | z]  [..., m, d_v + 1]
    if start is not None:
        state = start + state
    if form == "quadratic" and start is None:
        both = (phi_q @ phi_k.swapaxes(-1, -2)) @ values  # [..., N_q, N] @ [..., N, d_v + 1]
    else:
        both = phi_q @ state
    return restore(both), restore(state)


def _with_state(out: Any, state: Any, log_scale: Any) -> tuple:
    """(o, (S, z)) or (o, (S, z, log_scale)) from the joined state [S | z] [..., m, d_v + 1]."""
    pair = (state[..., :-1], state[..., -1])
    return out, (pair if log_scale is None else (*pair, log_scale))


def _joined_state(initial_state: Any, phi_k: Any, v: Any) -> Any:
    """[S | z] [..., m, d_v + 1] from a caller's pair (S [..., m, d_v], z [..., m]); None passes."""
    if initial_state is None:
        return None
    s, z, _ = _state_parts(initial_state, phi_k, v, with_scale=False)
    return array_namespace(s).concatenate([s, z[..., None]], -1)


def _state_parts(initial_state: Any, keys: Any, v: Any, with_scale: bool) -> tuple[Any, Any, Any]:
    """The checked (S, z, log_scale or None) of a caller's pair, or triple when ``with_scale``;
    ``keys`` [..., N, m] gives the leading axes and m."""
    sizes = (2, 3) if with_scale else (2,)
    if not isinstance(initial_state, (tuple, list)) or len(initial_state) not in sizes:
        wanted = ("a pair (S, z) or a triple (S, z, log_scale) with S [..., m, d_v], z and "
                  "log_scale [..., m]") if with_scale else "a pair (S, z) with S [..., m, d_v] and z [..., m]"
        raise TypeError(f"initial_state must be {wanted}; got {type(initial_state).__name__}")
    lead, m = tuple(keys.shape[:-2]), keys.shape[-1]
    s = check_state_part(initial_state[0], "initial_state S", v, lead + (m, v.shape[-1]), "[..., m, d_v]")
    z = check_state_part(initial_state[1], "initial_state z", v, lead + (m,), "[..., m]")
    log_scale = (check_state_part(initial_state[2], "initial_state log_scale", v, lead + (m,), "[..., m]")
                 if len(initial_state) == 3 else None)
    return s, z, log_scale


def _check_output(out: Any, feature_map: Any, eps: float) -> None:
    """No silent NaN: a vanished denominator is reported, not returned."""
    try:
        check_finite(out, "out")
    except ValueError:
        raise nonfinite_output_error(feature_map, eps) from None
