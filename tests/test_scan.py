"""associative_scan: the doubling scan against a plain loop and against gated linear attention's
states; the combine operator is associative; scan_costs counts what it says (lattn_edu.scan)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import lattn_edu as la
from conftest import assert_close
from lattn_edu.scan import combine


def loop_states(decay, writes):
    states, h = [], np.zeros_like(writes[0])
    for a, x in zip(decay, writes):
        h = a * h + x
        states.append(h)
    return np.stack(states)


@pytest.mark.parametrize("n", [1, 2, 7, 64, 101], ids=lambda n: f"N{n}")
def test_scan_equals_the_loop(n):
    rng = np.random.default_rng(n)
    decay, writes = rng.uniform(0.1, 1.0, (n, 3)), rng.standard_normal((n, 3))
    assert_close(la.associative_scan(decay, writes), loop_states(decay, writes))


def test_scan_of_outer_products_gives_the_gated_states():
    rng = np.random.default_rng(11)
    n, d_k, d_v = 45, 4, 3
    q, k = rng.standard_normal((2, n, d_k))
    v = rng.standard_normal((n, d_v))
    g = -rng.uniform(0, 1, (n, d_k))  # GLA: one decay per key channel
    states = la.associative_scan(np.exp(g)[..., None], k[:, :, None] * v[:, None, :])  # [N, d_k, d_v]
    out = np.einsum("tk,tkv->tv", q, states)
    assert_close(out, la.gated_linear_attention(q, k, v, g, scale=1.0, form="recurrent"))
    _, final = la.gated_linear_attention(q, k, v, g, scale=1.0, return_state=True)
    assert_close(states[-1], final)


def test_combine_is_associative_and_not_commutative():
    rng = np.random.default_rng(12)
    x, y, z = ((rng.uniform(0.1, 1), rng.standard_normal()) for _ in range(3))
    left, right = combine(combine(x, y), z), combine(x, combine(y, z))
    assert np.allclose(left, right, rtol=1e-14)
    assert not np.allclose(combine(x, y), combine(y, x))


def test_scalar_decay_per_step_broadcasts():
    rng = np.random.default_rng(13)
    decay, writes = rng.uniform(0.5, 1, 9), rng.standard_normal((9, 2, 3))
    assert_close(la.associative_scan(decay, writes), loop_states(decay[:, None, None], writes))


@pytest.mark.parametrize("decay, writes, message", [
    (np.full(5, 1.5), np.zeros(5), r"decay must lie in \(0, 1\]"),
    (np.full(4, 0.5), np.zeros(5), "decay must have one entry per step"),
    (np.full(5, 0.5), np.zeros(0), "writes must be a float array"),
    (np.full(5, 0.5), np.full(5, np.nan), "writes must be finite"),
    (np.full(5, 0.5), "x", "writes must be a float array"),
], ids=["decay-range", "decay-length", "empty", "nan", "type"])
def test_bad_input_is_named(decay, writes, message):
    with pytest.raises((ValueError, TypeError), match=message):
        la.associative_scan(decay, writes)


@pytest.mark.parametrize("n", [1, 5, 1000, 1024], ids=lambda n: f"N{n}")
def test_costs_count_rounds_and_states(n):
    costs = la.scan_costs(n, 16, 8, chunk_size=64)
    rounds = math.ceil(math.log2(n)) if n > 1 else 0
    assert costs["sequential"]["rounds"] == n and costs["doubling scan"]["rounds"] == rounds
    assert costs["chunked"]["rounds"] == math.ceil(n / 64)
    assert costs["doubling scan"]["states_held"] == n and costs["sequential"]["states_held"] == 1
    combines = sum(n - 2**r for r in range(rounds))  # what associative_scan does, round by round
    assert costs["doubling scan"]["multiply_adds"] == (combines + 2 * n) * 16 * 8
    assert costs["sequential"]["multiply_adds"] == 3 * n * 16 * 8
