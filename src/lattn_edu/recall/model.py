"""The recall model: one architecture around an interchangeable sequence mixer."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .config import RecallConfig
from .mixers import layer_pattern, make_mixer


class RecallModel(nn.Module):
    """Embedding, a width-2 causal convolution, pre-norm blocks (mixer + MLP), readout.

    ``mixer`` is a registered mixer name (see :data:`MIXERS`) or a layer pattern such as
    ``"gated_deltanet*3+softmax"`` (see :func:`.mixers.layer_pattern`): one mixer per layer, the
    only part that differs between the models a sweep compares. ``vocab`` is the number of token kinds,
    read and predicted alike; None means the recall task's keys and values. Only ``d_model``,
    ``num_layers`` and what the mixers read (:class:`.mixers.MixerSizes`) are read from
    ``config`` then, which is how the state-tracking lab (:mod:`lattn_edu.tracking`) shares it.

    The convolution mixes each token with its predecessor, as the short convolutions of
    the efficient models in Zoology do: it lets a value token carry the key before it, so one mixer
    layer can solve the task by matching a query against those keys.
    """

    def __init__(self, mixer: str, config: RecallConfig, vocab: int | None = None) -> None:
        super().__init__()
        width = config.d_model
        if vocab is None:  # the recall task's tokens: its keys and values
            vocab = config.num_keys + config.num_values
        self.embed = nn.Embedding(vocab, width)
        self.conv = nn.Linear(2 * width, width)
        self.mixers = nn.ModuleList(make_mixer(name, config, i)
                                    for i, name in enumerate(layer_pattern(mixer, config.num_layers)))
        self.mlps = nn.ModuleList(nn.Sequential(nn.LayerNorm(width), nn.Linear(width, 2 * width),
                                                nn.GELU(), nn.Linear(2 * width, width))
                                  for _ in range(config.num_layers))
        self.norms = nn.ModuleList(nn.LayerNorm(width) for _ in range(config.num_layers))
        self.readout = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, vocab))

    def forward(self, tokens: torch.Tensor, last: int | None = None) -> torch.Tensor:
        """tokens long [B, N] -> logits [B, N, vocab]; position i sees tokens 0..i only.

        ``last`` keeps only the last positions (the queries), [B, last, vocab]: the
        readout then costs nothing where there is no answer to give.
        """
        x = self.embed(tokens)  # [B, N, d_model]
        previous = F.pad(x, (0, 0, 1, 0))[:, :-1]  # token i-1 at position i (zeros at 0)
        x = self.conv(torch.cat([x, previous], dim=-1))
        for norm, mixer, mlp in zip(self.norms, self.mixers, self.mlps):
            x = x + mixer(norm(x))
            x = x + mlp(x)
        return self.readout(x if last is None else x[:, -last:])

    def state_size(self) -> int | None:
        """Recurrent-state numbers over all layers, or None when a layer keeps what grows with the
        sequence (softmax's KV cache of 2·N·d; see :meth:`cache_floats`)."""
        sizes = [mixer.state_size() for mixer in self.mixers]
        return None if None in sizes else sum(sizes)

    def cache_floats(self, n: int) -> int:
        """Numbers the mixers keep per sequence after ``n`` tokens, over all layers: the memory a
        model spends on the past (the width-2 convolution's one token aside)."""
        return sum(mixer.cache_floats(n) for mixer in self.mixers)
