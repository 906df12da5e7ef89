"""What a control change costs in every explorer: recompute, redraw and PNG-encode at LIVE_DPI.

Run: python benchmarks/explorers.py   (writes benchmarks/results/explorers.json)
     python benchmarks/explorers.py --baseline /tmp/old/src   (also times another source tree,
     e.g. ``git archive <commit> src | tar -x -C /tmp/old``, explorer by explorer in the same
     run, and records the ratios: a before/after comparison that a slow or busy machine
     inflates on both sides alike; ``--baseline /tmp/old/src:/tmp/mpl`` also puts another
     matplotlib, installed with ``pip install --target /tmp/mpl``, under the old tree)

For each explorer in ``lattn_edu.explorers.CATALOG`` it times ``live_png(**values)`` (what the
live widget does on every slider move) over RUNS calls after one untimed call at the
defaults, moving one control at a time to each of its values, and reports the median (p50) and
95th percentile of the wall-clock time against the budget: 100 ms at p95, at default sizes on
2 cores, so a slider feels immediate. A move whose axes decoration was drawn before blits onto
the kept background; one that reaches a new decoration draws the whole figure, and the record
counts those (``full_draws``) and gives their median. On a shared machine other processes inflate wall time,
so it records the process's CPU time per call too, and the load average around the run. It
also builds each static page once and records its frame count and size (budget ~3 MB), and
times a fixed pure-Python workload before and after (``reference_ms``), so a record made on a
throttled machine says so.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import matplotlib
import numpy as np

from lattn_edu import explorers
from lattn_edu.machine import machine_summary
from lattn_edu.explorers.base import LIVE_DPI, ImpossibleSetting

RUNS = 30
BUDGET_MS = 100
OUT = Path(__file__).parent / "results" / "explorers.json"


def control_moves(explorer: explorers.Explorer) -> list[dict]:
    """The settings a reader reaches by moving one control away from the defaults."""
    return [{**explorer.defaults, name: value}
            for name, options in explorer.controls.items() for value in options]


def control_change_cost(explorer: explorers.Explorer) -> dict:
    """p50 and p95 wall-clock milliseconds of live_png over one-control moves, p50 and p95 CPU
    ms, and how many moves drew the whole figure (a decoration not drawn before) rather than
    blitting onto a kept background, with their median wall time."""
    explorer.live_png(**explorer.defaults)  # untimed: imports, font caches, the first layout
    moves = control_moves(explorer)
    wall, cpu, full = [], [], []
    for run in range(RUNS):
        tick, cpu_tick = time.perf_counter(), time.process_time()
        full_draws = full_draw_count(explorer)
        try:
            explorer.live_png(**moves[run % len(moves)])
        except ImpossibleSetting:  # the widget shows a message instead: nothing drawn
            continue
        wall.append(time.perf_counter() - tick)
        cpu.append(time.process_time() - cpu_tick)
        if full_draws is not None and full_draw_count(explorer) > full_draws:
            full.append(wall[-1])
    return {"p50_ms": float(np.median(wall)) * 1e3, "p95_ms": float(np.percentile(wall, 95)) * 1e3,
            "cpu_p50_ms": float(np.median(cpu)) * 1e3, "cpu_p95_ms": float(np.percentile(cpu, 95)) * 1e3,
            "runs": len(wall), "full_draws": len(full) if full_draws is not None else None,
            "full_draw_p50_ms": float(np.median(full)) * 1e3 if full else None}


def full_draw_count(explorer: explorers.Explorer) -> int | None:
    """How many of the live widget's pictures drew the whole figure; None for explorers of a
    baseline tree that redraw everything every time (no kept background)."""
    return getattr(getattr(explorer, "_live", None), "full_draws", None)


def static_page(explorer: explorers.Explorer) -> dict:
    """Frames and size of the static page (every grid point drawn once)."""
    tick = time.perf_counter()
    page = explorer.static_html()
    frames = 1
    for options in explorer.controls.values():
        frames *= len(options)
    return {"frames": frames, "page_mb": len(page.encode()) / 2**20,
            "page_build_s": time.perf_counter() - tick}


def reference_ms() -> float:
    """Milliseconds of a fixed pure-Python loop: the machine's speed at the moment."""
    tick = time.perf_counter()
    total = 0
    for i in range(1_000_000):
        total += i
    return (time.perf_counter() - tick) * 1e3


def baseline_cost(source: str, name: str) -> dict:
    """control_change_cost of explorer ``name`` with ``source`` first on PYTHONPATH (another
    source tree, and optionally other packages, joined with os.pathsep)."""
    code = (f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import explorers as b; "
            f"from lattn_edu import explorers as e; "
            f"print(json.dumps(b.control_change_cost(e.CATALOG[{name!r}]())))")
    env = {**os.environ, "PYTHONPATH": source}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def load_average() -> float | None:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=None,
                        help="another source tree (its src/ folder) to time side by side; more "
                             "folders (e.g. another matplotlib) may follow, joined with os.pathsep")
    args = parser.parse_args(argv)
    rows, load_before, reference_before = [], load_average(), reference_ms()
    print(f"{'explorer':16} {'p50 ms':>8} {'p95 ms':>8} {'cpu p50':>8} {'cpu p95':>8} {'full':>5}  "
          f"{'frames':>6} {'page MB':>8}")
    for name in sorted(explorers.CATALOG):
        explorer = explorers.CATALOG[name]()
        row = {"name": name, **control_change_cost(explorer), **static_page(explorer)}
        row["within_budget"] = row["p95_ms"] < BUDGET_MS
        if args.baseline is not None:
            try:
                before = baseline_cost(args.baseline, name)
            except (subprocess.CalledProcessError, KeyError):  # no such explorer there
                before = None
            row["baseline"] = before
            if before:
                row["p50_ratio"] = row["p50_ms"] / before["p50_ms"]
                row["p95_ratio"] = row["p95_ms"] / before["p95_ms"]
        rows.append(row)
        flag = "" if row["within_budget"] else f"  over {BUDGET_MS} ms"
        versus = (f"  baseline {row['baseline']['p50_ms']:.1f}/{row['baseline']['p95_ms']:.1f}, "
                  f"ratio {row['p50_ratio']:.2f}/{row['p95_ratio']:.2f}") if row.get("baseline") else ""
        print(f"{name:16} {row['p50_ms']:8.1f} {row['p95_ms']:8.1f} {row['cpu_p50_ms']:8.1f} "
              f"{row['cpu_p95_ms']:8.1f} {row['full_draws']:5d}  "
              f"{row['frames']:6d} {row['page_mb']:8.2f}{flag}{versus}", flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"machine": machine_summary(), "recorded": time.strftime("%Y-%m-%d"),
                               "load_average_before": load_before, "load_average_after": load_average(),
                               "reference_ms_before": reference_before, "reference_ms_after": reference_ms(),
                               "baseline": str(args.baseline) if args.baseline else None,
                               "runs_per_explorer": RUNS, "dpi": LIVE_DPI, "budget_ms": BUDGET_MS,
                               "matplotlib": matplotlib.__version__,
                               "explorers": rows}, indent=1) + "\n")
    print(f"\n{machine_summary()}; load average {load_before} -> {load_average()}; "
          f"reference loop {reference_before:.0f} ms\nwritten: {OUT}")


if __name__ == "__main__":
    main()
