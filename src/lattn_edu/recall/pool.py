"""Independent training runs side by side: one worker process per core, one thread each.

Every run seeds its own weights and data (see :func:`.training.train_one`), so a run's
result does not depend on which process trains it or on what ran before it there: with the
same thread count per run, a sweep trained by several workers equals, number for number,
the sweep trained in order by one. Results come back in the order of the runs given.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator

import torch
from threadpoolctl import threadpool_limits

from ..machine import usable_cores


def default_workers(runs: int) -> int:
    """One worker per core this process may use, and never more workers than runs."""
    return max(1, min(usable_cores(), runs))


def check_workers(workers: Any) -> int:
    """``workers`` if it is a positive int; a ValueError naming what it got otherwise."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive int; got {workers!r}")
    return workers


@contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """Run the block on ``count`` torch CPU threads: results are bit-reproducible for a given
    count, and the caller's setting comes back afterwards."""
    previous = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def limit_threads(threads: int) -> None:
    """A worker's start: ``threads`` torch threads and as many BLAS/OpenMP threads, so that
    the workers do not oversubscribe the cores they share."""
    threadpool_limits(threads)
    torch.set_num_threads(threads)


def run_all(train: Callable[[Any], Any], runs: Iterable[Any], workers: int,
            threads: int) -> Iterator[Any]:
    """``train(run)`` for every run, yielded in the order of ``runs``.

    ``workers`` = 1 trains them here, one after another; more start that many processes
    (spawned: a forked copy of a process whose OpenMP runtime has started can hang).
    ``train`` must be a module-level function and each run picklable.
    """
    runs = list(runs)
    if check_workers(workers) == 1:
        with torch_threads(threads):
            yield from map(train, runs)
        return
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=limit_threads, initargs=(threads,))
    try:
        yield from pool.map(train, runs)
    finally:  # on an error or an interrupt, the runs not started yet are dropped, not trained
        pool.shutdown(wait=True, cancel_futures=True)
