"""The reference forms of every model, one table for every array library: the modules of the core
(:mod:`lattn_edu.gated`, :mod:`lattn_edu.delta` and Part III's) are written once against the array
API, so the numpy and the torch backend run these very functions (each backend adds only its
``to_backend``)."""

from __future__ import annotations

from ..delta import chunkwise_delta_rule, recurrent_delta_rule
from ..delta_product import chunkwise_delta_product, recurrent_delta_product
from ..gated import (chunkwise_gated_linear_attention, parallel_gated_linear_attention,
                     recurrent_gated_linear_attention)
from ..generalized_delta import chunkwise_generalized_delta_rule, recurrent_generalized_delta_rule
from ..least_squares import chunkwise_least_squares, recurrent_least_squares
from ..log_linear import (chunkwise_log_linear_attention, parallel_log_linear_attention,
                          recurrent_log_linear_attention)
from ..test_time import (chunkwise_titans_linear, chunkwise_ttt_linear, recurrent_titans_linear,
                         recurrent_ttt_linear)

GATED_FORMS = {
    "recurrent": recurrent_gated_linear_attention,
    "parallel": parallel_gated_linear_attention,
    "chunkwise": chunkwise_gated_linear_attention,
}

DELTA_FORMS = {
    "recurrent": recurrent_delta_rule,
    "chunkwise": chunkwise_delta_rule,
}

# Every model's forms by family name, as :func:`lattn_edu.recurrence.run_recurrence` looks them up.
FAMILIES = {
    "gated": GATED_FORMS,
    "delta": DELTA_FORMS,
    # (Gated) DeltaProduct (chapter 13): n_h Householder steps per token
    "delta_product": {"recurrent": recurrent_delta_product, "chunkwise": chunkwise_delta_product},
    # RWKV-7's diagonal plus low rank (chapter 13): S_t = (diag(exp g_t) + a_t b_tᵀ) S_{t-1} + k_t v_tᵀ
    "generalized_delta": {"recurrent": recurrent_generalized_delta_rule,
                          "chunkwise": chunkwise_generalized_delta_rule},
    # MesaNet's least-squares read (chapter 14): two gated sums and a solve per step
    "least_squares": {"recurrent": recurrent_least_squares, "chunkwise": chunkwise_least_squares},
    # log-linear attention (chapter 15): a Fenwick-tree bank of gated states
    "log_linear": {"recurrent": recurrent_log_linear_attention, "parallel": parallel_log_linear_attention,
                   "chunkwise": chunkwise_log_linear_attention},
    # test-time training with a linear inner model (chapter 14): mini-batch gradient steps
    "ttt_linear": {"recurrent": recurrent_ttt_linear, "chunkwise": chunkwise_ttt_linear},
    "titans_linear": {"recurrent": recurrent_titans_linear, "chunkwise": chunkwise_titans_linear},
}
