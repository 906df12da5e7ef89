"""BLAS and exp for the numba kernels (chapter 9): the pieces every fast kernel shares.

- :func:`_gemm`, :func:`_lower_triangle_matmul` and :func:`_unit_lower_solve`: matrix
  products and a triangular solve from the BLAS that scipy ships, called by symbol from
  inside ``@njit`` code on C-contiguous 2-D arrays;
- :func:`_exp_value` and :func:`_exp_nonpositive`: exp of a number <= 0 (or of a flat block
  of them), as a polynomial that vectorises in float32;
- :func:`_chunk_features`: an elementwise feature map (elu+1, relu) applied to one chunk of
  rows in scratch, so a kernel computes its features as it reaches them;
- :func:`one_blas_thread` (from :mod:`lattn_edu._blas`): the context in which the kernels
  run, BLAS on one thread while numba's threads share out the sequences.
"""

from __future__ import annotations

from typing import Any

import llvmlite.binding as llvm
from llvmlite import ir
import numpy as np
from numba import njit, types
from numba.extending import get_cython_function_address, intrinsic, overload

from .._blas import one_blas_thread

# Floating-point freedoms the fast kernels allow LLVM: fused multiply-adds and reordered
# sums (so loops vectorise). Not 'nnan'/'ninf': a 0/0 must stay NaN for linear_attention
# to report it.
_FAST = {"contract", "reassoc", "nsz"}


# BLAS from scipy's bundled library, declared to numba by symbol name (not by address, which
# changes per process) so that kernels calling it can still be cached. Fortran BLAS takes
# every argument by reference and stores matrices by column; the wrappers below hide both,
# and each call names its arguments in the order of the reference BLAS's documentation
# (e.g. SGEMM(TRANSA, TRANSB, M, N, K, ALPHA, A, LDA, B, LDB, BETA, C, LDC)).
def _blas_function(name: str, n_arguments: int) -> Any:
    symbol = f"lattn_edu_{name}"
    llvm.add_symbol(symbol, get_cython_function_address("scipy.linalg.cython_blas", name))
    return types.ExternalFunction(symbol, types.void(*[types.voidptr] * n_arguments))


_sgemm, _dgemm = _blas_function("sgemm", 13), _blas_function("dgemm", 13)
_strmm, _dtrmm = _blas_function("strmm", 11), _blas_function("dtrmm", 11)
_strsm, _dtrsm = _blas_function("strsm", 11), _blas_function("dtrsm", 11)
_NO, _YES = np.uint8(ord("N")), np.uint8(ord("T"))


@njit(cache=True)
def _blas_arguments(dtype):
    """Per-thread scratch for BLAS's by-reference arguments: ints [6], flags [4], alpha/beta [2]."""
    return np.empty(6, np.int32), np.empty(4, np.uint8), np.empty(2, dtype)


@njit(cache=True)
def _gemm(a, b, out, transpose_a, transpose_b, beta, blas):
    """out = op(a) op(b) + beta·out for C-contiguous 2-D arrays (op = transpose when asked).

    BLAS reads a row-major X as the column-major Xᵀ, so it is asked for outᵀ = op(b)ᵀ op(a)ᵀ.
    """
    ints, flags, scalars = blas
    flags[0], flags[1] = _YES if transpose_b else _NO, _YES if transpose_a else _NO
    ints[0], ints[1] = out.shape[1], out.shape[0]  # outᵀ is [n, m]
    ints[2] = a.shape[0] if transpose_a else a.shape[1]  # the inner size
    ints[3], ints[4], ints[5] = max(1, b.shape[1]), max(1, a.shape[1]), max(1, out.shape[1])
    scalars[0], scalars[1] = 1, beta
    arguments = (
        flags[0:].ctypes,  # TRANSA: 'T' to transpose BLAS's A (b's memory, read as bᵀ), else 'N'
        flags[1:].ctypes,  # TRANSB: the same for BLAS's B (a's memory, read as aᵀ)
        ints[0:].ctypes,  # M = out.shape[1]: rows of C = outᵀ
        ints[1:].ctypes,  # N = out.shape[0]: columns of C
        ints[2:].ctypes,  # K: the inner size, a's columns (rows when transposed)
        scalars[0:].ctypes,  # ALPHA = 1
        b.ctypes,  # A: b's memory
        ints[3:].ctypes,  # LDA = b.shape[1]: the stride between b's rows
        a.ctypes,  # B: a's memory
        ints[4:].ctypes,  # LDB = a.shape[1]: the stride between a's rows
        scalars[1:].ctypes,  # BETA = beta: 0 overwrites out, 1 adds into it
        out.ctypes,  # C: out's memory, written in place
        ints[5:].ctypes,  # LDC = out.shape[1]: the stride between out's rows
    )
    if out.itemsize == 4:
        _sgemm(*arguments)
    else:
        _dgemm(*arguments)


@njit(cache=True)
def _lower_triangle_matmul(weights, values, blas):
    """values = tril(weights) values in place, [c, c] and [c, w]; the upper triangle is not read.

    Column-major, valuesᵀ = valuesᵀ tril(weights)ᵀ, and weights' memory read by columns is
    weightsᵀ, upper triangular: trmm with the triangle on the right ('R', 'U').
    """
    ints, flags, scalars = blas
    flags[0], flags[1], flags[2], flags[3] = ord("R"), ord("U"), _NO, _NO
    ints[0], ints[1] = values.shape[1], values.shape[0]
    ints[2], ints[3] = max(1, weights.shape[1]), max(1, values.shape[1])
    scalars[0] = 1
    arguments = (
        flags[0:].ctypes,  # SIDE = 'R': B := B op(A), the triangle on the right
        flags[1:].ctypes,  # UPLO = 'U': A is upper triangular (weights' lower triangle, read by columns)
        flags[2:].ctypes,  # TRANSA = 'N': A as it is
        flags[3:].ctypes,  # DIAG = 'N': the diagonal of A is read, not taken as ones
        ints[0:].ctypes,  # M = values.shape[1]: rows of B = valuesᵀ
        ints[1:].ctypes,  # N = values.shape[0] = c: columns of B, the order of A
        scalars[0:].ctypes,  # ALPHA = 1
        weights.ctypes,  # A: weights' memory
        ints[2:].ctypes,  # LDA = weights.shape[1]: the stride between weights' rows
        values.ctypes,  # B: values' memory, overwritten with the product
        ints[3:].ctypes,  # LDB = values.shape[1]: the stride between values' rows
    )
    if values.itemsize == 4:
        _strmm(*arguments)
    else:
        _dtrmm(*arguments)


@njit(cache=True)
def _unit_lower_solve(matrix, rhs, blas):
    """rhs = (I + strict_tril(matrix))⁻¹ rhs in place, [c, c] and [c, w]: forward substitution
    with a unit diagonal; the diagonal and upper triangle of ``matrix`` are not read.

    Column-major, the system (I + L) X = R is Xᵀ (I + L)ᵀ = Rᵀ, and matrix's memory read by
    columns is its transpose, upper triangular: trsm with the triangle on the right ('R', 'U'),
    not transposed ('N'), unit diagonal ('U').
    """
    ints, flags, scalars = blas
    flags[0], flags[1], flags[2], flags[3] = ord("R"), ord("U"), _NO, ord("U")
    ints[0], ints[1] = rhs.shape[1], rhs.shape[0]  # Rᵀ is [w, c]
    ints[2], ints[3] = max(1, matrix.shape[1]), max(1, rhs.shape[1])
    scalars[0] = 1
    arguments = (
        flags[0:].ctypes,  # SIDE = 'R': solve X op(A) = ALPHA·B, the triangle on the right
        flags[1:].ctypes,  # UPLO = 'U': A is upper triangular (matrix's lower triangle, read by columns)
        flags[2:].ctypes,  # TRANSA = 'N': A as it is
        flags[3:].ctypes,  # DIAG = 'U': A's diagonal taken as ones and not read
        ints[0:].ctypes,  # M = rhs.shape[1]: rows of B = Rᵀ
        ints[1:].ctypes,  # N = rhs.shape[0] = c: columns of B, the order of A
        scalars[0:].ctypes,  # ALPHA = 1
        matrix.ctypes,  # A: matrix's memory
        ints[2:].ctypes,  # LDA = matrix.shape[1]: the stride between matrix's rows
        rhs.ctypes,  # B: rhs's memory, overwritten with the solution X
        ints[3:].ctypes,  # LDB = rhs.shape[1]: the stride between rhs's rows
    )
    if rhs.itemsize == 4:
        _strsm(*arguments)
    else:
        _dtrsm(*arguments)


# exp(x) for x <= 0 in float32 as a polynomial that vectorises (numba's np.exp is a
# scalar call per element here): x = n·ln 2 + t with |t| <= ln 2 / 2, exp(t) by the
# Cephes polynomial, and 2^n built from its exponent bits, in two factors so that
# results below the smallest normal float (x < -87.3) come out as numpy's do. It is a
# function of one number, so a kernel computes its exponents and their exp in one loop,
# without a scratch array between them.
_LOG2E = np.float32(1.4426950408889634)
_LN2_HI, _LN2_LO = np.float32(0.693359375), np.float32(-2.12194440e-4)
_EXP_POLY = (np.float32(1.9875691500e-4), np.float32(1.3981999507e-3), np.float32(8.3334519073e-3),
             np.float32(4.1665795894e-2), np.float32(1.6666665459e-1), np.float32(5.0000001201e-1))


@intrinsic
def _power_of_two(typingctx, n):
    """2^n as a float32, for a float32 n holding an integer in [-126, 127]: the bits
    (n + 127) << 23 read as a float (an integer shift and a bit cast, which vectorise)."""
    if n != types.float32:
        return None

    def codegen(context, builder, signature, arguments):
        biased = builder.fptosi(builder.fadd(arguments[0], ir.Constant(ir.FloatType(), 127.0)), ir.IntType(32))
        return builder.bitcast(builder.shl(biased, ir.Constant(ir.IntType(32), 23)), ir.FloatType())
    return types.float32(types.float32), codegen


@njit(cache=True, fastmath=_FAST)
def _exp_nonpositive_float32(x):
    """exp(min(x, 0)) for one float32 x, the polynomial; 0 below -104 (exp(-104) is 0 in float32)."""
    c0, c1, c2, c3, c4, c5 = _EXP_POLY
    y = min(max(x, np.float32(-104.0)), np.float32(0.0))
    power = np.floor(y * _LOG2E + np.float32(0.5))
    t = y - power * _LN2_HI - power * _LN2_LO  # |t| <= ln 2 / 2
    p = ((((c0 * t + c1) * t + c2) * t + c3) * t + c4) * t + c5
    top = max(power, np.float32(-126.0))  # 2^power as 2^top · 2^(power - top), both normal floats
    return (p * t * t + t + np.float32(1.0)) * _power_of_two(top) * _power_of_two(power - top)


def _exp_value(x, fast_exp):
    """exp(min(x, 0)) for one number: the float32 polynomial when ``fast_exp``, else np.exp."""
    return np.exp(min(x, 0.0))


@overload(_exp_value, jit_options={"fastmath": _FAST})
def _exp_value_of_type(x, fast_exp):
    if x == types.float32:
        def exp_float32(x, fast_exp):
            return _exp_nonpositive_float32(x) if fast_exp else np.exp(min(x, np.float32(0.0)))
        return exp_float32
    return lambda x, fast_exp: np.exp(min(x, 0.0))


@njit(cache=True, fastmath=_FAST)
def _exp_nonpositive(x, n, fast_exp):
    """x[:n] = exp(min(x[:n], 0)) in place, flat [n]: the vectorised float32 polynomial, or np.exp."""
    for i in range(n):
        x[i] = _exp_value(x[i], fast_exp)


# The elementwise feature maps a kernel can apply to a chunk itself (the names of
# lattn_edu.feature_maps), as the codes the kernels take.
FEATURE_CODES = {"identity": 0, "elu+1": 1, "relu": 2}


@njit(cache=True, fastmath=_FAST)
def _probe(x):
    """Σ x·0 over a 2-D block: 0 if it is finite, NaN if it holds a NaN or an inf (a finiteness
    check from a pass that reads the block anyway)."""
    probe = x.dtype.type(0)
    for i in range(x.shape[0]):
        for r in range(x.shape[1]):
            probe += x[i, r] * 0
    return probe


@njit(cache=True, fastmath=_FAST)
def _elu_plus_one_block(x, out, fast_exp):
    """out = elu(x) + 1 for a block [c, m]: exp(x) where x <= 0, x + 1 elsewhere; returns the
    block's finiteness probe, from the pass that copies it."""
    probe = x.dtype.type(0)
    for i in range(x.shape[0]):
        for r in range(x.shape[1]):
            out[i, r] = x[i, r]
            probe += x[i, r] * 0
    _exp_nonpositive(out.reshape(out.size), out.size, fast_exp)  # exp(min(x, 0))
    for i in range(x.shape[0]):
        for r in range(x.shape[1]):
            if x[i, r] > 0:
                out[i, r] += x[i, r]  # exp(0) = 1 exactly, so this is x + 1
    return probe


@njit(cache=True, fastmath=_FAST)
def _chunk_features(x, start, stop, feature, fast_exp, scratch):
    """Rows start:stop of one sequence's features [c, m], and the rows' finiteness probe:
    x itself (feature 0), elu(x) + 1 (1) or max(x, 0) (2), the last two in scratch."""
    block = x[start:stop]
    if feature == 0:
        return block, _probe(block)
    features = scratch[:block.size].reshape(block.shape)
    if feature == 1:
        return features, _elu_plus_one_block(block, features, fast_exp)
    probe = x.dtype.type(0)
    for i in range(block.shape[0]):
        for r in range(block.shape[1]):
            features[i, r] = max(block[i, r], 0)
            probe += block[i, r] * 0
    return features, probe
