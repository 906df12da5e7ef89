"""Where a number was measured: the one description of the machine (chapters 3, 4, 7, 9).

A timing means little without the machine behind it, so every recorded benchmark carries
:func:`machine_info`, and every chapter that times something live prints
:func:`machine_summary`, one line derived from the same description.

- :func:`machine_info`: CPU, its vector instructions, cores, memory, Python, library
  versions and the thread settings in the environment, read without importing the
  heavy libraries; ``engines=True`` adds numba's and torch's thread counts and the BLAS
  libraries loaded (importing numba and torch where installed);
- :func:`gpu_info`: the CUDA device, its memory and the CUDA and cuDNN versions;
- :func:`machine_summary`: "2 CPU cores, x86_64, Python 3.11.9, numpy 2.3.1";
- :func:`cpu_caches`: the sizes of core 0's data caches, as Linux reports them (chapter 9).
"""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

LIBRARIES = ("numpy", "scipy", "numba", "torch")
# The variables that set how many threads numba, torch and the BLAS start and how idle
# ones wait: the same code runs at different speeds under different values.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE",
                    "OPENBLAS_THREAD_TIMEOUT", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
SIMD_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile")


def machine_info(*, engines: bool = False) -> dict[str, Any]:
    """The machine and software that run this process, as a JSON-ready dict.

    Parameters
    ----------
    engines : bool
        Also report ``numba_threads``, ``numba_threading_layer``, ``torch_threads`` and
        ``blas`` (the BLAS libraries threadpoolctl finds). This imports numba and torch;
        an engine that is not installed is reported as None.

    Returns
    -------
    dict
        ``cpu``, ``cpu_simd``, ``caches`` (core 0's, by level as a string: :func:`cpu_caches`;
        a benchmark's speed depends on them), ``machine``, ``system``, ``cores`` (those this
        process may use), ``memory_gib``, ``python``, ``versions`` (library -> version or None),
        ``environment`` (thread variables that are set) and ``git_commit`` (the checkout's
        commit when the package runs from one, else None).
    """
    from . import __version__

    info: dict[str, Any] = {
        "cpu": _cpu_model(), "cpu_simd": cpu_simd(),
        "caches": {str(level): cache for level, cache in cpu_caches().items()}, "machine": platform.machine(),
        "system": platform.platform(), "cores": usable_cores(), "memory_gib": _memory_gib(),
        "python": platform.python_version(),
        "versions": {**{name: _version(name) for name in LIBRARIES}, "lattn_edu": __version__},
        "environment": {k: os.environ[k] for k in THREAD_VARIABLES if k in os.environ},
        "git_commit": _git_commit(),
    }
    if engines:
        info.update(_engine_threads())
    return info


def gpu_info(device: str) -> dict[str, Any]:
    """The device a torch benchmark ran on: for ``"cuda..."`` its name, memory, compute
    capability and the CUDA and cuDNN versions; for any other device just its name."""
    import torch

    info: dict[str, Any] = {"device": device}
    if device.startswith("cuda"):
        props = torch.cuda.get_device_properties(torch.device(device))
        info.update({"gpu": props.name, "gpu_memory_gib": round(props.total_memory / 2**30, 1),
                     "capability": f"{props.major}.{props.minor}", "cuda": torch.version.cuda,
                     "cudnn": torch.backends.cudnn.version()})
    return info


def machine_summary(info: dict[str, Any] | None = None) -> str:
    """One line that says where a timing was measured, from :func:`machine_info` (or ``info``),
    e.g. '2 CPU cores, x86_64, Python 3.11.9, numpy 2.3.1'."""
    info = machine_info() if info is None else info
    return (f"{info['cores']} CPU cores, {info['machine']}, Python {info['python']}, "
            f"numpy {info['versions']['numpy']}")


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the system reports one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def cpu_simd() -> list[str]:
    """The vector instruction sets the CPU reports (Linux), e.g. ['avx2', 'fma', 'avx512f']."""
    flags = set(_cpuinfo_field("flags").split())
    return [flag for flag in SIMD_FLAGS if flag in flags]


def cpu_caches(cache_dir: str | os.PathLike = "/sys/devices/system/cpu/cpu0/cache") -> dict[int, dict[str, Any]]:
    """Core 0's data (and unified) caches by level, as Linux reports them: {level: {"bytes":
    size, "shared_with": the CPU list that shares it, e.g. '0' for a private cache}}. Empty
    where the system reports none (not Linux, or a container that hides sysfs)."""
    caches: dict[int, dict[str, Any]] = {}
    try:
        for index in sorted(Path(cache_dir).glob("index*")):
            size = (index / "size").read_text().strip()
            if (index / "type").read_text().strip() in ("Data", "Unified") and size.endswith("K"):
                caches[int((index / "level").read_text())] = {
                    "bytes": int(size[:-1]) * 1024,
                    "shared_with": (index / "shared_cpu_list").read_text().strip()}
    except (OSError, ValueError):
        return {}
    return caches


def _cpuinfo_field(name: str) -> str:
    """The first ``name : value`` of /proc/cpuinfo, or '' where there is none."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(name):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def _cpu_model() -> str:
    return _cpuinfo_field("model name") or platform.processor() or "unknown"


def _memory_gib() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def _version(name: str) -> str | None:
    """The installed version, read from the package metadata without importing the library."""
    try:
        return metadata.version(name.replace("_", "-"))
    except metadata.PackageNotFoundError:
        return None


def _engine_threads() -> dict[str, Any]:
    found: dict[str, Any] = {"numba_threads": None, "numba_threading_layer": None, "torch_threads": None,
                             "blas": None}
    try:
        import numba

        found["numba_threads"] = numba.get_num_threads()
        found["numba_threading_layer"] = numba.threading_layer()
    except ImportError:
        pass
    except ValueError:  # numba is there but no parallel kernel has run yet
        pass
    try:
        import torch

        found["torch_threads"] = torch.get_num_threads()
    except ImportError:
        pass
    try:
        import scipy.linalg.cython_blas  # noqa: F401  (the BLAS the numba kernels call: load it to list it)
        from threadpoolctl import threadpool_info

        found["blas"] = [{k: lib.get(k) for k in ("internal_api", "version", "architecture", "num_threads",
                                                  "threading_layer", "filepath")} for lib in threadpool_info()]
    except ImportError:
        pass
    return found


def _git_commit() -> str | None:
    """HEAD of the git checkout this package's source is tracked in (an editable install), else None."""
    here = Path(__file__).resolve().parent
    try:
        tracked = subprocess.run(["git", "ls-files", "--error-unmatch", "__init__.py"], cwd=here,
                                 capture_output=True, text=True, timeout=10)
        if tracked.returncode != 0:  # installed into site-packages, or no git at all
            return None
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True,
                              timeout=10)
        return done.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None
