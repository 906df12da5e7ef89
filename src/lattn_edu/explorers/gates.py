"""Explorer ``gates``: no decay, a fixed γ or a selective gate on chapter 8's flagged-token task (chapter 11).

    S_t = exp(g_t) S_{t-1} + w_t k_t v_tᵀ,     A_ij = w_j (q_i·k_j) Π_{l=j+1..i} exp(g_l)

- none: g_t = 0, w_t = 1 (plain linear attention without its normaliser);
- fixed γ: g_t = −s/8 for every token (RetNet; γ = exp(−s/8));
- selective: Δ_t = softplus(14·flag_t − 7), g_t = −s·Δ_t, w_t = Δ_t (Mamba-2's scalar gate: a
  flagged token wipes the state and writes itself, a filler keeps the state and writes ~nothing).

The memory trace of the first flagged token j* is how much of its write survives at step i,
Π_{l=j*+1..i} exp(g_l), and the share of row i's absolute weight that sits on it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure

from ..style import PALETTE
from ..gated import decay_mask, gated_linear_attention
from .base import Explorer

HEAD_WIDTH = 8  # d_k of the seeded q, k
FLAGS = (10, 32)  # chapter 8's "remember me" tokens
GATE_KINDS = ("none", "fixed γ", "selective")
FIXED_RATE = 1 / 8  # fixed γ = exp(−s/8): strength 1 gives a half-life of 8 ln 2 ≈ 5.5 tokens
LENGTH = 48  # N of the explorer's sequence


def flagged_task(n: int, flags: tuple[int, ...] = FLAGS, d: int = HEAD_WIDTH,
                 seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seeded queries and keys [N, d] with q·k of order 1, and the flag [N]: 1 on ``flags``, else 0."""
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((2, n, d)) / d**0.25
    flag = np.zeros(n)
    flag[[f for f in flags if f < n]] = 1.0
    return q, k, flag


def gate(kind: str, strength: float, flag: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log decay g [N], write strength w [N]) of one decay kind at strength s > 0."""
    if kind == "none":
        return np.zeros_like(flag), np.ones_like(flag)
    if kind == "fixed γ":
        return np.full_like(flag, -strength * FIXED_RATE), np.ones_like(flag)
    if kind == "selective":
        step = np.logaddexp(0, 14 * flag - 7)  # Δ_t = softplus(14·flag − 7): ~7 on a flag, ~1e-3 else
        return -strength * step, step
    raise ValueError(f"kind must be one of {', '.join(map(repr, GATE_KINDS))}; got {kind!r}")


def compute_gates(kind: str, strength: float, n: int = LENGTH, seed: int = 0) -> dict[str, Any]:
    """The mixing matrix A [N, N] (read off ``gated_linear_attention`` with V = I), and the first
    flagged token's survival Π exp(g_l) and share of |A| in each row i >= j* ([N - j*] each)."""
    q, k, flag = flagged_task(n, seed=seed)
    g, write = gate(kind, strength, flag)
    mixing = gated_linear_attention(q, k * write[:, None], np.eye(n), g, scale=1.0,
                                    form="parallel")  # A  [N, N]
    held = FLAGS[0]
    share = np.abs(mixing[held:, held]) / np.abs(mixing[held:]).sum(-1)
    return {"kind": kind, "strength": strength, "n": n, "mixing": mixing, "held": held,
            "positions": np.arange(held, n), "survival": decay_mask(g)[held:, held],
            "share": share}


class GatesExplorer(Explorer):
    """Switch between no decay, a fixed γ and a selective gate, and set how strongly each forgets.

    Left: the mixing matrix with the flags marked. Right: the memory trace of the first flag.
    No legend on purpose: the title names the two curves, and a legend's layout costs more
    than the rest of the redraw.
    """

    name = "gates"
    title = "Gates: what each kind of decay keeps of a flagged token"
    controls = {"kind": GATE_KINDS, "strength": (0.25, 0.5, 1.0, 2.0, 4.0)}
    defaults = {"kind": "selective", "strength": 1.0}
    labels = {"kind": "decay kind", "strength": "strength s"}

    def compute(self, kind: str, strength: float) -> dict[str, Any]:
        return compute_gates(kind, strength)

    def build(self, fig: Figure) -> dict[str, Any]:
        """Both panels for a sequence of LENGTH tokens, the flags dotted, the data empty."""
        n, held = LENGTH, FLAGS[0]
        heat_ax, trace_ax = fig.subplots(1, 2, width_ratios=[1, 1.25])
        artists: dict[str, Any] = {"mixing": heat_ax.imshow(np.zeros((n, n)), cmap="RdBu_r",
                                                             interpolation="nearest")}
        for flag in FLAGS:
            heat_ax.axvline(flag, color="0.33", linestyle=":", linewidth=1)
            trace_ax.axvline(flag, color="0.6", linestyle=":", linewidth=1)
        heat_ax.set(xticks=[0, *FLAGS, n - 1], yticks=[0, n // 2, n - 1], xlabel="source j (flags dotted)",
                    ylabel="output i", title="mixing matrix A")
        heat_ax.grid(False)
        artists["survival"], = trace_ax.plot([], [], color=PALETTE["blue"])
        artists["share"], = trace_ax.plot([], [], color=PALETTE["vermillion"], linestyle="--")
        trace_ax.set(xlim=(0, n - 1), ylim=(-0.03, 1.05), xticks=[0, *FLAGS, n - 1], yticks=[0, 0.5, 1],
                     xlabel="step i",
                     title=f"token {held}: write kept Π a_l (blue, solid), share of |A| (vermillion, dashed)")
        trace_ax.grid(alpha=0.3)
        artists["title"] = fig.suptitle("", fontsize=11)
        return artists

    def update(self, artists: dict[str, Any], result: dict[str, Any]) -> None:
        """The mixing matrix on a scale symmetric about 0, the two traces and the suptitle."""
        limit = float(np.abs(result["mixing"]).max())
        artists["mixing"].set_data(result["mixing"])
        artists["mixing"].set_clim(-limit, limit)
        artists["survival"].set_data(result["positions"], result["survival"])
        artists["share"].set_data(result["positions"], result["share"])
        artists["title"].set_text(f"decay: {result['kind']}, strength s = {result['strength']:g}")
