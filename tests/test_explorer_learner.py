"""The learner explorer: each rule's map is the package's, equals a plain loop of its update, and
shows what the chapter says (the newest pair's error shrinks by |1 − β| per step; the exact solve
fits every pair up to m and is the best fit beyond)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from lattn_edu import explorers
from lattn_edu.explorers.learner import (KEY_WIDTH, MOMENTUM, PAIRS, REPEATS, RIDGE, RULES, LearnerExplorer,
                                         compute_learner, momentum_memory, stream)
from lattn_edu.memory import retrieval_error, write_memory

GRID = list(itertools.product(*LearnerExplorer.controls.values()))


def loop_map(rule: str, keys: np.ndarray, values: np.ndarray, beta: float) -> np.ndarray:
    """Each rule written out in plain numpy, one pair at a time (independent of the package)."""
    if rule == "exact solve":
        return np.linalg.solve(keys.T @ keys + RIDGE * np.eye(keys.shape[1]), keys.T @ values)
    state, momentum = np.zeros((keys.shape[1], values.shape[1])), np.zeros((keys.shape[1], values.shape[1]))
    for k, v in zip(keys, values, strict=True):
        if rule == "add":
            state = state + np.outer(k, v)
        for _ in range({"delta step": 1, "3 delta steps": REPEATS}.get(rule, 0)):
            state = state - beta * np.outer(k, state.T @ k - v)  # S − β ∇ℓ(S)
        if rule == "momentum":
            momentum = MOMENTUM * momentum - beta * np.outer(k, state.T @ k - v)
            state = state + momentum
    return state


@pytest.mark.parametrize("rule,beta,t", GRID)
def test_every_map_is_its_rule_written_out(rule, beta, t):
    result = compute_learner(rule, beta, t)
    keys, values = (x[:t] for x in stream())
    expected = loop_map(rule, keys, values, beta)
    # atol: at t < m the exact solve's H + λI has condition number about 1/λ = 1e6, so two solvers
    # agree to about 1e6 · 1e-16
    np.testing.assert_allclose(result["state"], expected, rtol=1e-9, atol=1e-9)
    expected_errors = retrieval_error(expected, keys, values)
    np.testing.assert_allclose(result["errors"], expected_errors, rtol=1e-9, atol=1e-9)
    assert 0 <= result["errors"].min() and result["errors"].max() < 8  # inside the fixed y axis


@pytest.mark.parametrize("t", LearnerExplorer.controls["t"])
def test_the_sum_and_the_delta_steps_are_the_memory_modules(t):
    keys, values = (x[:t] for x in stream())
    np.testing.assert_allclose(compute_learner("add", 1.0, t)["state"],
                               write_memory(keys, values, "additive"), rtol=1e-13)
    np.testing.assert_allclose(compute_learner("delta step", 0.5, t)["state"],
                               write_memory(keys, values, "delta", 0.5), rtol=1e-13)
    np.testing.assert_allclose(momentum_memory(keys, values, 0.5, momentum=0.0),
                               write_memory(keys, values, "delta", 0.5), rtol=1e-13)  # η = 0: no momentum


def test_the_stream_is_seeded_unit_and_not_orthogonal():
    keys, values = stream()
    assert keys.shape == (PAIRS, KEY_WIDTH) and values.shape[0] == PAIRS
    np.testing.assert_allclose(np.linalg.norm(keys, axis=1), 1.0, rtol=1e-14)
    np.testing.assert_allclose(np.linalg.norm(values, axis=1), 1.0, rtol=1e-14)
    assert np.abs(keys[:KEY_WIDTH] @ keys[:KEY_WIDTH].T - np.eye(KEY_WIDTH)).max() > 0.3
    np.testing.assert_array_equal(stream()[0], keys)


@pytest.mark.parametrize("rule,repeats", [("delta step", 1), ("3 delta steps", REPEATS)])
@pytest.mark.parametrize("beta", LearnerExplorer.controls["beta"])
@pytest.mark.parametrize("t", LearnerExplorer.controls["t"])
def test_each_step_multiplies_the_newest_pairs_error_by_one_minus_beta(rule, repeats, beta, t):
    """A unit key: one delta step leaves v_t − Sᵀk_t times (1 − β), so r steps times |1 − β|^r."""
    keys, values = (x[:t] for x in stream())
    before = compute_learner(rule, beta, t - 1)["state"] if t > 1 else np.zeros((KEY_WIDTH, values.shape[1]))
    error_before = retrieval_error(before, keys[-1:], values[-1:])[0]
    newest = compute_learner(rule, beta, t)["errors"][-1]
    np.testing.assert_allclose(newest, abs(1 - beta) ** repeats * error_before, rtol=1e-9, atol=1e-14)
    assert f"{abs(1 - beta) ** repeats:g}" in compute_learner(rule, beta, t)["summary"]


def test_the_exact_solve_fits_every_pair_up_to_m_and_fits_best_beyond():
    for t in (4, KEY_WIDTH):
        assert compute_learner("exact solve", 1.0, t)["errors"].max() < 1e-3  # λ = 1e-6: only the ridge
        assert compute_learner("delta step", 1.0, t)["errors"].max() > 0.5  # keys not orthogonal
    for t in (12, PAIRS):
        exact = compute_learner("exact solve", 1.0, t)
        assert exact["errors"].min() > 0.01  # more pairs than the key width: no map fits them all
        for rule, beta in itertools.product(RULES, LearnerExplorer.controls["beta"]):
            other = compute_learner(rule, beta, t)  # the ridge objective: squared errors plus λ‖S‖²
            objective = np.sum(other["errors"] ** 2) + RIDGE * np.sum(other["state"] ** 2)
            assert np.sum(exact["errors"] ** 2) <= objective, (rule, beta, t)


def test_beta_moves_only_the_rules_that_have_a_step():
    for rule in RULES:
        maps = [compute_learner(rule, beta, 12)["state"] for beta in LearnerExplorer.controls["beta"]]
        same = all(np.array_equal(maps[0], other) for other in maps[1:])
        assert same == (rule in ("add", "exact solve")), rule
        assert ("β = 1 does not enter" in compute_learner(rule, 1.0, 12)["summary"]) == same


def test_the_figure_moves_its_bars_in_place_and_says_the_numbers():
    explorer = LearnerExplorer()
    fig = explorer.render()
    bars = list(fig.axes[0].patches)
    assert len(bars) == PAIRS
    again = explorer.draw(fig, **explorer.settings(rule="momentum", beta=1.5, t=4))
    assert again is fig and list(fig.axes[0].patches) == bars  # updated in place
    result = compute_learner("momentum", 1.5, 4)
    np.testing.assert_allclose([bar.get_height() for bar in bars[:4]], result["errors"])
    assert all(bar.get_height() == 0 for bar in bars[4:])  # pairs not arrived yet
    title = fig.get_suptitle()
    assert result["summary"] in title and "over the 4 pairs" in title
    assert f"long-run step β/(1 − η) = {1.5 / (1 - MOMENTUM):g}" in title


def test_description_says_the_rule_and_its_errors_in_one_line():
    explorer = LearnerExplorer()
    assert explorer.defaults == {"rule": "delta step", "beta": 1.0, "t": 12}
    said = explorer.describe(**explorer.defaults)
    assert "\n" not in said and "update rule: delta step" in said and "pairs arrived t: 12" in said
    assert "newest pair 0 " in said  # β = 1 on a unit key: the newest pair is read back exactly
    assert compute_learner("delta step", 1.0, 12)["summary"] in said
    assert explorer.describe("no reason", **explorer.defaults).endswith("Not drawn: no reason")


def test_the_grid_stays_small_and_the_explorer_is_catalogued():
    assert explorers.CATALOG["learner"] is LearnerExplorer
    assert math.prod(len(options) for options in LearnerExplorer.controls.values()) <= 60  # under 3 MB
    assert max(LearnerExplorer.controls["t"]) == PAIRS and min(LearnerExplorer.controls["t"]) < KEY_WIDTH


@pytest.mark.parametrize("settings,match", [
    ({"rule": "adam", "beta": 1.0, "t": 4}, "rule must be one of"),
    ({"rule": "add", "beta": 1.0, "t": 0}, "t must be a positive int"),
    ({"rule": "add", "beta": 1.0, "t": PAIRS + 1}, "t must be at most"),
    ({"rule": "add", "beta": 2.5, "t": 4}, "beta must be a number in"),
    ({"rule": "add", "beta": True, "t": 4}, "beta must be a number in"),
])
def test_bad_settings_are_named(settings, match):
    with pytest.raises(ValueError, match=match):
        compute_learner(**settings)
    with pytest.raises(TypeError, match="t must be a positive int"):
        compute_learner("add", 1.0, 4.0)
    with pytest.raises(ValueError, match="unknown"):
        LearnerExplorer().render(width=3)
