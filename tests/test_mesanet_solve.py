"""benchmarks/mesanet_solve.py (a script, imported by path): a smoke run at tiny sizes writes a
complete record, the exact solve matches the recurrent form, and CG converges as it must."""

from __future__ import annotations

import itertools
import json

import benchmark_scripts
import numpy as np
import pytest


@pytest.fixture(scope="module")
def script():
    return benchmark_scripts.load("mesanet_solve")


@pytest.fixture(scope="module")
def record(script, tmp_path_factory):
    out = tmp_path_factory.mktemp("mesanet") / "mesanet_solve.json"
    written = script.main(["--smoke", "--rounds", "3", "--out", str(out)])
    assert json.loads(out.read_text(encoding="utf-8")) == json.loads(json.dumps(written))
    return written


def test_the_record_holds_the_machine_the_load_and_every_solver(script, record):
    assert record["machine"]["cores"] >= 1 and len(record["load_average_start"]) == 3
    assert record["settings"]["smoke"] and record["settings"]["rounds"] == 3
    shapes = [(r["n"], r["d_k"], r["chunk_size"]) for r in record["cases"]]
    assert shapes == [case[:3] for case in script.SMOKE_CASES]
    for row in record["cases"]:
        assert [(m["solver"], m["cg_iterations"]) for m in row["methods"]] == \
            [("exact", None)] + [("cg", j) for j in script.CG_ITERATIONS]
        for m in row["methods"]:
            assert 0 < m["median_s"] <= m["p95_s"]
        assert row["condition_number"] >= 1


def test_exact_is_the_recurrent_form_and_cg_converges_in_d_k_steps(record):
    for row in record["cases"]:
        errors = {m["cg_iterations"]: m["relative_error"] for m in row["methods"]}
        assert errors[None] < 1e-12  # the chunkwise exact solve is the recurrent one
        cg = [errors[j] for j in sorted(j for j in errors if j is not None)]
        assert all(later <= earlier + 1e-12 for earlier, later in itertools.pairwise(cg))
        assert cg[0] > 1e-3  # two steps are not enough at d_k >= 5
        # in exact arithmetic d_k steps solve a d_k × d_k system
        assert all(errors[j] < 1e-10 for j in errors if j is not None and j >= row["d_k"])


def test_inputs_are_mesanets(script):
    x = script.make_inputs(301, 9, 3.0, 0.5, seed=2)
    assert x["q"].shape == x["k"].shape == x["v"].shape == (script.HEADS, 301, 9)
    np.testing.assert_allclose(np.linalg.norm(x["k"], axis=-1), 1, rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(x["q"], axis=-1), 1, rtol=1e-12)
    assert 0 < x["beta"].min() and x["beta"].max() < 1 and x["log_decay"].max() < 0
    assert 0.85 < np.exp(x["log_decay"]).mean() < 0.97  # sigmoid(N(3, 1))
    cosines = np.einsum("hid,hjd->hij", x["k"], x["k"])[:, ~np.eye(301, dtype=bool)]
    assert 0.4 < cosines.mean() < 0.6  # ρ = 0.5
