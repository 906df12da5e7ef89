"""``lattn-edu lm``: the options, the lab they choose, its summary table and its JSON record."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..recall.pool import check_workers, default_workers
from .lab import (FULL, QUICK, QUICK_BUDGET_MINUTES, TINY, LabConfig, check_lab, estimate_seconds,
                  format_summary, planned_runs, run_lab, summarise)
from .model import LM_MODELS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``lattn-edu lm`` options."""
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true",
                      help=f"the Colab edition's run: {', '.join(QUICK.models)}, seed "
                           f"{', '.join(map(str, QUICK.seeds))}, {QUICK.base.steps} steps (budget: "
                           f"{QUICK_BUDGET_MINUTES} minutes on 2 free cores); it prints an estimate "
                           f"of the full lab's time")
    size.add_argument("--tiny", action="store_true", help="a seconds-long smoke test of the whole pipeline")
    parser.add_argument("--models", nargs="+",
                        help=f"override the models: names among {', '.join(LM_MODELS)}, or layer patterns "
                             f"of registered mixers such as 'gated_deltanet*3+softmax' (repeated to fill the "
                             f"layers)")
    parser.add_argument("--seeds", nargs="+", type=int, help="override the seeds")
    parser.add_argument("--learning-rates", nargs="+", type=float, help="override the learning-rate grid")
    parser.add_argument("--steps", type=int, help="override the training steps per run")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads per run (default 1)")
    parser.add_argument("--workers", type=int,
                        help="runs trained side by side, one process each (default: one per core); "
                             "the results do not depend on it")
    parser.add_argument("--resume", action="store_true",
                        help="keep the finished runs of a stopped lab in --out (same settings) and "
                             "train the rest")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument("--out", type=Path,
                        help="where to write the JSON record, rewritten after every run (default: "
                             "lm_<mode>.json in the current directory)")


def mode_of(args: argparse.Namespace) -> str:
    """'quick', 'tiny' or 'full': the size the options chose."""
    return "quick" if args.quick else "tiny" if args.tiny else "full"


def lab_from_args(args: argparse.Namespace) -> LabConfig:
    """The preset the options chose, with their overrides applied, checked before any training."""
    lab = {"quick": QUICK, "tiny": TINY, "full": FULL}[mode_of(args)]
    base: dict[str, Any] = {"threads": args.threads}
    if args.steps is not None:
        base["steps"] = args.steps
    overrides: dict[str, Any] = {"base": replace(lab.base, **base)}
    for name in ("models", "seeds", "learning_rates"):
        if getattr(args, name):
            overrides[name] = tuple(getattr(args, name))
    return check_lab(replace(lab, **overrides))


def run(args: argparse.Namespace) -> int:
    """Run the lab, print its summary table, write its JSON record; after a quick lab, estimate
    the full lab's time from it."""
    lab, mode = lab_from_args(args), mode_of(args)
    out = args.out if args.out is not None else Path(f"lm_{mode}.json")
    runs = sum(1 for _ in planned_runs(lab))
    workers = (check_workers(args.workers) if args.workers is not None
               else 1 if args.tiny else default_workers(runs))
    record = run_lab(lab, out, mode, progress=not args.no_progress, workers=workers, resume=args.resume)
    print(format_summary(summarise(record)))
    print(f"{mode} lab: {record['config']['wall_seconds']:.0f} s for {runs} runs with {workers} worker(s) "
          f"of {lab.base.threads} torch thread(s); wrote {out}")
    if mode == "quick":
        full_runs = sum(1 for _ in planned_runs(FULL))
        print(f"the full lab ({full_runs} runs, {FULL.base.steps} steps each) would take about "
              f"{estimate_seconds(record, FULL, 2) / 60:.0f} minutes with 2 workers (from this lab's "
              f"seconds per step, per model; a model it did not train counts as their mean)")
    return 0
