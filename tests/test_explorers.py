"""Every explorer: pure renders that differ across the grid, a live widget whose controls
re-render, a static page with working frames and no other host, and a clear bad-setting path."""

from __future__ import annotations

import hashlib
import itertools
import re

import numpy as np
import pytest

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
def test_widget_controls_call_render_again(name, monkeypatch):
    import ipywidgets as widgets

    explorer = explorers.CATALOG[name]()
    calls = []
    original = explorer.render
    monkeypatch.setattr(explorer, "render", lambda **v: calls.append(v) or original(**v))
    box = explorer.widget()
    image = next(c for c in box.children if isinstance(c, widgets.Image))
    controls = [c for c in box.children if isinstance(c, (widgets.SelectionSlider, widgets.Dropdown))]
    assert len(controls) == len(explorer.controls) and len(calls) == 1
    for control in controls:
        before = len(calls)
        option = [o for o in control.options if o != control.value][-1]
        control.value = option[1] if isinstance(option, tuple) else option
        assert len(calls) == before + 1, f"{control.description} did not re-render"
    assert image.value[:8] == b"\x89PNG\r\n\x1a\n"


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


def test_live_pictures_reuse_the_first_layout_and_still_change():
    explorer = explorers.CATALOG["decay"]()
    first = explorer.live_png(**explorer.defaults)
    positions = [p.bounds for p in explorer._live_positions]
    other = explorer.live_png(**{**explorer.defaults, "gamma": explorer.controls["gamma"][0]})
    assert first[:8] == other[:8] == b"\x89PNG\r\n\x1a\n" and first != other
    assert [p.bounds for p in explorer._live_positions] == positions
