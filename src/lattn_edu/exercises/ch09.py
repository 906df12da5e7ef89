"""Exercises for chapter 9: one step of the chunkwise form, and what a chunk costs in work,
memory traffic and memory.

The chunk step's checker compares against the package's recurrent form started from the
carried state, and runs the answer with ``la.linear_attention`` and the package's chunkwise and
parallel functions switched off; ``tests/test_exercises.py`` checks that the solution, run over every chunk,
reproduces ``la.chunkwise_linear_attention``. The traffic checker compares with a literal count
of the arrays a chunk loop reads and writes; ``tests/test_exercises_ch08_09.py`` ties the
parallel form's memory to what ``la.linear_attention`` allocates.
"""

from __future__ import annotations

import numpy as np

import lattn_edu as la

from .base import Exercise, check_function, value_exercise, without_package

# The chunk step asks for the products themselves: these stay switched off while it is checked.
_CHUNK_STEP_FUNCTIONS = ("linear_attention", "chunkwise_linear_attention", "parallel_linear_attention")


def solution_chunk_step(q_c, k_c, v_c, state, normaliser):
    """One chunk of causal linear attention from features q_c, k_c [C, m], values v_c [C, d_v]
    and the state S [m, d_v], normaliser z [m] left by the earlier chunks.
    Returns the chunk's outputs [C, d_v] and the state and normaliser after it."""
    weights = np.tril(q_c @ k_c.T)  # inside the chunk, keys j <= i only  [C, C]
    numerator = weights @ v_c + q_c @ state  # [C, d_v]
    denominator = weights.sum(axis=1) + q_c @ normaliser  # [C]
    out = numerator / denominator[:, None]
    return out, state + k_c.T @ v_c, normaliser + k_c.sum(axis=0)


def _chunk_cases():
    rng = np.random.default_rng(9)
    cases = []
    for earlier, c, m, d_v, dtype in [(0, 5, 3, 4, np.float64),  # the first chunk: S = 0, z = 0
                                      (12, 7, 5, 3, np.float64), (40, 1, 4, 4, np.float64),  # C = 1
                                      (64, 16, 8, 6, np.float32)]:
        k = rng.uniform(0.1, 2.0, (earlier + c, m)).astype(dtype)  # positive features
        v = rng.standard_normal((earlier + c, d_v)).astype(dtype)
        cases.append({"q_c": rng.uniform(0.1, 2.0, (c, m)).astype(dtype), "k_c": k[earlier:],
                      "v_c": v[earlier:], "state": k[:earlier].T @ v[:earlier],
                      "normaliser": k[:earlier].sum(axis=0)})
    return cases


def _reference_chunk_step(q_c, k_c, v_c, state, normaliser):
    """The package's recurrent form, started from the carried (S, z), on the chunk's features."""
    out, (after, normaliser_after) = la.linear_attention(
        q_c, k_c, v_c, feature_map="identity", causal=True, form="recurrent", eps=0.0,
        initial_state=(state, normaliser), return_state=True)
    return out, after, normaliser_after


def multiply_adds_per_number(a: int, b: int, c: int) -> float:
    """A product [a, b]·[b, c]: abc multiply–adds over the ab + bc + ac numbers it reads and writes."""
    return a * b * c / (a * b + b * c + a * c)


def solution_bytes_per_token(chunk, m, d_v):
    """Main-memory bytes per token of the chunkwise form in float32 when the state does not stay
    in fast memory between chunks: every token's q, k (m each) and v (d_v) are read and its
    output (d_v) written once; the state S (m × d_v) is read and written once per chunk."""
    return 4 * (2 * m + 2 * d_v + 2 * m * d_v / chunk)


def flops_per_byte(c: int, m: int, d_v: int) -> float:
    """Arithmetic intensity: the FLOPs the chunkwise form really does per token, two per
    multiply–add of C(m + d_v) + 2 m d_v, over the bytes of :func:`solution_bytes_per_token`."""
    return 2 * (c * (m + d_v) + 2 * m * d_v) / solution_bytes_per_token(c, m, d_v)


def smallest_chunk_reaching(balance: float, m: int, d_v: int) -> int:
    """The smallest whole chunk length whose intensity reaches a machine balance (FLOPs per byte)."""
    c = 1
    while flops_per_byte(c, m, d_v) < balance:
        c += 1
    return c


def _bytes_cases():
    return [{"chunk": 64, "m": 128, "d_v": 128}, {"chunk": 1, "m": 64, "d_v": 64},  # C = 1: recurrent
            {"chunk": 37, "m": 16, "d_v": 48}, {"chunk": 256, "m": 128, "d_v": 64}]


def _counted_bytes_per_token(chunk, m, d_v):
    """The bytes counted rather than derived: walk seven chunks of float32 arrays and add up
    what each chunk reads and writes (q, k, v in, the output out, the state in and out)."""
    n = 7 * chunk
    q, k = np.zeros((2, n, m), dtype=np.float32)
    v = np.zeros((n, d_v), dtype=np.float32)
    state = np.zeros((m, d_v), dtype=np.float32)  # [m, d_v]
    moved = 0
    for start in range(0, n, chunk):
        q_c, k_c, v_c = q[start:start + chunk], k[start:start + chunk], v[start:start + chunk]
        moved += q_c.nbytes + k_c.nbytes + v_c.nbytes + v_c.nbytes  # the output has v_c's shape
        moved += 2 * state.nbytes
    return moved / n


def _check_bytes_per_token(answer):
    check_function(answer, _counted_bytes_per_token, _bytes_cases(), rtol=1e-9)


def prefix_state_crossover(m: int, d_v: int) -> int:
    """The length below which the causal parallel form's prefix states S_i, z_i, N(m d_v + m)
    numbers, outnumber the quadratic form's N × N matrix: N(m d_v + m) > N² for N < m d_v + m."""
    return m * d_v + m


def equal_work_length(c: int, m: int, d_v: int) -> float:
    """The N at which causal softmax, N²(m + d_v)/2 multiply–adds (the masked half skipped),
    does the chunkwise form's N(C(m + d_v) + 2 m d_v), with query and key width m."""
    return 2 * (c * (m + d_v) + 2 * m * d_v) / (m + d_v)


def fixed_cost_slopes(n: float, fixed: float, per_token: float, per_pair: float) -> np.ndarray:
    """Local log–log slopes d ln t / d ln N at n of t = fixed + per_token·N (linear) and
    t = fixed + per_pair·N² (softmax): βN / (t0 + βN) and 2γN² / (t0 + γN²)."""
    linear, softmax = per_token * n, per_pair * n**2
    return np.array([linear / (fixed + linear), 2 * softmax / (fixed + softmax)])


EXERCISES = [
    Exercise("ch09.chunk_step", "One chunk of the chunkwise form: outputs, then the carried state",
             "code", solution_chunk_step,
             lambda answer: check_function(without_package(answer, *_CHUNK_STEP_FUNCTIONS),
                                           _reference_chunk_step, _chunk_cases(), rtol=1e-5, outputs=3)),
    value_exercise("ch09.read_reuse",
                   "Multiply–adds per number moved by the read Q_c S at C = 64, m = d_v = 128",
                   multiply_adds_per_number(64, 128, 128)),
    Exercise("ch09.bytes_per_token", "Bytes moved per token as a function of the chunk length",
             "code", solution_bytes_per_token, _check_bytes_per_token),
    value_exercise("ch09.roofline_chunk",
                   "The smallest C whose intensity reaches 20 FLOPs per byte at m = d_v = 128",
                   smallest_chunk_reaching(20.0, 128, 128), rtol=1e-9),
    value_exercise("ch09.parallel_memory",
                   "The N at which the causal parallel form and the N × N matrix take equal memory (m = d_v = 64)",
                   prefix_state_crossover(64, 64), rtol=1e-9),
    value_exercise("ch09.work_crossover",
                   "The N of equal work for softmax and chunkwise linear attention, d = 128, C = 64",
                   equal_work_length(64, 128, 128), rtol=1e-3),
    value_exercise("ch09.slopes",
                   "The local log–log slopes at N = 2,048 with a fixed cost per call",
                   fixed_cost_slopes(2048, 50.0, 0.1, 0.002), rtol=1e-3),
]
