"""One recurrence, S_t = A_t S_{t−1} + B_t, and how a call reaches a backend (chapters 8-15).

Every model of Parts II and III keeps a state S [d_k, d_v] (a matrix memory from keys to
values), changes it by a transition A_t [d_k, d_k] applied from the left and a write B_t
[d_k, d_v], and reads o_t = scale · S_tᵀ q_t. A model is its choice of A_t and B_t:

    model                 A_t                            B_t           function (log decay g)
    linear attention      I                              k_t v_tᵀ      gated_linear_attention, g None
    RetNet                γ I                            k_t v_tᵀ      retention
    Mamba-2, simple GLA   α_t I                          k_t v_tᵀ      gated_linear_attention, g [..., N]
    GLA                   diag(α_t)                      k_t v_tᵀ      gated_linear_attention, g [..., N, d_k]
    DeltaNet              I − β_t k_t k_tᵀ               β_t k_t v_tᵀ  delta_rule, g None
    Gated DeltaNet        (I − β_t k_t k_tᵀ) α_t         β_t k_t v_tᵀ  delta_rule, g [..., N]
    Kimi Delta Attention  (I − β_t k_t k_tᵀ) diag(α_t)   β_t k_t v_tᵀ  delta_rule, g [..., N, d_k]
    (Gated) DeltaProduct  Π_j (I − β_tj k_tj k_tjᵀ) α_t  rank n_h      delta_product
    RWKV-7 (DPLR)         diag(α_t) + a_t b_tᵀ           k_t v_tᵀ      generalized_delta_rule

α_t = exp(g_t) with a log decay g_t <= 0. The test-time regression models read differently
but keep such states too: MesaNet's least squares keeps two gated sums (H_t of k kᵀ, G_t of
k vᵀ) and reads G_tᵀ (H_t + λI)⁻¹ q_t; TTT and Titans update the weights of a small inner
model by gradient steps; log-linear attention keeps O(log N) gated states, one per level of
a Fenwick tree.

:func:`run_recurrence` is the one way a public function reaches a backend: each backend
module lists, in ``FAMILIES``, the forms it has for each family (see
:mod:`lattn_edu.backends`), and in ``CHECKS_FINITE`` those that find NaN and inf in q, k, v
and in their output (and the log decays' values, where the family has them) in passes they
make anyway (:func:`checks_finite`), so that the public function does not read those arrays
again only to check them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._checks import check_finite, overflow_error


def run_recurrence(family: str, inputs: tuple, scale: Any, form: str, backend: str, chunk_size: int,
                   initial_state: Any, return_state: bool, **options: Any) -> Any:
    """Run ``form`` of ``family`` on ``backend``: convert the checked ``inputs`` (and the
    initial state, an array, a tuple of arrays or None) to the backend's arrays, call
    ``form(*inputs, scale, initial_state, chunk_size, **options)``, check that the output and
    the final state are finite, and convert them back. Returns o, or (o, final_state)."""
    from .backends import get_backend

    kernels = get_backend(backend)
    forms = kernels.FAMILIES.get(family)
    if forms is None or form not in forms:
        has = "no kernels for this model" if forms is None else f"the forms {tuple(forms)} of it"
        raise ValueError(f"backend={backend!r} has {has}; got form={form!r}. The reference backends "
                         f"'numpy' (numpy arrays) and 'torch' (tensors) run every form of every model")
    parts = initial_state if isinstance(initial_state, tuple) else (initial_state,)
    *arrays, restore = kernels.to_backend(*inputs, *parts)
    start = tuple(arrays[len(inputs):]) if isinstance(initial_state, tuple) else arrays[-1]
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported just below
        out, state = forms[form](*arrays[:len(inputs)], scale, start, chunk_size, **options)
    check_finite_result(out, state, out_checked=checks_finite(family, form, backend))
    if not return_state:
        return restore(out)
    return restore(out), (tuple(map(restore, state)) if isinstance(state, tuple) else restore(state))


def checks_finite(family: str, form: str, backend: str) -> bool:
    """Whether ``backend``'s ``form`` of ``family`` raises the errors of :func:`check_finite`
    for q, k and v, of ``check_log_decay`` for the log decays' values, and of
    :func:`check_finite_result` for its output, itself (from passes it makes anyway); the
    caller then skips those checks, each a pass over a whole array."""
    from .backends import get_backend

    return form in getattr(get_backend(backend), "CHECKS_FINITE", {}).get(family, ())


def check_finite_result(out: Any, state: Any, out_checked: bool = False) -> None:
    """No silent NaN: with finite inputs and decays <= 0 only an overflow can make one.
    ``out_checked``: the kernel checked the output itself; only the state is read."""
    try:
        if not out_checked:
            check_finite(out, "out")
        for part in state if isinstance(state, tuple) else (state,):
            check_finite(part, "final_state")
    except ValueError:
        raise overflow_error() from None
