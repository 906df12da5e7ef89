"""Largest disagreement of every model, backend and form with flash-linear-attention's own references.

Run: python benchmarks/fla_agreement.py   (writes benchmarks/results/fla_agreement.json)

It runs the suite's comparisons with fla-core's naive references (the tests named below,
``-k fla``) with ``LATTN_AGREEMENT_RECORD`` set, so every ``assert_close`` they make appends the
relative (RMS) error it measured, and reports the worst per model, backend, form and dtype (the
narrower of the two arrays compared: ours in float32 shows as float32; fla computes in float32
whatever it is given, so a float64 row is our float64 form against fla's float32 arithmetic). These are the figures the tests bound by 1e-4 (fla computes in float32), measured
by the tests themselves rather than by a second copy of their layout conversions.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = {  # test file -> the public function it compares with fla
    "test_fla_reference.py": "Part II: gated, retention, delta_rule",
    "test_kda.py": "delta_rule, per-channel g (KDA)",
    "test_delta_product.py": "delta_product",
    "test_generalized_delta.py": "generalized_delta_rule",
    "test_log_linear.py": "log_linear_attention",
    "test_least_squares.py": "least_squares_attention",
    "test_test_time.py": "ttt_linear, titans_linear",
}
BACKENDS, FORMS = ("numpy", "numba", "torch"), ("recurrent", "parallel", "chunkwise")


def measure() -> list[dict]:
    """Run the fla comparisons once (one process: each appends whole lines) and read what they recorded."""
    with tempfile.TemporaryDirectory() as scratch:
        record = Path(scratch) / "agreement.jsonl"
        env = {**os.environ, "LATTN_AGREEMENT_RECORD": str(record)}
        tests = [str(ROOT / "tests" / name) for name in MODELS]
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
                               "-k", "fla", *tests], cwd=ROOT, env=env)
        if done.returncode != 0:
            raise SystemExit(f"the fla comparisons failed (pytest exit {done.returncode}); nothing recorded")
        return [json.loads(line) for line in record.read_text().splitlines()]


def first_of(names: tuple[str, ...], text: str) -> str:
    found = [name for name in names if re.search(rf"\b{name}\b", text)]
    return found[0] if found else "-"


def worst_rows(measured: list[dict]) -> list[dict]:
    """The worst error per (model, test, backend, form, dtype), parsed from the test id and the
    comparison's label (each test names its backend and form in one or the other)."""
    worst: dict[tuple, dict] = {}
    for m in measured:
        path, _, test = m["test"].partition("::")
        text = f"{test} {m['what']}".replace("-", " ").replace("[", " ").replace("]", " ")
        key = (MODELS[Path(path).name], test.split("[")[0], first_of(BACKENDS, text), first_of(FORMS, text),
               m["dtype"])
        if key not in worst or m["relative_error"] > worst[key]["worst_relative_error"]:
            worst[key] = {"model": key[0], "test": key[1], "backend": key[2], "form": key[3], "dtype": key[4],
                          "worst_relative_error": m["relative_error"], "bound": m["rtol"],
                          "comparisons": 0}
        worst[key]["comparisons"] += 1
    return sorted(worst.values(), key=lambda r: (r["model"], r["test"], r["backend"], r["form"], r["dtype"]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "fla_agreement.json",
                        help="where to write the record (default: benchmarks/results/fla_agreement.json)")
    out = parser.parse_args(argv).out
    from importlib.metadata import version  # of fla-core: importing fla itself wants triton

    rows = worst_rows(measure())
    print(f"{'model':38} {'test':44} {'backend':8} {'form':10} {'dtype':8} worst rel. error")
    for r in rows:
        print(f"{r['model']:38} {r['test']:44} {r['backend']:8} {r['form']:10} {r['dtype']:8} "
              f"{r['worst_relative_error']:.1e}")
    record = {"fla_core": version("fla-core"), "torch": version("torch"), "numpy": version("numpy"),
              "rows": rows}
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
