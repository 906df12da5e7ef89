"""The sequence mixers the recall models compare, and the registry that names them.

Every mixer is a :class:`Mixer` subclass registered under the name that ``--models``,
``RecallConfig.models`` and the results JSON use::

    @register_mixer("name")
    class MyMixer(Mixer):
        def mix(self, q, k, v): ...          # [B, H, N, d_qk] x2, [B, H, N, d_head] -> [B, H, N, d_head]

        @classmethod
        def from_config(cls, config, layer): ...   # only if the default constructor call won't do

The registry keeps definition order, which is the order of :data:`MODELS`: the models'
order in the sweep, its table and chapter 7's figure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, TypeVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..feature_maps import FavorPlus, taylor_features, taylor_width
from ..gated import gated_linear_attention
from ..linear import linear_attention

if TYPE_CHECKING:  # the config imports MODELS from here, so only the type checker imports it back
    from .config import RecallConfig


class Mixer(nn.Module):
    """Multi-head causal sequence mixer: project to q, k, v, mix, project back.

    Subclasses implement :meth:`mix` on q, k [B, H, N, d_qk] and v [B, H, N, d_head].
    """

    name: str = ""  # the registered name, set by :func:`register_mixer`

    def __init__(self, d_model: int, num_heads: int, d_qk: int | None = None) -> None:
        super().__init__()
        self.num_heads, self.d_head = num_heads, d_model // num_heads
        self.d_qk = d_qk or self.d_head
        self.qk = nn.Linear(d_model, 2 * num_heads * self.d_qk)
        self.v = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, d_model)

    @classmethod
    def from_config(cls, config: RecallConfig, layer: int) -> Mixer:
        """The mixer for layer ``layer`` (0-based) of a model built from ``config``."""
        return cls(config.d_model, config.num_heads)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [B, N, d_model] -> [B, N, d_model]; output i depends on x[:, :i+1] only."""
        batch, n, _ = x.shape
        q, k = self.qk(x).view(batch, n, 2, self.num_heads, self.d_qk).permute(2, 0, 3, 1, 4)
        v = self.v(x).view(batch, n, self.num_heads, self.d_head).transpose(1, 2)  # [B, H, N, d_head]
        mixed = self.mix(q, k, v)  # [B, H, N, d_head]
        return self.out(mixed.transpose(1, 2).reshape(batch, n, -1))

    def mix(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Causal mixing per head: q, k [B, H, N, d_qk], v [B, H, N, d_head] -> [B, H, N, d_head]."""
        raise NotImplementedError

    def state_size(self) -> int | None:
        """Numbers in the recurrent state per layer (all heads), or None for a KV cache."""
        return None


MIXERS: dict[str, type[Mixer]] = {}
MixerClass = TypeVar("MixerClass", bound=type[Mixer])


def register_mixer(name: str) -> Callable[[MixerClass], MixerClass]:
    """Class decorator: make ``name`` build the decorated :class:`Mixer` subclass."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str; got {name!r}")
    if name in MIXERS:  # a second class under one name would silently replace the first
        raise ValueError(f"name {name!r} is already registered for {MIXERS[name].__name__}")

    def register(cls: MixerClass) -> MixerClass:
        if not (isinstance(cls, type) and issubclass(cls, Mixer)):
            raise TypeError(f"register_mixer({name!r}) needs a Mixer subclass; got {cls!r}")
        cls.name = name
        MIXERS[name] = cls
        return cls

    return register


def mixer_class(mixer: str) -> type[Mixer]:
    """The registered class called ``mixer``; a ValueError lists the known names."""
    if mixer not in MIXERS:
        raise ValueError(f"mixer must be one of {', '.join(MIXERS)}; got {mixer!r}")
    return MIXERS[mixer]


def make_mixer(mixer: str, config: RecallConfig, layer: int) -> Mixer:
    """The sequence mixer called ``mixer`` for one layer (FAVOR+ draws its features per layer)."""
    return mixer_class(mixer).from_config(config, layer)


@register_mixer("softmax")
class SoftmaxMixer(Mixer):
    """softmax(QKᵀ/√d) V, causal: the full KV cache, the baseline."""

    def mix(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class LinearMixer(Mixer):
    """Causal linear attention φ(q_i)ᵀS_i / φ(q_i)ᵀz_i through ``la.linear_attention``.

    ``feature_map`` is 'elu+1' or a callable [..., N, d_qk] -> [..., N, m]; ``m`` its width.
    ``scale`` multiplies q and k first (d^-1/4 makes FAVOR+ estimate softmax(q·k/√d)).
    Not registered itself: each feature map below is its own registered subclass.
    """

    def __init__(self, d_model: int, num_heads: int, feature_map: Any, m: int,
                 d_qk: int | None = None, scale: float = 1.0) -> None:
        super().__init__(d_model, num_heads, d_qk)
        self.feature_map, self.m, self.scale = feature_map, m, scale

    def mix(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return linear_attention(q * self.scale, k * self.scale, v, feature_map=self.feature_map,
                                causal=True, form="chunkwise", backend="torch")

    def state_size(self) -> int:
        return self.num_heads * self.m * (self.d_head + 1)  # S [m, d_v] and z [m] per head


@register_mixer("linear")
class EluMixer(LinearMixer):
    """Linear attention with elu+1 features, m = d_head (Katharopoulos et al.)."""

    @classmethod
    def from_config(cls, config: RecallConfig, layer: int) -> EluMixer:
        d_head = config.d_model // config.num_heads
        return cls(config.d_model, config.num_heads, "elu+1", m=d_head)


@register_mixer("favor")
class FavorMixer(LinearMixer):
    """Linear attention with FAVOR+ features, m = d_head, drawn afresh for each layer."""

    @classmethod
    def from_config(cls, config: RecallConfig, layer: int) -> FavorMixer:
        d_head = config.d_model // config.num_heads
        features = FavorPlus(d_head, d_head, orthogonal=True, seed=config.seed + layer)
        return cls(config.d_model, config.num_heads, features, m=d_head, scale=d_head ** -0.25)


@register_mixer("retnet")
class RetentionMixer(Mixer):
    """RetNet-style retention ((QKᵀ/√d) ⊙ L) V, L[i, j] = γ_h^(i-j), then a per-head norm.

    The decays follow RetNet, γ_h = 1 - 2^(-5-h); the state is S_n = γ S_{n-1} + k_n v_nᵀ
    with no denominator, which is why RetNet normalises each head's output instead.
    """

    def __init__(self, d_model: int, num_heads: int) -> None:
        super().__init__(d_model, num_heads)
        self.gammas = 1 - 2.0 ** (-5 - np.arange(num_heads))  # [H]

    def mix(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        log_decay = q.new_tensor(np.log(self.gammas))[:, None].expand(q.shape[:-1])  # log γ_h  [B, H, N]
        retained = gated_linear_attention(q, k, v, log_decay, scale=self.d_qk ** -0.5, form="chunkwise",
                                          backend="torch")  # [B, H, N, d_head]
        return F.layer_norm(retained, (self.d_head,))  # RetNet's group norm, one group per head

    def state_size(self) -> int:
        return self.num_heads * self.d_qk * self.d_head


@register_mixer("based")
class BasedMixer(LinearMixer):
    """Linear attention with the 2nd-order Taylor features of exp, on which the Zoology
    authors built Based: 1 + q·k + (q·k)²/2 on a projection of q and k to t = taylor_dim,
    small so that its state is about as large as elu+1's."""

    @classmethod
    def from_config(cls, config: RecallConfig, layer: int) -> BasedMixer:
        t = config.taylor_dim
        # q, k scaled by t^-1/4 so that q·k enters the Taylor series as a softmax score q·k/√t
        return cls(config.d_model, config.num_heads, taylor_features, m=taylor_width(t),
                   d_qk=t, scale=t ** -0.25)


MODELS = tuple(MIXERS)  # every registered name, in definition order
