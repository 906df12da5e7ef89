"""benchmarks/chunk_sweep.py (a script, imported by path): every call it times is checked against
the float64 reference first, a wrong one stops the run, and a smoke run records every family at
both chunks with ratios that follow from its own medians."""

from __future__ import annotations

import pytest

import benchmark_scripts

torch = pytest.importorskip("torch")

from lattn_edu import records  # noqa: E402


@pytest.fixture(scope="module")
def script():
    return benchmark_scripts.load("chunk_sweep")


def test_a_smoke_run_records_every_family_at_both_chunks(script, tmp_path):
    out = tmp_path / "chunk_sweep.json"
    record = script.main(["--quick", "--out", str(out)])
    assert records.read_record(out) == record
    assert record["peer"] == "eager" and record["chunks"] == [32, 64]
    assert {r["family"] for r in record["rows"]} == set(script.FAMILIES)
    names = {f"{who} c{c}" for who in ("ours", "peer") for c in (32, 64)}
    for row in record["rows"]:
        median = row["median_s"]
        assert set(median) == names and all(0 < median[n] <= row["p95_s"][n] for n in names)
        for who in ("ours", "peer"):
            assert row["c64_over_c32"][who] == pytest.approx(median[f"{who} c64"] / median[f"{who} c32"])
            assert median[f"{who} c{row['best_chunk'][who]}"] == min(median[f"{who} c{c}"] for c in (32, 64))
    errors = record["checked_relative_errors"]
    assert set(errors) == {f"{family}, d=16" for family in script.FAMILIES}
    assert all(set(e) == names and max(e.values()) < 1e-3 for e in errors.values())


def test_a_call_off_the_reference_stops_the_run(script, monkeypatch):
    true_reference = script.reference
    monkeypatch.setattr(script, "reference", lambda family, x: 1.01 * true_reference(family, x))
    with pytest.raises(RuntimeError, match="delta rule, d=16: off the float64 reference"):
        script.check("delta rule", 16, compiled=False)
