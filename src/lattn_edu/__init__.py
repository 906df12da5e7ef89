"""lattn_edu: linear attention, taught with tested code.

The package behind the lattn-edu book. Every chapter imports it; nothing in the
book re-implements what lives here.
"""

from .backends import available_backends
from .feature_maps import (FavorPlus, TrigonometricFeatures, elu_plus_one, exp_kernel,
                           identity_feature_map, relu_feature_map)
from .linear import (chunkwise_linear_attention, linear_attention, parallel_linear_attention,
                     quadratic_linear_attention, recurrent_linear_attention)
from .softmax import softmax_attention, softmax_attention_weights
from .state import LinearAttentionState, SoftmaxKVCache

__version__ = "0.1.0"

__all__ = [
    "FavorPlus",
    "LinearAttentionState",
    "SoftmaxKVCache",
    "TrigonometricFeatures",
    "available_backends",
    "chunkwise_linear_attention",
    "elu_plus_one",
    "exp_kernel",
    "identity_feature_map",
    "linear_attention",
    "parallel_linear_attention",
    "quadratic_linear_attention",
    "recurrent_linear_attention",
    "relu_feature_map",
    "softmax_attention",
    "softmax_attention_weights",
]
