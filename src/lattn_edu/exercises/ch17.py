"""Exercises for chapter 17 (real text: the language-model lab on Shakespeare): the lab's bits
per character from its losses in nats, and one model's far-context margin over the window model.

What each checker compares with (the package's own code, never the solutions):

- ``ch17.bits_per_character``: :func:`lattn_edu.lm.probes.bits` of the mean over the scored
  characters, as the lab computes it; rtol 1e-9.
- ``ch17.margin``: :func:`lattn_edu.lm.probes.window_margin`, which the chapter calls for
  every margin it shows; rtol 1e-9.
"""

from __future__ import annotations

import math

import numpy as np

from ..lm.probes import EARLY_STRETCH, LATE_STRETCH, bits, window_margin
from .base import Exercise, check_function

# --- ch17.bits_per_character


def solution_bits_per_character(losses, lengths):
    """The lab's validation bits per character: a float.

    losses[b, t] is the loss −ln p, in nats, of the character that follows
    position t of context b (predicted from positions 0..t); only the first
    lengths[b] positions of context b are scored (the rest is padding).
    Every scored character weighs the same: take the mean over all of them,
    then turn nats into bits (divide by ln 2).
    """
    total = sum(float(np.sum(losses[b, :n])) for b, n in enumerate(lengths))
    return total / sum(lengths) / np.log(2)


def package_bits_per_character(losses, lengths):
    """What the lab records: probes.bits of the mean over every scored character."""
    losses = np.asarray(losses, dtype=np.float64)
    scored = np.arange(losses.shape[1]) < np.asarray(lengths)[:, None]  # [B, N]
    return float(bits(losses[scored].mean()))


def _bits_cases():
    """A uniform guess among 72 characters, one character, full contexts, and contexts of
    unequal length, where weighting each context equally gives another answer."""
    rng = np.random.default_rng(17)
    cases = [(np.full((4, 8), math.log(72)), [8, 8, 8, 8]),
             (np.array([[0.5]]), [1]),
             (rng.exponential(1.6, size=(3, 5)), [5, 5, 5]),
             (rng.exponential(1.6, size=(128, 256)), [256] * 128),
             (rng.exponential(1.6, size=(7, 2)), [2, 1, 2, 2, 1, 1, 2])]
    uneven = rng.exponential(1.6, size=(3, 9))
    uneven[0] += 3.0  # the short context costs more, so its weight matters
    cases.append((uneven, [2, 9, 7]))
    return [{"losses": losses, "lengths": lengths} for losses, lengths in cases]


def _check_bits_per_character(answer):
    check_function(answer, package_bits_per_character, _bits_cases(), rtol=1e-9)


# --- ch17.margin


def solution_margin(position_bits, window_bits, early, late):
    """One model's margin over the window model on one seed: a float.

    position_bits and window_bits hold bits per character by block of the
    context (the model's and the window model's); early and late are slices
    of blocks. Gain = mean bits on the early blocks − mean bits on the late
    ones; the margin is the model's gain minus the window model's.
    """
    def gain(line):
        return np.mean(line[early]) - np.mean(line[late])
    return float(gain(position_bits) - gain(window_bits))


def _margin_cases():
    """The lab's 16 blocks and stretches, then odd block counts and stretches of unequal
    length, seeded."""
    rng = np.random.default_rng(1717)
    cases = [{"position_bits": 2.4 + 0.05 * rng.standard_normal(16),
              "window_bits": 2.45 + 0.05 * rng.standard_normal(16),
              "early": EARLY_STRETCH, "late": LATE_STRETCH}]
    for blocks, early, late in ((7, slice(1, 3), slice(4, 7)), (11, slice(0, 5), slice(9, 11)),
                                (5, slice(2, 3), slice(3, 5)), (13, slice(1, 4), slice(6, 13))):
        cases.append({"position_bits": 2.0 + rng.exponential(0.5, blocks),
                      "window_bits": 2.0 + rng.exponential(0.5, blocks),
                      "early": early, "late": late})
    return cases


def _check_margin(answer):
    check_function(answer, window_margin, _margin_cases(), rtol=1e-9)


EXERCISES = [
    Exercise("ch17.bits_per_character", "The language-model lab's bits per character",
             "code", solution_bits_per_character, _check_bits_per_character),
    Exercise("ch17.margin", "One model's far-context margin over the window model",
             "code", solution_margin, _check_margin),
]
