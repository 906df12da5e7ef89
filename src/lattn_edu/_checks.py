"""Input checks shared by every public function.

Each check raises a ``ValueError`` or ``TypeError`` that names the argument,
what it got and what it needs, so a reader's mistake never turns into a silent
NaN or a wrong answer. The checks accept numpy arrays and torch tensors alike.
"""

from __future__ import annotations

import numbers
from typing import Any

import array_api_compat
import numpy as np

FLOAT_DTYPES = ("float32", "float64")


def is_torch_tensor(x: Any) -> bool:
    """True for a ``torch.Tensor`` without importing torch."""
    return type(x).__module__.startswith("torch") and hasattr(x, "detach")


def array_namespace(*arrays: Any) -> Any:
    """The array API namespace of numpy arrays or torch tensors (array-api-compat's wrapper of
    numpy or torch): code that uses only the standard's names runs on either. None is skipped."""
    return array_api_compat.array_namespace(*arrays)


def dtype_name(x: Any) -> str:
    """'float32', 'int64', ... for numpy arrays and torch tensors alike."""
    if is_torch_tensor(x):
        return str(x.dtype).replace("torch.", "")
    return np.dtype(x.dtype).name


def as_float_array(x: Any, name: str) -> Any:
    """Return ``x`` as a float32/float64 array (or tensor), or raise ``TypeError``."""
    if not is_torch_tensor(x):
        if isinstance(x, (str, bytes)) or x is None:
            raise TypeError(f"{name} must be a float32 or float64 array; got {type(x).__name__}")
        x = np.asarray(x)
    if dtype_name(x) not in FLOAT_DTYPES:
        raise TypeError(f"{name} must have dtype float32 or float64; got {dtype_name(x)}")
    if not is_torch_tensor(x) and not x.dtype.isnative:  # big-endian data from a file
        x = x.astype(x.dtype.newbyteorder("="))
    return x


def check_finite(x: Any, name: str) -> None:
    """Raise ``ValueError`` if ``x`` holds NaN or inf."""
    if is_torch_tensor(x):
        finite = x.isfinite().all().item()
    else:
        # max and min propagate NaN and reach ±inf: two fast passes, no N-sized boolean temporary
        x = np.asarray(x)
        finite = x.size == 0 or bool(np.isfinite(x.max()) and np.isfinite(x.min()))
    if not finite:
        raise nonfinite_error(name)


def nonfinite_error(name: str) -> ValueError:
    """The error for an argument holding NaN or inf (raised by check_finite and fused kernels)."""
    return ValueError(f"{name} must be finite; got an array with NaN or inf entries")


def nonfinite_output_error(feature_map: Any, eps: Any) -> ValueError:
    """The error for a linear-attention output with NaN or inf: no silent NaN."""
    return ValueError(
        f"linear attention produced NaN or inf: a denominator φ(q_i)ᵀz_i + eps was 0 or "
        f"the features overflowed (feature_map={feature_map!r}, eps={eps}). Use eps > 0 "
        f"and a positive feature map such as 'elu+1'.")


def overflow_error() -> ValueError:
    """The error for a recurrence whose output or state holds NaN or inf although its inputs
    are finite and its decays <= 0: only an overflow makes one (raised by
    :func:`lattn_edu.recurrence.check_finite_result` and by kernels that check their output)."""
    return ValueError("the recurrence overflowed (the output or the state holds inf or NaN): "
                      "q, k or v are too large for their dtype; rescale them or use float64")


def check_sequence(x: Any, name: str, min_ndim: int = 2, finite: bool = True) -> Any:
    """Validate a float [..., N, d] array, finite unless ``finite=False`` (for a caller that
    checks finiteness itself), and return it."""
    x = as_float_array(x, name)
    if x.ndim < min_ndim:
        raise ValueError(f"{name} must have shape [..., N, d] (at least {min_ndim} dims); "
                         f"got shape {tuple(x.shape)}")
    if x.shape[-2] == 0 or x.shape[-1] == 0:
        raise ValueError(f"{name} must have N >= 1 and d >= 1; got shape {tuple(x.shape)}")
    if finite:
        check_finite(x, name)
    return x


def _same_kind(arrays: dict[str, Any]) -> None:
    """All numpy or all torch, one dtype, one ndim and equal leading axes."""
    names, values = ", ".join(arrays), list(arrays.values())
    if len({is_torch_tensor(x) for x in values}) > 1:
        raise TypeError(f"{names} must all be numpy arrays or all be torch tensors; got "
                        f"{', '.join(type(x).__name__ for x in values)}")
    if len({dtype_name(x) for x in values}) > 1:
        raise TypeError(f"{names} must share one dtype; got {', '.join(dtype_name(x) for x in values)}")
    shapes = ", ".join(str(tuple(x.shape)) for x in values)
    if len({x.ndim for x in values}) > 1:
        raise ValueError(f"{names} must have the same number of dims; got shapes {shapes}")
    if len({tuple(x.shape[:-2]) for x in values}) > 1:
        raise ValueError(f"{names} must have the same leading (batch, head) axes; got shapes {shapes}")


def check_qk(q: Any, k: Any, causal: bool, finite: bool = True) -> tuple[Any, Any]:
    """Validate queries q [..., N_q, d] and keys k [..., N, d].

    Leading axes must match exactly (no broadcasting), the dtypes must agree, and a
    causal layer needs N_q == N because query i sees keys 0..i.
    """
    q, k = check_sequence(q, "q", finite=finite), check_sequence(k, "k", finite=finite)
    _same_kind({"q": q, "k": k})
    if k.shape[-1] != q.shape[-1]:
        raise ValueError(f"k must have the same feature size d as q: q has d={q.shape[-1]}, "
                         f"k has shape {tuple(k.shape)} (needs [..., N, {q.shape[-1]}])")
    if causal and q.shape[-2] != k.shape[-2]:
        raise ValueError(f"causal attention needs q and k of the same length N; got q with "
                         f"N={q.shape[-2]} and k with N={k.shape[-2]}")
    return q, k


def check_qkv(q: Any, k: Any, v: Any, causal: bool, finite: bool = True) -> tuple[Any, Any, Any]:
    """Validate q [..., N_q, d], k [..., N, d] and values v [..., N, d_v] together."""
    q, k = check_qk(q, k, causal, finite)
    v = check_sequence(v, "v", finite=finite)
    _same_kind({"q": q, "k": k, "v": v})
    if v.shape[-2] != k.shape[-2]:
        raise ValueError(f"v must have the same length N as k: k has N={k.shape[-2]}, "
                         f"v has shape {tuple(v.shape)} (needs [..., {k.shape[-2]}, d_v])")
    return q, k, v


def check_positive_int(value: Any, name: str) -> int:
    """An int >= 1 (bools refused), else ``TypeError``/``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive int; got {type(value).__name__} {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be a positive int (>= 1); got {value}")
    return int(value)


def check_nonnegative_float(value: Any, name: str) -> float:
    """A finite real >= 0, else ``TypeError``/``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__} {value!r}")
    if not np.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be finite and >= 0; got {value}")
    return float(value)


def check_choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    """One of ``choices``, else ``ValueError`` listing them."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


def check_bool(value: Any, name: str) -> bool:
    """A real bool (numpy bools too), else ``TypeError``."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False; got {type(value).__name__} {value!r}")
    return bool(value)


def check_decay_values(value: Any, name: str, dtype: np.dtype) -> np.ndarray:
    """A float or numpy array of decays, every entry in (0, 1], as an array of ``dtype``.

    Shared by retention's γ and the SSM scan's a_i: a decay of 0 would make log-space
    products undefined, and one above 1 would let the state grow without bound.
    """
    if is_torch_tensor(value) or isinstance(value, (str, bytes, bool)) or value is None:
        raise TypeError(f"{name} must be a float or a numpy array of floats; got {type(value).__name__}")
    value = np.asarray(value)
    if value.dtype.kind not in "fiu":
        raise TypeError(f"{name} must be a float or a numpy array of floats; got dtype {value.dtype}")
    if not (np.isfinite(value).all() and (value > 0).all() and (value <= 1).all()):
        raise ValueError(f"{name} must lie in (0, 1]; got values in [{value.min()}, {value.max()}]")
    return value.astype(dtype)


def check_scale(scale: Any, d_k: int) -> float:
    """The read-out scale: None means d_k^-1/2; else a finite real > 0."""
    if scale is None:
        return float(d_k) ** -0.5
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise TypeError(f"scale must be a real number or None; got {type(scale).__name__} {scale!r}")
    if not np.isfinite(scale) or scale <= 0:
        raise ValueError(f"scale must be finite and > 0 (None means d_k**-0.5); got {scale}")
    return float(scale)


def match_kind(x: Any, name: str, like: Any, finite: bool = True) -> Any:
    """``x`` as a float array of ``like``'s kind (numpy or torch) and dtype, finite unless
    ``finite=False`` (for a caller whose kernel checks it itself)."""
    x = as_float_array(x, name)
    if is_torch_tensor(x) != is_torch_tensor(like):
        raise TypeError(f"{name} must be a {type(like).__name__} like q; got {type(x).__name__}")
    if dtype_name(x) != dtype_name(like):
        raise TypeError(f"{name} must have q's dtype {dtype_name(like)}; got {dtype_name(x)}")
    if finite:
        check_finite(x, name)
    return x


def check_per_step(x: Any, name: str, q: Any, widths: tuple[str, ...], valid: str, finite: bool = True) -> Any:
    """A per-step gate: [..., N] (``"scalar"`` in widths) or [..., N, d_k] (``"vector"``),
    broadcast to q's leading axes. ``valid`` describes the value range for messages."""
    x = match_kind(x, name, q, finite)
    lead, n, d_k = tuple(q.shape[:-2]), q.shape[-2], q.shape[-1]
    targets = {"scalar": lead + (n,), "vector": lead + (n, d_k)}
    target = targets["scalar"] if x.ndim == q.ndim - 1 else targets["vector"] if x.ndim == q.ndim else None
    wanted = " or ".join(f"{list(targets[w])}" for w in widths)
    if target is None or target not in (targets[w] for w in widths):
        raise ValueError(f"{name} must have shape {wanted} (one {valid} per step) for q of shape "
                         f"{list(q.shape)}; got {list(x.shape)}")
    return broadcast_to_target(x, name, target, f"q has shape {list(q.shape)}")


def broadcast_to_target(x: Any, name: str, target: tuple[int, ...], context: str) -> Any:
    """``x`` broadcast to exactly ``target`` (a view; torch keeps its graph), or a ValueError
    naming ``x``, its shape, the target and ``context``. An ``x`` that already has the target's
    shape comes back as it is: a broadcast view is read-only, and a compiled kernel would copy it."""
    if tuple(x.shape) == tuple(target):
        return x
    try:
        fits = np.broadcast_shapes(tuple(x.shape), target) == target
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"{name} of shape {list(x.shape)} does not broadcast to {list(target)} ({context})")
    return x.expand(target) if is_torch_tensor(x) else np.broadcast_to(x, target)


def extreme(x: Any, which: str) -> float:
    """x.max() or x.min() as a Python float, for numpy arrays and (detached) torch tensors."""
    x = x.detach() if is_torch_tensor(x) else x
    return float(x.max() if which == "max" else x.min())


def check_log_decay(log_decay: Any, q: Any, vector: bool = True, values: bool = True) -> Any:
    """Log decays g <= 0 (decay exp(g) in (0, 1]) per step: [..., N], or [..., N, d_k] if allowed.
    ``values=False`` checks the shape, kind and dtype only, for a caller whose kernel checks the
    values as it reads them (and raises :func:`nonfinite_error` or :func:`positive_log_decay_error`)."""
    if log_decay is None:
        return None
    widths = ("scalar", "vector") if vector else ("scalar",)
    log_decay = check_per_step(log_decay, "log_decay", q, widths, "log decay g <= 0", finite=values)
    if values:
        largest = extreme(log_decay, "max")
        if largest > 0:
            raise positive_log_decay_error(largest)
    return log_decay


def positive_log_decay_error(largest: float) -> ValueError:
    """The error for log decays above 0 (raised by check_log_decay and by fused kernels)."""
    return ValueError(f"log_decay must be <= 0 (a decay exp(g) in (0, 1]); got a largest value of {largest}")


def check_within(x: Any, name: str, low: float, high: float, why: str) -> Any:
    """Every entry of ``x`` in [low, high] (``high`` may be inf), else a ValueError naming ``x``
    with ``why`` the range matters."""
    smallest, largest = extreme(x, "min"), extreme(x, "max")
    if smallest < low or largest > high:
        wanted = f"be >= {low}" if high == np.inf else f"lie in [{low}, {high}]"
        raise ValueError(f"{name} must {wanted} ({why}); got values in [{smallest}, {largest}]")
    return x


def check_per_step_range(x: Any, name: str, q: Any, low: float, high: float, what: str, why: str) -> Any:
    """One ``what`` per step, [..., N], every entry in [low, high] (see :func:`check_within`)."""
    return check_within(check_per_step(x, name, q, ("scalar",), what), name, low, high, why)


def check_beta(beta: Any, q: Any) -> Any:
    """Delta-rule step sizes β in [0, 2], one per step: [..., N]."""
    return check_per_step_range(beta, "beta", q, 0, 2, "step size in [0, 2]",
                                "with unit-norm keys, I - β k kᵀ then never amplifies the state")


def check_initial_state(state: Any, q: Any, v: Any, name: str = "initial_state") -> Any:
    """A state [..., d_k, d_v] with q's leading axes, kind and dtype; None passes."""
    if state is None:
        return None
    return check_state_part(state, name, q, tuple(q.shape[:-2]) + (q.shape[-1], v.shape[-1]),
                            "[..., d_k, d_v]")


def check_state_part(x: Any, name: str, like: Any, shape: tuple[int, ...], layout: str) -> Any:
    """``x`` of exactly ``shape``, with ``like``'s kind (numpy or torch) and dtype, finite."""
    x = match_kind(x, name, like)
    if tuple(x.shape) != shape:
        raise ValueError(f"{name} must have shape {list(shape)} ({layout}); got {list(x.shape)}")
    return x


def check_positive_state(s: Any, z: Any, name: str) -> None:
    """A state of a positive feature map: z >= 0 (a sum of positive features), and 0 only in
    rows where S is 0 too (no key there)."""
    if extreme(z, "min") < 0 or bool(((z == 0)[..., None] & (s != 0)).any()):
        raise ValueError(f"{name} z must be >= 0 (a sum of positive key features), and 0 only "
                         "in rows where S is 0 too")
