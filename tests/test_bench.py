"""Tests for lattn_edu.bench and its peers: every benchmarked kernel is correct, and a tiny
``lattn-edu bench`` run writes well-formed JSON, CSV and plots. No timing is asserted."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("numba")
torch = pytest.importorskip("torch")

import lattn_edu as la  # noqa: E402
from lattn_edu import bench, cli, records  # noqa: E402

from conftest import assert_close  # noqa: E402


ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def peers():
    from lattn_edu.bench import peers

    return peers


def qkv(rng, lead, n, d, d_v, dtype=np.float64):
    return tuple(rng.standard_normal(lead + (n, w)).astype(dtype) for w in (d, d, d_v))


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("n", [1, 63, 64, 200], ids=lambda n: f"N{n}")
@pytest.mark.parametrize("chunk_size", [16, 64], ids=lambda c: f"C{c}")
def test_peer_chunkwise_matches_the_reference(peers, chunk_size, n, dtype, rng):
    q, k, v = qkv(rng, (2, 3), n, 5, 7, dtype)
    got = peers.torch_chunkwise_linear_attention(*map(torch.from_numpy, (q, k, v)), chunk_size=chunk_size)
    want = la.linear_attention(q, k, v, causal=True, form="quadratic")
    assert got.dtype == torch.from_numpy(q).dtype and got.shape == (2, 3, n, 7)
    assert_close(got, want, what=f"peer chunkwise C={chunk_size}")


def test_peer_sdpa_matches_the_reference(peers, rng):
    q, k, v = qkv(rng, (1, 4), 100, 8, 8)
    got = peers.sdpa_causal_softmax_attention(*map(torch.from_numpy, (q, k, v)))
    assert_close(got, la.softmax_attention(q, k, v, causal=True), what="SDPA")


def test_every_benchmarked_method_agrees_with_the_reference():
    """The benchmark's own check: each method, as the benchmark calls it, within float32 tolerance."""
    found = bench.timed_methods(la.available_backends())
    names = {m.name for m in found}
    assert {bench.OURS, bench.KERNEL, bench.PEER, bench.SOFTMAX_OURS, bench.SOFTMAX_SDPA} <= names
    assert {f"{b} {f}" for b in la.available_backends() for f in la.linear.FORMS} <= names
    rows = bench.check_correctness(bench.LINEAR, found, dims=(8, 24), n=100, bh=3)
    assert len(rows) == 2 * len(found)
    bad = [(r["method"], r["d"], r["relative_error"]) for r in rows if not r["ok"]]
    assert not bad


@pytest.mark.parametrize("family", ["linear", "gated"])
def test_without_torch_the_command_says_what_to_install(family, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    assert cli.main(["bench", "--families", family, "--out", str(tmp_path)]) == 2
    assert "pip install 'lattn_edu[torch]'" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_help_states_the_quick_budget_of_every_family(capsys):
    from lattn_edu.bench.cli import QUICK_BUDGET_MINUTES

    with pytest.raises(SystemExit):
        cli.main(["bench", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert set(QUICK_BUDGET_MINUTES) == set(bench.FAMILIES) and "on 2 cores" in text
    for name, minutes in QUICK_BUDGET_MINUTES.items():
        assert f"{minutes} minutes for {name}" in text


def test_every_family_writes_its_own_record():
    names = [family.record_name for family in bench.FAMILIES.values()]
    assert len(set(names)) == len(names) and "bench.json" == bench.FAMILIES["linear"].record_name


def test_bad_sizes_are_refused(tmp_path, capsys):
    assert cli.main(["bench", "--sizes", "0", "--out", str(tmp_path)]) == 2
    assert "--sizes" in capsys.readouterr().err


TINY = ["--dims", "8", "16", "--sizes", "64", "128", "--batch-heads", "2", "--decode-sizes", "50", "100",
        "--decode-steps", "5", "--max-call-seconds", "0.5", "--no-progress"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """One tiny benchmark through the command line, the way a reader would start it; the
    packaged record's bytes before and after it, which the command must leave alone."""
    out = tmp_path_factory.mktemp("bench")
    recorded = records.find_record("bench.json").read_bytes()
    code = cli.main(["bench", "--quick", *TINY, "--out", str(out)])
    assert records.find_record("bench.json").read_bytes() == recorded
    return code, out


def test_the_command_writes_to_the_current_directory_by_default(tmp_path, monkeypatch, capsys):
    """Without --out the files go to the working directory, never into the installed package."""
    monkeypatch.chdir(tmp_path)
    recorded = records.find_record("bench.json").read_bytes()
    assert cli.main(["bench", "--quick", *TINY, "--backends", "numba", "--no-plots"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench.csv", "bench.json"]
    assert records.find_record("bench.json").read_bytes() == recorded
    assert "written: bench.json, bench.csv" in capsys.readouterr().out


def test_tiny_run_writes_json_csv_and_plots(tiny_run):
    code, out = tiny_run
    assert code == 0
    assert {"bench.json", "bench.csv", *bench.PLOTS} <= {p.name for p in out.iterdir()}
    record = json.loads((out / "bench.json").read_text())
    assert record["quick"] is True and record["wall_seconds"] > 0
    assert "load_average_start" in record and "other_processes_cores" in record
    for key in ("cpu", "cores", "numba_threads", "torch_threads", "versions", "blas"):
        assert key in record["machine"]
    assert set(record["machine"]["versions"]) >= {"numpy", "scipy", "numba", "torch", "lattn_edu"}
    assert record["settings"]["dims"] == [8, 16] and record["settings"]["sizes"] == [64, 128]
    assert all(c["ok"] for c in record["correctness"])
    shapes = {(r["d"], r["n"]) for r in record["results"]}
    assert shapes == {(8, 64), (8, 128), (16, 64), (16, 128)}
    for row in record["results"]:
        if row["status"] == "ok":
            assert row["median_s"] > 0 and row["gflops"] > 0 and row["runs"] >= 1
        else:
            assert row["status"] == "skipped" and row["reason"]
    per_shape = record["summary"]["per_shape"]
    assert per_shape and set(per_shape[0]) >= {"d", "n", "ours_gflops", "peer_gflops", "ratio", "sgemm_fraction"}
    assert {(c["d"], c["softmax"]) for c in record["summary"]["crossover"]} == {
        (d, s) for d in (8, 16) for s in (bench.SOFTMAX_OURS, bench.SOFTMAX_SDPA)}
    methods = {(r["method"], r["n"]) for r in record["decode"]}
    assert methods == {(m, n) for m in ("LinearAttentionState.step", "SoftmaxKVCache.step") for n in (50, 100)}
    assert {g["method"] for g in record["summary"]["decode"]} == {"LinearAttentionState.step", "SoftmaxKVCache.step"}
    assert set(record["summary"]["targets"]) == {"ratio_vs_peer_at_least_1", "ratio_vs_compiled_peer_at_least_1_5",
                                                 "sgemm_fraction_at_least_half_d128",
                                                 "state_decode_growth_at_most_1_1"}
    assert record["settings"]["compiled_peers"] is False  # --quick leaves the compiled peer out
    assert bench.PEER_COMPILED not in {r["method"] for r in record["results"]}


def test_tiny_run_csv_has_one_row_per_method_and_shape(tiny_run):
    _, out = tiny_run
    record = json.loads((out / "bench.json").read_text())
    with (out / "bench.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert tuple(rows[0]) == bench.CSV_FIELDS
    assert len(rows) == len(record["results"])
    assert {r["status"] for r in rows} <= {"ok", "skipped"}


def test_load_results_reads_a_recorded_file(tiny_run):
    _, out = tiny_run
    assert bench.load_results(out / "bench.json")["settings"]["dims"] == [8, 16]
    with pytest.raises(FileNotFoundError, match="lattn-edu bench"):
        bench.load_results(out / "missing.json")


def synthetic_rows(linear_s, softmax_s, peer_s, sizes=(128, 256, 512, 1024), d=64, compiled_s=()):
    rows = []
    for name, family, backend, times in ((bench.OURS, "linear", "numba", linear_s),
                                         (bench.PEER, "linear", "torch", peer_s),
                                         (bench.PEER_COMPILED, "linear", "torch", compiled_s),
                                         (bench.SOFTMAX_OURS, "softmax", "numba", softmax_s),
                                         (bench.SOFTMAX_SDPA, "softmax", "torch", softmax_s)):
        for n, t in zip(sizes, times):
            rows.append({"method": name, "family": family, "backend": backend, "d": d, "n": n,
                         "status": "ok", "median_s": t, "gflops": bench.linear_flops(n, d, d, 8) / t / 1e9,
                         "sgemm_gflops_same_rounds": 100.0})
    return rows


def test_crossover_and_ratio_from_known_times():
    # linear ~ N, softmax ~ N²: equal at N = 256, linear faster beyond
    rows = synthetic_rows(linear_s=[2.0, 4.0, 8.0, 16.0], softmax_s=[1.0, 4.0, 16.0, 64.0],
                          peer_s=[4.0, 8.0, 16.0, 32.0])
    crossing = bench.crossovers(rows, (64,))
    assert len(crossing) == 2 and all(c["crossover_n"] == pytest.approx(256) for c in crossing)
    shapes = bench.per_shape_summary(rows, (64,), (128, 256, 512, 1024))
    assert [s["ratio"] for s in shapes] == [2.0, 2.0, 2.0, 2.0]
    assert shapes[-1]["sgemm_fraction"] == pytest.approx(shapes[-1]["ours_gflops"] / 100.0)
    assert bench.targets(shapes, [])["ratio_vs_peer_at_least_1"] == {"shapes": 1, "met": 1, "min_ratio": 2.0}
    assert all(s["compiled_ratio"] is None for s in shapes)  # not timed: no ratio, not a zero
    assert bench.targets(shapes, [])["ratio_vs_compiled_peer_at_least_1_5"]["shapes"] == 0


def test_ratio_against_the_compiled_peer_and_its_worst_shape():
    sizes = (1024, 2048, 4096)
    rows = synthetic_rows(linear_s=[1.0, 2.0, 4.0], softmax_s=[9.0, 36.0, 144.0], peer_s=[3.0, 6.0, 12.0],
                          sizes=sizes, compiled_s=[2.0, 2.6, 8.0])
    shapes = bench.per_shape_summary(rows, (64,), sizes)
    assert [s["compiled_ratio"] for s in shapes] == pytest.approx([2.0, 1.3, 2.0])
    target = bench.targets(shapes, [])["ratio_vs_compiled_peer_at_least_1_5"]
    assert target == {"shapes": 3, "met": 2, "min_ratio": pytest.approx(1.3), "worst_shape": {"d": 64, "n": 2048}}


def test_a_tiny_run_with_the_compiled_peer_checks_and_times_it(tmp_path):
    """The compiled peer goes through the same check against the float64 reference and the
    same rounds as every method; its first call, which compiles, is recorded apart."""
    from lattn_edu.bench import peers

    if peers.compiler_problem() is not None:
        pytest.skip(peers.compiler_problem())
    args = ["bench", "--quick", "--compiled-peers", "--dims", "8", "--sizes", "70", "--batch-heads", "2",
            "--decode-sizes", "20", "40", "--decode-steps", "3", "--backends", "numba", "--no-plots",
            "--no-progress", "--out", str(tmp_path)]
    assert cli.main(args) == 0
    record = json.loads((tmp_path / "bench.json").read_text())
    assert {c["method"] for c in record["correctness"] if c["ok"]} >= {bench.PEER, bench.PEER_COMPILED}
    compiled = next(r for r in record["results"] if r["method"] == bench.PEER_COMPILED)
    assert compiled["status"] == "ok" and compiled["first_call_s"] > 0
    shape = record["summary"]["per_shape"][0]
    assert shape["compiled_ratio"] == pytest.approx(compiled["median_s"] / shape["ours_median_s"])


def test_crossover_below_the_smallest_size_is_flagged():
    rows = synthetic_rows(linear_s=[1.0, 2.0, 4.0, 8.0], softmax_s=[2.0, 8.0, 32.0, 128.0],
                          peer_s=[1.0, 1.0, 1.0, 1.0])
    entry = bench.crossovers(rows, (64,))[0]
    assert entry["at_or_below_smallest"] and entry["crossover_n"] == 128


@pytest.fixture(scope="module")
def gpu_script():
    """benchmarks/gpu.py, imported as a module (it is a script, not part of the package)."""
    import benchmark_scripts

    return benchmark_scripts.load("gpu")


def test_gpu_script_correctness_step_passes_on_cpu(gpu_script):
    rows = gpu_script.check_correctness("cpu")
    assert {(r["method"], r["dtype"]) for r in rows} == {
        (m, t) for m in gpu_script.METHODS for t in gpu_script.DTYPES}
    assert all(r["ok"] for r in rows), rows


def test_gpu_script_runs_end_to_end_on_cpu(gpu_script, tmp_path):
    out = tmp_path / "gpu.json"
    assert gpu_script.main(["--device", "cpu", "--quick", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["machine"]["device"] == "cpu" and all(c["ok"] for c in record["correctness"])
    assert {(r["method"], r["dtype"], r["n"]) for r in record["results"]} == {
        (m, t, n) for m in gpu_script.METHODS for t in gpu_script.DTYPES for n in gpu_script.QUICK_SIZES}
    assert len(record["crossover"]) == 2 * 2  # (dtype) x (two linear methods), d = 64


def test_gpu_script_without_cuda_says_so(gpu_script, capsys):
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    assert gpu_script.main([]) == 2
    assert "--device cpu" in capsys.readouterr().err


def test_without_a_working_compiler_the_compiled_peers_are_left_out_with_the_reason(monkeypatch):
    """A fresh machine may have no C++ compiler for inductor: the compiled peers drop out of
    both families, the record's note says why, and asking for one raises that reason."""
    from lattn_edu.bench import gated, methods, peers

    def broken_compile(*args, **kwargs):
        raise RuntimeError("no C++ compiler found")

    peers.compiler_problem.cache_clear()
    monkeypatch.setattr(torch, "compile", broken_compile)
    try:
        names = {m.name for m in bench.timed_methods(("numba",))}
        assert bench.PEER in names and bench.PEER_COMPILED not in names
        assert {m.origin for m in gated.gated_methods(("numba",))} == {"ours", "peer"}
        assert "no C++ compiler found" in methods.compiled_peer_note()
        q = torch.ones(1, 5, 3)
        with pytest.raises(RuntimeError, match="no C\\+\\+ compiler found"):
            peers.torch_chunkwise_linear_attention(q, q, q, compiled=True)
    finally:
        peers.compiler_problem.cache_clear()


def test_plots_of_the_record_name_lines_as_the_chapter_does_with_legends_off_the_data():
    """The packaged record's figures label our kernel and the peer as chapter 9 does, draw no
    crossing lines in the times figure (the chapter's table gives them), and keep every legend
    below the panels (a figure legend, none inside a panel)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    record = bench.load_results()
    for plot in (bench.plot_throughput, bench.plot_ratio, bench.plot_times):
        fig = plot(record)
        try:
            assert all(ax.get_legend() is None for ax in fig.axes)
            (legend,) = fig.legends
            texts = [t.get_text() for t in legend.get_texts()]
            assert len(texts) == len(set(texts))
            if plot is bench.plot_ratio:
                assert "d = 128, peer, eager" in texts and "d = 128, peer, compiled" in texts
                levels = {line.get_ydata()[0] for line in fig.axes[0].get_lines()
                          if line.get_linestyle() == ":"}
                assert levels == {1.0, 1.5}  # same speed, and the project's goal
                assert fig.axes[0].get_ylim()[1] > 1.5
            else:
                assert {"ours (numba chunkwise)", "peer, eager", "peer, compiled"} <= set(texts)
                assert bench.OURS not in texts and bench.PEER not in texts
            if plot is bench.plot_times:  # no crossing lines: chapter 9's table gives them
                assert not any(t.startswith("lines cross") for t in texts)
                assert all(len(line.get_xdata()) > 2 for ax in fig.axes for line in ax.get_lines())
        finally:
            plt.close(fig)


def test_the_decoding_figure_names_its_lines_state_and_kv_cache():
    """Chapter 9 calls the two decoding steps "the state" and "the KV cache": so does the legend,
    one line of each per head width, and no class name of the package."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    record = bench.load_results()
    fig = bench.plot_decode(record)
    try:
        texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        dims = sorted({r["d"] for r in record["decode"]})
        assert texts == [f"{name}, d = {d}" for d in dims for name in ("state", "KV cache")]
        assert not any("State" in t or "Cache" in t for t in texts)  # no class name
        # the decoding steps ran one head (the state's bytes say so), not the record's batch·heads
        assert "one head" in fig._suptitle.get_text() and "batch·heads" not in fig._suptitle.get_text()
    finally:
        plt.close(fig)


def test_the_decoding_heads_are_read_from_the_bytes_the_state_held():
    """A state of one head holds S and z: (d·d + d) float32 numbers, 4 bytes each. At d = 3 that
    is 12·4 = 48 bytes; twice that is two heads; a KV cache's rows do not count."""
    from lattn_edu.bench.summary import decode_heads

    def row(method, d, held):
        return {"method": method, "d": d, "n": 7, "bytes_held": held}

    one = [row("LinearAttentionState.step", 3, 48), row("LinearAttentionState.step", 5, 120),
           row("SoftmaxKVCache.step", 3, 999)]
    assert decode_heads(one) == 1
    assert decode_heads([row("LinearAttentionState.step", 3, 96)]) == 2
    assert decode_heads([row("LinearAttentionState.step", 3, 96)], itemsize=8) == 1
    with pytest.raises(ValueError):  # the rows disagree
        decode_heads([row("LinearAttentionState.step", 3, 48), row("LinearAttentionState.step", 5, 240)])
    with pytest.raises(ValueError):  # not a whole number of heads
        decode_heads([row("LinearAttentionState.step", 3, 50)])
    assert decode_heads(bench.load_results()["decode"]) == 1  # the shipped record: one head


def _sweep_row(family, d, over_best):
    return {"family": family, "d": d, "over_best": {f"peer c{c}": r for c, r in over_best.items()} | {"ours c32": 1.0}}


def test_the_peer_runs_at_its_fastest_chunk_on_average_over_the_swept_lengths(monkeypatch):
    from lattn_edu.bench import methods

    # 128 is best at two of three lengths but far off at the third: 64 wins on the geometric mean
    rows = (_sweep_row("linear", 64, {64: 1.05, 128: 1.0, 256: 1.6}),
            _sweep_row("linear", 64, {64: 1.04, 128: 1.0, 256: 1.7}),
            _sweep_row("linear", 64, {64: 1.0, 128: 1.5, 256: 2.2}),
            _sweep_row("linear", 128, {64: 1.3, 128: 1.0, 256: 1.1}),
            _sweep_row("delta rule", 128, {64: 1.2, 128: 1.2, 256: 1.0}),
            _sweep_row("delta rule", 128, {64: 1.0, 128: 1.0, 256: 1.44}))
    monkeypatch.setattr(methods, "_sweep_rows", lambda: rows)
    assert bench.peer_chunk_size("linear", 64) == 64
    assert bench.peer_chunk_size("linear", 128) == 128
    assert bench.peer_chunk_size("delta rule", 128) == 64  # 64 and 128 tie (1.2 each): the shorter
    assert bench.peer_chunk_size("linear", 32) == bench.PEER_CHUNK  # a width the sweep did not time
    assert bench.peer_chunk_size("kimi delta attention", 64) == bench.PEER_CHUNK


def test_the_shipped_sweep_gives_every_benchmarked_family_and_width_a_swept_chunk():
    from lattn_edu.bench.gated import VARIANTS

    sweep = records.load_record("chunk_sweep.json")
    for family in ("linear",) + VARIANTS:
        for d in (64, 128):
            assert bench.peer_chunk_size(family, d) in sweep["chunks"]["peer"]


def test_the_kernel_count_matches_hand_worked_numbers():
    # C = 32, m = d_v = 128: 32 * (128 + 64) + 2 * 128 * 128 = 6,144 + 32,768 = 38,912
    assert bench.kernel_macs_per_token(32, 128, 128) == 38_912
    # one token per chunk: the C x C part is 1 * (m + d_v / 2), on top of the scan's 2 m d_v
    assert bench.kernel_macs_per_token(1, 3, 4) == 3 + 2 + 24


def test_the_control_spread_is_the_largest_ratio_of_ours_to_itself():
    rows = synthetic_rows(linear_s=[1.0, 2.0, 4.0], softmax_s=[1.0, 4.0, 16.0], peer_s=[1.0, 1.0, 1.0],
                          sizes=(128, 256, 512))
    rows += [{"method": bench.CONTROL, "d": 64, "n": n, "status": "ok", "median_s": t}
             for n, t in ((128, 1.1), (256, 1.9), (512, 4.6))]
    spread = bench.control_spread(rows)
    assert spread["max"] == pytest.approx(1.15) and spread["at"] == (64, 512)
    assert spread["median"] == pytest.approx(1.1)  # of 1.1, 2.0/1.9 and 1.15
    # the direct call of the kernel is a third timing of it: slowest over fastest of the three
    rows += [{"method": bench.KERNEL, "d": 64, "n": 256, "status": "ok", "median_s": 2.5}]
    spread = bench.control_spread(rows)
    assert spread["max"] == pytest.approx(2.5 / 1.9) and spread["at"] == (64, 256)
    assert spread["by_shape"] == pytest.approx({(64, 128): 1.1, (64, 256): 2.5 / 1.9, (64, 512): 1.15})
    assert spread["slowest"] == {(64, 128): bench.CONTROL, (64, 256): bench.KERNEL, (64, 512): bench.CONTROL}
    with pytest.raises(ValueError, match="control"):
        bench.control_spread([r for r in rows if r["method"] not in (bench.CONTROL, bench.KERNEL)])


def test_interleaved_rounds_rotate_which_method_goes_first():
    order = []
    calls = {name: (lambda name=name: order.append(name)) for name in "abc"}
    settings = bench.Settings(sizes=(8,), dims=(8,), batch_heads=1, min_rounds=4, max_rounds=4,
                              shape_seconds=0.0, max_call_s=1.0, memory_budget=1.0, sgemm_size=None,
                              decode_sizes=(8,), decode_steps=1)
    samples = bench.time_interleaved(calls, {name: 1.0 for name in calls}, settings)
    assert order == list("abc" "bca" "cab" "abc")
    assert {name: len(times) for name, times in samples.items()} == {"a": 4, "b": 4, "c": 4}


def test_firmly_faster_counts_only_where_every_longer_length_beats_the_noise():
    # softmax over ours: 0.5, 1.1, 3.0, 1.2, 5.0 at 128 ... 2048
    sizes = (128, 256, 512, 1024, 2048)
    rows = synthetic_rows(linear_s=[1.0] * 5, softmax_s=[0.5, 1.1, 3.0, 1.2, 5.0], peer_s=[1.0] * 5,
                          sizes=sizes)
    ratio = bench.softmax_over_ours(rows, bench.SOFTMAX_SDPA, 64)
    assert list(ratio) == list(sizes) and ratio[512] == pytest.approx(3.0)
    assert bench.firmly_faster_from(rows, bench.SOFTMAX_SDPA, 64, noise=1.05) == (256, pytest.approx(1.1))
    assert bench.firmly_faster_from(rows, bench.SOFTMAX_SDPA, 64, noise=1.15) == (512, pytest.approx(1.2))
    assert bench.firmly_faster_from(rows, bench.SOFTMAX_SDPA, 64, noise=1.25) == (2048, pytest.approx(5.0))
    assert bench.firmly_faster_from(rows, bench.SOFTMAX_SDPA, 64, noise=6.0) == (None, None)
    with pytest.raises(ValueError, match="noise"):
        bench.firmly_faster_from(rows, bench.SOFTMAX_SDPA, 64, noise=0.9)
