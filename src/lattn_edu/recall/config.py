"""What defines a recall sweep: sizes, training settings and the three presets."""

from __future__ import annotations

from dataclasses import dataclass

from .mixers import MODELS


@dataclass(frozen=True)
class RecallConfig:
    """Everything that defines a sweep; saved verbatim in the output JSON."""

    models: tuple[str, ...] = MODELS
    pair_counts: tuple[int, ...] = (4, 8, 16, 32, 64)
    num_keys: int = 128  # key tokens 0 .. num_keys-1
    num_values: int = 128  # value tokens num_keys .. num_keys+num_values-1
    d_model: int = 64
    num_layers: int = 1
    num_heads: int = 4
    taylor_dim: int = 4  # Based: q, k projected to t; m = 1 + t + t(t+1)/2 = 15 ≈ d_head
    steps: int = 1500
    batch_size: int = 32
    learning_rate: float = 3e-3
    weight_decay: float = 0.1
    eval_sequences: int = 512
    seed: int = 0
    threads: int = 1


# Quick: about half the steps at twice the learning rate, enough for softmax to learn P = 64
# (it needs ~700 steps at this rate); the linear models learn more slowly, so the quick gap
# is wider than the full one (chapter 7 compares both).
QUICK = RecallConfig(pair_counts=(4, 16, 64), steps=800, learning_rate=6e-3)
# Tiny: every model and code path in seconds, for the tests; its accuracies mean nothing.
TINY = RecallConfig(pair_counts=(2, 4), num_keys=8, num_values=8, d_model=16, num_heads=2,
                    taylor_dim=2, steps=3, batch_size=4, eval_sequences=8)
