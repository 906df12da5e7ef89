"""The ``lattn-edu`` command line: ``lattn-edu bench ...``, ``lattn-edu recall ...``, ``lattn-edu tracking ...``.

Each subcommand lives in its own module, which provides ``add_arguments(parser)`` and
``run(args) -> int``; the module is imported only when its subcommand runs, so
``lattn-edu recall`` never pays for the benchmark's imports and vice versa.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

COMMANDS = {
    "bench": ("lattn_edu.bench", "time every backend and form against peers; save tables and plots"),
    "recall": ("lattn_edu.recall", "train small models on associative recall; softmax vs linear"),
    "tracking": ("lattn_edu.tracking", "train small models to track parity, sums mod 3 and S3 at longer lengths"),
    "lm": ("lattn_edu.lm", "train small character-level language models on Shakespeare, mixer by mixer"),
}

# What the benchmark's timings need in the environment before numpy's OpenBLAS and the OpenMP
# runtimes load: idle BLAS and OpenMP threads go to sleep at once instead of spinning on the
# cores that the next timed call needs (benchmarks/thread_spin.py measures what that costs).
BENCH_ENVIRONMENT = {"OPENBLAS_THREAD_TIMEOUT": "4", "OMP_WAIT_POLICY": "PASSIVE"}


def main(argv: list[str] | None = None) -> int:
    if argv is None and sys.argv[1:2] == ["bench"] and not BENCH_ENVIRONMENT.keys() <= os.environ.keys():
        # numpy is loaded already (lattn_edu imports it): start afresh with the settings;
        # a reader's own values win
        os.execve(sys.executable, [sys.executable, "-m", "lattn_edu.cli", *sys.argv[1:]],
                  {**BENCH_ENVIRONMENT, **os.environ})
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="lattn-edu", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = argv[0] if argv and argv[0] in COMMANDS else None
    for name, (module, summary) in COMMANDS.items():
        sub = commands.add_parser(name, help=summary, description=summary)
        if name == chosen:  # only the chosen subcommand's module is imported
            importlib.import_module(module).add_arguments(sub)
    args = parser.parse_args(argv)
    return importlib.import_module(COMMANDS[args.command][0]).run(args)


if __name__ == "__main__":
    sys.exit(main())
