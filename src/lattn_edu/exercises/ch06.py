"""Exercises for chapter 6: feature maps, elu+1 and positive random features (FAVOR+).

The checkers compare against the package: ``la.FavorPlus`` for the features and their
rescaling, ``la.linear_attention`` for the attention output.
"""

from __future__ import annotations

import numpy as np

import lattn_edu as la

from .base import Exercise, _as_array, assert_matches, check_function, code_exercise, value_exercise


def solution_favor_features(x, W):
    """φ(x)_r = exp(w_r·x - ||x||²/2) / √m for the rows w_r of W [m, d]: [..., d] -> [..., m]."""
    m = W.shape[0]
    return np.exp(x @ W.T - 0.5 * (x * x).sum(-1, keepdims=True)) / np.sqrt(m)


def _favor_cases():
    """(feature map, input) pairs: the projection W is the map's own."""
    rng = np.random.default_rng(6)
    return [(la.FavorPlus(16, 32, seed=0), rng.standard_normal((5, 16)) * 16**-0.25),
            (la.FavorPlus(5, 7, seed=1), rng.standard_normal((1, 5))),  # N = 1, m not a multiple of d
            (la.FavorPlus(3, 9, orthogonal=False, seed=2), rng.standard_normal((2, 11, 3))),
            (la.FavorPlus(8, 13, seed=3), (rng.standard_normal((9, 8)) * 8**-0.25).astype(np.float32)),
            (la.FavorPlus(4, 6, seed=4), rng.standard_normal(4))]  # one vector [d]


def _check_favor_features(answer):
    for feature_map, x in _favor_cases():
        check_function(answer, lambda x, W, feature_map=feature_map: feature_map(x),
                       [{"x": x, "W": feature_map.projection}], rtol=1e-5)


def solution_favor_attention(q, k, v, m, seed):
    """Non-causal FAVOR+ estimate of softmax attention: features of d^(-1/4)·q and d^(-1/4)·k."""
    d = q.shape[-1]
    return la.linear_attention(q * d**-0.25, k * d**-0.25, v, feature_map=la.FavorPlus(d, m, seed=seed))


def _attention_cases():
    rng = np.random.default_rng(61)
    cases = [(64, 16, 8, 32, 0), (1, 5, 3, 7, 1), (37, 9, 5, 20, 2)]  # (N, d, d_v, m, seed)
    out = [{"q": rng.standard_normal((n, d)), "k": rng.standard_normal((n, d)),
            "v": rng.standard_normal((n, d_v)), "m": m, "seed": seed} for n, d, d_v, m, seed in cases]
    q, k, v = (rng.standard_normal((48, 12)).astype(np.float32) for _ in range(3))
    return out + [{"q": q, "k": k, "v": v, "m": 24, "seed": 3}]


def solution_rescaled_features(q, k, W):
    """(φ(q)/c_q, φ(k)/c_k) computed in log space: c_q is each query's largest feature,
    c_k the largest key feature of the whole sequence."""
    def log_phi(x):
        return x @ W.T - 0.5 * (x * x).sum(-1, keepdims=True) - 0.5 * np.log(W.shape[0])

    log_q, log_k = log_phi(q), log_phi(k)  # [N_q, m], [N, m]
    return (np.exp(log_q - log_q.max(-1, keepdims=True)),
            np.exp(log_k - log_k.max()))


def _rescaled_cases():
    rng = np.random.default_rng(62)
    specs = [(16, 32, 6, 0, 1.0, np.float64),  # (d, m, N, seed, input scale, dtype)
             (5, 9, 1, 1, 1.0, np.float64),  # N = 1
             (7, 11, 13, 2, 3.0, np.float64),
             (16, 64, 20, 3, 5.0, np.float32)]  # plain float32 features underflow to 0 here
    return [(la.FavorPlus(d, m, seed=seed),
             (scale * rng.standard_normal((n, d))).astype(dtype),
             (scale * rng.standard_normal((n, d))).astype(dtype))
            for d, m, n, seed, scale, dtype in specs]


def _check_rescaled_features(answer):
    for feature_map, q, k in _rescaled_cases():
        check_function(answer,
                       lambda q, k, W, feature_map=feature_map: feature_map.rescaled_features(q, k)[:2],
                       [{"q": q, "k": k, "W": feature_map.projection}], rtol=1e-4, outputs=2)


# eq-ch06-variance for unit q and k with q·k = 0.5: ||q + k||² = 1 + 2·0.5 + 1 = 3.
RELATIVE_MSE = (np.exp(3.0) - 1) / 16

# The smallest m with (e³ - 1) / m <= 0.1², a relative RMS error of at most 10%.
FEATURES_FOR_TEN_PERCENT = int(np.ceil((np.exp(3.0) - 1) / 0.1**2))


def solution_favor_variance(q, k, m):
    """Var[φ(q)·φ(k)] for m iid FAVOR+ directions: e^(2 q·k) (e^(||q+k||²) - 1) / m.

    One term e^(w·(q+k) - (||q||² + ||k||²)/2) has mean e^(q·k) and, by the Gaussian
    moment-generating function at u = 2(q + k), second moment e^(2 q·k) e^(||q+k||²);
    the m terms are independent, so the variance of their mean is 1/m of one term's.
    """
    return np.exp(2 * q @ k) * np.expm1(((q + k) ** 2).sum()) / m


def _variance_cases():
    rng = np.random.default_rng(63)
    cases = [{"q": 0.5 * rng.standard_normal(d), "k": 0.5 * rng.standard_normal(d), "m": m}
             for d, m in [(3, 8), (16, 64), (7, 1), (1, 5)]]
    return cases + [{"q": np.zeros(4), "k": rng.standard_normal(4), "m": 2}]  # q = 0


def measured_favor_variance(q, k, m, draws=20_000, seed=0):
    """The variance of φ(q)·φ(k) over ``draws`` independent sets of m iid directions.

    One wide map with m·draws iid directions is cut into groups of m: each group is an
    independent FAVOR+ map of width m, once its 1/(m·draws) is turned into 1/m.
    """
    wide = la.FavorPlus(q.shape[-1], m * draws, orthogonal=False, seed=seed)
    products = (wide(q) * wide(k)).reshape(draws, m)  # [draws, m]
    estimates = products.sum(axis=1) * draws  # φ(q)·φ(k) of each width-m map  [draws]
    return float(estimates.var(ddof=1))


# The trigonometric estimate's relative mean squared error, 2 (cosh ||q - k||² - 1) / m,
# for unit q, k with q·k = 0.5 (so ||q - k||² = 1) and m = 16 features (8 directions).
TRIG_RELATIVE_MSE = 2 * (np.cosh(1.0) - 1) / 16

# The exercise's two numbers: the trigonometric error, and how many times larger FAVOR+'s
# error is for the same pair (the trigonometric features are the better ones here).
TRIG_ANSWER = np.array([TRIG_RELATIVE_MSE, RELATIVE_MSE / TRIG_RELATIVE_MSE])


def _check_trig_error(answer):
    """Each of the two numbers to within 0.4% of itself (one tolerance for both would let the
    small error through almost unchecked, next to a factor of about 18)."""
    assert_matches(answer, TRIG_ANSWER, np.inf, "your answer")  # two finite numbers
    got = _as_array(answer, "your answer")
    for position, what in enumerate(("the trigonometric error", "FAVOR+'s error over it")):
        assert_matches(got[position], TRIG_ANSWER[position], 4e-3, f"your answer ({what})")

# What the chapter measured for entries of std 0.5 (N = 256, d = 16), rounded as printed
# there: the first-order constant C of eq-ch06-first-order and elu+1's relative error.
# The chapter asserts that its own computation still rounds to these.
FIRST_ORDER_C = 2.7
ELU_ERROR = 0.208


def features_to_beat(first_order_c, error_to_beat):
    """The smallest m with C/√m <= the error to beat, by the first-order theory: m >= (C/e)²."""
    return int(np.ceil((first_order_c / error_to_beat) ** 2))


def measured_trig_relative_mse(q, k, m, draws=20_000, seed=0):
    """The mean of ((φ(q)·φ(k) - e^(q·k)) / e^(q·k))² over ``draws`` independent
    trigonometric maps of width m (m/2 iid directions each).

    One wide map with m·draws/2 directions is cut into groups of m/2: the cosine and sine
    products of a direction are added, and each group's sum times ``draws`` is the
    estimate of a width-m map (its 2/m in place of the wide map's 2/(m·draws)).
    """
    wide = la.TrigonometricFeatures(q.shape[-1], m * draws, seed=seed)
    products = wide(q) * wide(k)  # [m·draws]: the cosine half, then the sine half
    per_direction = products[: m * draws // 2] + products[m * draws // 2:]  # [m·draws/2]
    estimates = per_direction.reshape(draws, m // 2).sum(axis=1) * draws  # [draws]
    exact = np.exp(q @ k)
    return float(np.mean(((estimates - exact) / exact) ** 2))


EXERCISES = [
    Exercise("ch06.favor_features", "Build the FAVOR+ features φ(x) from the projection W", "code",
             solution_favor_features, _check_favor_features),
    code_exercise("ch06.favor_attention", "Approximate softmax attention with FAVOR+",
                  solution_favor_attention, _attention_cases, rtol=1e-5),
    Exercise("ch06.rescaled_features", "Rescale the FAVOR+ features in log space so they stay in range",
             "code", solution_rescaled_features, _check_rescaled_features),
    value_exercise("ch06.relative_mse",
                   "The relative mean squared error for unit q, k with q·k = 0.5 at m = 16",
                   float(RELATIVE_MSE), rtol=4e-3),
    code_exercise("ch06.favor_variance", "Derive the variance of the FAVOR+ estimate of e^(q·k)",
                  solution_favor_variance, _variance_cases, rtol=1e-6),
    Exercise("ch06.trig_error",
             "Derive the trigonometric estimate's relative error; evaluate it at unit q, k, q·k = 0.5, "
             "m = 16, and compare it with FAVOR+'s", "value", TRIG_ANSWER, _check_trig_error),
    value_exercise("ch06.features_to_beat_elu",
                   "Predict from the first-order theory the m at which FAVOR+ beats elu+1",
                   float(features_to_beat(FIRST_ORDER_C, ELU_ERROR)), rtol=1e-4),
    value_exercise("ch06.features_for_accuracy",
                   "The fewest iid features for a 10% relative RMS error at unit q, k, q·k = 0.5",
                   float(FEATURES_FOR_TEN_PERCENT), rtol=1e-4),
]
