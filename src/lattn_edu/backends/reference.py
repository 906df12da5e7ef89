"""The reference forms of every model, one table for every array library: the modules of the core
(:mod:`lattn_edu.gated`, :mod:`lattn_edu.delta` and Part III's) are written once against the array
API, so the numpy and the torch backend run these very functions (each backend adds only its
``to_backend``)."""

from __future__ import annotations

from ..delta import chunkwise_delta_rule, recurrent_delta_rule
from ..gated import (chunkwise_gated_linear_attention, parallel_gated_linear_attention,
                     recurrent_gated_linear_attention)
