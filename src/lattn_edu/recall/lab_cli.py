"""What the lab commands built on recall's training share (``lattn-edu tracking``, ``lattn-edu lm``):
the run options, the preset the size options choose, the overrides, the worker count."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

from .pool import check_workers, default_workers


def add_run_options(parser: argparse.ArgumentParser, record: str) -> None:
    """--seeds, --learning-rates, --steps, --threads, --workers, --no-progress and --out (whose
    default is ``<record>_<mode>.json``)."""
    parser.add_argument("--seeds", nargs="+", type=int, help="override the seeds")
    parser.add_argument("--learning-rates", nargs="+", type=float, help="override the learning-rate grid")
    parser.add_argument("--steps", type=int, help="override the training steps per run")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads per run (default 1)")
    parser.add_argument("--workers", type=int,
                        help="runs trained side by side, one process each (default: one per core); "
                             "the results do not depend on it")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument("--out", type=Path,
                        help="where to write the JSON record, rewritten after every run (default: "
                             f"{record}_<mode>.json in the current directory)")


def mode_of(args: argparse.Namespace) -> str:
    """'quick', 'tiny' or 'full': the size the options chose."""
    return "quick" if args.quick else "tiny" if args.tiny else "full"


def preset_with_overrides(presets: dict[str, Any], args: argparse.Namespace, names: tuple[str, ...],
                          **base: Any) -> Any:
    """The preset of :func:`mode_of` with --threads, --steps, the lab fields ``names`` (tuples
    from the options that were given) and ``base``'s other settings (those not None) applied."""
    lab = presets[mode_of(args)]
    settings = {"threads": args.threads, "steps": args.steps, **base}
    given = {name: value for name, value in settings.items() if value is not None}
    overrides: dict[str, Any] = {"base": replace(lab.base, **given)}
    overrides.update({name: tuple(getattr(args, name)) for name in names if getattr(args, name)})
    return replace(lab, **overrides)


def workers_for(args: argparse.Namespace, runs: int) -> int:
    """--workers if given; else one for --tiny, one per core (at most one per run) otherwise."""
    if args.workers is not None:
        return check_workers(args.workers)
    return 1 if args.tiny else default_workers(runs)
