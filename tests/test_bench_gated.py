"""Tests for lattn_edu.bench.gated and the gated peers of lattn_edu.bench.peers: the peers are
right, and a tiny ``lattn-edu bench --families gated`` run writes a well-formed record. No timing is asserted."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("numba")
torch = pytest.importorskip("torch")

import lattn_edu as la  # noqa: E402
from lattn_edu import cli  # noqa: E402
from lattn_edu.bench import gated as bench_gated  # noqa: E402

from conftest import assert_close  # noqa: E402
from gated_inputs import delta_inputs, gated_inputs  # noqa: E402


@pytest.fixture(scope="module")
def peers():
    from lattn_edu.bench import peers

    return peers


def as_tensors(*arrays):
    return [None if a is None else torch.from_numpy(a) for a in arrays]


@pytest.mark.parametrize("n", [1, 45, 64], ids=lambda n: f"N{n}")
@pytest.mark.parametrize("decay", ["scalar", "vector"])
def test_gated_peers_match_the_reference(peers, decay, n, rng):
    q, k, v, g, _ = gated_inputs(rng, n=n, decay=decay, strength=3.0, initial_state=False)
    peer = peers.torch_chunkwise_simple_gla if decay == "scalar" else peers.torch_chunkwise_gla
    got = peer(*as_tensors(q, k, v, g), chunk_size=32)
    assert_close(got, la.gated_linear_attention(q, k, v, g, form="recurrent"), what=f"{decay} peer")


@pytest.mark.parametrize("gated", [False, True], ids=["deltanet", "gated"])
def test_delta_peer_matches_the_reference(peers, gated, rng):
    q, k, v, beta, g, _ = delta_inputs(rng, n=45, gated=gated, initial_state=False)
    got = peers.torch_chunkwise_delta_rule(*as_tensors(q, k, v, beta, g), chunk_size=16)
    assert_close(got, la.delta_rule(q, k, v, beta, g, form="recurrent"))


def test_tiny_gated_run_writes_a_well_formed_record(tmp_path, capsys):
    code = cli.main(["bench", "--families", "gated", "--quick", "--dims", "8", "--sizes", "70", "--out", str(tmp_path)])
    assert code == 0
    record = json.loads((tmp_path / "bench_gated.json").read_text())
    assert all(c["ok"] for c in record["correctness"])
    assert {(r["family"], r["n"]) for r in record["results"]} == {(f, 70) for f in bench_gated.VARIANTS}
    for r in record["results"]:
        assert 0 < r["ours_median_s"] <= r["ours_p95_s"] and 0 < r["peer_median_s"] <= r["peer_p95_s"]
        assert r["ratio"] == pytest.approx(r["peer_median_s"] / r["ours_median_s"])
    assert {(r["family"], r["n"]) for r in record["decode"]} == {
        (f, n) for f in ("gated, scalar decay", "delta rule") for n in bench_gated.DECODE_SIZES}
    assert record["load_average_start"] is None or len(record["load_average_start"]) == 3
    assert set(record["summary"]) >= {"ratio_at_least_1", "decode_growth"}
    printed = capsys.readouterr()
    assert "gated, vector decay" in printed.out
    assert "100%" in printed.err  # the progress bar, run to its end


def test_summary_counts_only_the_target_shapes():
    rows = [{"family": f, "d": d, "n": n, "ratio": ratio, "compiled_ratio": compiled, "sgemm_fraction": 0.4}
            for f, d, n, ratio, compiled in [("delta rule", 64, 1024, 1.2, 1.6), ("delta rule", 128, 4096, 0.9, 1.1),
                                             ("delta rule", 128, 512, 0.1, 0.1), ("delta rule", 32, 2048, 0.1, 0.1),
                                             ("gated, scalar decay", 64, 2048, 1.7, None)]]
    decode = [{"family": "delta rule", "d": 64, "n": n, "median_s": t}
              for n, t in ((1000, 2.0), (10_000, 1.9), (100_000, 2.1))]
    summary = bench_gated.summarise(rows, decode)
    assert summary["ratio_at_least_1"] == {"shapes": 3, "met": 2, "min_ratio": 0.9}
    assert summary["compiled_ratio_at_least_1_5"] == {
        "shapes": 2, "met": 1, "worst_per_family": {"delta rule": {"d": 128, "n": 4096, "compiled_ratio": 1.1}}}
    assert summary["sgemm_fraction_d128_n4096"] == {"delta rule": 0.4}
    assert summary["decode_growth"][0]["growth"] == pytest.approx(1.05)
    assert summary["decode_growth"][0]["spread"] == pytest.approx(2.1 / 1.9)
    assert not summary["decode_flat_within_1_1"]  # 10.5% between the fastest and the slowest


def test_a_method_that_disagrees_stops_the_run_before_any_timing():
    """The runner checks every method against the family's reference first; a wrong reference
    (standing in for a wrong kernel) fails every method and nothing is timed."""
    from dataclasses import replace

    from tqdm import tqdm

    from lattn_edu import bench

    wrong = replace(bench.GATED, reference=lambda variant, x: 1.5 * bench_gated.reference(variant, x))
    record, correctness = bench.run_family(wrong, replace(bench_gated.QUICK, dims=(8,)), ("numba",),
                                           tqdm(disable=True))
    assert record is None
    assert {(c["family"], c["origin"]) for c in correctness} == {
        (v, o) for v in bench_gated.VARIANTS for o in ("ours", "peer")}  # --quick: no compiled peers
    assert not any(c["ok"] for c in correctness)


@pytest.mark.parametrize("variant", bench_gated.VARIANTS)
def test_each_compiled_peer_matches_the_reference(variant):
    """The compiled peer is the eager peer's code under torch.compile: it must agree with the
    float64 reference as the eager one does (compiled at one small shape, float64)."""
    from lattn_edu.bench import peers

    if peers.compiler_problem() is not None:
        pytest.skip(peers.compiler_problem())
    x = {name: a.astype(np.float64) for name, a in bench_gated.make_inputs(75, 6, 2, seed=5).items()}
    ours, eager, compiled = bench_gated.calls(variant, x)
    want = bench_gated.reference(variant, x)
    assert_close(compiled(), want, what=f"{variant}, compiled")
    assert_close(eager(), want, what=f"{variant}, eager")
