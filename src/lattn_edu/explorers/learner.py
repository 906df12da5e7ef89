"""Explorer ``learner``: the state as a learner, fed key–value pairs one by one (chapter 14).

A fixed seeded stream of PAIRS pairs, random unit keys in R^m (m = KEY_WIDTH = 8, so the
keys are not orthogonal) and random unit values in R^d_v (d_v = 8), arrives one pair at a
time. After t pairs the state is a map S [m, d_v], and each rule is a way of fitting it to
the loss ℓ_j(S) = ½‖Sᵀk_j − v_j‖², whose gradient is ∇ℓ_j(S) = k_j (Sᵀk_j − v_j)ᵀ:

- add:           S ← S + k vᵀ                       (linear attention: a sum, no loss)
- delta step:    S ← S − β ∇ℓ(S)                    (DeltaNet: one SGD step per pair)
- 3 delta steps: the same step REPEATS times         (the pair fed three times to the delta rule)
- momentum:      M ← η M − β ∇ℓ(S),  S ← S + M      (Titans' momentum, η = MOMENTUM, no forgetting)
- exact solve:   S = (KᵀK + λI)⁻¹ KᵀV               (MesaNet: the ridge-regression optimum, λ = RIDGE)

For unit keys one delta step multiplies the newest pair's error by |1 − β|, so REPEATS steps
by |1 − β|^REPEATS; the exact solve has no step size, and fits all t <= m pairs at once.

Every map is the package's: add, the delta steps and the repeats are :func:`lattn_edu.memory.
write_memory` (gated linear attention and :func:`lattn_edu.delta_rule`); the exact solve runs
:func:`lattn_edu.least_squares_attention` for the pair (H, G) and reads the map with the same
function, nothing written, the identity as queries (row j of S is Sᵀe_j).

The momentum rule is Titans' rule on the plain linear map S of the other rules (the rule of
the chapter's momentum exercise), not :func:`lattn_edu.titans_linear`: Titans' memory there
is a layer-normalised inner model, x + LN(x W + b), whose LN output has norm √d_v whatever
the weights, so on this stream (unit values) its error is 1.4 to 4 (measured: m = 8, 16
pairs, η = 0.5), and the same at θ = 0.25, 0.5 and 0.75: from zero weights every step scales
with θ, and a layer norm ignores scale. Nothing on the picture would move with β. Each
gradient step is one step of :func:`lattn_edu.delta_rule` (S − β∇ℓ(S) is a delta step), and
only the momentum is added here. Under a steady gradient the momentum adds β/(1 − η) of it
per step: η = 0.5 doubles the step, so momentum at β looks like the delta rule at 2β.

The picture: the retrieval error ‖Sᵀk_i − v_i‖ / ‖v_i‖ of every pair i <= t (bars, the dotted
line at 1 is the error of the empty state S = 0, the dash-dot line the key width m), the rule
in one line and its errors in numbers. The axes never change, so a move redraws only the bars
and the two lines of text.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure

from .._checks import check_choice, check_positive_int
from ..delta import delta_rule
from ..least_squares import least_squares_attention
from ..memory import make_keys, make_values, retrieval_error, write_memory
from ..style import PALETTE
from ._ticks import SUPERSCRIPTS, fixed_ticks
from .base import Explorer

RULES = ("add", "delta step", "3 delta steps", "momentum", "exact solve")
KEY_WIDTH = 8  # m: a small key space, so that t = 12 and 16 pairs overfill it
VALUE_WIDTH = 8  # d_v
PAIRS = 16  # the stream's length: the largest t
REPEATS = 3  # delta steps per pair of the rule "3 delta steps"
REPEATS_SUPERSCRIPT = str(REPEATS).translate(SUPERSCRIPTS)  # ³, plain text: no mathtext to parse
MOMENTUM = 0.5  # η: the momentum M keeps half of itself each step
RIDGE = 1e-6  # λ: small enough that the exact solve reads t <= m pairs back to about 1e-4
SEED = 0  # the stream's keys; its values use SEED + 1
Y_TICKS = (0, 0.5, 1, 2, 4, 8)  # asinh scale: linear below 1, where most errors lie; all stay below 8


def stream(pairs: int = PAIRS, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """The seeded pairs: random unit keys [pairs, KEY_WIDTH] and unit values [pairs, VALUE_WIDTH]."""
    return make_keys(pairs, KEY_WIDTH, "random", 0.0, seed), make_values(pairs, VALUE_WIDTH, seed + 1)


def momentum_memory(keys: np.ndarray, values: np.ndarray, beta: float,
                    momentum: float = MOMENTUM) -> np.ndarray:
    """S [m, d_v] after M ← η M − β ∇ℓ_j(S), S ← S + M for each pair j, from S = M = 0.

    keys [P, m], values [P, d_v]. −β ∇ℓ_j(S) is what one delta step adds to S, so the package's
    delta rule takes the step and only the momentum is added here: η = 0 is the delta rule.
    """
    state = momentum_state = np.zeros((keys.shape[-1], values.shape[-1]))  # S, M  [m, d_v]
    for j in range(len(keys)):
        pair = slice(j, j + 1)
        _, stepped = delta_rule(keys[pair], keys[pair], values[pair], np.array([beta]), scale=1.0,
                                form="recurrent", initial_state=state, return_state=True)  # S − β∇ℓ_j(S)
        momentum_state = momentum * momentum_state + (stepped - state)  # M = η M − β ∇ℓ_j(S)
        state = state + momentum_state  # S = S + M
    return state


def exact_memory(keys: np.ndarray, values: np.ndarray, ridge: float = RIDGE) -> np.ndarray:
    """S = (KᵀK + λI)⁻¹ KᵀV [m, d_v]: MesaNet's pair (H, G) after every pair (β = 1, no decay),
    read by the same function with nothing written (β = 0) and the basis e_j as queries."""
    m, d_v = keys.shape[-1], values.shape[-1]
    _, pair = least_squares_attention(keys, keys, values, np.ones(len(keys)), ridge=ridge, scale=1.0,
                                      return_state=True)  # H = KᵀK, G = KᵀV
    no_key, no_value = np.zeros((m, m)), np.zeros((m, d_v))  # m steps that write nothing (β = 0)
    return least_squares_attention(np.eye(m), no_key, no_value, np.zeros(m), ridge=ridge, scale=1.0,
                                   initial_state=pair)  # row j: Gᵀ(H + λI)⁻¹ e_j = Sᵀe_j


def learned_map(rule: str, keys: np.ndarray, values: np.ndarray, beta: float) -> np.ndarray:
    """The state S [m, d_v] that ``rule`` leaves after the pairs keys [t, m], values [t, d_v]."""
    rule = check_choice(rule, "rule", RULES)
    if rule == "add":
        return write_memory(keys, values, "additive")
    if rule == "delta step":
        return write_memory(keys, values, "delta", beta)
    if rule == "3 delta steps":  # each pair fed REPEATS times in a row
        repeated = np.repeat(keys, REPEATS, axis=0), np.repeat(values, REPEATS, axis=0)  # [REPEATS t, ...]
        return write_memory(*repeated, "delta", beta)
    if rule == "momentum":
        return momentum_memory(keys, values, beta)
    return exact_memory(keys, values)


def summary(rule: str, beta: float) -> str:
    """The rule in one line: its update at this β and what it is; a rule without a step says that
    β does not enter, so that moving β changes what it says."""
    if rule == "add":
        return (f"add: S ← S + k vᵀ, linear attention's plain sum: no loss, no step "
                f"(β = {beta:g} does not enter)")
    if rule == "delta step":
        return (f"delta step: S ← S − β∇ℓ(S), ℓ = ½‖Sᵀk − v‖², β = {beta:g}: one SGD step (DeltaNet), "
                f"newest error × |1 − β| = {abs(1 - beta):g}")
    if rule == "3 delta steps":
        return (f"{REPEATS} delta steps per pair, β = {beta:g}: "
                f"newest error × |1 − β|{REPEATS_SUPERSCRIPT} = {abs(1 - beta) ** REPEATS:g}")
    if rule == "momentum":
        return (f"momentum: M ← {MOMENTUM:g}M − β∇ℓ(S), S ← S + M, β = {beta:g}: a second state (Titans), "
                f"long-run step β/(1 − η) = {beta / (1 - MOMENTUM):g}")
    return (f"exact solve: S = (KᵀK + λI)⁻¹KᵀV, λ = {RIDGE:g}: ridge regression (MesaNet; "
            f"β = {beta:g} does not enter)")


def compute_learner(rule: str, beta: float, t: int) -> dict[str, Any]:
    """The map S [m, d_v] that ``rule`` learns from the stream's first t pairs, the retrieval
    error of each of them [t] and the rule's one-line summary."""
    t = check_positive_int(t, "t")
    if t > PAIRS:
        raise ValueError(f"t must be at most the stream's {PAIRS} pairs; got {t}")
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not 0 <= beta <= 2:
        raise ValueError(f"beta must be a number in [0, 2] (the delta rule's step); got {beta!r}")
    keys, values = stream()
    keys, values = keys[:t], values[:t]  # [t, m], [t, d_v]
    state = learned_map(rule, keys, values, beta)
    return {"rule": rule, "beta": beta, "t": t, "state": state,
            "errors": retrieval_error(state, keys, values), "summary": summary(rule, beta)}


def number(error: float) -> str:
    """Two significant digits; '0' below 1e-12, where float64 rounding is all that is left."""
    return "0" if error < 1e-12 else f"{error:.2g}"


def error_text(errors: np.ndarray) -> str:
    """'mean 0.81 · newest pair 0 · largest 1.4 (pair 4)' for the errors [t] of pairs 1..t."""
    worst = int(np.argmax(errors))
    return (f"error over the {len(errors)} pairs: mean {number(errors.mean())} · "
            f"newest pair {number(errors[-1])} · largest {number(errors[worst])} (pair {worst + 1})")


class LearnerExplorer(Explorer):
    """Feed the stream's pairs to a rule and see how well its map fits every pair so far."""

    name = "learner"
    title = "Learner: the state fitted to the pairs so far, by five update rules"
    controls = {"rule": RULES, "beta": (0.5, 1.0, 1.5), "t": (4, 8, 12, 16)}  # 60 frames, as transitions
    defaults = {"rule": "delta step", "beta": 1.0, "t": 12}
    labels = {"rule": "update rule", "beta": "step β", "t": "pairs arrived t"}
    figsize = (8.5, 3.4)
    layout = "none"  # the axes are placed by hand: no layout pass at all

    def compute(self, rule: str, beta: float, t: int) -> dict[str, Any]:
        return compute_learner(rule, beta, t)

    def describe(self, reason: str | None = None, **settings: Any) -> str:
        """The controls' values, then the rule and its errors in numbers (the static page's alt text)."""
        said = super().describe(reason, **settings)
        if reason:
            return said
        result = self.compute(**settings)
        return f"{said} {result['summary']}. Retrieval {error_text(result['errors'])}."

    def build(self, fig: Figure) -> dict[str, Any]:
        """One axes with fixed limits, the reference lines, and PAIRS empty bars."""
        ax = fig.add_axes((0.08, 0.14, 0.9, 0.64))
        ax.set_yscale("asinh", linear_width=1)
        ax.set(xlim=(0.4, PAIRS + 0.6), ylim=(0, Y_TICKS[-1]), xticks=(1, 4, 8, 12, 16),
               xlabel="pair i (in the order it arrived)", ylabel="‖Sᵀk_i − v_i‖ / ‖v_i‖")
        fixed_ticks(ax.yaxis, Y_TICKS, [f"{tick:g}" for tick in Y_TICKS])
        ax.set_title("retrieval error of every pair so far "
                     f"(dotted: S = 0; dash-dot: key width m = {KEY_WIDTH})", fontsize=10)
        ax.axhline(1, color="#777777", linewidth=1, linestyle=":")
        ax.axvline(KEY_WIDTH + 0.5, color="#777777", linewidth=1, linestyle="-.")
        ax.grid(alpha=0.3, axis="y")
        bars = ax.bar(np.arange(1, PAIRS + 1), np.zeros(PAIRS), width=0.7, color=PALETTE["blue"])
        return {"bars": list(bars), "title": fig.suptitle("", fontsize=10)}

    def update(self, artists: dict[str, Any], result: dict[str, Any]) -> None:
        """Bar i to pair i's error (0 for the pairs not yet arrived) and the two lines of text."""
        heights = np.zeros(PAIRS)
        heights[: result["t"]] = result["errors"]
        for bar, height in zip(artists["bars"], heights, strict=True):
            bar.set_height(height)
        artists["title"].set_text(f"{result['summary']}\n{error_text(result['errors'])}")
