"""Tests for lattn_edu.recall: the MQAR data, the five models, and the sweep end to end."""

from __future__ import annotations

import ast
import json
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pytest

import lattn_edu as la
from conftest import assert_close

torch = pytest.importorskip("torch")

from lattn_edu import cli, recall  # noqa: E402  (needs torch, skipped above when missing)
from lattn_edu.records import load_record  # noqa: E402

SMALL = replace(recall.TINY, d_model=16, num_heads=2, taylor_dim=3)
MODELS = [pytest.param(name, id=name) for name in recall.MODELS]


def batch(num_pairs=5, batch_size=6, num_keys=12, num_values=9, seed=0):
    return recall.make_batch(num_pairs, batch_size, num_keys, num_values,
                             torch.Generator().manual_seed(seed))


def test_batch_layout_pairs_then_queries():
    tokens, targets = batch()
    assert tokens.shape == targets.shape == (6, 15)
    keys, values = tokens[:, 0:10:2], tokens[:, 1:10:2]
    assert ((keys >= 0) & (keys < 12)).all() and ((values >= 12) & (values < 21)).all()
    assert all(len(set(row.tolist())) == 5 for row in keys), "keys repeat within a sequence"
    assert (targets[:, :10] == -100).all()  # no answer is asked inside the pairs


def test_every_query_is_answered_by_the_value_after_its_key():
    tokens, targets = batch()
    for row, answers in zip(tokens, targets):
        pairs = dict(zip(row[0:10:2].tolist(), row[1:10:2].tolist()))
        queries = row[10:].tolist()
        assert sorted(queries) == sorted(pairs)  # every key is asked exactly once
        assert answers[10:].tolist() == [pairs[q] for q in queries]


def test_batches_are_seeded():
    assert all(torch.equal(a, b) for a, b in zip(batch(seed=3), batch(seed=3)))
    assert not torch.equal(batch(seed=3)[0], batch(seed=4)[0])


def test_too_many_pairs_for_the_keys_is_refused():
    with pytest.raises(ValueError, match="num_pairs"):
        batch(num_pairs=13, num_keys=12)


def test_retention_mixer_is_retention_then_a_per_head_norm(rng):
    mixer = recall.RetentionMixer(d_model=12, num_heads=3).double()
    q, k, v = (rng.standard_normal((2, 3, 37, 4)) for _ in range(3))
    retained = la.retention(q * 4 ** -0.5, k, v, mixer.gammas, form="recurrent")  # [B, H, N, d_head]
    mean, var = retained.mean(-1, keepdims=True), retained.var(-1, keepdims=True)
    out = mixer.mix(*(torch.from_numpy(x) for x in (q, k, v)))
    assert_close(out, (retained - mean) / np.sqrt(var + 1e-5), what="RetentionMixer.mix")


@pytest.mark.parametrize("name", MODELS)
def test_model_shapes(name):
    model = recall.RecallModel(name, SMALL)
    tokens, _ = batch(num_pairs=4, batch_size=3, num_keys=SMALL.num_keys, num_values=SMALL.num_values)
    vocab = SMALL.num_keys + SMALL.num_values
    assert model(tokens).shape == (3, 12, vocab)
    assert model(tokens, last=4).shape == (3, 4, vocab)
    # two heads of width 8: S [m, 8] and z [m] per head; retention keeps no z; softmax a KV cache
    expected_state = {"softmax": None, "linear": 2 * 8 * 9, "favor": 2 * 8 * 9, "retnet": 2 * 8 * 8,
                      "based": 2 * la.taylor_width(3) * 9, "deltanet": 2 * 8 * 8,
                      "gated_deltanet": 2 * 8 * 8, "gla": 2 * 8 * 8, "mamba2": 2 * 8 * 8,
                      "deltanet_neg": 2 * 8 * 8, "deltaproduct": 2 * 8 * 8,
                      "ttt_linear": 2 * 8 * 9, "titans_linear": 2 * 2 * 8 * 9, "least_squares": 2 * 8 * 16,
                      "kda": 2 * 8 * 8, "sliding_window": None, "log_linear": None}
    assert model.state_size() == expected_state[name]
    # what it keeps after the 12 tokens: a key and a value of 2 x 8 per token (all 12 fit the
    # window of 64), or ceil(log2 12) + 1 = 5 levels of Mamba-2's state, or the fixed state
    grown = {"softmax": 12 * 2 * 16, "sliding_window": 12 * 2 * 16, "log_linear": 5 * 2 * 8 * 8}
    assert model.cache_floats(12) == grown.get(name, expected_state[name])


@pytest.mark.parametrize("name", MODELS)
def test_mixer_is_causal_across_chunks(name):
    """Changing position t changes no output before t (N = 70 spans two chunks of 64)."""
    torch.manual_seed(0)
    mixer = recall.make_mixer(name, SMALL, layer=0).double()
    x = torch.randn(2, 70, SMALL.d_model, dtype=torch.float64)
    changed = x.clone()
    changed[:, 66] += torch.randn(SMALL.d_model, dtype=torch.float64)
    before, after = mixer(x), mixer(changed)
    assert torch.allclose(before[:, :66], after[:, :66], rtol=1e-10, atol=1e-12)
    assert not torch.allclose(before[:, 66], after[:, 66])


@pytest.mark.parametrize("name", MODELS)
def test_model_is_causal(name):
    model = recall.RecallModel(name, SMALL)
    tokens, _ = batch(num_pairs=4, batch_size=2, num_keys=SMALL.num_keys, num_values=SMALL.num_values)
    changed = tokens.clone()
    changed[:, 7] = (changed[:, 7] + 1) % SMALL.num_keys
    with torch.no_grad():
        before, after = model(tokens), model(changed)
    assert torch.allclose(before[:, :7], after[:, :7], atol=1e-6)
    assert not torch.allclose(before[:, 7:], after[:, 7:])


def test_sweep_refuses_more_pairs_than_keys_before_training():
    with pytest.raises(ValueError, match="pair_counts"):
        recall.sweep(replace(recall.TINY, pair_counts=(2, 9)), progress=False)


@pytest.mark.parametrize("name", MODELS)
def test_every_registered_mixer_builds_from_a_config_and_keeps_the_shape(name):
    mixer = recall.make_mixer(name, SMALL, layer=1)
    assert isinstance(mixer, recall.MIXERS[name]) and mixer.name == name
    x = torch.randn(3, 7, SMALL.d_model, generator=torch.Generator().manual_seed(2))  # [B, N, d_model]
    out = mixer(x)
    assert out.shape == (3, 7, SMALL.d_model) and torch.isfinite(out).all()


def test_the_registry_is_the_list_of_models():
    assert recall.MODELS == tuple(recall.MIXERS) == ("softmax", "linear", "favor", "retnet", "based",
                                                     "deltanet", "gated_deltanet", "deltanet_neg", "gla",
                                                     "mamba2", "deltaproduct", "ttt_linear", "titans_linear",
                                                     "least_squares", "kda", "sliding_window", "log_linear")
    # the recall sweep's default: all but chapter 13's state-tracking mixers, chapter 14's learners
    # and chapter 15's
    assert recall.RECALL_MODELS == tuple(m for m in recall.MODELS if m not in (
        "deltanet_neg", "deltaproduct", "ttt_linear", "titans_linear", "least_squares", "kda",
        "sliding_window", "log_linear"))
    assert all(issubclass(cls, recall.Mixer) for cls in recall.MIXERS.values())


def test_unknown_mixer_is_refused_with_the_known_names():
    with pytest.raises(ValueError, match="mixer must be one of softmax, linear, favor, retnet, based, deltanet, "
                       "gated_deltanet, deltanet_neg, gla, mamba2, deltaproduct, ttt_linear, titans_linear, "
                       "least_squares, kda, sliding_window, log_linear; got 'mamba'"):
        recall.make_mixer("mamba", SMALL, layer=0)
    with pytest.raises(ValueError, match="model 'mamba' names mixer 'mamba'; mixers are softmax, linear"):
        recall.RecallModel("mamba", SMALL)


def test_unknown_model_in_a_sweep_is_refused_before_training():
    with pytest.raises(ValueError, match="model 'mamba' names mixer 'mamba'; mixers are softmax"):
        recall.sweep(replace(recall.TINY, models=("softmax", "mamba")), progress=False)


def test_a_name_registers_once_and_only_mixers_register():
    with pytest.raises(ValueError, match="'linear' is already registered"):
        recall.register_mixer("linear")
    with pytest.raises(TypeError, match="needs a Mixer subclass"):
        recall.register_mixer("plain")(torch.nn.Linear)
    assert "plain" not in recall.MIXERS


def test_progress_bar_stays_off_when_stderr_is_not_a_terminal(capsys):
    recall.sweep(replace(recall.TINY, models=("linear",), pair_counts=(2,), steps=2), progress=True)
    assert capsys.readouterr().err == ""


def test_tiny_sweep_through_the_cli_writes_valid_json(tmp_path, capsys):
    out = tmp_path / "recall.json"
    assert cli.main(["recall", "--tiny", "--seed", "1", "--no-progress", "--out", str(out)]) == 0
    record = json.loads(out.read_text(encoding="utf-8"))
    results, config = record["results"], record["config"]
    assert len(results) == len(recall.RECALL_MODELS) * len(recall.TINY.pair_counts)
    assert {(r["model"], r["num_pairs"]) for r in results} == {
        (m, p) for m in recall.RECALL_MODELS for p in recall.TINY.pair_counts}
    for r in results:
        assert 0 <= r["accuracy"] <= 1 and r["seed"] == 1 and r["steps"] == recall.TINY.steps
    assert config["mode"] == "tiny" and config["wall_seconds"] >= 0 and config["threads"] == 1
    assert "| softmax |" in capsys.readouterr().out  # the accuracy table is printed


def test_sweep_is_deterministic():
    config = replace(recall.TINY, models=("softmax", "favor"), pair_counts=(3,), steps=4)
    first, second = recall.sweep(config, progress=False), recall.sweep(config, progress=False)
    assert [(r["accuracy"], r["final_loss"]) for r in first] == [
        (r["accuracy"], r["final_loss"]) for r in second]


def test_a_sweep_trained_by_two_workers_equals_one_trained_in_order():
    config = replace(recall.TINY, models=("favor", "retnet", "mamba2"), pair_counts=(3, 5), steps=5, seed=7)
    in_order = recall.sweep(config, progress=False, workers=1)
    side_by_side = recall.sweep(config, progress=False, workers=2)
    assert [(r["model"], r["num_pairs"]) for r in side_by_side] == [
        (m, p) for p in (3, 5) for m in ("favor", "retnet", "mamba2")]
    assert [without_timing(r) for r in side_by_side] == [without_timing(r) for r in in_order]
    assert len({r["final_loss"] for r in in_order}) == len(in_order)  # distinct runs, not one repeated


def without_timing(row):
    return {key: value for key, value in row.items() if key != "train_seconds"}


@pytest.mark.parametrize("workers", [0, -1, 1.5, True, "2"])
def test_workers_must_be_a_positive_int(workers):
    with pytest.raises(ValueError, match=f"workers must be a positive int; got {workers!r}"):
        recall.sweep(replace(recall.TINY, models=("linear",), pair_counts=(2,)), progress=False,
                     workers=workers)


def test_quick_keeps_what_chapter_7_reads_from_it():
    full = recall.RecallConfig()
    # chapter 7 reads the five models at P = 64 (and tabulates P = 16) after half the steps at
    # twice the rate, at the full sweep's width
    assert recall.QUICK.models == recall.CHAPTER7_MODELS == ("softmax", "linear", "favor", "retnet", "based")
    assert set(recall.QUICK.pair_counts) == {16, 64} and full.models == recall.RECALL_MODELS
    assert (recall.QUICK.steps, recall.QUICK.learning_rate) == (800, 2 * full.learning_rate)
    assert (recall.QUICK.d_model, recall.QUICK.num_heads) == (full.d_model, full.num_heads)
    assert min(full.pair_counts) < full.d_model // full.num_heads < max(full.pair_counts)


def test_quick_is_the_shipped_quick_records_settings():
    shipped = load_record("recall_quick.json")["config"]
    settings = json.loads(json.dumps(asdict(recall.QUICK)))
    assert settings.pop("window") == 64  # added since the record; none of its models reads it
    assert {key: shipped[key] for key in settings} == settings


def recall_parser():
    import argparse

    parser = argparse.ArgumentParser()
    recall.add_arguments(parser)
    return parser


def test_help_states_each_quick_budget():
    text = " ".join(recall_parser().format_help().split())
    assert f"budget: {recall.QUICK_BUDGET_MINUTES['quick']} minutes on 2 free cores" in text
    assert f"budget {recall.QUICK_BUDGET_MINUTES['study quick']} minutes on 2 free cores" in text


def test_out_defaults_to_a_file_named_by_the_mode_in_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["recall", "--tiny", "--models", "linear", "--pairs", "2", "--no-progress"]) == 0
    record = json.loads((tmp_path / "recall_tiny.json").read_text(encoding="utf-8"))
    assert record["config"]["workers"] == 1 and [r["model"] for r in record["results"]] == ["linear"]
    assert recall.cli.out_path(recall_parser().parse_args(["--study", "quick"])) == Path("recall_study_quick.json")
    assert recall.cli.out_path(recall_parser().parse_args(["--quick", "--out", "x/y.json"])) == Path("x/y.json")


def test_the_mixers_do_not_import_the_configuration_that_names_them():
    tree = ast.parse(Path(recall.mixers.__file__).read_text(encoding="utf-8"))
    modules = {"." * node.level + (node.module or "") for node in ast.walk(tree)
               if isinstance(node, ast.ImportFrom)}
    assert "..gated" in modules  # the walk sees the imports
    assert not modules & {".config", ".model", ".training", ".study", "lattn_edu.recall.config"}


def test_window_reach_is_the_share_of_queries_whose_value_lies_in_the_window():
    generator = torch.Generator().manual_seed(33)
    tokens, targets = recall.make_batch(7, 400, 16, 16, generator)
    queries = torch.arange(14, 21)  # positions 2P .. 3P − 1
    for window in (1, 3, 8, 13, 20, 21):
        seen = []
        for sequence, answers in zip(tokens, targets):
            for t in queries:
                value_at = 2 * int((sequence[:2 * 7:2] == sequence[t]).nonzero()[0]) + 1  # after its key
                seen.append(t - value_at < window)
        assert abs(np.mean(seen) - recall.window_reach(7, window)) < 0.03, window
    assert recall.window_reach(7, 20) == 1.0 and recall.window_reach(7, 1) == 0.0
    # P = 32, W = 64: query i sees value j when i <= 2j, all 32 queries for j >= 16, 2j + 1 below
    assert recall.window_reach(32, 64) == (16 * 32 + sum(2 * j + 1 for j in range(16))) / 32 ** 2
    for bad in (0, 2.0, True):
        with pytest.raises(ValueError, match=f"window must be a positive int; got {bad!r}"):
            recall.window_reach(3, bad)


def test_no_lookup_baselines_match_counting_every_outcome_of_a_small_task():
    # P = 2 pairs, 3 values: 9 equally likely value pairs, 3 alike (largest count 2), 6 distinct
    base = recall.no_lookup_baselines(2, 3, draws=60_000, seed=5)
    assert base["most_frequent_accuracy"] == pytest.approx((3 * 2 + 6 * 1) / 9 / 2, abs=0.01)  # 2/3
    assert base["frequency_loss"] == pytest.approx(6 / 9 * np.log(2), abs=0.01)  # alike: 0 nats
    assert base["all_distinct"] == pytest.approx(6 / 9, abs=0.01) and base["three_or_more"] == 0.0
    # P = 3 pairs, 2 values: 8 outcomes, 2 all alike; none all distinct
    three = recall.no_lookup_baselines(3, 2, draws=60_000, seed=7)
    assert three["three_or_more"] == pytest.approx(2 / 8, abs=0.01) and three["all_distinct"] == 0.0
    assert recall.no_lookup_baselines(2, 3, draws=999, seed=1) == recall.no_lookup_baselines(2, 3, draws=999, seed=1)
    for bad in (0, 2.0, True):
        with pytest.raises(ValueError, match=f"num_values must be a positive int; got {bad!r}"):
            recall.no_lookup_baselines(3, bad)


def test_the_learning_rate_warms_up_then_follows_the_half_cosine_and_drives_the_optimiser():
    assert recall.learning_rate_factor(0, 800) == pytest.approx(1 / 80)  # warm-up: a tenth
    assert recall.learning_rate_factor(39, 800) == pytest.approx(0.5)
    assert recall.learning_rate_factor(450, 1500) == pytest.approx(0.5 * (1 + np.cos(0.3 * np.pi)))
    assert recall.learning_rate_factor(800, 800) == pytest.approx(0.0)
    from lattn_edu.recall.training import make_optimiser

    config = replace(SMALL, steps=17, learning_rate=3e-3)
    optimiser, schedule = make_optimiser(recall.RecallModel("linear", config), config)
    for step in range(config.steps):
        assert optimiser.param_groups[0]["lr"] == pytest.approx(3e-3 * recall.learning_rate_factor(step, 17))
        optimiser.step()
        schedule.step()
