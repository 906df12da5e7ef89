"""What a transition can express, trained: state tracking at longer lengths (chapter 13).

``lattn-edu tracking`` trains small causal models to track the state of a group (see
:mod:`.task`): the running parity of a bit sequence (Z₂), the running sum mod 3 (Z₃) and
the running composition of permutations of three things (S₃), with a label at every position. They train on sequences
of one length and are scored at 1×, 2× and 4× that length. The models are chapter 7's
recall models (:class:`lattn_edu.recall.RecallModel`) with one of these mixers from its
registry, each through the package's own function on the torch backend:

- ``linear``: linear attention with elu+1 features: the transition is the identity;
- ``mamba2``: a positive scalar gate per head, A_t = α_t I with α_t in (0, 1);
- ``deltanet``: the delta rule with β in (0, 1): A_t = I − β_t k_t k_tᵀ, eigenvalues in [0, 1];
- ``deltanet_neg``: β in (0, 2) (Grazzi et al. 2025): eigenvalues in (−1, 1], so a token
  can flip a sign, what parity needs;
- ``deltaproduct``: DeltaProduct with n_h = 2 and β in (0, 2) (Siems et al. 2025): a product
  of two generalised reflections per token, which can rotate, what Z₃ and S₃'s 3-cycles need;
- ``softmax``: causal softmax attention with no position encoding, the KV-cache baseline.

The parts: :mod:`.task` (the groups and their sequences), :mod:`.lab` (the settings and
presets, one run, the lab, its record and summary, :func:`.lab.recorded` for the shipped
records) and :mod:`.cli`. The training loop, the worker pool and the bit-reproducible
seeding are recall's (:mod:`lattn_edu.recall`): for a given seed and torch thread count, a
run's numbers are the same whatever the number of worker processes. ``--tiny`` is the
tests' smoke run; ``--quick`` has the budget in minutes that ``--help`` prints
(:data:`QUICK_BUDGET_MINUTES`); how long each run took is in its record.
"""

from __future__ import annotations

from .cli import add_arguments, lab_from_args, run
from .lab import (FULL, QUICK, QUICK_BUDGET_MINUTES, TINY, LabConfig, TrackingConfig, check_lab, evaluate,
                  format_summary, planned_runs, recorded, run_lab, summarise, train_run)
from .task import S3_ELEMENTS, TABLES, TASKS, group_order, make_batch, running_products

__all__ = [
    "FULL",
    "LabConfig",
    "QUICK",
    "QUICK_BUDGET_MINUTES",
    "S3_ELEMENTS",
    "TABLES",
    "TASKS",
    "TINY",
    "TrackingConfig",
    "add_arguments",
    "check_lab",
    "evaluate",
    "format_summary",
    "group_order",
    "lab_from_args",
    "make_batch",
    "planned_runs",
    "recorded",
    "run",
    "run_lab",
    "running_products",
    "summarise",
    "train_run",
]
