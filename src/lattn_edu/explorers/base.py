"""The explorer pattern: one figure built once, moved per setting, shown live and as a static page.

An explorer is a small class that says what to compute and how to draw it:

- ``controls``: {parameter: tuple of values}, the grid a reader can move through;
- ``defaults``: the value of each control when it first appears;
- ``compute(**settings) -> result``: the numbers for one setting (every control given); an
  impossible combination raises :class:`ImpossibleSetting` with a short reason, before
  anything is drawn;
- ``build(fig) -> artists``: the decoration on an empty figure (axes, limits, ticks, titles,
  labels: the same at every setting) and every artist a setting moves, in place but empty;
- ``update(artists, result)``: moves those artists to ``result`` (``set_data``,
  ``set_height``, ``set_text``);
- ``decoration(**settings)`` (optional): the settings that change the decoration (e.g. N when
  the axes' limits follow N); None, the default, says the decoration never changes.

and everything else comes from :class:`Explorer`:

- ``draw(fig, **settings) -> Figure`` and ``render(**values) -> Figure``: a new figure (built,
  then updated), or a figure this explorer built, updated in place; the same values draw the
  same picture either way;
- ``widget()``: core ipywidgets only (sliders, dropdowns, an Image, an HTML note), so it
  runs under ipywidgets 7.7 (Colab) and 8.x. It keeps one figure (``LiveFigure``): the
  decoration is drawn once per ``decoration`` key and kept as pixels, and a control change
  draws only the moving artists over them, with matplotlib's public blitting calls. A move
  must stay under 100 ms at p95 on 2 cores (``benchmarks/explorers.py``), so a
  decoration that stays put, few tick labels and numbers that change in the suptitle or an
  axes text (not in an axes title) are what make an explorer fast;
- ``static_html()``: every grid point drawn ahead of time into one self-contained HTML
  snippet with range inputs and a few lines of inline JavaScript that swap the pictures,
  each with ``describe`` as its alt text and read out by a live region: no kernel, no
  network, no other host;
- ``display(explorer)`` in a notebook offers both: a Jupyter or Colab frontend shows the live
  widget, and the website (built with the widget view switched off) shows the static page.

Only matplotlib's public API is used here and in every explorer (a test checks the source):
any matplotlib release may change a private name, and Colab's matplotlib is not ours to pin.
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import json
import sys
from collections.abc import Hashable
from typing import Any

from matplotlib.artist import Artist
from matplotlib.backends.backend_agg import FigureCanvasAgg
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
    collections, lines, texts by z-order) and legend, then the figure's texts (the suptitle)
    and legends, then every axes' frame (its spines: last, so that images and bars do not
    cover it, as in a full draw, where the frame lies above the data).

    Everything else is decoration: axes backgrounds, ticks, tick labels, axis labels, titles
    and grid. It is most of a full draw's cost, since it is mostly text.
    """
    artists: list[Artist] = []
    for ax in fig.axes:
        data = [*ax.images, *ax.patches, *ax.collections, *ax.lines, *ax.texts]
        artists += sorted(data, key=lambda artist: artist.get_zorder())
        if ax.get_legend() is not None:
            artists.append(ax.get_legend())
    frames = [spine for ax in fig.axes for spine in ax.spines.values()]
    return artists + [*fig.texts, *fig.legends] + frames


class LiveFigure:
    """One figure kept for the live widget, redrawn by blitting.

    The figure is laid out once (constrained layout, then fixed). The first picture of each
    decoration key draws the whole figure with the moving artists left out (``animated``)
    and keeps its pixels (``copy_from_bbox``); every picture restores the kept pixels of its
    key (``restore_region``) and draws the moving artists over them.
    """

    def __init__(self, fig: Figure) -> None:
        fig.set_dpi(LIVE_DPI)
        fig.set_facecolor("white")
        self.canvas = FigureCanvasAgg(fig)
        fig.draw_without_rendering()  # the one constrained-layout pass
        fig.set_layout_engine("none")  # later pictures keep these positions
        self.figure = fig
        self.backgrounds: dict[Hashable, Any] = {}  # one per decoration key: a handful per explorer
        self.full_draws = 0  # how many pictures drew the decoration

    def png(self, decoration: Hashable = None, redraw_all: bool = False) -> bytes:
        """PNG of the figure as it stands now, on the decoration kept for ``decoration``;
        ``redraw_all`` draws the decoration again even when it is kept (tests compare)."""
        fig = self.figure
        moving = moving_artists(fig)
        for artist in moving:
            artist.set_animated(True)  # a full draw leaves them out
        if decoration in self.backgrounds and not redraw_all:
            self.canvas.restore_region(self.backgrounds[decoration])
        else:
            self.canvas.draw()
            self.backgrounds[decoration] = self.canvas.copy_from_bbox(fig.bbox)
            self.full_draws += 1
        for artist in moving:
            fig.draw_artist(artist)
        return rgba_png(self.canvas)


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
    """Base class: subclasses set ``name``, ``title``, ``controls``, ``defaults``, ``labels``,
    ``figsize`` (and ``layout`` "none" to place their axes themselves) and define ``compute``,
    ``build`` and ``update`` (and ``decoration`` where the decoration follows a setting)."""

    name: str = ""
    title: str = ""
    controls: dict[str, tuple] = {}
    defaults: dict[str, Any] = {}
    labels: dict[str, str] = {}
    figsize: tuple[float, float] = (10, 4.2)
    layout: str = "constrained"

    def __init__(self) -> None:
        self._live: LiveFigure | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} explorer: {self.title}>"

    def compute(self, **settings: Any) -> Any:
        """The numbers for ``settings`` (every control given); ``ImpossibleSetting`` if none."""
        raise NotImplementedError

    def build(self, fig: Figure) -> Any:
        """Draw the decoration on the empty ``fig`` and return the artists ``update`` moves."""
        raise NotImplementedError

    def update(self, artists: Any, result: Any) -> None:
        """Move ``artists`` (what ``build`` returned) to ``result`` (what ``compute`` returned)."""
        raise NotImplementedError

    def decoration(self, **settings: Any) -> Hashable:
        """What of ``settings`` changes the decoration: the live widget keeps one decoration per
        value. None: the decoration is the same at every setting."""
        return None

    def plot(self, result: Any, fig: Figure | None = None) -> Figure:
        """``result`` on a new figure (``fig`` None), or on ``fig``, a figure this explorer built.

        The figure carries what ``build`` made, with the explorer that made it, so that both
        live exactly as long as the figure does.
        """
        if fig is None:
            fig = Figure(figsize=self.figsize, layout=self.layout)
            fig.lattn_explorer = (self, self.build(fig))
        owner, artists = getattr(fig, "lattn_explorer", (None, None))
        if owner is not self:
            raise ValueError(f"fig must be None or a figure this {self.name} explorer drew; got {fig!r}")
        self.update(artists, result)
        return fig

    def draw(self, fig: Figure | None, **settings: Any) -> Figure:
        """The picture for ``settings`` (every control given), on a new figure when ``fig`` is
        None, else on ``fig`` again (a figure this explorer drew before)."""
        return self.plot(self.compute(**settings), fig)

    def render(self, **values: Any) -> Figure:
        """A new figure for ``values`` (defaults for the controls not given)."""
        return self.draw(None, **self.settings(**values))

    def live_png(self, **values: Any) -> bytes:
        """PNG of the picture for ``values`` for the live widget, at LIVE_DPI: the first call
        builds the figure and keeps it (``LiveFigure``), later calls update it in place."""
        settings = self.settings(**values)
        with one_blas_thread():  # small matrices: a second BLAS thread would only spin
            if self._live is None:
                self._live = LiveFigure(self.draw(None, **settings))
            else:
                self.draw(self._live.figure, **settings)
            return self._live.png(self.decoration(**settings))

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
