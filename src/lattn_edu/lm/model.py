"""The language model: chapter 7's recall architecture with a mixer chosen per layer.

A model is a *layer pattern*, one registered mixer name per layer (:data:`LM_MODELS` names the
lab's). A pattern is written as names joined by ``+``, each optionally ``*count``, and repeats
to fill the stack: ``"softmax"`` is softmax in every layer, ``"gated_deltanet*3+softmax"`` is
Qwen3-Next's 3 : 1 layout (once in 4 layers, twice in 8), ``"based+sliding_window"`` alternates.

Position: every model, whatever its mixers, mixes each token's embedding with its
predecessor's before the first layer (the recall model's width-2 causal convolution) and has
no other position encoding. Causal softmax needs none to learn order (a causal mask lets it
count), and the shift lets one attention layer match "the token after an earlier copy of this
one", the induction step that copying needs; RoPE would help the softmax layers alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..recall.mixers import MIXERS, MixerSizes, SlidingWindowMixer, SoftmaxMixer, make_mixer
from .decode import check_decodable, mixer_step, start_cache

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


def parse_pattern(pattern: str) -> tuple[str, ...]:
    """``"a*3+b"`` -> ('a', 'a', 'a', 'b'): one registered mixer name per layer of one period."""
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f"model must be a name in {', '.join(LM_MODELS)} or a layer pattern such as "
                         f"'gated_deltanet*3+softmax'; got {pattern!r}")
    layers: list[str] = []
    for part in pattern.split("+"):
        name, _, count = part.partition("*")
        if name not in MIXERS:
            raise ValueError(f"model {pattern!r} names mixer {name!r}; mixers are {', '.join(MIXERS)}")
        if count and not (count.isdigit() and int(count) >= 1):
            raise ValueError(f"model {pattern!r}: the count after '*' must be a positive int; got {count!r}")
        layers += [name] * (int(count) if count else 1)
    return tuple(layers)


def layer_pattern(model: str, num_layers: int) -> tuple[str, ...]:
    """The mixer of each of ``num_layers`` layers for ``model`` (a name in :data:`LM_MODELS` or a
    pattern), the pattern repeated; a ValueError when ``num_layers`` is not a multiple of it."""
    period = parse_pattern(LM_MODELS.get(model, model))
    if num_layers % len(period):
        raise ValueError(f"num_layers must be a multiple of the {len(period)} layers of model "
                         f"{model!r} ({'+'.join(period)}); got {num_layers}")
    return period * (num_layers // len(period))


class LanguageModel(nn.Module):
    """Embedding, the one-token shift, pre-norm blocks (mixer ``layers[i]`` + MLP), readout.

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
        self.shift = nn.Linear(2 * width, width)  # [x_t, x_{t−1}] -> width
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
        previous = F.pad(x, (0, 0, 1, 0))[:, :-1]  # token i−1 at position i (zeros at 0)
        x = self.shift(torch.cat([x, previous], dim=-1))
        for norm, mixer, mlp in zip(self.norms, self.mixers, self.mlps):
            x = x + mixer(norm(x))
            x = x + mlp(x)
        return self.readout(x)

    def start(self, batch: int) -> list[tuple[torch.Tensor, ...]]:
        """The empty decoding cache: the previous embedding (zeros), then each layer's cache."""
        check_decodable(self.layers)
        previous = self.embed.weight.new_zeros(batch, self.embed.embedding_dim)  # [B, d_model]
        return [(previous,), *(start_cache(mixer, batch) for mixer in self.mixers)]

    def step(self, token: torch.Tensor,
             cache: list[tuple[torch.Tensor, ...]]) -> tuple[torch.Tensor, list[tuple[torch.Tensor, ...]]]:
        """One decoding step: token long [B] -> logits [B, vocab] and the cache with it added;
        stepping through a sequence gives :meth:`forward`'s logits, one position at a time."""
        embedded = self.embed(token)  # [B, d_model]
        x = self.shift(torch.cat([embedded, cache[0][0]], dim=-1))[:, None]  # [B, 1, d_model]
        caches = [(embedded,)]
        for norm, mixer, mlp, layer_cache in zip(self.norms, self.mixers, self.mlps, cache[1:]):
            mixed, layer_cache = mixer_step(mixer, norm(x), layer_cache)
            caches.append(layer_cache)
            x = x + mixed
            x = x + mlp(x)
        return self.readout(x[:, 0]), caches

    def cache_floats(self, n: int) -> dict[str, int]:
        """Floats each layer keeps per sequence after ``n`` tokens, by kind: ``kv`` (softmax's
        keys and values, n of each), ``window`` (the last min(n, W) of them) and ``state``
        (the recurrent states, independent of n). The one-token shift's previous embedding is
        not counted: decoding could keep the previous token id instead."""
        floats = {"kv": 0, "window": 0, "state": 0}
        for mixer in self.mixers:
            per_token = mixer.num_heads * (mixer.d_qk + mixer.d_head)  # one key and one value per head
            if isinstance(mixer, SlidingWindowMixer):
                floats["window"] += per_token * min(n, mixer.window)
            elif isinstance(mixer, SoftmaxMixer):
                floats["kv"] += per_token * n
            else:
                floats["state"] += mixer.state_size()
        return floats
