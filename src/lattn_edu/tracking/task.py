"""The state-tracking tasks: the running product of a sequence of group elements.

Each token is an element of a finite group G, each label the product of the tokens so far,
p_t = x_t · p_{t−1} with p_1 = x_1: a label at every position, so one sequence of N tokens
scores every length up to N, and a model trained at N can be scored at 2N and 4N. The
groups are given by their multiplication tables (``table[a, b]`` is a · b):

- ``parity``: Z₂, bits; p_t is the parity of the bits so far (x_t + p_{t−1} mod 2);
- ``mod3``: Z₃, addition mod 3 (a cyclic group: a rotation by 120° per step);
- ``s3``: the permutations of three things under composition, (a · b)(i) = a(b(i)), the
  smallest non-commutative group (element 0 is the identity; see :data:`S3_ELEMENTS`).
"""

from __future__ import annotations

from itertools import permutations

import torch

# The elements of S₃ in the order of their token numbers: 0 is the identity, 1, 2 and 5 are
# transpositions, 3 and 4 the two 3-cycles.
S3_ELEMENTS = tuple(permutations(range(3)))


def compose(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """The permutation a · b: first b, then a, (a · b)(i) = a(b(i))."""
    return tuple(a[b[i]] for i in range(len(b)))


TABLES = {
    "parity": torch.tensor([[(a + b) % 2 for b in range(2)] for a in range(2)]),
    "mod3": torch.tensor([[(a + b) % 3 for b in range(3)] for a in range(3)]),
    "s3": torch.tensor([[S3_ELEMENTS.index(compose(a, b)) for b in S3_ELEMENTS] for a in S3_ELEMENTS]),
}
TASKS = tuple(TABLES)


def group_order(task: str) -> int:
    """How many elements the task's group has: its tokens are 0 .. order−1, and so are its labels."""
    return len(TABLES[check_task(task)])


def check_task(task: str) -> str:
    """``task`` if it is one of :data:`TASKS`; a ValueError naming the known ones otherwise."""
    if task not in TABLES:
        raise ValueError(f"task must be one of {', '.join(TASKS)}; got {task!r}")
    return task


def running_products(task: str, tokens: torch.Tensor) -> torch.Tensor:
    """tokens long [B, N] -> labels long [B, N]: p_t = x_t · p_{t−1}, p_1 = x_1."""
    table = TABLES[check_task(task)]
    product, labels = tokens[:, 0], [tokens[:, 0]]
    for t in range(1, tokens.shape[1]):
        product = table[tokens[:, t], product]  # x_t · p_{t−1}  [B]
        labels.append(product)
    return torch.stack(labels, dim=1)


def make_batch(task: str, length: int, batch_size: int,
               generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch_size`` sequences of ``length`` uniformly random group elements and their labels.

    Returns
    -------
    tokens : long [B, N]
        Group elements 0 .. order−1.
    targets : long [B, N]
        The running product at every position (:func:`running_products`).
    """
    tokens = torch.randint(group_order(task), (batch_size, length), generator=generator)
    return tokens, running_products(task, tokens)
