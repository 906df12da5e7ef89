"""The transitions explorer: each transition is the package's, and its eigenvalues and orbit are the known ones."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from lattn_edu.explorers.transitions import (DIAGONAL_DECAYS, DPLR_DECAYS, DPLR_TURN, KINDS, SCALAR_DECAY,
                                             START_ANGLE, STEPS, TransitionsExplorer, compute_transitions,
                                             transition_matrix, unit)

GRID = list(itertools.product(KINDS, TransitionsExplorer.controls["beta"], TransitionsExplorer.controls["theta"]))


def rotation(degrees: float) -> np.ndarray:
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    return np.array([[c, -s], [s, c]])


@pytest.mark.parametrize("beta", [0.5, 1.0, 1.5, 2.0])
@pytest.mark.parametrize("theta", [30, 60, 90])
def test_householder_is_identity_minus_beta_k_k_with_eigenvalues_one_and_one_minus_beta(beta, theta):
    k = unit(theta)
    np.testing.assert_allclose(transition_matrix("Householder", beta, theta), np.eye(2) - beta * np.outer(k, k),
                               atol=1e-14)
    eigenvalues = np.sort(compute_transitions("Householder", beta, theta)["eigenvalues"].real)
    np.testing.assert_allclose(eigenvalues, np.sort([1.0, 1.0 - beta]), atol=1e-12)


def test_beta_two_with_a_unit_key_is_a_reflection():
    result = compute_transitions("Householder", 2.0, 60)
    np.testing.assert_allclose(np.sort(result["eigenvalues"].real), [-1.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(result["eigenvalues"].imag, 0.0, atol=1e-12)
    along_key = result["orbit"] @ unit(60)  # x·k flips sign every step: a parity counter
    np.testing.assert_allclose(along_key, along_key[0] * (-1.0) ** np.arange(STEPS + 1), atol=1e-12)


@pytest.mark.parametrize("theta", [30, 60, 90])
def test_two_reflections_rotate_by_twice_the_angle_between_the_keys(theta):
    result = compute_transitions("two Householders", 2.0, theta)
    np.testing.assert_allclose(result["matrix"], rotation(2 * theta), atol=1e-12)
    np.testing.assert_allclose(np.abs(result["eigenvalues"]), 1.0, atol=1e-12)
    angles = np.sort(np.abs(np.degrees(np.angle(result["eigenvalues"]))))
    np.testing.assert_allclose(angles, [2 * theta, 2 * theta], atol=1e-6)


@pytest.mark.parametrize("kind,beta,theta", [("Householder", 2.0, 30), ("two Householders", 2.0, 30),
                                             ("two Householders", 2.0, 90)])
def test_an_orthogonal_transition_keeps_the_orbit_on_the_unit_circle(kind, beta, theta):
    result = compute_transitions(kind, beta, theta)
    np.testing.assert_allclose(result["matrix"].T @ result["matrix"], np.eye(2), atol=1e-12)
    np.testing.assert_allclose(result["norms"], 1.0, atol=1e-12)


def test_decays_have_their_decays_as_eigenvalues():
    scalar = compute_transitions("scalar decay", 1.0, 30)
    np.testing.assert_allclose(scalar["matrix"], SCALAR_DECAY * np.eye(2), atol=1e-14)
    diagonal = compute_transitions("diagonal", 1.0, 30)
    np.testing.assert_allclose(diagonal["matrix"], np.diag(DIAGONAL_DECAYS), atol=1e-14)
    eigenvalues = np.sort(diagonal["eigenvalues"].real)
    np.testing.assert_allclose(eigenvalues, np.sort(DIAGONAL_DECAYS), atol=1e-14)
    assert np.all((eigenvalues > 0) & (eigenvalues <= 1))
    np.testing.assert_allclose(diagonal["norms"][-1],
                               np.linalg.norm(np.power(DIAGONAL_DECAYS, STEPS) * unit(START_ANGLE)))


@pytest.mark.parametrize("beta", [0.5, 1.0, 1.5, 2.0])
@pytest.mark.parametrize("theta", [30, 60, 90])
def test_dplr_is_diagonal_plus_a_b_transpose(beta, theta):
    expected = np.diag(DPLR_DECAYS) + np.outer(-beta * unit(theta + DPLR_TURN), unit(theta))
    result = compute_transitions("DPLR", beta, theta)
    np.testing.assert_allclose(result["matrix"], expected, atol=1e-14)
    np.testing.assert_allclose(np.sort_complex(result["eigenvalues"]), np.sort_complex(np.linalg.eigvals(expected)),
                               atol=1e-12)


def test_dplr_can_rotate_and_can_grow_with_every_eigenvalue_inside_the_circle():
    rotating = compute_transitions("DPLR", 0.5, 30)
    assert np.abs(rotating["eigenvalues"].imag).max() > 0.1
    growing = compute_transitions("DPLR", 2.0, 30)
    assert np.abs(growing["eigenvalues"]).max() < 0.75 and growing["norms"].max() > 1.4


@pytest.mark.parametrize("kind,beta,theta", GRID)
def test_the_models_orbit_is_the_powers_of_its_transition(kind, beta, theta):
    result = compute_transitions(kind, beta, theta)
    start = unit(START_ANGLE)
    powers = np.stack([np.linalg.matrix_power(result["matrix"], t) @ start for t in range(STEPS + 1)])
    np.testing.assert_allclose(result["orbit"], powers, atol=1e-12)
    assert np.abs(result["orbit"]).max() < 1.6  # inside the orbit panels' limits
    assert np.abs(result["eigenvalues"]).max() <= 1 + 1e-12  # inside the eigenvalue panel


def test_unknown_kind_is_named():
    with pytest.raises(ValueError, match="kind must be one of"):
        transition_matrix("rotation", 2.0, 30)


def test_figure_description_and_defaults():
    explorer = TransitionsExplorer()
    assert explorer.defaults == {"kind": "two Householders", "beta": 2.0, "theta": 60}
    fig = explorer.render()
    assert "rotation by 2θ = 120°" in fig.get_suptitle()
    said = explorer.describe(**explorer.defaults)
    assert "|λ| = 1" in said and "\n" not in said
    grid = math.prod(len(options) for options in explorer.controls.values())
    assert grid <= 60  # the static page stays under 3 MB
