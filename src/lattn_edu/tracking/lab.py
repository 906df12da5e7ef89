"""The state-tracking lab's plan, its runs and its record (chapter 13).

A lab is every (task, seed, model, learning rate) of a :class:`LabConfig`; each run trains
one recall model (:class:`lattn_edu.recall.RecallModel`, whose mixer is the only part that
differs) on sequences of the training length and scores it at 1×, 2× and 4× that length.
The training loop, optimiser, loss curve and worker pool are recall's
(:func:`lattn_edu.recall.training.optimise`, :mod:`lattn_edu.recall.pool`).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import torch
import torch.nn.functional as F

from .._checks import check_positive_int
from ..machine import machine_summary
from ..recall.mixers import MIXERS
from ..recall.model import RecallModel
from ..recall.pool import record_runs
from ..recall.study import loss_curve
from ..recall.training import optimise
from ..records import load_record
from .task import TASKS, check_task, group_order, make_batch


@dataclass(frozen=True)
class TrackingConfig:
    """One run's model and training settings (what :class:`RecallModel` and
    :func:`~lattn_edu.recall.training.make_optimiser` read, and the lengths)."""

    d_model: int = 32
    num_layers: int = 1
    num_heads: int = 2
    taylor_dim: int = 4  # read by the recall registry's Based mixer only
    train_length: int = 32
    steps: int = 1000
    batch_size: int = 32
    learning_rate: float = 3e-3
    weight_decay: float = 0.1
    eval_sequences: int = 256
    seed: int = 0
    threads: int = 1  # torch threads per run


@dataclass(frozen=True)
class LabConfig:
    """What a lab trains: every task x seed x model x learning rate, on ``base``'s settings
    (whose ``seed`` and ``learning_rate`` each run replaces by its own)."""

    base: TrackingConfig = TrackingConfig()
    models: tuple[str, ...] = ("linear", "mamba2", "deltanet", "deltanet_neg", "deltaproduct", "softmax")
    tasks: tuple[str, ...] = TASKS
    seeds: tuple[int, ...] = (0, 1, 2)
    learning_rates: tuple[float, ...] = (1e-3, 3e-3, 1e-2)
    test_factors: tuple[int, ...] = (1, 2, 4)  # test lengths, in training lengths
    position_block: int = 8  # the per-position accuracy at the longest length, in blocks this long
    curve_every: int = 25  # one loss point per this many steps (the window's mean)


# Full: what tracking.json records, 162 runs (46 minutes with two workers on busy shared cores;
# each run's seconds are in the record). One layer of
# width 32 (two heads of 16) is in principle enough for the models the papers credit: a sign
# flip per token for parity (one reflection, β = 2), and for S₃ and Z₃ any permutation of
# three things per token, a product of n − 1 = 2 transpositions (DeltaProduct's n_h = 2).
FULL = LabConfig()
# Quick: the Colab edition's, the full lab's seed-0 runs at 3e-3 on parity and S₃, bit for bit
# (each run is seeded on its own). Fewer steps will not do: DeltaProduct leaves S₃'s loss
# plateau only after about 500 steps.
QUICK = LabConfig(tasks=("parity", "s3"), seeds=(0,), learning_rates=(3e-3,))
TINY = LabConfig(base=TrackingConfig(d_model=8, train_length=6, steps=3, batch_size=4, eval_sequences=8),
                 seeds=(0,), learning_rates=(3e-3,), position_block=4, curve_every=2)
# What --quick is sized to finish in on two free CPU cores (one worker per core), printed by
# --help; its record (tracking_quick.json) holds the measured wall time (91 s, with DeltaProduct
# the dearest run at about 25 s).
QUICK_BUDGET_MINUTES = 3


def check_lab(lab: LabConfig) -> LabConfig:
    """``lab`` if every part names something that exists and every size is positive; a
    ValueError naming the part otherwise, before any training."""
    unknown = [name for name in lab.models if name not in MIXERS]
    if unknown or not lab.models:
        raise ValueError(f"models must be among {', '.join(MIXERS)}; got {list(lab.models)}")
    if not lab.tasks:
        raise ValueError(f"tasks must be among {', '.join(TASKS)}; got none")
    for task in lab.tasks:
        check_task(task)
    for name in ("d_model", "num_layers", "num_heads", "train_length", "steps", "batch_size",
                 "eval_sequences", "threads"):
        check_positive_int(getattr(lab.base, name), name)
    if lab.base.d_model % lab.base.num_heads:
        raise ValueError(f"d_model must be a multiple of num_heads={lab.base.num_heads}; got {lab.base.d_model}")
    if not lab.learning_rates or not all(rate > 0 for rate in lab.learning_rates):
        raise ValueError(f"learning_rates must be positive; got {list(lab.learning_rates)}")
    if not lab.seeds:
        raise ValueError("seeds must name at least one seed; got none")
    return lab


def planned_runs(lab: LabConfig) -> Iterator[dict[str, Any]]:
    """Every run of a lab, seed by seed, so that a stopped lab has every model on its first seeds."""
    for seed in lab.seeds:
        for task in lab.tasks:
            for model in lab.models:
                for rate in lab.learning_rates:
                    yield {"model": model, "task": task, "seed": seed, "learning_rate": rate}


def run_id(run: dict[str, Any]) -> str:
    """A short name for one run, e.g. 'parity/deltanet_neg/seed1/lr0.003'."""
    return f"{run['task']}/{run['model']}/seed{run['seed']}/lr{run['learning_rate']:g}"


def data_seed(task: str, seed: int) -> int:
    """The training data's seed: every model and rate of a (task, seed) trains on the same
    batches; the test sequences are drawn from this + 500."""
    return seed * 1000 + TASKS.index(task)


def score(model: RecallModel, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Which predictions are right: tokens, targets long [B, N] -> bool [B, N]."""
    with torch.no_grad():
        return model(tokens).argmax(-1) == targets


def evaluate(model: RecallModel, task: str, lab: LabConfig, seed: int) -> dict[str, Any]:
    """Accuracy at each test length: per position (``accuracy``), at the last position alone
    (``last_accuracy``: the whole sequence's product) and whole sequences with every position
    right (``sequence_accuracy``); and at the longest length, accuracy per block of
    ``lab.position_block`` positions (``position_accuracy``)."""
    data = torch.Generator().manual_seed(data_seed(task, seed) + 500)
    lengths, correct = [], None
    for factor in lab.test_factors:
        length = factor * lab.base.train_length
        correct = score(model.eval(), *make_batch(task, length, lab.base.eval_sequences, data))  # [B, N]
        lengths.append({"length": length, "accuracy": round(correct.double().mean().item(), 4),
                        "last_accuracy": round(correct[:, -1].double().mean().item(), 4),
                        "sequence_accuracy": round(correct.all(-1).double().mean().item(), 4)})
    by_position = correct.double().mean(0)  # the longest length's  [N]
    blocks = by_position.split(lab.position_block)
    return {"lengths": lengths, "position_accuracy": [round(b.mean().item(), 3) for b in blocks]}


def train_run(task_run: tuple[dict[str, Any], LabConfig]) -> dict[str, Any]:
    """Train and score one planned run; its row of the record."""
    run, lab = task_run
    config = replace(lab.base, seed=run["seed"], learning_rate=run["learning_rate"])
    task = run["task"]
    start = time.perf_counter()
    torch.manual_seed(config.seed)
    model = RecallModel(run["model"], config, vocab=group_order(task))
    data = torch.Generator().manual_seed(data_seed(task, config.seed))

    def batch_loss() -> torch.Tensor:
        tokens, targets = make_batch(task, config.train_length, config.batch_size, data)  # [B, N] each
        return F.cross_entropy(model(tokens).flatten(0, 1), targets.flatten())  # every position scored

    losses: list[float] = []
    final_loss = optimise(model, config, batch_loss, losses.append)
    train_seconds = time.perf_counter() - start
    row = {**run, "id": run_id(run), "steps": config.steps, "final_loss": round(final_loss, 4),
           **evaluate(model, task, lab, config.seed), "loss_curve": loss_curve(losses, lab.curve_every),
           "train_seconds": round(train_seconds, 1),
           "wall_seconds": round(time.perf_counter() - start, 1), "threads": torch.get_num_threads()}
    return row


def lab_record(lab: LabConfig, mode: str, runs: list[dict[str, Any]], planned: int, wall: float,
               workers: int) -> dict[str, Any]:
    """The JSON record: the rows so far, whether the plan finished, and the settings."""
    return {"complete": len(runs) == planned, "planned_runs": planned, "runs": runs,
            "config": {**asdict(lab), "mode": mode, "wall_seconds": round(wall, 1), "workers": workers,
                       "torch": torch.__version__, "machine": machine_summary()}}


def run_lab(lab: LabConfig, out: Path, mode: str, progress: bool = True, workers: int = 1) -> dict[str, Any]:
    """Train every planned run, rewriting ``out`` after each one; the final record.

    ``workers`` processes train runs side by side (see :mod:`lattn_edu.recall.pool`); the
    record is the same for any number of them (but for the seconds), its runs in the order of
    :func:`planned_runs`.
    """
    check_lab(lab)
    todo = [(run, lab) for run in planned_runs(lab)]
    def record_of(runs: list[dict[str, Any]], wall: float) -> dict[str, Any]:
        return lab_record(lab, mode, runs, len(todo), wall, workers)

    return record_runs(train_run, todo, [], record_of, out, steps=lab.base.steps, threads=lab.base.threads,
                       workers=workers, progress=progress)


def summarise(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Mean and range over seeds per task, model and test length, at each (task, model)'s
    best learning rate: the one with the highest mean accuracy at the training length (chosen
    where the model was trained, never on the longer test lengths). Rows in the runs' order."""
    groups: dict[tuple[str, str], dict[float, list[dict[str, Any]]]] = {}
    for r in record["runs"]:
        groups.setdefault((r["task"], r["model"]), {}).setdefault(r["learning_rate"], []).append(r)
    rows = []
    for (task, model), by_rate in groups.items():
        rate, runs = max(by_rate.items(), key=lambda item: np.mean([r["lengths"][0]["accuracy"] for r in item[1]]))
        for i, test in enumerate(runs[0]["lengths"]):
            scores = [r["lengths"][i]["accuracy"] for r in runs]
            rows.append({"task": task, "model": model, "length": test["length"], "learning_rate": rate,
                         "seeds": len(runs), "mean": float(np.mean(scores)), "min": min(scores),
                         "max": max(scores),
                         "last_accuracy": float(np.mean([r["lengths"][i]["last_accuracy"] for r in runs]))})
    return rows


def format_summary(rows: list[dict[str, Any]]) -> str:
    """Summary rows as a Markdown table, one row per task and model, one column per test
    length: per-position accuracy, mean [min, max] over seeds."""
    lengths = sorted({r["length"] for r in rows})
    cells = {(r["task"], r["model"], r["length"]): r for r in rows}
    pairs = list(dict.fromkeys((r["task"], r["model"]) for r in rows))
    lines = ["| task | model | lr | seeds | " + " | ".join(f"N = {n}" for n in lengths) + " |",
             "|---|---|---|---|" + "---|" * len(lengths)]
    for task, model in pairs:
        first = cells[task, model, lengths[0]]
        scores = [cells[task, model, n] for n in lengths]
        lines.append(f"| {task} | {model} | {first['learning_rate']:g} | {first['seeds']} | "
                     + " | ".join(f"{c['mean']:.3f} [{c['min']:.3f}, {c['max']:.3f}]" for c in scores) + " |")
    return "\n".join(lines)


def recorded(mode: str = "full") -> dict[str, Any]:
    """The shipped record of the lab: 'full' (tracking.json) or 'quick' (tracking_quick.json),
    through :func:`lattn_edu.records.load_record`."""
    names = {"full": "tracking.json", "quick": "tracking_quick.json"}
    if mode not in names:
        raise ValueError(f"mode must be 'full' or 'quick'; got {mode!r}")
    return load_record(names[mode])
