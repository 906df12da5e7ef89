"""How long ``lattn-edu bench --quick`` takes here, family by family, against its stated budget.

Run: python benchmarks/quick_timing.py   (writes benchmarks/results/bench_quick_timing.json)

Each family's quick run is started as a reader would start it, as a fresh ``lattn-edu bench``
process (``python -m lattn_edu.cli bench --quick --no-plots --families F --out <temporary
folder>``), and timed by the wall clock from start to exit, numba compilation included. The
record keeps the budget ``lattn-edu bench --help`` states (``QUICK_BUDGET_MINUTES``), the
machine, and the load average and the cores other processes kept busy (as the run's own
record measured them), since a shared
machine slows the run: the timing belongs in this record, never in a test's assertion.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lattn_edu import records
from lattn_edu.bench.cli import QUICK_BUDGET_MINUTES
from lattn_edu.machine import machine_info


def time_quick_run(family: str) -> dict:
    """Wall seconds of one quick run of ``family`` in a fresh process, and how busy the machine was."""
    load_start = list(os.getloadavg())
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "lattn_edu.cli", "bench", "--quick", "--no-plots", "--no-progress",
                   "--families", family, "--out", out]
        tick = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, text=True)
        wall = time.perf_counter() - tick
        written = json.loads(next(Path(out).glob("*.json")).read_text(encoding="utf-8"))
    return {"family": family, "command": "lattn-edu " + " ".join(command[3:-1]) + " <folder>",
            "wall_seconds": wall, "budget_minutes": QUICK_BUDGET_MINUTES[family],
            "within_budget": wall <= 60 * QUICK_BUDGET_MINUTES[family],
            "load_average_start": load_start, "load_average_end": list(os.getloadavg()),
            "other_processes_cores": written["other_processes_cores"],  # while the run's shapes were timed
            "record_wall_seconds": written["wall_seconds"]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=sorted(QUICK_BUDGET_MINUTES),
                        choices=sorted(QUICK_BUDGET_MINUTES))
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "bench_quick_timing.json",
                        help="where to write the record (default: benchmarks/results/bench_quick_timing.json)")
    args = parser.parse_args(argv)
    runs = []
    for family in args.families:
        run = time_quick_run(family)
        runs.append(run)
        print(f"{family}: {run['wall_seconds']:.0f} s (budget {run['budget_minutes']} min); load average "
              f"{run['load_average_start'][0]:.1f} -> {run['load_average_end'][0]:.1f}", flush=True)
    record = {"description": __doc__.splitlines()[0], "machine": machine_info(),
              "recorded": time.strftime("%Y-%m-%d %H:%M:%S"), "runs": runs}
    print(f"written: {records.save_record(record, args.out)}")


if __name__ == "__main__":
    main()
