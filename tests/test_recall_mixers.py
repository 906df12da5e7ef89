"""The recall lab's selective mixers (deltanet, gated_deltanet, gla, mamba2) and the capacity study."""

from __future__ import annotations

import json
from dataclasses import asdict, replace

import numpy as np
import pytest

import lattn_edu as la
from conftest import assert_close

torch = pytest.importorskip("torch")

from lattn_edu import recall  # noqa: E402  (needs torch, skipped above when missing)
from lattn_edu.recall import study as study_module  # noqa: E402
from lattn_edu.records import load_record  # noqa: E402

SMALL = replace(recall.TINY, d_model=20, num_heads=2)  # d_head = 10
SELECTIVE = [pytest.param(name, id=name) for name in ("deltanet", "gated_deltanet", "gla", "mamba2")]


def inputs(batch=3, n=37, seed=0):
    return torch.randn(batch, n, SMALL.d_model, generator=torch.Generator().manual_seed(seed),
                       dtype=torch.float64)  # [B, N, d_model]


@pytest.mark.parametrize("name", SELECTIVE)
def test_selective_model_trains_a_step_with_finite_gradients_everywhere(name):
    torch.manual_seed(1)
    model = recall.RecallModel(name, SMALL)
    data = torch.Generator().manual_seed(4)
    tokens, targets = recall.make_batch(3, 5, SMALL.num_keys, SMALL.num_values, data)
    logits = model(tokens, last=3)  # [B, P, vocab]
    torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets[:, -3:].flatten()).backward()
    mixer = model.mixers[0]
    for param_name, param in mixer.named_parameters():
        assert param.grad is not None and torch.isfinite(param.grad).all(), param_name
    assert mixer.qk.weight.grad.abs().sum() > 0  # the gradient reaches through the recurrence


@pytest.mark.parametrize("name", ["deltanet", "gated_deltanet"])
def test_delta_mixer_is_the_delta_rule_on_its_own_projections(name):
    torch.manual_seed(2)
    mixer = recall.make_mixer(name, SMALL, layer=0).double()
    x = inputs()
    q, k, v = mixer.project(x)
    unit_q, unit_k = (t.numpy() / t.norm(dim=-1, keepdim=True).numpy() for t in (q.detach(), k.detach()))
    beta = torch.sigmoid(mixer.beta(x)).transpose(1, 2).detach().numpy()  # [B, H, N]
    log_decay = None if name == "deltanet" else mixer.decay(x).detach().numpy()
    rule = la.delta_rule(unit_q, unit_k, v.detach().numpy(), beta, log_decay, form="recurrent")
    normed = rule / np.sqrt((rule ** 2).mean(-1, keepdims=True) + 1e-5)  # RMS norm per head
    expected = mixer.merge(torch.from_numpy(normed) * mixer.norm.weight)
    assert_close(mixer(x).detach(), expected.detach(), what=f"{name} mixer against la.delta_rule")


def test_mamba2_mixer_is_scalar_gated_linear_attention_on_its_projections():
    torch.manual_seed(3)
    mixer = recall.make_mixer("mamba2", SMALL, layer=0).double()
    x = inputs(n=70)  # two chunks of 64
    q, k, v = (t.detach().numpy() for t in mixer.project(x))
    step = torch.nn.functional.softplus(mixer.decay.dt(x) + mixer.decay.dt_bias)  # [B, N, H]
    g = (-mixer.decay.A_log.exp() * step).transpose(1, 2)  # [B, H, N]
    rule = la.gated_linear_attention(q, k, v, g.detach().numpy(), form="recurrent")
    mixed = mixer.mix_selective(x, *mixer.project(x))
    assert_close(mixed.detach(), rule, what="mamba2 mixer against la.gated_linear_attention")


@pytest.mark.parametrize("name", ["gated_deltanet", "gla", "mamba2"])
def test_gates_start_near_one_so_a_key_survives_a_128_token_gap(name):
    torch.manual_seed(5)
    mixer = recall.make_mixer(name, replace(SMALL, d_model=64, num_heads=4), layer=0)
    x = torch.randn(2, 9, 64) * 0.1  # small inputs: the gate is then its bias
    log_decay = (mixer.decay(x) if name != "gla" else mixer.log_decay(x)).detach()  # [B, H, N(, d_qk)]
    assert (log_decay <= 0).all()
    assert (128 * log_decay).exp().min() > 0.2  # Mamba-2's own init would give α^128 ≈ 0 in some heads


def test_gla_decays_one_number_per_key_channel():
    mixer = recall.make_mixer("gla", SMALL, layer=0)
    assert mixer.log_decay(inputs().float()).shape == (3, 2, 37, 10)  # [B, H, N, d_qk]


def test_log_linear_mixer_starts_as_mamba2_and_is_la_log_linear_attention_on_its_projections():
    torch.manual_seed(6)
    log_linear = recall.make_mixer("log_linear", SMALL, layer=0).double()
    mamba2 = recall.make_mixer("mamba2", SMALL, layer=0).double()
    mamba2.load_state_dict(log_linear.state_dict(), strict=False)  # all but the level weights
    x = inputs(n=70)  # two chunks of 64, 8 levels
    assert_close(log_linear(x).detach(), mamba2(x).detach(), what="log-linear at λ = 1 against mamba2")
    with torch.no_grad():  # level weights that differ by level, token and head
        torch.nn.init.normal_(log_linear.levels.weight, std=0.3)
    q, k, v = (t.detach().numpy() for t in log_linear.project(x))
    weights = log_linear.level_weights(x).detach().numpy()  # [B, H, N, L]
    assert weights.shape == (3, 2, 70, 8) and weights.min() >= 0 and weights.std() > 0.05
    rule = la.log_linear_attention(q, k, v, log_linear.decay(x).detach().numpy(), weights, form="recurrent")
    mixed = log_linear.mix_selective(x, *log_linear.project(x))
    assert_close(mixed.detach(), rule, what="log_linear mixer against la.log_linear_attention")


def test_a_recall_model_takes_a_layer_pattern():
    config = replace(SMALL, num_layers=4)
    kinds = [type(m).__name__ for m in recall.RecallModel("gated_deltanet+softmax", config).mixers]
    assert kinds == ["GatedDeltaNetMixer", "SoftmaxMixer"] * 2
    hybrid = recall.RecallModel("gated_deltanet*3+softmax", config)
    # after 30 tokens: three states of 2 heads x 10 x 10, one layer's 30 keys and values of 2 x 10
    assert hybrid.state_size() is None and hybrid.cache_floats(30) == 3 * 200 + 30 * 2 * 20
    with pytest.raises(ValueError, match="num_layers must be a multiple of the 4 layers"):
        recall.RecallModel("gated_deltanet*3+softmax", replace(SMALL, num_layers=6))


def test_a_study_trains_each_windowed_model_at_each_window(tmp_path):
    study = replace(TINY_STUDY, models=("sliding_window", "linear+sliding_window", "linear"), seeds=(0,),
                    learning_rates=(3e-3,), sweep_models=(), windows=(2, 5),
                    base=replace(recall.TINY, num_layers=2))
    record = recall.run_study(study, tmp_path / "w.json", "tiny", progress=False)
    got = {(r["model"], r.get("window")): r for r in record["runs"]}
    assert sorted(got, key=str) == sorted([("sliding_window", 2), ("sliding_window", 5), ("linear", None),
                                           ("linear+sliding_window", 2), ("linear+sliding_window", 5)], key=str)
    assert got["sliding_window", 2]["id"].endswith("/d16/W2") and got["linear", None]["id"].endswith("/d16")
    key_value = 2 * 16  # per token and layer: a key and a value of 2 heads x 8
    assert got["sliding_window", 2]["cache_floats"] == 2 * 2 * key_value  # two layers, the last 2 tokens
    assert got["sliding_window", 5]["cache_floats"] == 2 * 5 * key_value
    assert got["linear+sliding_window", 5]["cache_floats"] == 2 * 8 * 9 + 5 * key_value
    assert got["linear", None]["cache_floats"] == 2 * (2 * 8 * 9)  # two fixed states, whatever n
    rows = {(r["model"], r.get("window")) for r in recall.summarise(record)}
    assert rows == set(got)


def test_the_hybrid_study_has_what_chapter_15_reads():
    runs = list(recall.planned_runs(recall.HYBRID_STUDY))
    base = recall.HYBRID_STUDY.base
    assert base.num_layers == 4 and recall.HYBRID_STUDY.seeds == (0, 1, 2)
    softmax_layers = {r["model"]: recall.layer_pattern(r["model"], 4).count("softmax") for r in runs}
    assert {0, 1, 2, 4} <= set(softmax_layers.values())
    windows = sorted({r["window"] for r in runs if "window" in r})
    assert windows == [16, 32, 64, 128] and all(r["model"] == "sliding_window" for r in runs if "window" in r)
    assert "log_linear" in softmax_layers and len(runs) == 3 * (6 + 4)


def test_selective_mixer_refuses_to_mix_without_its_input():
    mixer = recall.make_mixer("deltanet", SMALL, layer=0)
    q = torch.zeros(1, 2, 3, 10)
    with pytest.raises(TypeError, match="DeltaNetMixer mixes with gates read from x"):
        mixer.mix(q, q, q)


TINY_STUDY = recall.StudyConfig(base=recall.TINY, models=("linear", "deltanet"), pair_counts=(2,),
                                seeds=(0, 1), learning_rates=(1e-3, 3e-3), sweep_models=("linear",),
                                sweep_pairs=2, sweep_widths=(8, 16), curve_every=2)


def test_study_plans_every_seed_rate_and_width_and_records_them(tmp_path):
    out = tmp_path / "study.json"
    record = recall.run_study(TINY_STUDY, out, "tiny", progress=False)
    assert json.loads(out.read_text(encoding="utf-8")) == json.loads(json.dumps(record))
    # per seed: 2 models x 2 rates, then the sweep's width 8 (width 16 is linear's main run at 3e-3)
    assert record["complete"] and record["planned_runs"] == 2 * (2 * 2 + 1) == len(record["runs"])
    main = [r for r in record["runs"] if r["part"] == "main"]
    assert {(r["model"], r["seed"], r["learning_rate"]) for r in main} == {
        (m, s, lr) for m in ("linear", "deltanet") for s in (0, 1) for lr in (1e-3, 3e-3)}
    assert all(len(r["loss_curve"]) == 2 for r in record["runs"])  # 3 steps in windows of 2
    sweep = recall.summarise(record, "state_sweep")
    assert [(r["d_model"], r["state_size"], r["seeds"]) for r in sweep] == [
        (16, 2 * 8 * 9, 2), (8, 2 * 4 * 5, 2)]  # linear's H·m·(d_head + 1), in the order trained


def test_a_stopped_study_leaves_an_honest_partial_record(tmp_path, monkeypatch):
    out, trained = tmp_path / "study.json", []
    real = study_module.train_run

    def stop_after_three(task):
        if len(trained) == 3:
            raise KeyboardInterrupt
        trained.append(task)
        return real(task)

    monkeypatch.setattr(study_module, "train_run", stop_after_three)
    with pytest.raises(KeyboardInterrupt):
        recall.run_study(TINY_STUDY, out, "tiny", progress=False)
    record = json.loads(out.read_text(encoding="utf-8"))
    assert not record["complete"] and len(record["finished"]) == 3 == len(record["runs"])
    assert record["finished"][0] == "main/linear/P2/seed0/lr0.001/d16"

    monkeypatch.setattr(study_module, "train_run", real)
    resumed = recall.run_study(TINY_STUDY, out, "tiny", progress=False, resume=True)
    assert resumed["complete"] and resumed["runs"][:3] == record["runs"]
    assert resumed["finished"] == [study_module.run_id(run) for run in recall.planned_runs(TINY_STUDY)]
    with pytest.raises(ValueError, match="holds a study with other settings"):
        recall.run_study(replace(TINY_STUDY, seeds=(0,)), out, "tiny", progress=False, resume=True)


def test_summary_keeps_the_best_rate_by_mean_over_seeds():
    runs = [{"part": "main", "model": "linear", "num_pairs": 8, "d_model": 64, "state_size": 7,
             "learning_rate": rate, "accuracy": acc}
            for rate, acc in ((1e-3, 0.2), (1e-3, 0.6), (3e-3, 0.5), (3e-3, 0.45))]
    (row,) = recall.summarise({"runs": runs})
    assert (row["learning_rate"], row["seeds"], row["min"], row["max"]) == (3e-3, 2, 0.45, 0.5)
    assert row["mean"] == pytest.approx(0.475)


def test_study_refuses_an_unknown_model_before_training(tmp_path):
    with pytest.raises(ValueError, match="model 'mamba' names mixer 'mamba'"):
        recall.run_study(replace(TINY_STUDY, sweep_models=("mamba",)), tmp_path / "x.json", "tiny",
                         progress=False)
    assert not (tmp_path / "x.json").exists()


def test_study_options_override_the_preset():
    import argparse

    parser = argparse.ArgumentParser()
    recall.add_arguments(parser)
    args = parser.parse_args(["--study", "full", "--seeds", "4", "5", "6", "--learning-rates", "0.01",
                              "--models", "linear", "deltanet", "--steps", "9", "--out", "x.json"])
    study = recall.cli.study_from_args(args)
    assert (study.seeds, study.learning_rates, study.models, study.base.steps) == (
        (4, 5, 6), (0.01,), ("linear", "deltanet"), 9)
    assert study.sweep_models == recall.FULL_STUDY.sweep_models  # the sweep keeps its own models


def test_a_study_trained_by_two_workers_equals_one_trained_in_order(tmp_path):
    study = replace(TINY_STUDY, models=("linear", "gated_deltanet"), seeds=(3,), learning_rates=(3e-3,))
    # per seed: 2 models, then the sweep's width 8
    in_order = recall.run_study(study, tmp_path / "one.json", "tiny", progress=False, workers=1)
    side_by_side = recall.run_study(study, tmp_path / "two.json", "tiny", progress=False, workers=2)
    assert side_by_side["config"]["workers"] == 2 and in_order["complete"] and side_by_side["complete"]
    assert without_timings(side_by_side["runs"]) == without_timings(in_order["runs"])
    assert len({r["accuracy"] for r in in_order["runs"]} | {r["final_loss"] for r in in_order["runs"]}) > 2


def without_timings(runs):
    return [{key: value for key, value in run.items() if key != "train_seconds"} for run in runs]


def test_the_quick_study_trains_only_what_chapters_10_and_11_read():
    runs = list(recall.planned_runs(recall.QUICK_STUDY))
    assert {r["part"] for r in runs} == {"main"}  # no state-sweep runs of its own
    assert {r["model"] for r in runs} == {"softmax", "linear", "deltanet", "gated_deltanet", "mamba2", "gla"}
    assert len(runs) == 6 * 3 and {r["num_pairs"] for r in runs} == {8}


def test_the_quick_study_is_the_shipped_records_main_part():
    # the chapters' record was trained by the earlier preset (with a width-32 sweep besides):
    # its main runs are the ones the preset trains now, with the same settings
    shipped = load_record("recall_study_quick.json")
    planned = [study_module.run_id(run) for run in recall.planned_runs(recall.QUICK_STUDY)]
    assert [r["id"] for r in shipped["runs"] if r["part"] == "main"] == planned
    settings = json.loads(json.dumps(asdict(recall.QUICK_STUDY)))
    # settings added since the record, at defaults that change none of its runs: the study's
    # windows (for models with a sliding-window layer, which it has none of) and the base's window
    assert (settings.pop("windows"), settings["base"].pop("window")) == ([], 64)
    assert {key: value for key, value in shipped["config"].items() if key in settings and key != "sweep_widths"} == {
        key: value for key, value in settings.items() if key != "sweep_widths"}
