"""One conformance test for every backend's linear attention: the output of
``la.linear_attention`` on numpy, numba and torch against chapter 3's teaching reference,
the quadratic numpy form on the same features (the backends' own linear kernels are gone:
causal attention is the gated recurrence on [V | 1], non-causal two products)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lattn_edu as la
from lattn_edu.linear import FORMS

from conftest import assert_close
from naive import make_qkv

BACKENDS = [pytest.param(name, marks=pytest.mark.skipif(name not in la.available_backends(),
                                                        reason=f"{name} is not installed"))
            for name in ("numpy", "numba", "torch")]
DTYPES = (np.float64, np.float32)
D = 5  # make_qkv's default width


def run(backend, q, k, v, **options):
    """la.linear_attention on ``backend`` with numpy in and out (tensors for torch)."""
    if backend == "torch":
        import torch

        q, k, v = (torch.from_numpy(x) for x in (q, k, v))
        return la.linear_attention(q, k, v, backend=backend, **options).numpy()
    return la.linear_attention(q, k, v, backend=backend, **options)


def reference(q, k, v, feature_map="elu+1", causal=False, eps=1e-6):
    """The N×N teaching form on the map's own features (log-space maps in float64 from there)."""
    phi = la.feature_maps.resolve_feature_map(feature_map)
    return la.quadratic_linear_attention(phi(q), phi(k), v, causal, eps)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("lead", [(), (2, 3)], ids=["no-batch", "batch-heads"])
@pytest.mark.parametrize("n", [1, 63, 257], ids=lambda n: f"N{n}")
@pytest.mark.parametrize("form", FORMS)
def test_every_form_on_every_backend_matches_the_reference(form, n, lead, causal, dtype, backend, rng):
    q, k, v = make_qkv(rng, lead, n, dtype=dtype)
    got = run(backend, q, k, v, form=form, causal=causal, chunk_size=16)
    assert got.dtype == dtype and got.shape == lead + (n, v.shape[-1])
    assert_close(got, reference(q, k, v, causal=causal), what=f"{backend} {form}")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("feature_map", ["elu+1", "relu", "identity"])
@pytest.mark.parametrize("chunk_size", [1, 7, 64, 300], ids=lambda c: f"C{c}")
def test_chunk_sizes_and_feature_maps(chunk_size, feature_map, causal, backend, rng):
    """The maps a kernel may apply itself (numba's chunkwise kernel does), at chunk sizes that
    leave a short last chunk, one token per chunk, or one chunk for everything."""
    q, k, v = make_qkv(rng, (2,), 100)
    if feature_map == "identity":
        q, k = np.abs(q) + 0.1, np.abs(k) + 0.1  # positive weights: no denominator near 0
    got = run(backend, q, k, v, form="chunkwise", causal=causal, feature_map=feature_map,
              chunk_size=chunk_size)
    assert_close(got, reference(q, k, v, feature_map, causal), what=f"{backend} {feature_map} C={chunk_size}")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("form", FORMS)
def test_fewer_queries_than_keys(form, backend, rng):
    q, k, v = make_qkv(rng, (2, 3), 100, n_q=37)
    got = run(backend, q, k, v, form=form, chunk_size=16)
    assert got.shape == (2, 3, 37, v.shape[-1])
    assert_close(got, reference(q, k, v), what=f"{backend} {form}, N_q=37, N=100")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("form", FORMS)
def test_eps_guards_rows_without_features(form, backend, rng):
    """relu zeroes whole feature rows, so some denominators are eps alone."""
    q, k, v = make_qkv(rng, (2,), 63)
    q[:, ::4] = -np.abs(q[:, ::4])  # queries with every feature 0 under relu
    got = run(backend, q, k, v, form=form, causal=True, feature_map="relu", eps=0.25)
    assert_close(got, reference(q, k, v, "relu", True, eps=0.25), what=f"{backend} {form}, eps=0.25")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("return_state", [False, True], ids=["out", "out+state"])
def test_vanished_denominator_is_reported(return_state, form, causal, backend):
    """eps=0 and a query with no features: 0/0 reaches the NaN check (numba's default error
    model would raise ZeroDivisionError instead; a kernel that divides itself must report it),
    whether or not the state is returned too."""
    q, k, v = -np.ones((4, 3)), np.ones((4, 3)), np.ones((4, 2))
    with pytest.raises(ValueError, match="denominator"):
        run(backend, q, k, v, feature_map="relu", eps=0.0, form=form, causal=causal,
            return_state=return_state)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("name", ["q", "k", "v"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
def test_every_nonfinite_input_is_named(bad, name, causal, backend, rng):
    """One bad entry anywhere, even the last one of a short last chunk in the last sequence,
    raises the usual error, whether linear_attention or a kernel finds it."""
    inputs = dict(zip("qkv", make_qkv(rng, (2, 3), 70)))
    for index in [(0, 0, 0, 0), (1, 2, 69, -1), (1, 1, 33, 2)]:
        spoiled = {key: value.copy() for key, value in inputs.items()}
        spoiled[name][index] = bad
        with pytest.raises(ValueError, match=f"^{name} must be finite"):
            run(backend, **spoiled, causal=causal, form="chunkwise")


@pytest.mark.parametrize("backend", ["numba"])
@given(lead=st.lists(st.integers(1, 3), max_size=2), n=st.integers(1, 40), n_q=st.integers(1, 40),
       d=st.integers(1, 6), d_v=st.integers(1, 6), causal=st.booleans(),
       form=st.sampled_from(FORMS), chunk_size=st.integers(1, 20),
       dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**32 - 1))
def test_random_shapes(backend, lead, n, n_q, d, d_v, causal, form, chunk_size, dtype, seed):
    pytest.importorskip(backend)
    n_q = n if causal else n_q
    q, k, v = make_qkv(np.random.default_rng(seed), tuple(lead), n, dtype=dtype, n_q=n_q, d=d, d_v=d_v)
    got = run(backend, q, k, v, form=form, causal=causal, chunk_size=chunk_size)
    assert got.dtype == dtype
    assert_close(got, reference(q, k, v, causal=causal), what=f"{backend} {form}")


def test_backends_provide_the_family_forms_and_nothing_for_linear_attention():
    for name in la.available_backends():
        module = la.backends.get_backend(name)
        assert set(module.GATED_FORMS) == {"recurrent", "parallel", "chunkwise"}, name
        assert set(module.DELTA_FORMS) == {"recurrent", "chunkwise"}, name
        assert callable(module.to_backend), name
        if name != "torch":  # torch's linear kernels go in their own change
            assert not hasattr(module, "FORMS") and not hasattr(module, "FUSED"), name
