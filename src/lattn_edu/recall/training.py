"""Training and scoring the recall models: one run, and the sweep over models and pair counts."""

from __future__ import annotations

import math
import sys
import time
from typing import Any, Callable

import torch
import torch.nn.functional as F
from tqdm import tqdm

from .config import RecallConfig
from .mixers import layer_pattern
from .model import RecallModel
from .pool import run_all
from .task import IGNORED, make_batch


def accuracy(model: RecallModel, tokens: torch.Tensor, targets: torch.Tensor,
             batch_size: int = 128) -> float:
    """Fraction of query positions whose argmax prediction is the right value.

    tokens, targets long [B, N]; positions whose target is -100 are not scored.
    """
    correct = total = 0
    with torch.no_grad():
        for start in range(0, len(tokens), batch_size):
            logits = model(tokens[start:start + batch_size])  # [b, N, vocab]
            answers = targets[start:start + batch_size]  # [b, N]
            mask = answers != IGNORED
            correct += (logits.argmax(-1)[mask] == answers[mask]).sum().item()
            total += mask.sum().item()
    return correct / total


def learning_rate_factor(step: int, steps: int) -> float:
    """The learning rate at ``step`` of ``steps``, as a share of the peak: a linear warm-up over
    the first tenth of the steps until it meets a half cosine that falls from 1 at step 0 to 0
    at the last step."""
    warmup = max(1, steps // 10)
    return min((step + 1) / warmup, 0.5 * (1 + math.cos(math.pi * step / steps)))


def make_optimiser(model: RecallModel, config: RecallConfig) -> tuple[torch.optim.Optimizer, Any]:
    """AdamW, its learning rate scheduled by :func:`learning_rate_factor`."""
    optimiser = torch.optim.AdamW(model.parameters(), lr=config.learning_rate,
                                  weight_decay=config.weight_decay)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser,
                                                 lambda s: learning_rate_factor(s, config.steps))
    return optimiser, schedule


def optimise(model: RecallModel, config: RecallConfig, batch_loss: Callable[[], torch.Tensor],
             on_step: Callable[[float], None]) -> float:
    """``config.steps`` AdamW steps (:func:`make_optimiser`, gradients clipped to norm 1), each
    on the loss ``batch_loss()`` computes on a fresh batch; the last loss. The state-tracking
    lab (:mod:`lattn_edu.tracking`) trains through it too."""
    optimiser, schedule = make_optimiser(model, config)
    for _ in range(config.steps):
        loss = batch_loss()
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        schedule.step()
        on_step(loss.item())
    return loss.item()


def train_steps(model: RecallModel, num_pairs: int, config: RecallConfig,
                data: torch.Generator, on_step: Callable[[float], None]) -> float:
    """``config.steps`` steps, each on a fresh batch drawn from ``data``; the last loss."""

    def batch_loss() -> torch.Tensor:
        tokens, targets = make_batch(num_pairs, config.batch_size, config.num_keys,
                                     config.num_values, data)  # [B, 3P] each
        logits = model(tokens, last=num_pairs)  # only the P query positions are scored  [B, P, vocab]
        return F.cross_entropy(logits.flatten(0, 1), targets[:, -num_pairs:].flatten())

    return optimise(model, config, batch_loss, on_step)


def train_one(model_name: str, num_pairs: int, config: RecallConfig,
              on_step: Callable[[float], None] = lambda loss: None) -> dict[str, Any]:
    """Train one model on P = ``num_pairs`` and evaluate it on fresh sequences.

    Every step draws a new batch, so the model never sees the evaluation sequences
    (drawn from a separate generator). The generators depend only on the seed and P:
    every model trains on the same batches and is scored on the same sequences.
    ``on_step`` receives each step's loss. Returns one row of the results JSON.
    """
    torch.manual_seed(config.seed)
    model = RecallModel(model_name, config)
    train_data = torch.Generator().manual_seed(config.seed * 1000 + num_pairs)
    eval_data = torch.Generator().manual_seed(config.seed * 1000 + num_pairs + 500)
    start = time.perf_counter()
    final_loss = train_steps(model, num_pairs, config, train_data, on_step)
    seconds = time.perf_counter() - start
    eval_tokens, eval_targets = make_batch(num_pairs, config.eval_sequences, config.num_keys,
                                           config.num_values, eval_data)
    return {"model": model_name, "num_pairs": num_pairs,
            "accuracy": accuracy(model.eval(), eval_tokens, eval_targets),
            "seed": config.seed, "steps": config.steps, "final_loss": round(final_loss, 4),
            "train_seconds": round(seconds, 1), "state_size": model.state_size(),
            "cache_floats": model.cache_floats(3 * num_pairs)}


def check_sweep(config: RecallConfig) -> None:
    """Refuse a sweep that would fail part-way, before any training."""
    for model in config.models:  # a name or a layer pattern that fills the layers
        layer_pattern(model, config.num_layers)
    if max(config.pair_counts) > config.num_keys:
        raise ValueError(f"pair_counts must not exceed num_keys={config.num_keys}; "
                         f"got {list(config.pair_counts)}")


def train_pair(run: tuple[str, int, RecallConfig]) -> dict[str, Any]:
    """:func:`train_one` on one (model, P, config) of a sweep, as a worker process calls it."""
    return train_one(*run)


def sweep(config: RecallConfig, progress: bool = True, workers: int = 1) -> list[dict[str, Any]]:
    """Train and evaluate every model at every pair count; one result dict per pair.

    ``workers`` processes train the runs side by side (see :mod:`.pool`), each on
    ``config.threads`` torch threads; the results are the same for any number of workers
    and come in the same order. ``progress`` shows a bar on stderr, moved as each run
    finishes, when stderr is a terminal (never in a pipe or log).
    """
    check_sweep(config)
    runs = [(model_name, num_pairs, config)
            for num_pairs in config.pair_counts for model_name in config.models]
    # disable=None: tqdm switches itself off when stderr is not a TTY
    bar = tqdm(total=len(runs) * config.steps, unit="step", file=sys.stderr,
               disable=None if progress else True)
    results = []
    with bar:
        for row in run_all(train_pair, runs, workers, config.threads):
            bar.set_description(f"{row['model']} P={row['num_pairs']}")
            bar.update(config.steps)
            results.append(row)
    return results
