"""The fast backends of gated linear attention and the delta rule against the numpy reference:
every form of :mod:`lattn_edu.backends.numba_gated`, :mod:`~lattn_edu.backends.numba_delta` and
the torch backend (the shared references on tensors), through the public functions, as the
numpy float64 recurrence computes them."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lattn_edu as la

from conftest import assert_close, to_numpy
from gated_inputs import DECAYS, delta_inputs, gated_inputs

BACKENDS = [pytest.param(name, marks=pytest.mark.skipif(importlib.util.find_spec(name) is None,
                                                          reason=f"{name} is not installed"))
            for name in ("numba", "torch")]
DTYPES = (np.float64, np.float32)
GATED_FORMS, DELTA_FORMS = ("recurrent", "parallel", "chunkwise"), ("recurrent", "chunkwise")


def as64(*arrays):
    return tuple(None if x is None else np.asarray(x, dtype=np.float64) for x in arrays)


def gated_reference(q, k, v, g, s0):
    """The numpy float64 scan: (o, final state)."""
    q, k, v, g, s0 = as64(q, k, v, g, s0)
    return la.gated_linear_attention(q, k, v, g, form="recurrent", initial_state=s0, return_state=True)


def delta_reference(q, k, v, beta, g, s0):
    q, k, v, beta, g, s0 = as64(q, k, v, beta, g, s0)
    return la.delta_rule(q, k, v, beta, g, form="recurrent", initial_state=s0, return_state=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("decay", DECAYS)
@pytest.mark.parametrize("form", GATED_FORMS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_gated_forms_match_the_reference(backend, form, decay, dtype, rng):
    q, k, v, g, s0 = gated_inputs(rng, decay=decay, dtype=dtype)
    out, state = la.gated_linear_attention(q, k, v, g, form=form, backend=backend, chunk_size=8,
                                           initial_state=s0, return_state=True)
    expected_out, expected_state = gated_reference(q, k, v, g, s0)
    assert out.dtype == state.dtype == dtype
    assert_close(out, expected_out, what=f"{backend} {form} o")
    assert_close(state, expected_state, what=f"{backend} {form} final state")


@pytest.mark.parametrize("decay", ["scalar", "vector"])
@pytest.mark.parametrize("form", GATED_FORMS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_callers_arrays_are_left_as_they_were(backend, form, decay, rng):
    # a gate of the full shape reaches the kernels as the caller's own array, not a read-only view
    inputs = gated_inputs(rng, decay=decay, dtype=np.float32)
    before = [x.copy() for x in inputs]
    la.gated_linear_attention(*inputs[:4], form=form, backend=backend, chunk_size=8, initial_state=inputs[4])
    for name, x, x0 in zip(("q", "k", "v", "log_decay", "initial_state"), inputs, before):
        assert np.array_equal(x, x0), f"{backend} {form} wrote into {name}"


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("gated", [False, True], ids=["deltanet", "gated"])
@pytest.mark.parametrize("form", DELTA_FORMS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_delta_forms_match_the_reference(backend, form, gated, dtype, rng):
    q, k, v, beta, g, s0 = delta_inputs(rng, gated=gated, dtype=dtype)
    out, state = la.delta_rule(q, k, v, beta, g, form=form, backend=backend, chunk_size=8,
                               initial_state=s0, return_state=True)
    expected_out, expected_state = delta_reference(q, k, v, beta, g, s0)
    assert out.dtype == state.dtype == dtype
    assert_close(out, expected_out, what=f"{backend} {form} o")
    assert_close(state, expected_state, what=f"{backend} {form} final state")


shapes = st.fixed_dictionaries({
    "n": st.integers(1, 70), "chunk": st.integers(1, 20), "d_k": st.integers(1, 7),
    "d_v": st.integers(1, 6), "lead": st.sampled_from([(), (1,), (3,), (2, 3)]),
    "dtype": st.sampled_from(DTYPES), "seed": st.integers(0, 2**16)})


@pytest.mark.parametrize("backend", BACKENDS)
@given(shape=shapes, decay=st.sampled_from(DECAYS), form=st.sampled_from(GATED_FORMS))
def test_gated_forms_agree_with_the_scan_for_any_shape(backend, shape, decay, form):
    """N not a multiple of the chunk, N = 1, chunk 1, d_k != d_v, no or many leading axes."""
    rng = np.random.default_rng(shape["seed"])
    q, k, v, g, s0 = gated_inputs(rng, shape["lead"], shape["n"], shape["d_k"], shape["d_v"], decay,
                                  shape["dtype"], strength=2.0)
    out, state = la.gated_linear_attention(q, k, v, g, form=form, backend=backend, chunk_size=shape["chunk"],
                                           initial_state=s0, return_state=True)
    expected_out, expected_state = gated_reference(q, k, v, g, s0)
    assert_close(out, expected_out, what=f"{form} o {shape}")
    assert_close(state, expected_state, what=f"{form} state {shape}")


@pytest.mark.parametrize("backend", BACKENDS)
@given(shape=shapes, gated=st.booleans())
def test_chunkwise_delta_rule_agrees_with_the_scan_for_any_shape(backend, shape, gated):
    rng = np.random.default_rng(shape["seed"])
    q, k, v, beta, g, s0 = delta_inputs(rng, shape["lead"], shape["n"], shape["d_k"], shape["d_v"], gated,
                                        shape["dtype"])
    out, state = la.delta_rule(q, k, v, beta, g, form="chunkwise", backend=backend,
                               chunk_size=shape["chunk"], initial_state=s0, return_state=True)
    expected_out, expected_state = delta_reference(q, k, v, beta, g, s0)
    assert_close(out, expected_out, what=f"o {shape}")
    assert_close(state, expected_state, what=f"state {shape}")


def split_and_carry(run, sequences, per_step, split):
    """run(...) on [:split] then on [split:] from the state it left: (o of both, final state)."""
    first_out, state = run(*(x[..., :split, :] for x in sequences), *(x[..., :split] for x in per_step), None)
    second_out, state = run(*(x[..., split:, :] for x in sequences), *(x[..., split:] for x in per_step), state)
    return np.concatenate([to_numpy(first_out), to_numpy(second_out)], axis=-2), state


@pytest.mark.parametrize("decay", DECAYS)
@pytest.mark.parametrize("form", GATED_FORMS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_gated_split_anywhere_and_carry_the_state(backend, form, decay, rng):
    q, k, v, g, _ = gated_inputs(rng, n=41, decay=decay, initial_state=False)

    def run(q, k, v, *gates_and_state):
        *gates, state = gates_and_state
        return la.gated_linear_attention(q, k, v, *gates, form=form, backend=backend, chunk_size=6,
                                         initial_state=state, return_state=True)
    sequences, per_step = ((q, k, v, g), ()) if decay == "vector" else ((q, k, v), () if g is None else (g,))
    whole_out, whole_state = run(*sequences, *per_step, None)
    for split in (1, 13, 40):
        out, state = split_and_carry(run, sequences, per_step, split)
        assert_close(out, whole_out, what=f"o split at {split}")
        assert_close(state, whole_state, what=f"state split at {split}")


@pytest.mark.parametrize("form", DELTA_FORMS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_delta_split_anywhere_and_carry_the_state(backend, form, rng):
    q, k, v, beta, g, _ = delta_inputs(rng, n=41, initial_state=False)

    def run(q, k, v, beta, g, state):
        return la.delta_rule(q, k, v, beta, g, form=form, backend=backend, chunk_size=6,
                             initial_state=state, return_state=True)
    whole_out, whole_state = run(q, k, v, beta, g, None)
    for split in (1, 13, 40):
        out, state = split_and_carry(run, (q, k, v), (beta, g), split)
        assert_close(out, whole_out, what=f"o split at {split}")
        assert_close(state, whole_state, what=f"state split at {split}")


LONG = 65_536


@pytest.mark.slow
@pytest.mark.parametrize("decay", ["none", "scalar", "vector"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_float32_at_65536_tokens_stays_finite_and_chunkwise_matches_the_scan(backend, decay, rng):
    """g = -5 per step (every factor beyond a few steps underflows) and no decay at all."""
    q, k, v, _, _ = gated_inputs(rng, lead=(1,), n=LONG, d_k=4, d_v=3, decay="none", dtype=np.float32,
                                 initial_state=False)
    g = {"none": None, "scalar": np.full((1, LONG), -5, np.float32),
         "vector": np.full((1, LONG, 4), -5, np.float32)}[decay]
    outputs = {}
    for form in ("recurrent", "chunkwise") + (("parallel",) if backend == "numba" and g is not None else ()):
        outputs[form], state = la.gated_linear_attention(q, k, v, g, form=form, backend=backend,
                                                         return_state=True)
        assert np.isfinite(outputs[form]).all() and np.isfinite(state).all(), form
    for form in outputs:
        assert_close(outputs[form], outputs["recurrent"], what=form)


@pytest.mark.slow
@pytest.mark.parametrize("gated", [False, True], ids=["deltanet", "gated"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_float32_delta_rule_at_65536_tokens_stays_finite(backend, gated, rng):
    q, k, v, beta, _, _ = delta_inputs(rng, lead=(1,), n=LONG, d_k=4, d_v=3, gated=False, dtype=np.float32,
                                       initial_state=False)
    g = np.full((1, LONG), -5, np.float32) if gated else None
    chunkwise = la.delta_rule(q, k, v, beta, g, backend=backend)
    recurrent = la.delta_rule(q, k, v, beta, g, form="recurrent", backend=backend)
    assert np.isfinite(chunkwise).all()
    assert_close(chunkwise, recurrent)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("backend", BACKENDS)
def test_strong_uneven_vector_decay_matches_the_scan(backend, dtype, rng):
    """Log decays up to -60 per channel and step: the numba kernel cuts chunks into pieces."""
    q, k, v, g, s0 = gated_inputs(rng, lead=(3,), n=83, decay="vector", dtype=dtype, strength=60.0)
    g[..., ::7, :] = 0  # and some steps that keep everything
    out, state = la.gated_linear_attention(q, k, v, g, backend=backend, chunk_size=32, initial_state=s0,
                                           return_state=True)
    expected_out, expected_state = gated_reference(q, k, v, g, s0)
    assert_close(out, expected_out)
    assert_close(state, expected_state)
