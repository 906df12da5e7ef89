"""benchmarks/lm_decode.py (a script, imported by path): its filled caches hold what the model's
cache_floats says, and a smoke run times every model at every context."""

from __future__ import annotations

from dataclasses import replace

import pytest

import benchmark_scripts

torch = pytest.importorskip("torch")

from lattn_edu import lm, records  # noqa: E402  (needs torch, skipped above when missing)


@pytest.fixture(scope="module")
def script():
    return benchmark_scripts.load("lm_decode")


@pytest.mark.parametrize("name", lm.LM_MODELS)
def test_a_filled_cache_holds_what_cache_floats_counts_and_decodes(script, name):
    config = replace(lm.TINY.base, d_model=16, num_heads=2, window=5)
    model = lm.LanguageModel(lm.layer_pattern(name, 4), config, 11).eval()
    generator = torch.Generator().manual_seed(3)
    for n in (3, 17):
        cache = script.filled_cache(model, n, generator)
        held = sum(tail.numel() + sum(part.numel() for part in mixer) for tail, mixer in cache)
        assert held == sum(model.cache_floats(n).values()), (name, n)
    assert script.per_token_seconds(model, cache, 3) > 0


def test_a_smoke_run_times_every_model_at_every_context(script, tmp_path):
    out = tmp_path / "lm_decode.json"
    record = script.main(["--smoke", "--rounds", "2", "--out", str(out)])
    assert records.read_record(out) == record
    assert {(r["model"], r["context"]) for r in record["rows"]} == {(m, n) for m in lm.LM_MODELS for n in (8, 40)}
    assert all(0 < r["median_ms"] <= r["p95_ms"] and r["timings"] == 2 for r in record["rows"])
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from lattn_edu.lm import plots

    fig = plots.plot_decode(record)
    bars = fig.axes[0].containers  # one error bar per model, a point per context
    assert len(bars) == len(lm.LM_MODELS)
    softmax = next(r for r in record["rows"] if (r["model"], r["context"]) == ("softmax", 40))
    drawn = dict(zip(bars[0].lines[0].get_xdata(), bars[0].lines[0].get_ydata()))
    assert drawn[40] == softmax["median_ms"]
    matplotlib.pyplot.close(fig)


def test_the_decode_plot_highlights_three_models_and_marks_the_crossing():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.colors import to_hex

    from lattn_edu.lm import plots

    record = records.load_record("lm_decode.json")
    fig = plots.plot_decode(record, crossing=1182.0)
    ax = fig.axes[0]
    models = list(dict.fromkeys(r["model"] for r in record["rows"]))
    colours = {model: to_hex(bar.lines[0].get_color()) for model, bar in zip(models, ax.containers)}
    strong = [colours[m] for m in plots.DECODE_HIGHLIGHT]
    assert len(set(strong)) == 3 and plots.MUTED not in strong
    assert {colours[m] for m in models if m not in plots.DECODE_HIGHLIGHT} == {plots.MUTED}
    widths = {model: bar.lines[0].get_linewidth() for model, bar in zip(models, ax.containers)}
    assert min(widths[m] for m in plots.DECODE_HIGHLIGHT) > max(
        widths[m] for m in models if m not in plots.DECODE_HIGHLIGHT)
    dotted = [line for line in ax.get_lines() if line.get_linestyle() == ":"
              and list(line.get_xdata()) == [1182.0, 1182.0]]
    assert len(dotted) == 1 and "1,182" in dotted[0].get_label()
    matplotlib.pyplot.close(fig)
    plain = plots.plot_decode(record, highlight=None)  # every model in its own colour, no line
    assert to_hex(plain.axes[0].containers[0].lines[0].get_color()) == plots.LM_STYLES["softmax"][0].lower()
    assert not [line for line in plain.axes[0].get_lines() if "N ≈" in line.get_label()]
    matplotlib.pyplot.close(plain)
    with pytest.raises(ValueError, match="at most 3"):
        plots.plot_decode(record, highlight=("softmax", "linear", "kda", "mamba2"))


def test_the_decode_plot_can_draw_the_other_models_as_one_min_max_band():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from lattn_edu.lm import plots

    record = records.load_record("lm_decode.json")
    fig = plots.plot_decode(record, crossing=1182.0, band=True)
    ax = fig.axes[0]
    assert len(ax.containers) == len(plots.DECODE_HIGHLIGHT)  # only the three as lines
    (band,) = [c for c in ax.collections if c.get_label().startswith("the other models")]
    others = [r for r in record["rows"] if r["model"] not in plots.DECODE_HIGHLIGHT]
    ys = band.get_paths()[0].vertices[:, 1]
    assert min(r["median_ms"] for r in others) == pytest.approx(ys.min())
    assert max(r["median_ms"] for r in others) == pytest.approx(ys.max())
    matplotlib.pyplot.close(fig)


def test_the_lab_figures_give_every_model_its_own_colour_and_its_mapped_name():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lattn_edu.lm import plots, recorded

    lab = recorded("full")
    names = {"linear": "linear (elu+1)", "hybrid": "1-in-4 hybrid"}
    for draw in (plots.plot_validation, plots.plot_position_bits):
        fig = draw(lab, names=names)
        texts = [t.get_text() for t in fig.legends[0].get_texts()]
        assert len(texts) == 8 and "linear (elu+1) (3)" in texts and "1-in-4 hybrid (3)" in texts
        assert "softmax (3)" in texts  # a key the mapping lacks keeps its name
        thick = [line for line in fig.axes[0].get_lines() if line.get_linewidth() == 2]
        assert len({line.get_color() for line in thick}) == len(thick) == 8  # no colour shared
        plt.close(fig)
    old = plots.plot_validation(lab)  # the old call form: the record's keys
    assert "hybrid (3)" in [t.get_text() for t in old.legends[0].get_texts()]
    plt.close(old)
