"""Shared test helpers: one closeness check for every comparison in the suite, the book built
once per session, the programs outside Python some tests run (installed when missing), and
which tests share a test worker (pytest-xdist)."""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

from lattn_edu.compare import relative_error

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import system_packages  # noqa: E402

settings.register_profile("suite", deadline=None, max_examples=40, derandomize=True)
settings.load_profile("suite")

# float64 forms agree to 1e-10 relative, float32 to 1e-4 relative (RMS).
RTOL = {np.dtype(np.float64): 1e-10, np.dtype(np.float32): 1e-4}


def to_numpy(x):
    """numpy view of an array or a (possibly CUDA) torch tensor."""
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def absolute_and_relative_errors(actual, expected) -> tuple[float, float]:
    """(max abs error, RMS relative error ||a - e|| / ||e||), computed in float64."""
    a = to_numpy(actual).astype(np.float64)
    e = to_numpy(expected).astype(np.float64)
    abs_err = float(np.max(np.abs(a - e))) if a.size else 0.0
    rel_err = relative_error(a, e) if np.any(e) else abs_err  # all zeros: the absolute error
    return abs_err, rel_err


def central_differences(loss, args, step: float = 1e-6) -> list[np.ndarray]:
    """∂loss/∂arg for every entry of every array in ``args`` by central differences;
    ``loss(*args)`` returns a float. Exact to about 1e-9 for the small float64 problems here."""
    grads = []
    for position, arg in enumerate(args):
        grad = np.zeros_like(arg)
        for index in np.ndindex(arg.shape):
            bumped = []
            for sign in (1, -1):
                moved = [a.copy() for a in args]
                moved[position][index] += sign * step
                bumped.append(loss(*moved))
            grad[index] = (bumped[0] - bumped[1]) / (2 * step)
        grads.append(grad)
    return grads


def assert_close(actual, expected, rtol: float | None = None, what: str = "") -> None:
    """Assert equal shapes and RMS relative error <= rtol (default by dtype of ``actual``).

    The failure message reports both the absolute and the relative error.
    """
    a, e = to_numpy(actual), to_numpy(expected)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != expected {e.shape}"
    assert np.isfinite(a).all(), f"{what}: result has NaN or inf"
    if rtol is None:
        rtol = RTOL[np.dtype(a.dtype)] if np.dtype(a.dtype) in RTOL else 1e-10
    abs_err, rel_err = absolute_and_relative_errors(a, e)
    if AGREEMENT_RECORD:
        _record_agreement(what, rel_err, rtol, min((a.dtype, e.dtype), key=lambda t: np.dtype(t).itemsize))
    assert rel_err <= rtol, f"{what}: relative error {rel_err:.3e} > {rtol:.0e} (max abs error {abs_err:.3e})"


# With LATTN_AGREEMENT_RECORD=<file>, every assert_close appends the error it measured, one JSON
# line with the test's id, to that file: benchmarks/fla_agreement.py reports the figures the
# tests bound from it (each worker appends whole lines, so xdist is safe).
AGREEMENT_RECORD = os.environ.get("LATTN_AGREEMENT_RECORD")


def _record_agreement(what: str, rel_err: float, rtol: float, dtype) -> None:
    test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]
    line = json.dumps({"test": test, "what": what, "relative_error": float(rel_err), "rtol": rtol,
                       "dtype": np.dtype(dtype).name})
    with open(AGREEMENT_RECORD, "a") as handle:
        handle.write(line + "\n")


@pytest.fixture
def rng():
    return np.random.default_rng(20261129)


# ---- test workers (pytest-xdist, on by default: -n auto --dist loadgroup) ------------------

# A test that uses one of these fixtures runs in the worker of its group, so that the book is
# built (and its pages opened in chromium) once, and one process installs into the Colab-like
# virtual environment. The fixtures are looked up in each test's full closure, so a test
# that uses them through another fixture is grouped too.
WORKER_GROUPS = {"book_build": "book", "chromium": "book", "colab": "colab"}
# The book's group (the build and the browser tests) takes over a third of the suite's time
# in one process, so from three or four workers on it is the long pole: more workers only
# add their own collection (torch, numba) and memory.
MAX_WORKERS = 4


@pytest.hookimpl(optionalhook=True)  # xdist's hook: unknown where xdist is not installed
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """-n auto: one worker per core this process may run on (its CPU affinity: taskset, a
    container's cpuset; psutil's count of physical cores ignores it), at most MAX_WORKERS."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(cores, MAX_WORKERS)


def worker_group(fixturenames) -> str | None:
    """The xdist group of a test that uses ``fixturenames``, or None where it may run anywhere."""
    return next((group for fixture, group in WORKER_GROUPS.items() if fixture in fixturenames), None)


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]):
    grouped = [(item, group) for item in items
               if (group := worker_group(getattr(item, "fixturenames", ()))) is not None]
    for item, group in grouped:
        item.add_marker(pytest.mark.xdist_group(group))
        # Whatever needs the built site, the browser or the Colab-like environment is the slow
        # lane's: the fast lane (-m "not slow") is the numerics, exercises and explorers.
        item.add_marker(pytest.mark.slow)
    yield  # xdist's own hook reads the marks here
    # --dist loadgroup finds a test's group from the "@group" ending of its id. xdist 3.8 writes
    # it to item._nodeid, which pytest 9.2 no longer reads (the id lives in item._id), so
    # without this every group would be spread over the workers and the book built in each
    # (pytest-dev/pytest-xdist#1386; its fix, #1388, is not released). It does nothing where
    # xdist's own renaming already took effect.
    if getattr(config.option, "loadgroup", False):  # set in xdist's workers only
        from _pytest.nodeid import NodeId

        for item, group in grouped:
            if not item.nodeid.endswith(f"@{group}"):
                item._id = NodeId.parse(f"{item.nodeid}@{group}")


# ---- programs outside Python -------------------------------------------------------------

# Each program here is handed to tests by the session fixture of the same name below. Before
# the first test, those that the selected tests need are installed with apt where missing
# (tools/system_packages.py), so the test command works on a fresh Debian machine.
PROGRAMS = {
    "chromium": system_packages.Program("chromium", ("chromium", "chromium-driver"), env="LATTN_CHROMIUM"),
    # npm fetches axe-core (tests/test_axe.py); Debian's npm brings Node.js with it
    "axe_core": system_packages.Program("npm", ("npm",), env="LATTN_NPM"),
}
_NOT_INSTALLED = pytest.StashKey[dict]()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Install the programs the selected tests need, once, before any test runs."""
    if session.config.option.collectonly:
        return
    needed = [program for name, program in PROGRAMS.items()
              if any(name in getattr(item, "fixturenames", ()) for item in session.items)]
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    say = reporter.write_line if reporter is not None else print
    session.config.stash[_NOT_INSTALLED] = system_packages.ensure(needed, system_packages.System(say=say))


def program_path(config: pytest.Config, name: str) -> str:
    """The path of ``PROGRAMS[name]``; where it is missing, the test fails saying what to run."""
    program = PROGRAMS[name]
    problem = config.stash.get(_NOT_INSTALLED, {}).get(program.command)
    path = system_packages.find(program, system_packages.System())
    if problem or path is None:
        pytest.fail(problem or f"{name} not found. {system_packages.advice([program])}", pytrace=False)
    return path


@pytest.fixture(scope="session")
def chromium(pytestconfig) -> str:
    """The chromium that tests/test_site.py drives: $LATTN_CHROMIUM, else Debian's."""
    return program_path(pytestconfig, "chromium")


# axe-core, the WCAG rule engine that tests/test_axe.py runs in each page. Pinned: a new
# release adds rules, and a test should change only when this line does.
AXE_CORE_VERSION = "4.10.3"
AXE_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "lattn-edu" / f"axe-core-{AXE_CORE_VERSION}"


@pytest.fixture(scope="session")
def axe_core(pytestconfig) -> str:
    """The source of axe-core's axe.min.js, AXE_CORE_VERSION, as npm installs it from its
    registry into AXE_CACHE once per machine (npm: $LATTN_NPM, else Debian's, installed where
    missing). Tests inject this text into the page; the site itself never loads it."""
    npm = program_path(pytestconfig, "axe_core")
    script = AXE_CACHE / "node_modules" / "axe-core" / "axe.min.js"
    from filelock import FileLock

    with FileLock(str(AXE_CACHE) + ".lock", mode=0o666):
        if not script.is_file():
            AXE_CACHE.mkdir(parents=True, exist_ok=True)
            command = [npm, "install", "--prefix", str(AXE_CACHE), "--no-save", "--no-audit",
                       "--no-fund", "--ignore-scripts", f"axe-core@{AXE_CORE_VERSION}"]
            result = subprocess.run(command, capture_output=True, text=True, timeout=600)
            if result.returncode != 0 or not script.is_file():
                pytest.fail(f"`{' '.join(command)}` failed (exit {result.returncode}): "
                            f"{(result.stderr or result.stdout)[-600:]}", pytrace=False)
    return script.read_text(encoding="utf-8")


# ---- the book, built once ----------------------------------------------------------------

BUILD_TIMEOUT_S = 1800
# ipykernel's notice on the kernel's stderr while notebooks execute; not a Sphinx warning.
HARMLESS_LOG_LINE = re.compile(r"\[IPKernelApp\] WARNING \| Kernel is running over TCP without encryption")


@dataclass(frozen=True)
class BookBuild:
    """One run of the README's strict build command into a folder of its own."""

    command: list[str]
    returncode: int
    log: str
    seconds: float
    # html/ (the site), jupyter_execute/ (every executed notebook and its glued values) and
    # colab_labels.json (what book/_ext/colab_labels.py recorded for the Colab editions)
    folder: Path

    @property
    def html(self) -> Path:
        return self.folder / "html"

    def executed(self, notebook: Path) -> Path:
        """Where the build keeps ``notebook`` (a chapter's source in this checkout, a MyST
        notebook) as it executed it: an .ipynb of the same name."""
        return self.folder / "jupyter_execute" / notebook.relative_to(ROOT).with_suffix(".ipynb")

    def warnings(self) -> list[str]:
        return [line for line in self.log.splitlines()
                if "WARNING" in line and not HARMLESS_LOG_LINE.search(line)]

    def log_lines_about(self, name: str) -> str:
        """The log's lines that mention ``name`` (a chapter's stem), else its last lines."""
        lines = self.log.splitlines()
        return "\n".join([line for line in lines if name in line] or lines[-40:])


@pytest.fixture(scope="session")
def book_build(tmp_path_factory) -> BookBuild:
    """The book built (and every chapter executed) once per session, with
    ``jupyter-book build . -W -n --keep-going``, into a temporary folder.

    tests/test_site.py checks the site it makes and tests/test_chapters.py the notebooks it
    executed, so a test session runs the chapters once for both. With LATTN_BOOK_BUILD set
    to a folder given to ``jupyter-book build --path-output`` before, that build is checked
    instead (its log, where saved as ``_build/build.log``, is checked for warnings): for
    trying a change to the site's CSS without building again. The suite proper builds.
    """
    reused = os.environ.get("LATTN_BOOK_BUILD")
    if reused:  # a build made before, for checking the site again after a CSS change
        folder = Path(reused).resolve() / "_build"
        if not (folder / "html" / "index.html").is_file():
            pytest.fail(f"LATTN_BOOK_BUILD={reused}: no _build/html/index.html there", pytrace=False)
        log = folder / "build.log"
        print(f"LATTN_BOOK_BUILD: checking the build in {folder}, not building this checkout")
        return BookBuild(["(reused)", str(folder)], 0, log.read_text(encoding="utf-8") if log.is_file() else "",
                         0.0, folder)
    out = tmp_path_factory.mktemp("book")
    jupyter_book = shutil.which("jupyter-book", path=str(Path(sys.executable).parent)) or "jupyter-book"
    command = [jupyter_book, "build", ".", "-W", "-n", "--keep-going", "--path-output", str(out)]
    started = time.perf_counter()
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    return BookBuild(command, result.returncode, result.stdout + result.stderr,
                     time.perf_counter() - started, out / "_build")


# ---- the built site in a browser (tests/test_site.py, test_axe.py, test_accessibility.py) ----
# One definition for every module: a fixture imported into two test modules would be two
# session fixtures, and Playwright's sync API cannot start a second time in one process.

# Chapter 10's page, with its explorers' frames, took over 30 s to settle on a 2-core machine
# busy with a second test worker; a page that never loads still fails, later.
PAGE_TIMEOUT_MS = 120_000
# The flags that let Debian's chromium run headless on a closed network.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCREENSHOTS = ROOT / "_build" / "screenshots"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        pass


@pytest.fixture(scope="session")
def built_site(book_build) -> Path:
    """The site of the session's strict build (conftest.py), which must pass without a warning."""
    shutil.rmtree(SCREENSHOTS, ignore_errors=True)  # pictures of this build only
    SCREENSHOTS.mkdir(parents=True)
    (SCREENSHOTS / "build.log").write_text(book_build.log, encoding="utf-8")
    tail = "\n".join(book_build.log.splitlines()[-40:])
    assert book_build.returncode == 0, (
        f"{' '.join(book_build.command)} exited {book_build.returncode}:\n{tail}")
    assert not book_build.warnings(), "the build warned:\n" + "\n".join(book_build.warnings())
    html = book_build.html
    assert (html / "index.html").exists(), f"no index.html in {html}"
    print(f"site built in {book_build.seconds:.0f} s")
    return html


@pytest.fixture(scope="session")
def site_url(built_site):
    """http://127.0.0.1:<free port>/ serving the built site from a background thread."""
    handler = functools.partial(_QuietHandler, directory=str(built_site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def report():
    """What the browser saw, written to _build/screenshots/report.json after every page."""
    data = {"pages": {}, "sliders_moved": 0, "quizzes_answered": 0, "requests_seen": 0,
            "foreign_requests": [], "console_errors": []}
    yield data
    write_report(data)


def write_report(data: dict) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    (SCREENSHOTS / "report.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


@pytest.fixture(scope="session")
def playwright_api():
    """Playwright's sync API, started once per process: it cannot run twice at a time, so every
    test that drives chromium (the site's pages, tests/test_explorer_access.py) shares it."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed: python -m pip install -r requirements.txt", pytrace=False)
    with sync_playwright() as playwright:
        yield playwright


@pytest.fixture(scope="session")
def browser_context(chromium, site_url, tmp_path_factory, playwright_api):
    """Chromium, headless, with a new empty profile; anything not on 127.0.0.1 is refused."""
    profile = tmp_path_factory.mktemp("chromium-profile")
    context = playwright_api.chromium.launch_persistent_context(
        str(profile), executable_path=chromium, headless=True, args=CHROMIUM_ARGS,
        viewport={"width": 1280, "height": 900}, service_workers="block")
    context.set_default_timeout(PAGE_TIMEOUT_MS)
    context.route(re.compile(r"^(?!https?://127\.0\.0\.1[:/]|data:|blob:)"),
                  lambda route: route.abort("blockedbyclient"))
    yield context
    context.close()


