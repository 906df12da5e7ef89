"""The explorer tests again under ipywidgets 7.7.1, Colab's default, beside the pinned 8.x.

ipywidgets 7.7.1 and its three small companions are installed once into a cache folder
with pip (from the package index) and put first on PYTHONPATH of a child pytest run;
everything else is this environment's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
COLAB_IPYWIDGETS = "7.7.1"
COMPANIONS = ["widgetsnbextension==3.6.1", "jupyterlab_widgets==1.1.11", "ipython_genutils==0.2.0"]


def test_the_package_accepts_colabs_ipywidgets():
    """Installing lattn_edu on Colab must not replace ipywidgets 7.7.x."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (ipywidgets,) = [Requirement(r) for r in project["dependencies"] if r.startswith("ipywidgets")]
    assert ipywidgets.specifier.contains(COLAB_IPYWIDGETS)


@pytest.mark.slow
def test_explorer_suite_passes_under_ipywidgets_7(tmp_path_factory):
    cache = Path(os.environ.get("LATTN_EDU_CACHE", Path.home() / ".cache" / "lattn-edu"))
    target = cache / f"ipywidgets-{COLAB_IPYWIDGETS}"
    if not (target / "ipywidgets").exists():
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                        f"ipywidgets=={COLAB_IPYWIDGETS}", *COMPANIONS], check=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), os.environ.get("PYTHONPATH", "")])}
    version = subprocess.run([sys.executable, "-c", "import ipywidgets; print(ipywidgets.__version__)"],
                             env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert version == COLAB_IPYWIDGETS
    tests = sorted(str(p) for p in (ROOT / "tests").glob("test_explorer*.py") if p.name != Path(__file__).name)
    # -n 0: this test already has its worker; the child runs the explorer tests in one process
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *tests],
                         env=env, cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and " failed" not in run.stdout
