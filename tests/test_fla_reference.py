"""Our gated family against flash-linear-attention's own naive references (optional).

``fla-core`` ships pure-torch reference files next to its Triton kernels; importing the ``fla``
package itself wants Triton, so each file is loaded by its path. Their layouts differ from ours
([B, T, H, D] for most, [B, H, T, D] for DeltaNet and retention), they scale q by d_k^-1/2 as we
do by default, and they compute in float32: compared at float32's tolerance against our float64
references and float32 fast backends. Skipped when fla-core (or einops) is not installed:
``pip install --no-deps fla-core einops``.
"""

from __future__ import annotations


import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("einops")

import lattn_edu as la  # noqa: E402

from conftest import assert_close  # noqa: E402
from fla_naive import FLA_SPEC, load  # noqa: E402

pytestmark = pytest.mark.skipif(FLA_SPEC is None, reason="fla-core is not installed")
BACKENDS = [name for name in la.available_backends()]
B, H, T, D_K, D_V = 2, 3, 45, 6, 5


@pytest.fixture
def inputs(rng):
    """Ours as [B, H, T, ·] float64 numpy; theirs are made from them."""
    q, k = rng.standard_normal((2, B, H, T, D_K))
    unit_k = k / np.linalg.norm(k, axis=-1, keepdims=True)
    return {"q": q, "k": k, "unit_k": unit_k, "v": rng.standard_normal((B, H, T, D_V)),
            "g": np.log(rng.uniform(0.5, 1.0, (B, H, T))), "gk": np.log(rng.uniform(0.5, 1.0, (B, H, T, D_K))),
            "beta": rng.uniform(0, 2, (B, H, T)), "s0": rng.standard_normal((B, H, D_K, D_V))}


def bthd(x: np.ndarray) -> torch.Tensor:
    """[B, H, T, ...] numpy -> [B, T, H, ...] float32 tensor, fla's usual layout."""
    return torch.from_numpy(np.ascontiguousarray(np.swapaxes(x, 1, 2))).float()


def bhtd(x: torch.Tensor) -> np.ndarray:
    """fla's [B, T, H, D] output back to our [B, H, T, D]."""
    return np.swapaxes(x.double().numpy(), 1, 2)


def ours_gated(x, g, backend, dtype, form="chunkwise"):
    args = [None if a is None else a.astype(dtype) for a in (x["q"], x["k"], x["v"], g, x["s0"])]
    return la.gated_linear_attention(*args[:4], backend=backend, form=form, chunk_size=16, initial_state=args[4],
                                     return_state=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_simple_gla_scalar_decay(inputs, backend):
    module = load("simple_gla/naive.py")
    o, s = module.naive_recurrent_simple_gla(bthd(inputs["q"]), bthd(inputs["k"]), bthd(inputs["v"]),
                                             bthd(inputs["g"]), initial_state=torch.from_numpy(inputs["s0"]).float(),
                                             output_final_state=True)
    o_chunk, s_chunk = module.naive_chunk_simple_gla(bthd(inputs["q"]), bthd(inputs["k"]), bthd(inputs["v"]),
                                                     bthd(inputs["g"]), torch.from_numpy(inputs["s0"]).float(),
                                                     output_final_state=True, chunk_size=16)
    for dtype in (np.float64, np.float32):
        out, state = ours_gated(inputs, inputs["g"], backend, dtype)
        for theirs_o, theirs_s in ((o, s), (o_chunk, s_chunk)):
            assert_close(bhtd(theirs_o), out, rtol=1e-4)
            assert_close(theirs_s, state, rtol=1e-4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gla_vector_decay(inputs, backend):
    o, s = load("gla/naive.py").naive_recurrent_gla(bthd(inputs["q"]), bthd(inputs["k"]), bthd(inputs["v"]),
                                                     bthd(inputs["gk"]), torch.from_numpy(inputs["s0"]).float(),
                                                     output_final_state=True)
    for dtype in (np.float64, np.float32):
        out, state = ours_gated(inputs, inputs["gk"], backend, dtype)
        assert_close(bhtd(o), out, rtol=1e-4)
        assert_close(s, state, rtol=1e-4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_retention_is_a_constant_scalar_decay(inputs, backend):
    """fla's retention: head h decays by γ_h = 1 − 2^(−5−h), no initial state."""
    o = load("retention/naive.py").naive_retention(*(torch.from_numpy(inputs[n]).float() for n in ("q", "k", "v")))
    gamma = 1 - 2.0 ** (-5 - np.arange(H))
    g = np.broadcast_to(np.log(gamma)[None, :, None], (B, H, T))
    out = la.gated_linear_attention(inputs["q"], inputs["k"], inputs["v"], g, backend=backend, chunk_size=16)
    assert_close(o.double().numpy(), out, rtol=1e-4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_deltanet(inputs, backend):
    q, k, v, beta = (torch.from_numpy(inputs[n]).float() for n in ("q", "unit_k", "v", "beta"))
    o, s = load("delta_rule/naive.py").delta_rule_recurrence(q, k, v, beta,
                                                              torch.from_numpy(inputs["s0"]).float())
    for dtype in (np.float64, np.float32):
        args = [inputs[n].astype(dtype) for n in ("q", "unit_k", "v", "beta", "s0")]
        out, state = la.delta_rule(*args[:4], backend=backend, chunk_size=16, initial_state=args[4],
                                   return_state=True)
        assert_close(o.double().numpy(), out, rtol=1e-4)
        assert_close(s, state, rtol=1e-4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gated_deltanet(inputs, backend):
    module = load("gated_delta_rule/naive.py")
    theirs = [bthd(inputs[n]) for n in ("q", "unit_k", "v", "beta", "g")]
    s0 = torch.from_numpy(inputs["s0"]).float()
    o, s = module.naive_recurrent_gated_delta_rule(*theirs, initial_state=s0, output_final_state=True)
    q, k, v, beta, g = theirs
    o_chunk, s_chunk = module.naive_chunk_gated_delta_rule(q, k, v, g, beta, chunk_size=16, initial_state=s0,
                                                           output_final_state=True)
    for dtype in (np.float64, np.float32):
        args = [inputs[n].astype(dtype) for n in ("q", "unit_k", "v", "beta", "g", "s0")]
        out, state = la.delta_rule(*args[:5], backend=backend, chunk_size=16, initial_state=args[5],
                                   return_state=True)
        for theirs_o, theirs_s in ((o, s), (o_chunk, s_chunk)):
            assert_close(bhtd(theirs_o), out, rtol=1e-4)
            assert_close(theirs_s, state, rtol=1e-4)
