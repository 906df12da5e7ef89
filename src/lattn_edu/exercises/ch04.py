"""Exercises for chapter 4: the recurrent form, one token at a time."""

from __future__ import annotations

import numpy as np

import lattn_edu as la

from .base import Exercise, check_function, value_exercise, without_package
from .ch03 import SequenceOnly


class ScanOnly(SequenceOnly):
    """Inputs that refuse any [N, N] result, so a masked N×N product is not taken for a scan."""

    advice = "the scan must carry the state S_i and z_i from token to token instead"


def solution_update(S, z, phi_k, v):
    """One token in: S_i = S_{i-1} + φ(k_i) v_iᵀ and z_i = z_{i-1} + φ(k_i)."""
    return S + np.outer(phi_k, v), z + phi_k


def solution_read(S, z, phi_q):
    """One query out: o = φ(q)ᵀ S / φ(q)ᵀ z, [m, d_v], [m], [m] -> [d_v]."""
    return (phi_q @ S) / (phi_q @ z)


def solution_causal_scan(phi_q, phi_k, v):
    """Causal linear attention as a loop: update with token i, then read query i."""
    S = np.zeros((phi_k.shape[1], v.shape[1]), dtype=v.dtype)  # S_0 = 0  [m, d_v]
    z = np.zeros(phi_k.shape[1], dtype=v.dtype)  # z_0 = 0  [m]
    out = np.empty((len(phi_q), v.shape[1]), dtype=v.dtype)  # [N, d_v]
    for i in range(len(phi_q)):
        S, z = solution_update(S, z, phi_k[i], v[i])
        out[i] = solution_read(S, z, phi_q[i])
    return out


def _state(S, z):
    """A LinearAttentionState (no eps) holding S and z, the package's version of the pair."""
    state = la.LinearAttentionState(m=len(z), d_v=S.shape[1], dtype=S.dtype, eps=0.0)
    state.S[...], state.z[...] = S, z
    return state


def _reference_update(S, z, phi_k, v):
    state = _state(S, z)
    state.update(phi_k, v)
    return state.S, state.z


def _reference_read(S, z, phi_q):
    return _state(S, z).read(phi_q)


def _reference_causal_scan(phi_q, phi_k, v):
    return la.recurrent_linear_attention(phi_q, phi_k, v, causal=True, eps=0.0)


def _features(rng, n, m, dtype=np.float64):
    return la.elu_plus_one(rng.standard_normal((n, m))).astype(dtype)


def _state_cases(rng, with_token):
    """(S, z) after a few random tokens, plus the next token's φ(k), v or φ(q): odd sizes, float32."""
    cases = []
    for tokens, m, d_v, dtype in ((0, 1, 1, np.float64), (0, 3, 2, np.float64), (1, 1, 1, np.float64),
                                  (4, 5, 7, np.float64), (9, 3, 2, np.float64), (6, 8, 4, np.float32)):
        phi_k, v = _features(rng, tokens, m, dtype), rng.standard_normal((tokens, d_v)).astype(dtype)
        case = {"S": phi_k.T @ v, "z": phi_k.sum(axis=0)}
        if with_token:
            case.update(phi_k=_features(rng, 1, m, dtype)[0], v=rng.standard_normal(d_v).astype(dtype))
        elif tokens:  # a read needs at least one token in the state
            case.update(phi_q=_features(rng, 1, m, dtype)[0])
        else:
            continue
        cases.append(case)
    return cases


def _sequence_cases():
    rng = np.random.default_rng(403)
    cases = [{"phi_q": _features(rng, n, m), "phi_k": _features(rng, n, m),
              "v": rng.standard_normal((n, d_v))} for n, m, d_v in ((1, 1, 1), (1, 3, 2), (7, 3, 2),
                                                                    (50, 8, 5))]
    cases.append({"phi_q": _features(rng, 33, 16, np.float32), "phi_k": _features(rng, 33, 16, np.float32),
                  "v": rng.standard_normal((33, 16)).astype(np.float32)})
    # Last, a longer sequence that refuses [N, N] arrays: tril(φ(Q)φ(K)ᵀ) is not a scan.
    n_long = 1_001
    cases.append({"phi_q": ScanOnly.wrap(_features(rng, n_long, 2)),
                  "phi_k": ScanOnly.wrap(_features(rng, n_long, 2)),
                  "v": ScanOnly.wrap(rng.standard_normal((n_long, 3)))})
    return cases


def solution_generation_work(n_tokens, d):
    """Multiply-adds of generating T tokens from an empty context, d = d_v = m: (cache, state).

    Step t of a softmax decoder compares one query with t cached keys and averages t values,
    t(d + d_v) multiply-adds, so T steps cost (d + d_v) T(T + 1)/2. The state's step costs
    2 m d_v whatever t is, so T steps cost 2 m d_v T.
    """
    d_v = m = d
    return (d + d_v) * n_tokens * (n_tokens + 1) // 2, 2 * m * d_v * n_tokens


def _reference_generation_work(n_tokens, d):
    """Step by step: the work of step t is the KV cache it reads, t(d + d_v), or 2 m d_v."""
    cache = sum(la.attention_cost(n=t, d=d).kv_cache_entries for t in range(1, n_tokens + 1))
    state = sum(2 * la.attention_cost(n=t, d=d).linear_state_entries
                for t in range(1, n_tokens + 1))
    return cache, state


def _generation_cases():
    return [{"n_tokens": t, "d": d} for t, d in ((1, 1), (2, 3), (7, 5), (101, 64), (1000, 128))]


# The scan exercise asks for the loop itself: these stay switched off while it is checked.
_LINEAR_ATTENTION_FUNCTIONS = ("linear_attention", "parallel_linear_attention",
                               "recurrent_linear_attention", "chunkwise_linear_attention",
                               "LinearAttentionState")


def _cache_overtakes_state(d: int = 64, d_v: int = 64, m: int = 64) -> int:
    """The smallest context N whose KV cache N(d + d_v) holds more numbers than S and z."""
    def cache_is_larger(n):
        cost = la.attention_cost(n=n, d=d, d_v=d_v, m=m)
        return cost.kv_cache_entries > cost.linear_state_entries + m  # S [m, d_v] and z [m]
    return next(n for n in range(1, m * d_v + m + 2) if cache_is_larger(n))


EXERCISES = [
    Exercise("ch04.update", "The recurrent update (S, z, φ(k), v) -> (S', z')", "code", solution_update,
             lambda answer: check_function(answer, _reference_update,
                                           _state_cases(np.random.default_rng(401), True), rtol=1e-5,
                                           outputs=2)),
    Exercise("ch04.read", "The read-out (S, z, φ(q)) -> o", "code", solution_read,
             lambda answer: check_function(answer, _reference_read,
                                           _state_cases(np.random.default_rng(402), False), rtol=1e-5)),
    Exercise("ch04.causal_scan", "Causal linear attention as a scan over the tokens", "code",
             solution_causal_scan,
             lambda answer: check_function(without_package(answer, *_LINEAR_ATTENTION_FUNCTIONS),
                                           _reference_causal_scan, _sequence_cases(), rtol=1e-5)),
    Exercise("ch04.generation_work",
             "Count the total multiply-adds of generating T tokens: KV cache vs state", "code",
             solution_generation_work,
             lambda answer: check_function(answer, _reference_generation_work,
                                           _generation_cases(), rtol=1e-9, outputs=2)),
    value_exercise("ch04.cache_overtakes_state",
                   "Derive: from which context N the KV cache holds more numbers than the state "
                   "(d = d_v = m = 64)", _cache_overtakes_state()),
]
