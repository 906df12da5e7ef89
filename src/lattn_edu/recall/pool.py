"""Independent training runs side by side: one worker process per core, one thread each.

Every run seeds its own weights and data (see :func:`.training.train_one`), so a run's
result does not depend on which process trains it or on what ran before it there: with the
same thread count per run, a sweep trained by several workers equals, number for number,
the sweep trained in order by one. Results come back in the order of the runs given.
"""

from __future__ import annotations

import json
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import torch
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from ..machine import usable_cores
from ..records import save_record


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


def finished_runs(settings: dict[str, Any], out: Path, what: str) -> tuple[list[dict[str, Any]], float]:
    """The runs (and wall seconds) that an earlier, stopped ``what`` ('lab', 'study') with these
    ``settings`` (its config as a dict) left in ``out``; none when ``out`` does not exist."""
    if not out.is_file():
        return [], 0.0
    record = json.loads(out.read_text(encoding="utf-8"))
    kept = {key: value for key, value in record["config"].items() if key in settings}
    if json.loads(json.dumps(settings)) != kept:
        raise ValueError(f"out ({out}) holds a {what} with other settings; resume needs the same "
                         f"settings, or remove the file to start afresh")
    return record["runs"], record["config"]["wall_seconds"]


def record_runs(train: Callable[[Any], dict[str, Any]], todo: list[Any], runs: list[dict[str, Any]],
                record_of: Callable[[list[dict[str, Any]], float], dict[str, Any]], out: Path, *,
                steps: int, threads: int, workers: int, earlier: float = 0.0,
                progress: bool = True) -> dict[str, Any]:
    """Train ``todo`` with :func:`run_all`, appending each row to ``runs`` and rewriting ``out``
    with ``record_of(runs, wall seconds)`` after every run (written, then renamed: never a
    half-written file); the final record. ``earlier`` is the wall time of runs already done."""
    # disable=None: tqdm switches itself off when stderr is not a TTY
    bar = tqdm(total=len(todo) * steps, unit="step", file=sys.stderr, disable=None if progress else True)
    start = time.perf_counter()
    out.parent.mkdir(parents=True, exist_ok=True)
    record = record_of(runs, earlier)
    with bar:
        for row in run_all(train, todo, workers, threads):
            bar.set_description(row["id"])
            bar.update(steps)
            runs.append(row)
            record = record_of(runs, earlier + time.perf_counter() - start)
            save_record(record, out.with_suffix(".partial")).replace(out)
    return record
