"""The state as a key–value memory: write P pairs, read them back, measure what is lost (chapter 10).

Three write rules fill an [m, d_v] state S from unit keys K [P, m] and values V [P, d_v]:

- additive:    S ← S + k_j v_jᵀ                                  (linear attention, fast weights)
- delta:       S ← S + β k_j (v_j − Sᵀk_j)ᵀ                       (DeltaNet)
- gated delta: S ← a S, then the delta step                      (Gated DeltaNet, a = exp(g))

The rules run through :func:`lattn_edu.gated_linear_attention` and :func:`lattn_edu.delta_rule`;
this module only builds the keys, reads the state with every key and measures the error.
For the additive rule the read splits exactly into signal and crosstalk,

    Sᵀk_i = v_i (k_i·k_i) + Σ_{j≠i} (k_j·k_i) v_j,

so it is exact for orthogonal keys and P <= m, and the crosstalk grows once P > m: the state
has rank at most m, chapter 7's cap seen as a memory. Left out on purpose: learned keys and
multiple passes over the pairs (that is training, the recall lab's job).
"""

from __future__ import annotations

import numpy as np

from ._checks import check_positive_int
from .delta import delta_rule
from .gated import gated_linear_attention

RULES = ("additive", "delta", "gated delta")
KEY_KINDS = ("orthogonal", "random")


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
                 decay: float = 1.0) -> np.ndarray:
    """Write the pairs in order, starting from S = 0, and return the state S [m, d_v].

    keys [P, m], values [P, d_v]; ``beta`` in [0, 2] is the delta rule's step, ``decay`` a in
    (0, 1] the gated rule's per-step forgetting (both ignored by the rules that lack them).
    """
    if rule not in RULES:
        raise ValueError(f"rule must be one of {', '.join(map(repr, RULES))}; got {rule!r}")
    keys, values = np.asarray(keys, dtype=np.float64), np.asarray(values, dtype=np.float64)
    if keys.ndim != 2 or values.ndim != 2 or len(keys) != len(values):
        raise ValueError(f"keys [P, m] and values [P, d_v] need the same P; got shapes "
                         f"{list(keys.shape)} and {list(values.shape)}")
    if rule == "additive":
        return gated_linear_attention(keys, keys, values, form="recurrent", return_state=True)[1]
    beta = _check_fraction(beta, "beta", 0.0, 2.0, closed_high=True)
    steps = np.full(len(keys), beta)  # [P]
    log_decay = None
    if rule == "gated delta":
        decay = _check_fraction(decay, "decay", 0.0, 1.0, closed_high=True)
        if decay == 0:
            raise ValueError("decay must be a number in (0, 1]; got 0 (it would erase every write)")
        log_decay = np.full(len(keys), np.log(decay))  # g_t = ln a  [P]
    return delta_rule(keys, keys, values, steps, log_decay, form="recurrent", return_state=True)[1]


def read_memory(state: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Read the state with every key: row i is Sᵀk_i. state [m, d_v], keys [P, m] -> [P, d_v]."""
    return keys @ state


def retrieval_error(state: np.ndarray, keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """‖Sᵀk_i − v_i‖ / ‖v_i‖ for every stored pair: [P]."""
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
                  beta: float = 1.0, decay: float = 1.0, seed: int = 0) -> np.ndarray:
    """Store P seeded pairs in an [m, d_v] state with one rule; the retrieval error of each: [P]."""
    keys = make_keys(p, m, kind, correlation, seed)
    values = make_values(p, d_v, seed + 1)
    return retrieval_error(write_memory(keys, values, rule, beta, decay), keys, values)
