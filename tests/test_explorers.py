"""Every explorer: pure renders that differ across the grid, a live widget whose controls
re-render, a static page with working frames and no other host, and a clear bad-setting path."""

from __future__ import annotations

import hashlib
import io
import itertools
import re

import numpy as np
import pytest
from PIL import Image

from lattn_edu import explorers
from lattn_edu.explorers.base import ImpossibleSetting, figure_png

NAMES = sorted(explorers.CATALOG)


def picture(fig) -> str:
    return hashlib.sha256(figure_png(fig, dpi=40)).hexdigest()


def grid_points(explorer, limit=4):
    """The defaults and, for each control, its first and last value (others at default)."""
    points = [dict(explorer.defaults)]
    for name, options in explorer.controls.items():
        for value in (options[0], options[-1]):
            points.append({**explorer.defaults, name: value})
    return points[: 1 + 2 * len(explorer.controls)][: max(limit, 1 + 2 * len(explorer.controls))]


def test_catalog_holds_every_required_explorer():
    required = {"state_size", "rank", "sharpness", "feature_maps", "recurrence",
                "worked_example", "decay", "scaling", "gates"}
    missing = required - set(explorers.CATALOG)
    assert not missing or missing == required - set(NAMES), missing


@pytest.mark.parametrize("name", NAMES)
def test_controls_are_grids_with_defaults_on_them(name):
    explorer = explorers.CATALOG[name]()
    assert explorer.controls and set(explorer.defaults) == set(explorer.controls)
    for control, options in explorer.controls.items():
        assert isinstance(options, tuple) and len(options) >= 2, control
        assert explorer.defaults[control] in options, control


@pytest.mark.parametrize("name", NAMES)
def test_render_is_pure_and_each_control_changes_the_picture(name):
    explorer = explorers.CATALOG[name]()
    default = picture(explorer.render(**explorer.defaults))
    assert picture(explorer.render(**explorer.defaults)) == default  # same values, same picture
    for control, options in explorer.controls.items():
        others = [v for v in options if v != explorer.defaults[control]]
        changed = []
        for value in others:
            try:
                changed.append(picture(explorer.render(**{**explorer.defaults, control: value})))
            except ImpossibleSetting:
                continue
        assert changed and all(p != default for p in changed), f"{control} does not change the picture"


@pytest.mark.parametrize("name", NAMES)
def test_widget_controls_draw_again(name, monkeypatch):
    import ipywidgets as widgets

    explorer = explorers.CATALOG[name]()
    calls = []
    original = explorer.draw
    monkeypatch.setattr(explorer, "draw", lambda fig, **v: calls.append(v) or original(fig, **v))
    box = explorer.widget()
    image = next(c for c in box.children if isinstance(c, widgets.Image))
    controls = [c for c in box.children if isinstance(c, (widgets.SelectionSlider, widgets.Dropdown))]
    assert len(controls) == len(explorer.controls) and len(calls) == 1
    for control in controls:
        before, picture_before = len(calls), image.value
        option = [o for o in control.options if o != control.value][-1]
        control.value = option[1] if isinstance(option, tuple) else option
        assert len(calls) == before + 1, f"{control.description} did not draw again"
        assert image.value != picture_before or box.children[-2].value, control.description
    assert image.value[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow  # a whole build, or every frame: the slow lane
@pytest.mark.parametrize("name", NAMES)
def test_static_html_is_self_contained_and_has_a_frame_per_grid_point(name):
    explorer = explorers.CATALOG[name]()
    page = explorer.static_html()
    frames = re.search(r'<script type="application/json" class="lattn-frames">(.*?)</script>', page, re.S)
    import json

    frames = json.loads(frames.group(1))
    grid = list(itertools.product(*(range(len(o)) for o in explorer.controls.values())))
    assert len(frames) == len(grid) >= 2
    assert set(frames) == {"-".join(map(str, point)) for point in grid}
    assert len(set(frames.values())) >= 2  # the frames really differ
    markup = re.sub(r'<script type="application/json".*?</script>', "", page, flags=re.S)
    markup = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "data:", markup)
    urls = re.findall(r"https?://|(?:src|href)\s*=\s*[\"']?//|url\(", markup)
    assert not urls, f"static page refers to another host: {urls[:3]}"
    assert len(page) < 3 * 2**20, f"static page is {len(page) / 2**20:.1f} MB"


@pytest.mark.slow  # a whole build, or every frame: the slow lane
@pytest.mark.parametrize("name", NAMES)
def test_display_offers_the_live_widget_and_the_static_page(name):
    bundle = explorers.CATALOG[name]()._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"]
    assert 'class="lattn-explorer"' in bundle["text/html"]


def test_unknown_control_is_refused():
    with pytest.raises(ValueError, match="unknown"):
        explorers.CATALOG["state_size"]().render(nonsense=3)


def test_state_size_counts_match_the_seed():
    from lattn_edu.explorers.state_size import compute_state_size

    result = compute_state_size(100_000, 128)
    assert result["matrix_entries"] == 10**10 and result["state_entries"] == 16_384
    assert np.isclose(result["ratio"], 10**10 / 16_384)


def rounded(values) -> list:
    """Values rounded to 9 decimals, NaN (a break in a line) as inf, which compares equal."""
    values = np.round(np.asarray(values, float), 9)
    return np.where(np.isnan(values), np.inf, values).tolist()


def content(fig) -> dict:
    """What a figure shows, read from its artists: texts, titles, labels, limits, scales,
    line data, image arrays and patch geometry, axis by axis."""
    axes = []
    for ax in fig.axes:
        axes.append({
            "titles": [ax.get_title(loc) for loc in ("left", "center", "right")],
            "labels": (ax.get_xlabel(), ax.get_ylabel()), "scales": (ax.get_xscale(), ax.get_yscale()),
            "limits": np.round([*ax.get_xlim(), *ax.get_ylim()], 9).tolist(),
            "ticks": (np.round(ax.get_xticks(), 9).tolist(), np.round(ax.get_yticks(), 9).tolist(),
                      [t.get_text() for t in ax.get_xticklabels()], [t.get_text() for t in ax.get_yticklabels()]),
            "texts": sorted((t.get_text(), np.round(t.get_position(), 9).tolist()) for t in ax.texts),
            "lines": [(rounded(line.get_xydata()), line.get_color(),
                       line.get_linestyle()) for line in ax.lines],
            "images": [np.asarray(image.get_array()).round(9).tolist() for image in ax.images],
            "patches": [np.round(patch.get_path().transformed(patch.get_patch_transform()).vertices, 9).tolist()
                        for patch in ax.patches],
            "collections": [np.round(np.asarray(c.get_offsets()), 9).tolist() for c in ax.collections],
            "legend": ([t.get_text() for t in ax.get_legend().get_texts()] if ax.get_legend() else None),
        })
    return {"suptitle": fig.get_suptitle(), "axes": axes}


@pytest.mark.parametrize("name", NAMES)
def test_a_live_update_shows_what_a_fresh_render_shows(name):
    """The live widget draws each setting on one figure in place; after any sequence of moves
    its picture holds the same texts, data and axis limits as a new figure for that setting."""
    explorer = explorers.CATALOG[name]()
    explorer.live_png(**explorer.defaults)
    for control, options in explorer.controls.items():
        for value in (options[-1], options[0], explorer.defaults[control]):
            values = {**explorer.defaults, control: value}
            try:
                explorer.live_png(**values)
            except ImpossibleSetting:
                continue
            live = explorer._live.figure
            fresh = explorer.render(**values)
            fresh.draw_without_rendering()
            assert content(live) == content(fresh), f"{control} = {value}"


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def one_control_moves(explorer) -> list[dict]:
    """Each control to its last and first value and back, one at a time: every decoration the
    moves reach is drawn, left and come back to."""
    return [{**explorer.defaults, control: value} for control, options in explorer.controls.items()
            for value in (options[-1], options[0], explorer.defaults[control])]


@pytest.mark.parametrize("name", NAMES)
def test_a_kept_background_draws_what_a_full_draw_draws(name):
    """Blitting restores the background kept for the decoration and draws only what moves:
    every picture must match, pixel for pixel, the same picture with the decoration drawn anew.
    A decoration that changes with a setting its ``decoration`` does not name would show a
    stale background here."""
    explorer = explorers.CATALOG[name]()
    explorer.live_png(**explorer.defaults)
    live, blitted = explorer._live, 0
    for values in one_control_moves(explorer):
        try:
            kept = live.full_draws
            picture = explorer.live_png(**values)
        except ImpossibleSetting:
            continue
        blitted += live.full_draws == kept
        decoration = explorer.decoration(**explorer.settings(**values))
        assert np.array_equal(pixels(picture), pixels(live.png(decoration, redraw_all=True))), values
    assert blitted > 0, "no move reused a kept background"


@pytest.mark.parametrize("name", NAMES)
def test_a_blitted_picture_looks_like_a_plain_draw(name):
    """Against matplotlib drawing every artist in z-order, blitting may differ only where a
    moving artist crosses a grid line or a text (a shaded band over a grid, say): at most
    0.5 % of the pixels."""
    explorer = explorers.CATALOG[name]()
    for values in one_control_moves(explorer)[:4]:
        try:
            picture = pixels(explorer.live_png(**values))
        except ImpossibleSetting:
            continue
        live = explorer._live
        for artist in live.figure.findobj():  # the moving artists and the spines
            artist.set_animated(False)
        live.canvas.draw()
        plain = np.asarray(live.canvas.buffer_rgba())[..., :3]
        differ = np.abs(picture.astype(int) - plain).max(axis=-1) > 24
        assert differ.mean() < 0.005, f"{values}: {differ.mean():.3%} of the pixels differ"


def test_live_pictures_keep_the_first_layout_and_still_change():
    explorer = explorers.CATALOG["decay"]()
    first = explorer.live_png(**explorer.defaults)
    fig = explorer._live.figure
    positions = [ax.get_position().bounds for ax in fig.axes]
    other = explorer.live_png(**{**explorer.defaults, "gamma": explorer.controls["gamma"][0]})
    assert first[:8] == other[:8] == b"\x89PNG\r\n\x1a\n" and first != other
    assert explorer._live.figure is fig
    assert [ax.get_position().bounds for ax in fig.axes] == positions


def test_every_explorer_module_is_in_the_catalog():
    """Each module of the package that defines an Explorer subclass is found by discovery, and
    its class is importable from lattn_edu.explorers: read from the source files, not from
    discovery itself."""
    import ast
    import pathlib

    package = pathlib.Path(explorers.__file__).parent
    defined = {}
    for path in sorted(package.glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and any(getattr(b, "id", None) == "Explorer" for b in node.bases):
                defined[node.name] = path.stem
    assert len(defined) >= 10, defined
    catalogued = {cls.__name__: cls for cls in explorers.CATALOG.values()}
    assert set(defined) == set(catalogued), set(defined) ^ set(catalogued)
    for class_name, module in defined.items():
        cls = catalogued[class_name]
        assert cls.__module__ == f"lattn_edu.explorers.{module}"
        assert explorers.CATALOG[cls.name] is cls and getattr(explorers, class_name) is cls
        assert class_name in explorers.__all__


def test_discovery_refuses_two_explorers_with_one_name(monkeypatch):
    from lattn_edu.explorers import decay

    class Impostor(explorers.Explorer):
        name = "gates"

    Impostor.__module__ = decay.__name__
    monkeypatch.setattr(decay, "Impostor", Impostor, raising=False)
    with pytest.raises(ValueError, match="'gates' is used by both"):
        explorers.discover_explorers()


def test_a_live_picture_is_computed_with_one_blas_thread(monkeypatch):
    """An explorer's matrices are small: a second BLAS thread gains nothing there, and its
    spinning slows the drawing that follows. The live picture's draw runs with one BLAS
    thread, and afterwards BLAS has as many as before."""
    import scipy.linalg.cython_blas  # noqa: F401  (one_blas_thread limits scipy's BLAS too)
    from threadpoolctl import threadpool_info

    def blas_threads():
        return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]

    explorer, seen = explorers.CATALOG["sharpness"](), []
    draw = explorer.draw

    def recording_draw(fig, **settings):
        seen.append(blas_threads())
        return draw(fig, **settings)

    monkeypatch.setattr(explorer, "draw", recording_draw)
    before = blas_threads()
    assert before, "numpy's BLAS is not visible to threadpoolctl"
    explorer.live_png()
    explorer.live_png(n=32)
    assert seen == [[1] * len(before)] * 2
    assert blas_threads() == before
