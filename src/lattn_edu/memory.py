"""The state as a key–value memory: write P pairs, read them back, measure what is lost (chapters 10, 14).

Three write rules fill an [m, d_v] state S from unit keys K [P, m] and values V [P, d_v]:

- additive:    S ← S + k_j v_jᵀ                                  (linear attention, fast weights)
- delta:       S ← S + β k_j (v_j − Sᵀk_j)ᵀ                       (DeltaNet)
- gated delta: S ← a S, then the delta step                      (Gated DeltaNet, a = exp(g))

and chapter 14 adds two learners (:data:`LEARNER_RULES`), whose state is read through its own model:

- least squares: H ← H + k_j k_jᵀ, G ← G + k_j v_jᵀ; read Gᵀ(H + λI)⁻¹k  (MesaNet, recursive least squares)
- ttt:           (W, b) of f(x) = LN(x W + b), trained by mini-batch gradient descent on
                 ½‖f(k_j) − (v_j − k_j)‖²; read k + LN(k W + b)                     (TTT-Linear)

The rules run through :func:`lattn_edu.gated_linear_attention` and :func:`lattn_edu.delta_rule`;
this module only builds the keys, reads the state with every key and measures the error.
For the additive rule the read splits exactly into signal and crosstalk,

    Sᵀk_i = v_i (k_i·k_i) + Σ_{j≠i} (k_j·k_i) v_j,

so it is exact for orthogonal keys and P <= m, and the crosstalk grows once P > m: the state
has rank at most m, chapter 7's cap seen as a memory. Left out on purpose: learned keys and
multiple passes over the pairs (that is training, the recall lab's job).

The learners run through :func:`lattn_edu.least_squares_attention` and :func:`lattn_edu.ttt_linear`.
Least squares keeps its two sums and reads with the package's own read, the keys as queries at
β = 0 (no write); it is exact, up to the ridge, while the P <= m keys are linearly independent,
and past m it is the best any linear map can do (the least total squared error). Writing its map
(H + λI)⁻¹G out through m unit queries would cost digits: a unit query outside the keys' span
picks up a component of size 1/λ (at λ = 1e-12, P = 8 to 24 and m = 32, the map read 1e-4 off
where the direct read is 3e-11 off).

TTT's "stored map" is its inner model. The layer's own output, z + LN(z) with z = qW + b, is
not what the inner loss fits (k + LN(kW + b) ≈ v: the residual adds k, not z), and W alone
means little (the layer norm ignores its scale), so the memory reads through the inner model
with its residual, k + LN(kW + b). Three things keep this from being a good memory of unit
pairs, whatever the step size: the layer norm returns a vector of fixed length with mean 0
(0.25 off on average at m = 32 even for one pair); the bias b takes every gradient with the
weight 1 = ‖k‖², so every pair written lands on every read like a fully correlated key; and
from W = 0 the first mini-batch reads z = 0, where the layer norm's gradient is scaled by
1/√eps = 1000, so its weights come out so long that the later gradients, scaled by 1/σ(z),
barely turn them (and the step size drops out: LN is scale-invariant).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._checks import check_positive_int
from .delta import delta_rule
from .gated import gated_linear_attention
from .least_squares import least_squares_attention
from .test_time import layer_norm, ttt_linear

RULES = ("additive", "delta", "gated delta")  # chapter 10's: one [m, d_v] map S, read as Sᵀk
LEARNER_RULES = ("least squares", "ttt")  # chapter 14's: a state read through its own model
KEY_KINDS = ("orthogonal", "random")
LEAST_SQUARES_RIDGE = 1e-12  # λ: the read is off by about λ / σ_min(K)², 3e-9 at P = m = 32
TTT_MINI_BATCH = 16  # b: TTT's and la.ttt_linear's default
TTT_EPS = 1e-6  # the layer norm's eps, la.ttt_linear's default


class LeastSquaresMemory(NamedTuple):
    """MesaNet's state after the writes and its ridge: H = Σ k kᵀ [m, m], G = Σ k vᵀ [m, d_v], λ."""

    h: np.ndarray
    g: np.ndarray
    ridge: float

    def read(self, keys: np.ndarray) -> np.ndarray:
        """Gᵀ(H + λI)⁻¹k_i for every key, by la.least_squares_attention's own read: [P, d_v]."""
        p, d_v = len(keys), self.g.shape[1]
        # the keys as queries with β = 0: every step reads the sums and writes nothing
        return least_squares_attention(keys, keys, np.zeros((p, d_v)), np.zeros(p), ridge=self.ridge,
                                       scale=1.0, initial_state=(self.h, self.g))


class InnerModel(NamedTuple):
    """TTT's state: f(x) = LN(x W + b), W [m, m], b [1, m], with its layer norm's weight and bias [m]."""

    w: np.ndarray
    b: np.ndarray
    ln_weight: np.ndarray
    ln_bias: np.ndarray

    def read(self, keys: np.ndarray) -> np.ndarray:
        """k_i + f(k_i) for every key, the residual model the inner loss fits to v_i: [P, m]."""
        return keys + layer_norm(keys @ self.w + self.b, self.ln_weight, self.ln_bias, TTT_EPS)


Memory = np.ndarray | LeastSquaresMemory | InnerModel  # what write_memory returns, read_memory reads


def _check_fraction(value: float, name: str, low: float, high: float, closed_high: bool) -> float:
    inside = low <= value <= high if closed_high else low <= value < high
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) or not inside:
        bracket = "]" if closed_high else ")"
        raise ValueError(f"{name} must be a number in [{low}, {high}{bracket}; got {value!r}")
    return float(value)


def make_keys(p: int, m: int, kind: str = "random", correlation: float = 0.0,
              seed: int = 0) -> np.ndarray:
    """P unit-norm keys in R^m: [P, m].

    kind 'orthogonal': blocks of m rows, each block a random orthonormal basis (keys in one
    block are exactly orthogonal; with P <= m all of them are). kind 'random': Gaussian
    directions. ``correlation`` ρ in [0, 1) mixes in one shared direction c before
    normalising, k_j ∝ √ρ c + √(1−ρ) b_j, so that the cosine of two keys is about ρ.
    """
    p, m = check_positive_int(p, "p"), check_positive_int(m, "m")
    if kind not in KEY_KINDS:
        raise ValueError(f"kind must be one of {', '.join(map(repr, KEY_KINDS))}; got {kind!r}")
    correlation = _check_fraction(correlation, "correlation", 0.0, 1.0, closed_high=False)
    rng = np.random.default_rng(seed)
    if kind == "orthogonal":
        blocks = [np.linalg.qr(rng.standard_normal((m, m)))[0] for _ in range(-(-p // m))]
        base = np.concatenate(blocks)[:p]  # [P, m], rows orthonormal within each block
    else:
        base = rng.standard_normal((p, m))
        base /= np.linalg.norm(base, axis=1, keepdims=True)
    shared = rng.standard_normal(m)
    keys = np.sqrt(correlation) * shared / np.linalg.norm(shared) + np.sqrt(1 - correlation) * base
    return keys / np.linalg.norm(keys, axis=1, keepdims=True)


def make_values(p: int, d_v: int, seed: int = 0) -> np.ndarray:
    """P random unit-norm values: [P, d_v]."""
    values = np.random.default_rng(seed).standard_normal((check_positive_int(p, "p"), check_positive_int(d_v, "d_v")))
    return values / np.linalg.norm(values, axis=1, keepdims=True)


def write_memory(keys: np.ndarray, values: np.ndarray, rule: str = "additive", beta: float = 1.0,
                 decay: float = 1.0, *, ridge: float = LEAST_SQUARES_RIDGE,
                 mini_batch_size: int = TTT_MINI_BATCH) -> Memory:
    """Write the pairs in order, starting from an empty state, and return the state.

    keys [P, m], values [P, d_v]; ``beta`` in [0, 2] is the delta rule's step (TTT's learning
    rate, η_t = β / position in its mini-batch), ``decay`` a in (0, 1] the gated rule's per-step
    forgetting, ``ridge`` least squares' λ > 0 and ``mini_batch_size`` TTT's b (each ignored by
    the rules that lack it). Returns S [m, d_v] for :data:`RULES`, a :class:`LeastSquaresMemory`
    for "least squares" (every pair weighted 1: a common β would only rescale λ) and an
    :class:`InnerModel` for "ttt" (which needs d_v = m).
    """
    rules = RULES + LEARNER_RULES
    if rule not in rules:
        raise ValueError(f"rule must be one of {', '.join(map(repr, rules))}; got {rule!r}")
    keys, values = np.asarray(keys, dtype=np.float64), np.asarray(values, dtype=np.float64)
    if keys.ndim != 2 or values.ndim != 2 or len(keys) != len(values):
        raise ValueError(f"keys [P, m] and values [P, d_v] need the same P; got shapes "
                         f"{list(keys.shape)} and {list(values.shape)}")
    if rule == "additive":
        return gated_linear_attention(keys, keys, values, form="recurrent", return_state=True)[1]
    if rule == "least squares":
        return write_least_squares(keys, values, ridge)
    beta = _check_fraction(beta, "beta", 0.0, 2.0, closed_high=True)
    if rule == "ttt":
        return write_ttt(keys, values, beta, mini_batch_size)
    steps = np.full(len(keys), beta)  # [P]
    log_decay = None
    if rule == "gated delta":
        decay = _check_fraction(decay, "decay", 0.0, 1.0, closed_high=True)
        if decay == 0:
            raise ValueError("decay must be a number in (0, 1]; got 0 (it would erase every write)")
        log_decay = np.full(len(keys), np.log(decay))  # g_t = ln a  [P]
    return delta_rule(keys, keys, values, steps, log_decay, form="recurrent", return_state=True)[1]


def write_least_squares(keys: np.ndarray, values: np.ndarray, ridge: float) -> LeastSquaresMemory:
    """MesaNet's two sums after the pairs, each written with β = 1: H [m, m] and G [m, d_v]."""
    p = len(keys)
    _, (h, g) = least_squares_attention(keys, keys, values, np.ones(p), ridge=ridge, scale=1.0,
                                        return_state=True)
    return LeastSquaresMemory(h, g, ridge)


def write_ttt(keys: np.ndarray, values: np.ndarray, beta: float, mini_batch_size: int) -> InnerModel:
    """TTT-Linear's inner model after one pass of mini-batch gradient descent from W = 0, b = 0."""
    (p, m), mini_batch_size = keys.shape, check_positive_int(mini_batch_size, "mini_batch_size")
    if values.shape[1] != m:
        raise ValueError(f"values must have d_v = m = {m} for rule 'ttt' (its inner model maps k to "
                         f"v − k); got shape {list(values.shape)}")
    # the layer norm's output then has the length √2 of a typical target v − k (unit k and v);
    # a trained layer learns this weight, and with 1 every read would be √(m/2) times too long
    ln_weight, ln_bias = np.full(m, np.sqrt(2 / m)), np.zeros(m)
    eta = beta / (np.arange(p) % mini_batch_size + 1)  # η_t = β / position: the running mean  [P]
    _, (w, b) = ttt_linear(keys, keys, values, eta, ln_weight, ln_bias, mini_batch_size=mini_batch_size,
                           scale=1.0, eps=TTT_EPS, return_state=True)
    return InnerModel(w, b, ln_weight, ln_bias)


def read_memory(state: Memory, keys: np.ndarray) -> np.ndarray:
    """Read the memory with every key: [P, d_v] from keys [P, m].

    Row i is Sᵀk_i for a map S [m, d_v]; a learner's state reads through its own model
    (:meth:`LeastSquaresMemory.read`, :meth:`InnerModel.read`).
    """
    if isinstance(state, (LeastSquaresMemory, InnerModel)):
        return state.read(np.asarray(keys, dtype=np.float64))
    return keys @ state


def retrieval_error(state: Memory, keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """‖read_i − v_i‖ / ‖v_i‖ for every stored pair (read_i = Sᵀk_i for a map): [P]."""
    misses = read_memory(state, keys) - values  # [P, d_v]
    return np.linalg.norm(misses, axis=1) / np.linalg.norm(values, axis=1)


def crosstalk(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The additive state's read split in two: (signal v_i (k_i·k_i), crosstalk Σ_{j≠i} (k_j·k_i) v_j).

    keys [P, m], values [P, d_v]; both parts are [P, d_v] and their sum is Sᵀk_i for S = Kᵀ V.
    """
    gram = keys @ keys.T  # k_i·k_j  [P, P]
    own = np.diag(gram)  # [P]
    return own[:, None] * values, (gram - np.diag(own)) @ values


def memory_errors(p: int, m: int, d_v: int, rule: str, kind: str = "random", correlation: float = 0.0,
                  beta: float = 1.0, decay: float = 1.0, seed: int = 0, *, ridge: float = LEAST_SQUARES_RIDGE,
                  mini_batch_size: int = TTT_MINI_BATCH) -> np.ndarray:
    """Store P seeded pairs with one rule (keys in R^m, values in R^d_v); the retrieval error of each: [P]."""
    keys = make_keys(p, m, kind, correlation, seed)
    values = make_values(p, d_v, seed + 1)
    state = write_memory(keys, values, rule, beta, decay, ridge=ridge, mini_batch_size=mini_batch_size)
    return retrieval_error(state, keys, values)
