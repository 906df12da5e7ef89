"""The MQAR task: sequences of key–value pairs followed by the keys as queries."""

from __future__ import annotations

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
