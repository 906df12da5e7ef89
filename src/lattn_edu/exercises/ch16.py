"""Exercises for chapter 16 (how much softmax recall needs): the share of recall queries one
sliding window can reach, the numbers a recall stack keeps after n tokens, and the chances that
luck alone puts one stack first on every seed, or one full ranking on every seed (the measured
decode crossing is chapter 15's,
``ch15.decode_crossing``; the language-model lab's exercises are chapter 17's).

What each checker compares with (the package's own code, never the solutions):

- ``ch16.window_reach``: :func:`lattn_edu.recall.window_reach`; rtol 1e-12.
- ``ch16.numbers_kept``: ``cache_floats(n)`` of a :class:`lattn_edu.recall.model.RecallModel`
  built with the layers named (its mixers' own counts); exact.
- ``ch16.luck_chance``: the expected three numbers, each counted over every equally likely
  outcome (one winner, or one ranking, per seed) rather than from the formula; rtol 1e-6.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..recall.config import RecallConfig
from ..recall.model import RecallModel
from ..recall.task import window_reach
from .base import Exercise, check_function, value_exercise

# --- ch16.window_reach


def solution_window_reach(num_pairs, window):
    """Share of recall queries whose value lies inside one window: a float.

    Query i sits at 2P + i and asks for the value at 2j + 1 (every j
    equally likely); a window of W tokens ending at the query sees it
    when 2P + i − (2j + 1) < W. Count the (i, j) pairs for which it does.
    """
    seen = 0
    for i in range(num_pairs):
        for j in range(num_pairs):
            distance = 2 * num_pairs + i - (2 * j + 1)  # query to value
            seen += distance < window
    return seen / num_pairs**2


def _reach_cases():
    """The study's P = 32 at its four windows, a window that sees everything, odd sizes."""
    cases = [(32, 16), (32, 32), (32, 64), (32, 128), (5, 1), (5, 3), (7, 12), (13, 29),
             (1, 1), (1, 2), (9, 100)]
    return [{"num_pairs": p, "window": w} for p, w in cases]


def _check_window_reach(answer):
    check_function(answer, window_reach, _reach_cases(), rtol=1e-12)


# --- ch16.numbers_kept


def solution_numbers_kept(layers, d_model, num_heads, window, n):
    """Numbers a recall stack keeps per sequence after n tokens: an int.

    Each head has width d_h = d_model / num_heads. Softmax caches a key
    and a value per token and head; a window only the last min(n, W);
    Gated DeltaNet and Mamba-2 keep one d_h × d_h state per head; log-linear
    attention one per level, levels_needed(n) of them.
    """
    from lattn_edu.log_linear import levels_needed  # levels after n tokens

    d_h = d_model // num_heads
    kept = {"softmax": n * num_heads * 2 * d_h,
            "sliding_window": min(n, window) * num_heads * 2 * d_h,
            "gated_deltanet": num_heads * d_h * d_h,
            "mamba2": num_heads * d_h * d_h,
            "log_linear": levels_needed(n) * num_heads * d_h * d_h}
    return sum(kept[layer] for layer in layers)


NUMBERS_KEPT_KINDS = ("softmax", "sliding_window", "gated_deltanet", "mamba2", "log_linear")


def _kept_cases():
    """The study's stacks at its width after 96 tokens, then odd widths, windows and lengths."""
    four = [("gated_deltanet",) * 4, ("gated_deltanet",) * 3 + ("softmax",),
            ("gated_deltanet", "softmax") * 2, ("softmax",) * 4, ("sliding_window",) * 4,
            ("mamba2",) * 4, ("log_linear",) * 4]
    cases = [{"layers": layers, "d_model": 64, "num_heads": 4, "window": 32, "n": 96}
             for layers in four]
    cases += [{"layers": ("sliding_window", "gated_deltanet", "softmax"), "d_model": 45,
               "num_heads": 3, "window": 7, "n": 5},
              {"layers": ("mamba2", "sliding_window", "sliding_window"), "d_model": 35,
               "num_heads": 5, "window": 13, "n": 101},
              {"layers": ("softmax",), "d_model": 21, "num_heads": 7, "window": 3, "n": 1},
              {"layers": ("gated_deltanet", "sliding_window") * 3, "d_model": 18,
               "num_heads": 2, "window": 200, "n": 199},
              {"layers": ("log_linear", "softmax", "mamba2"), "d_model": 21, "num_heads": 3,
               "window": 9, "n": 1},
              {"layers": ("log_linear", "sliding_window"), "d_model": 35, "num_heads": 5,
               "window": 13, "n": 129}]
    return cases


def package_numbers_kept(layers, d_model, num_heads, window, n):
    """cache_floats(n) of the recall model built with these layers, one per layer."""
    config = RecallConfig(d_model=d_model, num_heads=num_heads, num_layers=len(layers),
                          window=window)
    return RecallModel("+".join(layers), config).cache_floats(n)


def _check_numbers_kept(answer):
    check_function(answer, package_numbers_kept, _kept_cases(), rtol=0.0)


# --- ch16.luck_chance


def chance_one_stack_first_on_every_seed(stacks, seeds):
    """If every stack is equally likely to come first on a seed, independently over seeds, the
    chance that one stack (any of them) comes first on every seed: counted over all
    stacks**seeds equally likely ways the winners can fall, not from the formula."""
    outcomes = list(itertools.product(range(stacks), repeat=seeds))  # the winner on each seed
    return sum(len(set(winners)) == 1 for winners in outcomes) / len(outcomes)


def chance_same_ranking_on_every_seed(stacks, seeds):
    """If every ranking of the stacks is equally likely on a seed, independently over seeds, the
    chance that one full ranking (any of them) comes on every seed: counted over all
    (stacks!)**seeds equally likely ways the rankings can fall, not from the formula."""
    orders = list(itertools.permutations(range(stacks)))  # the ranking on one seed
    outcomes = list(itertools.product(orders, repeat=seeds))  # the ranking on each seed
    return sum(len(set(rankings)) == 1 for rankings in outcomes) / len(outcomes)


# (a) four stacks on three seeds, (b) three stacks on five seeds, both "some stack first on
# every seed"; (c) three stacks on three seeds, "the same full ranking on every seed"
LUCK_CASES = ((4, 3), (3, 5))
LUCK_CHANCES = np.array([chance_one_stack_first_on_every_seed(*case) for case in LUCK_CASES]
                        + [chance_same_ranking_on_every_seed(3, 3)])


EXERCISES = [
    Exercise("ch16.window_reach", "The share of recall queries one sliding window reaches",
             "code", solution_window_reach, _check_window_reach),
    Exercise("ch16.numbers_kept", "What a recall stack keeps after n tokens",
             "code", solution_numbers_kept, _check_numbers_kept),
    value_exercise("ch16.luck_chance", "The chance that luck alone puts one stack first, or one ranking, on every seed",
                   LUCK_CHANCES, rtol=1e-6),
]
