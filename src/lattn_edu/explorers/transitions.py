"""Explorer ``transitions``: what one step's transition A can do to a state (chapter 13).

    S_t = A S_{t-1}   (nothing written: v = 0),   x, A x, A² x, … for a state x ∈ R²

Five transitions of the book's models, on a two-dimensional key space so the motion can be drawn:

- scalar decay, A = γ I (Mamba-2, RetNet): every direction shrinks alike;
- diagonal, A = diag(α₁, α₂) (GLA): each channel at its own rate; the eigenvalues are the decays;
- Householder, A = I − β k kᵀ (DeltaNet): eigenvalues 1 (along k⊥) and 1 − β (along k), so
  β = 2 is a reflection, the only way one step of the delta rule reaches a negative eigenvalue;
- two Householders, A = (I − β k₂k₂ᵀ)(I − β k₁k₁ᵀ) (DeltaProduct, n_h = 2): at β = 2 a product
  of two reflections, a rotation by twice the angle between the keys, eigenvalues e^{±iφ} on
  the unit circle, which no single diagonal or Householder step can express;
- DPLR, A = diag(α) − β a bᵀ (RWKV-7's diagonal plus low rank): it reads along b and writes
  along a; with a ≠ b the matrix is not symmetric, so its eigenvalues can be complex, and its
  powers can grow for a while even though every eigenvalue lies inside the unit circle.

Each transition is the package's own: the model runs with nothing written from an identity
state (S_1 = A I = A), and the orbit is the model run for STEPS steps from x, read one
coordinate per head (q = e_i, scale 1).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ..delta import delta_rule
from ..delta_product import delta_product
from ..gated import gated_linear_attention
from ..generalized_delta import generalized_delta_rule
from ..style import PALETTE
from ._ticks import SUPERSCRIPTS
from .base import Explorer

KINDS = ("scalar decay", "diagonal", "Householder", "two Householders", "DPLR")
STEPS = 12  # applications of A drawn: rotations by 2θ = 60°, 120° and 180° each close within them
STEPS_SUPERSCRIPT = str(STEPS).translate(SUPERSCRIPTS)  # ¹², plain text: no mathtext to parse
SCALAR_DECAY = 0.9  # γ of the scalar decay
DIAGONAL_DECAYS = (0.95, 0.6)  # α₁, α₂ of the diagonal
DPLR_DECAYS = (0.95, 0.8)  # the diagonal of DPLR
DPLR_TURN = -60  # degrees from the read direction b to the write direction a: not symmetric
START_ANGLE = 20  # degrees: the start state x, a unit vector along no key of the grid
REACH = 1.6  # the orbit panels' half-width: DPLR's powers of the start state grow to 1.5 before they decay


def unit(degrees: float) -> np.ndarray:
    """The unit vector [2] at ``degrees`` from the first axis."""
    radians = math.radians(degrees)
    return np.array([math.cos(radians), math.sin(radians)])


def run_transition(kind: str, beta: float, theta: float, initial_state: np.ndarray,
                   q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Run the package's model of ``kind`` with nothing written, so S_t = A S_{t-1}, and read
    o_t = S_tᵀ q_t (scale 1).

    initial_state [..., 2, d_v], q [..., N, 2] -> (o [..., N, d_v], S_N [..., 2, d_v]).
    The key k (Householder), the second key k₂ (k₁ along the first axis) and DPLR's read b
    lie at ``theta`` degrees; β is the step of each Householder factor and of DPLR's low rank.
    """
    steps, d_v = q.shape[:-1], initial_state.shape[-1]  # [..., N], d_v
    no_key, no_value = np.zeros(q.shape), np.zeros((*steps, d_v))
    common = {"scale": 1.0, "form": "recurrent", "initial_state": initial_state, "return_state": True}
    if kind == "scalar decay":  # log decay one scalar per step: γ I
        return gated_linear_attention(q, no_key, no_value, np.full(steps, math.log(SCALAR_DECAY)), **common)
    if kind == "diagonal":  # one log decay per key channel: diag(α)
        log_decay = np.broadcast_to(np.log(DIAGONAL_DECAYS), q.shape).copy()  # [..., N, 2]
        return gated_linear_attention(q, no_key, no_value, log_decay, **common)
    if kind == "Householder":  # S ← (I − β k kᵀ) S + β k vᵀ with v = 0
        key = np.broadcast_to(unit(theta), q.shape).copy()  # [..., N, 2]
        return delta_rule(q, key, no_value, np.full(steps, float(beta)), **common)
    if kind == "two Householders":  # k₁'s step first, then k₂'s: A = H₂ H₁
        keys = np.broadcast_to(np.stack([unit(0), unit(theta)]), (*steps, 2, 2)).copy()  # [..., N, n_h, 2]
        return delta_product(q, keys, np.zeros((*steps, 2, d_v)), np.full((*steps, 2), float(beta)), **common)
    if kind == "DPLR":  # A = diag(α) + a bᵀ with a = −β · (unit vector DPLR_TURN from b)
        write = np.broadcast_to(-beta * unit(theta + DPLR_TURN), q.shape).copy()  # a  [..., N, 2]
        read = np.broadcast_to(unit(theta), q.shape).copy()  # b  [..., N, 2]
        log_decay = np.broadcast_to(np.log(DPLR_DECAYS), q.shape).copy()  # [..., N, 2]
        return generalized_delta_rule(q, no_key, no_value, write, read, log_decay, **common)
    raise ValueError(f"kind must be one of {', '.join(map(repr, KINDS))}; got {kind!r}")


def transition_matrix(kind: str, beta: float, theta: float) -> np.ndarray:
    """A [2, 2]: one step of the model from the identity state, S_1 = A I."""
    _, state = run_transition(kind, beta, theta, np.eye(2), np.zeros((1, 2)))
    return state


def orbit(kind: str, beta: float, theta: float, start: np.ndarray, steps: int = STEPS) -> np.ndarray:
    """x, A x, …, A^steps x [steps + 1, 2]: the model run ``steps`` steps from the state x
    ([2, 1], d_v = 1), head i reading coordinate i (q_t = e_i)."""
    q = np.broadcast_to(np.eye(2)[:, None, :], (2, steps, 2)).copy()  # [head i, N, 2]
    state = np.broadcast_to(start[:, None], (2, 2, 1)).copy()  # the same x in both heads  [2, 2, 1]
    o, _ = run_transition(kind, beta, theta, state, q)  # o[i, t] = (A^(t+1) x)_i  [2, N, 1]
    return np.concatenate([start[None, :], o[..., 0].T])


def summary(kind: str, beta: float, theta: float) -> str:
    """The transition in one line: its formula at these settings and what it does."""
    if kind == "scalar decay":
        return f"A = {SCALAR_DECAY:g} I: every direction shrinks alike (β and θ do not enter)"
    if kind == "diagonal":
        return (f"A = diag({DIAGONAL_DECAYS[0]:g}, {DIAGONAL_DECAYS[1]:g}): eigenvalues are the decays, "
                f"in (0, 1] (β and θ do not enter)")
    if kind == "Householder":
        what = "a reflection: x·k flips sign every step" if beta == 2 else f"shrinks x along k by 1 − β = {1 - beta:g}"
        return f"A = I − β k kᵀ, β = {beta:g}, k at θ = {theta:g}°: {what}"
    if kind == "two Householders":
        what = f"a rotation by 2θ = {2 * theta:g}°" if beta == 2 else "every |λ| < 1, so x shrinks to 0"
        return f"A = (I − β k₂k₂ᵀ)(I − β k₁k₁ᵀ), β = {beta:g}, k₁ at 0°, k₂ at θ = {theta:g}°: {what}"
    return (f"A = diag({DPLR_DECAYS[0]:g}, {DPLR_DECAYS[1]:g}) + a bᵀ, a = −β·k(θ − {-DPLR_TURN}°), b = k(θ), "
            f"β = {beta:g}, θ = {theta:g}°: not symmetric")


def compute_transitions(kind: str, beta: float, theta: float) -> dict[str, Any]:
    """A [2, 2], its eigenvalues [2] (complex), the orbit x … A^STEPS x [STEPS + 1, 2] of the
    unit start state, its norms [STEPS + 1], the directions of the keys drawn ([n, 2] each)
    and the one-line summary."""
    matrix = transition_matrix(kind, beta, theta)
    points = orbit(kind, beta, theta, unit(START_ANGLE))
    keys = {"Householder": [unit(theta)], "two Householders": [unit(0), unit(theta)],
            "DPLR": [unit(theta), unit(theta + DPLR_TURN)]}.get(kind, [])
    return {"kind": kind, "beta": beta, "theta": theta, "matrix": matrix,
            "eigenvalues": np.linalg.eigvals(matrix), "orbit": points,
            "norms": np.linalg.norm(points, axis=-1), "keys": keys, "summary": summary(kind, beta, theta)}


def _eigenvalue_text(eigenvalues: np.ndarray) -> str:
    """'λ = 0.5 ± 0.866i, |λ| = 1' for a complex pair, 'λ = 1, −1' for real ones."""
    first = eigenvalues[np.argmax(eigenvalues.imag)]
    if abs(first.imag) > 1e-9:
        return f"λ = {first.real:.3g} ± {abs(first.imag):.3g}i\n|λ| = {abs(first):.3g}".replace("-", "−")
    values = sorted(eigenvalues.real, reverse=True)
    return "λ = " + ", ".join(f"{value:.3g}".replace("-", "−") for value in values)


class TransitionsExplorer(Explorer):
    """Pick a transition and see its eigenvalues and the orbit of a state under it.

    Left: the eigenvalues on the complex plane with the unit circle. Middle: the orbit x, A x,
    A² x, … in the plane, with the keys (dashed: the second key, or DPLR's write direction a). Right: the two
    coordinates and the norm over the steps; a coordinate that flips sign each step is a
    parity counter. Few ticks and no legend: the titles name the curves.
    """

    name = "transitions"
    title = "Transitions: what one step A can do to a state (eigenvalues and orbit)"
    controls = {"kind": KINDS, "beta": (0.5, 1.0, 1.5, 2.0), "theta": (30, 60, 90)}  # 60 frames: a 2.6 MB static page
    defaults = {"kind": "two Householders", "beta": 2.0, "theta": 60}
    labels = {"kind": "transition", "beta": "step β", "theta": "key angle θ (degrees)"}
    figsize = (9, 3.2)

    def compute(self, kind: str, beta: float, theta: float) -> dict[str, Any]:
        return compute_transitions(kind, beta, theta)

    def describe(self, reason: str | None = None, **settings: Any) -> str:
        """The controls' values, then what the picture shows: the transition, its eigenvalues
        and how much of the state is left after STEPS steps (the static page's alt text)."""
        said = super().describe(reason, **settings)
        if reason:
            return said
        result = self.compute(**settings)
        eigenvalues = _eigenvalue_text(result["eigenvalues"]).replace("\n", ", ")
        return (f"{said} {result['summary']}. Eigenvalues {eigenvalues}; after {STEPS} steps the state's "
                f"norm is {result['norms'][-1]:.3g} times its start.")

    def build(self, fig: Figure) -> dict[str, Any]:
        """Three panels with their unit circles, zero lines and fixed limits; the data empty."""
        eigen_ax, orbit_ax, time_ax = fig.subplots(1, 3, width_ratios=[1, 1, 1.3])
        circle = np.exp(1j * np.linspace(0, 2 * np.pi, 121))
        for ax, reach in ((eigen_ax, 1.3), (orbit_ax, REACH)):
            ax.plot(circle.real, circle.imag, color="0.6", linewidth=1)
            ax.axhline(0, color="0.8", linewidth=0.8)
            ax.axvline(0, color="0.8", linewidth=0.8)
            ax.set(xlim=(-reach, reach), ylim=(-reach, reach), aspect="equal")
        eigen_ax.set(xticks=[-1, 0, 1], yticks=[-1, 0, 1], xlabel="real part", ylabel="imaginary part")
        orbit_ax.set(xticks=[-1, 0, 1], yticks=[-1, 0, 1], xlabel="x₁", ylabel="x₂")
        time_ax.set(xlim=(-0.3, STEPS + 0.3), ylim=(-REACH, REACH), xticks=[0, 4, 8, STEPS],
                    yticks=[-1, 0, 1], xlabel="step t")
        for ax, title in ((eigen_ax, "eigenvalues of A"), (orbit_ax, "orbit x, Ax, A²x, … (keys green)"),
                          (time_ax, "x₁ blue, x₂ orange, ‖x‖ black dashed")):
            ax.set_title(title, fontsize=10)
        time_ax.axhline(0, color="0.8", linewidth=0.8)
        for ax in (eigen_ax, orbit_ax, time_ax):
            ax.grid(alpha=0.3)
        artists: dict[str, Any] = {
            "eigenvalues": eigen_ax.plot([], [], linestyle="none", marker="o", markersize=8,
                                         color=PALETTE["vermillion"])[0],
            "eigen_text": eigen_ax.text(-1.25, 1.25, "", va="top", fontsize=9),
            "keys": [orbit_ax.plot([], [], color=PALETTE["green"], linewidth=2, linestyle=style)[0]
                     for style in ("-", "--")],
            "orbit": orbit_ax.plot([], [], color=PALETTE["blue"], marker="o", markersize=3, linewidth=1)[0],
            "start": orbit_ax.plot([], [], linestyle="none", marker="s", markersize=6,
                                   color=PALETTE["vermillion"])[0],
            "orbit_text": orbit_ax.text(-REACH + 0.1, REACH - 0.1, "", va="top", fontsize=9),
            "coordinates": [time_ax.plot([], [], color=PALETTE[colour], marker="o", markersize=3)[0]
                            for colour in ("blue", "orange")],
            "norm": time_ax.plot([], [], color=PALETTE["black"], linestyle="--")[0],
            "title": fig.suptitle("", fontsize=10),
        }
        return artists

    def update(self, artists: dict[str, Any], result: dict[str, Any]) -> None:
        """Eigenvalues, keys, orbit, coordinates and norm over t, the two notes and the suptitle."""
        eigenvalues, points = result["eigenvalues"], result["orbit"]
        artists["eigenvalues"].set_data(eigenvalues.real, eigenvalues.imag)
        artists["eigen_text"].set_text(_eigenvalue_text(eigenvalues))
        for position, line in enumerate(artists["keys"]):
            if position < len(result["keys"]):
                key = result["keys"][position]
                line.set_data([0, key[0]], [0, key[1]])
            else:
                line.set_data([], [])  # a decay has no key, one Householder a single one
        artists["orbit"].set_data(points[:, 0], points[:, 1])
        artists["start"].set_data(points[:1, 0], points[:1, 1])
        artists["orbit_text"].set_text(f"start ■, ‖A{STEPS_SUPERSCRIPT}x‖ = {result['norms'][-1]:.3g}")
        steps = np.arange(len(points))
        for line, coordinate in zip(artists["coordinates"], points.T):
            line.set_data(steps, coordinate)
        artists["norm"].set_data(steps, result["norms"])
        artists["title"].set_text(f"{result['kind']}: {result['summary']}")
