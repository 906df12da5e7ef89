"""The capacity study's plots draw the record's numbers, and the shipped full study is complete."""

from __future__ import annotations

import json
from dataclasses import asdict, replace

import numpy as np
import pytest

pytest.importorskip("torch")
matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from lattn_edu import recall  # noqa: E402  (needs torch, skipped above when missing)
from lattn_edu.recall import plots  # noqa: E402
from lattn_edu.recall import study as study_module  # noqa: E402
from lattn_edu.records import load_record  # noqa: E402

STUDY = recall.StudyConfig(base=recall.TINY, models=("linear", "deltanet", "softmax"), pair_counts=(3, 5),
                           seeds=(0, 1, 2), learning_rates=(1e-3, 3e-3), sweep_models=("linear", "softmax"),
                           sweep_pairs=5, sweep_widths=(8, 16, 32), sweep_learning_rate=1e-3, curve_every=2)


def fake_record(seed: int = 5) -> dict:
    """Every planned run of STUDY with seeded random accuracies and 7-point loss curves."""
    rng = np.random.default_rng(seed)
    runs = [{**run, "id": study_module.run_id(run), "accuracy": float(rng.uniform()),
             "final_loss": float(rng.uniform(0, 5)), "state_size": 11,
             "loss_curve": [round(float(x), 4) for x in rng.uniform(0.01, 5, 7)]}
            for run in recall.planned_runs(STUDY)]
    return study_module.study_record(STUDY, "fake", runs, len(runs), 1.0, workers=1)


def best_rate(record, model, p):
    return next(r["learning_rate"] for r in recall.summarise(record) if (r["model"], r["num_pairs"]) == (model, p))


def test_loss_curves_draw_every_seed_at_the_best_rate_only():
    import matplotlib.pyplot as plt

    record = fake_record()
    fig = plots.plot_loss_curves(record)
    assert len(fig.axes) == len(STUDY.pair_counts)
    for ax, p in zip(fig.axes, STUDY.pair_counts):
        drawn = sorted(tuple(line.get_ydata()) for line in ax.get_lines()[:-1])  # the last: guessing
        expected = sorted(tuple(r["loss_curve"]) for r in record["runs"]
                          if r["part"] == "main" and r["num_pairs"] == p
                          and r["learning_rate"] == best_rate(record, r["model"], p))
        assert drawn == expected and len(drawn) == len(STUDY.models) * len(STUDY.seeds)
        np.testing.assert_array_equal(ax.get_lines()[0].get_xdata(), 2 * np.arange(1, 8))
        assert ax.get_lines()[-1].get_ydata()[0] == pytest.approx(np.log(recall.TINY.num_values))
    plt.close(fig)


def bars(ax):
    """(x, mean, low, high) of each error bar in ``ax``."""
    out = []
    for container in ax.containers:
        marker, _, (segments,) = container.lines
        (x,), (mean,) = marker.get_data()
        (_, low), (_, high) = segments.get_segments()[0]
        out.append((x, mean, low, high))
    return out


def test_accuracy_plot_marks_the_mean_and_spans_the_seeds_range():
    import matplotlib.pyplot as plt

    record = fake_record()
    fig = plots.plot_accuracy(record)
    drawn = sorted((round(mean, 9), round(low, 9), round(high, 9)) for _, mean, low, high in bars(fig.axes[0]))
    rows = recall.summarise(record)
    assert drawn == sorted((round(r["mean"], 9), round(r["min"], 9), round(r["max"], 9)) for r in rows)
    assert all(r["seeds"] == 3 for r in rows)
    plt.close(fig)


def test_state_sweep_puts_each_width_at_its_log2_with_the_sweep_rate():
    import matplotlib.pyplot as plt

    record = fake_record()
    fig = plots.plot_state_sweep(record)
    drawn = bars(fig.axes[0])
    assert len(drawn) == len(STUDY.sweep_models) * len(STUDY.sweep_widths)
    assert sorted(round(x) for x, *_ in drawn) == sorted([int(np.log2(w)) for w in STUDY.sweep_widths] * 2)
    linear_8 = [r["accuracy"] for r in record["runs"] if (r["model"], r["d_model"]) == ("linear", 8)]
    assert len(linear_8) == 3 and any(mean == pytest.approx(np.mean(linear_8)) for _, mean, *_ in drawn)
    plt.close(fig)


def test_sweep_losses_draw_every_sweep_run_once_per_width():
    import matplotlib.pyplot as plt

    record = fake_record()
    fig = plots.plot_sweep_losses(record)
    for ax, width in zip(fig.axes, STUDY.sweep_widths):
        drawn = sorted(tuple(line.get_ydata()) for line in ax.get_lines()[:-1])
        expected = sorted(tuple(r["loss_curve"]) for r in study_module.sweep_runs(record) if r["d_model"] == width)
        assert drawn == expected and len(drawn) == len(STUDY.sweep_models) * len(STUDY.seeds)
    plt.close(fig)


def test_every_model_has_its_own_colour_and_line():
    styles = [plots.STYLES[name][:2] for name in recall.MODELS]
    assert len(set(styles)) == len(recall.MODELS) == len(styles)


def test_a_partial_record_says_how_many_seeds_each_point_has():
    import matplotlib.pyplot as plt

    record = fake_record()
    record["runs"] = [r for r in record["runs"] if r["seed"] < 2 or r["model"] != "deltanet"]
    fig = plots.plot_accuracy(record)
    assert "2–3 seeds" in fig.axes[0].get_title()
    plt.close(fig)
    fig = plots.plot_state_sweep(fake_record())
    assert "3 seeds" in fig.axes[0].get_title()
    plt.close(fig)


def test_seed_counts_sort_as_numbers():
    rows = [{"seeds": s} for s in (10, 2, 3)]
    assert recall.seed_counts(rows) == "2–10"
    assert recall.seed_counts(rows[:1] * 2) == "10"


def test_the_shipped_full_study_has_every_run_on_three_seeds_and_the_sweep():
    """What chapters 7, 10 and 11 plot: the record must be the finished plan, nothing missing."""
    record = load_record("recall_study_full.json")
    config = record["config"]
    study = recall.StudyConfig(**{**{k: v for k, v in config.items() if k in recall.StudyConfig.__dataclass_fields__},
                                  "base": recall.RecallConfig(**config["base"])})
    planned = [study_module.run_id(run) for run in recall.planned_runs(study)]
    assert record["complete"] and sorted(record["finished"]) == sorted(planned)
    assert {"deltanet", "gated_deltanet"} <= set(config["models"]) and len(config["seeds"]) >= 3
    assert all(row["seeds"] == len(config["seeds"]) for part in ("main", "state_sweep")
               for row in recall.summarise(record, part))
    assert len(recall.summarise(record, "state_sweep")) == len(config["sweep_models"]) * len(config["sweep_widths"])


def test_plateau_exit_is_the_end_of_the_first_window_below_half_the_guessing_loss():
    record = {"config": {"base": {"num_values": 49}, "curve_every": 7}}  # half of ln 49 = ln 7
    curve = [4.0, 3.9, np.log(7) + 1e-9, np.log(7) - 1e-9, 0.1]
    assert recall.plateau_exit({"loss_curve": curve}, record) == 7 * 4
    assert recall.plateau_exit({"loss_curve": curve[:3]}, record) is None


def test_plateau_start_is_the_end_of_the_first_window_a_margin_below_the_guessing_loss():
    record = {"config": {"base": {"num_values": 49}, "curve_every": 7}}  # guessing loss ln 49
    guess = np.log(49)
    curve = [guess + 0.3, guess - 0.05, guess - 0.2, np.log(7) - 1e-9]
    assert recall.plateau_start({"loss_curve": curve}, record) == 7 * 3
    assert recall.plateau_start({"loss_curve": curve}, record, margin=0.01) == 7 * 2
    assert recall.plateau_start({"loss_curve": curve[:2]}, record) is None
    assert recall.plateau_start({"loss_curve": curve}, record) <= recall.plateau_exit({"loss_curve": curve}, record)
    for bad in (0, -0.1, guess, True, "0.1"):
        with pytest.raises(ValueError, match="margin"):
            recall.plateau_start({"loss_curve": curve}, record, margin=bad)


def test_late_drop_compares_the_means_of_the_last_windows():
    curve = [9.0] * 3 + [2.0, 4.0, 6.0] + [1.0, 2.0, 3.0]
    assert recall.late_drop({"loss_curve": curve}, windows=3) == pytest.approx(0.5)
    assert recall.late_drop({"loss_curve": [5.0] * 7}, windows=3) == 0.0
    with pytest.raises(ValueError, match="run has 5 loss-curve points; late_drop needs at least 2 \\* windows = 6"):
        recall.late_drop({"loss_curve": [1.0] * 5}, windows=3)
    for bad in (0, -2, 2.0, True):
        with pytest.raises(ValueError, match=f"windows must be a positive int; got {bad!r}"):
            recall.late_drop({"loss_curve": [1.0] * 9}, windows=bad)


def test_summary_table_says_softmax_state_grows_and_gives_mean_and_range():
    rows = [{"model": "softmax", "num_pairs": 5, "d_model": 8, "state_size": None, "learning_rate": 1e-3,
             "seeds": 3, "mean": 0.5, "min": 0.25, "max": 0.75},
            {"model": "linear", "num_pairs": 5, "d_model": 8, "state_size": 40, "learning_rate": 3e-3,
             "seeds": 3, "mean": 0.125, "min": 0.0, "max": 0.375}]
    lines = recall.format_summary(rows).splitlines()
    assert lines[2] == "| softmax | 5 | 8 | grows with N | 0.001 | 3 | 0.500 [0.250, 0.750] |"
    assert lines[3] == "| linear | 5 | 8 | 40 | 0.003 | 3 | 0.125 [0.000, 0.375] |"


def test_memory_recall_puts_each_model_and_window_at_its_memory_and_mean():
    import matplotlib.pyplot as plt

    study = recall.StudyConfig(base=replace(recall.TINY, num_layers=2), pair_counts=(3,), seeds=(0, 1, 2),
                               models=("linear", "linear+softmax", "sliding_window"), learning_rates=(1e-3,),
                               sweep_models=(), windows=(2, 4))
    rng = np.random.default_rng(9)
    runs = [{**run, "id": study_module.run_id(run), "accuracy": float(rng.uniform()), "final_loss": 1.0,
             "state_size": None, "cache_floats": 100 * len(run["model"]) + run.get("window", 0),
             "loss_curve": [1.0]} for run in recall.planned_runs(study)]
    record = study_module.study_record(study, "fake", runs, len(runs), 1.0, workers=1)
    fig = plots.plot_memory_recall(record)
    ax = fig.axes[0]
    drawn = sorted((float(bar.lines[0].get_xdata()[0]), float(bar.lines[0].get_ydata()[0]))
                   for bar in ax.containers)  # one error bar per summary row
    expected = sorted((r["cache_floats"], r["mean"]) for r in recall.summarise(record))
    assert np.allclose(drawn, expected) and len(expected) == 4  # linear, the hybrid, two windows
    window_line = [line for line in ax.get_lines() if line.get_linestyle() == "--" and line.get_color() != "gray"]
    assert [list(line.get_xdata()) for line in window_line] == [[1402, 1404]]  # narrowest to widest
    # every marker labelled at its point, by its model or its window; ticks at the memories drawn,
    # except the windows' 1,402 and 1,404, each within 10% of the memory before: their labels
    # carry the number instead
    def label(row):
        name = "W = " + str(row["window"]) if "window" in row else row["model"]
        return name + (f" ({row['cache_floats']:,} numbers)" if row["cache_floats"] in (1402, 1404) else "")
    labels = sorted((text.get_text(), text.xy) for text in ax.texts if text.get_text() not in ("chance", "no-lookup accuracy"))
    assert labels == sorted((label(r), (r["cache_floats"], round(r["mean"], 3))) for r in recall.summarise(record))
    assert sorted(ax.get_xticks()) == sorted(x for x, _ in expected if x not in (1402, 1404))
    assert plots.style_of("linear+softmax")[0] == plots.STYLES["linear"][0]
    # hybrids of one recurrent mixer: one colour, told apart by line and marker
    one, half = plots.style_of("linear*3+softmax"), plots.style_of("linear+softmax")
    assert one[0] == half[0] and one[1] != half[1] and one[2] != half[2]
    plt.close(fig)
    # chance, at one over the number of values; a no-lookup line only where one is given
    levels = {text.get_text(): text.xy[1] for text in ax.texts if text.get_text() in ("chance", "no-lookup accuracy")}
    assert levels == {"chance": 1 / study.base.num_values}
    fig = plots.plot_memory_recall(record, no_lookup=0.17)
    dotted = sorted(line.get_ydata()[0] for line in fig.axes[0].get_lines() if line.get_linestyle() == ":")
    assert dotted == sorted([1 / study.base.num_values, 0.17])
    assert "no-lookup accuracy" in {text.get_text() for text in fig.axes[0].texts}
    plt.close(fig)
    # each seed a small dot just right of its mean: 3 seeds for each of the 4 rows
    fig = plots.plot_memory_recall(record)
    dots = [line for line in fig.axes[0].get_lines() if line.get_marker() == "."]
    assert len(dots) == 4 and all(len(line.get_ydata()) == 3 for line in dots)
    for row in recall.summarise(record):
        (dot,) = [line for line in dots if line.get_xdata()[0] == pytest.approx(
            row["cache_floats"] * plots.SEED_DOT_SHIFT)]
        assert sorted(dot.get_ydata()) == pytest.approx(sorted(
            r["accuracy"] for r in runs if r["model"] == row["model"] and r.get("window") == row.get("window")))
        assert min(dot.get_ydata()) == pytest.approx(row["min"]) and max(dot.get_ydata()) == pytest.approx(row["max"])
    plt.close(fig)


def test_chosen_losses_draw_each_chosen_run_once_per_seed_and_refuse_a_missing_one():
    import matplotlib.pyplot as plt

    study = recall.StudyConfig(base=replace(recall.TINY, num_layers=2), pair_counts=(3,), seeds=(0, 1, 2),
                               models=("linear+softmax", "sliding_window"), learning_rates=(1e-3,),
                               sweep_models=(), windows=(2, 4), curve_every=3)
    rng = np.random.default_rng(11)
    runs = [{**run, "id": study_module.run_id(run), "accuracy": 0.5, "final_loss": 1.0, "state_size": None,
             "loss_curve": [round(float(x), 4) for x in rng.uniform(0.01, 5, 5)]}
            for run in recall.planned_runs(study)]
    record = study_module.study_record(study, "fake", runs, len(runs), 1.0, workers=1)
    fig = plots.plot_chosen_losses(record, {"a": [("linear+softmax", None)], "b": [("sliding_window", 4)]})
    for ax, (model, window) in zip(fig.axes, [("linear+softmax", None), ("sliding_window", 4)]):
        curves = [line for line in ax.get_lines() if line.get_color() != "gray"]  # grey: the two levels
        expected = sorted(tuple(r["loss_curve"]) for r in runs if r["model"] == model and r.get("window") == window)
        assert sorted(tuple(line.get_ydata()) for line in curves) == expected and len(expected) == 3
        np.testing.assert_array_equal(curves[0].get_xdata(), 3 * np.arange(1, 6))
        # the memory figure's scheme: a model's colour and marker, as style_of gives them
        assert {(line.get_color(), line.get_marker()) for line in curves} == {plots.style_of(model)[::2]}
        levels = sorted(line.get_ydata()[0] for line in ax.get_lines() if line.get_color() == "gray")
        assert levels == pytest.approx([np.log(recall.TINY.num_values) / 2, np.log(recall.TINY.num_values)])
    plt.close(fig)
    fig = plots.plot_chosen_losses(record, {"windows": [("sliding_window", 2), ("sliding_window", 4)]})
    styles = {line.get_label(): (line.get_linestyle(), line.get_marker()) for line in fig.axes[0].get_lines()
              if line.get_label().startswith("sliding_window")}
    assert len(styles) == 2  # each window a line and a marker of its own, the widest the model's marker
    assert len({s[0] for s in styles.values()}) == 2 and len({s[1] for s in styles.values()}) == 2
    assert styles["sliding_window (W = 4)"][1] == plots.style_of("sliding_window")[2]
    plt.close(fig)
    with pytest.raises(ValueError, match="no run of 'sliding_window' with window 3"):
        plots.plot_chosen_losses(record, {"a": [("sliding_window", 3)]})


def test_the_shipped_hybrid_study_is_the_hybrid_preset_finished():
    """What chapter 15 reads: every run of HYBRID_STUDY, with the memory each model keeps."""
    record = load_record("recall_study_hybrid.json")
    planned = [study_module.run_id(run) for run in recall.planned_runs(recall.HYBRID_STUDY)]
    assert record["complete"] and record["finished"] == planned
    settings = json.loads(json.dumps(asdict(recall.HYBRID_STUDY)))
    assert {key: record["config"][key] for key in settings} == settings
    rows = recall.summarise(record)
    assert all(row["seeds"] == 3 for row in rows) and len(rows) == 10
    memory = {(row["model"], row.get("window")): row["cache_floats"] for row in rows}
    # after 96 tokens: a key and a value of 64 numbers per token and softmax layer; states of 4 x 16 x 16
    assert memory["softmax", None] == 4 * 96 * 128 and memory["gated_deltanet", None] == 4 * 1024
    assert memory["gated_deltanet*3+softmax", None] == 3 * 1024 + 96 * 128
    assert [memory["sliding_window", w] for w in (16, 32, 64, 128)] == [4 * min(w, 96) * 128
                                                                        for w in (16, 32, 64, 128)]
    assert memory["log_linear", None] == 4 * 8 * 1024  # ceil(log2 96) + 1 = 8 levels


def test_memory_recall_sets_models_at_one_memory_side_by_side_and_keeps_one_point_shared():
    import matplotlib.pyplot as plt

    study = recall.StudyConfig(base=replace(recall.TINY, num_layers=2), pair_counts=(3,), seeds=(0, 1, 2),
                               models=("linear", "deltanet", "softmax"), learning_rates=(1e-3,),
                               sweep_models=(), windows=(2,))
    accuracy = {"linear": 0.19, "deltanet": 0.24, "softmax": 0.89}  # plus 0.01 per seed: means 0.2, 0.25, 0.9
    runs = [{**run, "id": study_module.run_id(run), "accuracy": accuracy[run["model"]] + 0.01 * run["seed"],
             "final_loss": 1.0,
             "state_size": None, "cache_floats": 500 if run["model"] != "softmax" else 900,
             "loss_curve": [1.0]} for run in recall.planned_runs(study)]
    record = study_module.study_record(study, "fake", runs, len(runs), 1.0, workers=1)
    fig = plots.plot_memory_recall(record)
    ax = fig.axes[0]
    xs = {round(float(bar.lines[0].get_ydata()[0]), 3): float(bar.lines[0].get_xdata()[0])
          for bar in ax.containers}
    assert xs[0.2] < 500 < xs[0.25] and xs[0.25] / xs[0.2] == pytest.approx(1.1)  # apart, around 500
    assert xs[0.9] == 900  # alone at its memory: not moved
    assert sorted(ax.get_xticks()) == [500, 900]  # ticks stay at the memories themselves
    plt.close(fig)


def test_chosen_losses_can_draw_the_learning_rate_schedule_under_each_panel():
    import matplotlib.pyplot as plt

    study = recall.StudyConfig(base=replace(recall.TINY, num_layers=2, steps=20), pair_counts=(3,),
                               seeds=(0,), models=("linear",), learning_rates=(1e-3,), sweep_models=(),
                               curve_every=4)
    runs = [{**run, "id": study_module.run_id(run), "accuracy": 0.5, "final_loss": 1.0, "state_size": None,
             "loss_curve": [4.0, 3.0, 2.0, 1.0, 0.5]} for run in recall.planned_runs(study)]
    record = study_module.study_record(study, "fake", runs, len(runs), 1.0, workers=1)
    plain = plots.plot_chosen_losses(record, {"a": [("linear", None)], "b": [("linear", None)]})
    assert len(plain.axes) == 2  # the old call: no schedule
    fig = plots.plot_chosen_losses(record, {"a": [("linear", None)], "b": [("linear", None)]}, schedule=True)
    assert len(fig.axes) == 4
    for ax in fig.axes[2:]:
        (line,) = ax.get_lines()
        # step k (from 1, as the loss curves count) runs at the schedule's index k - 1
        np.testing.assert_array_equal(line.get_xdata(), np.arange(1, 21))
        assert list(line.get_ydata()) == [recall.learning_rate_factor(s, 20) for s in range(20)]
        assert line.get_ydata()[0] == 1 / 2  # the first step: the ramp (0 + 1) / 2 of its two steps
    assert fig.axes[0].get_shared_x_axes().joined(fig.axes[0], fig.axes[2])
    plt.close(plain)
    plt.close(fig)


def test_plateau_steps_marks_the_start_of_the_fall_and_the_fall_below_half():
    import matplotlib.pyplot as plt

    record = {"config": {"base": {"num_values": 49}, "curve_every": 5}}
    guess = np.log(49)
    run = {"model": "gated_deltanet", "seed": 1, "loss_curve": [guess + 0.2, guess - 0.05, guess - 0.3,
                                                                 guess - 0.8, guess / 2 - 0.1, 0.2]}
    fig = plots.plot_plateau_steps(record, run)
    ax = fig.axes[0]
    marked = [(float(line.get_xdata()[0]), float(line.get_ydata()[0])) for line in ax.get_lines()
              if line.get_marker() == "o"]
    assert marked == [(15, guess - 0.3), (25, guess / 2 - 0.1)]
    assert recall.plateau_start(run, record) == 15 and recall.plateau_exit(run, record) == 25
    names = " ".join(text.get_text() for text in ax.texts)
    assert "start of the fall\n(step 15)" in names and "half-loss step\n(step 25)" in names
    levels = sorted(line.get_ydata()[0] for line in ax.get_lines() if line.get_color() == "gray")
    assert levels == pytest.approx([guess / 2, guess - 0.1, guess])
    plt.close(fig)
    flat = {**run, "loss_curve": [guess] * 6}  # never left: nothing marked
    fig = plots.plot_plateau_steps(record, flat)
    assert not [line for line in fig.axes[0].get_lines() if line.get_marker() == "o"]
    plt.close(fig)


def test_the_plots_name_the_models_as_a_mapping_says_and_keep_the_key_without_one():
    import matplotlib.pyplot as plt

    record = fake_record()
    names = {"linear": "linear (elu+1)"}
    fig = plots.plot_chosen_losses(record, {"a": [("linear", None), ("softmax", None)]}, names=names)
    labels = {line.get_label() for line in fig.axes[0].get_lines()}
    assert {"linear (elu+1)", "softmax"} <= labels and "linear" not in labels
    plt.close(fig)
    run = next(r for r in record["runs"] if r["model"] == "linear")
    fig = plots.plot_plateau_steps(record, run, names=names)
    assert fig.axes[0].get_legend().get_texts()[0].get_text() == f"linear (elu+1), seed {run['seed']}"
    plt.close(fig)


def test_a_colour_mapping_replaces_the_family_colour_of_the_keys_it_holds():
    import matplotlib.pyplot as plt

    record = fake_record()
    fig = plots.plot_chosen_losses(record, {"a": [("linear", None), ("softmax", None)]},
                                   colours={"linear": "#123456"})
    colour_of = {line.get_label(): line.get_color() for line in fig.axes[0].get_lines()}
    assert colour_of["linear"] == "#123456" and colour_of["softmax"] == plots.style_of("softmax")[0]
    plt.close(fig)


def test_chosen_losses_can_draw_the_no_lookup_loss_dotted_between_the_two_dashed_levels():
    import matplotlib.pyplot as plt

    record = fake_record()
    guess = np.log(recall.TINY.num_values)
    fig = plots.plot_chosen_losses(record, {"a": [("linear", None)], "b": [("softmax", None)]},
                                   no_lookup_loss=1.7)
    for ax in fig.axes:
        grey = {line.get_ydata()[0]: line.get_linestyle() for line in ax.get_lines()
                if line.get_color() == "gray"}
        assert sorted(grey) == pytest.approx([guess / 2, 1.7, guess])
        assert grey[1.7] == ":" and {grey[key] for key in grey if key != 1.7} == {"--"}
        assert "no-lookup loss" in {text.get_text() for text in ax.texts}
    plt.close(fig)
    plain = plots.plot_chosen_losses(record, {"a": [("linear", None)]})  # without it: two levels
    assert "no-lookup loss" not in {text.get_text() for text in plain.axes[0].texts}
    assert len([line for line in plain.axes[0].get_lines() if line.get_color() == "gray"]) == 2
    plt.close(plain)


def test_chosen_losses_end_each_line_in_its_seed_in_the_panels_asked_only():
    import matplotlib.pyplot as plt

    study = recall.StudyConfig(base=recall.TINY, pair_counts=(3,), seeds=(0, 1, 2),
                               models=("linear", "softmax"), learning_rates=(1e-3,),
                               sweep_models=(), curve_every=3)
    rng = np.random.default_rng(7)
    runs = [{**run, "id": study_module.run_id(run), "accuracy": 0.5, "final_loss": 1.0, "state_size": None,
             "loss_curve": [round(float(x), 4) for x in rng.uniform(0.01, 5, 5)]}
            for run in recall.planned_runs(study)]
    record = study_module.study_record(study, "fake", runs, len(runs), 1.0, workers=1)
    fig = plots.plot_chosen_losses(record, {"a": [("linear", None)], "b": [("softmax", None)]},
                                   seed_labels=("b",))
    assert not [text for text in fig.axes[0].texts if text.get_text().startswith("s")]
    texts = [text for text in fig.axes[1].texts if text.get_text().startswith("s")]
    ends = sorted((text.get_text(), text.xy, text.get_color()) for text in texts)
    softmax = sorted((r for r in runs if r["model"] == "softmax"), key=lambda r: r["seed"])
    # one label per seed, pointing at the last point of its own line (5 points, 3 steps apart)
    assert ends == [(f"s{r['seed']}", (15, r["loss_curve"][-1]), plots.style_of("softmax")[0])
                    for r in softmax] and len(ends) == 3
    # written just right of the end, never lower than its line's end, and spread apart
    heights = sorted(text.xyann[1] for text in texts)
    assert all(text.xyann[0] > 15 and text.xyann[1] >= text.xy[1] for text in texts)
    assert all(text.get_bbox_patch().get_facecolor()[:3] == (1, 1, 1) for text in texts)  # white box
    low, high = fig.axes[1].get_ylim()
    assert min(np.diff(heights)) >= 0.045 * (high - low) - 1e-9
    assert fig.axes[1].get_xlim()[1] > 15  # room right of the lines' ends
    plt.close(fig)
