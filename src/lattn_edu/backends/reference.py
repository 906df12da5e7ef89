"""The reference forms of the gated family, one table for every array library: :mod:`lattn_edu.gated`
and :mod:`lattn_edu.delta` are written once against the array API, so the numpy and the torch
backend run these very functions (each backend adds only its ``to_backend``)."""

from __future__ import annotations

from ..delta import chunkwise_delta_rule, recurrent_delta_rule
from ..gated import (chunkwise_gated_linear_attention, parallel_gated_linear_attention,
                     recurrent_gated_linear_attention)

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
}

from ..delta_product import chunkwise_delta_product, recurrent_delta_product  # noqa: E402  (appended with the family)

FAMILIES["delta_product"] = {
    "recurrent": recurrent_delta_product,
    "chunkwise": chunkwise_delta_product,
}
