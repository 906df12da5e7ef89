"""Tests for lattn_edu.lm (chapter 15's character-level language-model lab) and the two recall
mixers it added: kda (a decay per key channel) and sliding_window (softmax over the last W keys)."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, replace

import numpy as np
import pytest

import lattn_edu as la
from conftest import assert_close

torch = pytest.importorskip("torch")

from lattn_edu import cli, lm, recall, records  # noqa: E402  (needs torch, skipped above when missing)
from lattn_edu.lm import lab as lab_module  # noqa: E402
from lattn_edu.lm.probes import bits  # noqa: E402

SIZES = replace(lm.TINY.base, d_model=20, num_heads=2, taylor_dim=3, window=5)  # d_head = 10
VOCAB = 11
TIMING = {"decode_ms", "train_seconds", "eval_seconds", "wall_seconds", "load_average"}


def inputs(n=37, seed=0):
    return torch.randn(3, n, SIZES.d_model, generator=torch.Generator().manual_seed(seed),
                       dtype=torch.float64)  # [B, N, d_model]


# --- the recall mixers chapter 15 added -------------------------------------------------------

def test_kda_decays_each_key_channel_on_its_own_and_starts_near_one():
    torch.manual_seed(1)
    mixer = recall.make_mixer("kda", SIZES, layer=0)
    log_decay = mixer.log_decay(0.1 * torch.randn(2, 9, SIZES.d_model)).detach()  # [B, H, N, d_qk]
    assert log_decay.shape == (2, 2, 9, 10) and (log_decay <= 0).all()
    assert (128 * log_decay).exp().min() > 0.2  # a key survives a 128-token gap before training
    assert not torch.allclose(log_decay, log_decay[..., :1].expand_as(log_decay))


def test_kda_mixer_is_the_delta_rule_with_its_channel_decay_on_its_own_projections():
    torch.manual_seed(2)
    mixer = recall.make_mixer("kda", SIZES, layer=0).double()
    x = inputs()
    q, k, v = (t.detach().numpy() for t in mixer.project(x))
    unit_q, unit_k = (t / np.linalg.norm(t, axis=-1, keepdims=True) for t in (q, k))
    beta = torch.sigmoid(mixer.beta(x)).transpose(1, 2).detach().numpy()  # [B, H, N]
    rule = la.delta_rule(unit_q, unit_k, v, beta, mixer.decay(x).detach().numpy(), form="recurrent")
    normed = rule / np.sqrt((rule ** 2).mean(-1, keepdims=True) + 1e-5)  # RMS norm per head
    expected = mixer.merge(torch.from_numpy(normed) * mixer.norm.weight)
    assert_close(mixer(x).detach(), expected.detach(), what="kda mixer against la.delta_rule")


def test_kda_with_every_channel_of_a_head_decaying_alike_is_gated_deltanet():
    torch.manual_seed(3)
    gdn = recall.make_mixer("gated_deltanet", SIZES, layer=0).double()
    kda = recall.make_mixer("kda", SIZES, layer=0).double()
    heads, d_k = gdn.num_heads, gdn.d_qk
    for name in ("qk", "v", "out", "norm", "beta"):
        getattr(kda, name).load_state_dict(getattr(gdn, name).state_dict())
    with torch.no_grad():  # W_up W_down x repeats GDN's one projection per head over the head's channels
        kda.decay.down.weight.zero_()
        kda.decay.down.weight[:heads] = gdn.decay.dt.weight
        kda.decay.up.weight.copy_(torch.eye(heads, kda.decay.down.out_features).repeat_interleave(d_k, 0))
        kda.decay.A_log.copy_(gdn.decay.A_log + 0.3)
        gdn.decay.A_log.add_(0.3)  # A ≠ 1, so that A's broadcast is checked too
        kda.decay.dt_bias.copy_(gdn.decay.dt_bias.repeat_interleave(d_k))
    x = inputs(n=45, seed=4)  # KDA's chunks of 8: five whole, one ragged
    assert_close(kda.log_decay(x).detach(), gdn.decay(x)[..., None].expand(-1, -1, -1, d_k).detach())
    assert_close(kda(x).detach(), gdn(x).detach(), what="kda with equal channels against gated_deltanet")


@pytest.mark.parametrize("window", [37, 38, 200])
def test_sliding_window_at_least_the_context_is_causal_softmax(window):
    torch.manual_seed(5)
    sliding = recall.SlidingWindowMixer(SIZES.d_model, 2, window=window).double()
    softmax = recall.SoftmaxMixer(SIZES.d_model, 2).double()
    softmax.load_state_dict(sliding.state_dict())
    x = inputs(n=37)
    assert_close(sliding(x).detach(), softmax(x).detach(), what=f"W = {window} >= N = 37")


@pytest.mark.parametrize("window", [1, 5, 36])
def test_sliding_window_mixer_is_la_softmax_attention_with_the_window(window):
    torch.manual_seed(6)
    mixer = recall.SlidingWindowMixer(SIZES.d_model, 2, window=window).double()
    q, k, v = (t.detach() for t in mixer.project(inputs(n=37)))
    reference = la.softmax_attention(q.numpy(), k.numpy(), v.numpy(), causal=True, window=window)
    assert_close(mixer.mix(q, k, v), reference, what=f"W = {window}")
    causal = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert not torch.allclose(mixer.mix(q, k, v), causal)


def test_sliding_window_reads_its_window_from_the_config_and_refuses_a_bad_one():
    assert recall.make_mixer("sliding_window", SIZES, layer=0).window == 5
    assert recall.make_mixer("sliding_window", recall.TINY, layer=0).window == 64  # RecallConfig has none
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match=f"window must be a positive int .*got {bad!r}"):
            recall.SlidingWindowMixer(SIZES.d_model, 2, window=bad)


# --- layer patterns and the model -------------------------------------------------------------

def test_layer_patterns_repeat_to_fill_the_stack():
    gdn = "gated_deltanet"
    assert lm.layer_pattern("hybrid", 4) == (gdn, gdn, gdn, "softmax")
    assert lm.layer_pattern("hybrid", 8) == (gdn, gdn, gdn, "softmax") * 2
    assert lm.layer_pattern("softmax", 3) == ("softmax",) * 3
    assert lm.layer_pattern("based", 4) == ("based", "sliding_window") * 2
    assert lm.layer_pattern("softmax+kda*2", 6) == ("softmax", "kda", "kda") * 2


def test_the_hybrid_puts_softmax_where_the_pattern_asks():
    def softmax_layers(model_name, layers):
        model = lm.LanguageModel(lm.layer_pattern(model_name, layers), SIZES, VOCAB)
        kinds = [type(mixer) for mixer in model.mixers]
        assert set(kinds) <= {recall.SoftmaxMixer, recall.GatedDeltaNetMixer}
        return [i for i, kind in enumerate(kinds) if kind is recall.SoftmaxMixer]

    assert softmax_layers("hybrid", 8) == [3, 7]  # Qwen3-Next: the last layer of every four
    assert softmax_layers("softmax+gated_deltanet*3", 8) == [0, 4]
    assert softmax_layers("gated_deltanet*5+softmax", 6) == [5]


@pytest.mark.parametrize("model, layers, message", [
    ("hybrid", 6, "num_layers must be a multiple of the 4 layers of model 'hybrid'.*got 6"),
    ("mamba", 4, "model 'mamba' names mixer 'mamba'; mixers are softmax, "),
    ("softmax+", 4, "names mixer ''"),
    ("softmax*0", 4, "the count after '\\*' must be a positive int; got '0'"),
    ("softmax*two", 4, "got 'two'"),
    ("", 4, "model must be a name in softmax, linear, .* or a layer pattern"),
    ("softmax", 0, "num_layers must be a positive int"),
])
def test_a_bad_layer_pattern_is_refused_by_name(model, layers, message):
    with pytest.raises(ValueError, match=message):
        lm.layer_pattern(model, layers)


@pytest.mark.parametrize("name", lm.LM_MODELS)
def test_decoding_token_by_token_gives_the_forward_logits_and_holds_what_cache_floats_says(name):
    torch.manual_seed(7)
    model = lm.LanguageModel(lm.layer_pattern(name, 4), SIZES, VOCAB).double()
    torch.nn.init.normal_(model.readout[1].weight)  # its zero start would hide every difference
    tokens = torch.randint(VOCAB, (2, 70), generator=torch.Generator().manual_seed(8))  # past a chunk of 64
    with torch.no_grad():
        full = model(tokens)  # [B, N, vocab]
        cache, stepped = model.start(2), []
        for t in range(tokens.shape[1]):
            logits, cache = model.step(tokens[:, t], cache)
            stepped.append(logits)
    assert_close(torch.stack(stepped, dim=1), full, what=f"{name}: decoding against the forward pass")
    held = sum(tail.numel() + sum(part.numel() for part in mixer) for tail, mixer in cache)
    assert held // 2 == sum(model.cache_floats(70).values())  # floats per sequence


def test_cache_floats_count_a_growing_kv_cache_a_capped_window_and_a_fixed_state():
    hybrid = lm.LanguageModel(lm.layer_pattern("hybrid", 4), SIZES, VOCAB)
    # one softmax layer: a key and a value of 2 heads x 10 per token; three states of 2 x 10 x 10
    assert hybrid.cache_floats(100) == {"kv": 40 * 100, "window": 0, "state": 3 * 200, "conv": 4 * 3 * 20}
    sliding = lm.LanguageModel(lm.layer_pattern("sliding_window", 4), SIZES, VOCAB)
    assert sliding.cache_floats(3)["window"] == 4 * 40 * 3
    capped = {"kv": 0, "window": 4 * 40 * 5, "state": 0, "conv": 4 * 3 * 20}
    assert sliding.cache_floats(5) == sliding.cache_floats(1000) == capped
    based = lm.LanguageModel(lm.layer_pattern("based", 2), SIZES, VOCAB)
    assert based.cache_floats(9) == {"kv": 0, "window": 40 * 5, "state": 2 * la.taylor_width(3) * 11,
                                     "conv": 2 * 3 * 20}


def test_a_mixer_without_a_decoding_step_is_named():
    with pytest.raises(ValueError, match="mixer 'gla' has no decoding step; the decodable mixers are "
                       "softmax, "):
        lm.LanguageModel(("softmax", "gla"), SIZES, VOCAB).start(1)
    with pytest.raises(ValueError, match="mixer 'deltaproduct' has no decoding step"):
        lm.check_lab(replace(lm.TINY, models=("softmax", "deltaproduct")))


# --- what the lab measures --------------------------------------------------------------------

def test_an_untrained_model_scores_log2_of_the_vocabulary():
    vocabulary, _, validation = lab_module.corpus()
    model = lm.LanguageModel(lm.layer_pattern("hybrid", 4), SIZES, vocabulary.size)
    tokens, targets = lm.validation_windows(validation, 33, 5)
    losses = lm.position_losses(model, tokens, targets)  # [5, 33]
    assert losses.shape == (5, 33) and vocabulary.size == 72
    assert_close(bits(losses), np.full((5, 33), math.log2(72)), rtol=1e-6, what="untrained bits per char")


def test_validation_windows_spread_evenly_from_the_first_token_to_the_last():
    ids = np.arange(1000) * 3
    tokens, targets = lm.validation_windows(ids, 17, 7)
    assert tokens.shape == targets.shape == (7, 17)
    assert tokens[0, 0] == 0 and targets[-1, -1] == ids[-1]  # the whole part, not one passage
    assert (targets[:, :-1] == tokens[:, 1:]).all()
    assert np.ptp(np.diff(tokens[:, 0])) <= 3  # equal gaps, up to rounding


def test_stretch_gain_and_window_margin_by_hand():
    from lattn_edu.lm.probes import EARLY_STRETCH, LATE_STRETCH, stretch_gain, window_margin

    line = np.arange(16, dtype=float)[::-1]  # bits fall by 1 per block: 15, 14, ..., 0
    assert stretch_gain(line) == pytest.approx(8.0)  # blocks 4-7 average 9.5, blocks 12-15 1.5
    window = np.full(16, 2.5)  # a flat control gains nothing
    assert window_margin(line, window) == pytest.approx(8.0)
    assert window_margin(line, line) == 0.0  # the control itself has no margin
    odd = np.array([3.0, 1.0, 2.0, 5.0, 4.0])
    assert stretch_gain(odd, slice(0, 2), slice(3, 5)) == pytest.approx(2.0 - 4.5)
    assert (EARLY_STRETCH, LATE_STRETCH) == (slice(4, 8), slice(12, 16))  # 64-127, 192-255


def test_the_copy_probe_scores_exactly_the_repeated_characters():
    ids = 100 + np.arange(10_000)  # text tokens >= 100, the random strings < 50: told apart by value
    tokens, targets, first, second = lm.copy_probe(ids, 50, 40, 6, 4, np.random.default_rng(0))
    assert tokens.shape == targets.shape == (4, 40)
    strings = tokens[:, 6:12]  # the first copy follows 6 characters of text
    for b in range(4):  # the copies are where the strings went, and nothing else changed
        assert list(np.flatnonzero(tokens[b] < 100)) == [*range(6, 12), *range(35, 40)]
        text = np.flatnonzero(tokens[b] >= 100)
        assert (tokens[b, text] - text == tokens[b, 0] - 0).all()  # consecutive text around them
    # scored: characters 2..6 of each copy, predicted at the position before each
    assert list(np.flatnonzero(first)) == list(range(6, 11))
    assert list(np.flatnonzero(second)) == list(range(35, 40))
    assert (targets[:, first] == strings[:, 1:]).all() and (targets[:, second] == strings[:, 1:]).all()
    assert (targets[:, 34] == strings[:, 0]).all()  # the second copy's first character: not scored
    with pytest.raises(ValueError, match="length must be at most \\(context \\+ 1\\) / 3 = 13 .*got 14"):
        lm.copy_probe(ids, 50, 40, 14, 4, np.random.default_rng(0))


# --- the lab ----------------------------------------------------------------------------------

RUN_FIELDS = {"model", "seed", "learning_rate", "id", "layers", "steps", "final_loss", "validation",
              "final_bits", "position_bits", "copy", "parameters", "cache_floats", "decode_ms", "loss_curve",
              "train_seconds", "eval_seconds", "wall_seconds", "threads", "load_average"}


def test_the_tiny_lab_writes_a_record_with_every_field(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["lm", "--tiny", "--no-progress"]) == 0
    record = json.loads((tmp_path / "lm_tiny.json").read_text(encoding="utf-8"))
    assert record["complete"] and record["planned_runs"] == len(record["runs"]) == len(lm.LM_MODELS)
    assert record["uniform_bits"] == round(math.log2(72), 4) and record["config"]["mode"] == "tiny"
    tiny = lm.TINY.base
    for run in record["runs"]:
        assert set(run) == RUN_FIELDS, run["id"]
        assert [c["step"] for c in run["validation"]] == [0, 2, 3]  # the start, every 2 steps, the end
        assert set(run["validation"][0]) == {"step", "bits", "copy_first_bits", "copy_second_bits"}
        assert abs(run["validation"][0]["bits"] - record["uniform_bits"]) < 1e-3  # untrained
        assert run["final_bits"] == run["validation"][-1]["bits"] and np.isfinite(run["final_loss"])
        assert len(run["position_bits"]) == tiny.context // lm.TINY.position_block
        assert set(run["copy"]) == {"length", "distance", "first_bits", "second_bits"}
        assert (run["copy"]["length"], run["copy"]["distance"]) == (4, tiny.context + 1 - 8)
        last = run["validation"][-1]  # the copy probe after training is the last checkpoint's
        assert (run["copy"]["first_bits"], run["copy"]["second_bits"]) == (last["copy_first_bits"],
                                                                           last["copy_second_bits"])
        floats = run["cache_floats"]
        assert floats["total"] == floats["kv"] + floats["window"] + floats["state"] + floats["conv"] > 0
        assert floats["per_token"] == round(floats["total"] / tiny.context, 2)
        assert run["decode_ms"] > 0 and run["parameters"] > 0 and run["layers"] == list(
            lm.layer_pattern(run["model"], tiny.num_layers))
    summary = capsys.readouterr().out
    assert all(f"| {model} | 0.003 | 1 |" in summary for model in lm.LM_MODELS)


def test_the_same_seed_gives_the_same_numbers_and_another_seed_others():
    lab = replace(lm.TINY, models=("hybrid",))

    def numbers(seed):
        row = lm.train_run(({"model": "hybrid", "seed": seed, "learning_rate": 3e-3}, lab))
        return {key: value for key, value in row.items() if key not in TIMING}

    first = numbers(0)
    assert numbers(0) == first
    other = numbers(1)
    assert other["final_loss"] != first["final_loss"] and other["validation"] != first["validation"]


def test_resume_trains_only_what_is_missing_and_needs_the_same_settings(tmp_path, monkeypatch):
    out = tmp_path / "lm.json"
    lab = replace(lm.TINY, models=("softmax", "mamba2"))
    lm.run_lab(replace(lab, models=("softmax",)), out, "tiny", progress=False)
    trained = []
    real = lab_module.train_run
    monkeypatch.setattr(lab_module, "train_run", lambda task: trained.append(task[0]["model"]) or real(task))
    with pytest.raises(ValueError, match="resume needs the same settings"):
        lm.run_lab(lab, out, "tiny", progress=False, resume=True)  # the file holds a one-model lab
    record = json.loads(out.read_text(encoding="utf-8"))
    record["config"]["models"] = list(lab.models)
    records.save_record({**record, "complete": False}, out)  # as if stopped after the first run
    resumed = lm.run_lab(lab, out, "tiny", progress=False, resume=True)
    assert trained == ["mamba2"] and resumed["complete"]
    assert [r["model"] for r in resumed["runs"]] == ["softmax", "mamba2"]


@pytest.mark.parametrize("change, message", [
    ({"models": ("mamba",)}, "names mixer 'mamba'"),
    ({"models": ()}, "models must name at least one of softmax, "),
    ({"base": replace(lm.TINY.base, d_model=15)}, "d_model must be a multiple of num_heads=2; got 15"),
    ({"base": replace(lm.TINY.base, num_layers=3)}, "num_layers must be a multiple of the 4 layers"),
    ({"base": replace(lm.TINY.base, steps=0)}, "steps"),
    ({"base": replace(lm.TINY.base, window=0)}, "window"),
    ({"eval_every": 0}, "eval_every"),
    ({"copy_length": 9}, "copy_length must be at most \\(context \\+ 1\\) / 3 = 8; got 9"),
    ({"learning_rates": (3e-3, 0.0)}, "learning_rates must be positive"),
    ({"seeds": ()}, "seeds must name at least one seed"),
])
def test_a_bad_lab_is_refused_by_name_before_training(change, message):
    with pytest.raises(ValueError, match=message):
        lm.check_lab(replace(lm.TINY, **change))


def test_the_command_line_refuses_bad_options_before_training(capsys):
    with pytest.raises(TypeError, match="lab must be a LabConfig; got dict"):
        lm.check_lab({"models": ("softmax",)})
    with pytest.raises(ValueError, match="names mixer 'mamba'"):
        cli.main(["lm", "--tiny", "--models", "mamba"])
    with pytest.raises(ValueError, match="workers must be a positive int; got 0"):
        cli.main(["lm", "--tiny", "--models", "softmax", "--workers", "0"])
    with pytest.raises(SystemExit):
        cli.main(["lm", "--tiny", "--quick"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_help_states_the_quick_budget(capsys):
    with pytest.raises(SystemExit):
        cli.main(["lm", "--help"])
    assert f"{lm.QUICK_BUDGET_MINUTES} minutes on 2 free cores" in " ".join(capsys.readouterr().out.split())


def test_the_presets_train_every_model_alike_and_full_has_three_seeds():
    assert lm.FULL.models == tuple(lm.LM_MODELS) and len(lm.FULL.seeds) >= 3
    assert set(lm.QUICK.models) <= set(lm.FULL.models) and lm.QUICK.seeds == (0,)
    assert replace(lm.QUICK.base, steps=lm.FULL.base.steps) == lm.FULL.base  # the same models, fewer steps
    for preset in (lm.FULL, lm.QUICK, lm.TINY):
        lm.check_lab(preset)


def fake_run(model, rate, seed, final_bits, train_seconds=10.0):
    return {"model": model, "learning_rate": rate, "seed": seed, "layers": [model], "final_bits": final_bits,
            "copy": {"first_bits": 8.0, "second_bits": 2.0 + seed}, "parameters": 1000,
            "cache_floats": {"per_token": 4.0, "total": 400}, "decode_ms": 1.0 + seed, "steps": 100,
            "validation": [{}] * 3, "train_seconds": train_seconds, "eval_seconds": 3.0,
            "wall_seconds": train_seconds + 4.0}


def test_the_summary_takes_each_model_at_its_best_rate_over_seeds():
    runs = [fake_run("a", 1e-3, 0, 2.0), fake_run("a", 3e-3, 0, 1.5), fake_run("a", 1e-3, 1, 2.2),
            fake_run("a", 3e-3, 1, 2.9), fake_run("b", 3e-3, 0, 3.0)]
    rows = lm.summarise({"runs": runs})
    assert [(r["model"], r["learning_rate"], r["seeds"]) for r in rows] == [("a", 1e-3, 2), ("b", 3e-3, 1)]
    assert rows[0]["bits"] == pytest.approx(2.1) and (rows[0]["min"], rows[0]["max"]) == (2.0, 2.2)
    assert rows[0]["copy_second"] == 2.5 and rows[0]["decode_ms"] == 1.5
    assert rows[0]["floats"] == 400 and rows[0]["floats_per_token"] == 4.0  # per sequence, per token
    assert "| a | 0.001 | 2 | 2.100 [2.000, 2.200] | 8.00 → 2.50 | 1,000 | 4 | 1.50 | 10 |" in \
        lm.format_summary(rows)


def test_the_full_lab_is_estimated_from_the_seconds_per_step_of_each_model():
    record = {"runs": [fake_run("softmax", 3e-3, 0, 2.0, train_seconds=10.0),
                       fake_run("hybrid", 3e-3, 0, 2.0, train_seconds=30.0)],
              "config": {"eval_windows": 3, "copy_sequences": 1}}
    lab = replace(lm.TINY, models=("softmax", "hybrid", "kda"), seeds=(0, 1), learning_rates=(1e-3,),
                  base=replace(lm.TINY.base, steps=1000), eval_every=500, eval_windows=6, copy_sequences=2)
    # per run: train s/step x 1000 steps + eval s/window (3 s / (4 x 3) windows) x 8 windows x 3 checkpoints
    # + the rest of its wall time (1 s)
    softmax, hybrid = 0.1 * 1000 + 6 + 1, 0.3 * 1000 + 6 + 1
    expected = 2 * (softmax + hybrid + (softmax + hybrid) / 2)  # kda: the mean of the two
    assert lm.estimate_seconds(record, lab, workers=1) == pytest.approx(expected)
    assert lm.estimate_seconds(record, lab, workers=2) == pytest.approx(expected / 2)


def test_the_shipped_quick_record_is_the_quick_preset_with_every_field():
    record = lm.recorded("quick")
    assert record["complete"] and record["config"]["mode"] == "quick"
    settings = {key: value for key, value in record["config"].items() if key in asdict(lm.QUICK)}
    assert settings == json.loads(json.dumps(asdict(lm.QUICK)))
    assert [r["model"] for r in record["runs"]] == list(lm.QUICK.models)
    assert all(set(r) == RUN_FIELDS for r in record["runs"])


def test_recorded_names_the_mode_and_says_how_to_make_a_missing_record(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="mode must be 'full' or 'quick'; got 'tiny'"):
        lm.recorded("tiny")
    monkeypatch.setattr(records, "DATA", tmp_path)
    with pytest.raises(FileNotFoundError, match="no recorded lm_quick.json .*`lattn-edu lm --quick --out"):
        lm.recorded("quick")
    records.save_record({"runs": []}, tmp_path / "lm.json")
    assert lm.recorded("full") == {"runs": []}


def test_the_plots_draw_each_seed_and_the_mean_at_the_best_rate():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lattn_edu.lm import plots

    def run(model, rate, seed, final_bits):
        row = fake_run(model, rate, seed, final_bits)
        row["validation"] = [{"step": s, "bits": final_bits + 1 / (s + 1)} for s in (0, 100, 200)]
        row["position_bits"] = [final_bits + seed, final_bits - seed, final_bits]
        return row

    record = {"runs": [run("hybrid", 1e-2, 0, 2.0), run("hybrid", 1e-2, 1, 2.4), run("hybrid", 3e-3, 0, 3.0),
                       run("softmax", 1e-2, 0, 2.5)], "config": {"position_block": 4}}
    fig = plots.plot_validation(record)
    lines = fig.axes[0].get_lines()
    assert len(lines) == 2 + 1 + 1 + 1  # hybrid: 2 seeds and the mean; softmax: 1 seed and the mean
    hybrid_mean = next(line for line in lines if line.get_label() == "hybrid (2)")
    assert list(hybrid_mean.get_xdata()) == [100, 200]  # step 0 left out
    assert np.allclose(hybrid_mean.get_ydata(), [2.2 + 1 / 101, 2.2 + 1 / 201])
    plt.close(fig)
    fig = plots.plot_position_bits(record)
    hybrid_mean = next(line for line in fig.axes[0].get_lines() if line.get_label() == "hybrid (2)")
    assert list(hybrid_mean.get_xdata()) == [2, 6, 10] and np.allclose(hybrid_mean.get_ydata(), [2.7, 1.7, 2.2])
    plt.close(fig)
    # relative_to: a second panel, each other model minus the reference's run on the same seed
    fig = plots.plot_position_bits(record, relative_to="softmax")
    assert len(fig.axes) == 2 and len(fig.legends[0].get_texts()) == 2  # one legend entry per model
    below = {line.get_label(): line for line in fig.axes[1].get_lines()}
    assert "softmax (1)" not in below  # the reference is not set against itself
    # hybrid's seed 0 minus softmax's seed 0: [2.0, 2.0, 2.0] − [2.5, 2.5, 2.5]; seed 1 has no pair
    assert np.allclose(below["hybrid (1)"].get_ydata(), [-0.5, -0.5, -0.5])
    plt.close(fig)
    # the legends list the models best first (hybrid's mean 2.2 against softmax's 2.5), even
    # when the record lists softmax first
    swapped = {"runs": record["runs"][3:] + record["runs"][:3], "config": record["config"]}
    for fig in (plots.plot_validation(swapped), plots.plot_position_bits(swapped)):
        assert [t.get_text() for t in fig.legends[0].get_texts()] == ["hybrid (2)", "softmax (1)"]
        plt.close(fig)
    with pytest.raises(ValueError, match="relative_to"):
        plots.plot_position_bits(record, relative_to="kda")
    # seed_lines=False: the top panel keeps only the means; the panel below keeps its seeds
    fig = plots.plot_position_bits(record, relative_to="softmax", seed_lines=False)
    assert sorted(line.get_label() for line in fig.axes[0].get_lines()) == ["hybrid (2)", "softmax (1)"]
    assert len(fig.axes[1].get_lines()) == 1 + 1 + 1  # hybrid's paired seed, its mean, the zero line
    plt.close(fig)


def test_the_final_bits_plot_draws_each_model_s_mean_range_and_seeds_best_at_the_top():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lattn_edu.lm import plots

    record = {"runs": [fake_run("hybrid", 1e-2, 0, 2.0), fake_run("hybrid", 1e-2, 1, 2.4),
                       fake_run("hybrid", 3e-3, 0, 3.0),  # the worse rate: left out
                       fake_run("softmax", 1e-2, 0, 2.5), fake_run("softmax", 1e-2, 1, 2.7),
                       fake_run("kda", 1e-2, 0, 2.1)]}
    fig = plots.plot_final_bits(record, names={"hybrid": "1-in-4 hybrid"},
                                groups=[("kda", "hybrid"), ("softmax",)])
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["kda", "1-in-4 hybrid", "softmax"]
    assert ax.get_ylim()[0] > ax.get_ylim()[1]  # row 0, the best mean, at the top
    lines = ax.get_lines()
    ranges = [line for line in lines if line.get_linestyle() == "-"]
    assert [list(line.get_xdata()) for line in ranges] == [[2.1, 2.1], [2.0, 2.4], [2.5, 2.7]]
    ticks = [line for line in lines if line.get_marker() == "|"]
    assert [list(line.get_xdata()) for line in ticks] == [[2.1], [2.0, 2.4], [2.5, 2.7]]
    means = [line for line in lines if line.get_linestyle() == "None" and line.get_marker() != "|"]
    assert [line.get_xdata()[0] for line in means] == pytest.approx([2.1, 2.2, 2.6])
    assert [list(line.get_ydata()) for line in means] == [[0], [1], [2]]
    # every mean is the same filled dot with a black rim, never a model's own marker
    assert {(line.get_marker(), line.get_markeredgecolor()) for line in means} == {("o", "black")}
    assert sorted(t.get_text().strip() for t in ax.texts) == ["group 1", "group 2"]
    assert len(ax.patches) == 2  # one shaded band per group
    plt.close(fig)
    for groups in ([("kda", "mamba2")], [("kda", "hybrid"), ("kda",)]):  # unknown; named twice
        with pytest.raises(ValueError, match="groups must name models of the record"):
            plots.plot_final_bits(record, groups=groups)
    plt.close("all")


def test_the_lab_figures_can_leave_the_seed_counts_out_of_their_legends():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lattn_edu.lm import plots

    lab = lm.recorded("full")
    for fig in (plots.plot_validation(lab, seed_counts=False),
                plots.plot_position_bits(lab, relative_to="sliding_window", seed_counts=False)):
        texts = [t.get_text() for t in fig.legends[0].get_texts()]
        assert len(texts) == 8 and "softmax" in texts and not any("(" in t for t in texts)
        assert all("(n)" not in ax.get_title() for ax in fig.axes)
        plt.close(fig)


def test_the_shipped_full_record_is_the_full_preset_finished():
    """What chapter 15 reads: every model on every seed, each run with every field."""
    record = lm.recorded("full")
    assert record["complete"] and record["config"]["mode"] == "full"
    settings = {key: value for key, value in record["config"].items() if key in asdict(lm.FULL)}
    assert settings == json.loads(json.dumps(asdict(lm.FULL)))
    assert record["finished"] == [lab_module.run_id(run) for run in lm.planned_runs(lm.FULL)]
    assert all(set(r) == RUN_FIELDS for r in record["runs"])
    assert all(row["seeds"] == 3 for row in lm.summarise(record))


def test_chapters_16_and_17_name_every_model_of_both_records_once_with_one_colour_each():
    from lattn_edu.lm.plots import MODEL_COLOURS, model_names, prose_name

    names = model_names(window="window model")
    keys = {r["model"] for r in records.load_record("recall_study_hybrid.json")["runs"]}
    keys |= {r["model"] for r in lm.recorded("full")["runs"]}
    assert set(names) == keys == set(MODEL_COLOURS)
    # two keys share a name only when they are one model, and then they share its colour
    colour_of = {}
    for key, name in names.items():
        assert colour_of.setdefault(name, MODEL_COLOURS[key]) == MODEL_COLOURS[key]
    assert len(set(colour_of.values())) == len(colour_of)
    assert model_names()["sliding_window"] == "window"
    assert prose_name("hybrid", names) == "the 1-in-4 hybrid"
    assert prose_name("sliding_window", names) == "the window model"
    assert prose_name("kda", names) == "KDA"


def test_the_window_model_s_thin_lines_have_open_dashes_unlike_softmax_s_solid_ones():
    """Chapter 17's validation figure: the window model (sky) beside softmax (blue), thin lines
    too, told apart by a dash pattern with gaps a reader sees at the thin width (0.9 points)."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lattn_edu.lm import plots

    fig = plots.plot_validation(lm.recorded("full"), seed_counts=False)
    lines = fig.axes[0].get_lines()
    colours = {key: plots.LAB_STYLES[key][0] for key in ("softmax", "sliding_window")}
    window = [line for line in lines if line.get_color() == colours["sliding_window"]]
    softmax = [line for line in lines if line.get_color() == colours["softmax"]]
    assert len(window) == len(softmax) == 4  # three seeds (thin) and the mean (thick) each
    assert all(line.get_linestyle() == "-" for line in softmax)
    thin = [line for line in window if line.get_linewidth() == 0.9]
    assert len(thin) == 3
    for line in thin:
        on, off = line._dash_pattern[1]  # matplotlib scales the pattern by the line's width
        assert on == pytest.approx(5 * 0.9) and off == pytest.approx(4 * 0.9) and off > 3
    plt.close(fig)
