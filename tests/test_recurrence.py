"""The one dispatcher (recurrence.run_recurrence): every backend's FAMILIES table, the refusal
of a form a backend lacks, and tuple states passing through intact."""

from __future__ import annotations

import numpy as np
import pytest

import lattn_edu as la
from lattn_edu.backends import get_backend
from lattn_edu.backends.reference import FAMILIES as REFERENCE_FAMILIES
from lattn_edu.recurrence import check_finite_result, run_recurrence

from conftest import assert_close


@pytest.mark.parametrize("backend", la.available_backends())
def test_every_backend_lists_its_families(backend):
    families = get_backend(backend).FAMILIES
    assert {"gated", "delta"} <= set(families)
    for family, forms in families.items():
        assert family in REFERENCE_FAMILIES, f"{backend} runs {family!r}, which has no reference"
        assert set(forms) <= set(REFERENCE_FAMILIES[family]), f"{backend}: {family} has a form without reference"


def test_reference_backends_share_one_table():
    for backend in ("numpy", "torch"):
        if backend in la.available_backends():
            assert get_backend(backend).FAMILIES is REFERENCE_FAMILIES


def test_a_missing_form_is_refused_by_name(rng):
    q, k, v = rng.standard_normal((3, 1, 9, 4))
    with pytest.raises(ValueError, match=r"backend='numpy' has the forms .* got form='quadratic'"):
        run_recurrence("gated", (q, k, v, None), 0.5, "quadratic", "numpy", 4, None, False)
    with pytest.raises(ValueError, match=r"backend='numpy' has no kernels for this model"):
        run_recurrence("no such model", (q, k, v), 0.5, "recurrent", "numpy", 4, None, False)


def test_the_state_comes_back_in_the_callers_type(rng):
    q, k, v = rng.standard_normal((3, 2, 11, 3))
    out, state = run_recurrence("gated", (q, k, v, None), 1.0, "recurrent", "numpy", 4, None, True)
    assert_close(out, la.gated_linear_attention(q, k, v, scale=1.0, form="recurrent"))
    assert_close(state, np.einsum("bnk,bnv->bkv", k, v))


def test_a_nonfinite_tuple_state_is_reported():
    finite = np.zeros((2, 3))
    check_finite_result(finite, (finite, finite))
    with pytest.raises(ValueError, match="overflowed"):
        check_finite_result(finite, (finite, np.full((2, 2), np.inf)))


def test_an_output_the_kernel_checked_is_not_read_again_but_the_state_is():
    finite, bad = np.zeros((2, 3)), np.full((2, 3), np.nan)
    check_finite_result(bad, finite, out_checked=True)  # the kernel reported its own output
    with pytest.raises(ValueError, match="overflowed"):
        check_finite_result(bad, finite)
    with pytest.raises(ValueError, match="overflowed"):
        check_finite_result(finite, bad, out_checked=True)
