"""``lattn-edu recall``: the options, the sweep they choose, its table and its JSON record."""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import torch

from ..machine import machine_summary
from ..records import save_record
from .config import QUICK, QUICK_BUDGET_MINUTES, TINY, RecallConfig
from .mixers import MODELS
from .pool import check_workers, default_workers
from .study import QUICK_STUDY, STUDIES, StudyConfig, planned_runs, run_study, summarise
from .training import sweep


def format_table(results: list[dict[str, Any]]) -> str:
    """Accuracy as a Markdown table: one row per model, one column per pair count."""
    pair_counts = sorted({r["num_pairs"] for r in results})
    models = list(dict.fromkeys(r["model"] for r in results))
    cell = {(r["model"], r["num_pairs"]): r["accuracy"] for r in results}
    lines = ["| model | " + " | ".join(f"P={p}" for p in pair_counts) + " |",
             "|---|" + "---|" * len(pair_counts)]
    lines += [f"| {m} | " + " | ".join(f"{cell[m, p]:.3f}" for p in pair_counts) + " |" for m in models]
    return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``lattn-edu recall`` options."""
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true",
                      help=f"chapter 7's quick run: {', '.join(QUICK.models)} at pairs "
                           f"{', '.join(map(str, QUICK.pair_counts))}, {QUICK.steps} steps "
                           f"(budget: {QUICK_BUDGET_MINUTES['quick']} minutes on 2 free cores)")
    size.add_argument("--tiny", action="store_true", help="a seconds-long smoke test of the whole pipeline")
    parser.add_argument("--seed", type=int, default=0, help="seeds the weights, data and FAVOR+ features")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads per run (default 1)")
    parser.add_argument("--workers", type=int,
                        help="runs trained side by side, one process each (default: one per core); "
                             "the results do not depend on it")
    parser.add_argument("--models", nargs="+", choices=MODELS,
                        help="override the models (default: the mode's; the full sweep trains all but "
                             "chapter 13's deltanet_neg and deltaproduct and chapter 14's "
                             "ttt_linear, titans_linear and least_squares)")
    parser.add_argument("--pairs", nargs="+", type=int, help="override the pair counts")
    parser.add_argument("--steps", type=int, help="override the training steps per model")
    size.add_argument("--study", choices=tuple(STUDIES),
                      help="the capacity study instead of one sweep: seeds x learning rates, loss "
                           f"curves and a state-size sweep (quick: {len(QUICK_STUDY.models)} models at "
                           f"P = {QUICK_STUDY.pair_counts[0]} on {len(QUICK_STUDY.seeds)} seeds, budget "
                           f"{QUICK_BUDGET_MINUTES['study quick']} minutes on 2 free cores; full: hours; "
                           "learners: chapter 14's test-time-regression mixers at the quick setting)")
    parser.add_argument("--seeds", nargs="+", type=int, help="with --study: override the seeds")
    parser.add_argument("--learning-rates", nargs="+", type=float,
                        help="with --study: override the learning-rate grid")
    parser.add_argument("--resume", action="store_true",
                        help="with --study: keep the finished runs already in --out, train the rest")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument("--out", type=Path,
                        help="where to write the JSON results (default: recall_<mode>.json, or "
                             "recall_study_<mode>.json, in the current directory)")


def mode_of(args: argparse.Namespace) -> str:
    """'quick', 'tiny' or 'full': the size the options chose."""
    return args.study or ("quick" if args.quick else "tiny" if args.tiny else "full")


def out_path(args: argparse.Namespace) -> Path:
    """--out, or the mode's default file in the current directory."""
    if args.out is not None:
        return args.out
    return Path(f"recall_study_{args.study}.json" if args.study else f"recall_{mode_of(args)}.json")


def workers_for(args: argparse.Namespace, runs: int) -> int:
    """--workers, else one per core (never more than runs), or one for --tiny, whose runs
    take less time than starting a worker process."""
    if args.workers is not None:
        return check_workers(args.workers)
    return 1 if args.tiny else default_workers(runs)


def config_from_args(args: argparse.Namespace) -> RecallConfig:
    """The preset chosen by --quick / --tiny (else the full sweep) with the overrides applied."""
    base = QUICK if args.quick else TINY if args.tiny else RecallConfig()
    overrides: dict[str, Any] = {"seed": args.seed, "threads": args.threads}
    if args.models:
        overrides["models"] = tuple(args.models)
    if args.pairs:
        overrides["pair_counts"] = tuple(args.pairs)
    if args.steps:
        overrides["steps"] = args.steps
    return replace(base, **overrides)


def study_from_args(args: argparse.Namespace) -> StudyConfig:
    """The --study preset with --seeds, --learning-rates, --models, --pairs, --steps applied."""
    study = STUDIES[args.study]
    overrides: dict[str, Any] = {"base": replace(study.base, threads=args.threads,
                                                 steps=args.steps or study.base.steps)}
    if args.seeds:
        overrides["seeds"] = tuple(args.seeds)
    if args.learning_rates:
        overrides["learning_rates"] = tuple(args.learning_rates)
    if args.models:
        overrides["models"] = tuple(args.models)
    if args.pairs:
        overrides["pair_counts"] = tuple(args.pairs)
    return replace(study, **overrides)


def format_summary(rows: list[dict[str, Any]]) -> str:
    """A study's summary rows as a Markdown table: mean [min, max] over seeds. The state is
    numbers over the layers; a softmax layer has none of fixed size (its KV cache grows with the
    sequence), nor has log-linear attention (its levels grow like log N)."""
    lines = ["| model | P | d_model | state | lr | seeds | accuracy mean [min, max] |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['model']}{f' (W = {w})' if (w := r.get('window')) else ''} | {r['num_pairs']} | "
              f"{r['d_model']} | {r['state_size'] or 'grows with N'} | "
              f"{r['learning_rate']:g} | {r['seeds']} | {r['mean']:.3f} [{r['min']:.3f}, {r['max']:.3f}] |"
              for r in rows]
    return "\n".join(lines)


def run_study_cli(args: argparse.Namespace) -> int:
    """Run the capacity study, print its summary tables, write its JSON (after every run)."""
    study, out = study_from_args(args), out_path(args)
    workers = workers_for(args, sum(1 for _ in planned_runs(study)))
    record = run_study(study, out, args.study, progress=not args.no_progress, resume=args.resume,
                       workers=workers)
    print(format_summary(summarise(record, "main")))
    print(format_summary(summarise(record, "state_sweep")))
    print(f"{args.study} study: {record['config']['wall_seconds']:.0f} s with {workers} worker(s) "
          f"of {study.base.threads} torch thread(s); wrote {out}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Run the sweep, print the accuracy table, write ``{"results": [...], "config": {...}}``."""
    if args.study:
        return run_study_cli(args)
    config, mode, out = config_from_args(args), mode_of(args), out_path(args)
    workers = workers_for(args, len(config.models) * len(config.pair_counts))
    start = time.perf_counter()
    results = sweep(config, progress=not args.no_progress, workers=workers)
    wall = time.perf_counter() - start
    record = {"results": results,
              "config": {**asdict(config), "mode": mode, "wall_seconds": round(wall, 1),
                         "workers": workers, "torch": torch.__version__,
                         "machine": machine_summary()}}
    out.parent.mkdir(parents=True, exist_ok=True)
    save_record(record, out)
    print(format_table(results))
    print(f"{mode} sweep: {wall:.0f} s with {workers} worker(s) of {config.threads} torch "
          f"thread(s); wrote {out}")
    return 0
