"""Decoding one token at a time: each mixer's cache and its step (chapter 15's decode times).

A softmax layer keeps every key and value (its KV cache grows by one of each per token), a
sliding-window layer the last W of them, a recurrent layer one fixed-size state. Each step
here is that layer's recurrent form written out in torch for a single token, on the mixer's
own projections and gates, so that stepping a trained model through a sequence gives the
logits of its parallel (chunkwise) forward pass; the lab times it. :func:`crossing_context`
reads two timed curves for the context at which one overtakes the other.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import torch
import torch.nn.functional as F

from ..feature_maps import resolve_feature_map
from ..recall.mixers import (MIXERS, DeltaNetMixer, LinearMixer, Mamba2Mixer, Mixer, SlidingWindowMixer,
                             SoftmaxMixer, mixer_class)

Cache = tuple[torch.Tensor, ...]
DECODABLE = (SoftmaxMixer, SlidingWindowMixer, LinearMixer, DeltaNetMixer, Mamba2Mixer)
LINEAR_EPS = 1e-6  # la.linear_attention's default, which LinearMixer uses


def check_decodable(layers: Iterable[str]) -> None:
    """A ValueError naming the first registered mixer in ``layers`` that has no decoding step here."""
    for name in layers:
        if not issubclass(mixer_class(name), DECODABLE):
            decodable = [known for known, cls in MIXERS.items() if issubclass(cls, DECODABLE)]
            raise ValueError(f"mixer {name!r} has no decoding step; the decodable mixers are "
                             f"{', '.join(decodable)}")


def start_cache(mixer: Mixer, batch: int) -> Cache:
    """The mixer's cache before the first token, for ``batch`` sequences."""
    heads, d_qk, d_v = mixer.num_heads, mixer.d_qk, mixer.d_head
    zeros = mixer.out.weight.new_zeros
    if isinstance(mixer, (SoftmaxMixer, SlidingWindowMixer)):
        return zeros(batch, heads, 0, d_qk), zeros(batch, heads, 0, d_v)  # no keys, no values yet
    if isinstance(mixer, LinearMixer):
        return zeros(batch, heads, mixer.m, d_v), zeros(batch, heads, 1, mixer.m)  # S, zᵀ
    return (zeros(batch, heads, d_qk, d_v),)  # S


def mixer_step(mixer: Mixer, x: torch.Tensor, cache: Cache) -> tuple[torch.Tensor, Cache]:
    """x [B, 1, d_model] (the normed input of one token) -> output [B, 1, d_model], new cache."""
    check_decodable([mixer.name])
    if isinstance(mixer, (SoftmaxMixer, SlidingWindowMixer)):
        return attention_step(mixer, x, cache)
    if isinstance(mixer, LinearMixer):
        return linear_step(mixer, x, cache)
    if isinstance(mixer, DeltaNetMixer):
        return delta_step(mixer, x, cache)
    return mamba2_step(mixer, x, cache)  # the last kind check_decodable lets through


def attention_step(mixer: Mixer, x: torch.Tensor, cache: Cache) -> tuple[torch.Tensor, Cache]:
    """Append the token's key and value (keep the last W in a window) and attend over them."""
    q, k, v = mixer.project(x)  # [B, H, 1, d_qk], [B, H, 1, d_qk], [B, H, 1, d_head]
    keys, values = torch.cat([cache[0], k], dim=-2), torch.cat([cache[1], v], dim=-2)  # [B, H, t, ·]
    if isinstance(mixer, SlidingWindowMixer):
        keys, values = keys[..., -mixer.window:, :], values[..., -mixer.window:, :]
    return mixer.merge(F.scaled_dot_product_attention(q, keys, values)), (keys, values)


def linear_step(mixer: LinearMixer, x: torch.Tensor, cache: Cache) -> tuple[torch.Tensor, Cache]:
    """S += φ(k) vᵀ, z += φ(k); o = φ(q)ᵀS / (φ(q)ᵀz + eps)."""
    q, k, v = mixer.project(x)
    feature_map = resolve_feature_map(mixer.feature_map)
    phi_q, phi_k = feature_map(q * mixer.scale), feature_map(k * mixer.scale)  # [B, H, 1, m]
    state = cache[0] + phi_k.transpose(-1, -2) @ v  # [B, H, m, d_head]
    normaliser = cache[1] + phi_k  # zᵀ  [B, H, 1, m]
    denominator = (phi_q * normaliser).sum(-1, keepdim=True) + LINEAR_EPS  # [B, H, 1, 1]
    return mixer.merge(phi_q @ state / denominator), (state, normaliser)


def decayed(state: torch.Tensor, log_decay: torch.Tensor) -> torch.Tensor:
    """Diag(exp g) S: g [B, H, 1] (one decay per head) or [B, H, 1, d_k] (per key channel)."""
    rows = log_decay[..., None] if log_decay.dim() == 3 else log_decay.transpose(-1, -2)  # [B, H, 1 | d_k, 1]
    return rows.exp() * state


def delta_step(mixer: DeltaNetMixer, x: torch.Tensor, cache: Cache) -> tuple[torch.Tensor, Cache]:
    """S = (I − β k kᵀ) Diag(α) S + β k vᵀ on unit q, k; o = Sᵀq / √d_k, RMS-normed per head."""
    q, k, v = mixer.project(x)
    q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    log_decay = mixer.log_decay(x)  # None, [B, H, 1] or [B, H, 1, d_qk]
    state = cache[0] if log_decay is None else decayed(cache[0], log_decay)  # [B, H, d_qk, d_head]
    error = v - k @ state  # v − Sᵀk  [B, H, 1, d_head]
    state = state + k.transpose(-1, -2) @ (mixer.step_sizes(x)[..., None] * error)
    read = mixer.d_qk ** -0.5 * q @ state  # [B, H, 1, d_head]
    return mixer.merge(mixer.norm(read)), (state,)


def mamba2_step(mixer: Mamba2Mixer, x: torch.Tensor, cache: Cache) -> tuple[torch.Tensor, Cache]:
    """S = α S + k vᵀ; o = Sᵀq / √d_k, RMS-normed per head."""
    q, k, v = mixer.project(x)
    state = decayed(cache[0], mixer.decay(x)) + k.transpose(-1, -2) @ v  # [B, H, d_qk, d_head]
    read = mixer.d_qk ** -0.5 * q @ state
    return mixer.merge(mixer.norm(read)), (state,)


def crossing_context(contexts, rising, flat) -> float:
    """The context at which ``rising``'s time first exceeds ``flat``'s, by linear interpolation.

    ``contexts`` are the cached lengths timed, strictly increasing; ``rising`` and ``flat`` the
    times measured there (any one unit). The crossing lies in the first interval whose gap
    ``rising − flat`` goes from <= 0 at its start to > 0 at its end; between the two timed
    contexts the gap is taken to be a straight line. Raises ValueError when no interval does
    (``rising`` is never above ``flat``, or is above it from the first context on, so the
    crossing is not inside the timed range).
    """
    n, first, second = (np.asarray(x, dtype=np.float64) for x in (contexts, rising, flat))
    for name, values in (("contexts", n), ("rising", first), ("flat", second)):
        if values.ndim != 1 or values.size < 2 or not np.isfinite(values).all():
            raise ValueError(f"{name} must be a 1-D sequence of at least two finite numbers; "
                             f"got shape {list(values.shape)}")
    if not first.size == second.size == n.size:
        raise ValueError(f"contexts, rising and flat must have one entry per context; got "
                         f"{n.size}, {first.size} and {second.size}")
    if not (np.diff(n) > 0).all():
        raise ValueError(f"contexts must be strictly increasing; got {n.tolist()}")
    gap = first - second  # [C]
    for i in range(n.size - 1):
        if gap[i] <= 0 < gap[i + 1]:
            return float(n[i] + (n[i + 1] - n[i]) * -gap[i] / (gap[i + 1] - gap[i]))
    raise ValueError("rising never goes from at or below flat to above it inside the timed "
                     f"contexts {n.tolist()}: the crossing is not in the measured range")
