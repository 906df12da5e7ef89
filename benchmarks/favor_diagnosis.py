"""Why does the FAVOR+ recall model fail where elu+1 succeeds? Change one thing at a time.

Run: python benchmarks/favor_diagnosis.py   (about 10 minutes on 2 CPU cores; records
src/lattn_edu/data/favor_diagnosis.json, which chapter 7 reads)

Every run is ``lattn_edu.recall.train_one`` for the ``favor`` model at P = 8 pairs with the
recorded sweep's configuration (1,500 steps, seed 0, one torch thread), with the mixer
replaced by one variant of FAVOR+:

- ``favor``: the recorded model, m = d_head = 16 orthogonal features of d^(-1/4) q, k;
- ``favor, no d^-1/4``: the same features of q and k themselves;
- ``favor, m = 64``: four times the features, as Performer intends (a 4x larger state);
- ``exp, no norm term``: the same fixed projection and scaling, features exp(w_r·x) without
  FAVOR+'s -||x||²/2 (positive, but no longer an unbiased estimate of exp(q·k)).

The variants enter through the mixer registry: the script registers each one under the
name ``favor`` for the duration of its run; ``recall`` itself is unchanged.
"""

from __future__ import annotations

import argparse
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import torch

from lattn_edu import recall, records
from lattn_edu.feature_maps import FavorPlus

PAIRS = 8
RECORDED_MIXER = recall.MIXERS["favor"]  # the recorded model's mixer class, kept before any swap
OUT = records.repository_data(__file__, "favor_diagnosis.json")  # chapter 7 reads it


class ExpWithoutNorm:
    """exp(W x) with FAVOR+'s projection W, without its -||x||²/2 term.

    The largest entry over the last two axes is subtracted before the exponential: a
    common factor of every query's (or every key's) features, which cancels in the
    normalised output and keeps exp in range.
    """

    def __init__(self, features: FavorPlus) -> None:
        self.projection = torch.from_numpy(features.projection).float()  # [m, d]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        z = x @ self.projection.T  # [..., N, m]
        return torch.exp(z - z.detach().amax(dim=(-2, -1), keepdim=True))


def _mixer(variant: str, config: recall.RecallConfig, layer: int) -> recall.Mixer:
    d = config.d_model // config.num_heads
    features = FavorPlus(d, d, orthogonal=True, seed=config.seed + layer)
    if variant == "favor, no d^-1/4":
        return recall.LinearMixer(config.d_model, config.num_heads, features, m=d)
    if variant == "favor, m = 64":
        wide = FavorPlus(d, 4 * d, orthogonal=True, seed=config.seed + layer)
        return recall.LinearMixer(config.d_model, config.num_heads, wide, m=4 * d,
                                  scale=d ** -0.25)
    if variant == "exp, no norm term":
        return recall.LinearMixer(config.d_model, config.num_heads, ExpWithoutNorm(features),
                                  m=d, scale=d ** -0.25)
    return RECORDED_MIXER.from_config(config, layer)


VARIANTS = ("favor", "favor, no d^-1/4", "favor, m = 64", "exp, no norm term")


@contextmanager
def mixer_variant(variant: str) -> Iterator[None]:
    """Make every ``favor`` model built inside the block use ``variant`` as its mixer."""

    class Variant(recall.LinearMixer):
        @classmethod
        def from_config(cls, config: recall.RecallConfig, layer: int) -> recall.Mixer:
            return _mixer(variant, config, layer)

    recall.MIXERS["favor"] = Variant
    try:
        yield
    finally:
        recall.MIXERS["favor"] = RECORDED_MIXER


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT,
                        help="where to write the record (default: this repository's src/lattn_edu/data/)")
    out = parser.parse_args(argv).out
    config = recall.RecallConfig()
    torch.set_num_threads(config.threads)
    start, results = time.perf_counter(), []
    for variant in VARIANTS:
        with mixer_variant(variant):
            result = recall.train_one("favor", PAIRS, config)
        result["variant"] = variant
        results.append(result)
        print(f"{variant:>20}: accuracy {result['accuracy']:.3f}, "
              f"final loss {result['final_loss']:.3f}", flush=True)
    record = {"config": {"num_pairs": PAIRS, "steps": config.steps, "seed": config.seed,
                         "d_model": config.d_model, "num_heads": config.num_heads,
                         "threads": config.threads, "torch": torch.__version__,
                         "wall_seconds": round(time.perf_counter() - start)},
              "results": results}
    print(f"written: {records.save_record(record, out)}")


if __name__ == "__main__":
    main()
