"""The input checks every public function shares (lattn_edu._checks): each accepts good input
unchanged (or converted as documented), and refuses bad input with a TypeError or ValueError
whose message names the argument, what it got and what it needs."""

from __future__ import annotations

import math
import re

import array_api_compat
import numpy as np
import pytest

from lattn_edu import _checks as checks

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(20261201)
LEAD, N, N_Q, D, D_V = (2, 3), 7, 5, 5, 3  # odd sizes, d != d_v, N_q != N
Q = RNG.standard_normal(LEAD + (N, D))
Q_SHORT = RNG.standard_normal(LEAD + (N_Q, D))
K = RNG.standard_normal(LEAD + (N, D))
V = RNG.standard_normal(LEAD + (N, D_V))
G = -RNG.uniform(0, 1, LEAD + (N,))           # a log decay per step, <= 0
G_VECTOR = -RNG.uniform(0, 1, LEAD + (N, D))  # a log decay per step and key channel
BETA = RNG.uniform(0, 2, LEAD + (N,))
GATE = BETA / 2  # in [0, 1]
STATE = RNG.standard_normal(LEAD + (D, D_V))


def with_nan(x: np.ndarray, index: int = 3) -> np.ndarray:
    x = x.copy()
    x.flat[index] = np.nan
    return x


def assert_refused(call, error: type[Exception], *says: str) -> str:
    """``call()`` raises ``error`` whose message contains every fragment of ``says``."""
    with pytest.raises(error) as raised:
        call()
    message = str(raised.value)
    missing = [fragment for fragment in says if fragment not in message]
    assert not missing, f"message {message!r} lacks {missing}"
    return message


# ---- kinds and dtypes -----------------------------------------------------------------------

def test_kind_and_dtype_are_read_from_numpy_and_torch_alike():
    tensor = torch.from_numpy(Q.astype(np.float32))
    assert not checks.is_torch_tensor(Q) and checks.is_torch_tensor(tensor)
    assert not checks.is_torch_tensor([1.0]) and not checks.is_torch_tensor(None)
    # the array API namespaces (array-api-compat's wrappers) of numpy and of torch; None is skipped
    assert array_api_compat.is_numpy_namespace(checks.array_namespace(Q, None))
    assert array_api_compat.is_torch_namespace(checks.array_namespace(tensor))
    assert checks.dtype_name(Q) == "float64" and checks.dtype_name(tensor) == "float32"
    assert checks.dtype_name(np.arange(3)) == "int64"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_as_float_array_keeps_float_arrays_and_tensors(dtype):
    x = Q.astype(dtype)
    assert checks.as_float_array(x, "q") is x
    tensor = torch.from_numpy(x)
    assert checks.as_float_array(tensor, "q") is tensor


def test_as_float_array_reads_lists_and_big_endian_data_as_their_values():
    listed = checks.as_float_array([[0.5, -1.5, 2.0]], "q")
    assert listed.dtype == np.float64 and listed.tolist() == [[0.5, -1.5, 2.0]]
    big = Q.astype(">f8")
    native = checks.as_float_array(big, "q")
    assert native.dtype.isnative and native.dtype == np.float64
    np.testing.assert_array_equal(native, Q)


@pytest.mark.parametrize("bad, got", [
    ("abc", "got str"), (b"abc", "got bytes"), (None, "got NoneType"),
    (np.arange(7), "got int64"), (np.ones(3, dtype=np.float16), "got float16"),
    (np.ones(3, dtype=bool), "got bool"), (np.ones(3, dtype=np.complex128), "got complex128"),
    (torch.arange(7), "got int64"), (torch.ones(3, dtype=torch.bfloat16), "got bfloat16"),
])
def test_as_float_array_refuses_what_is_not_float32_or_float64(bad, got):
    assert_refused(lambda: checks.as_float_array(bad, "keys"), TypeError, "keys must", "float32 or float64", got)


# ---- finiteness -----------------------------------------------------------------------------

@pytest.mark.parametrize("x", [Q, Q.astype(np.float32), np.zeros((0, 5)), torch.from_numpy(Q)],
                         ids=["float64", "float32", "empty", "tensor"])
def test_check_finite_accepts_finite_arrays(x):
    assert checks.check_finite(x, "q") is None


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_check_finite_names_the_argument_holding_nan_or_inf(value, kind):
    x = Q.copy()
    x[1, 2, 6, 4] = value  # the last entry: a check that stops early would miss it
    x = torch.from_numpy(x) if kind == "torch" else x
    assert_refused(lambda: checks.check_finite(x, "values"), ValueError, "values must be finite", "NaN or inf")


def test_nonfinite_errors_say_what_to_change():
    assert "phi_k must be finite; got an array with NaN or inf" in str(checks.nonfinite_error("phi_k"))
    message = str(checks.nonfinite_output_error("relu", 0.0))
    assert "feature_map='relu'" in message and "eps=0.0" in message and "eps > 0" in message
    overflow = str(checks.overflow_error())
    assert "overflowed" in overflow and "rescale them or use float64" in overflow
    positive = str(checks.positive_log_decay_error(0.5))
    assert positive == "log_decay must be <= 0 (a decay exp(g) in (0, 1]); got a largest value of 0.5"


def test_check_log_decay_can_leave_the_values_to_a_kernel():
    # a kernel that reads the decays anyway checks their values; the shape and dtype still here
    for bad in (np.nan, 0.5):
        assert checks.check_log_decay(np.full(LEAD + (N,), bad), Q, values=False) is not None
    assert_refused(lambda: checks.check_log_decay(G[..., :6], Q, values=False), ValueError, "does not broadcast")


# ---- sequences, and q, k, v together --------------------------------------------------------

def test_check_sequence_returns_a_valid_sequence():
    assert checks.check_sequence(Q, "q") is Q
    assert checks.check_sequence(Q[0, 0], "q").shape == (N, D)
    nan = with_nan(Q)
    assert checks.check_sequence(nan, "q", finite=False) is nan  # the caller checks finiteness itself


@pytest.mark.parametrize("bad, error, got", [
    (np.ones(5), ValueError, "got shape (5,)"),
    (np.ones((0, 5)), ValueError, "got shape (0, 5)"),
    (np.ones((3, 0)), ValueError, "got shape (3, 0)"),
    (with_nan(Q), ValueError, "NaN or inf"),
    (np.ones((3, 5), dtype=int), TypeError, "got int64"),
])
def test_check_sequence_refuses_a_bad_sequence(bad, error, got):
    assert_refused(lambda: checks.check_sequence(bad, "k"), error, "k must", got)


def test_check_sequence_needs_min_ndim():
    assert_refused(lambda: checks.check_sequence(Q[0], "q", min_ndim=4), ValueError,
                   "q must have shape [..., N, d] (at least 4 dims)", f"got shape {Q[0].shape}")


def test_check_qkv_accepts_matching_q_k_v():
    q, k, v = checks.check_qkv(Q, K, V, causal=True)
    assert q is Q and k is K and v is V
    assert checks.check_qkv(Q_SHORT, K, V, causal=False)[0] is Q_SHORT  # N_q != N without a mask
    f32 = [torch.from_numpy(x.astype(np.float32)) for x in (Q, K, V)]
    assert all(a is b for a, b in zip(checks.check_qkv(*f32, causal=True), f32))


QKV_REFUSALS = {
    "k's d": ((Q, K[..., :4], V, False), ValueError,
              ["k must have the same feature size d as q", "d=5", "(2, 3, 7, 4)", "[..., N, 5]"]),
    "causal lengths": ((Q_SHORT, K, V, True), ValueError,
                       ["causal attention needs q and k of the same length N", "N=5", "N=7"]),
    "v's length": ((Q, K, V[..., :6, :], False), ValueError,
                   ["v must have the same length N as k", "N=7", "(2, 3, 6, 3)", "[..., 7, d_v]"]),
    "numpy and torch": ((Q, torch.from_numpy(K), V, False), TypeError,
                        ["q, k must all be numpy arrays or all be torch tensors", "ndarray, Tensor"]),
    "dtypes": ((Q, K, V.astype(np.float32), False), TypeError,
               ["q, k, v must share one dtype", "float64, float64, float32"]),
    "ndim": ((Q, K[0], V, False), ValueError,
             ["q, k must have the same number of dims", "(2, 3, 7, 5), (3, 7, 5)"]),
    "leading axes": ((Q, K[:1], V, False), ValueError,
                     ["q, k must have the same leading (batch, head) axes", "(2, 3, 7, 5), (1, 3, 7, 5)"]),
    "v's kind": ((Q, K, torch.from_numpy(V), False), TypeError, ["v must all be numpy arrays", "Tensor"]),
    "nan in v": ((Q, K, with_nan(V), False), ValueError, ["v must be finite"]),
}


@pytest.mark.parametrize("case", QKV_REFUSALS)
def test_check_qkv_refuses_mismatched_q_k_v(case):
    args, error, says = QKV_REFUSALS[case]
    assert_refused(lambda: checks.check_qkv(*args), error, *says)


def test_check_qk_refuses_before_looking_at_v():
    assert_refused(lambda: checks.check_qk(Q_SHORT, K, causal=True), ValueError, "same length N")
    assert checks.check_qk(with_nan(Q), K, causal=False, finite=False)[1] is K


# ---- scalar parameters ----------------------------------------------------------------------

@pytest.mark.parametrize("value", [1, 7, 64, np.int64(63), np.int32(5)])
def test_check_positive_int_accepts_ints(value):
    got = checks.check_positive_int(value, "chunk_size")
    assert got == value and type(got) is int


@pytest.mark.parametrize("value, error, got", [
    (0, ValueError, "got 0"), (-3, ValueError, "got -3"),
    (True, TypeError, "got bool True"), (2.0, TypeError, "got float 2.0"),
    ("8", TypeError, "got str '8'"), (None, TypeError, "got NoneType None"),
])
def test_check_positive_int_refuses_the_rest(value, error, got):
    assert_refused(lambda: checks.check_positive_int(value, "chunk_size"), error,
                   "chunk_size must be a positive int", got)


@pytest.mark.parametrize("value", [0, 0.0, 1e-6, 3, np.float32(0.25), np.int64(2)])
def test_check_nonnegative_float_accepts_finite_reals(value):
    got = checks.check_nonnegative_float(value, "eps")
    assert got == float(value) and type(got) is float


@pytest.mark.parametrize("value, error, says", [
    (-1e-9, ValueError, ["eps must be finite and >= 0", "got -1e-09"]),
    (math.inf, ValueError, ["eps must be finite and >= 0", "got inf"]),
    (math.nan, ValueError, ["eps must be finite and >= 0", "got nan"]),
    (False, TypeError, ["eps must be a real number", "got bool False"]),
    ("1e-6", TypeError, ["eps must be a real number", "got str '1e-6'"]),
    (None, TypeError, ["eps must be a real number", "got NoneType None"]),
    (1j, TypeError, ["eps must be a real number", "got complex 1j"]),
])
def test_check_nonnegative_float_refuses_the_rest(value, error, says):
    assert_refused(lambda: checks.check_nonnegative_float(value, "eps"), error, *says)


FORMS = ("quadratic", "parallel", "recurrent", "chunkwise")


@pytest.mark.parametrize("value", FORMS)
def test_check_choice_accepts_every_choice(value):
    assert checks.check_choice(value, "form", FORMS) == value


@pytest.mark.parametrize("value, got", [("Parallel", "'Parallel'"), ("", "''"), (None, "None"),
                                        (1, "1"), (("parallel",), "('parallel',)")])
def test_check_choice_lists_the_choices(value, got):
    assert_refused(lambda: checks.check_choice(value, "form", FORMS), ValueError,
                   "form must be one of 'quadratic', 'parallel', 'recurrent', 'chunkwise'", f"got {got}")


@pytest.mark.parametrize("value", [True, False, np.bool_(True), np.bool_(False)])
def test_check_bool_accepts_bools(value):
    got = checks.check_bool(value, "causal")
    assert got == bool(value) and type(got) is bool


@pytest.mark.parametrize("value, got", [(1, "int 1"), (0, "int 0"), ("True", "str 'True'"),
                                        (None, "NoneType None"), (np.array([True]), "ndarray")])
def test_check_bool_refuses_look_alikes(value, got):
    assert_refused(lambda: checks.check_bool(value, "causal"), TypeError, "causal must be True or False", got)


@pytest.mark.parametrize("value", [1.0, 0.5, 1, np.array([0.9, 0.99, 1.0]), RNG.uniform(0.01, 1, (3, 1))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_check_decay_values_returns_decays_in_the_dtype(value, dtype):
    got = checks.check_decay_values(value, "gamma", np.dtype(dtype))
    assert got.dtype == dtype and got.shape == np.shape(value)
    np.testing.assert_allclose(got, value, rtol=1e-7)


@pytest.mark.parametrize("value, error, says", [
    (0.0, ValueError, ["gamma must lie in (0, 1]", "got values in [0.0, 0.0]"]),
    (1.5, ValueError, ["gamma must lie in (0, 1]", "[1.5, 1.5]"]),
    (np.array([0.5, -0.1, 0.9]), ValueError, ["gamma must lie in (0, 1]", "[-0.1, 0.9]"]),
    (np.array([0.5, np.nan]), ValueError, ["gamma must lie in (0, 1]"]),
    (True, TypeError, ["gamma must be a float or a numpy array of floats", "got bool"]),
    ("0.9", TypeError, ["gamma must be a float or a numpy array of floats", "got str"]),
    (None, TypeError, ["gamma must be a float or a numpy array of floats", "got NoneType"]),
    (torch.tensor([0.9]), TypeError, ["gamma must be a float or a numpy array of floats", "got Tensor"]),
    (np.array([0.9 + 0j]), TypeError, ["gamma must be a float or a numpy array of floats",
                                       "got dtype complex128"]),
])
def test_check_decay_values_refuses_decays_outside_0_1(value, error, says):
    assert_refused(lambda: checks.check_decay_values(value, "gamma", np.dtype(np.float64)), error, *says)


@pytest.mark.parametrize("d_k", [1, 5, 64])
def test_check_scale_defaults_to_one_over_root_d_k(d_k):
    assert checks.check_scale(None, d_k) == pytest.approx(d_k ** -0.5, rel=1e-15)
    assert checks.check_scale(0.3, d_k) == 0.3 and type(checks.check_scale(np.float32(2), d_k)) is float


@pytest.mark.parametrize("value, error, got", [
    (0, ValueError, "got 0"), (-0.5, ValueError, "got -0.5"), (math.inf, ValueError, "got inf"),
    (math.nan, ValueError, "got nan"), (True, TypeError, "got bool True"), ("1", TypeError, "got str '1'"),
])
def test_check_scale_refuses_what_is_not_a_positive_real(value, error, got):
    message = assert_refused(lambda: checks.check_scale(value, 5), error, "scale must be", got)
    assert ("> 0" in message) if error is ValueError else ("real number or None" in message)


# ---- per-step gates: log decay and beta -----------------------------------------------------

@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_check_log_decay_takes_a_scalar_or_a_vector_per_step(kind):
    convert = torch.from_numpy if kind == "torch" else (lambda x: x)
    q = convert(Q)
    assert checks.check_log_decay(None, q) is None
    for g in (G, G_VECTOR):
        got = checks.check_log_decay(convert(g), q)
        assert tuple(got.shape) == g.shape and np.array_equal(np.asarray(got), g)
    # leading axes broadcast against q's: one decay sequence shared by every head
    shared = checks.check_log_decay(convert(G[:1, :1]), q)
    assert tuple(shared.shape) == LEAD + (N,)
    assert np.array_equal(np.asarray(shared)[1, 2], G[0, 0])


def test_check_log_decay_vector_can_be_refused():
    assert_refused(lambda: checks.check_log_decay(G_VECTOR, Q, vector=False), ValueError,
                   "log_decay must have shape [2, 3, 7] (one log decay g <= 0 per step)",
                   "for q of shape [2, 3, 7, 5]", "got [2, 3, 7, 5]")


LOG_DECAY_REFUSALS = {
    "positive": (-G, ValueError, ["log_decay must be <= 0", "largest value of"]),
    "wrong N": (G[..., :6], ValueError, ["log_decay of shape [2, 3, 6] does not broadcast to [2, 3, 7]",
                                         "q has shape [2, 3, 7, 5]"]),
    "extra axis": (G_VECTOR[..., None], ValueError, ["log_decay must have shape [2, 3, 7] or [2, 3, 7, 5]",
                                                     "got [2, 3, 7, 5, 1]"]),
    "too few dims": (G[0, 0], ValueError, ["log_decay must have shape", "got [7]"]),
    "does not broadcast": (np.concatenate([G, G]), ValueError,
                           ["log_decay of shape [4, 3, 7] does not broadcast to [2, 3, 7]",
                            "q has shape [2, 3, 7, 5]"]),
    "dtype": (G.astype(np.float32), TypeError, ["log_decay must have q's dtype float64", "got float32"]),
    "kind": (torch.from_numpy(G), TypeError, ["log_decay must be a ndarray like q", "got Tensor"]),
    "int": (np.zeros(LEAD + (N,), dtype=int), TypeError, ["log_decay must have dtype float32 or float64"]),
    "nan": (with_nan(G), ValueError, ["log_decay must be finite"]),
}


@pytest.mark.parametrize("case", LOG_DECAY_REFUSALS)
def test_check_log_decay_refuses_bad_gates(case):
    value, error, says = LOG_DECAY_REFUSALS[case]
    assert_refused(lambda: checks.check_log_decay(value, Q), error, *says)


def test_check_beta_takes_one_step_size_in_0_2_per_step():
    assert np.array_equal(checks.check_beta(BETA, Q), BETA)
    edges = np.where(np.arange(N) % 2 == 0, 0.0, 2.0) * np.ones(LEAD + (N,))
    assert np.array_equal(checks.check_beta(edges, Q), edges)


@pytest.mark.parametrize("value, says", [
    (BETA + 2.01, ["beta must lie in [0, 2]", "got values in ["]),
    (BETA - 2.01, ["beta must lie in [0, 2]"]),
    (np.broadcast_to(BETA[..., None], LEAD + (N, D)), ["beta must have shape [2, 3, 7] (one step size",
                                                      "got [2, 3, 7, 5]"]),
    (with_nan(BETA), ["beta must be finite"]),
])
def test_check_beta_refuses_bad_step_sizes(value, says):
    assert_refused(lambda: checks.check_beta(value, Q), ValueError, *says)


def test_check_per_step_says_what_each_step_holds():
    assert checks.check_per_step(BETA, "rate", Q, ("scalar",), "rate in [0, 1]") is not None
    assert_refused(lambda: checks.check_per_step(BETA[0], "rate", Q, ("scalar",), "rate in [0, 1]"),
                   ValueError, "rate must have shape [2, 3, 7] (one rate in [0, 1] per step)", "got [3, 7]")


def test_a_per_step_gate_of_the_full_shape_is_passed_on_as_it_is():
    # a broadcast view is read-only, and the compiled kernels would copy it on every call
    full = checks.check_per_step(G_VECTOR, "log_decay", Q, ("scalar", "vector"), "log decay g <= 0")
    assert full is G_VECTOR
    shared = checks.check_per_step(G_VECTOR[:1], "log_decay", Q, ("scalar", "vector"), "log decay g <= 0")
    assert shared.shape == G_VECTOR.shape and np.shares_memory(shared, G_VECTOR)
    assert np.array_equal(shared[1], G_VECTOR[0])


def test_extreme_reads_numpy_and_torch_tensors_with_gradients():
    tensor = torch.from_numpy(G).requires_grad_()
    assert checks.extreme(G, "max") == G.max() and checks.extreme(tensor, "min") == G.min()
    assert type(checks.extreme(tensor, "max")) is float


# ---- states ---------------------------------------------------------------------------------

def test_check_initial_state_takes_a_state_of_q_and_v():
    assert checks.check_initial_state(None, Q, V) is None
    assert checks.check_initial_state(STATE, Q, V) is STATE
    tensors = [torch.from_numpy(x) for x in (STATE, Q, V)]
    assert checks.check_initial_state(*tensors) is tensors[0]


STATE_REFUSALS = {
    "shape": (STATE[..., :2], ValueError, ["initial_state must have shape [2, 3, 5, 3] ([..., d_k, d_v])",
                                           "got [2, 3, 5, 2]"]),
    "lead": (STATE[0], ValueError, ["initial_state must have shape [2, 3, 5, 3]", "got [3, 5, 3]"]),
    "dtype": (STATE.astype(np.float32), TypeError, ["initial_state must have q's dtype float64",
                                                    "got float32"]),
    "kind": (torch.from_numpy(STATE), TypeError, ["initial_state must be a ndarray like q", "got Tensor"]),
    "nan": (with_nan(STATE), ValueError, ["initial_state must be finite"]),
    "text": ("S", TypeError, ["initial_state must be a float32 or float64 array", "got str"]),
}


@pytest.mark.parametrize("case", STATE_REFUSALS)
def test_check_initial_state_refuses_a_state_that_does_not_fit(case):
    value, error, says = STATE_REFUSALS[case]
    assert_refused(lambda: checks.check_initial_state(value, Q, V), error, *says)


def test_check_state_part_names_the_part_and_its_layout():
    z = RNG.standard_normal(LEAD + (D,))
    assert checks.check_state_part(z, "z", Q, LEAD + (D,), "[..., m]") is z
    assert_refused(lambda: checks.check_state_part(z[..., :4], "z", Q, LEAD + (D,), "[..., m]"),
                   ValueError, "z must have shape [2, 3, 5] ([..., m])", "got [2, 3, 4]")


def test_check_positive_state_wants_z_nonnegative_and_zero_only_with_s_zero():
    s, z = np.abs(RNG.standard_normal(LEAD + (D, D_V))), np.abs(RNG.standard_normal(LEAD + (D,)))
    checks.check_positive_state(s, z, "initial_state")  # a state of positive features passes
    empty_s, empty_z = s.copy(), z.copy()
    empty_s[0, 1, 2], empty_z[0, 1, 2] = 0.0, 0.0  # a row with no key: S and z both 0
    checks.check_positive_state(empty_s, empty_z, "initial_state")
    for bad_s, bad_z in ((s, -z), (s, empty_z)):
        assert_refused(lambda: checks.check_positive_state(bad_s, bad_z, "initial_state"), ValueError,
                       "initial_state z must be >= 0", "0 only in rows where S is 0 too")


def test_every_check_is_tested_here():
    """A check added to _checks.py without a test here fails this test."""
    public = {name for name, value in vars(checks).items() if not name.startswith("_")
              and callable(value) and getattr(value, "__module__", "") == checks.__name__}
    source = open(__file__, encoding="utf-8").read()
    untested = sorted(name for name in public if not re.search(rf"checks\.{name}\(", source))
    assert not untested, f"no test calls {untested}"


def test_match_kind_wants_qs_array_kind_dtype_and_finite_values():
    assert checks.match_kind(Q[..., 0], "beta", Q).dtype == Q.dtype
    assert_refused(lambda: checks.match_kind(Q.astype(np.float32), "beta", Q), TypeError,
                   "beta must have q's dtype float64", "got float32")
    assert_refused(lambda: checks.match_kind(np.full(3, np.nan), "beta", Q), ValueError, "beta")
    torch = pytest.importorskip("torch")
    assert_refused(lambda: checks.match_kind(torch.zeros(3, dtype=torch.float64), "beta", Q), TypeError,
                   "beta must be a ndarray like q", "got Tensor")


def test_check_within_names_the_range_and_why():
    assert checks.check_within(GATE, "gate", 0, 1, "a sigmoid") is GATE
    assert_refused(lambda: checks.check_within(GATE + 1.5, "gate", 0, 1, "a sigmoid"), ValueError,
                   "gate must lie in [0, 1] (a sigmoid)", "got values in [")
    assert_refused(lambda: checks.check_within(-GATE - 0.1, "rate", 0, np.inf, "learning rate"), ValueError,
                   "rate must be >= 0 (learning rate)")


def test_check_per_step_range_wants_one_value_per_step_in_range():
    assert np.array_equal(checks.check_per_step_range(GATE, "gate", Q, 0, 1, "input gate", "a sigmoid"), GATE)
    assert_refused(lambda: checks.check_per_step_range(GATE[..., None], "gate", Q, 0, 1, "input gate", "a sigmoid"),
                   ValueError, "gate must have shape [2, 3, 7] (one input gate per step)")
    assert_refused(lambda: checks.check_per_step_range(GATE + 1.5, "gate", Q, 0, 1, "input gate", "a sigmoid"),
                   ValueError, "gate must lie in [0, 1] (a sigmoid)")


def test_broadcast_to_target_returns_a_view_or_names_the_shapes():
    row = np.arange(D, dtype=float)
    assert checks.broadcast_to_target(row, "ridge", LEAD + (D,), "one per channel").shape == LEAD + (D,)
    assert_refused(lambda: checks.broadcast_to_target(row[:2], "ridge", LEAD + (D,), "one per channel"),
                   ValueError, "ridge of shape [2] does not broadcast to [2, 3, 5] (one per channel)")
