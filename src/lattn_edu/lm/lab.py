"""The language-model lab's plan, its runs, its record and its summary (chapter 17).

A lab is every (seed, model, learning rate) of a :class:`LabConfig`. Each run trains one
:class:`.model.LanguageModel` on windows of the packaged Shakespeare (:mod:`lattn_edu.corpus`),
every model on the same batches for a seed and with the same budget, through recall's AdamW loop
(:func:`lattn_edu.recall.training.optimise`); then it measures what :mod:`.probes` defines and
times decoding (:meth:`.model.LanguageModel.step`). The worker pool is recall's.
"""

from __future__ import annotations

import functools
import math
import os
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import torch
import torch.nn.functional as F

from .._checks import check_positive_int
from ..corpus import CharVocabulary, load_shakespeare, random_batch, train_validation_split
from ..machine import machine_summary
from ..recall.pool import finished_runs, record_runs
from ..recall.study import loss_curve
from ..recall.training import optimise
from ..records import load_record
from .decode import check_decodable
from .model import LM_MODELS, LanguageModel, layer_pattern
from .probes import bits, copy_probe, position_losses, validation_windows


@dataclass(frozen=True)
class LmConfig:
    """One run's model and training settings (what the mixers and
    :func:`~lattn_edu.recall.training.make_optimiser` read, and the context)."""

    d_model: int = 128
    num_layers: int = 4
    num_heads: int = 4
    taylor_dim: int = 8  # Based's layers: q, k projected to 8, m = 45 features per head
    window: int = 64  # the sliding-window layers' W
    context: int = 256
    steps: int = 1000
    batch_size: int = 16
    learning_rate: float = 3e-3
    weight_decay: float = 0.1
    seed: int = 0  # weights and training batches (FAVOR+ would draw its features from it)
    threads: int = 1  # torch threads per run


@dataclass(frozen=True)
class LabConfig:
    """What a lab trains, every seed x model x learning rate on ``base``'s settings (whose
    ``seed`` and ``learning_rate`` each run replaces by its own), and what it measures."""

    base: LmConfig = LmConfig()
    models: tuple[str, ...] = tuple(LM_MODELS)  # names in LM_MODELS or layer patterns
    seeds: tuple[int, ...] = (0, 1, 2)
    learning_rates: tuple[float, ...] = (3e-3, 1e-2)
    eval_every: int = 100  # validation checkpoints every this many steps (and at 0 and the end)
    eval_windows: int = 128  # validation windows, evenly spread over the validation text
    position_block: int = 16  # the loss by position, in blocks this long
    copy_length: int = 32  # the copy probe's random string
    copy_sequences: int = 64
    curve_every: int = 25  # one training-loss point per this many steps (the window's mean)


# Full: what lm.json records, 24 runs: the eight models on three seeds, 500 steps each at one rate,
# 1e-2, the better of two rates in an unrecorded trial of softmax alone (after 300 steps: 2.79
# bits per character with 3e-3, 2.69 with 1e-2; 2.27 after 1,000 steps with 1e-2). One rate for every
# mixer is the same budget for each, not each mixer's best: a grid of two rates would double the
# lab's hours (per training step on a free core, from 0.34 s for sliding_window and based to 0.67 s
# for gated_deltanet and 1.2 s for kda). At these budgets no model had learned to copy: the copy
# probe's second copy cost 12.25 bits against the first's 12.27 for softmax after 300 steps, and
# with a quarter of the training windows given a copy to learn from, 6.34 against 6.39 after 600
# steps (a trial, not kept).
FULL = LabConfig(base=replace(LmConfig(), steps=500), learning_rates=(1e-2,))
# Quick: the Colab edition's: the four models that say how much softmax a model needs (all, a
# window of it, none, one layer in four), one seed, full's higher rate, 300 steps (not full's runs).
QUICK = LabConfig(base=replace(FULL.base, steps=300), models=("softmax", "sliding_window", "gated_deltanet",
                                                               "hybrid"),
                  seeds=(0,), learning_rates=(1e-2,))
TINY = LabConfig(base=LmConfig(d_model=16, num_heads=2, taylor_dim=2, window=4, context=24, steps=3,
                               batch_size=3),
                 seeds=(0,), learning_rates=(3e-3,), eval_every=2, eval_windows=4, position_block=8,
                 copy_length=4, copy_sequences=3, curve_every=2)
# What --quick is sized to finish in on two free CPU cores (one worker per core), printed by --help;
# its record (lm_quick.json) took 746 s with one worker on two cores that others loaded to 5-8.
QUICK_BUDGET_MINUTES = 10
RECORDS = {"full": "lm.json", "quick": "lm_quick.json"}


def check_lab(lab: LabConfig) -> LabConfig:
    """``lab`` if every part names something that exists and every size fits; a ValueError
    naming the part otherwise, before any training."""
    if not isinstance(lab, LabConfig):
        raise TypeError(f"lab must be a LabConfig; got {type(lab).__name__}")
    base = lab.base
    for name in ("d_model", "num_layers", "num_heads", "taylor_dim", "window", "context", "steps",
                 "batch_size", "threads"):
        check_positive_int(getattr(base, name), name)
    for name in ("eval_every", "eval_windows", "position_block", "copy_length", "copy_sequences",
                 "curve_every"):
        check_positive_int(getattr(lab, name), name)
    if base.d_model % base.num_heads:
        raise ValueError(f"d_model must be a multiple of num_heads={base.num_heads}; got {base.d_model}")
    if not lab.models:
        raise ValueError(f"models must name at least one of {', '.join(LM_MODELS)} or a layer pattern; "
                         f"got none")
    for model in lab.models:
        check_decodable(layer_pattern(model, base.num_layers))
    if not lab.learning_rates or not all(rate > 0 for rate in lab.learning_rates):
        raise ValueError(f"learning_rates must be positive; got {list(lab.learning_rates)}")
    if not lab.seeds:
        raise ValueError("seeds must name at least one seed; got none")
    if 3 * lab.copy_length > base.context + 1:
        raise ValueError(f"copy_length must be at most (context + 1) / 3 = {(base.context + 1) // 3}; "
                         f"got {lab.copy_length}")
    return lab


def planned_runs(lab: LabConfig) -> Iterator[dict[str, Any]]:
    """Every run of a lab, seed by seed, so that a stopped lab has every model on its first seeds."""
    for seed in lab.seeds:
        for model in lab.models:
            for rate in lab.learning_rates:
                yield {"model": model, "seed": seed, "learning_rate": rate}


def run_id(run: dict[str, Any]) -> str:
    """A short name for one run, e.g. 'hybrid/seed1/lr0.003'."""
    return f"{run['model']}/seed{run['seed']}/lr{run['learning_rate']:g}"


@functools.lru_cache(maxsize=1)
def corpus() -> tuple[CharVocabulary, np.ndarray, np.ndarray]:
    """The vocabulary and the encoded training and validation parts (once per process)."""
    text = load_shakespeare()
    vocabulary = CharVocabulary(text)
    train, validation = train_validation_split(text)
    return vocabulary, vocabulary.encode(train), vocabulary.encode(validation)


def data_seed(seed: int) -> int:
    """The training batches' seed: every model and rate of a seed trains on the same batches."""
    return 1000 * seed + 15


COPY_SEED = 15_015  # the copy probe's windows and strings: the same for every run


def decode_seconds(model: LanguageModel, tokens: torch.Tensor) -> list[float]:
    """The seconds of each step of decoding ``tokens`` long [N] one at a time from an empty cache."""
    times, cache = [], model.start(1)
    with torch.no_grad():
        for token in tokens[:, None]:  # [1] each
            start = time.perf_counter()
            _, cache = model.step(token, cache)
            times.append(time.perf_counter() - start)
    return times


def measure(model: LanguageModel, lab: LabConfig, checkpoints: list[dict[str, Any]]) -> dict[str, Any]:
    """After training: the loss by position, the last checkpoint's copy probe, memory,
    parameters, decode time."""
    base = lab.base
    tokens, targets = validation_windows(corpus()[2], base.context, lab.eval_windows)
    by_position = bits(position_losses(model, tokens, targets).mean(0))  # [N]
    blocks = np.split(by_position, range(lab.position_block, base.context, lab.position_block))
    floats = model.cache_floats(base.context)
    total = sum(floats.values())
    return {"position_bits": [round(float(b.mean()), 4) for b in blocks],
            "copy": {"length": lab.copy_length, "distance": base.context + 1 - 2 * lab.copy_length,
                     "first_bits": checkpoints[-1]["copy_first_bits"],
                     "second_bits": checkpoints[-1]["copy_second_bits"]},
            "parameters": sum(p.numel() for p in model.parameters()),
            "cache_floats": {**floats, "total": total, "per_token": round(total / base.context, 2)},
            "decode_ms": round(1e3 * float(np.median(decode_seconds(model, torch.from_numpy(tokens[0])))), 4)}


def train_run(task_run: tuple[dict[str, Any], LabConfig]) -> dict[str, Any]:
    """Train and measure one planned run; its row of the record."""
    run, lab = task_run
    config = replace(lab.base, seed=run["seed"], learning_rate=run["learning_rate"])
    start = time.perf_counter()
    vocabulary, train, validation = corpus()
    torch.manual_seed(config.seed)
    model = LanguageModel(layer_pattern(run["model"], config.num_layers), config, vocabulary.size)
    data = np.random.default_rng(data_seed(config.seed))
    eval_tokens, eval_targets = validation_windows(validation, config.context, lab.eval_windows)
    probe = copy_probe(validation, vocabulary.size, config.context, lab.copy_length, lab.copy_sequences,
                       np.random.default_rng(COPY_SEED))
    checkpoints: list[dict[str, Any]] = []
    losses: list[float] = []
    evaluating = 0.0  # seconds spent on checkpoints, kept out of the training time

    def checkpoint() -> None:
        nonlocal evaluating
        begin = time.perf_counter()
        nats = position_losses(model, eval_tokens, eval_targets).mean()
        copy = position_losses(model, probe[0], probe[1])  # [B, N]
        checkpoints.append({"step": len(losses), "bits": round(float(bits(nats)), 4),
                            "copy_first_bits": round(float(bits(copy[:, probe[2]].mean())), 4),
                            "copy_second_bits": round(float(bits(copy[:, probe[3]].mean())), 4)})
        evaluating += time.perf_counter() - begin

    def batch_loss() -> torch.Tensor:
        x, y = (torch.from_numpy(a) for a in random_batch(train, config.context, config.batch_size, data))
        return F.cross_entropy(model(x).flatten(0, 1), y.flatten())  # every position scored

    def on_step(loss: float) -> None:
        losses.append(loss)
        if len(losses) % lab.eval_every == 0 or len(losses) == config.steps:
            checkpoint()

    checkpoint()  # step 0: the untrained model, about log2(vocabulary) bits
    final_loss = optimise(model, config, batch_loss, on_step)
    train_seconds = time.perf_counter() - start - evaluating
    measured = measure(model.eval(), lab, checkpoints)
    return {**run, "id": run_id(run), "layers": list(model.layers), "steps": config.steps,
            "final_loss": round(final_loss, 4), "validation": checkpoints,
            "final_bits": checkpoints[-1]["bits"], **measured,
            "loss_curve": loss_curve(losses, lab.curve_every),
            "train_seconds": round(train_seconds, 1), "eval_seconds": round(evaluating, 1),
            "wall_seconds": round(time.perf_counter() - start, 1), "threads": torch.get_num_threads(),
            "load_average": round(os.getloadavg()[0], 2)}  # the machine's load as the run ended: shared cores


def lab_record(lab: LabConfig, mode: str, runs: list[dict[str, Any]], planned: int, wall: float,
               workers: int) -> dict[str, Any]:
    """The JSON record: the rows so far, whether the plan finished, and the settings."""
    vocabulary = corpus()[0]
    return {"complete": len(runs) == planned, "planned_runs": planned, "finished": [r["id"] for r in runs],
            "runs": runs, "vocabulary": vocabulary.size, "uniform_bits": round(math.log2(vocabulary.size), 4),
            "config": {**asdict(lab), "mode": mode, "wall_seconds": round(wall, 1), "workers": workers,
                       "torch": torch.__version__, "machine": machine_summary()}}


def run_lab(lab: LabConfig, out: Path, mode: str, progress: bool = True, workers: int = 1,
            resume: bool = False) -> dict[str, Any]:
    """Train every planned run, rewriting ``out`` after each one; the final record.

    ``resume`` keeps the finished runs of an earlier, stopped lab in ``out`` (same settings) and
    trains only the rest; each run is seeded on its own, so the numbers are the same. ``workers``
    processes train runs side by side (see :mod:`lattn_edu.recall.pool`); the record is the same
    for any number of them (but for the seconds), its runs in the order of :func:`planned_runs`.
    """
    check_lab(lab)
    runs, earlier = finished_runs(asdict(lab), out, "lab") if resume else ([], 0.0)
    done = {r["id"] for r in runs}
    plan = list(planned_runs(lab))
    todo = [(run, lab) for run in plan if run_id(run) not in done]
    def record_of(rows: list[dict[str, Any]], wall: float) -> dict[str, Any]:
        return lab_record(lab, mode, rows, len(plan), wall, workers)

    return record_runs(train_run, todo, runs, record_of, out, steps=lab.base.steps, threads=lab.base.threads,
                       workers=workers, earlier=earlier, progress=progress)


def summarise(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Per model, at its best learning rate (the lowest mean final validation bits over seeds;
    the corpus has no third part, so the rate is chosen on the windows it is reported on, as
    the recall and tracking labs choose theirs): the mean [min, max] bits, the copy probe's
    mean bits on each copy, and the model's size, memory (``floats`` per sequence after the
    full context, and per token of it), decode time and training seconds (means over seeds).
    Rows in the runs' order."""
    groups: dict[str, dict[float, list[dict[str, Any]]]] = {}
    for r in record["runs"]:
        groups.setdefault(r["model"], {}).setdefault(r["learning_rate"], []).append(r)
    rows = []
    for model, by_rate in groups.items():
        rate, runs = min(by_rate.items(), key=lambda item: np.mean([r["final_bits"] for r in item[1]]))
        scores = [r["final_bits"] for r in runs]
        rows.append({"model": model, "layers": "+".join(runs[0]["layers"]), "learning_rate": rate,
                     "seeds": len(runs), "bits": float(np.mean(scores)), "min": min(scores),
                     "max": max(scores),
                     "copy_first": float(np.mean([r["copy"]["first_bits"] for r in runs])),
                     "copy_second": float(np.mean([r["copy"]["second_bits"] for r in runs])),
                     "parameters": runs[0]["parameters"],
                     "floats": runs[0]["cache_floats"]["total"],  # per sequence, full context
                     "floats_per_token": runs[0]["cache_floats"]["per_token"],
                     "decode_ms": float(np.mean([r["decode_ms"] for r in runs])),
                     "train_seconds": float(np.mean([r["train_seconds"] for r in runs]))})
    return rows


def format_summary(rows: list[dict[str, Any]]) -> str:
    """Summary rows as a Markdown table, one row per model."""
    lines = ["| model | lr | seeds | val bits/char [min, max] | copy: 1st → 2nd (bits) | params | "
             "cache floats/token | decode ms/token | train s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['learning_rate']:g} | {r['seeds']} | {r['bits']:.3f} "
                     f"[{r['min']:.3f}, {r['max']:.3f}] | {r['copy_first']:.2f} → {r['copy_second']:.2f} | "
                     f"{r['parameters']:,} | {r['floats_per_token']:g} | {r['decode_ms']:.2f} | "
                     f"{r['train_seconds']:.0f} |")
    return "\n".join(lines)


def estimate_seconds(record: dict[str, Any], lab: LabConfig, workers: int) -> float:
    """The wall seconds ``lab`` would take on ``workers`` workers, from ``record``'s runs (which
    must share its model sizes): per model, its measured seconds per training step and per
    checkpoint window (validation and copy probe) scaled to ``lab``'s steps and checkpoints, plus
    its measuring time; a model the record lacks counts as the mean of those it has."""
    per_model: dict[str, list[float]] = {}
    checkpoints = len(range(0, lab.base.steps, lab.eval_every)) + 1  # step 0, every eval_every, the end
    windows = lab.eval_windows + lab.copy_sequences  # per checkpoint
    recorded = record["config"]["eval_windows"] + record["config"]["copy_sequences"]
    for r in record["runs"]:
        other = r["wall_seconds"] - r["train_seconds"] - r["eval_seconds"]
        seconds = (r["train_seconds"] / r["steps"] * lab.base.steps
                   + r["eval_seconds"] / (recorded * len(r["validation"])) * windows * checkpoints + other)
        per_model.setdefault(r["model"], []).append(seconds)
    means = {model: float(np.mean(seconds)) for model, seconds in per_model.items()}
    fallback = float(np.mean(list(means.values())))
    total = sum(means.get(run["model"], fallback) for run in planned_runs(lab))
    return total / min(workers, sum(1 for _ in planned_runs(lab)))


def recorded(mode: str = "full") -> dict[str, Any]:
    """The shipped record of the lab: 'full' (lm.json) or 'quick' (lm_quick.json), through
    :func:`lattn_edu.records.load_record`; a FileNotFoundError saying how to make it when absent."""
    if mode not in RECORDS:
        raise ValueError(f"mode must be 'full' or 'quick'; got {mode!r}")
    try:
        return load_record(RECORDS[mode])
    except FileNotFoundError as missing:
        flag = " --quick" if mode == "quick" else ""
        raise FileNotFoundError(f"{missing}; `lattn-edu lm{flag} --out {RECORDS[mode]}` records it") from None
