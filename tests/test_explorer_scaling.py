"""The scaling explorer draws the recorded measurements (and times nothing); a missing or
corrupt record is a clear error."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lattn_edu import timing
from lattn_edu.explorers.scaling import ScalingExplorer, compute_scaling, load_scaling, recorded_path


def test_the_record_ships_with_the_package_and_covers_every_control():
    record = load_scaling()
    assert recorded_path().name == "scaling.json" and record["machine"]
    explorer = ScalingExplorer()
    for d in explorer.controls["d"]:
        for causal in explorer.controls["causal"]:
            result = compute_scaling(d, causal)
            for method in ("softmax", "linear"):
                assert len(result["sizes"][method]) >= 4
                assert np.all(np.diff(result["sizes"][method]) > 0)
                assert np.all(result["seconds"][method] > 0)


def test_the_picture_has_the_recorded_numbers():
    record = load_scaling()
    run = next(r for r in record["runs"] if r["d"] == 64 and not r["causal"])
    result = compute_scaling(64, False)
    np.testing.assert_array_equal(result["seconds"]["softmax"], [row["median_s"] for row in run["softmax"]])
    fig = ScalingExplorer().plot(result)
    time_ax = fig.axes[0]
    lines = {line.get_label().split(":")[0]: line for line in time_ax.get_lines() if ":" in line.get_label()}
    np.testing.assert_allclose(lines["linear"].get_ydata(),
                               np.array([row["median_s"] for row in run["linear"]]) * 1e3)
    np.testing.assert_array_equal(lines["softmax"].get_xdata(), [row["n"] for row in run["softmax"]])
    assert lines["softmax"].get_label() == f"softmax: slope {result['slopes']['softmax']:.2f}"
    title = fig.get_suptitle()
    assert title.startswith("Recorded") and "not timed now" in title and record["machine"] in title
    assert f"softmax\nslope {result['slopes']['softmax']:.2f}" in [t.get_text() for t in time_ax.texts]


def synthetic_record(path):
    """Softmax exactly quadratic, linear exactly linear: slopes 2 and 1, crossover at N = 1000."""
    sizes = [64 * 2**i for i in range(8)]
    runs = [{"d": d, "causal": causal,
             "softmax": [{"n": n, "median_s": 1e-3 * (n / 1000) ** 2} for n in sizes],
             "linear": [{"n": n, "median_s": 1e-3 * (n / 1000)} for n in sizes[:-1]]}
            for d in (32, 64, 128) for causal in (False, True)]
    memory = {str(d): [{"n": n, "matrix_entries": n * n, "state_entries": d * d,
                        "kv_cache_entries": 2 * n * d} for n in sizes] for d in (32, 64, 128)}
    path.write_text(json.dumps({"machine": "test machine", "recorded": "today", "batch_heads": 4,
                                "runs": runs, "memory": memory}))
    return path


def test_slopes_and_crossover_come_from_the_file(tmp_path):
    path = synthetic_record(tmp_path / "scaling.json")
    result = compute_scaling(32, True, path)
    assert result["slopes"]["softmax"] == pytest.approx(2.0)
    assert result["slopes"]["linear"] == pytest.approx(1.0)
    assert result["crossover"] == pytest.approx(1000.0, rel=1e-9)
    assert result["crossover"] == timing.crossover_size(result["sizes"]["linear"],
                                                        result["seconds"]["softmax"][:-1],
                                                        result["seconds"]["linear"])
    fig = ScalingExplorer(path).render(d=32, causal=True)
    assert "test machine" in fig.get_suptitle()
    assert any("N ≈ 1,000" in t.get_text() for t in fig.axes[0].texts)


def test_missing_or_corrupt_record_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="benchmarks/scaling.py"):
        ScalingExplorer(tmp_path / "absent.json").render()
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text('{"runs": [{"d": 64')
    with pytest.raises(ValueError, match="corrupt"):
        compute_scaling(64, False, corrupt)
    corrupt.write_text('{"machine": "m", "memory": {}, "runs": [{"d": 64, "causal": false, "softmax": [{}]}]}')
    with pytest.raises(ValueError, match="corrupt"):
        load_scaling(corrupt)
    with pytest.raises(ValueError, match="d=48"):
        compute_scaling(48, False, synthetic_record(tmp_path / "ok.json"))
