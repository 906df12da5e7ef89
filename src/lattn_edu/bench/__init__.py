"""``lattn-edu bench``: our kernels timed against torch peers, and the record chapters 3 and 9 read.

One runner over a list of families; one module per job:

- :mod:`.methods`: what a family is (:class:`Family`: its methods, reference, FLOP count,
  shapes) and the linear-attention family's methods (our forms, the peer, the softmax
  baselines), sizes and how much to measure;
- :mod:`.gated`: the gated family (scalar and vector decay, the delta rule);
- :mod:`.families`: the list of families the command runs (:data:`FAMILIES`);
- :mod:`.peers`: the torch peers, written the way production libraries write them, run
  eagerly or compiled;
- :mod:`.harness`: the one runner, :func:`run_family`: correctness first, then every method
  timed in interleaved rounds, then decoding;
- :mod:`.summary`: per-shape ratios, crossovers, decoding growth, the targets, the run's noise
  (its control) and the length from which ours is firmly faster than softmax;
- :mod:`.plots` and :mod:`.results`: the record as figures, as text and as CSV, and
  :func:`load_results` to read it back;
- :mod:`.cli`: the command itself (``lattn-edu bench``).

Only :mod:`.peers` and the timing itself need torch; the plots and the report of a recorded
run work without it.
"""

from .cli import add_arguments, run
from .families import FAMILIES, GATED, LINEAR
from .harness import (OtherLoad, check_correctness, measure_sgemm, run_family, sgemm_call, time_interleaved,
                      time_once)
from .methods import (BATCH_HEADS, CONTROL, EPS, FULL, KERNEL, OUR_CHUNK, OURS, PEER, PEER_CHUNK, PEER_COMPILED, QUICK,
                      SOFTMAX_OURS, SOFTMAX_SDPA, Family, Settings, kernel_macs_per_token, linear_flops,
                      peer_chunk_size, softmax_flops, timed_methods)
from .plots import GATED_PLOTS, PLOTS, plot_decode, plot_gated_ratios, plot_ratio, plot_throughput, plot_times
from .results import CSV_FIELDS, load_results, report, write_csv
from .summary import (control_spread, crossovers, decode_summary, firmly_faster_from, per_shape_summary,
                      softmax_over_ours, targets)

__all__ = [
    "BATCH_HEADS", "CONTROL", "CSV_FIELDS", "EPS", "FAMILIES", "FULL", "GATED", "KERNEL", "LINEAR",
    "OUR_CHUNK", "OURS", "PEER", "PEER_CHUNK", "PEER_COMPILED", "GATED_PLOTS", "PLOTS", "QUICK",
    "SOFTMAX_OURS", "SOFTMAX_SDPA", "Family", "OtherLoad", "Settings", "add_arguments", "check_correctness",
    "control_spread", "crossovers", "decode_summary", "firmly_faster_from", "kernel_macs_per_token",
    "linear_flops", "load_results", "measure_sgemm", "peer_chunk_size", "per_shape_summary", "plot_decode",
    "plot_gated_ratios", "plot_ratio", "plot_throughput", "plot_times", "report", "run", "run_family",
    "sgemm_call", "softmax_flops", "softmax_over_ours", "targets", "time_interleaved", "time_once",
    "timed_methods", "write_csv",
]
