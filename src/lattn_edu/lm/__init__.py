"""How much softmax does a language model need? A character-level lab on real text (chapter 17).

``lattn-edu lm`` trains small character-level language models on the packaged Shakespeare
(:mod:`lattn_edu.corpus`), all with the same architecture, data, steps, batch and learning-rate
grid, and differing only in the mixer of each layer (:mod:`.model`; the mixers are recall's
registry, :mod:`lattn_edu.recall.mixers`):

- ``softmax``: causal softmax attention in every layer, a KV cache that grows with the context;
- ``linear``: linear attention with elu+1 features;
- ``gated_deltanet``, ``kda`` and ``mamba2``: the delta rule with a scalar decay, with one
  decay per key channel (Kimi Delta Attention), and a scalar-gated linear recurrence;
- ``sliding_window``: softmax over the last W = 64 tokens only;
- ``hybrid``: Gated DeltaNet with one softmax layer in four (Qwen3-Next's layout);
- ``based``: Based's Taylor-feature linear attention alternating with sliding-window layers.

Each run records validation bits per character at checkpoints, the loss by position in the
context, an in-context copy probe (:mod:`.probes`), its parameters, the floats its caches hold
per token of context, and the time to decode one token with its recurrent or cached form
(:mod:`.decode`), measured where it ran. The parts: :mod:`.model`, :mod:`.decode`,
:mod:`.probes`, :mod:`.lab` (settings, presets, runs, record, summary, :func:`.lab.recorded`
for the shipped records) and :mod:`.cli`. The training loop, the worker pool and the
bit-reproducible seeding are recall's: for a given seed and torch thread count, a run's
numbers are the same whatever the number of worker processes. ``--tiny`` is the tests'
smoke run; ``--quick`` has the budget in minutes that ``--help`` prints
(:data:`QUICK_BUDGET_MINUTES`) and estimates the full lab's time from its own.
"""

from __future__ import annotations

from .cli import add_arguments, lab_from_args, run
from .decode import check_decodable, crossing_context, mixer_step, start_cache
from .lab import (FULL, QUICK, QUICK_BUDGET_MINUTES, TINY, LabConfig, LmConfig, check_lab, estimate_seconds,
                  format_summary, planned_runs, recorded, run_lab, summarise, train_run)
from ..recall.mixers import parse_pattern
from .model import LM_MODELS, LanguageModel, layer_pattern
from .probes import copy_probe, position_losses, validation_windows

__all__ = [
    "FULL",
    "LM_MODELS",
    "LabConfig",
    "LanguageModel",
    "LmConfig",
    "QUICK",
    "QUICK_BUDGET_MINUTES",
    "TINY",
    "add_arguments",
    "check_decodable",
    "check_lab",
    "copy_probe",
    "crossing_context",
    "estimate_seconds",
    "format_summary",
    "lab_from_args",
    "layer_pattern",
    "mixer_step",
    "parse_pattern",
    "planned_runs",
    "position_losses",
    "recorded",
    "run",
    "run_lab",
    "start_cache",
    "summarise",
    "train_run",
    "validation_windows",
]
