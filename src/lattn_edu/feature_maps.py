"""Kernel feature maps φ: R^d -> R^m (chapters 2 and 6).

Linear attention replaces the softmax weight exp(q·k) by a kernel that factorises,
sim(q, k) = φ(q)·φ(k). Every map here works on numpy arrays and on torch tensors
(same function, the array's own namespace), so all backends share one definition.

A map with positive features may also offer ``log_features(x) = log φ(x)``. Linear
attention then never forms φ itself but asks the map for its stabilised features
(:func:`stabilised`; FAVOR+ owns them, see :mod:`lattn_edu.random_features`), which stay in
floating-point range however large the norms and whose every denominator is at least 1, so
the guard eps, one float, cannot move the answer.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ._checks import array_namespace, as_float_array, check_finite, check_positive_int, is_torch_tensor
from .random_features import (DECAY_FREE_SPAN, FavorPlus, StabilisedFeatures,  # noqa: F401  (re-exported)
                              TrigonometricFeatures, guarded_features, key_units, query_features, stabilise,
                              stabilised_features, stabilised_state)


def elu_plus_one(x: Any) -> Any:
    """φ(x) = elu(x) + 1, elementwise: x + 1 for x > 0, exp(x) otherwise.

    Katharopoulos et al. (2020): m = d, cheap, and positive (strictly, until exp(x)
    underflows to 0 below x ≈ -745 in float64, -104 in float32).
    """
    x = as_float_array(x, "x")
    xp = array_namespace(x)
    # exp of the clipped value: exp(x) on the positive side would overflow for large x.
    return xp.where(x > 0, x + 1, xp.exp(xp.clip(x, None, 0)))


def relu_feature_map(x: Any) -> Any:
    """φ(x) = max(x, 0): non-negative, but a whole row can be zero (denominator 0 + eps)."""
    x = as_float_array(x, "x")
    return array_namespace(x).clip(x, 0, None)


def identity_feature_map(x: Any) -> Any:
    """φ(x) = x: the map that breaks the rules. Weights φ(q)·φ(k) can be negative,
    so the denominator can vanish or change sign (chapter 2 shows what goes wrong)."""
    return as_float_array(x, "x")


def taylor_features(x: Any) -> Any:
    """φ(x) = [1, x, x_i x_j for i < j, x_i²/√2], [..., N, t] -> [..., N, 1 + t + t(t+1)/2].

    φ(q)·φ(k) = 1 + q·k + (q·k)²/2, the Taylor expansion of exp(q·k) to second order
    (the map of Based: Arora et al. 2024, "Simple linear attention language models balance
    the recall-throughput tradeoff"): positive for every q, k (it is ((q·k + 1)² + 1)/2),
    and sharper than elu+1. Each unordered pair i, j appears once (weight 1 for i < j,
    1/√2 on the diagonal), which gives the same kernel as the full outer product with
    about half the width. The width grows as t²/2, so it is meant for small t.
    """
    x = as_float_array(x, "x")
    if x.ndim < 1:
        raise ValueError(f"x must have shape [..., t]; got a scalar of shape {tuple(x.shape)}")
    xp = array_namespace(x)
    rows, cols = np.triu_indices(x.shape[-1])  # i <= j  [t(t+1)/2] each
    diagonal = rows == cols
    if is_torch_tensor(x):
        rows, cols = (xp.as_tensor(i, device=x.device) for i in (rows, cols))
        diagonal = xp.as_tensor(diagonal, dtype=x.dtype, device=x.device)
    else:
        diagonal = diagonal.astype(x.dtype)
    weights = 1 - (1 - 2 ** -0.5) * diagonal  # [t(t+1)/2], in x's precision
    products = x[..., rows] * x[..., cols] * weights  # [..., N, t(t+1)/2]
    return xp.concatenate([xp.ones_like(x[..., :1]), x, products], -1)


def taylor_width(t: int) -> int:
    """The width m = 1 + t + t(t+1)/2 of :func:`taylor_features` on t inputs."""
    t = check_positive_int(t, "t")
    return 1 + t + t * (t + 1) // 2


FEATURE_MAPS: dict[str, Callable[[Any], Any]] = {
    "elu+1": elu_plus_one,
    "relu": relu_feature_map,
    "identity": identity_feature_map,
}


def exp_kernel(q: Any, k: Any) -> Any:
    """The exact softmax kernel exp(q_i·k_j), materialised: [..., N_q, d], [..., N, d] -> [..., N_q, N]."""
    q, k = as_float_array(q, "q"), as_float_array(k, "k")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"k must have the same d as q ({q.shape[-1]}); got shape {tuple(k.shape)}")
    return array_namespace(q).exp(q @ k.swapaxes(-1, -2))




def resolve_feature_map(feature_map: Any) -> Callable[[Any], Any]:
    """The callable behind a name ('elu+1', 'relu', 'identity') or a callable itself."""
    if isinstance(feature_map, str):
        if feature_map not in FEATURE_MAPS:
            raise ValueError(f"feature_map must be one of {', '.join(map(repr, FEATURE_MAPS))} "
                             f"or a callable on [..., N, d]; got {feature_map!r}")
        return FEATURE_MAPS[feature_map]
    if not callable(feature_map):
        raise TypeError("feature_map must be a name "
                        f"({', '.join(map(repr, FEATURE_MAPS))}) or a callable; "
                        f"got {type(feature_map).__name__}")
    return feature_map


def apply_feature_maps(feature_map: Any, q: Any, k: Any, rescale: bool = True, eps: float = 0.0,
                       causal: bool = False) -> tuple[Any, Any, Any]:
    """(φ(q), φ(k), guard): the features, checked, and the eps to add to each denominator.

    A map in log space (and ``rescale``) gives them in stable units, with the guard measured
    per query as linear attention measures it (:func:`~lattn_edu.random_features.guarded_features`;
    FAVOR+ computes them itself). Otherwise the guard is eps itself. ``rescale=False`` gives
    the map's own features.

    The features must keep q's and k's leading axes and length, share a width m, and be
    finite: a callable that breaks this gets a ``ValueError`` naming it.
    """
    if rescale and has_log_features(feature_map):
        phi = resolve_feature_map(feature_map)
        if hasattr(phi, "guarded_features"):
            return phi.guarded_features(q, k, causal, eps)
        return guarded_features(*checked_features(feature_map, q, k, log=True), causal, eps)
    return (*checked_features(feature_map, q, k), eps)


def stabilised(feature_map: Any, q: Any, k: Any, causal: bool,
               read_state: Callable[[Any], tuple[Any, Any, Any]] | None = None) -> tuple[StabilisedFeatures, Any]:
    """A map in log space's features in stable units and a carried state in them: the map's own
    ``stabilised`` (FAVOR+), or :func:`~lattn_edu.random_features.stabilise` on its checked
    ``log_features`` for a map that offers only those."""
    phi = resolve_feature_map(feature_map)
    if hasattr(phi, "stabilised"):
        return phi.stabilised(q, k, causal, read_state)
    log_q, log_k = checked_features(feature_map, q, k, log=True)  # [..., N_q, m], [..., N, m]
    return stabilise(log_q, log_k, causal, read_state)


def has_log_features(feature_map: Any) -> bool:
    """Whether the map gives its (positive) features in log space, so they can be stabilised."""
    return hasattr(resolve_feature_map(feature_map), "log_features")


def checked_features(feature_map: Any, q: Any, k: Any, log: bool = False) -> tuple[Any, Any]:
    """(φ(q), φ(k)), or (log φ(q), log φ(k)) with ``log``, after checking the map's output.

    The features must keep q's and k's leading axes and length, share a width m, and be
    finite: a callable that breaks this gets a ``ValueError`` naming it.
    """
    phi = resolve_feature_map(feature_map)
    name = "feature_map.log_features" if log else "feature_map"
    apply = phi.log_features if log else phi
    phi_q, phi_k = apply(q), apply(k)
    for feats, x, role in ((phi_q, q, "q"), (phi_k, k, "k")):
        if (not hasattr(feats, "shape") or feats.ndim != x.ndim
                or tuple(feats.shape[:-1]) != tuple(x.shape[:-1])):
            got = tuple(feats.shape) if hasattr(feats, "shape") else type(feats).__name__
            raise ValueError(f"{name} must map {role} of shape {tuple(x.shape)} to "
                             f"[{', '.join(map(str, x.shape[:-1]))}, m]; got {got}")
        if is_torch_tensor(feats) != is_torch_tensor(x) or str(feats.dtype) != str(x.dtype):
            raise TypeError(f"{name} must return the same array type and dtype as its input "
                            f"({type(x).__name__}, {x.dtype}); got {type(feats).__name__}, {feats.dtype}")
        check_finite(feats, f"{name}({role})")
    if phi_q.shape[-1] != phi_k.shape[-1]:
        raise ValueError(f"{name} must give q and k the same width m; got "
                         f"{phi_q.shape[-1]} and {phi_k.shape[-1]}")
    return phi_q, phi_k
