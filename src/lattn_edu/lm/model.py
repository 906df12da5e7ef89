"""The language model: pre-norm blocks (short convolution, mixer, MLP), a mixer chosen per layer.

A model is a *layer pattern*, one registered mixer name per layer (:data:`LM_MODELS` names the
lab's). A pattern is written as names joined by ``+``, each optionally ``*count``, and repeats
to fill the stack: ``"softmax"`` is softmax in every layer, ``"gated_deltanet*3+softmax"`` is
Qwen3-Next's 3 : 1 layout (once in 4 layers, twice in 8), ``"based+sliding_window"`` alternates.

Position: every layer, whatever its mixer, passes its input through a causal depthwise
convolution over the last 4 tokens before the mixer's projections (:class:`ShortConvolution`,
the short convolution that Mamba-2, Gated DeltaNet, KDA and Based put before theirs; chapter
7's recall model has a width-2 one before the first layer only), and there is no other
position encoding. It gives every mixer the last few characters in order, which spelling
needs and which causal softmax without a position encoding finds only slowly: after 300 steps
with the width-2 shift alone, softmax stood at 3.00 bits per character and Gated DeltaNet,
whose decay favours recent tokens, at 2.65; with the convolution softmax reached 2.79. It also
lets one attention layer match "the token after an earlier copy of this one", the induction
step that copying needs. RoPE would have helped the softmax layers alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from ..recall.mixers import MixerSizes, SlidingWindowMixer, SoftmaxMixer, make_mixer
from ..recall.mixers import layer_pattern as mixer_layers
from .decode import Cache, check_decodable, mixer_step, start_cache

LayerCache = tuple[torch.Tensor, Cache]  # the convolution's last inputs [B, width − 1, d], the mixer's

# The lab's models: name -> layer pattern. ``based`` is Based's recipe (Arora et al. 2024) without
# its gated convolutions: Taylor-feature linear attention layers alternating with small
# sliding-window softmax layers; ``hybrid`` has one softmax layer per four, last in each group.
LM_MODELS = {
    "softmax": "softmax",
    "linear": "linear",
    "gated_deltanet": "gated_deltanet",
    "kda": "kda",
    "mamba2": "mamba2",
    "sliding_window": "sliding_window",
    "hybrid": "gated_deltanet*3+softmax",
    "based": "based+sliding_window",
}


def layer_pattern(model: str, num_layers: int) -> tuple[str, ...]:
    """The mixer of each of ``num_layers`` layers for ``model`` (a name in :data:`LM_MODELS` or a
    layer pattern; see :func:`lattn_edu.recall.mixers.layer_pattern`), the pattern repeated; a
    ValueError when ``num_layers`` is not a multiple of it."""
    if not isinstance(model, str) or not model:
        raise ValueError(f"model must be a name in {', '.join(LM_MODELS)} or a layer pattern such as "
                         f"'gated_deltanet*3+softmax'; got {model!r}")
    return mixer_layers(LM_MODELS.get(model, model), num_layers, label=model)


class ShortConvolution(nn.Module):
    """A causal depthwise convolution: y_t = b + Σ_{s<width} w_s ⊙ x_{t−s}, one kernel per channel."""

    def __init__(self, channels: int, width: int = 4) -> None:
        super().__init__()
        self.width = width
        self.conv = nn.Conv1d(channels, channels, width, groups=channels, padding=width - 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [B, N, d] -> [B, N, d]; output t sees x_{t−width+1..t} (zeros before the start)."""
        return self.conv(x.transpose(1, 2))[..., :x.shape[1]].transpose(1, 2)

    def step(self, x: torch.Tensor, tail: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One token: x [B, 1, d] and the width − 1 inputs before it [B, width − 1, d] ->
        y [B, 1, d] and the new tail."""
        window = torch.cat([tail, x], dim=1)  # x_{t−width+1..t}  [B, width, d]
        kernel = self.conv.weight[:, 0].transpose(0, 1)  # row s weighs x_{t−width+1+s}  [width, d]
        return (window * kernel).sum(1, keepdim=True) + self.conv.bias, window[:, 1:]


class LanguageModel(nn.Module):
    """Embedding, pre-norm blocks (short convolution, mixer ``layers[i]``; MLP), readout.

    Parameters
    ----------
    layers : sequence of str
        One registered mixer name per layer (see :func:`layer_pattern`).
    config : MixerSizes
        ``d_model`` and what the mixers read (heads, Based's ``taylor_dim``, the sliding
        window's ``window``).
    vocab : int
        Characters read and predicted.
    """

    def __init__(self, layers: Sequence[str], config: MixerSizes, vocab: int) -> None:
        super().__init__()
        width = config.d_model
        self.layers = tuple(layers)
        self.embed = nn.Embedding(vocab, width)
        self.convolutions = nn.ModuleList(ShortConvolution(width) for _ in self.layers)
        self.mixers = nn.ModuleList(make_mixer(name, config, i) for i, name in enumerate(self.layers))
        self.norms = nn.ModuleList(nn.LayerNorm(width) for _ in self.layers)
        self.mlps = nn.ModuleList(nn.Sequential(nn.LayerNorm(width), nn.Linear(width, 2 * width),
                                                nn.GELU(), nn.Linear(2 * width, width)) for _ in self.layers)
        self.readout = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, vocab))
        # the readout starts at zero: an untrained model predicts every character alike, log2(vocab)
        # bits, the lab's common starting line (the first step's gradient moves the readout alone)
        nn.init.zeros_(self.readout[1].weight)
        nn.init.zeros_(self.readout[1].bias)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens long [B, N] -> logits [B, N, vocab]; position i sees tokens 0..i only."""
        x = self.embed(tokens)  # [B, N, d_model]
        for norm, convolution, mixer, mlp in zip(self.norms, self.convolutions, self.mixers, self.mlps):
            x = x + mixer(convolution(norm(x)))
            x = x + mlp(x)
        return self.readout(x)

    def start(self, batch: int) -> list[LayerCache]:
        """The empty decoding cache: per layer, the convolution's last inputs (zeros) and the mixer's."""
        check_decodable(self.layers)
        width = self.embed.embedding_dim
        return [(self.embed.weight.new_zeros(batch, convolution.width - 1, width), start_cache(mixer, batch))
                for convolution, mixer in zip(self.convolutions, self.mixers)]

    def step(self, token: torch.Tensor, cache: list[LayerCache]) -> tuple[torch.Tensor, list[LayerCache]]:
        """One decoding step: token long [B] -> logits [B, vocab] and the cache with it added;
        stepping through a sequence gives :meth:`forward`'s logits, one position at a time."""
        x = self.embed(token)[:, None]  # [B, 1, d_model]
        caches = []
        for norm, convolution, mixer, mlp, (tail, mixer_cache) in zip(
                self.norms, self.convolutions, self.mixers, self.mlps, cache):
            convolved, tail = convolution.step(norm(x), tail)
            mixed, mixer_cache = mixer_step(mixer, convolved, mixer_cache)
            caches.append((tail, mixer_cache))
            x = x + mixed
            x = x + mlp(x)
        return self.readout(x[:, 0]), caches

    def cache_floats(self, n: int) -> dict[str, int]:
        """Floats each layer keeps per sequence after ``n`` tokens, by kind: ``kv`` (softmax's
        keys and values, n of each), ``window`` (the last min(n, W) of them), ``state`` (the
        recurrent states) and ``conv`` (the short convolutions' last inputs); the last two do
        not grow with n."""
        floats = {"kv": 0, "window": 0, "state": 0,
                  "conv": sum((c.width - 1) * c.conv.in_channels for c in self.convolutions)}
        for mixer in self.mixers:
            kind = ("window" if isinstance(mixer, SlidingWindowMixer) else
                    "kv" if isinstance(mixer, SoftmaxMixer) else "state")
            floats[kind] += mixer.cache_floats(n)
        return floats
