"""Random-feature maps and the stable units of positive ones (chapters 6 and 7).

- :class:`FavorPlus`: Performer's positive random features, which also give their log,
  ``log_features``; and :class:`TrigonometricFeatures`, the random Fourier features before them.
- The stabilisation a map in log space owns: :func:`stabilise` measures every feature of the
  keys in a unit of its own and divides each query by its largest term, so the features stay
  in floating-point range however large the norms (FAVOR+'s exp(w·x - ||x||²/2) under- and
  overflows long before the ratio does) and every denominator of linear attention is at
  least 1: a scalar eps then cannot move the answer, and no kernel needs a guard per query.
  :meth:`FavorPlus.stabilised` is how :func:`lattn_edu.linear_attention` asks for them, and
  :meth:`FavorPlus.guarded_features` gives the materialised weights' features with the guard
  measured per query (:func:`lattn_edu.effective_attention_matrix`).

Re-exported by :mod:`lattn_edu.feature_maps`, so ``la.FavorPlus`` and
``la.feature_maps.stabilised_features`` keep their names.
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

import numpy as np

from ._checks import (array_namespace, as_float_array, check_finite, check_positive_int, check_positive_state,
                      dtype_name, extreme, is_torch_tensor)


def _max_over(x: Any, axes: tuple[int, ...]) -> Any:
    """Maximum over ``axes``, keeping them, for numpy arrays and torch tensors."""
    if is_torch_tensor(x):
        return x.amax(dim=axes, keepdim=True)
    return x.max(axis=axes, keepdims=True)


class StabilisedFeatures(NamedTuple):
    """Features of a positive map in units that keep them in range (see :func:`stabilised_features`)."""

    # φ(q_i)_r · w_r / c_i  [..., N_q, m], w the keys' units (u_i, or the final unit when no
    # decay is needed, which can exceed u_i): in [0, 1] when w = u_i, 1 at the largest term
    phi_q: Any
    phi_k: Any  # φ(k_j)_r / u_jr  [..., N, m], in (0, 1]
    log_decay: Any  # log(u_{j-1,r} / u_jr) <= 0 [..., N, m] (causal), or None: the state's change of units
    log_scale: Any  # log u_r after the last key  [..., m]: the units of the state handed on
    query_shift: Any  # log c_i  [..., N_q, 1]


def _running_max(x: Any) -> Any:
    """max over positions 0..j along axis -2 for every j, numpy or torch."""
    if is_torch_tensor(x):
        return x.cummax(dim=-2).values
    return np.maximum.accumulate(x, axis=-2)


# The widest gap between the unit of one key and the units of earlier keys (log of the ratio)
# that one fixed unit per feature can span: query features then stay below exp(span) and the
# largest key feature a query sees above exp(-span), far inside the dtype's range.
DECAY_FREE_SPAN = {"float32": 40.0, "float64": 400.0}


def stabilised_features(log_q: Any, log_k: Any, causal: bool, log_scale: Any = None) -> StabilisedFeatures:
    """Positive features rescaled so linear attention stays finite and eps cannot move it.

    From log φ(q) [..., N_q, m] and log φ(k) [..., N, m]: each feature r of the keys is
    measured in a unit u_r, the largest φ(k)_r among the keys the state holds (all keys;
    or, causal, keys 0..j, a running maximum, so that u never depends on a later key), and
    the query takes the unit back, φ(q_i)_r·u_r, so that Σ_r φ(q_i)_r φ(k_j)_r is unchanged.
    Then each query is divided by its own largest term c_i = max_r φ(q_i)_r u_r, which
    multiplies its numerator and denominator alike and cancels in the ratio. Every key
    feature is <= 1, every query feature <= 1 with one exactly 1, and the key with the
    largest feature r contributes 1 to z_r: each rescaled denominator is at least 1, so a
    guard eps changes the output by at most eps relative, and no denominator underflows.

    When u grows at key j the state held so far must be re-measured in the new unit,
    S ← (u_{j-1}/u_j) ⊙ S: a per-feature decay, which ``log_decay`` carries (causal only;
    the gated recurrence applies it). Where the units grow by less than ``DECAY_FREE_SPAN``
    over the sequence, the keys keep the final unit instead and the queries take it back
    (their c_i still from the running units): the same numbers, computed without decay, as
    plain linear attention. ``log_scale`` [..., m] is the unit of a state carried in (None:
    none; see :func:`stabilised_state`), and the result's ``log_scale`` the unit of the
    state after the last key; without decay a carried state must be re-measured in it.
    """
    xp = array_namespace(log_k)
    units = key_units(log_k, causal, log_scale)  # log u  [..., N | 1, m]
    final = units[..., -1:, :]  # the unit after the last key  [..., 1, m]
    log_decay = None
    if causal and extreme(final - units, "max") > DECAY_FREE_SPAN[dtype_name(log_k)]:
        before = units[..., :1, :] if log_scale is None else log_scale[..., None, :]  # [..., 1, m]
        log_decay = xp.concatenate([before, units[..., :-1, :]], -2) - units  # [..., N, m]
        key_unit = units
    else:
        key_unit = final
    phi_q, query_shift = query_features(log_q, units, key_unit)
    return StabilisedFeatures(phi_q, xp.exp(log_k - key_unit), log_decay, final[..., 0, :], query_shift)


def key_units(log_k: Any, causal: bool, log_scale: Any = None) -> Any:
    """log u: per feature, the largest log φ(k)_r so far (causal, [..., N, m]) or over all keys
    ([..., 1, m]), and never below a carried state's unit ``log_scale`` [..., m]."""
    units = _running_max(log_k) if causal else _max_over(log_k, (-2,))
    if log_scale is None:
        return units
    return array_namespace(log_k).maximum(units, log_scale[..., None, :])


def query_features(log_q: Any, units: Any, key_unit: Any = None) -> tuple[Any, Any]:
    """(φ(q_i)_r w_r / c_i, log c_i) with c_i = max_r φ(q_i)_r u_r: the query features for keys
    measured in units w (``key_unit``, default ``units`` u), each row divided by its largest
    term against the units u it can see ([..., N_q, m] and [..., N_q, 1])."""
    reach = log_q + units  # log φ(q_i)_r u_r  [..., N_q, m]
    shift = _max_over(reach, (-1,))
    if key_unit is not None:
        reach = log_q + key_unit
    return array_namespace(reach).exp(reach - shift), shift


def stabilised_state(s: Any, z: Any, log_scale: Any, empty_units: Any) -> tuple[Any, Any, Any]:
    """A state exp(log_scale)·(S, z) [..., m, d_v], [..., m] re-measured so every row with a key
    in it holds z_r >= 1: (S', z', log_scale'), the same state.

    A row with z_r < 1 is divided by z_r and its unit multiplied by z_r; rows with z_r >= 1
    (every row of a state built from :func:`stabilised_features`) pass unchanged, so a state
    carried across a split is measured exactly as in one call. A row with z_r = 0 holds no
    key; it takes the unit ``empty_units`` [..., m] (the next key's features), so the
    running maximum starts there as it would without a state.
    """
    xp = array_namespace(z)
    empty = z == 0  # [..., m]
    factor = xp.where(empty | (z >= 1), xp.ones_like(z), z)  # [..., m]
    units = xp.where(empty, empty_units, log_scale + xp.log(factor))
    return s / factor[..., None], z / factor, units

def stabilise(log_q: Any, log_k: Any, causal: bool,
              read_state: Callable[[Any], tuple[Any, Any, Any]] | None = None) -> tuple[StabilisedFeatures, Any]:
    """(:func:`stabilised_features`, the carried state [S | z] [..., m, d_v + 1] in their units or None).

    ``read_state(log_k)`` returns a caller's checked state (S [..., m, d_v], z [..., m],
    log_scale [..., m] or None for the map's own units); it is re-measured by
    :func:`stabilised_state`, its rows with no key taking the first key's units.
    """
    if read_state is None:
        return stabilised_features(log_q, log_k, causal), None
    s, z, log_scale = read_state(log_k)
    xp = array_namespace(z)
    check_positive_state(s, z, "initial_state")
    log_scale = xp.zeros_like(z) if log_scale is None else log_scale
    s, z, start_scale = stabilised_state(s, z, log_scale, log_k[..., 0, :])
    features = stabilised_features(log_q, log_k, causal, start_scale)
    start = xp.concatenate([s, z[..., None]], -1)  # [S | z] in units start_scale
    if features.log_decay is None:  # into the one unit all keys share
        start = start * xp.exp(start_scale - features.log_scale)[..., None]
    return features, start


def guarded_features(log_q: Any, log_k: Any, causal: bool, eps: float) -> tuple[Any, Any, Any]:
    """(φ(q), φ(k), guard) in the units of :func:`stabilised_features` for the whole sequence
    (one unit per feature, each query divided by its largest term), which leave every weight
    φ(q_i)·φ(k_j) of a row multiplied by one constant: the features of materialised weights.
    The guard measures eps against what query i can see, as linear attention does: eps for a
    full layer, and for a causal one eps·c_i(visible)/c_i(all) <= eps [..., N_q, 1], the ratio
    of query i's scale over keys 0..i to its scale over all keys."""
    whole = stabilised_features(log_q, log_k, causal=False)
    guard: Any = eps
    if causal and eps > 0:
        visible = stabilised_features(log_q, log_k, causal=True).query_shift  # [..., N, 1]
        guard = eps * array_namespace(log_q).exp(visible - whole.query_shift)
    return whole.phi_q, whole.phi_k, guard


def _gaussian_projection(d: int, m: int, orthogonal: bool, rng: np.random.Generator) -> np.ndarray:
    """Random directions w_r ~ N(0, I_d), [m, d]; orthogonal within blocks of d rows.

    Orthogonal rows keep each row's marginal N(0, I_d) (uniform directions, norms drawn
    from the chi distribution), so the estimator stays unbiased while its variance drops.
    """
    if not orthogonal:
        return rng.standard_normal((m, d))
    count = -(-m // d)  # blocks of d rows, the last one cut to what m needs
    # one stacked QR: the same draws and factors as one QR per block, without a Python loop
    q_mats, r_mats = np.linalg.qr(rng.standard_normal((count, d, d)))  # [B, d, d] each
    # QR fixes the signs of diag(R) to be negative here, which skews the directions;
    # flipping columns to make diag(R) positive makes Q uniformly (Haar) distributed.
    q_mats = q_mats * np.sign(np.diagonal(r_mats, axis1=-2, axis2=-1))[:, None, :]
    directions = q_mats.swapaxes(-1, -2).reshape(count * d, d)[:m]  # [m, d] unit rows
    norms = np.linalg.norm(rng.standard_normal((m, d)), axis=1)  # chi_d samples
    return directions * norms[:, None]


class _RandomFeatures:
    """Shared parts of the random-feature maps: the projection and input checks."""

    features_per_projection = 1  # output features per row w_r of the projection

    def __init__(self, d: int, num_projections: int, orthogonal: bool, seed: int) -> None:
        d = check_positive_int(d, "d")
        check_positive_int(num_projections, "m")
        if not isinstance(orthogonal, (bool, np.bool_)):
            raise TypeError(f"orthogonal must be True or False; got {orthogonal!r}")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"seed must be an int >= 0; got {type(seed).__name__} {seed!r}")
        if seed < 0:
            raise ValueError(f"seed must be an int >= 0; got {seed}")
        rng = np.random.default_rng(int(seed))
        self._adopt(_gaussian_projection(d, num_projections, bool(orthogonal), rng), bool(orthogonal), int(seed))

    def _adopt(self, projection: np.ndarray, orthogonal: bool | None, seed: int | None) -> None:
        """Set the projection [num_projections, d] and what follows from it."""
        self.projection = projection
        self.d = projection.shape[1]
        self.m = self.features_per_projection * projection.shape[0]
        self.orthogonal, self.seed = orthogonal, seed

    @classmethod
    def from_projection(cls, projection: Any) -> _RandomFeatures:
        """The map with the given directions W [num_projections, d] instead of a seeded draw.

        ``m`` is ``features_per_projection`` times the rows of W. The estimator is unbiased
        when the rows are distributed as the constructor draws them: e.g. the first rows of
        a larger draw, which for orthogonal directions are whole blocks of d and one cut
        block, each row with its own chi-distributed norm. ``orthogonal`` and ``seed`` are
        then None (the map does not know how W was drawn).

        Parameters
        ----------
        projection : array [num_projections, d]
            Finite float directions; kept as given (not copied), so it must not change.

        Returns
        -------
        The map (of this class) with ``projection`` as its directions, d = its columns.
        """
        if is_torch_tensor(projection):  # the maps convert it to each input's type themselves
            raise TypeError("projection must be a numpy array; got a torch tensor")
        projection = as_float_array(projection, "projection")
        if projection.ndim != 2 or 0 in projection.shape:
            raise ValueError("projection must have shape [num_projections, d], both at least 1; "
                             f"got {tuple(projection.shape)}")
        check_finite(projection, "projection")
        features = cls.__new__(cls)
        features._adopt(projection, None, None)
        return features

    def _project(self, x: Any) -> tuple[Any, Any, Any]:
        """Check x [..., N, d]; return (xp, x, W x) with W x of shape [..., N, num_projections]."""
        x = as_float_array(x, "x")
        if x.ndim < 1 or x.shape[-1] != self.d:
            raise ValueError(f"x must have shape [..., {self.d}] (d={self.d}); got {tuple(x.shape)}")
        check_finite(x, "x")
        xp = array_namespace(x)
        if is_torch_tensor(x):
            w = xp.as_tensor(self.projection, dtype=x.dtype, device=x.device)
        else:
            w = self.projection.astype(x.dtype, copy=False)
        return xp, x, x @ w.T


class FavorPlus(_RandomFeatures):
    """Performer's positive random features (FAVOR+, Choromanski et al. 2021).

    φ(x)_r = exp(w_r·x - ||x||²/2) / √m, with E[φ(q)·φ(k)] = exp(q·k) exactly.
    To approximate softmax(q·k/√d), feed q and k scaled by d**-0.25.

    Parameters
    ----------
    d : int
        Input width.
    m : int
        Number of random features (output width).
    orthogonal : bool
        Draw the directions w_r orthogonal within blocks of d (lower variance).
    seed : int
        Seed of the projection; the same seed gives the same features.

    Calling the object on x [..., N, d] returns φ(x) [..., N, m].
    """

    def __init__(self, d: int, m: int, orthogonal: bool = True, seed: int = 0) -> None:
        super().__init__(d, m, orthogonal, seed)

    def __repr__(self) -> str:
        return f"FavorPlus(d={self.d}, m={self.m}, orthogonal={self.orthogonal}, seed={self.seed})"

    def log_features(self, x: Any) -> Any:
        """log φ(x) = w·x - ||x||²/2 - ½ log m, [..., N, m]: finite for any finite x."""
        xp, x, wx = self._project(x)
        # a Python float, not a numpy scalar: numpy 2 would promote float32 arrays to float64.
        return wx - 0.5 * (x * x).sum(-1, keepdims=True) - 0.5 * math.log(self.m)

    def __call__(self, x: Any) -> Any:
        """φ(x) [..., N, m], the exact (unscaled) features."""
        return array_namespace(x).exp(self.log_features(x))

    def stabilised(self, q: Any, k: Any, causal: bool,
                   read_state: Callable[[Any], tuple[Any, Any, Any]] | None = None) -> tuple[StabilisedFeatures, Any]:
        """The features linear attention computes with, in stable units, and a carried state
        re-measured into them: see :func:`stabilise`. Every path of
        :func:`lattn_edu.linear_attention` asks for these, so none can skip the rescaling."""
        return stabilise(self.log_features(q), self.log_features(k), causal, read_state)

    def guarded_features(self, q: Any, k: Any, causal: bool = False, eps: float = 0.0) -> tuple[Any, Any, Any]:
        """(φ(q), φ(k), guard) for materialised weights: see :func:`guarded_features`."""
        return guarded_features(self.log_features(q), self.log_features(k), causal, eps)

    def rescaled_features(self, q: Any, k: Any) -> tuple[Any, Any, Any]:
        """(φ(q)/c_q, φ(k)/c_k, log(c_q·c_k)) with c_q the largest feature of each query row
        and c_k the largest key feature of each sequence: every rescaled feature is <= 1 and
        the largest is exactly 1, so nothing overflows or vanishes. The log scale
        [..., N_q, 1] says how far the features were moved; linear attention's output does
        not depend on it (a constant factor cancels between numerator and denominator)."""
        log_q, log_k = self.log_features(q), self.log_features(k)  # [..., N_q, m], [..., N, m]
        if log_k.ndim < 2:
            raise ValueError(f"k must have shape [..., N, {self.d}]; got {tuple(k.shape)}")
        shift_q = _max_over(log_q, (-1,))  # log c_q  [..., N_q, 1]
        shift_k = _max_over(log_k, (-2, -1))  # log c_k  [..., 1, 1]
        xp = array_namespace(log_q)
        return xp.exp(log_q - shift_q), xp.exp(log_k - shift_k), shift_q + shift_k


class TrigonometricFeatures(_RandomFeatures):
    """Random Fourier features for the softmax kernel (the pre-Performer estimator).

    φ(x) = exp(||x||²/2) / √(m/2) · [cos(W x), sin(W x)] with m/2 projections, so
    E[φ(q)·φ(k)] = exp(q·k) too; but features and weights can be negative, and the
    variance explodes where exp(q·k) is small (chapter 6 compares it with FAVOR+).

    ``m`` is the output width and must be even.
    """

    features_per_projection = 2  # cos(w_r·x) and sin(w_r·x)

    def __init__(self, d: int, m: int, orthogonal: bool = False, seed: int = 0) -> None:
        check_positive_int(m, "m")
        if m % 2:
            raise ValueError(f"m must be even for trigonometric features (cos and sin halves); got {m}")
        super().__init__(d, m // 2, orthogonal, seed)

    def __repr__(self) -> str:
        return (f"TrigonometricFeatures(d={self.d}, m={self.m}, "
                f"orthogonal={self.orthogonal}, seed={self.seed})")

    def __call__(self, x: Any) -> Any:
        xp, x, wx = self._project(x)
        scale = xp.exp(0.5 * (x * x).sum(-1, keepdims=True)) / math.sqrt(self.m / 2)
        return scale * xp.concatenate([xp.cos(wx), xp.sin(wx)], -1)
