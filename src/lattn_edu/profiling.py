"""Peak memory of a torch computation, read from torch's own memory profiler (chapter 12).

Autograd's saved-tensor hooks say what a forward keeps for its backward; the profiler says
what the process actually held at its worst moment, temporaries of the backward included.
Chapter 12 shows both: the first is the argument, the second the bill.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

MIB = 2**20


def torch_peak_mib(run: Callable[[], object]) -> float:
    """Peak memory (MiB) that ``run()`` allocates through torch on the CPU, beyond what was
    already allocated when it started.

    ``run`` is called once under ``torch.profiler.profile(profile_memory=True)``; every
    allocation and free the profiler records carries the allocator's running total, and the
    peak is the largest total minus the total just before the first event.
    """
    if not callable(run):
        raise TypeError(f"run must be a callable taking no arguments, got {type(run).__name__}")
    from torch.profiler import ProfilerActivity, profile

    with _quiet_stderr(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        run()
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "trace.json"
        prof.export_chrome_trace(str(trace))
        events = json.loads(trace.read_text())["traceEvents"]
    memory = [event["args"] for event in events if event.get("name") == "[memory]"]
    if not memory:
        return 0.0
    before = memory[0]["Total Allocated"] - memory[0]["Bytes"]
    return max(0, max(args["Total Allocated"] for args in memory) - before) / MIB


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Silence file descriptor 2: the profiler's C++ side logs its start and stop there,
    and a notebook kernel forwards that descriptor into the cell's output."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
