"""Baselines that need no training, for chapter 17's scale of bits per character.

:func:`unigram_bits` scores each character by its frequency in the training text alone (no
context); :func:`count_model_bits` by counts of what followed the last few characters in the
training text, Witten-Bell interpolated (each context's counts mixed with the next shorter
context's estimate, down to the letter frequencies and a uniform floor). Both score the same
(x, y) windows as the lab (:func:`.probes.validation_windows`): the character ``y[b, t]`` is
predicted from ``x[b, :t + 1]`` only.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

__all__ = ["count_model_bits", "unigram_bits"]


def _ids(name: str, ids, vocab_size: int) -> np.ndarray:
    """``ids`` as integers in [0, vocab_size), or a ValueError naming ``name``."""
    if not isinstance(vocab_size, (int, np.integer)) or vocab_size < 1:
        raise ValueError(f"vocab_size must be a positive integer; got {vocab_size!r}")
    ids = np.asarray(ids)
    if ids.size and (not np.issubdtype(ids.dtype, np.integer) or ids.min() < 0 or ids.max() >= vocab_size):
        raise ValueError(f"{name} must hold integer character ids in [0, {vocab_size}); got dtype "
                         f"{ids.dtype}, values {ids.min()} to {ids.max()}")
    return ids.astype(np.int64)


def _unigram(train_ids: np.ndarray, vocab_size: int) -> np.ndarray:
    """Add-one letter frequencies of the training text: [vocab_size], summing to 1."""
    counts = np.bincount(np.asarray(train_ids, dtype=np.int64), minlength=vocab_size) + 1.0
    return counts / counts.sum()


def unigram_bits(train_ids, targets, vocab_size: int) -> float:
    """Mean bits per character of ``targets`` (any shape) under the training text's letter
    frequencies, add-one smoothed so that no character costs infinitely much."""
    p = _unigram(_ids("train_ids", train_ids, vocab_size), vocab_size)
    return float(-np.log2(p[_ids("targets", targets, vocab_size)]).mean())


def count_model_bits(train_ids, inputs, targets, vocab_size: int, order: int = 4) -> float:
    """Mean bits per character of ``targets`` [B, T] under an interpolated count model over
    the last ``order - 1`` characters (Witten-Bell): for a context h seen n(h) times with u(h)
    distinct next characters, p(c | h) = (n(h, c) + u(h) p(c | h')) / (n(h) + u(h)), h' being
    h less its oldest character; the letter frequencies are mixed likewise with a uniform
    guess. ``targets[b, t]`` follows ``inputs[b, :t + 1]``: a context never reaches before
    the window's start."""
    if not isinstance(order, (int, np.integer)) or order < 1:
        raise ValueError(f"order must be a positive integer (characters of context plus one); got {order!r}")
    train = [int(c) for c in _ids("train_ids", train_ids, vocab_size)]
    inputs, targets = _ids("inputs", inputs, vocab_size), _ids("targets", targets, vocab_size)
    if targets.ndim != 2 or inputs.shape != targets.shape:
        raise ValueError(f"inputs and targets must both be [B, T]; got {inputs.shape} and {targets.shape}")
    follow: dict[tuple, Counter] = defaultdict(Counter)  # context -> next-character counts
    for n in range(order):  # contexts of 0 to order - 1 characters
        for i in range(n, len(train)):
            follow[tuple(train[i - n:i])][train[i]] += 1

    def prob(history: tuple, c: int) -> float:
        if not history and () not in follow:
            return 1.0 / vocab_size
        lower = prob(history[1:], c) if history else 1.0 / vocab_size
        seen = follow.get(history)
        if not seen:
            return lower
        total, kinds = sum(seen.values()), len(seen)
        return (seen[c] + kinds * lower) / (total + kinds)

    bits = [-np.log2(prob(tuple(int(x) for x in inputs[b, max(0, t - order + 2):t + 1]),
                          int(targets[b, t])))
            for b in range(targets.shape[0]) for t in range(targets.shape[1])]
    return float(np.mean(bits))
