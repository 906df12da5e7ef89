"""lattn_edu: linear attention, taught with tested code.

The package behind the lattn-edu book. Every chapter imports it; nothing in the
book re-implements what lives here.
"""

from .analysis import (AttentionCost, attention_cost, denominator_drift, effective_attention_matrix,
                       numerical_rank, peak_weight, row_entropy, singular_values)
from .backends import available_backends
from .delta import delta_rule, implicit_step_size, ut_transform
from .delta_product import delta_product
from .feature_maps import (FavorPlus, TrigonometricFeatures, elu_plus_one, exp_kernel,
                           identity_feature_map, relu_feature_map, taylor_features, taylor_width)
from .gated import decay_mask, gated_linear_attention, segment_sums
from .generalized_delta import generalized_delta_rule
from .delta_gradients import delta_rule_vjp
from .gradients import gated_linear_attention_vjp
from .least_squares import least_squares_attention
from .linear import (chunkwise_linear_attention, linear_attention, parallel_linear_attention,
                     quadratic_linear_attention, recurrent_linear_attention)
from .log_linear import fenwick_levels, hierarchical_mask, log_linear_attention
from .retention import decay_matrix, retention
from .scan import associative_scan, scan_costs
from .softmax import softmax_attention, softmax_attention_weights
from .ssm import diagonal_ssm, selective_ssm, selective_ssm_gates, ssm_mixing_matrix, ssm_scan
from .state import LinearAttentionState, SoftmaxKVCache
from .test_time import titans_linear, ttt_linear

__version__ = "0.1.0"

__all__ = [
    "AttentionCost",
    "FavorPlus",
    "LinearAttentionState",
    "SoftmaxKVCache",
    "TrigonometricFeatures",
    "attention_cost",
    "associative_scan",
    "available_backends",
    "chunkwise_linear_attention",
    "decay_mask",
    "decay_matrix",
    "delta_product",
    "delta_rule",
    "delta_rule_vjp",
    "denominator_drift",
    "diagonal_ssm",
    "effective_attention_matrix",
    "elu_plus_one",
    "exp_kernel",
    "fenwick_levels",
    "gated_linear_attention",
    "gated_linear_attention_vjp",
    "generalized_delta_rule",
    "hierarchical_mask",
    "identity_feature_map",
    "implicit_step_size",
    "least_squares_attention",
    "linear_attention",
    "log_linear_attention",
    "numerical_rank",
    "parallel_linear_attention",
    "peak_weight",
    "quadratic_linear_attention",
    "recurrent_linear_attention",
    "relu_feature_map",
    "retention",
    "row_entropy",
    "scan_costs",
    "segment_sums",
    "selective_ssm",
    "selective_ssm_gates",
    "singular_values",
    "softmax_attention",
    "softmax_attention_weights",
    "ssm_mixing_matrix",
    "ssm_scan",
    "taylor_features",
    "taylor_width",
    "titans_linear",
    "ttt_linear",
    "ut_transform",
]
