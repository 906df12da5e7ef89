"""What defines a recall sweep: sizes, training settings and the three presets.

The configuration names the mixers; :mod:`.mixers` defines and registers them and never
imports this module (a mixer reads only the sizes of :class:`.mixers.MixerSizes`).
"""

from __future__ import annotations

from dataclasses import dataclass

# Chapter 7's five models, in the order of its figure and tables.
CHAPTER7_MODELS = ("softmax", "linear", "favor", "retnet", "based")
# What the recall sweep and the capacity study train by default: chapter 7's models and Part II's
# selective ones, in the registry's order. The registry also holds chapter 13's state-tracking
# mixers (deltanet_neg, deltaproduct; see lattn_edu.tracking) and chapter 14's test-time learners
# (ttt_linear, titans_linear, least_squares), which --models can add here.
RECALL_MODELS = (*CHAPTER7_MODELS, "deltanet", "gated_deltanet", "gla", "mamba2")


@dataclass(frozen=True)
class RecallConfig:
    """Everything that defines a sweep; saved verbatim in the output JSON."""

    models: tuple[str, ...] = RECALL_MODELS
    pair_counts: tuple[int, ...] = (4, 8, 16, 32, 64)
    num_keys: int = 128  # key tokens 0 .. num_keys-1
    num_values: int = 128  # value tokens num_keys .. num_keys+num_values-1
    d_model: int = 64
    num_layers: int = 1
    num_heads: int = 4
    taylor_dim: int = 4  # Based: q, k projected to t; m = 1 + t + t(t+1)/2 = 15 ≈ d_head
    window: int = 64  # sliding-window layers: the keys a query sees
    steps: int = 1500
    batch_size: int = 32
    learning_rate: float = 3e-3
    weight_decay: float = 0.1
    eval_sequences: int = 512
    seed: int = 0
    threads: int = 1  # torch threads per run (each worker process trains one run at a time)


# Quick: what chapter 7 reads from its quick run, and nothing more. Its five models at
# P = 16, where all but FAVOR+ learn, and P = 64, where after 800 steps softmax is perfect
# and the fixed-state models are still at chance (the gap that training time widens);
# P = 4 is left out (every model is near 1 there), and so are the Part II models, whose
# quick comparison is the quick study's (GLA alone cost more than the five together).
# Half the full sweep's steps at twice its rate: softmax needs ~700 steps for P = 64 at
# this rate. Each run is seeded by the seed and P alone, so these ten runs are bit for bit
# the ones a run of more models or pair counts trains.
QUICK = RecallConfig(models=CHAPTER7_MODELS, pair_counts=(16, 64), steps=800, learning_rate=6e-3)
# Tiny: every model and code path in seconds, for the tests; its accuracies mean nothing.
TINY = RecallConfig(pair_counts=(2, 4), num_keys=8, num_values=8, d_model=16, num_heads=2,
                    taylor_dim=2, steps=3, batch_size=4, eval_sequences=8)
# What each quick mode is sized to finish in on two free CPU cores (one worker per core),
# printed by --help; benchmarks/recall_quick_timing.py records the measured wall time and
# the CPU time per worker (benchmarks/results/recall_quick_timing.json).
QUICK_BUDGET_MINUTES = {"quick": 8, "study quick": 10}
