"""What the language-model lab measures on held-out text: bits per character, by position and
on an in-context copy (chapter 17).

- :func:`validation_windows`: fixed windows spread evenly over the validation text, the same
  for every run;
- :func:`position_losses`: the loss at every position of every window, from which come the
  validation bits per character (their mean) and the loss by position in the context;
- :func:`copy_probe`: windows of real text with a random string written into them twice, far
  apart; a model that can look back that far predicts the second copy from the first;
- :func:`stretch_gain` and :func:`window_margin`: from the loss by position, how much better a
  model predicts the late stretch of its context than the early one, and by how much that gain
  exceeds the window model's (the control for what the text alone does).

Bits are nats / ln 2: a model that guesses uniformly among V characters scores log₂ V.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .._checks import check_positive_int


def validation_windows(ids: np.ndarray, context: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` windows of ``context`` tokens at evenly spaced starts over ``ids`` [M] (the whole
    validation part, not one passage), and their next tokens: (x, y) int64 [count, context]."""
    context, count = check_positive_int(context, "context"), check_positive_int(count, "count")
    if ids.shape[0] < context + 1:
        raise ValueError(f"ids must hold at least context + 1 = {context + 1} tokens; got {ids.shape[0]}")
    starts = np.linspace(0, ids.shape[0] - context - 1, count).round().astype(np.int64)  # [count]
    window = ids[starts[:, None] + np.arange(context + 1)].astype(np.int64)  # [count, context + 1]
    return window[:, :-1], window[:, 1:]


def position_losses(model: nn.Module, tokens: np.ndarray, targets: np.ndarray,
                    batch_size: int = 32) -> np.ndarray:
    """The cross-entropy (nats) of predicting ``targets[b, t]`` from ``tokens[b, :t+1]``:
    tokens, targets int [B, N] -> float64 [B, N], ``batch_size`` windows at a time."""
    losses = []
    with torch.no_grad():
        for start in range(0, len(tokens), batch_size):
            x = torch.from_numpy(tokens[start:start + batch_size])  # [b, N]
            y = torch.from_numpy(targets[start:start + batch_size])
            logits = model(x)  # [b, N, vocab]
            losses.append(F.cross_entropy(logits.transpose(1, 2), y, reduction="none").double().numpy())
    return np.concatenate(losses)


def bits(nats: float | np.ndarray) -> float | np.ndarray:
    """Nats to bits: / ln 2."""
    return nats / math.log(2)


# blocks of 16 positions in a 256-character context: the early stretch is positions 64–127,
# the late stretch 192–255 (the lab's position_bits has one number per block)
EARLY_STRETCH = slice(4, 8)
LATE_STRETCH = slice(12, 16)


def stretch_gain(position_bits: np.ndarray, early: slice = EARLY_STRETCH,
                 late: slice = LATE_STRETCH) -> float:
    """Mean bits over the ``early`` blocks minus mean bits over the ``late`` ones, for one run's
    loss by position ``position_bits`` [blocks]: positive when the model predicts the late
    characters, which have more past, better."""
    position_bits = np.asarray(position_bits, dtype=np.float64)
    return float(position_bits[early].mean() - position_bits[late].mean())


def window_margin(position_bits: np.ndarray, window_bits: np.ndarray, early: slice = EARLY_STRETCH,
                  late: slice = LATE_STRETCH) -> float:
    """A model's gain (:func:`stretch_gain`) minus the window model's on the same seed: the
    part of its gain the text alone does not explain, as far as the window model controls it."""
    return stretch_gain(position_bits, early, late) - stretch_gain(window_bits, early, late)


def copy_probe(ids: np.ndarray, vocab: int, context: int, length: int, count: int,
               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``count`` windows of real text, each with its own random string of ``length`` characters
    (uniform over the vocabulary) written over it twice: first right after ``length`` characters
    of text, then again at the very end of the window, context + 1 − 2·length positions later.

    A copy's first character cannot be foreseen (nothing marks where the copy starts); the
    other length − 1 can, from the first copy. Those are the scored positions: predictions j
    whose target ``y[:, j]`` is one of characters 2..length of a copy.

    Returns
    -------
    tokens, targets : int64 [count, context]
        The window and its next tokens.
    first, second : bool [context]
        The scored positions of the first and of the second copy (length − 1 each).
    """
    length, count = check_positive_int(length, "length"), check_positive_int(count, "count")
    second_start = context + 1 - length  # in the window with its next token, [context + 1]
    if second_start < 2 * length:
        raise ValueError(f"length must be at most (context + 1) / 3 = {(context + 1) // 3} so that text, "
                         f"the first copy and the second fit in the context; got {length}")
    starts = rng.integers(0, ids.shape[0] - context, size=count)  # [count]
    window = ids[starts[:, None] + np.arange(context + 1)].astype(np.int64)  # [count, context + 1]
    strings = rng.integers(0, vocab, size=(count, length))  # [count, length]
    window[:, length:2 * length] = strings
    window[:, second_start:] = strings
    first, second = np.zeros(context, dtype=bool), np.zeros(context, dtype=bool)
    first[length:2 * length - 1] = True  # targets window[length + 1 .. 2·length − 1]
    second[second_start:] = True  # targets window[second_start + 1 .. context]
    return window[:, :-1], window[:, 1:], first, second
