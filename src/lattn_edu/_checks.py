"""Input checks shared by every public function (DESIGN §8).

Each check raises a ``ValueError`` or ``TypeError`` that names the argument,
what it got and what it needs, so a reader's mistake never turns into a silent
NaN or a wrong answer. The checks accept numpy arrays and torch tensors alike.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

FLOAT_DTYPES = ("float32", "float64")


def is_torch_tensor(x: Any) -> bool:
    """True for a ``torch.Tensor`` without importing torch."""
    return type(x).__module__.startswith("torch") and hasattr(x, "detach")


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
    """The error for a linear-attention output with NaN or inf: no silent NaN (DESIGN §8)."""
    return ValueError(
        f"linear attention produced NaN or inf: a denominator φ(q_i)ᵀz_i + eps was 0 or "
        f"the features overflowed (feature_map={feature_map!r}, eps={eps}). Use eps > 0 "
        f"and a positive feature map such as 'elu+1'.")


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
