"""Decoding state: linear attention's fixed [m, d_v] state vs softmax's growing KV cache (chapters 4, 5).

    S_i = S_{i-1} + φ(k_i) v_iᵀ,   z_i = z_{i-1} + φ(k_i),   o_i = φ(q_i)ᵀ S_i / (φ(q_i)ᵀ z_i + eps)

:class:`LinearAttentionState` holds S and z and never grows; :class:`SoftmaxKVCache`
stores every past key and value, so its memory and per-token work grow with N.

With ``log_space=True`` the state takes log features (``FavorPlus.log_features``) and keeps
S and z in the per-feature units of :func:`~lattn_edu.feature_maps.stabilised_features`, as
:func:`~lattn_edu.linear_attention` does, so decoding FAVOR+ never under- or overflows and
its denominators stay at least 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._checks import (as_float_array, check_bool, check_finite, check_nonnegative_float, check_positive_int,
                      check_positive_state)
from .feature_maps import key_units, query_features, stabilised_state


def _check_dtype(dtype: Any) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise TypeError(f"dtype must be float32 or float64; got {dtype}")
    return dtype


def _check_vector(x: Any, name: str, width: int, dtype: np.dtype) -> np.ndarray:
    """One token [width] or a block of tokens [n, width], finite, cast to the state's dtype.

    Plain lists such as [1, 0] are read as the state's dtype; arrays must already be float.
    """
    if isinstance(x, (list, tuple)):
        x = np.asarray(x, dtype=dtype)
    x = as_float_array(x, name)
    if x.ndim not in (1, 2) or x.shape[-1] != width or x.shape[0] == 0:
        raise ValueError(f"{name} must have shape [{width}] (one token) or [n, {width}] "
                         f"(n tokens in order); got {tuple(x.shape)}")
    check_finite(x, name)
    return x.astype(dtype, copy=False)


class LinearAttentionState:
    """The running state of causal linear attention: S [m, d_v] and z [m].

    Parameters
    ----------
    m : int
        Feature width (length of φ(k)).
    d_v : int
        Value width.
    dtype : float32 or float64
    eps : float
        Guard added to the denominator, as in :func:`lattn_edu.linear_attention`.
    initial_state : (S [m, d_v], z [m]), optional
        Continue from a state, e.g. the one ``linear_attention(..., return_state=True)``
        returns for a prompt (zeros when None). With ``log_space`` also the triple
        (S, z, log_scale) that linear_attention returns for FAVOR+.
    log_space : bool
        ``update``, ``read`` and ``step`` take log φ instead of φ (positive maps such as
        FAVOR+), and S, z are held in units exp(log_scale) per feature [m] that keep them in
        range; ``state`` is then the triple (S, z, log_scale).

    ``update`` adds tokens, ``read`` answers a query, ``step`` does both; ``state`` hands the
    pair (S, z) back. Memory stays m·d_v + m numbers however many tokens arrive.
    """

    def __init__(self, m: int, d_v: int, dtype: Any = np.float64, eps: float = 1e-6,
                 initial_state: Any = None, log_space: bool = False) -> None:
        self.m = check_positive_int(m, "m")
        self.d_v = check_positive_int(d_v, "d_v")
        self.dtype = _check_dtype(dtype)
        self.eps = check_nonnegative_float(eps, "eps")
        self.log_space = check_bool(log_space, "log_space")
        self.S = np.zeros((self.m, self.d_v), dtype=self.dtype)  # [m, d_v]
        self.z = np.zeros(self.m, dtype=self.dtype)  # [m]
        # [m]: S, z are in units exp(log_scale); in log space -inf until a key sets the unit
        self.log_scale = np.full(self.m, -np.inf if self.log_space else 0.0, dtype=self.dtype)
        self.num_tokens = 0
        if initial_state is not None:
            parts = _check_initial_state(initial_state, self.m, self.d_v, self.dtype, self.log_space)
            self.S[...], self.z[...], self.log_scale[...] = parts

    @property
    def state(self) -> tuple[np.ndarray, ...]:
        """A copy of the pair (S [m, d_v], z [m]), the form ``initial_state`` takes; with
        ``log_space`` the triple (S, z, log_scale [m])."""
        pair = (self.S.copy(), self.z.copy())
        if not self.log_space:
            return pair
        return (*pair, np.where(self.z > 0, self.log_scale, 0).astype(self.dtype))  # finite: no key, no unit

    def __repr__(self) -> str:
        return (f"LinearAttentionState(m={self.m}, d_v={self.d_v}, dtype={self.dtype.name}, "
                f"num_tokens={self.num_tokens})")

    @property
    def nbytes(self) -> int:
        """Bytes held by S and z: constant in the number of tokens."""
        return self.S.nbytes + self.z.nbytes

    def update(self, phi_k: Any, v: Any) -> None:
        """Add tokens: S += φ(k) vᵀ, z += φ(k). phi_k [m] or [n, m] (log φ(k) with
        ``log_space``); v [d_v] or [n, d_v]."""
        phi_k = _check_vector(phi_k, "phi_k", self.m, self.dtype)
        v = _check_vector(v, "v", self.d_v, self.dtype)
        if phi_k.ndim != v.ndim or phi_k.shape[:-1] != v.shape[:-1]:
            raise ValueError(f"phi_k and v must hold the same number of tokens; got shapes "
                             f"{phi_k.shape} and {v.shape}")
        phi_k, v = np.atleast_2d(phi_k), np.atleast_2d(v)  # [n, m], [n, d_v]
        if self.log_space:  # into the units of the largest feature held, shared with linear_attention
            self._change_units(key_units(phi_k, causal=False, log_scale=self.log_scale)[0])
            phi_k = np.exp(phi_k - self.log_scale)  # [n, m], each <= 1
        with np.errstate(over="ignore", invalid="ignore"):
            dS, dz = phi_k.T @ v, phi_k.sum(0)  # the sum of the rank-1 outer products, and of φ(k)
            finite = np.isfinite(self.S + dS).all() and np.isfinite(self.z + dz).all()
        if not finite:
            raise ValueError(f"update would overflow the state S or z in {self.dtype.name}: the "
                             f"features phi_k (largest |value| {np.abs(phi_k).max():.3g}) or the "
                             f"values are too large; rescale them or use float64. The state is unchanged.")
        self.S += dS  # in place: nothing stored earlier is touched again
        self.z += dz
        self.num_tokens += phi_k.shape[0]

    def _change_units(self, log_scale: np.ndarray) -> None:
        """Re-measure S and z in units exp(log_scale) [m] >= the current ones:
        S_r ← S_r · exp(old_r - new_r), 0 for a row that held no key (old unit -inf)."""
        factor = np.exp(self.log_scale - log_scale)  # [m], each <= 1
        self.S *= factor[:, None]
        self.z *= factor
        self.log_scale[...] = log_scale

    def read(self, phi_q: Any) -> np.ndarray:
        """o = φ(q)ᵀ S / (φ(q)ᵀ z + eps). phi_q [m] -> [d_v], or [n, m] -> [n, d_v]; log φ(q)
        with ``log_space`` (each query then divided by its largest term, which cancels)."""
        phi_q = _check_vector(phi_q, "phi_q", self.m, self.dtype)
        if self.log_space:
            phi_q = query_features(phi_q, self.log_scale)[0]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            numerator = phi_q @ self.S  # [..., d_v]
            denominator = np.asarray(phi_q @ self.z)[..., None] + self.dtype.type(self.eps)  # [..., 1]
            out = numerator / denominator
        if not np.isfinite(out).all():
            before = "before any update, " if self.num_tokens == 0 else ""
            raise ValueError(f"read gave NaN or inf: {before}the denominator φ(q)ᵀz + eps is "
                             f"{np.asarray(denominator).ravel()[:3]} (eps={self.eps}) or the product "
                             f"overflowed. Use eps > 0 and a positive feature map such as elu+1.")
        return out

    def step(self, phi_q: Any, phi_k: Any, v: Any) -> np.ndarray:
        """One decoding step for one token: update with (φ(k), v), then read φ(q) -> [d_v]."""
        for x, name in ((phi_q, "phi_q"), (phi_k, "phi_k"), (v, "v")):
            if np.ndim(x) != 1:
                raise ValueError(f"step takes one token: {name} must be 1-D; got shape {np.shape(x)}")
        self.update(phi_k, v)
        return self.read(phi_q)


def _check_initial_state(state: Any, m: int, d_v: int, dtype: np.dtype,
                         log_space: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(S [m, d_v], z [m], log_scale [m]) from a pair (S, z) or, with ``log_space``, also a
    triple (S, z, log_scale): finite float arrays; in log space re-measured as
    :func:`~lattn_edu.linear_attention` does (every row with a key holds z_r >= 1)."""
    lengths = (2, 3) if log_space else (2,)
    if not isinstance(state, (tuple, list)) or len(state) not in lengths:
        wanted = "a pair (S, z) or a triple (S, z, log_scale)" if log_space else "a pair (S, z)"
        got = type(state).__name__ + (f" of length {len(state)}" if isinstance(state, (tuple, list)) else "")
        raise TypeError(f"initial_state must be {wanted} with S [{m}, {d_v}] and z [{m}]; got {got}")
    names = ("initial_state S", "initial_state z", "initial_state log_scale")
    parts = []
    for x, name, shape in zip(state, names, ((m, d_v), (m,), (m,))):
        x = as_float_array(x, name)
        if tuple(x.shape) != shape:
            raise ValueError(f"{name} must have shape {list(shape)}; got {list(x.shape)}")
        check_finite(x, name)
        parts.append(np.asarray(x, dtype=dtype))
    if len(parts) == 2:
        parts.append(np.zeros(m, dtype=dtype))
    if not log_space:
        return parts[0], parts[1], parts[2]
    check_positive_state(parts[0], parts[1], "initial_state")
    # a row with no key yet has no unit (-inf) until an update brings one
    return stabilised_state(parts[0], parts[1], parts[2], np.full(m, -np.inf, dtype=dtype))


class SoftmaxKVCache:
    """The softmax decoder's cache: every past key [d] and value [d_v], read with a full softmax.

    Storage doubles when full (amortised O(1) appends), so per-token time measures the
    O(N) read, not copying. ``nbytes`` counts the tokens held, which grows with N.
    """

    def __init__(self, d: int, d_v: int, dtype: Any = np.float64, scale: float | None = None,
                 capacity: int = 1024) -> None:
        self.d = check_positive_int(d, "d")
        self.d_v = check_positive_int(d_v, "d_v")
        self.dtype = _check_dtype(dtype)
        self.scale = 1.0 / np.sqrt(d) if scale is None else check_nonnegative_float(scale, "scale")
        capacity = check_positive_int(capacity, "capacity")
        self._keys = np.empty((capacity, self.d), dtype=self.dtype)
        self._values = np.empty((capacity, self.d_v), dtype=self.dtype)
        self.num_tokens = 0

    def __repr__(self) -> str:
        return f"SoftmaxKVCache(d={self.d}, d_v={self.d_v}, num_tokens={self.num_tokens})"

    @property
    def keys(self) -> np.ndarray:
        """The cached keys, [N, d]."""
        return self._keys[: self.num_tokens]

    @property
    def values(self) -> np.ndarray:
        """The cached values, [N, d_v]."""
        return self._values[: self.num_tokens]

    @property
    def nbytes(self) -> int:
        """Bytes of the tokens held: N·(d + d_v)·itemsize, growing with N."""
        return self.num_tokens * (self.d + self.d_v) * self.dtype.itemsize

    def append(self, k: Any, v: Any) -> None:
        """Store one more key [d] and value [d_v]."""
        k = _check_vector(k, "k", self.d, self.dtype)
        v = _check_vector(v, "v", self.d_v, self.dtype)
        if k.ndim != 1 or v.ndim != 1:
            raise ValueError(f"append takes one token: k [d], v [d_v]; got {k.shape}, {v.shape}")
        if self.num_tokens == len(self._keys):
            self._keys = np.concatenate([self._keys, np.empty_like(self._keys)])
            self._values = np.concatenate([self._values, np.empty_like(self._values)])
        self._keys[self.num_tokens], self._values[self.num_tokens] = k, v
        self.num_tokens += 1

    def read(self, q: Any) -> np.ndarray:
        """o = softmax(K q · scale)ᵀ V over every cached token: q [d] -> [d_v]."""
        q = _check_vector(q, "q", self.d, self.dtype)
        if q.ndim != 1 or self.num_tokens == 0:
            raise ValueError("read needs one query q [d] and at least one cached token; got "
                             f"q {q.shape} with {self.num_tokens} tokens")
        logits = (self.keys @ q) * self.dtype.type(self.scale)  # [N]
        weights = np.exp(logits - logits.max())
        return (weights @ self.values) / weights.sum()

    def step(self, q: Any, k: Any, v: Any) -> np.ndarray:
        """One decoding step: append (k, v), then read q -> [d_v]."""
        self.append(k, v)
        return self.read(q)
