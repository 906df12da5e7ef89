"""Hybrid layer stacks in numbers: KV cache, recurrent state and decode work per token (chapter 15).

A hybrid interleaves two kinds of layer. A recurrent layer (Gated DeltaNet, Kimi Delta
Attention, lightning attention, Mamba-2) keeps per head a state S_t = A_t S_{t−1} + B_t of
fixed size d_k × d_v (A_t = I − β k kᵀ times a decay for the delta rule, a decay alone for
the additive rules; B_t = β k vᵀ or k vᵀ). A softmax layer keeps every past key and value,
its KV cache, or only the last W of them with a sliding window. A stack of L layers, s of
them softmax, holds at context N (N_W = min(N, W), N without a window)

    KV cache = s · N_W · (numbers cached per token by one softmax layer)       grows with N
    state    = (L − s) · (heads · d_k · d_v + the short convolution's cache)   independent of N

:class:`LayerStack` describes such a stack (:class:`SoftmaxLayer`: grouped-query attention or
DeepSeek's multi-head latent attention, MLA; :class:`RecurrentLayer`: the state's heads and
sizes); :func:`kv_cache_bytes`, :func:`state_bytes`, :func:`decode_flops` and
:func:`decode_bytes` count what it costs, and :func:`break_even_context` finds the context
from which a hybrid decodes more cheaply than its all-softmax twin (:func:`full_attention`). One head's counts come from
:func:`lattn_edu.attention_cost` (chapter 1's KV cache N(d + d_v) and state m·d_v).

The presets (:data:`PRESETS`) are the shipped hybrids Qwen3-Next-80B-A3B, Kimi Linear
48B-A3B and MiniMax-Text-01, MiniMax-M2 (its successor, back to full attention) and a
round stack for working by hand. Every number names its source in a comment; a number
not read from the model's own configuration says so in the preset's docstring.

Counting rule for the decode work of one token (:func:`decode_macs`), in multiply–adds:

- a softmax layer: every query head reads every cached key and value once,
  query_heads · N_W · (d_k + d_v) (grouped-query attention shares the cache, not the reads;
  MLA reads its latent with the up-projections absorbed into the query and output, so each
  head reads rank + rope_dim numbers for the score and rank for the value);
- a recurrent layer: passes · heads · d_k · d_v, one pass per touch of the whole state: 2 for
  an additive rule (write the decayed state plus k vᵀ, read Sᵀq), 3 for the delta rule (it
  also reads Sᵀk before writing), plus channels · kernel for the short convolution;
- left out: the multiply of the state by a gated rule's decay (one more per state entry,
  which would raise the recurrent count), the projections (q, k, v, gates, output), the
  softmax's exponentials and the feed-forward and MoE blocks, which do not depend on N. The
  projections differ between the two kinds of layer by a fixed amount per layer, which would
  add to each replaced layer's cost: the counts here are the mixers' alone.
  :func:`qwen3_next_projection_weights` counts that difference for Qwen3-Next from its
  configuration.

FLOPs are twice the multiply–adds. Bytes are bf16 by default (``dtype``); serving stacks
may keep the recurrent state in float32, which ``state_bytes(stack, "float32")`` counts.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ._checks import check_choice, check_positive_int
from .analysis import attention_cost

DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "float64": 8, "float8": 1}
RULES = ("additive", "delta")
MEASURES = ("flops", "bytes")


def _check_window(window: Any) -> int | None:
    return None if window is None else check_positive_int(window, "window")


def _check_count(value: Any, name: str) -> int:
    """An int >= 0 (bools refused): a size that may be absent."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value == 0:
        return 0
    return check_positive_int(value, name)


def bytes_per_number(dtype: str) -> int:
    """Bytes of one stored number: 2 for 'bfloat16' and 'float16', 4, 8, 1 for 'float8'."""
    return DTYPE_BYTES[check_choice(dtype, "dtype", tuple(DTYPE_BYTES))]


@dataclass(frozen=True)
class SoftmaxLayer:
    """One softmax attention layer: what it caches per token and what a query head reads.

    Build it with :meth:`gqa` or :meth:`mla`.

    Attributes
    ----------
    query_heads : int
        Heads that read the cache at every decode step.
    key_dim, value_dim : int
        Numbers one query head reads per cached token for its score and for its value.
    cache_width : int
        Numbers one token adds to this layer's cache (all heads).
    window : int or None
        Sliding window W: the cache holds the last W tokens; None keeps them all.
    head_widths : tuple of two ints or None
        MLA only: one head's key width without the RoPE slice and its value width
        (qk_nope_head_dim, v_head_dim), the rows of the up-projections W_k and W_v that
        absorption folds into the query and the output; None where not given.
    """

    query_heads: int
    key_dim: int
    value_dim: int
    cache_width: int
    window: int | None = None
    head_widths: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        for name in ("query_heads", "key_dim", "value_dim", "cache_width"):
            check_positive_int(getattr(self, name), name)
        _check_window(self.window)
        if self.head_widths is not None:
            if not isinstance(self.head_widths, tuple) or len(self.head_widths) != 2:
                raise TypeError(f"head_widths must be a pair (key width, value width) or None; "
                                f"got {self.head_widths!r}")
            for width in self.head_widths:
                check_positive_int(width, "head_widths")

    @classmethod
    def gqa(cls, query_heads: int, kv_heads: int, head_dim: int, value_dim: int | None = None,
            window: int | None = None) -> SoftmaxLayer:
        """Grouped-query attention: kv_heads heads of keys [head_dim] and values [value_dim]
        (default head_dim) cached per token, each shared by query_heads / kv_heads query heads.
        kv_heads = query_heads is multi-head attention, 1 is multi-query attention."""
        query_heads = check_positive_int(query_heads, "query_heads")
        kv_heads = check_positive_int(kv_heads, "kv_heads")
        head_dim = check_positive_int(head_dim, "head_dim")
        value_dim = head_dim if value_dim is None else check_positive_int(value_dim, "value_dim")
        if query_heads % kv_heads:
            raise ValueError(f"kv_heads must divide query_heads (each KV head serves a whole group of "
                             f"query heads); got kv_heads={kv_heads}, query_heads={query_heads}")
        per_head = attention_cost(1, head_dim, value_dim).kv_cache_entries  # one token: d_k + d_v
        return cls(query_heads, head_dim, value_dim, kv_heads * per_head, window)

    @classmethod
    def mla(cls, query_heads: int, rank: int, rope_dim: int, window: int | None = None,
            head_widths: tuple[int, int] | None = None) -> SoftmaxLayer:
        """Multi-head latent attention (DeepSeek-V2): one latent c [rank] (kv_lora_rank) and one
        RoPE key [rope_dim] (qk_rope_head_dim) cached per token for all heads. With the
        up-projections absorbed, each query head scores against [c, k_rope] and reads c.
        ``head_widths`` = (qk_nope_head_dim, v_head_dim) sizes those up-projections."""
        rank, rope_dim = check_positive_int(rank, "rank"), _check_count(rope_dim, "rope_dim")
        return cls(check_positive_int(query_heads, "query_heads"), rank + rope_dim, rank, rank + rope_dim,
                   window, head_widths)

    def cached_tokens(self, n: int) -> int:
        """Tokens in the cache at context n: n, or the window W once n passes it."""
        return n if self.window is None else min(n, self.window)

    def absorbed_macs(self) -> int:
        """MLA: multiply–adds per decoded token that the absorbed up-projections cost, whatever
        the context: each head maps its query through W_kᵀ [key width, rank] and its read-out
        through W_v [value width, rank], query_heads · (key width + value width) · rank."""
        if self.head_widths is None:
            raise ValueError("absorbed_macs needs an MLA layer built with head_widths="
                             "(qk_nope_head_dim, v_head_dim); this layer has head_widths=None")
        return self.query_heads * sum(self.head_widths) * self.value_dim

    def read_per_token(self) -> int:
        """Multiply–adds one decode step spends on each cached token: every query head reads
        its key and value, query_heads · (d_k + d_v)."""
        return self.query_heads * attention_cost(1, self.key_dim, self.value_dim).kv_cache_entries


@dataclass(frozen=True)
class RecurrentLayer:
    """One recurrent layer: heads states of d_k × d_v and an optional short convolution.

    Attributes
    ----------
    heads, key_dim, value_dim : int
        Number of states and each state's size, S [key_dim, value_dim].
    rule : {'additive', 'delta'}
        The write: additive (linear attention, lightning attention, Mamba-2, GLA) or the
        delta rule (DeltaNet, Gated DeltaNet, KDA); decays and gates do not change the counts.
    conv_channels, conv_kernel : int
        The short causal convolution before the mixer (0, 0 without one): its cache keeps the
        kernel − 1 previous inputs of each channel.
    """

    heads: int
    key_dim: int
    value_dim: int
    rule: str = "delta"
    conv_channels: int = 0
    conv_kernel: int = 0

    def __post_init__(self) -> None:
        for name in ("heads", "key_dim", "value_dim"):
            check_positive_int(getattr(self, name), name)
        check_choice(self.rule, "rule", RULES)
        channels = _check_count(self.conv_channels, "conv_channels")
        kernel = _check_count(self.conv_kernel, "conv_kernel")
        if (channels == 0) != (kernel == 0):
            raise ValueError(f"conv_channels and conv_kernel must both be 0 (no convolution) or both "
                             f"positive; got conv_channels={channels}, conv_kernel={kernel}")

    def state_numbers(self) -> int:
        """Numbers held: heads · d_k · d_v (chapter 1's state m·d_v per head) and the
        convolution's channels · (kernel − 1)."""
        per_head = attention_cost(1, self.key_dim, self.value_dim, m=self.key_dim).linear_state_entries
        return self.heads * per_head + self.conv_channels * max(self.conv_kernel - 1, 0)

    def step_macs(self) -> int:
        """Multiply–adds of one decode step: 2 passes over each state (write, read Sᵀq), a
        third for the delta rule (read Sᵀk), and channels · kernel for the convolution."""
        passes = attention_cost(1, self.key_dim, self.value_dim, m=self.key_dim).linear_macs  # 2 d_k d_v
        if self.rule == "delta":
            passes += self.key_dim * self.value_dim
        return self.heads * passes + self.conv_channels * self.conv_kernel


@dataclass(frozen=True)
class LayerStack:
    """A stack of num_layers layers: those at ``softmax_layers`` (0-based) are ``softmax``,
    every other one is ``recurrent``.

    ``softmax`` may be None only when no layer is softmax, ``recurrent`` only when every
    layer is; a list of positions is stored as a sorted tuple.
    """

    name: str
    num_layers: int
    softmax_layers: tuple[int, ...]
    softmax: SoftmaxLayer | None
    recurrent: RecurrentLayer | None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a str; got {type(self.name).__name__}")
        layers = check_positive_int(self.num_layers, "num_layers")
        positions = tuple(self.softmax_layers)
        if (any(isinstance(i, bool) or not isinstance(i, numbers.Integral) for i in positions)
                or len(set(positions)) != len(positions) or not all(0 <= i < layers for i in positions)):
            raise ValueError(f"softmax_layers must be distinct int positions in [0, {layers}) "
                             f"(0-based); got {self.softmax_layers!r}")
        object.__setattr__(self, "softmax_layers", tuple(sorted(int(i) for i in positions)))
        if positions and not isinstance(self.softmax, SoftmaxLayer):
            raise TypeError(f"softmax must be a SoftmaxLayer when softmax_layers is not empty; "
                            f"got {type(self.softmax).__name__}")
        if len(positions) < layers and not isinstance(self.recurrent, RecurrentLayer):
            raise TypeError(f"recurrent must be a RecurrentLayer when some layers are not softmax; "
                            f"got {type(self.recurrent).__name__}")

    @property
    def num_softmax(self) -> int:
        return len(self.softmax_layers)

    @property
    def num_recurrent(self) -> int:
        return self.num_layers - self.num_softmax

    @property
    def pattern(self) -> str:
        """One letter per layer, bottom first: 'S' softmax, 'R' recurrent ('RRRS' repeated
        for Qwen3-Next)."""
        softmax = set(self.softmax_layers)
        return "".join("S" if i in softmax else "R" for i in range(self.num_layers))


def _check_stack(stack: Any, name: str = "stack") -> LayerStack:
    if not isinstance(stack, LayerStack):
        raise TypeError(f"{name} must be a LayerStack; got {type(stack).__name__}")
    return stack


def kv_bytes_per_token(stack: LayerStack, dtype: str = "bfloat16") -> int:
    """Bytes one more token adds to the KV cache of all softmax layers (until a window fills)."""
    stack = _check_stack(stack)
    width = stack.softmax.cache_width if stack.num_softmax else 0
    return stack.num_softmax * width * bytes_per_number(dtype)


def kv_cache_bytes(stack: LayerStack, n: int, dtype: str = "bfloat16") -> int:
    """Bytes of the KV cache at context n: kv_bytes_per_token · min(n, W)."""
    stack, n = _check_stack(stack), check_positive_int(n, "n")
    if not stack.num_softmax:
        return 0
    return kv_bytes_per_token(stack, dtype) * stack.softmax.cached_tokens(n)


def state_bytes(stack: LayerStack, dtype: str = "bfloat16") -> int:
    """Bytes of every recurrent layer's state and convolution cache: the same at any context."""
    stack = _check_stack(stack)
    numbers = stack.recurrent.state_numbers() if stack.num_recurrent else 0
    return stack.num_recurrent * numbers * bytes_per_number(dtype)


def _decode_macs_pieces(stack: LayerStack) -> tuple[int, int]:
    """(fixed, per cached token) multiply–adds of one decode step: the recurrent layers' passes
    over their states, and what the softmax layers read for each cached token."""
    fixed = stack.num_recurrent * stack.recurrent.step_macs() if stack.num_recurrent else 0
    per_token = stack.num_softmax * stack.softmax.read_per_token() if stack.num_softmax else 0
    return fixed, per_token


def _affine(stack: LayerStack, measure: str, dtype: str) -> tuple[int, int, float]:
    """(a, b, W) with cost(n) = a + b · min(n, W) for one decode step at context n (W = inf
    without a window): a from the recurrent layers, b from the softmax layers' cache."""
    measure = check_choice(measure, "measure", MEASURES)
    has_window = stack.num_softmax and stack.softmax.window is not None
    window = stack.softmax.window if has_window else math.inf
    if measure == "bytes":
        return 2 * state_bytes(stack, dtype), kv_bytes_per_token(stack, dtype), window
    fixed, per_token = _decode_macs_pieces(stack)
    return 2 * fixed, 2 * per_token, window


def decode_macs(stack: LayerStack, n: int) -> int:
    """Multiply–adds of decoding one token at context n, by the module's counting rule:
    softmax layers read min(n, W) cached tokens, recurrent layers pass over their states."""
    stack, n = _check_stack(stack), check_positive_int(n, "n")
    fixed, per_token = _decode_macs_pieces(stack)
    return fixed + (per_token * stack.softmax.cached_tokens(n) if stack.num_softmax else 0)


def decode_flops(stack: LayerStack, n: int) -> int:
    """FLOPs of decoding one token at context n: 2 · :func:`decode_macs`."""
    return 2 * decode_macs(stack, n)


def decode_bytes(stack: LayerStack, n: int, dtype: str = "bfloat16") -> int:
    """Bytes one decode step at context n moves: the KV cache read once, the recurrent state
    read and written back once. The new token's own cache entry (1/n of the read) is left out."""
    return kv_cache_bytes(stack, n, dtype) + 2 * state_bytes(stack, dtype)


def break_even_context(hybrid: LayerStack, full: LayerStack, measure: str = "flops",
                       dtype: str = "bfloat16") -> float:
    """The context N* beyond which ``hybrid`` decodes a token more cheaply than ``full``.

    Each cost is fixed + per_token · min(N, W) (:func:`decode_flops` for measure 'flops',
    :func:`decode_bytes` for 'bytes'): the recurrent layers cost a fixed amount, the softmax
    layers an amount per cached token. Without windows N* = (fixed_hybrid − fixed_full) /
    (per_token_full − per_token_hybrid), where cost_hybrid(N*) = cost_full(N*). Returns the
    last N >= 0 at which the hybrid is not cheaper, as a real number (0.0 when it is cheaper
    at every context, inf when it never stays cheaper).
    """
    costs = [_affine(_check_stack(stack, name), measure, dtype)
             for stack, name in ((hybrid, "hybrid"), (full, "full"))]

    def difference(context: float) -> float:  # cost_hybrid − cost_full, continuous and piecewise affine
        return sum(sign * (fixed + per_token * min(context, w))
                   for sign, (fixed, per_token, w) in zip((1, -1), costs))

    corners = sorted({0.0, *(w for _, _, w in costs if w < math.inf)})
    final_slope = sum(sign * (per_token if w == math.inf else 0)
                      for sign, (_, per_token, w) in zip((1, -1), costs))
    values = [difference(corner) for corner in corners]
    if final_slope > 0 or (final_slope == 0 and values[-1] >= 0):
        return math.inf  # the hybrid costs as much or more at every long context
    for i in reversed(range(len(corners))):
        if values[i] >= 0:  # the last corner where the hybrid is not cheaper: the root follows it
            if i == len(corners) - 1:
                return corners[i] + values[i] / -final_slope
            drop = values[i] - values[i + 1]  # > 0: the difference falls through zero on this piece
            return corners[i] + values[i] / drop * (corners[i + 1] - corners[i])
    return 0.0


def interleave(stack: LayerStack, softmax_per_group: int, group: int = 4) -> LayerStack:
    """The same layers with the last ``softmax_per_group`` of every ``group`` softmax:
    1 of 4 is Qwen3-Next's 'RRRS', 1 of 8 MiniMax-Text-01's, 0 pure recurrent, ``group`` all
    softmax. A last, shorter group follows the same positions (27 layers, 1 of 4: 6 softmax)."""
    stack, group = _check_stack(stack), check_positive_int(group, "group")
    per_group = _check_count(softmax_per_group, "softmax_per_group")
    if per_group > group:
        raise ValueError(f"softmax_per_group must be at most group={group}; got {per_group}")
    positions = tuple(i for i in range(stack.num_layers) if i % group >= group - per_group)
    return replace(stack, name=f"{stack.name}, {per_group} softmax per {group}", softmax_layers=positions)


def windowed(stack: LayerStack, window: int | None) -> LayerStack:
    """The same stack with its softmax layers' window set to ``window`` (None: full attention)."""
    stack, window = _check_stack(stack), _check_window(window)
    if stack.softmax is None:
        raise ValueError(f"{stack.name} has no softmax layer description to give a window")
    label = "full window" if window is None else f"window {window}"
    return replace(stack, name=f"{stack.name}, {label}", softmax=replace(stack.softmax, window=window))


def full_attention(stack: LayerStack) -> LayerStack:
    """The all-softmax twin of the same shape: every layer softmax, unwindowed (no window)."""
    stack = _check_stack(stack)
    if stack.softmax is None:
        raise ValueError(f"{stack.name} has no softmax layer description to build full attention from")
    return LayerStack(f"{stack.name} as full attention", stack.num_layers, tuple(range(stack.num_layers)),
                      replace(stack.softmax, window=None), None)


def qwen3_next_80b_a3b() -> LayerStack:
    """Qwen3-Next-80B-A3B: 48 layers, 3 Gated DeltaNet layers then 1 gated softmax attention layer.

    From Qwen/Qwen3-Next-80B-A3B-Instruct's config.json (copies read at revision 9c7f2fbe and
    in transformers' Qwen3NextConfig defaults); the convolution's channels from the Gated
    DeltaNet layer's code (conv_dim = 2 · key_dim + value_dim). All verified.
    """
    return LayerStack(
        "Qwen3-Next-80B-A3B",
        num_layers=48,  # num_hidden_layers
        softmax_layers=tuple(range(3, 48, 4)),  # full_attention_interval 4: layers 4, 8, ..., 48 (1-based)
        softmax=SoftmaxLayer.gqa(query_heads=16, kv_heads=2, head_dim=256),  # num_attention_heads,
        # num_key_value_heads, head_dim; the output gate adds nothing to the cache
        recurrent=RecurrentLayer(
            heads=32, key_dim=128, value_dim=128,  # linear_num_value_heads, linear_key/value_head_dim:
            # the 16 key heads (linear_num_key_heads) are shared by pairs of value heads, one state each
            rule="delta",  # Gated DeltaNet
            conv_channels=2 * 16 * 128 + 32 * 128,  # q and k (16 heads of 128) and v (32 heads of 128)
            conv_kernel=4))  # linear_conv_kernel_dim


def qwen3_next_projection_shapes() -> dict[str, dict[str, tuple[int, int]]]:
    """The projection matrices of one Qwen3-Next-80B-A3B layer of each kind, as (inputs, outputs).

    Named as in the model's code; from the same config.json as :func:`qwen3_next_80b_a3b`
    (hidden_size 2,048). Keys ``deltanet`` (a Gated DeltaNet layer) and ``attention`` (a gated
    softmax attention layer), each a dict from matrix name to its shape; biases and norms are
    left out (Qwen3-Next has no projection biases).
    """
    hidden = 2048  # hidden_size
    qkvz = (2 * 16 * 128  # q and k: linear_num_key_heads 16 of linear_key_head_dim 128
            + 32 * 128  # v: linear_num_value_heads 32 of linear_value_head_dim 128
            + 32 * 128)  # the output gate z: one per value channel
    return {
        "deltanet": {"in_proj_qkvz": (hidden, qkvz),
                     "in_proj_ba": (hidden, 32 + 32),  # β and the decay a: one per value head
                     "out_proj": (32 * 128, hidden)},  # 4,096 value channels back to hidden_size
        "attention": {"q_proj": (hidden, 2 * 16 * 256),  # q (num_attention_heads 16 of head_dim
                      # 256) and the output gate, as wide as q
                      "k_proj": (hidden, 2 * 256),  # num_key_value_heads 2 of head_dim 256
                      "v_proj": (hidden, 2 * 256),
                      "o_proj": (16 * 256, hidden)},  # 4,096 back to hidden_size
    }


def qwen3_next_projection_weights() -> dict[str, int]:
    """Projection weights of one Qwen3-Next-80B-A3B layer of each kind, and their difference.

    The projections map the layer's input (hidden_size 2,048) to its queries, keys, values and
    gates, and its mixer's output back to 2,048; each weight is one multiply–add per token and
    is read once per decode step. The sums of :func:`qwen3_next_projection_shapes`' matrices.

    Keys: ``deltanet`` (a Gated DeltaNet layer: 33,685,504), ``attention`` (a gated softmax
    attention layer: 27,262,976) and ``extra`` (deltanet − attention: 6,422,528, the P that a
    replaced layer adds to the mixers-only counts).
    """
    shapes = qwen3_next_projection_shapes()
    deltanet, attention = (sum(rows * cols for rows, cols in shapes[kind].values())
                           for kind in ("deltanet", "attention"))
    return {"deltanet": deltanet, "attention": attention, "extra": deltanet - attention}


def kimi_linear_48b_a3b() -> LayerStack:
    """Kimi Linear 48B-A3B: 27 layers, 20 Kimi Delta Attention and 7 MLA layers.

    From moonshotai/Kimi-Linear-48B-A3B-Instruct's config.json (copies read at revision
    e1df551a) and the KDA layer's code (a short convolution each on q, k and v of 32 · 128
    channels). All verified. Kimi's MLA uses no RoPE (mla_use_nope), but the checkpoint keeps
    the qk_rope_head_dim slice, so the cache stores 512 + 64 numbers per token as DeepSeek's does.
    """
    return LayerStack(
        "Kimi Linear 48B-A3B",
        num_layers=27,  # num_hidden_layers
        # linear_attn_config.full_attn_layers: 4, 8, 12, 16, 20, 24, 27 (1-based)
        softmax_layers=(3, 7, 11, 15, 19, 23, 26),
        softmax=SoftmaxLayer.mla(query_heads=32, rank=512, rope_dim=64,  # num_attention_heads,
                                 # kv_lora_rank, qk_rope_head_dim
                                 head_widths=(128, 128)),  # qk_nope_head_dim, v_head_dim
        recurrent=RecurrentLayer(
            heads=32, key_dim=128, value_dim=128,  # linear_attn_config.num_heads, head_dim
            rule="delta",  # KDA: the delta rule with a decay per key channel
            conv_channels=3 * 32 * 128,  # q_conv1d, k_conv1d, v_conv1d of num_heads · head_dim each
            conv_kernel=4))  # linear_attn_config.short_conv_kernel_size


def minimax_text_01() -> LayerStack:
    """MiniMax-Text-01: 80 layers, a softmax layer after every 7 lightning-attention layers.

    From MiniMaxAI/MiniMax-Text-01's config.json: num_hidden_layers, attn_type_list (1 at
    every 8th layer), 64 heads of head_dim 128; the lightning layers keep one 128 × 128 state
    per head (vLLM's cache shape [heads, head_dim, head_dim]) and have no short convolution.
    Not verified from MiniMax-Text-01's own config.json: num_key_value_heads = 8 (the copy
    read here stops before it); 8 is the value in MiniMax-M1's config.json, the same 80-layer
    architecture, and in transformers' test of the legacy MiniMax-Text-01 configuration.
    """
    return LayerStack(
        "MiniMax-Text-01",
        num_layers=80,  # num_hidden_layers
        softmax_layers=tuple(range(7, 80, 8)),  # attn_type_list: 1 (softmax) at 8, 16, ..., 80 (1-based)
        softmax=SoftmaxLayer.gqa(query_heads=64, kv_heads=8, head_dim=128),  # num_attention_heads,
        # num_key_value_heads (unverified, see the docstring), head_dim
        recurrent=RecurrentLayer(heads=64, key_dim=128, value_dim=128,  # lightning: one state per head
                                 rule="additive"))  # S ← λ S + k vᵀ, a fixed decay per head


def minimax_m2() -> LayerStack:
    """MiniMax-M2: 62 layers, all softmax attention; MiniMax went back to full attention.

    From MiniMaxAI/MiniMax-M2's config.json as copied at revision 757303d4 (attn_type_list all
    1, 48 query heads, 8 KV heads of head_dim 128): read from a copy, not the file itself.
    """
    return LayerStack(
        "MiniMax-M2",
        num_layers=62,  # num_hidden_layers
        softmax_layers=tuple(range(62)),  # attn_type_list: every layer 1
        softmax=SoftmaxLayer.gqa(query_heads=48, kv_heads=8, head_dim=128),  # num_attention_heads,
        # num_key_value_heads, head_dim
        recurrent=None)


def round_stack() -> LayerStack:
    """A stack with round numbers, for working by hand; no shipped model.

    32 layers, 1 softmax per 4 (grouped-query attention: 32 query heads, 8 KV heads of 128)
    and Gated DeltaNet layers of 32 heads of 128 × 128 without a convolution.
    """
    return LayerStack("round 32-layer stack", 32, tuple(range(3, 32, 4)),
                      SoftmaxLayer.gqa(query_heads=32, kv_heads=8, head_dim=128),
                      RecurrentLayer(heads=32, key_dim=128, value_dim=128, rule="delta"))


PRESETS: dict[str, Callable[[], LayerStack]] = {  # each stack's own name
    "Qwen3-Next-80B-A3B": qwen3_next_80b_a3b,
    "Kimi Linear 48B-A3B": kimi_linear_48b_a3b,
    "MiniMax-Text-01": minimax_text_01,
    "MiniMax-M2": minimax_m2,
    "round 32-layer stack": round_stack,
}


def preset(name: str) -> LayerStack:
    """The preset stack called ``name`` (a key of :data:`PRESETS`)."""
    return PRESETS[check_choice(name, "name", tuple(PRESETS))]()


def cost_table(stacks: Any, n: int = 131_072, dtype: str = "bfloat16") -> list[dict[str, Any]]:
    """One row per stack at context n: its layers, KV cache per token and in all, state, and
    the same for its full-attention baseline, with the break-even contexts.

    Keys: name, layers, softmax_layers, kv_bytes_per_token, kv_bytes, state_bytes, total_bytes,
    full_kv_bytes, decode_flops, full_decode_flops, break_even_flops, break_even_bytes.
    """
    n = check_positive_int(n, "n")
    rows = []
    for stack in stacks:
        full = full_attention(_check_stack(stack, "each of stacks"))
        rows.append({
            "name": stack.name, "layers": stack.num_layers, "softmax_layers": stack.num_softmax,
            "kv_bytes_per_token": kv_bytes_per_token(stack, dtype),
            "kv_bytes": kv_cache_bytes(stack, n, dtype),
            "state_bytes": state_bytes(stack, dtype),
            "total_bytes": kv_cache_bytes(stack, n, dtype) + state_bytes(stack, dtype),
            "full_kv_bytes": kv_cache_bytes(full, n, dtype),
            "decode_flops": decode_flops(stack, n), "full_decode_flops": decode_flops(full, n),
            "break_even_flops": break_even_context(stack, full, "flops", dtype),
            "break_even_bytes": break_even_context(stack, full, "bytes", dtype),
        })
    return rows
