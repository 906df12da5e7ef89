"""What a control change costs in every explorer: recompute, redraw and PNG-encode at LIVE_DPI.

Run: python benchmarks/explorers.py   (writes benchmarks/results/explorers.json)
     python benchmarks/explorers.py --baseline /work/wt-base   (also times another tree, side by side)

For each explorer in ``lattn_edu.explorers.CATALOG`` it times ``live_png(**values)`` (what the
live widget does on every slider move) over RUNS calls after one untimed call at the
defaults, moving one control at a time to each of its values, and reports the median (p50) and
95th percentile of the wall-clock time against the budget: 100 ms at p95 on 2 cores, so a
slider feels immediate. It also counts the moves that drew the whole figure (a decoration
not drawn before) rather than only what moved.

Each tree is timed in its own worker process, with that tree's ``src`` first on PYTHONPATH:
this tree's, and with ``--baseline`` another checkout (its root or its ``src`` folder). The
workers take turns, CHUNK moves at a time, explorer by explorer, so that a busy machine slows
both sides alike; the record keeps each side's numbers and their ratios. On a shared machine
other processes inflate wall time, so it records the CPU time per call too, the load average
around the run, and a fixed pure-Python workload before and after (``reference_ms``), so a
record made on a throttled machine says so. It also builds this tree's static pages once and
records their frame count and size (budget ~3 MB); ``--no-pages`` skips that.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

RUNS = 30  # timed moves per explorer and tree
CHUNK = 5  # moves a worker makes before the other tree's worker takes its turn
BUDGET_MS = 100
ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "explorers.json"


def source_folder(tree: str | Path) -> Path:
    """The folder to put on PYTHONPATH for ``tree``: its ``src`` when it has one, else itself."""
    tree = Path(tree).resolve()
    folder = tree / "src" if (tree / "src" / "lattn_edu").is_dir() else tree
    if not (folder / "lattn_edu").is_dir():
        raise ValueError(f"--baseline must be a checkout of lattn-edu or its src folder; got {tree}")
    return folder


# ---- the worker: one per tree, driven over its stdin and stdout, one JSON object a line ----

class Timer:
    """Times one-control moves of every explorer of the tree on PYTHONPATH, continuing each
    explorer's cycle of moves from call to call."""

    def __init__(self) -> None:
        from lattn_edu import explorers

        self.catalog = explorers.CATALOG
        self.impossible = explorers.ImpossibleSetting
        self.explorers: dict[str, Any] = {}
        self.next_move: dict[str, int] = {}

    def explorer(self, name: str) -> Any:
        if name not in self.explorers:
            explorer = self.explorers[name] = self.catalog[name]()
            explorer.live_png(**explorer.defaults)  # untimed: imports, font caches, the first layout
            self.next_move[name] = 0
        return self.explorers[name]

    def time_moves(self, name: str, count: int) -> dict[str, list[float]]:
        """Wall and CPU milliseconds of the next ``count`` moves (an impossible setting is
        skipped: the widget shows a message instead), and whether each drew the whole figure."""
        explorer = self.explorer(name)
        moves = [{**explorer.defaults, control: value}
                 for control, options in explorer.controls.items() for value in options]
        wall, cpu, full = [], [], []
        for _ in range(count):
            values = moves[self.next_move[name] % len(moves)]
            self.next_move[name] += 1
            full_draws = getattr(explorer._live, "full_draws", 0)
            tick, cpu_tick = time.perf_counter(), time.process_time()
            try:
                explorer.live_png(**values)
            except self.impossible:
                continue
            wall.append((time.perf_counter() - tick) * 1e3)
            cpu.append((time.process_time() - cpu_tick) * 1e3)
            full.append(getattr(explorer._live, "full_draws", 0) > full_draws)
        return {"wall": wall, "cpu": cpu, "full": full}

    def static_page(self, name: str) -> dict[str, float]:
        """Frames, size and build time of the static page (every grid point drawn once)."""
        explorer = self.catalog[name]()
        tick = time.perf_counter()
        page = explorer.static_html()
        return {"frames": int(np.prod([len(options) for options in explorer.controls.values()])),
                "page_mb": len(page.encode()) / 2**20, "page_build_s": time.perf_counter() - tick}

    def info(self) -> dict[str, Any]:
        import matplotlib

        import lattn_edu
        from lattn_edu.machine import machine_summary

        return {"names": sorted(self.catalog), "package": str(Path(lattn_edu.__file__).parent),
                "matplotlib": matplotlib.__version__, "machine": machine_summary()}


def serve() -> None:
    """Answer requests on stdin until it closes; replies go to the real stdout only."""
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout = sys.stderr  # anything a library prints stays out of the replies
    timer = Timer()
    for line in sys.stdin:
        request = json.loads(line)
        if request["do"] == "moves":
            reply = timer.time_moves(request["name"], request["count"])
        elif request["do"] == "page":
            reply = timer.static_page(request["name"])
        else:
            reply = timer.info()
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


class Worker:
    """A ``serve`` process with ``source`` first on PYTHONPATH."""

    def __init__(self, source: Path) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(source), os.environ.get("PYTHONPATH", "")])}
        self.process = subprocess.Popen([sys.executable, __file__, "--serve"], env=env, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def ask(self, **request: Any) -> Any:
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the worker for {request} stopped (see its error above)")
        return json.loads(line)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


# ---- the driver ----

def summary(timings: dict[str, list]) -> dict[str, Any]:
    """p50 and p95 of wall and CPU milliseconds, and the full draws with their median."""
    wall, cpu = np.array(timings["wall"]), np.array(timings["cpu"])
    full = wall[np.array(timings["full"], dtype=bool)]
    return {"p50_ms": float(np.median(wall)), "p95_ms": float(np.percentile(wall, 95)),
            "cpu_p50_ms": float(np.median(cpu)), "cpu_p95_ms": float(np.percentile(cpu, 95)),
            "runs": int(wall.size), "full_draws": int(full.size),
            "full_draw_p50_ms": float(np.median(full)) if full.size else None}


def time_side_by_side(workers: dict[str, Worker], name: str, runs: int) -> dict[str, dict]:
    """Each worker's summary for explorer ``name``; they take turns, CHUNK moves at a time,
    the first to go alternating from turn to turn."""
    timings = {side: {"wall": [], "cpu": [], "full": []} for side in workers}
    sides = list(workers)
    for turn in range(-(-runs // CHUNK)):
        for side in (sides if turn % 2 == 0 else sides[::-1]):
            for key, values in workers[side].ask(do="moves", name=name, count=CHUNK).items():
                timings[side][key] += values
    return {side: summary(timing) for side, timing in timings.items()}


def reference_ms() -> float:
    """Milliseconds of a fixed pure-Python loop: the machine's speed at the moment."""
    tick = time.perf_counter()
    total = 0
    for i in range(1_000_000):
        total += i
    return (time.perf_counter() - tick) * 1e3


def load_average() -> float | None:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def row_text(name: str, row: dict[str, Any]) -> str:
    after, before = row["after"], row.get("before")
    text = (f"{name:15} {after['p50_ms']:7.1f} {after['p95_ms']:7.1f} {after['cpu_p50_ms']:7.1f} "
            f"{after['full_draws']:4d}")
    if before:
        text += (f"  {before['p50_ms']:7.1f} {before['p95_ms']:7.1f} {before['cpu_p50_ms']:7.1f} "
                 f"{before['full_draws']:4d}  {row['p50_ratio']:5.2f} {row['p95_ratio']:5.2f}")
    if "frames" in row:
        text += f"  {row['frames']:6d} {row['page_mb']:7.2f}"
    return text + ("" if row["within_budget"] else f"  over {BUDGET_MS} ms at p95")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=None, help="another checkout (or its src folder) to time side by side")
    parser.add_argument("--runs", type=int, default=RUNS, help=f"timed moves per explorer and tree ({RUNS})")
    parser.add_argument("--only", nargs="+", default=None, help="time only these explorers")
    parser.add_argument("--no-pages", action="store_true", help="skip building the static pages")
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write the record ({OUT})")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # a worker
    args = parser.parse_args(argv)
    if args.serve:
        return serve()
    workers = {"after": Worker(source_folder(ROOT))}
    if args.baseline is not None:
        workers["before"] = Worker(source_folder(args.baseline))
    info = {side: worker.ask(do="info") for side, worker in workers.items()}
    names = args.only or info["after"]["names"]
    load_before, reference_before = load_average(), reference_ms()
    header = f"{'explorer':15} {'p50':>7} {'p95':>7} {'cpu p50':>7} {'full':>4}"
    if "before" in workers:
        header += f"  {'base p50':>7} {'p95':>7} {'cpu p50':>7} {'full':>4}  {'ratio p50':>5} {'p95':>5}"
    if not args.no_pages:
        header += f"  {'frames':>6} {'page MB':>7}"
    print(f"milliseconds per one-control move, {args.runs} moves each; this tree {info['after']['package']}"
          + (f", baseline {info['before']['package']}" if "before" in info else "") + f"\n{header}")
    rows = []
    for name in names:
        sides = {side: worker for side, worker in workers.items() if name in info[side]["names"]}
        row: dict[str, Any] = {"name": name, **time_side_by_side(sides, name, args.runs)}
        row["within_budget"] = row["after"]["p95_ms"] < BUDGET_MS
        if "before" in row:
            row["p50_ratio"] = row["after"]["p50_ms"] / row["before"]["p50_ms"]
            row["p95_ratio"] = row["after"]["p95_ms"] / row["before"]["p95_ms"]
        if not args.no_pages:
            row.update(workers["after"].ask(do="page", name=name))
        rows.append(row)
        print(row_text(name, row), flush=True)
    for worker in workers.values():
        worker.close()
    record = {"machine": info["after"]["machine"], "recorded": time.strftime("%Y-%m-%d %H:%M"),
              "load_average_before": load_before, "load_average_after": load_average(),
              "reference_ms_before": reference_before, "reference_ms_after": reference_ms(),
              "trees": {side: side_info["package"] for side, side_info in info.items()},
              "matplotlib": info["after"]["matplotlib"], "runs_per_explorer": args.runs,
              "budget_ms": BUDGET_MS, "explorers": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"\n{record['machine']}; load average {load_before} -> {record['load_average_after']}; "
          f"reference loop {reference_before:.0f} -> {record['reference_ms_after']:.0f} ms\nwritten: {args.out}")


if __name__ == "__main__":
    main()
