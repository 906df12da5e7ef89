"""How long each quick mode of ``lattn-edu recall`` takes, against the budget its --help states.

Run: python benchmarks/recall_quick_timing.py [--modes quick study] [--keep DIR]
     (writes benchmarks/results/recall_quick_timing.json; a few minutes per mode)

Each mode runs as a new user would start it (``python -m lattn_edu.cli recall --quick``,
``... --study quick``; default workers, one per core) in a fresh process, timed from start to
exit. The record keeps the command, the wall seconds, the CPU seconds of the command and its
workers, the budget, the machine and the load average before and after: on a shared machine
other work stretches the wall time, while the CPU seconds per worker say what it would be on
cores of their own. A timing is evidence about the budget, not a test of it. ``--keep DIR``
keeps each run's own record (e.g. to refresh the package's recall_quick.json after checking it).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from lattn_edu.machine import machine_info, machine_summary
from lattn_edu.records import read_record, save_record
from lattn_edu.recall import QUICK_BUDGET_MINUTES

OUT = Path(__file__).resolve().parent / "results" / "recall_quick_timing.json"
MODES = {"quick": ["--quick"], "study": ["--study", "quick"]}


def children_cpu_seconds() -> float:
    """User + system CPU seconds of every finished child process (workers included)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_mode(flags: list[str], keep: Path) -> dict:
    """Run one mode in a fresh process; its command, wall time and own record's summary."""
    command = [sys.executable, "-m", "lattn_edu.cli", "recall", *flags, "--no-progress",
               "--out", str(keep / f"recall_{'_'.join(f.strip('-') for f in flags)}.json")]
    load_before = os.getloadavg()
    cpu_before = children_cpu_seconds()
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    cpu = children_cpu_seconds() - cpu_before  # the command's and its workers' CPU time
    config = read_record(command[-1])["config"]
    budget = QUICK_BUDGET_MINUTES["study quick" if "--study" in flags else "quick"]
    return {"command": "lattn-edu recall " + " ".join(flags), "wall_seconds": round(wall, 1),
            "budget_minutes": budget, "within_budget": wall <= 60 * budget,
            "cpu_seconds": round(cpu, 1),
            # what the wall time would be with each worker on a core of its own (no waiting)
            "cpu_seconds_per_worker": round(cpu / config["workers"], 1),
            "workers": config["workers"],
            "torch_threads_per_run": config["threads"] if "threads" in config else config["base"]["threads"],
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--keep", type=Path, help="keep each run's record in this folder")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        keep = args.keep or Path(scratch)
        keep.mkdir(parents=True, exist_ok=True)
        runs = [time_mode(MODES[mode], keep) for mode in args.modes]
    info = machine_info()
    record = {"runs": runs, "machine": {"summary": machine_summary(), "cpu": info["cpu"],
                                        "cores": info["cores"], "memory_gib": info["memory_gib"]},
              "recorded": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    print(f"written: {save_record(record, args.out)}")
    for run in runs:
        print(f"{run['command']}: {run['wall_seconds']:.0f} s (budget {run['budget_minutes']} min)")


if __name__ == "__main__":
    main()
