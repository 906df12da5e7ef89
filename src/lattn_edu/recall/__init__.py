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
  as large as elu+1's.

The number of pairs P is swept at fixed width, so the linear mixers' m×d_v state has
to hold more and more associations, while softmax keeps every pair in its KV cache.

The parts, one module each: :mod:`.task` (the sequences), :mod:`.mixers` (the mixers and
the registry :data:`MIXERS` that names them; a new model is one registered class there),
:mod:`.config` (sizes and presets), :mod:`.model` (the shared architecture),
:mod:`.training` (training, scoring, the sweep) and :mod:`.cli` (``lattn-edu recall``).

Run times on 2 shared CPU cores with one torch thread (the default; results are
bit-reproducible for a given seed and thread count): the full sweep (P = 4 … 64,
1,500 steps per model) about 17 minutes, ``--quick`` (P = 4, 16, 64, 800 steps) about
5 minutes, ``--tiny`` (the tests' smoke run) a few seconds.
"""

from __future__ import annotations

from .cli import add_arguments, config_from_args, format_table, run
from .config import QUICK, TINY, RecallConfig
from .mixers import (MIXERS, MODELS, BasedMixer, EluMixer, FavorMixer, LinearMixer, Mixer,
                     RetentionMixer, SoftmaxMixer, make_mixer, mixer_class, register_mixer)
from .model import RecallModel
from .task import make_batch
from .training import accuracy, sweep, train_one

__all__ = [
    "BasedMixer",
    "EluMixer",
    "FavorMixer",
    "LinearMixer",
    "MIXERS",
    "MODELS",
    "Mixer",
    "QUICK",
    "RecallConfig",
    "RecallModel",
    "RetentionMixer",
    "SoftmaxMixer",
    "TINY",
    "accuracy",
    "add_arguments",
    "config_from_args",
    "format_table",
    "make_batch",
    "make_mixer",
    "mixer_class",
    "register_mixer",
    "run",
    "sweep",
    "train_one",
]
