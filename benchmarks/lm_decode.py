"""Decode time per token of the language-model lab's models against the context, side by side.

Run: python benchmarks/lm_decode.py   (writes src/lattn_edu/data/lm_decode.json, which chapter 15 reads; about a minute)

Each of the lab's eight models (lattn_edu.lm.LM_MODELS at the full lab's sizes: four layers,
d_model 128, four heads, W = 64) decodes STEPS tokens, one ``LanguageModel.step`` at a time, from a
cache that already holds N tokens, for each N in CONTEXTS. Decode time depends on the sizes of
what is cached, not on its values or on training, so the models are untrained and the caches
are filled with random keys, values and states of the right shapes (``filled_cache``) instead of
stepping through N tokens first. The package's softmax step appends the new key and value to its
cache with ``torch.cat``, which copies the cache; a server preallocates it. So the softmax layers'
time grows with N for two reasons here: reading the N keys and values, and copying them.

Every (model, N) is timed once per round, ROUNDS rounds, in a shuffled order each round, so that
whatever else the machine does slows them alike; the record keeps the median and the 95th
percentile of the per-token times, and how many cores other processes kept busy.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from lattn_edu import lm, records
from lattn_edu.bench.harness import OtherLoad
from lattn_edu.machine import machine_info
from lattn_edu.recall.mixers import SlidingWindowMixer, SoftmaxMixer

CONTEXTS = (256, 1024, 4096, 16384)
ROUNDS = 7
STEPS = 20  # tokens decoded per timing
VOCAB = 72  # the Shakespeare corpus' characters
OUT = records.repository_data(__file__, "lm_decode.json")  # chapter 15 reads it


def filled_cache(model: lm.LanguageModel, n: int, generator: torch.Generator) -> list:
    """A decoding cache of one sequence as it is after n tokens, with random contents."""
    cache = []
    for (tail, mixer_cache), mixer in zip(model.start(1), model.mixers):
        if isinstance(mixer, (SoftmaxMixer, SlidingWindowMixer)):
            kept = min(n, mixer.window) if isinstance(mixer, SlidingWindowMixer) else n
            mixer_cache = tuple(torch.randn(*part.shape[:2], kept, part.shape[-1], generator=generator)
                                for part in mixer_cache)  # keys, values  [1, H, kept, d]
        else:
            mixer_cache = tuple(0.1 * torch.randn(part.shape, generator=generator) for part in mixer_cache)
        cache.append((torch.randn(tail.shape, generator=generator), mixer_cache))
    return cache


def per_token_seconds(model: lm.LanguageModel, cache: list, steps: int) -> float:
    """Seconds per token of ``steps`` decoding steps from ``cache``."""
    token = torch.zeros(1, dtype=torch.long)
    with torch.no_grad():
        start = time.perf_counter()
        for _ in range(steps):
            logits, cache = model.step(token, cache)
            token = logits.argmax(-1)
        return (time.perf_counter() - start) / steps


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="where to write the record")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="timings of each (model, N)")
    parser.add_argument("--smoke", action="store_true", help="tiny models and contexts (a test of the script)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # as the lab decodes: one thread per run
    config = replace(lm.TINY.base, d_model=16, num_heads=2) if args.smoke else lm.FULL.base
    contexts, steps = ((8, 40) if args.smoke else CONTEXTS), (2 if args.smoke else STEPS)
    generator = torch.Generator().manual_seed(15)
    torch.manual_seed(15)
    models = {name: lm.LanguageModel(lm.layer_pattern(name, config.num_layers), config, VOCAB).eval()
              for name in lm.LM_MODELS}
    samples: dict[tuple[str, int], list[float]] = {(name, n): [] for name in models for n in contexts}
    busy, other, start, load_start = [], OtherLoad(), time.perf_counter(), list(os.getloadavg())
    order = np.random.default_rng(15)
    for _ in range(args.rounds):
        keys = list(samples)
        for i in order.permutation(len(keys)):
            name, n = keys[i]
            cache = filled_cache(models[name], n, generator)
            samples[name, n].append(per_token_seconds(models[name], cache, steps))
        busy.append(other.cores())
    rows = [{"model": name, "context": n, "median_ms": 1e3 * float(np.median(s)),
             "p95_ms": 1e3 * float(np.percentile(s, 95)), "timings": len(s)} for (name, n), s in samples.items()]
    for row in rows:
        print(f"{row['model']:>15} N={row['context']:>6}: {row['median_ms']:.3f} ms (p95 {row['p95_ms']:.3f})")
    record = {"description": __doc__.splitlines()[0], "recorded": time.strftime("%Y-%m-%d %H:%M:%S"),
              "machine": machine_info(engines=False),
              "settings": {"rounds": args.rounds, "steps": steps, "contexts": list(contexts), "smoke": args.smoke,
                           "d_model": config.d_model, "num_layers": config.num_layers,
                           "num_heads": config.num_heads, "window": config.window, "threads": 1},
              "load_average_start": load_start, "load_average_end": list(os.getloadavg()),
              "other_processes_cores": [None if b is None else round(b, 2) for b in busy],
              "wall_seconds": time.perf_counter() - start, "rows": rows}
    print(f"written: {records.save_record(record, args.out)}")
    return record


if __name__ == "__main__":
    main()
