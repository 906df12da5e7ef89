"""The MQAR task: sequences of key–value pairs followed by the keys as queries."""

from __future__ import annotations

import numpy as np
import torch

IGNORED = -100  # the target at positions with nothing to answer (cross_entropy's ignore_index)


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
    targets = torch.full_like(tokens, IGNORED)
    targets[:, 2 * num_pairs:] = values.gather(1, order)
    return tokens, targets


def window_reach(num_pairs: int, window: int) -> float:
    """The share of queries whose answer lies inside a sliding window of ``window`` tokens.

    A query at position 2P + i asks for a key whose value sits at 2j + 1 (j = 0 .. P−1,
    every j equally likely, since the queries come in a random order); a window of W keys
    ending at the query sees the value when 2P + i − (2j + 1) < W. The value token is what a
    layer must find: the width-2 convolution before the mixers has put its key beside it.
    Averaged over the P² (i, j), this is the highest accuracy a model that attends only
    within the window can reach by lookup (it may still guess the rest, 1 in num_values).
    """
    if isinstance(num_pairs, bool) or not isinstance(num_pairs, int) or num_pairs < 1:
        raise ValueError(f"num_pairs must be a positive int; got {num_pairs!r}")
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ValueError(f"window must be a positive int; got {window!r}")
    i, j = torch.meshgrid(torch.arange(num_pairs), torch.arange(num_pairs), indexing="ij")
    return float(((2 * num_pairs + i - (2 * j + 1)) < window).double().mean())


def no_lookup_baselines(num_pairs: int, num_values: int, draws: int = 20_000, seed: int = 0) -> dict[str, float]:
    """What a model scores on the task without looking any key up, by simulation.

    Each sequence's values are drawn uniformly with replacement (as :func:`make_batch` draws
    them) and every key is asked once, so the answers are the sequence's own values, repeats
    included. Over ``draws`` seeded sequences:

    - ``most_frequent_accuracy``: answering every query with the sequence's commonest value,
      E[largest count] / P, the best accuracy without lookup;
    - ``frequency_loss``: the mean loss −ln p, in nats, of answering with each value's share
      of the sequence;
    - ``all_distinct`` and ``three_or_more``: the shares of sequences whose values all differ,
      and in which some value comes three times or more.
    """
    for name, value in (("num_pairs", num_pairs), ("num_values", num_values), ("draws", draws)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int; got {value!r}")
    drawn = np.random.default_rng(seed).integers(num_values, size=(draws, num_pairs))  # [draws, P]
    counts = np.array([np.bincount(v, minlength=num_values) for v in drawn])  # [draws, values]
    largest = counts.max(axis=1)
    asked = np.take_along_axis(counts, drawn, axis=1)  # each key asked once: its value's count
    return {"most_frequent_accuracy": float(largest.mean() / num_pairs),
            "frequency_loss": float(np.mean(-np.log(asked / num_pairs))),
            "all_distinct": float(np.mean(largest == 1)),
            "three_or_more": float(np.mean(largest >= 3))}
