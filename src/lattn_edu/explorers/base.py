"""The explorer pattern: one ``draw`` turned into a live widget and a static page.

An explorer is a small class with

- ``controls``: {parameter: tuple of values}, the grid a reader can move through;
- ``defaults``: the value of each control when it first appears;
- ``draw(fig, **settings) -> Figure``: draws the settings on a new figure (``fig`` None) or
  again on a figure it drew before, keeping its axes and their layout; an impossible
  combination raises :class:`ImpossibleSetting` with a short reason before anything changes;

and everything else comes from :class:`Explorer`:

- ``render(**values) -> Figure``: pure; a new figure, the same values draw the same picture;
- ``widget()``: core ipywidgets only (sliders, dropdowns, an Image, an HTML note), so it
  runs under ipywidgets 7.7 (Colab) and 8.x; each control change draws the new settings on
  the live figure in place and blits them onto a kept background (``live_png``,
  ``LiveCanvas``), so that a move costs little more than what moved
  (``benchmarks/explorers.py`` measures it);
- ``static_html()``: every grid point drawn ahead of time into one self-contained HTML
  snippet with range inputs and a few lines of inline JavaScript that swap the pictures:
  no kernel, no network, no other host;
- ``display(explorer)`` in a notebook offers both: a Jupyter or Colab frontend shows the live
  widget, and the website (built with the widget view switched off) shows the static page.
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import json
import math
import sys
from collections import OrderedDict
from typing import Any

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg, get_hinting_flag
from matplotlib.font_manager import FontProperties
from matplotlib.figure import Figure
from PIL import Image

from .._blas import one_blas_thread
from ..style import PALETTE

STATIC_DPI = 72  # frames of the static page: sharp enough to read, small enough to ship
LIVE_DPI = 72  # the live widget's picture: the static frames' size, and a third fewer pixels to draw and encode than at 90


class ImpossibleSetting(ValueError):
    """A combination of control values that cannot be drawn (e.g. m larger than allowed)."""


def figure_png(fig: Figure, dpi: int = STATIC_DPI) -> bytes:
    """The figure as PNG bytes. Explorers draw on bare ``Figure`` objects, never pyplot, so
    nothing piles up in pyplot's figure list and no GUI backend is involved."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, facecolor="white")
    return buffer.getvalue()


def rgba_png(canvas: FigureCanvasAgg) -> bytes:
    """The canvas's current pixels as PNG with light compression: zlib's default level costs
    several times the encoding time of level 1 for a few per cent fewer bytes."""
    buffer = io.BytesIO()
    Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba(), "raw", "RGBA", 0, 1
                     ).convert("RGB").save(buffer, format="png", compress_level=1)
    return buffer.getvalue()


def moving_artists(fig: Figure) -> list[Artist]:
    """What a new setting redraws, in drawing order: every axes' data (images, patches,
    collections, lines, texts by z-order) and legend, then the figure's texts (the suptitle).

    Everything else is decoration: axes frames, ticks, tick labels, axis labels, titles and
    grid. It is most of a full draw's cost, since it is mostly text, so an explorer keeps it
    the same from one setting to the next where it can: numbers that change with the
    settings belong in the suptitle or in a text on the axes, not in an axes title.
    """
    artists: list[Artist] = []
    for ax in fig.axes:
        data = [*ax.images, *ax.patches, *ax.collections, *ax.lines, *ax.texts]
        artists += sorted(data, key=lambda artist: artist.get_zorder())
        if ax.legend_ is not None:
            artists.append(ax.legend_)
    return artists + [*fig.texts, *fig.legends]


def decoration_key(fig: Figure) -> str:
    """A fingerprint of the decoration: equal keys draw the same background pixels.

    Per axes: its box, limits, scales, aspect, titles, axis labels, every tick position and
    tick label, tick and grid settings and which spines show.
    """
    parts: list[Any] = [tuple(fig.get_size_inches()), fig.dpi]
    for ax in fig.axes:
        parts.append((ax.get_position().bounds, ax.get_xlim(), ax.get_ylim(), ax.get_xscale(),
                      ax.get_yscale(), ax.get_aspect(), ax.axison, ax.get_xlabel(), ax.get_ylabel(),
                      [(title.get_text(), title.get_fontsize(), title.get_color())
                       for title in (ax.title, ax._left_title, ax._right_title)],
                      ax.get_facecolor(), [s.get_visible() for s in ax.spines.values()]))
        for axis in (ax.xaxis, ax.yaxis):
            for ticker in (axis.major, axis.minor):
                locations = [float(x) for x in ticker.locator()]
                parts.append((locations, ticker.formatter.format_ticks(locations)))
            parts.append((sorted(axis._major_tick_kw.items()), sorted(axis._minor_tick_kw.items()),
                          axis.get_label_position(), axis.get_ticks_position()))
    return repr(parts)


def _font_key(prop: FontProperties) -> tuple:
    """What of a font's properties decides its glyphs (FontProperties' own hash inputs)."""
    return (tuple(prop.get_family()), prop.get_slant(), prop.get_variant(), prop.get_weight(),
            prop.get_stretch(), prop.get_size_in_points(), prop.get_file())


def keep_text_bitmaps(renderer: RendererAgg, limit: int = 2048) -> None:
    """Let ``renderer`` keep each string's rasterised glyphs and blend them in again later.

    Agg draws a text line in two steps: FreeType rasterises the string into a bitmap that
    depends only on the string, font, size, dpi and antialiasing; then the bitmap is blended
    in at a whole-pixel position. Text is most of what a live picture draws, and most strings
    (cell numbers, labels) come back from one picture to the next, so the first step is
    kept for the last ``limit`` strings. Same pixels (tests compare); mathtext is left alone.
    """
    rasterise_and_draw = renderer.draw_text
    bitmaps: OrderedDict[tuple, tuple] = OrderedDict()

    def draw_text(gc: Any, x: float, y: float, s: str, prop: FontProperties, angle: float,
                  ismath: Any = False, mtext: Any = None) -> None:
        if ismath:
            return rasterise_and_draw(gc, x, y, s, prop, angle, ismath, mtext)
        key = (s, _font_key(prop), renderer.dpi, gc.get_antialiased())
        if key in bitmaps:
            bitmaps.move_to_end(key)
        else:  # as RendererAgg.draw_text does, keeping the bitmap and its offsets
            font = renderer._prepare_font(prop)
            font.set_text(s, 0, flags=get_hinting_flag())
            font.draw_glyphs_to_bitmap(antialiased=gc.get_antialiased())
            x_offset, y_offset = font.get_bitmap_offset()
            bitmaps[key] = (np.array(font), x_offset / 64, y_offset / 64, font.get_descent() / 64)
            if len(bitmaps) > limit:
                bitmaps.popitem(last=False)
        bitmap, x_offset, y_offset, descent = bitmaps[key]
        x = round(x + x_offset + descent * math.sin(math.radians(angle)))
        y = round(y + y_offset + descent * math.cos(math.radians(angle)))
        renderer._renderer.draw_text_image(bitmap, x, y + 1, angle, gc)

    renderer.draw_text = draw_text


class LiveCanvas:
    """One figure kept for the live widget, redrawn by blitting.

    A picture whose decoration (``decoration_key``) has not been drawn yet is a full draw
    with the moving artists and the spines left out; its pixels are kept as the background
    for that key (the last BACKGROUNDS of them). A picture whose decoration has been drawn
    restores that background. Either way the moving artists are drawn over it, then the
    spines, once: last, so that images and bars do not cover the axes' frame, as in a full
    draw (where they lie above data lines and below texts).
    """

    BACKGROUNDS = 16  # about 0.9 MB each at LIVE_DPI

    def __init__(self, fig: Figure) -> None:
        fig.set_dpi(LIVE_DPI)
        fig.set_facecolor("white")
        self.canvas = FigureCanvasAgg(fig)
        keep_text_bitmaps(self.canvas.get_renderer())  # the figure's size is fixed: one renderer
        fig.draw_without_rendering()  # the one constrained-layout pass
        fig.set_layout_engine("none")  # later pictures keep these positions
        self.figure = fig
        self.backgrounds: OrderedDict[str, Any] = OrderedDict()
        self.full_draws = 0  # how many pictures needed the whole figure drawn

    def png(self, redraw_all: bool = False) -> bytes:
        """PNG of the figure as it stands now; ``redraw_all`` draws the decoration again even
        when its background is kept (tests compare the two paths)."""
        fig = self.figure
        moving = moving_artists(fig)
        frames = [spine for ax in fig.axes for spine in ax.spines.values()]
        for artist in moving + frames:
            artist.set_animated(True)  # a full draw leaves them out
        key = decoration_key(fig)
        if key in self.backgrounds and not redraw_all:
            self.backgrounds.move_to_end(key)
            self.canvas.restore_region(self.backgrounds[key])
        else:
            self.canvas.draw()
            self.backgrounds[key] = self.canvas.copy_from_bbox(fig.bbox)
            if len(self.backgrounds) > self.BACKGROUNDS:
                self.backgrounds.popitem(last=False)
            self.full_draws += 1
        renderer = self.canvas.get_renderer()
        for artist in moving + frames:
            artist.draw(renderer)
        return rgba_png(self.canvas)


def figure_axes(fig: Figure | None, figsize: tuple[float, float], columns: int = 1,
                width_ratios: list[float] | None = None) -> tuple[Figure, list[Axes]]:
    """A new figure with ``columns`` axes in a row, or ``fig``'s axes emptied for drawing again.

    Emptying removes what was drawn (lines, texts, images, patches, collections, the legend)
    but keeps the axes, their positions and the figure: building those is most of a new
    figure's cost. Data limits are forgotten, so autoscaled axes fit the new data.
    """
    if fig is None:
        fig = Figure(figsize=figsize, layout="constrained")
        axes = fig.subplots(1, columns, width_ratios=width_ratios, squeeze=False)[0]
        return fig, list(axes)
    for ax in fig.axes:
        for artist in [*ax.lines, *ax.texts, *ax.images, *ax.patches, *ax.collections]:
            artist.remove()
        if ax.legend_ is not None:
            ax.legend_.remove()
        ax.ignore_existing_data_limits = True
        ax.set_autoscale_on(True)
    return fig, list(fig.axes)


def _json_for_script(value: Any) -> str:
    """``value`` as JSON that cannot end the <script> element holding it (a "</" in a string)."""
    return json.dumps(value).replace("</", "<\\/")


def message_figure(text: str) -> Figure:
    """A small figure that says why nothing else can be drawn."""
    fig = Figure(figsize=(6, 1.2))
    fig.text(0.5, 0.5, text, ha="center", va="center", wrap=True, fontsize=11,
             color=PALETTE["vermillion"])
    return fig


class Explorer:
    """Base class: subclasses set ``name``, ``title``, ``controls``, ``defaults`` and ``draw``."""

    name: str = ""
    title: str = ""
    controls: dict[str, tuple] = {}
    defaults: dict[str, Any] = {}
    labels: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} explorer: {self.title}>"

    def draw(self, fig: Figure | None, **settings: Any) -> Figure:
        """The picture for ``settings`` (every control given), on a new figure when ``fig`` is
        None, else on ``fig``'s axes again (a figure this method drew before)."""
        raise NotImplementedError

    def render(self, **values: Any) -> Figure:
        """A new figure for ``values`` (defaults for the controls not given)."""
        return self.draw(None, **self.settings(**values))

    def live_png(self, **values: Any) -> bytes:
        """PNG of the picture for ``values`` for the live widget, at LIVE_DPI.

        The first call builds the figure, lays it out once and keeps it (``LiveCanvas``); later
        calls draw on the same axes in place, and where the axes' decoration is unchanged only
        what moved is drawn again. A new figure, its axes and constrained layout would be most
        of a redraw, and tick labels and axis labels most of the rest.
        """
        settings = self.settings(**values)
        live = getattr(self, "_live", None)
        with one_blas_thread():
            if live is None:
                self._live = live = LiveCanvas(self.draw(None, **settings))
            else:
                self.draw(live.figure, **settings)
        return live.png()

    def settings(self, **values: Any) -> dict[str, Any]:
        """The defaults updated with ``values``; unknown names get a ``ValueError``."""
        unknown = set(values) - set(self.controls)
        if unknown:
            raise ValueError(f"{self.name} explorer has controls {sorted(self.controls)}; "
                             f"got unknown {sorted(unknown)}")
        return {**self.defaults, **values}

    def frames(self) -> dict[str, bytes]:
        """PNG bytes for every grid point, keyed by the control indices joined with '-'."""
        return {key: png for key, (png, _) in self._drawn_grid().items()}

    def describe(self, reason: str | None = None, **settings: Any) -> str:
        """In words, the picture for ``settings`` (every control given): the explorer's title
        and each control's value, or why the setting cannot be drawn (``reason``). The static
        page uses it as the picture's alt text and reads it out when a control moves."""
        values = "; ".join(f"{self.labels.get(n, n)}: {settings[n]}" for n in self.controls)
        said = f"{self.title}, {values}."
        return f"{said} Not drawn: {reason}" if reason else said

    def _drawn_grid(self) -> dict[str, tuple[bytes, str]]:
        """(PNG bytes, description) for every grid point, keyed like ``frames``."""
        names = list(self.controls)
        drawn = {}
        for indices in itertools.product(*(range(len(self.controls[n])) for n in names)):
            values = {n: self.controls[n][i] for n, i in zip(names, indices)}
            reason = None
            try:
                fig = self.render(**values)
            except ImpossibleSetting as impossible:
                reason = str(impossible)
                fig = message_figure(reason)
            drawn["-".join(map(str, indices))] = (figure_png(fig), self.describe(reason, **self.settings(**values)))
        return drawn

    def static_html(self) -> str:
        """Self-contained HTML: all frames as data URIs, a range input per control, inline JS."""
        names = list(self.controls)
        uid = f"lattn-{self.name}-{id(self):x}"
        drawn = self._drawn_grid()
        frames = {key: base64.b64encode(png).decode("ascii") for key, (png, _) in drawn.items()}
        descriptions = {key: said for key, (_, said) in drawn.items()}
        start = [self.controls[n].index(self.defaults[n]) for n in names]
        rows = []
        for position, n in enumerate(names):
            options = [str(v) for v in self.controls[n]]
            rows.append(
                f'<label style="display:flex;gap:.6em;align-items:center;margin:.2em 0">'
                f'<span style="min-width:9em">{html.escape(self.labels.get(n, n))}</span>'
                f'<input type="range" min="0" max="{len(options) - 1}" step="1" value="{start[position]}" '
                f'data-control="{position}" aria-label="{html.escape(self.labels.get(n, n))}">'
                f'<output data-output="{position}">{html.escape(options[start[position]])}</output>'
                f'</label>')
        first = "-".join(map(str, start))
        options_js = [[str(v) for v in self.controls[n]] for n in names]
        # The picture's description is its alt text, and a polite live region repeats it when
        # a control moves, so that a screen reader says what the new picture shows.
        return f"""<div class="lattn-explorer" id="{uid}" data-explorer="{self.name}">
<div style="font-weight:600;margin-bottom:.3em">{html.escape(self.title)}</div>
{''.join(rows)}
<img alt="{html.escape(descriptions[first])}" style="max-width:100%;background:white"
     src="data:image/png;base64,{frames[first]}">
<p class="lattn-explorer-said" aria-live="polite" style="position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap;margin:0"></p>
<script type="application/json" class="lattn-frames">{json.dumps(frames)}</script>
<script type="application/json" class="lattn-descriptions">{_json_for_script(descriptions)}</script>
<script>
(function () {{
  var root = document.getElementById("{uid}");
  var frames = JSON.parse(root.querySelector(".lattn-frames").textContent);
  var descriptions = JSON.parse(root.querySelector(".lattn-descriptions").textContent);
  var options = {_json_for_script(options_js)};
  var inputs = root.querySelectorAll("input[data-control]");
  function show() {{
    var key = Array.prototype.map.call(inputs, function (input) {{ return input.value; }}).join("-");
    var image = root.querySelector("img");
    image.src = "data:image/png;base64," + frames[key];
    image.alt = descriptions[key];
    root.querySelector(".lattn-explorer-said").textContent = descriptions[key];
    inputs.forEach(function (input, i) {{
      root.querySelector('output[data-output="' + i + '"]').textContent = options[i][input.value];
    }});
  }}
  inputs.forEach(function (input) {{ input.addEventListener("input", show); }});
}})();
</script>
</div>"""

    def widget(self) -> Any:
        """A live widget: one slider or dropdown per control, the picture, and a note line."""
        import ipywidgets as widgets

        image = widgets.Image(format="png")
        note = widgets.HTML()
        inputs = {}
        for n, options in self.controls.items():
            description = self.labels.get(n, n)
            if all(isinstance(o, (int, float)) and not isinstance(o, bool) for o in options):
                control = widgets.SelectionSlider(options=list(options), value=self.defaults[n],
                                                  description=description, continuous_update=False,
                                                  style={"description_width": "initial"})
            else:
                control = widgets.Dropdown(options=list(options), value=self.defaults[n],
                                           description=description,
                                           style={"description_width": "initial"})
            inputs[n] = control

        def redraw(_change: Any = None) -> None:
            values = {n: control.value for n, control in inputs.items()}
            try:
                image.value = self.live_png(**values)
                note.value = ""
            except ImpossibleSetting as reason:
                note.value = f'<span style="color:{PALETTE["vermillion"]}">{html.escape(str(reason))}</span>'

        for control in inputs.values():
            control.observe(redraw, names="value")
        redraw()
        box = widgets.VBox([widgets.HTML(f"<b>{html.escape(self.title)}</b>"), *inputs.values(),
                            note, image])
        box.redraw = redraw  # lets tests and readers force a redraw
        return box

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """Live widget for a kernel frontend, static HTML for the website; Colab gets the live one only."""
        bundle: dict[str, Any] = {"text/plain": repr(self)}
        if "google.colab" not in sys.modules:  # Colab never shows the static page: skip drawing it
            bundle["text/html"] = self.static_html()
        try:
            live = self.widget()
        except ImportError:  # no ipywidgets: the static page alone still works
            return bundle
        bundle["application/vnd.jupyter.widget-view+json"] = {
            "version_major": 2, "version_minor": 0, "model_id": live.model_id}
        return bundle
