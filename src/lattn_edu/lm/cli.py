"""``lattn-edu lm``: the options, the lab they choose, its summary table and its JSON record."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..recall.lab_cli import add_run_options, mode_of, preset_with_overrides, workers_for
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
    parser.add_argument("--resume", action="store_true",
                        help="keep the finished runs of a stopped lab in --out (same settings) and "
                             "train the rest")
    add_run_options(parser, "lm")


def lab_from_args(args: argparse.Namespace) -> LabConfig:
    """The preset the options chose, with their overrides applied, checked before any training."""
    presets = {"quick": QUICK, "tiny": TINY, "full": FULL}
    return check_lab(preset_with_overrides(presets, args, ("models", "seeds", "learning_rates")))


def run(args: argparse.Namespace) -> int:
    """Run the lab, print its summary table, write its JSON record; after a quick lab, estimate
    the full lab's time from it."""
    lab, mode = lab_from_args(args), mode_of(args)
    out = args.out if args.out is not None else Path(f"lm_{mode}.json")
    runs = sum(1 for _ in planned_runs(lab))
    workers = workers_for(args, runs)
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
