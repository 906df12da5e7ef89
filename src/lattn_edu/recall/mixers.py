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

import math
from typing import Any, Callable, Protocol, TypeVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .._checks import check_positive_int
from ..delta import delta_rule
from ..delta_product import delta_product
from ..feature_maps import FavorPlus, taylor_features, taylor_width
from ..gated import gated_linear_attention
from ..least_squares import least_squares_attention
from ..linear import linear_attention
from ..log_linear import levels_needed, log_linear_attention
from ..test_time import titans_linear, ttt_linear


class MixerSizes(Protocol):
    """What a mixer reads from a sweep's settings (``RecallConfig`` has it all): the mixers
    sit below the configuration, which names them, so they do not import it."""

    d_model: int
    num_heads: int
    taylor_dim: int  # Based's projection of q and k
    seed: int  # FAVOR+ draws its features from it


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
    def from_config(cls, config: MixerSizes, layer: int) -> Mixer:
        """The mixer for layer ``layer`` (0-based) of a model built from ``config``."""
        return cls(config.d_model, config.num_heads)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [B, N, d_model] -> [B, N, d_model]; output i depends on x[:, :i+1] only."""
        return self.merge(self.mix(*self.project(x)))

    def project(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x [B, N, d_model] -> q, k [B, H, N, d_qk] and v [B, H, N, d_head]."""
        batch, n, _ = x.shape
        q, k = self.qk(x).view(batch, n, 2, self.num_heads, self.d_qk).permute(2, 0, 3, 1, 4)
        v = self.v(x).view(batch, n, self.num_heads, self.d_head).transpose(1, 2)  # [B, H, N, d_head]
        return q, k, v

    def merge(self, mixed: torch.Tensor) -> torch.Tensor:
        """The heads' outputs [B, H, N, d_head] -> [B, N, d_model], through the output projection."""
        batch, _, n, _ = mixed.shape
        return self.out(mixed.transpose(1, 2).reshape(batch, n, -1))

    def mix(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Causal mixing per head: q, k [B, H, N, d_qk], v [B, H, N, d_head] -> [B, H, N, d_head]."""
        raise NotImplementedError

    def state_size(self) -> int | None:
        """Numbers in the recurrent state per layer (all heads), or None where what the layer
        keeps grows with the sequence (a KV cache, log-linear attention's levels)."""
        return None

    def cache_floats(self, n: int) -> int:
        """Numbers this layer keeps per sequence to go on after ``n`` tokens (all heads): its
        state, or the keys and values it caches."""
        size = self.state_size()
        if size is None:
            raise NotImplementedError(f"{type(self).__name__} must say what it keeps after n tokens")
        return size


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


def make_mixer(mixer: str, config: MixerSizes, layer: int) -> Mixer:
    """The sequence mixer called ``mixer`` for one layer (FAVOR+ draws its features per layer)."""
    return mixer_class(mixer).from_config(config, layer)


def parse_pattern(pattern: str, label: str | None = None) -> tuple[str, ...]:
    """``"a*3+b"`` -> ('a', 'a', 'a', 'b'): one registered mixer name per layer of one period.

    A *layer pattern* is mixer names joined by ``+``, each optionally ``*count``; ``label`` is
    what error messages call the model (the pattern itself by default)."""
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f"model must be a mixer name or a layer pattern such as "
                         f"'gated_deltanet*3+softmax'; got {pattern!r}")
    label = pattern if label is None else label
    layers: list[str] = []
    for part in pattern.split("+"):
        name, _, count = part.partition("*")
        if name not in MIXERS:
            raise ValueError(f"model {label!r} names mixer {name!r}; mixers are {', '.join(MIXERS)}")
        if count and not (count.isdigit() and int(count) >= 1):
            raise ValueError(f"model {label!r}: the count after '*' must be a positive int; got {count!r}")
        layers += [name] * (int(count) if count else 1)
    return tuple(layers)


def layer_pattern(pattern: str, num_layers: int, label: str | None = None) -> tuple[str, ...]:
    """The mixer of each of ``num_layers`` layers for a layer ``pattern`` repeated to fill the
    stack: ``"gated_deltanet*3+softmax"`` is Qwen3-Next's 3 : 1 layout once in 4 layers, twice
    in 8; a ValueError when ``num_layers`` is not a multiple of the pattern's period."""
    num_layers = check_positive_int(num_layers, "num_layers")
    period = parse_pattern(pattern, label)
    if num_layers % len(period):
        raise ValueError(f"num_layers must be a multiple of the {len(period)} layers of model "
                         f"{pattern if label is None else label!r} ({'+'.join(period)}); got {num_layers}")
    return period * (num_layers // len(period))


@register_mixer("softmax")
class SoftmaxMixer(Mixer):
    """softmax(QKᵀ/√d) V, causal: the full KV cache, the baseline."""

    def mix(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def cache_floats(self, n: int) -> int:
        return n * self.num_heads * (self.d_qk + self.d_head)  # a key and a value per token and head


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
    def from_config(cls, config: MixerSizes, layer: int) -> EluMixer:
        d_head = config.d_model // config.num_heads
        return cls(config.d_model, config.num_heads, "elu+1", m=d_head)


@register_mixer("favor")
class FavorMixer(LinearMixer):
    """Linear attention with FAVOR+ features, m = d_head, drawn afresh for each layer."""

    @classmethod
    def from_config(cls, config: MixerSizes, layer: int) -> FavorMixer:
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
    def from_config(cls, config: MixerSizes, layer: int) -> BasedMixer:
        t = config.taylor_dim
        # q, k scaled by t^-1/4 so that q·k enters the Taylor series as a softmax score q·k/√t
        return cls(config.d_model, config.num_heads, taylor_features, m=taylor_width(t),
                   d_qk=t, scale=t ** -0.25)


def inverse_softplus(y: torch.Tensor) -> torch.Tensor:
    """The x with softplus(x) = y > 0: log(exp(y) - 1), written to stay exact for small y."""
    return y + torch.log(-torch.expm1(-y))


def slow_step_sizes(count: int) -> torch.Tensor:
    """``count`` step sizes Δ log-uniform in [1e-3, 1e-2]: log decays −Δ that keep α = e^−Δ near 1.

    Mamba-2 and Gated DeltaNet draw Δ in [1e-3, 1e-1] with A up to 16, so some heads start
    with α ≈ 0.2 per step; a key written 128 tokens before its query is then gone before
    training begins. With A = 1 and Δ ≤ 1e-2, α^128 stays above 0.27 in every head.
    """
    low, high = math.log(1e-3), math.log(1e-2)
    return torch.exp(low + (high - low) * torch.rand(count))  # [count]


class SelectiveMixer(Mixer):
    """A mixer whose rule also reads per-token quantities (step sizes, decays) from x, and
    whose per-head outputs pass through an RMS norm, as in DeltaNet, GLA and Mamba-2.

    What the published layers add beyond that is left out for every one of them alike, so
    the lab compares write rules rather than extras: no swish output gate, and Mamba-2's
    input is not scaled by its step size Δ. Subclasses implement :meth:`mix_selective`.
    """

    def __init__(self, d_model: int, num_heads: int, d_qk: int | None = None) -> None:
        super().__init__(d_model, num_heads, d_qk)
        self.norm = nn.RMSNorm(self.d_head, eps=1e-5)  # one learned gain per channel, shared by heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.project(x)
        return self.merge(self.norm(self.mix_selective(x, q, k, v)))

    def mix(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        raise TypeError(f"{type(self).__name__} mixes with gates read from x: call it on x")

    def mix_selective(self, x: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                      v: torch.Tensor) -> torch.Tensor:
        """x [B, N, d_model], q, k [B, H, N, d_qk], v [B, H, N, d_head] -> [B, H, N, d_head]."""
        raise NotImplementedError

    def state_size(self) -> int:
        return self.num_heads * self.d_qk * self.d_head  # S [d_k, d_v] per head, no normaliser

    def per_head(self, projection: nn.Linear, x: torch.Tensor) -> torch.Tensor:
        """x [B, N, d_model] through a projection to H numbers -> [B, H, N]."""
        return projection(x).transpose(1, 2)


class ScalarDecay(nn.Module):
    """The Mamba-2 / Gated DeltaNet log decay g = −exp(A_log) · softplus(W x + dt_bias), per head.

    A = 1 and dt_bias from :func:`slow_step_sizes` at the start, so that α = e^g is near 1.
    """

    def __init__(self, d_model: int, num_heads: int) -> None:
        super().__init__()
        self.dt = nn.Linear(d_model, num_heads, bias=False)
        self.A_log = nn.Parameter(torch.zeros(num_heads))  # A = 1  [H]
        self.dt_bias = nn.Parameter(inverse_softplus(slow_step_sizes(num_heads)))  # [H]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [B, N, d_model] -> log decay g <= 0 [B, H, N]."""
        step = F.softplus(self.dt(x) + self.dt_bias)  # Δ_t > 0  [B, N, H]
        return (-self.A_log.exp() * step).transpose(1, 2)


@register_mixer("deltanet")
class DeltaNetMixer(SelectiveMixer):
    """DeltaNet: S_t = (I − β_t k_t k_tᵀ) S_{t−1} + β_t k_t v_tᵀ through ``la.delta_rule``.

    q and k are L2-normalised per head (the rule needs ‖k‖ = 1 to stay stable), the step
    size β_t = beta_max · sigmoid(w·x_t) is a projection per head; beta_max = 1 here, so
    I − β_t k_t k_tᵀ has eigenvalues in (0, 1].
    """

    beta_max = 1.0  # β_t in (0, beta_max)

    def __init__(self, d_model: int, num_heads: int) -> None:
        super().__init__(d_model, num_heads)
        self.beta = nn.Linear(d_model, num_heads)

    def step_sizes(self, x: torch.Tensor) -> torch.Tensor:
        """β [B, H, N] in (0, beta_max)."""
        return self.beta_max * torch.sigmoid(self.per_head(self.beta, x))

    def log_decay(self, x: torch.Tensor) -> torch.Tensor | None:
        """None: DeltaNet forgets only by overwriting."""
        return None

    def mix_selective(self, x: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                      v: torch.Tensor) -> torch.Tensor:
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        return delta_rule(q, k, v, self.step_sizes(x), self.log_decay(x), scale=self.d_qk ** -0.5,
                          form="chunkwise", backend="torch")


@register_mixer("gated_deltanet")
class GatedDeltaNetMixer(DeltaNetMixer):
    """Gated DeltaNet: the delta rule on a state first decayed by α_t = e^{g_t}
    (see :class:`ScalarDecay`)."""

    def __init__(self, d_model: int, num_heads: int) -> None:
        super().__init__(d_model, num_heads)
        self.decay = ScalarDecay(d_model, num_heads)

    def log_decay(self, x: torch.Tensor) -> torch.Tensor:
        """g [B, H, N] <= 0."""
        return self.decay(x)


@register_mixer("deltanet_neg")
class NegativeDeltaNetMixer(DeltaNetMixer):
    """DeltaNet with β_t = 2 · sigmoid(w·x_t) in (0, 2) (Grazzi et al. 2025, "Unlocking
    State-Tracking in Linear RNNs Through Negative Eigenvalues"): along k_t the transition
    I − β_t k_t k_tᵀ has the eigenvalue 1 − β_t in (−1, 1), so one token can flip the sign of
    what the state holds there, the −1 that tracking parity needs (chapter 13)."""

    beta_max = 2.0


@register_mixer("gla")
class GlaMixer(SelectiveMixer):
    """Gated linear attention (Yang et al. 2024): one decay per head and key channel.

    g_t = logsigmoid(W₂ W₁ x_t + b) / 16, GLA's low-rank gate (rank 16) and temperature 16.
    b starts so that every channel's α is near 1, as for the scalar gates (see
    :func:`slow_step_sizes`), instead of GLA's b = 0, which gives α ≈ 0.96 and forgets a
    key within a 128-token gap.
    """

    temperature, rank = 16.0, 16

    def __init__(self, d_model: int, num_heads: int) -> None:
        super().__init__(d_model, num_heads)
        self.gate = nn.Sequential(nn.Linear(d_model, self.rank, bias=False),
                                  nn.Linear(self.rank, num_heads * self.d_qk))
        # logsigmoid(b)/τ = −Δ  <=>  b = −softplus⁻¹(τΔ)
        start = -inverse_softplus(self.temperature * slow_step_sizes(num_heads * self.d_qk))
        with torch.no_grad():
            self.gate[1].bias.copy_(start)

    def log_decay(self, x: torch.Tensor) -> torch.Tensor:
        """g [B, H, N, d_qk] <= 0."""
        batch, n, _ = x.shape
        gates = self.gate(x).view(batch, n, self.num_heads, self.d_qk).transpose(1, 2)
        return F.logsigmoid(gates) / self.temperature

    def mix_selective(self, x: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                      v: torch.Tensor) -> torch.Tensor:
        return gated_linear_attention(q, k, v, self.log_decay(x), scale=self.d_qk ** -0.5,
                                      form="chunkwise", backend="torch")


@register_mixer("mamba2")
class Mamba2Mixer(SelectiveMixer):
    """Mamba-2 as linear attention with a scalar gate per head (state-space duality):
    S_t = α_t S_{t−1} + k_t v_tᵀ with log α_t from :class:`ScalarDecay`."""

    def __init__(self, d_model: int, num_heads: int) -> None:
        super().__init__(d_model, num_heads)
        self.decay = ScalarDecay(d_model, num_heads)

    def mix_selective(self, x: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                      v: torch.Tensor) -> torch.Tensor:
        return gated_linear_attention(q, k, v, self.decay(x), scale=self.d_qk ** -0.5,
                                      form="chunkwise", backend="torch")


@register_mixer("deltaproduct")
class DeltaProductMixer(SelectiveMixer):
    """DeltaProduct (Siems et al. 2025) with n_h = 2 through ``la.delta_product``: per token
    two delta-rule steps, each with its own L2-normalised key, value and β = 2 · sigmoid in
    (0, 2), so the transition is a product of two generalised reflections; two reflections
    make a rotation, which one step of DeltaNet cannot (chapter 13).

    The first step's key and value are the shared projection's (:meth:`Mixer.project`); the
    second step's come from a projection of their own.
    """

    steps_per_token, beta_max = 2, 2.0

    def __init__(self, d_model: int, num_heads: int) -> None:
        super().__init__(d_model, num_heads)
        more = self.steps_per_token - 1
        self.more = nn.Linear(d_model, more * num_heads * (self.d_qk + self.d_head))  # steps 2..n_h
        self.beta = nn.Linear(d_model, self.steps_per_token * num_heads)

    def mix_selective(self, x: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                      v: torch.Tensor) -> torch.Tensor:
        batch, n, _ = x.shape
        n_h, heads = self.steps_per_token, self.num_heads
        more = self.more(x).view(batch, n, n_h - 1, heads, -1).permute(0, 3, 1, 2, 4)  # [B, H, N, n_h-1, d_qk+d_head]
        keys = torch.cat([k.unsqueeze(-2), more[..., :self.d_qk]], dim=-2)  # [B, H, N, n_h, d_qk]
        values = torch.cat([v.unsqueeze(-2), more[..., self.d_qk:]], dim=-2)  # [B, H, N, n_h, d_head]
        beta = self.beta_max * torch.sigmoid(self.beta(x).view(batch, n, heads, n_h).transpose(1, 2))  # [B, H, N, n_h]
        return delta_product(F.normalize(q, dim=-1), F.normalize(keys, dim=-1), values, beta,
                             scale=self.d_qk ** -0.5, form="chunkwise", backend="torch")


class InnerModelMixer(SelectiveMixer):
    """A mixer whose state is the weights (W [d, d], b [d]) of the inner model f(x) = LN(x W + b),
    trained on each token's (k, v − k) by mini-batch gradient descent (chapter 14).

    Per head: the layer norm's weight and bias (``ln_weight``, ``ln_bias`` [H, d_head]) and the
    weights the inner training starts from, learned as the TTT authors learn W_0 (W_0 small and
    random, b_0 = 0; from zeros the first mini-batch would read z = 0, whose layer norm divides
    by sqrt(eps)). The inner model is square, so q, k and v share the head's width: the
    default ``d_qk`` of :class:`Mixer` is d_head. Subclasses implement :meth:`mix_selective`.

    The read is the papers', z = q W + b with no scale on q: with d^-1/2 the bias b, which every
    token's gradient moves, outweighs q W (for L2-normalised q, four times over at d = 16), and
    Titans stayed near chance at P = 8 after 400 quick-study steps (0.26; 0.74 with no scale).
    """

    mini_batch_size = 16  # b: TTT's, and the package's default for both models

    def __init__(self, d_model: int, num_heads: int) -> None:
        super().__init__(d_model, num_heads)  # d_qk = d_head (la.ttt_linear refuses any other v)
        d = self.d_head
        self.ln_weight = nn.Parameter(torch.ones(num_heads, d))  # [H, d_head]
        self.ln_bias = nn.Parameter(torch.zeros(num_heads, d))  # [H, d_head]
        self.w0 = nn.Parameter(0.02 * torch.randn(num_heads, d, d))  # W_0  [H, d, d]
        self.b0 = nn.Parameter(torch.zeros(num_heads, 1, d))  # b_0  [H, 1, d]

    def start(self, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(W_0 [B, H, d, d], b_0 [B, H, 1, d]): the learned start, the same for every sequence."""
        return self.w0.expand(batch, *self.w0.shape), self.b0.expand(batch, *self.b0.shape)


@register_mixer("ttt_linear")
class TttLinearMixer(InnerModelMixer):
    """TTT-Linear (Sun et al. 2024) through ``la.ttt_linear``, the dual (chunkwise) form.

    η_t = sigmoid(w·x_t + c) / (d_head · position of t in its mini-batch): the authors' learned
    rate (base rate 1, over the head's width) times 1/position, which makes each step the mean
    of its mini-batch's gradients so far (their learnable offset of the position is left out).
    q and k are used as projected, as in the paper (no L2 norm); the read is o = z + LN(z).
    """

    def __init__(self, d_model: int, num_heads: int) -> None:
        super().__init__(d_model, num_heads)
        self.lr = nn.Linear(d_model, num_heads)

    def learning_rates(self, x: torch.Tensor) -> torch.Tensor:
        """η [B, H, N] >= 0."""
        rate = torch.sigmoid(self.per_head(self.lr, x))  # [B, H, N]
        position = torch.arange(x.shape[1], dtype=rate.dtype, device=rate.device) % self.mini_batch_size + 1  # [N]
        return rate / (self.d_head * position)

    def mix_selective(self, x: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                      v: torch.Tensor) -> torch.Tensor:
        return ttt_linear(q, k, v, self.learning_rates(x), self.ln_weight, self.ln_bias,
                          mini_batch_size=self.mini_batch_size, scale=1.0,
                          initial_state=self.start(x.shape[0]), form="chunkwise", backend="torch")

    def state_size(self) -> int:
        return self.num_heads * self.d_head * (self.d_head + 1)  # W [d, d] and b [d] per head


@register_mixer("titans_linear")
class TitansLinearMixer(InnerModelMixer):
    """Titans' neural memory with a linear inner model (Behrouz et al. 2024) through
    ``la.titans_linear``: S_t = η_t S_{t−1} − θ_t ∇ℓ_t, M_t = (1 − α_t) M_{t−1} + S_t.

    Per head and token, projections of x: the learning rate θ_t = softplus (>= 0), the
    forgetting gate α_t = sigmoid and the momentum gate η_t = sigmoid (in [0, 1]). α's bias
    starts at logit(Δ) with Δ from :func:`slow_step_sizes`, so (1 − α)^128 > 0.27 and a key
    survives a 128-token gap before training (a zero bias would forget half the memory per
    token). q and k are L2-normalised, as in the paper; the momentum S starts at 0.
    """

    def __init__(self, d_model: int, num_heads: int) -> None:
        super().__init__(d_model, num_heads)
        self.theta, self.alpha, self.eta = (nn.Linear(d_model, num_heads) for _ in range(3))
        forget = slow_step_sizes(num_heads)
        with torch.no_grad():
            self.alpha.bias.copy_(torch.logit(forget))  # sigmoid(b) = Δ

    def gates(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """θ [B, H, N] >= 0, α and η [B, H, N] in [0, 1]."""
        return (F.softplus(self.per_head(self.theta, x)), torch.sigmoid(self.per_head(self.alpha, x)),
                torch.sigmoid(self.per_head(self.eta, x)))

    def mix_selective(self, x: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                      v: torch.Tensor) -> torch.Tensor:
        w0, b0 = self.start(x.shape[0])
        state = (w0, b0, torch.zeros_like(w0), torch.zeros_like(b0))  # M_0 learned, S_0 = 0
        return titans_linear(F.normalize(q, dim=-1), F.normalize(k, dim=-1), v, *self.gates(x),
                             self.ln_weight, self.ln_bias, mini_batch_size=self.mini_batch_size,
                             scale=1.0, initial_state=state, form="chunkwise", backend="torch")

    def state_size(self) -> int:
        return 2 * self.num_heads * self.d_head * (self.d_head + 1)  # memory M and momentum S


@register_mixer("least_squares")
class LeastSquaresMixer(SelectiveMixer):
    """MesaNet (von Oswald et al. 2025) through ``la.least_squares_attention``: the read
    o_t = G_tᵀ (H_t + Λ)⁻¹ q_t of the regularised least-squares fit to every past (k, v).

    q and k are L2-normalised, as in the paper; the input gate β_t = sigmoid (in [0, 1]) is a
    projection per head, the forget gate log decay is :class:`ScalarDecay`'s (Gated DeltaNet's),
    and the ridge λ = 0.25 + softplus(p) is learned per head and key channel, starting at 1
    (flash-linear-attention's MesaNet layer has the same floor and start). q is not scaled, as
    in the paper (the RMS norm after the read undoes any scale). The chunkwise form
    solves every token's system exactly (a batched LU solve), in chunks of 16 tokens: it forms
    every H_t of a chunk, C² d_k² numbers, so a training step at P = 64 (N = 192) takes about
    a quarter of the time it takes with the package's default C = 64.
    """

    ridge_floor = 0.25  # λ >= this: H_t + Λ stays well conditioned in float32
    chunk_size = 16

    def __init__(self, d_model: int, num_heads: int) -> None:
        super().__init__(d_model, num_heads)
        self.beta = nn.Linear(d_model, num_heads)
        self.decay = ScalarDecay(d_model, num_heads)
        start = inverse_softplus(torch.full((num_heads, self.d_qk), 1.0 - self.ridge_floor))
        self.ridge_raw = nn.Parameter(start)  # [H, d_qk]

    def ridge(self) -> torch.Tensor:
        """λ [H, d_qk] >= ridge_floor."""
        return self.ridge_floor + F.softplus(self.ridge_raw)

    def input_gates(self, x: torch.Tensor) -> torch.Tensor:
        """β [B, H, N] in [0, 1]."""
        return torch.sigmoid(self.per_head(self.beta, x))

    def mix_selective(self, x: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                      v: torch.Tensor) -> torch.Tensor:
        return least_squares_attention(F.normalize(q, dim=-1), F.normalize(k, dim=-1), v,
                                       self.input_gates(x), self.decay(x), ridge=self.ridge(),
                                       scale=1.0, form="chunkwise", chunk_size=self.chunk_size,
                                       backend="torch")

    def state_size(self) -> int:
        return self.num_heads * self.d_qk * (self.d_qk + self.d_head)  # H [d_k, d_k] and G [d_k, d_v]


class ChannelDecay(nn.Module):
    """KDA's log decay, one per head and key channel (Kimi Team 2025, arXiv 2510.26692):
    g = −exp(A_log_h) · softplus(W_up W_down x + dt_bias), a low-rank projection of rank d_head
    (flash-linear-attention's KDA layer projects through the head's value width).

    A = 1 and every channel's dt_bias from :func:`slow_step_sizes`, so that α = e^g starts near
    1, as for :class:`ScalarDecay`, whose one number per head this widens to d_qk numbers.
    """

    def __init__(self, d_model: int, num_heads: int, d_qk: int, rank: int) -> None:
        super().__init__()
        self.num_heads, self.d_qk = num_heads, d_qk
        self.down = nn.Linear(d_model, rank, bias=False)
        self.up = nn.Linear(rank, num_heads * d_qk, bias=False)
        self.A_log = nn.Parameter(torch.zeros(num_heads))  # A = 1  [H]
        self.dt_bias = nn.Parameter(inverse_softplus(slow_step_sizes(num_heads * d_qk)))  # [H·d_qk]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [B, N, d_model] -> log decay g <= 0 [B, H, N, d_qk]."""
        batch, n, _ = x.shape
        step = F.softplus(self.up(self.down(x)) + self.dt_bias)  # Δ_t > 0  [B, N, H·d_qk]
        step = step.view(batch, n, self.num_heads, self.d_qk).transpose(1, 2)  # [B, H, N, d_qk]
        return -self.A_log.exp()[:, None, None] * step


@register_mixer("kda")
class KdaMixer(DeltaNetMixer):
    """Kimi Delta Attention: Gated DeltaNet with one decay per key channel,
    S_t = (I − β_t k_t k_tᵀ) Diag(α_t) S_{t−1} + β_t k_t v_tᵀ, through ``la.delta_rule`` with a
    log decay [B, H, N, d_qk] (see :class:`ChannelDecay`). With every channel's decay equal it
    is :class:`GatedDeltaNetMixer`. KDA's output gate is left out, as every mixer's is here.

    The chunkwise form runs in chunks of 8 tokens: its per-channel decay masks hold C² d_k
    numbers per chunk. At N = 256 (B = 16, H = 4, d_k = 32, one thread) one layer's forward and
    backward took 0.23 s with C = 8, 0.31 s with C = 16 and about 4 s with the package's default
    C = 64; a training step of the 4-layer language model (:mod:`lattn_edu.lm`) 1.2 s with C = 8
    and 1.6 s with C = 16.
    """

    chunk_size = 8

    def __init__(self, d_model: int, num_heads: int) -> None:
        super().__init__(d_model, num_heads)
        self.decay = ChannelDecay(d_model, num_heads, self.d_qk, rank=self.d_head)

    def log_decay(self, x: torch.Tensor) -> torch.Tensor:
        """g [B, H, N, d_qk] <= 0."""
        return self.decay(x)

    def mix_selective(self, x: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                      v: torch.Tensor) -> torch.Tensor:
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        return delta_rule(q, k, v, self.step_sizes(x), self.log_decay(x), scale=self.d_qk ** -0.5,
                          form="chunkwise", chunk_size=self.chunk_size, backend="torch")


@register_mixer("sliding_window")
class SlidingWindowMixer(Mixer):
    """Sliding-window softmax attention: query i attends to the W keys i − W < j <= i (torch's
    SDPA with a banded mask; ``la.softmax_attention(..., window=W)`` is the numpy reference).

    The window comes from the configuration's ``window`` where it has one (the language-model
    lab's does), else :attr:`default_window`. Its cache holds the last W keys and values.
    """

    default_window = 64

    def __init__(self, d_model: int, num_heads: int, window: int = default_window) -> None:
        super().__init__(d_model, num_heads)
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"window must be a positive int (keys a query sees); got {window!r}")
        self.window = window

    @classmethod
    def from_config(cls, config: MixerSizes, layer: int) -> SlidingWindowMixer:
        return cls(config.d_model, config.num_heads, getattr(config, "window", cls.default_window))

    def mix(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        i = torch.arange(q.shape[-2], device=q.device)
        offset = i[:, None] - i[None, :]  # i − j  [N, N]
        allowed = (offset >= 0) & (offset < self.window)  # True: query i sees key j
        return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)

    def cache_floats(self, n: int) -> int:
        return min(n, self.window) * self.num_heads * (self.d_qk + self.d_head)  # the last W tokens


@register_mixer("log_linear")
class LogLinearMixer(Mamba2Mixer):
    """Log-Linear Mamba-2 (Guo et al. 2025): Mamba-2's gated sum split into Fenwick levels by
    how far back each key lies, one state per level, mixed per head and token by λ_t^(ℓ) =
    softplus(w_ℓ · x_t + b_ℓ) >= 0 through ``la.log_linear_attention``. The weights start at
    λ = 1 (b = softplus⁻¹(1)), where the levels add up to Mamba-2's one state: the layer starts
    as :class:`Mamba2Mixer` and learns how much each range of the past should count.

    After n tokens it keeps ceil(log2 n) + 1 level states per head (:meth:`cache_floats`), so
    its memory grows like log n: between a fixed state and a KV cache.
    """

    max_levels = 16  # sequences up to 2^15 tokens

    def __init__(self, d_model: int, num_heads: int) -> None:
        super().__init__(d_model, num_heads)
        self.levels = nn.Linear(d_model, num_heads * self.max_levels)
        nn.init.zeros_(self.levels.weight)
        nn.init.constant_(self.levels.bias, float(inverse_softplus(torch.tensor(1.0))))

    def level_weights(self, x: torch.Tensor) -> torch.Tensor:
        """x [B, N, d_model] -> λ >= 0 [B, H, N, L] for the L levels N tokens need."""
        batch, n, _ = x.shape
        if levels_needed(n) > self.max_levels:
            raise ValueError(f"x must have at most {2 ** (self.max_levels - 1)} tokens for "
                             f"{self.max_levels} levels; got {n}")
        weights = F.softplus(self.levels(x)).view(batch, n, self.num_heads, self.max_levels)
        return weights.transpose(1, 2)[..., :levels_needed(n)]

    def mix_selective(self, x: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                      v: torch.Tensor) -> torch.Tensor:
        return log_linear_attention(q, k, v, self.decay(x), self.level_weights(x), scale=self.d_qk ** -0.5,
                                    form="chunkwise", backend="torch")

    def state_size(self) -> None:
        return None  # it grows with the sequence: see cache_floats

    def cache_floats(self, n: int) -> int:
        return levels_needed(n) * self.num_heads * self.d_qk * self.d_head


MODELS = tuple(MIXERS)  # every registered name, in definition order
