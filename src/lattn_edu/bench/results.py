"""A ``lattn-edu bench`` record read back, and written out as text and as a CSV table (chapters 3, 9).

:func:`load_results` reads a record through :func:`lattn_edu.records.load_record`, the
loader every chapter shares; :func:`report` is the summary the command prints, in
blank-line-separated parts (machine, per shape, crossovers, decoding, targets) that a
chapter can print one at a time; :func:`write_csv` writes one row per method and shape.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from .. import records


CSV_FIELDS = ("method", "family", "origin", "backend", "form", "d", "n", "batch_heads", "status", "reason",
              "median_s", "min_s", "max_s", "runs", "first_call_s", "gflops", "sgemm_gflops_same_rounds",
              "load_average", "other_processes_cores")


def write_csv(rows: list[dict], path: Path, fields: tuple[str, ...] = CSV_FIELDS) -> None:
    """The timed and skipped rows of a run as CSV, the columns ``fields`` (:data:`CSV_FIELDS`)."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in fields})


def load_results(path: str | os.PathLike | None = None, name: str = "bench.json") -> dict:
    """A benchmark record: the file at ``path`` (a run of ``lattn-edu bench``), else the
    packaged ``name`` through :func:`lattn_edu.records.load_record`."""
    if path is None:
        return records.load_record(name)
    if not Path(path).is_file():
        raise FileNotFoundError(f"no recorded benchmark at {path}; run lattn-edu bench")
    return json.loads(Path(path).read_text(encoding="utf-8"))


def _loads(averages: list[float]) -> str:
    """Load averages to two decimals, as the system reports them (1, 5, 15 minutes)."""
    return ", ".join(f"{a:.2f}" for a in averages)


def report(record: dict) -> str:
    """The summary as text: the machine, per shape, the crossovers, decoding, the targets."""
    m = record["machine"]
    lines = [f"machine: {m['cpu']}, {m['cores']} cores, numba {m['numba_threads']} threads, "
             f"torch {m['torch_threads']} threads; load average (1, 5, 15 min) "
             f"{_loads(record['load_average_start'])} -> {_loads(record['load_average_end'])}; other processes kept "
             f"{(record.get('other_processes_cores') or {}).get('mean', float('nan')):.2f} cores busy on "
             f"average; wall time {record['wall_seconds']:.0f} s",
             f"sgemm {record['sgemm']['size']}: {record['sgemm']['gflops_start']:.0f} / "
             f"{record['sgemm']['gflops_end']:.0f} GFLOP/s (start / end)"
             + (f"; with OpenBLAS's AVX-512 kernels {record['sgemm']['avx512_kernels']['gflops']:.0f}"
                if record["sgemm"].get("avx512_kernels") else ""),
             "", f"{'d':>4} {'N':>7} {'ours GFLOP/s':>13} {'peer GFLOP/s':>13} {'ratio':>6} {'compiled':>9}"
                 f" {'ratio':>6} {'of sgemm':>9} {'kernel GFLOP/s':>15} {'ratio':>6} {'of sgemm':>9}  ours"]
    for s in record["summary"]["per_shape"]:
        kernel = (f"{s['kernel_gflops']:>15.1f} {s['kernel_ratio']:>6.2f} {100 * s['kernel_sgemm_fraction']:>8.0f}%"
                  if s.get("kernel_gflops") is not None else f"{'-':>15} {'-':>6} {'-':>9}")
        compiled = (f"{s['compiled_peer_gflops']:>9.1f} {s['compiled_ratio']:>6.2f}"
                    if s.get("compiled_peer_gflops") is not None else f"{'-':>9} {'-':>6}")
        lines.append(f"{s['d']:>4} {s['n']:>7} {s['ours_gflops']:>13.1f} {s['peer_gflops']:>13.1f} "
                     f"{s['ratio']:>6.2f} {compiled} {100 * s['sgemm_fraction']:>8.0f}% {kernel}  {s['ours']}")
    lines.append("")
    for c in record["summary"]["crossover"]:
        where = ("not within the sizes measured" if c["crossover_n"] is None
                 else f"<= {c['sizes'][0]}" if c["at_or_below_smallest"] else f"~{c['crossover_n']:,.0f}")
        lines.append(f"crossover d={c['d']:>3}: numba chunkwise beats {c['softmax']} from N {where}")
    lines.append("")
    for g in record["summary"]["decode"]:
        lines.append(f"decode d={g['d']:>3} {g['method']:<26} {1e6 * g['per_token_small_s']:8.1f} µs at N={g['n_small']:,}"
                     f" -> {1e6 * g['per_token_large_s']:8.1f} µs at N={g['n_large']:,}: x{g['growth']:.2f}")
    lines.append("")
    lines.append("targets: " + json.dumps(record["summary"]["targets"]))
    return "\n".join(lines)
