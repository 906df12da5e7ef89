"""Multi-query associative recall: softmax against linear attention, trained (chapter 7).

``lattn-edu recall`` trains small causal models on the MQAR task of Arora et al. (2023,
"Zoology"): a sequence of key–value pairs ``k1 v1 k2 v2 ... kP vP`` followed by the keys
again, in a new order, each of which must be answered with the value it was paired with.
The models share everything (embedding, a width-2 causal convolution, MLP, readout,
width and depth) except the sequence mixer:

- ``softmax``: ``torch.nn.functional.scaled_dot_product_attention``, causal;
- ``linear``: ``la.linear_attention`` with elu+1, chunkwise and causal (state m = d_head);
- ``favor``: ``la.linear_attention`` with ``la.FavorPlus`` features (m = d_head);
- ``retnet``: retention with a fixed decay γ per head, ``la.gated_linear_attention`` with a
  constant log decay log γ (torch backend), then a per-head normalisation as in RetNet;
- ``based``: linear attention with the 2nd-order Taylor features of exp
  (``la.taylor_features``) on which the Zoology authors built their Based model,
  1 + q·k + (q·k)²/2, on a small projection of q and k chosen so that its state is about
  as large as elu+1's;
- ``deltanet`` and ``gated_deltanet``: the (gated) delta rule, ``la.delta_rule`` (torch
  backend), with L2-normalised q and k, β = sigmoid of a projection and an RMS norm per head;
- ``gla`` and ``mamba2``: ``la.gated_linear_attention`` with GLA's low-rank vector gate (one
  decay per key channel) and Mamba-2's scalar decay per head, both with an RMS norm per head.
  The gates start with every decay α near 1 (see :func:`.mixers.slow_step_sizes`).

The registry also holds chapter 13's ``deltanet_neg`` (β in (0, 2)) and ``deltaproduct``
(``la.delta_product``, n_h = 2), which the state-tracking lab (:mod:`lattn_edu.tracking`)
trains, and chapter 14's test-time learners: ``ttt_linear`` (``la.ttt_linear``, TTT-Linear),
``titans_linear`` (``la.titans_linear``, Titans' memory with a linear inner model) and
``least_squares`` (``la.least_squares_attention``, MesaNet's exact least-squares read), and
chapter 17's ``kda`` (Kimi Delta Attention: Gated DeltaNet with one decay per key channel) and
``sliding_window`` (softmax over the last W keys), which its language-model lab
(:mod:`lattn_edu.lm`) trains; the recall sweep leaves them out unless ``--models`` names them
(:data:`RECALL_MODELS` is its default).

The number of pairs P is swept at fixed width, so the linear mixers' m×d_v state has
to hold more and more associations, while softmax keeps every pair in its KV cache.

The parts, one module each: :mod:`.task` (the sequences), :mod:`.mixers` (the mixers and
the registry :data:`MIXERS` that names them; a new model is one registered class there),
:mod:`.config` (sizes and presets, which name the mixers), :mod:`.model` (the shared
architecture), :mod:`.training` (training, scoring, the sweep), :mod:`.pool` (independent
runs side by side, one worker process per core), :mod:`.study` (the capacity study: seeds,
learning rates, loss curves, a state-size sweep, windows; the hybrid study of chapter 16), :mod:`.plots` (the study's figures for
chapters 7 and 10) and :mod:`.cli` (``lattn-edu recall``).

Results are bit-reproducible for a given seed and number of torch threads per run (one by
default), whatever the number of worker processes. ``--tiny`` is the tests' smoke run;
``--quick`` and ``--study quick`` each have a budget in minutes that ``--help`` prints
(:data:`QUICK_BUDGET_MINUTES`). How long each run took is in its record (``wall_seconds``
in the JSON it writes, and in the records the chapters read, :mod:`lattn_edu.records`),
not here. The capacity study (see :mod:`.study`) writes its record after every run and,
with ``--resume``, continues a stopped one.
"""

from __future__ import annotations

from .cli import add_arguments, config_from_args, format_summary, format_table, run
from .config import CHAPTER7_MODELS, QUICK, QUICK_BUDGET_MINUTES, RECALL_MODELS, TINY, RecallConfig
from .mixers import (MIXERS, MODELS, BasedMixer, ChannelDecay, DeltaNetMixer, EluMixer, FavorMixer,
                     GatedDeltaNetMixer, GlaMixer, InnerModelMixer, KdaMixer, LeastSquaresMixer, LinearMixer,
                     LogLinearMixer, Mamba2Mixer, Mixer, RetentionMixer, ScalarDecay, SelectiveMixer,
                     SlidingWindowMixer, SoftmaxMixer, TitansLinearMixer, TttLinearMixer, layer_pattern,
                     make_mixer, mixer_class, parse_pattern, register_mixer)
from .study import (FULL_STUDY, HYBRID_STUDY, QUICK_STUDY, STUDIES, StudyConfig, guessing_loss, late_drop, planned_runs,
                    plateau_exit, plateau_start, run_study, seed_counts, summarise, sweep_runs)
from .model import RecallModel
from .task import make_batch, no_lookup_baselines, window_reach
from .training import accuracy, learning_rate_factor, sweep, train_one

__all__ = [
    "BasedMixer",
    "CHAPTER7_MODELS",
    "ChannelDecay",
    "DeltaNetMixer",
    "EluMixer",
    "FULL_STUDY",
    "FavorMixer",
    "GatedDeltaNetMixer",
    "GlaMixer",
    "HYBRID_STUDY",
    "InnerModelMixer",
    "KdaMixer",
    "LeastSquaresMixer",
    "LinearMixer",
    "LogLinearMixer",
    "MIXERS",
    "MODELS",
    "Mamba2Mixer",
    "Mixer",
    "QUICK",
    "QUICK_BUDGET_MINUTES",
    "QUICK_STUDY",
    "RECALL_MODELS",
    "RecallConfig",
    "RecallModel",
    "RetentionMixer",
    "ScalarDecay",
    "SelectiveMixer",
    "SlidingWindowMixer",
    "STUDIES",
    "SoftmaxMixer",
    "StudyConfig",
    "TINY",
    "TitansLinearMixer",
    "TttLinearMixer",
    "accuracy",
    "add_arguments",
    "config_from_args",
    "format_summary",
    "format_table",
    "guessing_loss",
    "late_drop",
    "layer_pattern",
    "learning_rate_factor",
    "make_batch",
    "make_mixer",
    "mixer_class",
    "parse_pattern",
    "planned_runs",
    "plateau_exit",
    "plateau_start",
    "register_mixer",
    "run",
    "run_study",
    "seed_counts",
    "summarise",
    "sweep",
    "sweep_runs",
    "train_one",
    "window_reach",
    "no_lookup_baselines",
]
