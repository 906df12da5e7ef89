"""benchmarks/chunk_sweep.py (a script, imported by path): every call it times is checked against
the float64 reference first, a wrong one stops the run, and a smoke run records every family at
every chunk with ratios that follow from its own medians."""

from __future__ import annotations

import pytest

import benchmark_scripts

torch = pytest.importorskip("torch")

from lattn_edu import records  # noqa: E402


@pytest.fixture(scope="module")
def script():
    return benchmark_scripts.load("chunk_sweep")


def test_a_smoke_run_records_every_family_at_every_chunk(script, tmp_path):
    out = tmp_path / "chunk_sweep.json"
    record = script.main(["--quick", "--out", str(out)])
    assert records.read_record(out) == record
    assert record["peer"] == "eager" and record["chunks"] == {"ours": [32, 64], "peer": [64, 128, 256]}
    assert {r["family"] for r in record["rows"]} == set(script.FAMILIES)
    chunks = record["chunks"]
    names = {f"{who} c{c}" for who in chunks for c in chunks[who]}
    for row in record["rows"]:
        median = row["median_s"]
        assert set(median) == names and all(0 < median[n] <= row["p95_s"][n] for n in names)
        for who in chunks:
            best = median[f"{who} c{row['best_chunk'][who]}"]
            assert best == min(median[f"{who} c{c}"] for c in chunks[who])
            for c in chunks[who]:
                ratio = row["over_best"][f"{who} c{c}"]
                assert ratio == pytest.approx(median[f"{who} c{c}"] / best) and ratio >= 1
        ours_best = median[f"ours c{row['best_chunk']['ours']}"]
        assert row["peer_default_chunk_over_ours_best"] == pytest.approx(median["peer c64"] / ours_best)
        assert row["peer_best_over_ours_best"] <= row["peer_default_chunk_over_ours_best"]
    errors = record["checked_relative_errors"]
    assert set(errors) == {f"{family}, d=16" for family in script.FAMILIES}
    assert all(set(e) == names and max(e.values()) < 1e-3 for e in errors.values())


def test_a_call_off_the_reference_stops_the_run(script, monkeypatch):
    true_reference = script.reference
    monkeypatch.setattr(script, "reference", lambda family, x: 1.01 * true_reference(family, x))
    with pytest.raises(RuntimeError, match="delta rule, d=16: off the float64 reference"):
        script.check("delta rule", 16, compiled=False)
