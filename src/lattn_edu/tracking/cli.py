"""``lattn-edu tracking``: the options, the lab they choose, its summary table and its JSON record."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..recall.mixers import MODELS
from ..recall.lab_cli import add_run_options, mode_of, preset_with_overrides, workers_for
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
    parser.add_argument("--layers", type=int, help="override the number of layers")
    add_run_options(parser, "tracking")


def lab_from_args(args: argparse.Namespace) -> LabConfig:
    """The preset the options chose, with their overrides applied, checked before any training."""
    presets = {"quick": QUICK, "tiny": TINY, "full": FULL}
    return check_lab(preset_with_overrides(presets, args, ("models", "tasks", "seeds", "learning_rates"),
                                           num_layers=args.layers))


def run(args: argparse.Namespace) -> int:
    """Run the lab, print its summary table, write its JSON record."""
    lab, mode = lab_from_args(args), mode_of(args)
    out = args.out if args.out is not None else Path(f"tracking_{mode}.json")
    runs = sum(1 for _ in planned_runs(lab))
    workers = workers_for(args, runs)
    record = run_lab(lab, out, mode, progress=not args.no_progress, workers=workers)
    print(format_summary(summarise(record)))
    print(f"{mode} lab: {record['config']['wall_seconds']:.0f} s for {runs} runs with {workers} worker(s) "
          f"of {lab.base.threads} torch thread(s); wrote {out}")
    return 0
