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
- ``based``: linear attention with the 2nd-order Taylor features of exp on which the
  Zoology authors built their Based model, 1 + q·k + (q·k)²/2, on a small projection
  of q and k chosen so that its state is about as large as elu+1's.

The number of pairs P is swept at fixed width, so the linear mixers' m×d_v state has
to hold more and more associations, while softmax keeps every pair in its KV cache.

Run times on 2 shared CPU cores with one torch thread (the default; results are
bit-reproducible for a given seed and thread count): the full sweep (P = 4 … 64,
1,500 steps per model) about 17 minutes, ``--quick`` (P = 4, 16, 64, 800 steps) about
5 minutes, ``--tiny`` (the tests' smoke run) a few seconds.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .feature_maps import FavorPlus
from .gated import gated_linear_attention
from .linear import linear_attention

MODELS = ("softmax", "linear", "favor", "retnet", "based")


@dataclass(frozen=True)
class RecallConfig:
    """Everything that defines a sweep; saved verbatim in the output JSON."""

    models: tuple[str, ...] = MODELS
    pair_counts: tuple[int, ...] = (4, 8, 16, 32, 64)
    num_keys: int = 128  # key tokens 0 .. num_keys-1
    num_values: int = 128  # value tokens num_keys .. num_keys+num_values-1
    d_model: int = 64
    num_layers: int = 1
    num_heads: int = 4
    taylor_dim: int = 4  # Based: q, k projected to t; m = 1 + t + t(t+1)/2 = 15 ≈ d_head
    steps: int = 1500
    batch_size: int = 32
    learning_rate: float = 3e-3
    weight_decay: float = 0.1
    eval_sequences: int = 512
    seed: int = 0
    threads: int = 1


# Quick: about half the steps at twice the learning rate, enough for softmax to learn P = 64
# (it needs ~700 steps at this rate); the linear models learn more slowly, so the quick gap
# is wider than the full one (chapter 7 compares both).
QUICK = RecallConfig(pair_counts=(4, 16, 64), steps=800, learning_rate=6e-3)
# Tiny: every model and code path in seconds, for the tests; its accuracies mean nothing.
TINY = RecallConfig(pair_counts=(2, 4), num_keys=8, num_values=8, d_model=16, num_heads=2,
                    taylor_dim=2, steps=3, batch_size=4, eval_sequences=8)


def make_batch(num_pairs: int, batch_size: int, num_keys: int, num_values: int,
               generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """One batch of MQAR sequences.

    Each sequence is ``k1 v1 ... kP vP q1 ... qP``: P distinct keys, each followed by a
    random value, then the same P keys in a random order as queries.

    Returns
    -------
    tokens : long [B, 3P]
        Key tokens lie in [0, num_keys), value tokens in [num_keys, num_keys + num_values).
    targets : long [B, 3P]
        At each query position the value paired with that key earlier; -100 elsewhere
        (ignored by the loss and the accuracy).
    """
    if num_pairs > num_keys:
        raise ValueError(f"num_pairs ({num_pairs}) needs at least as many keys; got num_keys={num_keys}")
    keys = torch.rand(batch_size, num_keys, generator=generator).argsort(-1)[:, :num_pairs]  # [B, P]
    values = torch.randint(num_values, (batch_size, num_pairs), generator=generator) + num_keys
    order = torch.rand(batch_size, num_pairs, generator=generator).argsort(-1)  # [B, P]
    pairs = torch.stack([keys, values], dim=-1).flatten(1)  # k1 v1 k2 v2 ...  [B, 2P]
    tokens = torch.cat([pairs, keys.gather(1, order)], dim=1)  # [B, 3P]
    targets = torch.full_like(tokens, -100)
    targets[:, 2 * num_pairs:] = values.gather(1, order)
    return tokens, targets


def taylor_features(x: torch.Tensor) -> torch.Tensor:
    """φ(x) = [1, x, x_i x_j for i < j, x_i²/√2], [..., N, t] -> [..., N, 1 + t + t(t+1)/2].

    φ(q)·φ(k) = 1 + q·k + (q·k)²/2, the Taylor expansion of exp(q·k) to second order:
    positive for every q, k (it is ((q·k + 1)² + 1)/2), and sharper than elu+1. Each
    unordered pair i, j appears once (weight 1 for i < j, 1/√2 on the diagonal), which
    gives the same kernel as the full outer product with about half the width.
    """
    rows, cols = torch.triu_indices(x.shape[-1], x.shape[-1], device=x.device)  # i <= j
    weights = 1 - (1 - 2 ** -0.5) * (rows == cols).to(x.dtype)  # [t(t+1)/2], in x's precision
    products = x[..., rows] * x[..., cols] * weights  # [..., N, t(t+1)/2]
    return torch.cat([torch.ones_like(x[..., :1]), x, products], dim=-1)


def taylor_width(t: int) -> int:
    """The width m = 1 + t + t(t+1)/2 of :func:`taylor_features` on t inputs."""
    return 1 + t + t * (t + 1) // 2


class Mixer(nn.Module):
    """Multi-head causal sequence mixer: project to q, k, v, mix, project back.

    Subclasses implement :meth:`mix` on q, k [B, H, N, d_qk] and v [B, H, N, d_head].
    """

    def __init__(self, d_model: int, num_heads: int, d_qk: int | None = None) -> None:
        super().__init__()
        self.num_heads, self.d_head = num_heads, d_model // num_heads
        self.d_qk = d_qk or self.d_head
        self.qk = nn.Linear(d_model, 2 * num_heads * self.d_qk)
        self.v = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, d_model)

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


class SoftmaxMixer(Mixer):
    """softmax(QKᵀ/√d) V, causal: the full KV cache, the baseline."""

    def mix(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class LinearMixer(Mixer):
    """Causal linear attention φ(q_i)ᵀS_i / φ(q_i)ᵀz_i through ``la.linear_attention``.

    ``feature_map`` is 'elu+1' or a callable [..., N, d_qk] -> [..., N, m]; ``m`` its width.
    ``scale`` multiplies q and k first (d^-1/4 makes FAVOR+ estimate softmax(q·k/√d)).
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


def make_mixer(name: str, config: RecallConfig, layer: int) -> Mixer:
    """The sequence mixer called ``name`` for one layer (FAVOR+ draws its features per layer)."""
    d_head = config.d_model // config.num_heads
    if name == "softmax":
        return SoftmaxMixer(config.d_model, config.num_heads)
    if name == "linear":
        return LinearMixer(config.d_model, config.num_heads, "elu+1", m=d_head)
    if name == "favor":
        features = FavorPlus(d_head, d_head, orthogonal=True, seed=config.seed + layer)
        return LinearMixer(config.d_model, config.num_heads, features, m=d_head, scale=d_head ** -0.25)
    if name == "retnet":
        return RetentionMixer(config.d_model, config.num_heads)
    if name == "based":
        t = config.taylor_dim
        # q, k scaled by t^-1/4 so that q·k enters the Taylor series as a softmax score q·k/√t
        return LinearMixer(config.d_model, config.num_heads, taylor_features, m=taylor_width(t),
                           d_qk=t, scale=t ** -0.25)
    raise ValueError(f"model must be one of {', '.join(MODELS)}; got {name!r}")


class RecallModel(nn.Module):
    """Embedding, a width-2 causal convolution, pre-norm blocks (mixer + MLP), readout.

    The convolution mixes each token with its predecessor, as the short convolutions of
    the efficient models in Zoology do: it lets a value token carry the key before it, so one mixer
    layer can solve the task by matching a query against those keys.
    """

    def __init__(self, mixer: str, config: RecallConfig) -> None:
        super().__init__()
        vocab, width = config.num_keys + config.num_values, config.d_model
        self.embed = nn.Embedding(vocab, width)
        self.conv = nn.Linear(2 * width, width)
        self.mixers = nn.ModuleList(make_mixer(mixer, config, i) for i in range(config.num_layers))
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
        """Recurrent-state numbers over all layers, or None for softmax (a KV cache of 2·N·d)."""
        sizes = [mixer.state_size() for mixer in self.mixers]
        return None if None in sizes else sum(sizes)


def accuracy(model: RecallModel, tokens: torch.Tensor, targets: torch.Tensor,
             batch_size: int = 128) -> float:
    """Fraction of query positions whose argmax prediction is the right value."""
    correct = total = 0
    with torch.no_grad():
        for start in range(0, len(tokens), batch_size):
            logits = model(tokens[start:start + batch_size])
            mask = targets[start:start + batch_size] != -100
            correct += (logits.argmax(-1)[mask] == targets[start:start + batch_size][mask]).sum().item()
            total += mask.sum().item()
    return correct / total


def train_one(model_name: str, num_pairs: int, config: RecallConfig,
              on_step: Callable[[float], None] = lambda loss: None) -> dict[str, Any]:
    """Train one model on P = ``num_pairs`` and evaluate it on fresh sequences.

    AdamW with a linear warm-up and cosine decay; every step draws a new batch, so the
    model never sees the evaluation sequences (drawn from a separate generator). The
    generators depend only on the seed and P: every model trains on the same batches
    and is scored on the same sequences.
    """
    torch.manual_seed(config.seed)
    model = RecallModel(model_name, config)
    train_data = torch.Generator().manual_seed(config.seed * 1000 + num_pairs)
    eval_data = torch.Generator().manual_seed(config.seed * 1000 + num_pairs + 500)
    optimiser = torch.optim.AdamW(model.parameters(), lr=config.learning_rate,
                                  weight_decay=config.weight_decay)
    warmup = max(1, config.steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda s: min(
        (s + 1) / warmup, 0.5 * (1 + math.cos(math.pi * s / config.steps))))
    start = time.perf_counter()
    for _ in range(config.steps):
        tokens, targets = make_batch(num_pairs, config.batch_size, config.num_keys,
                                     config.num_values, train_data)
        logits = model(tokens, last=num_pairs)  # the P query positions  [B, P, vocab]
        loss = F.cross_entropy(logits.flatten(0, 1), targets[:, -num_pairs:].flatten())
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        schedule.step()
        on_step(loss.item())
    seconds = time.perf_counter() - start
    eval_tokens, eval_targets = make_batch(num_pairs, config.eval_sequences, config.num_keys,
                                           config.num_values, eval_data)
    return {"model": model_name, "num_pairs": num_pairs,
            "accuracy": accuracy(model.eval(), eval_tokens, eval_targets),
            "seed": config.seed, "steps": config.steps, "final_loss": round(loss.item(), 4),
            "train_seconds": round(seconds, 1), "state_size": model.state_size()}


class ProgressBar:
    """A one-line progress bar on stderr: steps done of ``total``, elapsed time and ETA."""

    def __init__(self, total: int, stream: Any = sys.stderr, width: int = 30) -> None:
        self.total, self.stream, self.width = total, stream, width
        self.done, self.start, self.label = 0, time.perf_counter(), ""

    def update(self, loss: float) -> None:
        self.done += 1
        if self.done % 10 and self.done != self.total:  # redraw every 10 steps
            return
        elapsed = time.perf_counter() - self.start
        eta = elapsed / self.done * (self.total - self.done)
        filled = self.width * self.done // self.total
        self.stream.write(f"\r{self.label:<14} [{'#' * filled}{'.' * (self.width - filled)}] "
                          f"{self.done}/{self.total} loss {loss:5.3f}  {elapsed:5.0f}s, ~{eta:4.0f}s left ")
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


def sweep(config: RecallConfig, progress: bool = True) -> list[dict[str, Any]]:
    """Train and evaluate every model at every pair count; one result dict per pair."""
    if max(config.pair_counts) > config.num_keys:  # refuse before any training, not midway
        raise ValueError(f"pair_counts must not exceed num_keys={config.num_keys}; "
                         f"got {list(config.pair_counts)}")
    bar = ProgressBar(len(config.models) * len(config.pair_counts) * config.steps,
                      stream=sys.stderr if progress else _Discard())
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(config.threads)  # results are bit-reproducible for a given count
    try:
        results = []
        for num_pairs in config.pair_counts:
            for model_name in config.models:
                bar.label = f"{model_name} P={num_pairs}"
                results.append(train_one(model_name, num_pairs, config, bar.update))
    finally:
        torch.set_num_threads(previous_threads)
    bar.close()
    return results


class _Discard:
    """A stream that drops what is written (the progress bar with progress off)."""

    def write(self, text: str) -> None:
        pass

    def flush(self) -> None:
        pass


def format_table(results: list[dict[str, Any]]) -> str:
    """Accuracy as a Markdown table: one row per model, one column per pair count."""
    pair_counts = sorted({r["num_pairs"] for r in results})
    models = list(dict.fromkeys(r["model"] for r in results))
    cell = {(r["model"], r["num_pairs"]): r["accuracy"] for r in results}
    lines = ["| model | " + " | ".join(f"P={p}" for p in pair_counts) + " |",
             "|---|" + "---|" * len(pair_counts)]
    lines += [f"| {m} | " + " | ".join(f"{cell[m, p]:.3f}" for p in pair_counts) + " |" for m in models]
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``lattn-edu recall`` options."""
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true",
                      help=f"pairs {QUICK.pair_counts}, {QUICK.steps} steps (a few minutes on 2 cores)")
    size.add_argument("--tiny", action="store_true", help="a seconds-long smoke test of the whole pipeline")
    parser.add_argument("--seed", type=int, default=0, help="seeds the weights, data and FAVOR+ features")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--pairs", nargs="+", type=int, help="override the pair counts")
    parser.add_argument("--steps", type=int, help="override the training steps per model")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument("--out", type=Path, required=True, help="where to write the JSON results")


def config_from_args(args: argparse.Namespace) -> RecallConfig:
    """The preset chosen by --quick / --tiny (else the full sweep) with the overrides applied."""
    base = QUICK if args.quick else TINY if args.tiny else RecallConfig()
    overrides = {"seed": args.seed, "threads": args.threads, "models": tuple(args.models)}
    if args.pairs:
        overrides["pair_counts"] = tuple(args.pairs)
    if args.steps:
        overrides["steps"] = args.steps
    return replace(base, **overrides)


def run(args: argparse.Namespace) -> int:
    """Run the sweep, print the accuracy table, write ``{"results": [...], "config": {...}}``."""
    config = config_from_args(args)
    start = time.perf_counter()
    results = sweep(config, progress=not args.no_progress)
    wall = time.perf_counter() - start
    mode = "quick" if args.quick else "tiny" if args.tiny else "full"
    record = {"results": results,
              "config": {**asdict(config), "mode": mode, "wall_seconds": round(wall, 1),
                         "torch": torch.__version__, "machine": _machine()}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(format_table(results))
    print(f"{mode} sweep: {wall:.0f} s with {config.threads} torch thread(s); wrote {args.out}")
    return 0


def _machine() -> str:
    """Where the sweep ran, for the record."""
    from .book import machine_summary

    return machine_summary()
