"""The parallel (associative) scan of a linear recurrence, and what it costs (chapter 11).

The recurrence h_t = a_t ⊙ h_{t-1} + x_t (h_0 = 0) is a fold with the operator

    (a, x) ∘ (a', x') = (a' ⊙ a,  a' ⊙ x + x')        "first (a, x), then (a', x')"

which is associative, so the N prefixes can be combined in ⌈log2 N⌉ rounds instead of N
steps. :func:`associative_scan` is the doubling (Hillis–Steele) version in numpy, a
reference to read and test, not a fast kernel: it materialises every state, which is
exactly what the chunked form avoids (:func:`scan_costs` counts both).

Left out: the work-efficient up-sweep/down-sweep (Blelloch) variant; it does the same
combines in a different order, and :func:`scan_costs` counts its work and depth.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._checks import check_decay_values, check_positive_int


def combine(first: tuple, second: tuple) -> tuple:
    """(a, x) ∘ (a', x') = (a' a, a' x + x'): apply ``first``'s step, then ``second``'s."""
    decay, write = first
    decay_next, write_next = second
    return decay_next * decay, decay_next * write + write_next


def associative_scan(decay: Any, writes: Any) -> np.ndarray:
    """Every state h_t of h_t = a_t ⊙ h_{t-1} + x_t (h_0 = 0) in ⌈log2 N⌉ rounds of :func:`combine`.

    Parameters
    ----------
    decay : array [N, ...]
        a_t in (0, 1], broadcasting against ``writes`` (e.g. [N, d_k, 1] for a state [N, d_k, d_v]).
    writes : array [N, ...]
        x_t, what step t adds (e.g. k_t v_tᵀ).

    Returns
    -------
    states : array shaped like ``writes``, states[t] = h_t.
    """
    writes = _check_writes(writes)
    decay = _broadcast_decay(decay, writes)
    decay, states = np.array(decay), np.array(writes)
    shift = 1
    while shift < len(states):  # after the round with this shift, element t holds steps t-2·shift+1 .. t
        decay[shift:], states[shift:] = combine((decay[:-shift], states[:-shift]),
                                                (decay[shift:], states[shift:]))
        shift *= 2
    return states


def _check_writes(writes: Any) -> np.ndarray:
    """x_t as a finite float array [N, ...] with N >= 1."""
    if isinstance(writes, (str, bytes)) or writes is None:
        raise TypeError(f"writes must be a float array [N, ...]; got {type(writes).__name__}")
    writes = np.asarray(writes)
    if writes.dtype.kind != "f" or writes.ndim < 1 or writes.shape[0] == 0:
        raise ValueError(f"writes must be a float array [N, ...] with N >= 1; got dtype "
                         f"{writes.dtype} and shape {list(writes.shape)}")
    if not np.isfinite(writes).all():
        raise ValueError("writes must be finite; got NaN or inf entries")
    return writes


def _broadcast_decay(decay: Any, writes: np.ndarray) -> np.ndarray:
    """a_t in (0, 1], one entry (or block) per step, broadcast to the shape of ``writes``."""
    decay = check_decay_values(decay, "decay", writes.dtype)
    if decay.ndim == 0 or decay.shape[0] != writes.shape[0]:
        raise ValueError(f"decay must have one entry per step, shape [N, ...] with N = "
                         f"{writes.shape[0]} broadcasting against writes {list(writes.shape)}; "
                         f"got {list(decay.shape)}")
    try:
        return np.broadcast_to(decay.reshape(decay.shape + (1,) * (writes.ndim - decay.ndim)),
                               writes.shape)
    except ValueError:
        raise ValueError(f"decay of shape {list(decay.shape)} does not broadcast against writes "
                         f"{list(writes.shape)}") from None


def scan_costs(n: int, d_k: int, d_v: int, chunk_size: int) -> dict[str, dict[str, float]]:
    """Multiply-adds, sequential rounds and states held for four ways to run S_t = a_t S_{t-1} + k_t v_tᵀ.

    Counted for one head with a scalar decay and outputs o_t = S_tᵀ q_t included. One combine
    on a [d_k, d_v] state costs d_k·d_v multiply-adds (the decay product is negligible).

    - ``sequential``: N steps, one state at a time;
    - ``doubling scan``: ⌈log2 N⌉ rounds of up to N combines (:func:`associative_scan`);
    - ``work-efficient scan``: about 2N combines in 2⌈log2 N⌉ rounds (Blelloch);
    - ``chunked``: per chunk, C×C weights and their product with V, the read of the carried
      state and its update; N/C sequential steps, one state held per chunk boundary.
    """
    n, d_k, d_v, c = (check_positive_int(x, name) for x, name in
                      ((n, "n"), (d_k, "d_k"), (d_v, "d_v"), (chunk_size, "chunk_size")))
    rounds = math.ceil(math.log2(n)) if n > 1 else 0
    state, write_read = d_k * d_v, 2 * n * d_k * d_v  # one state; every k_t v_tᵀ plus every S_tᵀ q_t
    doubling = sum(n - 2**r for r in range(rounds)) * state
    chunks = math.ceil(n / c)
    chunked = n * c * (d_k + d_v) + 2 * n * d_k * d_v  # QKᵀ and (·)V in-chunk; state read and write
    return {
        "sequential": {"multiply_adds": n * state + write_read, "rounds": n, "states_held": 1},
        "doubling scan": {"multiply_adds": doubling + write_read, "rounds": rounds, "states_held": n},
        "work-efficient scan": {"multiply_adds": 2 * n * state + write_read, "rounds": 2 * rounds,
                                "states_held": n},
        "chunked": {"multiply_adds": chunked, "rounds": chunks, "states_held": chunks},
    }
