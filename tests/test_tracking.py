"""Tests for lattn_edu.tracking: the group tasks, the mixers with negative eigenvalues, the lab end to end."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, replace

import numpy as np
import pytest

import lattn_edu as la
from conftest import assert_close

torch = pytest.importorskip("torch")

from lattn_edu import cli, recall, tracking  # noqa: E402  (needs torch, skipped above when missing)
from lattn_edu.recall import mixers as mixers_module  # noqa: E402
from lattn_edu.tracking import lab as lab_module  # noqa: E402

SIZES = replace(tracking.TINY.base, d_model=20, num_heads=2)  # d_head = 10


def labels(task, tokens):
    return tracking.running_products(task, torch.tensor([tokens])).tolist()[0]


def test_parity_labels_are_the_running_parity():
    assert labels("parity", [1, 0, 1, 1, 0, 1]) == [1, 1, 0, 1, 1, 0]
    assert labels("parity", [0, 0, 0]) == [0, 0, 0]


def test_mod3_labels_are_the_running_sum_mod_3():
    assert labels("mod3", [1, 2, 2, 1, 0]) == [1, 0, 2, 0, 0]


def test_s3_labels_compose_the_newest_permutation_last_and_do_not_commute():
    swap12, swap01 = tracking.S3_ELEMENTS.index((0, 2, 1)), tracking.S3_ELEMENTS.index((1, 0, 2))
    # swap(0,1) after swap(1,2) sends 0 -> 1, 1 -> 2, 2 -> 0; the other order sends 0 -> 2, 1 -> 0, 2 -> 1
    assert labels("s3", [swap12, swap01]) == [swap12, tracking.S3_ELEMENTS.index((1, 2, 0))]
    assert labels("s3", [swap01, swap12]) == [swap01, tracking.S3_ELEMENTS.index((2, 0, 1))]
    assert labels("s3", [swap01, swap01, swap12, swap12]) == [swap01, 0, swap12, 0]  # transpositions are involutions


@pytest.mark.parametrize("task", tracking.TASKS)
def test_each_table_is_a_group_with_element_0_the_identity(task):
    table = tracking.TABLES[task].numpy()
    order = tracking.group_order(task)
    elements = np.arange(order)
    assert (table[0] == elements).all() and (table[:, 0] == elements).all()
    assert all(sorted(row) == list(elements) for row in table)  # every element has an inverse
    assert all(table[table[a, b], c] == table[a, table[b, c]] for a in elements for b in elements for c in elements)


def test_make_batch_is_seeded_and_labels_every_position():
    def draw(seed):
        return tracking.make_batch("s3", 9, 4, torch.Generator().manual_seed(seed))

    (tokens, targets), (again, _) = draw(3), draw(3)
    assert tokens.shape == targets.shape == (4, 9) and torch.equal(tokens, again)
    assert not torch.equal(tokens, draw(4)[0])
    assert 0 <= tokens.min() and tokens.max() < 6
    assert torch.equal(targets, tracking.running_products("s3", tokens))


def test_an_unknown_task_is_named():
    with pytest.raises(ValueError, match="task must be one of parity, mod3, s3; got 'parity4'"):
        tracking.make_batch("parity4", 4, 2, torch.Generator())


def step_sizes_seen(monkeypatch, name, function):
    """Run mixer ``name`` with its package function wrapped, and return the β it was given."""
    seen = []
    real = getattr(mixers_module, function)

    def spy(*args, **kwargs):
        seen.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(mixers_module, function, spy)
    torch.manual_seed(0)
    mixer = recall.make_mixer(name, SIZES, layer=0)
    with torch.no_grad():
        mixer.beta.bias.fill_(4.0)  # sigmoid(4) = 0.98: β near the top of its range
        out = mixer(torch.randn(2, 11, SIZES.d_model))
    assert out.shape == (2, 11, SIZES.d_model) and torch.isfinite(out).all()
    (args, kwargs), = seen
    assert kwargs["backend"] == "torch"
    return args


def test_deltanet_neg_gives_the_delta_rule_a_step_size_up_to_2(monkeypatch):
    beta = step_sizes_seen(monkeypatch, "deltanet_neg", "delta_rule")[3]  # [B, H, N]
    assert beta.shape == (2, 2, 11) and 1.5 < beta.min() and beta.max() < 2
    plain = step_sizes_seen(monkeypatch, "deltanet", "delta_rule")[3]
    assert plain.max() < 1


def test_deltaproduct_takes_two_steps_per_token_with_step_sizes_up_to_2(monkeypatch):
    q, k, v, beta = step_sizes_seen(monkeypatch, "deltaproduct", "delta_product")
    assert q.shape == (2, 2, 11, 10) and k.shape == (2, 2, 11, 2, 10) and v.shape == (2, 2, 11, 2, 10)
    assert beta.shape == (2, 2, 11, 2) and 1.5 < beta.min() and beta.max() < 2
    assert torch.allclose(k.norm(dim=-1), torch.ones(2, 2, 11, 2))  # unit keys: reflections at β = 2


def rms_normed(o, mixer):
    return torch.from_numpy(o / np.sqrt((o ** 2).mean(-1, keepdims=True) + 1e-5)) * mixer.norm.weight


def test_deltanet_neg_is_the_delta_rule_with_twice_the_sigmoid():
    torch.manual_seed(2)
    mixer = recall.make_mixer("deltanet_neg", SIZES, layer=0).double()
    x = torch.randn(3, 37, SIZES.d_model, dtype=torch.float64)
    q, k, v = (t.detach() for t in mixer.project(x))
    beta = 2 * torch.sigmoid(mixer.beta(x)).transpose(1, 2).detach()  # [B, H, N]
    rule = la.delta_rule(*(torch.nn.functional.normalize(t, dim=-1).numpy() for t in (q, k)), v.numpy(),
                         beta.numpy(), form="recurrent")
    assert_close(mixer(x).detach(), mixer.merge(rms_normed(rule, mixer)).detach(), what="deltanet_neg")


def test_deltaproduct_mixer_is_la_delta_product_on_its_projections():
    torch.manual_seed(3)
    mixer = recall.make_mixer("deltaproduct", SIZES, layer=0).double()
    x = torch.randn(3, 37, SIZES.d_model, dtype=torch.float64)
    q, k, v = (t.detach() for t in mixer.project(x))
    more = mixer.more(x).detach().view(3, 37, 1, 2, 20).permute(0, 3, 1, 2, 4)  # step 2's k and v
    keys = torch.cat([k[..., None, :], more[..., :10]], dim=-2)  # [B, H, N, 2, d_qk]
    values = torch.cat([v[..., None, :], more[..., 10:]], dim=-2)
    beta = 2 * torch.sigmoid(mixer.beta(x).detach().view(3, 37, 2, 2).transpose(1, 2))  # [B, H, N, 2]
    unit = torch.nn.functional.normalize
    product = la.delta_product(unit(q, dim=-1).numpy(), unit(keys, dim=-1).numpy(), values.numpy(),
                               beta.numpy(), form="recurrent")
    assert_close(mixer(x).detach(), mixer.merge(rms_normed(product, mixer)).detach(), what="deltaproduct")


def test_the_recall_model_reads_and_predicts_the_group_elements():
    model = recall.RecallModel("deltaproduct", SIZES, vocab=6)
    tokens, _ = tracking.make_batch("s3", 7, 3, torch.Generator().manual_seed(0))
    assert model(tokens).shape == (3, 7, 6)


RUN_FIELDS = {"model", "task", "seed", "learning_rate", "id", "steps", "final_loss", "lengths",
              "position_accuracy", "loss_curve", "train_seconds", "wall_seconds", "threads"}


def test_the_tiny_lab_writes_a_record_with_every_field(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["tracking", "--tiny", "--no-progress", "--tasks", "parity", "s3",
                     "--models", "deltanet_neg", "softmax"]) == 0
    record = json.loads((tmp_path / "tracking_tiny.json").read_text(encoding="utf-8"))
    assert record["complete"] and record["planned_runs"] == len(record["runs"]) == 4
    assert record["config"]["mode"] == "tiny" and record["config"]["workers"] == 1
    length = tracking.TINY.base.train_length
    for run in record["runs"]:
        assert set(run) == RUN_FIELDS and run["threads"] == 1 and run["steps"] == tracking.TINY.base.steps
        assert [test["length"] for test in run["lengths"]] == [length, 2 * length, 4 * length]
        assert all(0 <= test[kind] <= 1 for test in run["lengths"]
                   for kind in ("accuracy", "last_accuracy", "sequence_accuracy"))
        assert len(run["position_accuracy"]) == 4 * length // tracking.TINY.position_block
        assert len(run["loss_curve"]) == tracking.TINY.base.steps // tracking.TINY.curve_every + 1
    assert [(r["task"], r["model"]) for r in record["runs"]] == [
        ("parity", "deltanet_neg"), ("parity", "softmax"), ("s3", "deltanet_neg"), ("s3", "softmax")]


def test_a_run_is_bit_for_bit_the_same_for_a_seed_and_differs_for_another():
    lab = replace(tracking.TINY, base=replace(tracking.TINY.base, steps=5))
    run = {"model": "deltaproduct", "task": "s3", "seed": 1, "learning_rate": 3e-3}
    timings = {"train_seconds", "wall_seconds"}

    def numbers(row):
        return {key: value for key, value in row.items() if key not in timings}

    first = lab_module.train_run((run, lab))
    assert numbers(first) == numbers(lab_module.train_run((run, lab)))
    other = lab_module.train_run(({**run, "seed": 2}, lab))
    assert numbers(other)["loss_curve"] != numbers(first)["loss_curve"]


def parser():
    parser = argparse.ArgumentParser()
    tracking.add_arguments(parser)
    return parser


@pytest.mark.parametrize("options, match", [
    (["--steps", "0"], r"steps must be a positive int \(>= 1\); got 0"),
    (["--layers", "-1"], r"num_layers must be a positive int \(>= 1\); got -1"),
    (["--learning-rates", "0.003", "-1"], r"learning_rates must be positive; got \[0.003, -1.0\]"),
    (["--threads", "0"], r"threads must be a positive int \(>= 1\); got 0"),
])
def test_bad_options_are_named_before_any_training(options, match):
    with pytest.raises(ValueError, match=match):
        tracking.lab_from_args(parser().parse_args(["--tiny", *options]))


def test_bad_workers_and_unknown_choices_are_named(capsys, tmp_path):
    with pytest.raises(ValueError, match="workers must be a positive int; got 0"):
        cli.main(["tracking", "--tiny", "--workers", "0", "--out", str(tmp_path / "x.json")])
    with pytest.raises(SystemExit):
        cli.main(["tracking", "--tasks", "parity5"])
    assert "--tasks: invalid choice: 'parity5'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["tracking", "--models", "mamba"])
    assert "--models: invalid choice: 'mamba'" in capsys.readouterr().err


def test_help_states_the_quick_budget():
    text = " ".join(parser().format_help().split())
    assert f"budget: {tracking.QUICK_BUDGET_MINUTES} minutes on 2 free cores" in text


def test_quick_runs_are_runs_of_the_full_lab():
    """Each run seeds itself, so the quick lab's runs are bit for bit some of the full lab's."""
    quick, full = tracking.QUICK, tracking.FULL
    assert quick.base == full.base and quick.test_factors == full.test_factors
    assert list(tracking.planned_runs(quick)) == [r for r in tracking.planned_runs(full)
                                                  if r["task"] in quick.tasks and r["seed"] in quick.seeds
                                                  and r["learning_rate"] in quick.learning_rates]


@pytest.mark.parametrize("mode, preset", [("full", tracking.FULL), ("quick", tracking.QUICK)])
def test_the_shipped_record_is_complete_and_summarised(mode, preset):
    record = tracking.recorded(mode)
    settings = json.loads(json.dumps(asdict(preset)))
    assert record["complete"] and {key: record["config"][key] for key in settings} == settings
    rows = tracking.summarise(record)
    lengths = [factor * preset.base.train_length for factor in preset.test_factors]
    assert [(r["task"], r["model"], r["length"]) for r in rows] == [
        (task, model, length) for task in preset.tasks for model in preset.models for length in lengths]
    assert all(r["seeds"] == len(preset.seeds) and r["min"] <= r["mean"] <= r["max"] for r in rows)
    assert all(r["learning_rate"] in preset.learning_rates for r in rows)
    table = tracking.format_summary(rows)
    assert table.count("\n") == 1 + len(preset.tasks) * len(preset.models)


def test_recorded_names_the_modes():
    with pytest.raises(ValueError, match="mode must be 'full' or 'quick'; got 'tiny'"):
        tracking.recorded("tiny")


def test_the_best_rate_is_chosen_at_the_training_length():
    def run(rate, seed, short, long):
        return {"task": "parity", "model": "linear", "learning_rate": rate, "seed": seed,
                "lengths": [{"length": 4, "accuracy": short, "last_accuracy": short},
                            {"length": 8, "accuracy": long, "last_accuracy": long}]}

    record = {"runs": [run(1e-3, 0, 0.9, 0.2), run(3e-3, 0, 0.6, 0.9), run(1e-3, 1, 0.7, 0.4),
                       run(3e-3, 1, 0.8, 0.9)]}
    rows = tracking.summarise(record)
    assert [(r["length"], r["learning_rate"], r["min"], r["max"]) for r in rows] == [(4, 1e-3, 0.7, 0.9),
                                                                                    (8, 1e-3, 0.2, 0.4)]
    assert rows[0]["mean"] == pytest.approx(0.8) and rows[1]["seeds"] == 2
