"""The gates explorer: the mixing matrix is the package's, and each decay kind keeps what it should."""

from __future__ import annotations

import numpy as np
import pytest

import lattn_edu as la
from lattn_edu.explorers.gates import FLAGS, GatesExplorer, compute_gates, flagged_task, gate


@pytest.mark.parametrize("kind", ["none", "fixed γ", "selective"])
def test_mixing_matrix_is_qk_times_decay_times_write(kind):
    result = compute_gates(kind, 2.0, n=37, seed=4)
    q, k, flag = flagged_task(37, seed=4)
    g, write = gate(kind, 2.0, flag)
    expected = (q @ k.T) * la.decay_mask(g) * write[None, :]
    np.testing.assert_allclose(result["mixing"], expected, rtol=1e-12, atol=1e-15)
    assert np.all(np.triu(result["mixing"], 1) == 0)


def test_each_kind_keeps_what_it_should():
    held, second = FLAGS
    none, fixed, selective = (compute_gates(kind, 1.0) for kind in ("none", "fixed γ", "selective"))
    np.testing.assert_array_equal(none["survival"], 1.0)  # nothing is ever forgotten
    distance = np.arange(len(fixed["survival"]))
    np.testing.assert_allclose(fixed["survival"], np.exp(-distance / 8), rtol=1e-12)
    before_second = second - held - 1  # the row just before the second flag
    assert selective["survival"][before_second] > 0.98  # fillers keep the state
    assert selective["survival"][-1] < 1e-2  # the second flag wipes it
    assert selective["share"][before_second] > 0.9 > fixed["share"][before_second]


def test_strength_sets_the_fixed_decay_and_bad_kind_is_named():
    q, k, flag = flagged_task(16)
    g, write = gate("fixed γ", 4.0, flag)
    np.testing.assert_allclose(np.exp(g), np.exp(-0.5))
    np.testing.assert_array_equal(write, 1.0)
    with pytest.raises(ValueError, match="kind must be one of"):
        gate("sometimes", 1.0, flag)


def test_figure_and_defaults():
    fig = GatesExplorer().plot(compute_gates("fixed γ", 0.5))
    assert "fixed γ" in fig.get_suptitle()
    assert GatesExplorer().defaults == {"kind": "selective", "strength": 1.0}
