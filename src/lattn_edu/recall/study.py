"""The capacity study (issue 16): seeds, a learning-rate grid, loss curves and a state-size sweep.

A single trained run mostly measures how fast a model leaves the loss plateau. The study
separates that from what its state can hold by training every model at several learning
rates (keeping the best, by mean accuracy over seeds), on several seeds, long enough to leave
the plateau, and by recording each run's loss curve so that a reader can check it did. Then a
state-size sweep at one fixed P widens the models (d_model, hence d_head and the state) for
linear, deltanet and softmax.

The record is rewritten after every run, so a study stopped part-way leaves a usable file
that says what finished (``"complete": false`` and the list of finished runs).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import torch

from ..machine import machine_summary
from .config import RecallConfig
from .mixers import layer_pattern
from .pool import finished_runs, record_runs
from .training import check_sweep, train_one


@dataclass(frozen=True)
class StudyConfig:
    """What a study trains; the model settings themselves come from ``base``."""

    base: RecallConfig = RecallConfig(steps=3000)
    models: tuple[str, ...] = ("softmax", "linear", "deltanet", "gated_deltanet", "gla", "mamba2")
    pair_counts: tuple[int, ...] = (16, 64)
    seeds: tuple[int, ...] = (0, 1, 2)
    learning_rates: tuple[float, ...] = (1e-3, 3e-3)
    sweep_models: tuple[str, ...] = ("linear", "deltanet", "softmax")
    sweep_pairs: int = 64
    sweep_widths: tuple[int, ...] = (32, 64, 128)  # d_model; d_head = d_model / num_heads
    sweep_learning_rate: float = 3e-3
    curve_every: int = 25  # one loss point per this many steps (the window's mean)
    windows: tuple[int, ...] = ()  # each model with a sliding-window layer at each W (none: base's)


# Full: hours of training (recall_study_full.json records how many; resumable): P = 16 and 32,
# where 1,500 steps take every model off the plateau (chapter 7's sweep at the lower rate:
# linear 0.98 and 0.96), two rates, three seeds, and the sweep at P = 32, where a narrow
# state binds. P = 64 is left out: there linear attention is still learning at 1,500 steps
# (accuracy 0.59 in recall.json, 0.90 after 4,500 in recall_long.json; at chance after 800
# quick steps in recall_quick.json), so 1,500 would measure learning speed, not capacity. GLA is
# left to the quick study: its per-channel decay makes a step about ten times dearer.
FULL_STUDY = StudyConfig(base=RecallConfig(steps=1500),
                         models=("softmax", "linear", "deltanet", "gated_deltanet", "mamba2"),
                         pair_counts=(16, 32), learning_rates=(3e-3, 6e-3), sweep_pairs=32)
# Quick: what chapters 10 and 11 read from it, the six models' accuracy over three seeds at
# P = 8 after 400 steps at chapter 7's quick rate, and nothing more. It measures which models
# learn 8 pairs within 400 steps, i.e. how fast they leave the plateau, not capacity: at
# P = 16, 200 steps leave every model at chance (softmax included). Its state-size sweep is
# only the main part's width (no extra runs): the chapters read the sweep of the full study.
# GLA, whose per-channel decay makes a step several times dearer, is about 40% of the time.
QUICK_STUDY = StudyConfig(base=RecallConfig(steps=400), pair_counts=(8,), learning_rates=(6e-3,),
                          models=("softmax", "linear", "deltanet", "gated_deltanet", "mamba2", "gla"),
                          sweep_pairs=8, sweep_widths=(64,), sweep_learning_rate=6e-3)
# Learners (chapter 14): the quick study's setting (P = 8, 400 steps, the same seeds and so the
# same data) for the three test-time-regression mixers, with gated_deltanet as the bridge: its
# runs at 6e-3 repeat the quick study's runs with today's kernels (recall_study_learners.json
# agrees with recall_study_quick.json to 3e-4 in accuracy; the kernels' rounding has changed
# since), so the two records read side by side. A second rate, half the quick one, because a
# new mixer's best rate is not known in advance. No state-size sweep.
LEARNERS_STUDY = replace(QUICK_STUDY,
                         models=("gated_deltanet", "ttt_linear", "titans_linear", "least_squares"),
                         learning_rates=(6e-3, 3e-3), sweep_models=())
# Hybrids (chapter 16): how much softmax a stack of four Gated DeltaNet layers needs to recall, and
# what it costs in memory. P = 32 pairs (sequences of 96 tokens) in four layers at the quick
# study's width, rate and seeds: none, one (the last) or two (alternating) of the four layers
# softmax, softmax throughout, sliding-window softmax throughout at W = 16 .. 128 (W = 128
# sees the whole sequence), and Mamba-2 with its log-linear form, whose levels sit between a state
# and a cache. 800 steps: in the full study one Gated DeltaNet layer at P = 32 and this rate left
# the plateau after about 400 (recall_study_full.json's loss curves); 30 runs of 800 four-layer steps
# are what two shared cores allowed in about an hour.
HYBRID_STUDY = StudyConfig(base=RecallConfig(steps=800, num_layers=4), pair_counts=(32,),
                           models=("gated_deltanet", "gated_deltanet*3+softmax", "gated_deltanet+softmax",
                                   "softmax", "sliding_window", "mamba2", "log_linear"),
                           learning_rates=(6e-3,), sweep_models=(), windows=(16, 32, 64, 128))
STUDIES = {"quick": QUICK_STUDY, "full": FULL_STUDY, "learners": LEARNERS_STUDY, "hybrid": HYBRID_STUDY}


def windows_of(study: StudyConfig, model: str) -> tuple[int | None, ...]:
    """The windows ``model`` trains at: each of ``study.windows`` if it has a sliding-window
    layer, else (None,): its runs keep the base's window, which none of its layers reads."""
    if study.windows and "sliding_window" in layer_pattern(model, study.base.num_layers):
        return study.windows
    return (None,)


def in_main_part(study: StudyConfig, model: str, width: int) -> bool:
    """Whether the sweep's run at ``width`` is one the main part trains anyway (then reused)."""
    return (width == study.base.d_model and model in study.models
            and study.sweep_pairs in study.pair_counts and study.sweep_learning_rate in study.learning_rates)


def planned_runs(study: StudyConfig) -> Iterator[dict[str, Any]]:
    """Every run of a study, in the order it trains: seed by seed (the main part, then the
    sweep's other widths), so that a stopped study has every model on its first seeds."""
    for seed in study.seeds:
        for num_pairs in study.pair_counts:
            for model in study.models:
                for window in windows_of(study, model):
                    for rate in study.learning_rates:
                        run = {"part": "main", "model": model, "num_pairs": num_pairs, "seed": seed,
                               "learning_rate": rate, "d_model": study.base.d_model}
                        yield run if window is None else {**run, "window": window}
        for width in study.sweep_widths:
            for model in study.sweep_models:
                if not in_main_part(study, model, width):
                    yield {"part": "state_sweep", "model": model, "num_pairs": study.sweep_pairs,
                           "seed": seed, "learning_rate": study.sweep_learning_rate, "d_model": width}


def run_id(run: dict[str, Any]) -> str:
    """A short name for one run, e.g. 'main/deltanet/P64/seed1/lr0.003/d64' (and '/W16' for a
    run at its own window)."""
    window = f"/W{run['window']}" if "window" in run else ""
    return (f"{run['part']}/{run['model']}/P{run['num_pairs']}/seed{run['seed']}"
            f"/lr{run['learning_rate']:g}/d{run['d_model']}{window}")


def loss_curve(losses: list[float], every: int) -> list[float]:
    """Mean loss over consecutive windows of ``every`` steps (the last may be shorter)."""
    return [round(float(np.mean(losses[i:i + every])), 4) for i in range(0, len(losses), every)]


def train_run(task: tuple[dict[str, Any], StudyConfig]) -> dict[str, Any]:
    """Train and score one planned run of a study; its row, with the loss curve."""
    run, study = task
    config = replace(study.base, seed=run["seed"], learning_rate=run["learning_rate"],
                     d_model=run["d_model"], window=run.get("window", study.base.window))
    losses: list[float] = []
    row = train_one(run["model"], run["num_pairs"], config, losses.append)
    return {**run, **row, "id": run_id(run),
            "loss_curve": loss_curve(losses, study.curve_every)}


def study_record(study: StudyConfig, mode: str, runs: list[dict[str, Any]], planned: int,
                 wall: float, workers: int) -> dict[str, Any]:
    """The JSON record: the rows so far, whether the plan finished, and the settings."""
    return {"complete": len(runs) == planned, "planned_runs": planned,
            "finished": [r["id"] for r in runs], "runs": runs,
            "config": {**asdict(study), "mode": mode, "wall_seconds": round(wall, 1), "workers": workers,
                       "torch": torch.__version__, "machine": machine_summary()}}


def run_study(study: StudyConfig, out: Path, mode: str, progress: bool = True,
              resume: bool = False, workers: int = 1) -> dict[str, Any]:
    """Train every planned run, rewriting ``out`` after each one; the final record.

    ``resume`` keeps the finished runs of an earlier, stopped study in ``out`` (same settings)
    and trains only the rest; each run is seeded on its own, so the result is the same.
    ``workers`` processes train runs side by side (see :mod:`.pool`); the record is the
    same for any number of them, its runs in the order of :func:`planned_runs`.
    """
    for models, pairs in ((study.models, study.pair_counts), (study.sweep_models, (study.sweep_pairs,))):
        check_sweep(replace(study.base, models=models, pair_counts=pairs))
    runs, earlier = finished_runs(asdict(study), out, "study") if resume else ([], 0.0)
    done = {r["id"] for r in runs}
    plan = list(planned_runs(study))
    todo = [(run, study) for run in plan if run_id(run) not in done]
    def record_of(rows: list[dict[str, Any]], wall: float) -> dict[str, Any]:
        return study_record(study, mode, rows, len(plan), wall, workers)

    return record_runs(train_run, todo, runs, record_of, out, steps=study.base.steps,
                       threads=study.base.threads, workers=workers, earlier=earlier, progress=progress)


def seed_counts(rows: list[dict[str, Any]]) -> str:
    """How many seeds the summary ``rows`` rest on: '3', or '1–3' where a partial record
    has fewer for some rows."""
    counts = sorted({r["seeds"] for r in rows})
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"


def guessing_loss(record: dict[str, Any]) -> float:
    """Cross-entropy of a uniform guess among the values (nats): where the loss plateau sits."""
    return float(np.log(record["config"]["base"]["num_values"]))


def plateau_exit(run: dict[str, Any], record: dict[str, Any]) -> int | None:
    """The step by which ``run`` fell below half the guessing loss (chapter 10 calls this leaving
    the plateau), or None if it never did.

    That is the end of the first loss-curve window whose mean is below half the guessing loss
    (ln of the number of values): there the right value gets about 1/sqrt(values) of the
    probability on average, clearly learning though far from done.
    """
    return _first_step_below(run, record, guessing_loss(record) / 2)


def plateau_start(run: dict[str, Any], record: dict[str, Any], margin: float = 0.1) -> int | None:
    """The step by which ``run``'s loss started to fall off the plateau: the end of the first
    loss-curve window whose mean is ``margin`` nats below the guessing loss, or None if none is.
    It comes at or before :func:`plateau_exit`; far apart, the run found the lookup but learned
    it slowly."""
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not 0 < margin < guessing_loss(record):
        raise ValueError(f"margin must be a number of nats in (0, guessing loss = {guessing_loss(record):.3f}); "
                         f"got {margin!r}")
    return _first_step_below(run, record, guessing_loss(record) - margin)


def _first_step_below(run: dict[str, Any], record: dict[str, Any], level: float) -> int | None:
    first = next((i for i, loss in enumerate(run["loss_curve"]) if loss < level), None)
    return None if first is None else record["config"]["curve_every"] * (first + 1)


def late_drop(run: dict[str, Any], windows: int = 10) -> float:
    """How much the loss still fell at the end: 1 − (mean of the last ``windows`` curve points)
    / (mean of the ``windows`` before them). Averaging many windows keeps step noise out."""
    curve = run["loss_curve"]
    if isinstance(windows, bool) or not isinstance(windows, int) or windows < 1:
        raise ValueError(f"windows must be a positive int; got {windows!r}")
    if len(curve) < 2 * windows:
        raise ValueError(f"run has {len(curve)} loss-curve points; late_drop needs at least "
                         f"2 * windows = {2 * windows}")
    return float(1 - np.mean(curve[-windows:]) / np.mean(curve[-2 * windows:-windows]))


def sweep_runs(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The state-size sweep's runs, including those its base width shares with the main part."""
    study = record["config"]
    return [r for r in record["runs"] if r["model"] in study["sweep_models"]
            and r["num_pairs"] == study["sweep_pairs"] and r["learning_rate"] == study["sweep_learning_rate"]
            and (r["part"] == "state_sweep" or r["d_model"] in study["sweep_widths"])]


def summarise(record: dict[str, Any], part: str = "main") -> list[dict[str, Any]]:
    """Mean and range over seeds per model, P and width, at each one's best learning rate.

    ``part`` is 'main' or 'state_sweep' (see :func:`sweep_runs`). The best rate is the one
    with the highest mean accuracy over the seeds that finished; ``seeds`` says how many
    that is. Rows come in the order the runs finished.
    """
    if part not in ("main", "state_sweep"):
        raise ValueError(f"part must be 'main' or 'state_sweep'; got {part!r}")
    runs = [r for r in record["runs"] if r["part"] == "main"] if part == "main" else sweep_runs(record)
    groups: dict[tuple, dict[float, list[float]]] = {}
    memory: dict[tuple, tuple[Any, Any]] = {}
    for r in runs:
        key = (r["model"], r["num_pairs"], r["d_model"], r.get("window"))
        groups.setdefault(key, {}).setdefault(r["learning_rate"], []).append(r["accuracy"])
        memory[key] = r["state_size"], r.get("cache_floats")
    rows = []
    for key, by_rate in groups.items():
        model, num_pairs, d_model, window = key
        rate, scores = max(by_rate.items(), key=lambda item: np.mean(item[1]))
        row = {"model": model, "num_pairs": num_pairs, "d_model": d_model, "learning_rate": rate,
               "seeds": len(scores), "mean": float(np.mean(scores)), "min": min(scores),
               "max": max(scores), "state_size": memory[key][0]}
        if window is not None:
            row["window"] = window
        if memory[key][1] is not None:  # recorded since the hybrid study
            row["cache_floats"] = memory[key][1]
        rows.append(row)
    return rows
