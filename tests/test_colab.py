"""The Colab editions (book/colab/) read like the website and run top to bottom on a
Colab-like runtime, with no repository and no network.

The runtime is Colab's published stack (STACK below), except for Python (3.11 here, 3.13 on
Colab) and torch (2.13.0 here, 2.11.0+cpu on Colab): see the comment at STACK.

The fast tests read the committed notebooks: in sync with their sources and the labels and
values they recorded, no MyST left in the Markdown, quizzes and solutions folded, none at
all in the student build. After the session's strict build (``book_build`` in conftest.py),
``tools/colab_notebooks.py --check`` runs against it: a committed edition whose numbers,
titles or citations the build now resolves differently is stale.

The end-to-end test builds Colab's stack in a virtual environment (cached under
``~/.cache/lattn-edu/``, keyed by the pinned list; built from scratch where it is missing),
installs lattn_edu from a snapshot of this checkout by running the notebooks' own first
cell, and then executes every Colab notebook from a folder that holds only that notebook,
with the kernel in a network namespace of its own (``unshare -n``: no interface at all; the
test talks to the kernel over Unix sockets). Each notebook's time goes to
``_build/colab/run.json``; times are recorded there, not asserted.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from filelock import FileLock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import colab_notebooks  # noqa: E402

NOTEBOOKS = sorted(colab_notebooks.COLAB.glob("*.ipynb"))
IDS = [path.stem for path in NOTEBOOKS]

# Colab's runtime as published in googlecolab/backend-info on 2026-08-19 (the versions it
# preinstalls), with two differences forced by this machine: Colab runs Python 3.13.15 and
# torch 2.11.0+cpu, while here the runtime is Python 3.11 (the only Python these machines
# have) and torch 2.13.0 (the only CPU wheel on this disk). The package's own code is kept
# free of anything 3.13 removed (tests/test_python313.py). Torch first, so that nothing after
# it can pull a different build.
PIP = "pip==24.1.2"
TORCH = "torch==2.13.0"
STACK = ("numpy==2.1.3", "scipy==1.16.3", "matplotlib==3.10.0", "pandas==2.2.3",
         "numba==0.61.2", "llvmlite==0.44.0", "ipywidgets==7.7.1", "anywidget==0.9.21",
         "ipykernel==6.17.1", "ipython==7.34.0", "jupyter_client==7.4.9", "nbformat==5.11.1")
PYTHON = "3.11"

MYST = {"{glue": r"\{glue", "{ref}": r"\{ref\}", "{eq}": r"\{eq\}", "{cite": r"\{cite",
        "{doc}": r"\{doc\}", ":::": r"(?m)^:::", "(label)=": r"(?m)^\([\w-]+\)=\s*$",
        "```{directive}": r"(?m)^```\{"}


def cells_of(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def is_folded(cell: dict) -> bool:
    """Colab shows only the title of a code cell that starts with #@title and has the form view."""
    return (cell["cell_type"] == "code" and cell["metadata"].get("cellView") == "form"
            and "".join(cell["source"]).startswith("#@title "))


def test_there_is_a_colab_edition_of_every_chapter():
    assert [p.stem for p in NOTEBOOKS] == [src.stem for src in colab_notebooks.sources()]


@pytest.mark.slow  # a whole build, or every frame: the slow lane
def test_colab_notebooks_match_their_sources():
    """Without a build: each notebook is what its source renders to with the labels and glued
    values the notebook recorded (metadata lattn_edu.resolved and .glue)."""
    stale = colab_notebooks.stale_notebooks(build=None)
    assert not stale, f"out of date: {stale}; build the site, then run python tools/colab_notebooks.py"


@pytest.mark.slow
def test_colab_notebooks_are_current_with_the_build(book_build):
    """Against the session's build: every equation and exercise number, section title and
    citation as this build resolved it, and every glued value's name glued by it. Strict about
    every character except the glued values, which each notebook records from the build that
    wrote it: they change from build to build wherever they come from a live timing."""
    stale = colab_notebooks.stale_notebooks(build=book_build.folder)
    assert not stale, f"out of date: {stale}; run python tools/colab_notebooks.py after this build"


@pytest.mark.slow
def test_the_recorded_labels_are_what_the_pages_show(book_build):
    """book/_ext/colab_labels.py records what the build resolved: each equation's number and
    each exercise's number are the ones its page shows."""
    labels = json.loads((book_build.folder / colab_notebooks.LABELS).read_text(encoding="utf-8"))
    for source in colab_notebooks.sources():
        page = labels[colab_notebooks.docname(source)]
        html = (book_build.html / f"{colab_notebooks.docname(source)}.html").read_text(encoding="utf-8")
        for label, number in page["equations"].items():
            shown = re.search(rf'id="equation-{re.escape(label)}">\s*<span class="eqno">\(([^)<]*)\)', html)
            assert shown and shown.group(1) == number, f"{source.stem}: equation {label}"
        for label, number in page["exercises"].items():
            shown = re.search(rf'id="{re.escape(label)}">.*?admonition-title">\s*<span class="caption-number">'
                              rf'Exercise ([\d.]+)', html, re.S)
            assert shown and shown.group(1) == number, f"{source.stem}: exercise {label}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_no_myst_syntax_left_in_the_markdown(path):
    text = "\n".join("".join(c["source"]) for c in cells_of(path) if c["cell_type"] == "markdown")
    found = {name: len(re.findall(pattern, text)) for name, pattern in MYST.items()}
    assert not any(found.values()), f"{path.name}: {found}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_every_quoted_number_is_recorded(path):
    notebook = json.loads(path.read_text(encoding="utf-8"))
    source = (ROOT / notebook["metadata"]["lattn_edu"]["source"]).read_text(encoding="utf-8")
    quoted = set(re.findall(r"\{glue:text\}`([^`]+)`", source))
    assert quoted == set(notebook["metadata"]["lattn_edu"]["glue"])


def solution_bodies(source: Path) -> list[str]:
    """The text of every {solution} block of a MyST source."""
    return re.findall(r"^:::\{solution\}.*?\n(.*?)^:::$", source.read_text(encoding="utf-8"), re.M | re.S)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_answers_are_only_in_folded_cells(path):
    """Quiz code (which holds the answer) and every solution sit in folded form cells; a
    solution's prose and code appear nowhere else."""
    cells = cells_of(path)
    shown = ["".join(c["source"]) for c in cells if not is_folded(c)]
    folded = "\n".join("".join(c["source"]) for c in cells if is_folded(c))
    assert not [s for s in shown if "Quiz(" in s], f"{path.name}: a quiz shows its answer"
    assert not [s for s in shown if re.search(r"^def solution_", s, re.M)], f"{path.name}: a solution is unfolded"
    source = colab_notebooks.SOURCES / f"{path.stem}.md"
    for body in solution_bodies(source):
        for line in body.splitlines():
            if line.startswith((":", "```")):
                continue
            for words in re.split(r"\{[\w:]+\}`[^`]*`", line):  # the text between roles
                if len(words.strip()) > 30:
                    assert not any(words in s for s in shown), f"{path.name}: solution text unfolded: {words!r}"
                    assert words in folded, f"{path.name}: solution text missing: {words!r}"
    if solution_bodies(source):
        assert "Solution to exercise" in folded


@pytest.mark.slow  # a whole build, or every frame: the slow lane
def test_the_student_build_has_no_solutions():
    """hide_solutions: true writes notebooks without a trace of the solutions."""
    config = colab_notebooks.read_config()
    for path in NOTEBOOKS:
        source = colab_notebooks.SOURCES / f"{path.stem}.md"
        labels = colab_notebooks.recorded_labels(path, config)
        glue = colab_notebooks.recorded_glue(path)
        student = colab_notebooks.render(source, labels, glue, "lattn_edu", hide_solutions=True)
        assert "Solution to exercise" not in student and "def solution_" not in student, path.name
        assert "Concept check" in student or "Quiz(" not in source.read_text(encoding="utf-8")


def tiny_book(tmp_path: Path):
    """Two chapters' labels as book/_ext/colab_labels.py records them, for known-answer tests
    of the translation of the second."""
    import plain_markdown

    (tmp_path / "helpers.py").write_text("def solution_twice(x):\n    return 2 * x\n", encoding="utf-8")
    empty = {"equations": {}, "exercises": {}, "targets": {}, "citations": {}}
    cite = {"a1": {"page": "book/references", "parenthetical": "Ada et al., 2001",
                   "textual": "Ada et al. (2001)"},
            "b2": {"page": "book/references", "parenthetical": "Dee and Eff, 2002",
                   "textual": "Dee and Eff (2002)"}}
    pages = {
        "book/myst/01-one": {**empty, "title": "1. One", "equations": {"eq-one": "7"},
                             "targets": {"ch-one": {"anchor": "", "title": "1. One"},
                                         "sec-x": {"anchor": "sec-x", "title": "Part $x$"},
                                         "box-y": {"anchor": "box-y", "title": ""}}},
        "book/myst/02-two": {**empty, "title": "2. Two", "exercises": {"ex-two": "2.1"},
                             "citations": cite},
        "book/references": {**empty, "title": "References"},
    }
    resolved = plain_markdown.Resolved(pages, "https://example.org/site/")
    translator = plain_markdown.ChapterTranslator(resolved, "book/myst/02-two", {"n": "37"}, tmp_path)
    return plain_markdown, resolved, translator


def test_the_translation_gives_plain_markdown(tmp_path):
    plain_markdown, resolved, translator = tiny_book(tmp_path)
    text = ("See {eq}`eq-one` in {ref}`ch-one` and {ref}`sec-x`, {cite:p}`a1,b2` and {cite:t}`b2`: "
            "{glue:text}`n`; {doc}`the list <../references>`.\n"
            "\n:::{admonition} Note\n:class: tip\n\nBody.\n:::\n"
            ":::{solution} ex-two\n:class: dropdown\n\nBecause.\n\n"
            "```{literalinclude} helpers.py\n:pyobject: solution_twice\n```\n:::\nAfter.")
    site, refs = "https://example.org/site/book/", "https://example.org/site/book/references.html"
    shown, solution, after = translator.markdown(text)
    assert shown == (f"See (7) in [1. One]({site}myst/01-one.html) and "
                     f"[Part $x$]({site}myst/01-one.html#sec-x), "
                     f"([Ada et al., 2001]({refs}); [Dee and Eff, 2002]({refs})) and "
                     f"[Dee and Eff (2002)]({refs}): 37; [the list]({refs}).\n\n> **Note**\n>\n> Body.")
    assert solution == plain_markdown.Solution("2.1", "Because.", "def solution_twice(x):\n    return 2 * x")
    assert after == "After."
    # what it looked up, to be recorded in the notebook: the other chapter's labels included
    assert resolved.used["book/myst/01-one"] == {
        "equations": {"eq-one": "7"}, "targets": {"ch-one": {"anchor": "", "title": "1. One"},
                                                   "sec-x": {"anchor": "sec-x", "title": "Part $x$"}}}
    assert set(resolved.used["book/myst/02-two"]["citations"]) == {"a1", "b2"}


def test_a_target_without_a_title_links_with_the_text_the_reference_gives(tmp_path):
    # a label on a box: Sphinx links {ref}`text <label>` to it and refuses a bare {ref}
    plain_markdown, _, translator = tiny_book(tmp_path)
    shown, = translator.markdown("See {ref}`the box <box-y>`.")
    assert shown == "See [the box](https://example.org/site/book/myst/01-one.html#box-y)."
    with pytest.raises(plain_markdown.UnsupportedMyST, match="box-y, which has no title, needs its own text"):
        translator.markdown("See {ref}`box-y`.")


def test_recorded_titles_keep_their_math_and_code():
    """A section title as the build records it for {ref} links (book/_ext/colab_labels.py):
    Markdown, so that Colab typesets its math as the website does."""
    from docutils import nodes

    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import colab_labels

    title = nodes.title("", "", nodes.Text("Error against softmax, as "), nodes.math("", "m"),
                        nodes.Text(" grows, in "), nodes.literal("", "la.favor"))
    assert colab_labels.markdown_text(title) == "Error against softmax, as $m$ grows, in `la.favor`"


def test_an_exercise_of_another_chapter_is_no_exercise_of_this_one(tmp_path):
    plain_markdown, resolved, _ = tiny_book(tmp_path)
    first = plain_markdown.ChapterTranslator(resolved, "book/myst/01-one", {}, tmp_path)
    with pytest.raises(plain_markdown.UnsupportedMyST, match="ex-two is on book/myst/02-two"):
        first.markdown(":::{exercise}\n:label: ex-two\n\nDo it.\n:::")


@pytest.mark.parametrize("text", ["{numref}`fig-x`", "```{figure} x.png\n```", "{ref}`nowhere`",
                                  "{cite:p}`unknown`", "{glue:text}`missing`", "{eq}`eq-none`",
                                  "$$\nx\n$$ (eq-none)", "{doc}`../nowhere`"])
def test_an_untranslatable_construct_is_an_error(tmp_path, text):
    plain_markdown, _, translator = tiny_book(tmp_path)
    with pytest.raises(plain_markdown.UnsupportedMyST, match="02-two"):
        translator.markdown(text)


def test_the_first_cell_installs_the_package_folded_and_without_upgrades():
    url = colab_notebooks.read_config()["repository"]["url"]
    for path in NOTEBOOKS:
        first = cells_of(path)[0]
        source = "".join(first["source"])
        assert is_folded(first) and f"git+{url}@" in source, path.name
        assert "--upgrade" not in source and "-U " not in source


# ---- the Colab-like runtime ----------------------------------------------------------------

def python_311() -> str:
    if sys.version_info[:2] == (3, 11):
        return sys.executable
    found = shutil.which(f"python{PYTHON}")
    if found is None:
        pytest.fail(f"the Colab-like runtime needs Python {PYTHON}: install python{PYTHON} "
                    f"(apt-get install python{PYTHON} python{PYTHON}-venv)")
    return found


CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "lattn-edu"


def colab_venv() -> Path:
    """Colab's stack in a virtual environment, built once per pinned list and kept."""
    pins = (PYTHON, PIP, TORCH) + STACK
    key = hashlib.sha256("\n".join(pins).encode()).hexdigest()[:12]
    venv = CACHE / f"colab-venv-{key}"
    ready = venv / "pinned.txt"
    if ready.is_file():
        return venv
    shutil.rmtree(venv, ignore_errors=True)  # a build that stopped half-way
    subprocess.run([python_311(), "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    for step in ([PIP], [TORCH], list(STACK)):
        subprocess.run(pip + step, check=True)
    ready.write_text("\n".join(pins) + "\n", encoding="utf-8")
    return venv


def installed(venv: Path) -> dict[str, str]:
    listing = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json"],
                             check=True, capture_output=True, text=True).stdout
    return {row["name"].lower().replace("_", "-"): row["version"] for row in json.loads(listing)}


def write_kernelspecs(venv: Path, folder: Path) -> None:
    """Two kernels of the Colab-like runtime: "colab" and "colab-offline", whose kernel runs
    in a network namespace of its own (no interface at all)."""
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.fail(f"unshare -n failed ({probe.stderr.strip()}): this test cuts the kernel's "
                    "network with it and needs root")
    kernel = [str(venv / "bin" / "python"), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    for name, argv in (("colab", kernel), ("colab-offline", ["unshare", "-n"] + kernel)):
        spec = folder / name
        spec.mkdir(parents=True, exist_ok=True)
        # An empty PYTHONPATH: a checkout's src/ on this session's PYTHONPATH would let the
        # kernel import lattn_edu without the first cell installing it.
        (spec / "kernel.json").write_text(json.dumps(
            {"argv": argv, "display_name": name, "language": "python", "env": {"PYTHONPATH": ""}}),
            encoding="utf-8")


def execute(notebook: nbformat.NotebookNode, cwd: Path, kernel: str, work: Path) -> float:
    """Run every cell from ``cwd``; returns the wall time in seconds. Errors stay in the outputs."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    specs = KernelSpecManager(kernel_dirs=[str(work / "kernels")])
    # Unix sockets, which need no network interface, between this test and the kernel
    manager = KernelManager(kernel_name=kernel, kernel_spec_manager=specs, transport="ipc",
                            ip=str(work / f"k{time.monotonic_ns()}"))
    client = NotebookClient(notebook, km=manager, timeout=600, allow_errors=True,
                            resources={"metadata": {"path": str(cwd)}})
    start = time.perf_counter()
    try:
        client.execute(cwd=str(cwd))
        return time.perf_counter() - start
    finally:
        # nbclient leaves a kernel it was handed running: without this, every notebook's
        # kernel would stay alive (memory, a core's share) until the test session ends
        manager.shutdown_kernel(now=True)


def install_cell(requirement: str) -> nbformat.NotebookNode:
    """The Colab notebooks' first cell, as a notebook, installing ``requirement``."""
    first = nbformat.reads(NOTEBOOKS[0].read_text(encoding="utf-8"), as_version=4).cells[0]
    configured = colab_notebooks.install_requirement(colab_notebooks.read_config())
    assert configured in first.source
    cell = nbformat.v4.new_code_cell(first.source.replace(configured, requirement))
    return nbformat.v4.new_notebook(cells=[cell])


def snapshot(destination: Path) -> str:
    """This checkout's files (those git would clone, uncommitted edits included) in a new
    repository; returns the pip requirement that installs lattn_edu from it."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           check=True, capture_output=True, text=True).stdout.split("\0")
    for name in filter(None, files):
        if (ROOT / name).is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, destination / name)
    git = ["git", "-C", str(destination), "-c", "user.name=test", "-c", "user.email=test@localhost"]
    for command in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "snapshot"]):
        subprocess.run(git + command, check=True)
    return f"lattn_edu @ git+file://{destination}@main"


@pytest.fixture(scope="module")
def colab(tmp_path_factory):
    """The Colab-like runtime, lattn_edu installed by the first cell, and what that cell did.
    The runtime is shared by every test session on this machine and each one reinstalls
    lattn_edu into it, so a session holds a file lock on it while its tests run."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with FileLock(CACHE / "colab-venv.lock"):
        yield from _colab_runtime(tmp_path_factory)


def _colab_runtime(tmp_path_factory):
    venv = colab_venv()
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "uninstall", "-y", "-q", "lattn_edu"], check=True)
    # numba's cache files, written by the last run, outlive the uninstall; the folder left
    # would import as an empty namespace package and the first cell would skip installing
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    shutil.rmtree(Path(site) / "lattn_edu", ignore_errors=True)
    before = installed(venv)
    # a short path (a Unix socket's is limited to 107 bytes), and a new one: a run that was
    # killed leaves its folder behind, and a later process may get the same pid
    work = Path(tempfile.mkdtemp(prefix="colab-", dir="/tmp"))
    write_kernelspecs(venv, work / "kernels")
    failed = install_cell(colab_notebooks.install_requirement(colab_notebooks.read_config()))  # GitHub, no network
    execute(failed, work, "colab-offline", work)
    install = install_cell(snapshot(tmp_path_factory.mktemp("snapshot")))
    execute(install, work, "colab", work)
    yield {"venv": venv, "before": before, "after": installed(venv), "failed": failed,
           "install": install, "work": work}
    shutil.rmtree(work, ignore_errors=True)


def errors(notebook: nbformat.NotebookNode) -> list[str]:
    return [f"{out.get('ename')}: {out.get('evalue')}" for cell in notebook.cells
            if cell.cell_type == "code" for out in cell.get("outputs", []) if out.output_type == "error"]


RUN_RECORD = ROOT / "_build" / "colab" / "run.json"


def record_time(chapter: str, seconds: float) -> None:
    """Add ``chapter``'s run to RUN_RECORD. A file lock and an atomic replace keep every
    chapter's entry when other test processes (workers, another session) write it too."""
    RUN_RECORD.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(RUN_RECORD.with_suffix(".lock")):
        times = json.loads(RUN_RECORD.read_text(encoding="utf-8")) if RUN_RECORD.is_file() else {}
        times[chapter] = {"seconds": round(seconds, 1), "cores": len(os.sched_getaffinity(0)),
                          "date": time.strftime("%Y-%m-%d %H:%M")}
        partial = RUN_RECORD.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(times, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        partial.replace(RUN_RECORD)


@pytest.mark.slow
def test_the_first_cell_fails_in_one_message_without_network(colab):
    outputs = [out for out in colab["failed"].cells[0].outputs if out.output_type == "error"]
    assert len(outputs) == 1, colab["failed"].cells[0].outputs
    (error,) = outputs
    assert error.ename == "InstallFailed"
    assert len(error.traceback) == 1 and "Traceback" not in error.traceback[0]
    assert "pip install 'lattn_edu @ git+" in error.traceback[0]


@pytest.mark.slow
def test_the_install_keeps_every_preinstalled_version(colab):
    assert not errors(colab["install"])
    assert "lattn-edu" in colab["after"] and "lattn-edu" not in colab["before"]
    changed = {name: (version, colab["after"].get(name)) for name, version in colab["before"].items()
               if colab["after"].get(name) != version}
    assert not changed, f"installing lattn_edu changed {changed}"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_chapter_runs_offline_from_an_empty_folder(colab, path, tmp_path):
    folder = tmp_path / "alone"
    folder.mkdir()
    shutil.copy(path, folder / path.name)
    notebook = nbformat.read(folder / path.name, as_version=4)
    seconds = execute(notebook, folder, "colab-offline", colab["work"])
    record_time(path.stem, seconds)
    assert not errors(notebook), f"{path.name}: {errors(notebook)}"
    explorers = [cell for cell in notebook.cells if cell.cell_type == "code"
                 and "explorers.CATALOG[" in cell.source]
    for cell in explorers:
        views = [out for out in cell.outputs
                 if "application/vnd.jupyter.widget-view+json" in out.get("data", {})]
        assert views, f"{path.name}: explorer cell without a widget view: {cell.source!r}"
