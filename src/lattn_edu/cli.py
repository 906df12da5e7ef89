"""The ``lattn-edu`` command line: ``lattn-edu bench ...`` and ``lattn-edu recall ...``.

Each subcommand lives in its own module, which provides ``add_arguments(parser)`` and
``run(args) -> int``; the module is imported only when its subcommand runs, so
``lattn-edu recall`` never pays for the benchmark's imports and vice versa.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = {
    "bench": ("lattn_edu.bench", "time every backend and form against peers; save tables and plots"),
    "recall": ("lattn_edu.recall", "train small models on associative recall; softmax vs linear"),
}


def main(argv: list[str] | None = None) -> int:
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
