"""``lattn-edu tracking``: the options, the lab they choose, its summary table and its JSON record."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..recall.mixers import MODELS
from ..recall.pool import check_workers, default_workers
from .lab import (FULL, QUICK, QUICK_BUDGET_MINUTES, TINY, LabConfig, check_lab, format_summary, planned_runs,
                  run_lab, summarise)
from .task import TASKS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``lattn-edu tracking`` options."""
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true",
                      help=f"the Colab edition's run: {len(QUICK.models)} models on {', '.join(QUICK.tasks)}, "
                           f"seed {', '.join(map(str, QUICK.seeds))}, {QUICK.base.steps} steps (budget: "
                           f"{QUICK_BUDGET_MINUTES} minutes on 2 free cores)")
    size.add_argument("--tiny", action="store_true", help="a seconds-long smoke test of the whole pipeline")
    parser.add_argument("--models", nargs="+", choices=MODELS, help="override the models")
    parser.add_argument("--tasks", nargs="+", choices=TASKS, help="override the tasks")
    parser.add_argument("--seeds", nargs="+", type=int, help="override the seeds")
    parser.add_argument("--learning-rates", nargs="+", type=float, help="override the learning-rate grid")
    parser.add_argument("--steps", type=int, help="override the training steps per run")
    parser.add_argument("--layers", type=int, help="override the number of layers")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads per run (default 1)")
    parser.add_argument("--workers", type=int,
                        help="runs trained side by side, one process each (default: one per core); "
                             "the results do not depend on it")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument("--out", type=Path,
                        help="where to write the JSON record, rewritten after every run (default: "
                             "tracking_<mode>.json in the current directory)")


def mode_of(args: argparse.Namespace) -> str:
    """'quick', 'tiny' or 'full': the size the options chose."""
    return "quick" if args.quick else "tiny" if args.tiny else "full"


def lab_from_args(args: argparse.Namespace) -> LabConfig:
    """The preset the options chose, with their overrides applied, checked before any training."""
    lab = {"quick": QUICK, "tiny": TINY, "full": FULL}[mode_of(args)]
    base: dict[str, Any] = {"threads": args.threads}
    if args.steps is not None:
        base["steps"] = args.steps
    if args.layers is not None:
        base["num_layers"] = args.layers
    overrides: dict[str, Any] = {"base": replace(lab.base, **base)}
    for name in ("models", "tasks", "seeds", "learning_rates"):
        if getattr(args, name):
            overrides[name] = tuple(getattr(args, name))
    return check_lab(replace(lab, **overrides))


def run(args: argparse.Namespace) -> int:
    """Run the lab, print its summary table, write its JSON record."""
    lab, mode = lab_from_args(args), mode_of(args)
    out = args.out if args.out is not None else Path(f"tracking_{mode}.json")
    runs = sum(1 for _ in planned_runs(lab))
    workers = check_workers(args.workers) if args.workers is not None else 1 if args.tiny else default_workers(runs)
    record = run_lab(lab, out, mode, progress=not args.no_progress, workers=workers)
    print(format_summary(summarise(record)))
    print(f"{mode} lab: {record['config']['wall_seconds']:.0f} s for {runs} runs with {workers} worker(s) "
          f"of {lab.base.threads} torch thread(s); wrote {out}")
    return 0
