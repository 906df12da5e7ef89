"""What ``lattn-edu bench`` times: a family of methods, the shapes and how much to measure (chapter 9).

A :class:`Family` is what the one runner (:func:`.harness.run_family`) needs to know about a
group of methods timed side by side: how to build them and their inputs, what float64
reference they must agree with, how to turn one shape's timings into rows, how to time
decoding and what to summarise. :mod:`.families` lists the families; this module holds the
linear-attention family's methods (ours, the peer, the softmax baselines) and the constants
every family shares.

Linear attention is credited with 4·d·d_v FLOPs per token (the state update and the read
of the causal scan), whatever a form really computes, so every form and peer is rated on
the same work. Each method also says roughly how much memory it allocates and whether
its time grows like N or N², so that the harness can stop growing N before a call would
pass the memory budget or the time limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any, Callable

import numpy as np

import lattn_edu as la

from ..linear import FORMS

DIMS = (32, 64, 128)
SIZES = tuple(2**p for p in range(7, 17))  # 128 ... 65,536
QUICK_SIZES = (128, 512, 2048, 8192)
DECODE_SIZES = (1_000, 10_000, 100_000)
BATCH_HEADS = 8
# Each implementation runs in chunks of the length it is fastest with here, as a user tuning it
# would choose. benchmarks/chunk_sweep.py (its record, chunk_sweep.json, ships in the package
# data) timed ours at 32 and 64 tokens, fastest at 32 in most rows, and the compiled torch peer
# at 64, 128 and 256: peer_chunk_size reads the peer's length for each family and width from it.
OUR_CHUNK = 32
PEER_CHUNK = 64  # flash-linear-attention's default: the peer's length at a width the sweep did not time
EPS = 1e-6
FLOAT_BYTES = 4
TOLERANCE = 1e-4  # float32 against the float64 reference (RMS relative), the suite's tolerance
OURS = "numba chunkwise"  # our fast form, through la.linear_attention with its checks
CONTROL = "numba parallel"  # the causal parallel form runs the chunkwise kernel: ours timed again
KERNEL = "numba chunkwise kernel"  # the same kernel called directly: no argument checks or dispatch
PEER = "torch chunkwise peer"  # run eagerly, op by op
PEER_COMPILED = "torch chunkwise peer, compiled"  # the same code under torch.compile (inductor)
SOFTMAX_OURS, SOFTMAX_SDPA = "numba softmax", "torch SDPA"
SGEMM = "numpy sgemm"


@cache
def _sweep_rows() -> tuple[dict, ...]:
    from .. import records
    return tuple(records.load_record("chunk_sweep.json")["rows"])


def peer_chunk_size(family: str, d: int) -> int:
    """The chunk length the torch peer runs ``family`` at, at head width ``d``: of the lengths the
    chunk sweep timed the compiled peer at, the one whose time over the peer's best was
    smallest on geometric average over the swept sequence lengths at that width (the shorter
    length on a tie); :data:`PEER_CHUNK` at a family or width the sweep did not time."""
    rows = [row for row in _sweep_rows() if (row["family"], row["d"]) == (family, d)]
    if not rows:
        return PEER_CHUNK
    chunks = sorted(int(name.removeprefix("peer c")) for name in rows[0]["over_best"] if name.startswith("peer c"))
    return min(chunks, key=lambda c: (float(np.mean([np.log(row["over_best"][f"peer c{c}"]) for row in rows])), c))


@dataclass(frozen=True)
class Settings:
    """How much to measure: a family's full recorded run, or its ``--quick`` run."""

    sizes: tuple[int, ...]
    dims: tuple[int, ...]
    batch_heads: int
    min_rounds: int  # timed calls of each method per shape, at least
    max_rounds: int
    shape_seconds: float  # aim for about this much timed work per shape
    max_call_s: float  # a method stops growing N once its next call would take longer
    memory_budget: float  # bytes a method may allocate beyond its inputs
    sgemm_size: int | None  # numpy's sgemm at this size is timed in every round; None: not timed
    decode_sizes: tuple[int, ...]
    decode_steps: int
    compiled_peers: bool = True  # time the peers under torch.compile too (each compile costs seconds)


FULL = Settings(sizes=SIZES, dims=DIMS, batch_heads=BATCH_HEADS, min_rounds=5, max_rounds=25,
                shape_seconds=6.0, max_call_s=4.0, memory_budget=4 * 2**30, sgemm_size=2048,
                decode_sizes=DECODE_SIZES, decode_steps=400)
QUICK = Settings(sizes=QUICK_SIZES, dims=DIMS, batch_heads=BATCH_HEADS, min_rounds=3, max_rounds=9,
                 shape_seconds=1.0, max_call_s=0.4, memory_budget=2 * 2**30, sgemm_size=1024,
                 decode_sizes=DECODE_SIZES, decode_steps=100, compiled_peers=False)


@dataclass(frozen=True)
class Method:
    """One thing to time: how to build its call from the inputs, and what it costs."""

    name: str
    family: str  # 'linear' | 'softmax' | 'sgemm'
    origin: str  # 'ours' | 'peer'
    backend: str
    form: str
    build: Callable[["Inputs"], Callable[[], Any]]
    extra_bytes: Callable[[int, int, int], float]  # (N, d, batch·heads) -> bytes beyond the inputs
    time_exponent: int  # 2 when the time grows like N², for predicting the next size
    flops: Callable[[int, int, int], float] | None = None  # (N, d, batch·heads) -> FLOPs credited
    compiled: bool = False  # runs under torch.compile: left out where settings.compiled_peers is False


@dataclass(frozen=True)
class Shape:
    """One shape's timings, as the runner hands them to a family's ``shape_rows``."""

    d: int
    n: int
    batch_heads: int
    timed: list[Method]
    skipped: list[tuple[Method, str]]  # (method, why it was not timed)
    samples: dict[str, list[float]]  # method name -> seconds of each round
    sgemm_gflops: float | None  # numpy's sgemm in the same rounds, when the family times it
    load_average: float | None
    other_processes_cores: float | None
    first_call_s: dict[str, float] = field(default_factory=dict)  # method -> its untimed first call
    # (for a compiled peer, its compile time at this shape plus one call)


@dataclass(frozen=True)
class Family:
    """A family of methods ``lattn-edu bench`` times side by side, described as data for the runner."""

    name: str  # the --families choice
    record_name: str  # the JSON file a run writes
    description: str  # what the record says it measured
    full: Settings
    quick: Settings
    methods: Callable[[tuple[str, ...]], list[Method]]  # (backends) -> what to time
    make_inputs: Callable[..., Any]  # (n, d, batch·heads, seed) -> one shape's inputs
    reference: Callable[[str, Any], np.ndarray]  # (Method.family, inputs) -> float64 output
    shape_rows: Callable[[Shape], list[dict]]  # one shape's timings -> the record's rows
    decode: Callable[[Settings, Any], list[dict]]  # (settings, progress) -> decoding rows
    summarise: Callable[[list[dict], list[dict], Settings], dict]  # (rows, decode, settings)
    report: Callable[[dict], str]  # the record -> the table the command prints
    notes: Callable[[tuple[str, ...]], dict]  # (backends) -> what the record's settings add
    csv_fields: tuple[str, ...] = ()  # columns of the CSV table of rows; () writes none
    plots: dict[str, Callable[[dict], Any]] = field(default_factory=dict)  # PNG name -> plot(record)


@dataclass
class Inputs:
    """One shape's inputs: numpy arrays [B, N, d] and torch tensors sharing their memory."""

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    tq: Any = None
    tk: Any = None
    tv: Any = None


def _linear_extra_bytes(backend: str, form: str, chunk: int = OUR_CHUNK) -> Callable[[int, int, int], float]:
    """Bytes a form allocates beyond q, k, v and the output, roughly (for the memory budget), in
    chunks of ``chunk`` tokens."""
    def extra(n: int, d: int, bh: int) -> float:
        features = 2 * bh * n * d * FLOAT_BYTES
        if form == "quadratic":  # the N×N weights (numba: one per thread at a time)
            stacks = 2 if backend == "numba" else 3 * bh
            return features + stacks * n * n * FLOAT_BYTES
        # per-chunk states, their running sums and a temporary; causal 'parallel' runs this form
        if form in ("chunkwise", "parallel") and backend == "torch":
            return features + 3 * bh * (n / chunk + 1) * d * d * FLOAT_BYTES
        return features
    return extra


def _our_forms(backends: tuple[str, ...]) -> list[Method]:
    """Every form on every backend, through la.linear_attention."""
    found = []
    for backend in backends:
        for form in FORMS:
            def build(x: Inputs, backend: str = backend, form: str = form) -> Callable[[], Any]:
                q, k, v = (x.tq, x.tk, x.tv) if backend == "torch" else (x.q, x.k, x.v)
                return lambda: la.linear_attention(q, k, v, causal=True, form=form, backend=backend,
                                                   chunk_size=OUR_CHUNK, eps=EPS)
            found.append(Method(f"{backend} {form}", "linear", "ours", backend, form, build,
                                _linear_extra_bytes(backend, form), 2 if form == "quadratic" else 1,
                                _linear_work))
    return found


def timed_methods(backends: tuple[str, ...]) -> list[Method]:
    """Every method the benchmark times, ours first, then the peers and the softmax baselines.
    The compiled peer is left out where torch.compile does not work (the record's settings say why)."""
    from ..backends import numba_backend, numba_softmax
    from . import peers

    found = _our_forms(backends)
    if "numba" in backends:
        found.append(Method(
            KERNEL, "linear", "ours", "numba", "chunkwise",
            lambda x: lambda: numba_backend.chunkwise_elu_linear_attention(x.q, x.k, x.v, True, EPS, OUR_CHUNK),
            _linear_extra_bytes("numba", "chunkwise"), 1, _linear_work))
    def peer_call(x: Inputs, compiled: bool) -> Callable[[], Any]:
        chunk = peer_chunk_size("linear", x.q.shape[-1])
        return lambda: peers.torch_chunkwise_linear_attention(x.tq, x.tk, x.tv, chunk_size=chunk, eps=EPS,
                                                              compiled=compiled)

    # the memory estimate at the shortest chunk the peer may run at: more chunks, more states
    found.append(Method(PEER, "linear", "peer", "torch", "chunkwise", lambda x: peer_call(x, False),
                        _linear_extra_bytes("torch", "chunkwise", PEER_CHUNK), 1, _linear_work))
    if peers.compiler_problem() is None:
        found.append(Method(PEER_COMPILED, "linear", "peer", "torch", "chunkwise, compiled",
                            lambda x: peer_call(x, True), _linear_extra_bytes("torch", "chunkwise", PEER_CHUNK), 1,
                            _linear_work, compiled=True))
    found.append(Method(
        SOFTMAX_OURS, "softmax", "ours", "numba", "flash",
        lambda x: lambda: numba_softmax.softmax_attention(x.q, x.k, x.v, causal=True),
        lambda n, d, bh: 0.0, 2, _softmax_work))
    found.append(Method(
        SOFTMAX_SDPA, "softmax", "peer", "torch", "sdpa",
        lambda x: lambda: peers.sdpa_causal_softmax_attention(x.tq[None], x.tk[None], x.tv[None]),
        lambda n, d, bh: 0.0, 2, _softmax_work))
    found.append(Method(
        "numpy softmax", "softmax", "ours", "numpy", "materialised",
        lambda x: lambda: la.softmax_attention(x.q, x.k, x.v, causal=True, max_matrix_bytes=2**40),
        lambda n, d, bh: 4 * bh * n * n * FLOAT_BYTES, 2, _softmax_work))
    return found


def compiled_peer_note() -> str:
    """What a record says of its compiled peers: how they ran, or why this machine could not."""
    from . import peers

    return peers.compiler_problem() or (
        "each peer's stages under torch.compile (inductor, static shapes); a method's first call at each "
        "shape, which compiles, is recorded apart as first_call_s and not timed (inductor keeps compiled "
        "graphs in a cache on disk, so a first call may load a graph compiled by an earlier run)")


def kernel_macs_per_token(chunk: int, m: int, d_v: int) -> float:
    """Multiply–adds per token of our chunkwise kernel in chunks of ``chunk`` tokens, features
    of width m, values of width d_v: C(m + d_v/2) + 2 m d_v (the C×C weights, their product with
    V_c in place by trmm, which skips the masked half, and the state's read and write). The
    recurrent form's 2 m d_v is what every linear-attention method is credited with."""
    return chunk * (m + d_v / 2) + 2 * m * d_v


def linear_flops(n: int, d: int, d_v: int, bh: int) -> float:
    """FLOPs credited to causal linear attention: 4·d·d_v per token (update + read of the scan)."""
    return 4.0 * d * d_v * n * bh


def softmax_flops(n: int, d: int, d_v: int, bh: int) -> float:
    """FLOPs of causal softmax attention: q·k and the weighted sum over the N(N+1)/2 visible pairs."""
    return float(n) * (n + 1) * (d + d_v) * bh


def _linear_work(n: int, d: int, bh: int) -> float:
    return linear_flops(n, d, d, bh)  # d_v = d in every benchmarked shape


def _softmax_work(n: int, d: int, bh: int) -> float:
    return softmax_flops(n, d, d, bh)


def make_inputs(n: int, d: int, bh: int, seed: int = 0) -> Inputs:
    """Seeded float32 q, k, v [bh, N, d] and torch views of the same memory."""
    import torch

    q, k, v = np.random.default_rng(seed).standard_normal((3, bh, n, d), dtype=np.float32)
    return Inputs(q, k, v, torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v))


def reference(family: str, x: Inputs) -> np.ndarray:
    """The float64 numpy output a method of ``family`` ('linear' or 'softmax') must match on x."""
    q, k, v = (a.astype(np.float64) for a in (x.q, x.k, x.v))
    if family == "linear":
        return la.linear_attention(q, k, v, causal=True, form="quadratic", eps=EPS)
    return la.softmax_attention(q, k, v, causal=True)
