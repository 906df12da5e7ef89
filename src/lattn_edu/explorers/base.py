"""The explorer pattern: a pure ``render`` turned into a live widget and a static page.

An explorer is a small class with

- ``controls``: {parameter: tuple of values}, the grid a reader can move through;
- ``defaults``: the value of each control when it first appears;
- ``render(**values) -> Figure``: pure; the same values draw the same picture, and an
  impossible combination raises :class:`ImpossibleSetting` with a short reason;

and everything else comes from :class:`Explorer`:

- ``widget()``: core ipywidgets only (sliders, dropdowns, an Image, an HTML note), so it
  runs under ipywidgets 7.7 (Colab) and 8.x; each control change calls ``render`` again;
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
import sys
from typing import Any

from matplotlib.figure import Figure

STATIC_DPI = 72  # frames of the static page: sharp enough to read, small enough to ship
LIVE_DPI = 90  # the live widget's picture


class ImpossibleSetting(ValueError):
    """A combination of control values that cannot be drawn (e.g. m larger than allowed)."""


def figure_png(fig: Figure, dpi: int = STATIC_DPI) -> bytes:
    """The figure as PNG bytes. Explorers draw on bare ``Figure`` objects, never pyplot, so
    nothing piles up in pyplot's figure list and no GUI backend is involved."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, facecolor="white")
    return buffer.getvalue()


def message_figure(text: str) -> Figure:
    """A small figure that says why nothing else can be drawn."""
    fig = Figure(figsize=(6, 1.2))
    fig.text(0.5, 0.5, text, ha="center", va="center", wrap=True, fontsize=11, color="#8a1c1c")
    return fig


class Explorer:
    """Base class: subclasses set ``name``, ``title``, ``controls``, ``defaults`` and ``render``."""

    name: str = ""
    title: str = ""
    controls: dict[str, tuple] = {}
    defaults: dict[str, Any] = {}
    labels: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} explorer: {self.title}>"

    def render(self, **values: Any) -> Figure:
        raise NotImplementedError

    def live_png(self, **values: Any) -> bytes:
        """PNG of ``render(**values)`` for the live widget, at LIVE_DPI.

        Constrained layout costs a quarter of a redraw, and a control change rarely moves the
        axes: the first picture is laid out properly, later ones with the same axes reuse
        its positions and skip the layout pass.
        """
        fig = self.render(**values)
        positions = getattr(self, "_live_positions", None)
        if positions is not None and len(positions) == len(fig.axes):
            fig.set_layout_engine("none")
            for ax, position in zip(fig.axes, positions):
                ax.set_position(position)
        png = figure_png(fig, dpi=LIVE_DPI)
        if positions is None:
            self._live_positions = [ax.get_position() for ax in fig.axes]  # laid out by the save
        return png

    def settings(self, **values: Any) -> dict[str, Any]:
        """The defaults updated with ``values``; unknown names get a ``ValueError``."""
        unknown = set(values) - set(self.controls)
        if unknown:
            raise ValueError(f"{self.name} explorer has controls {sorted(self.controls)}; "
                             f"got unknown {sorted(unknown)}")
        return {**self.defaults, **values}

    def frames(self) -> dict[str, bytes]:
        """PNG bytes for every grid point, keyed by the control indices joined with '-'."""
        names = list(self.controls)
        frames = {}
        for indices in itertools.product(*(range(len(self.controls[n])) for n in names)):
            values = {n: self.controls[n][i] for n, i in zip(names, indices)}
            try:
                fig = self.render(**values)
            except ImpossibleSetting as reason:
                fig = message_figure(str(reason))
            frames["-".join(map(str, indices))] = figure_png(fig)
        return frames

    def static_html(self) -> str:
        """Self-contained HTML: all frames as data URIs, a range input per control, inline JS."""
        names = list(self.controls)
        uid = f"lattn-{self.name}-{id(self):x}"
        frames = {key: base64.b64encode(png).decode("ascii") for key, png in self.frames().items()}
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
        options_js = json.dumps([[str(v) for v in self.controls[n]] for n in names])
        return f"""<div class="lattn-explorer" id="{uid}" data-explorer="{self.name}">
<div style="font-weight:600;margin-bottom:.3em">{html.escape(self.title)}</div>
{''.join(rows)}
<img alt="{html.escape(self.title)}" style="max-width:100%;background:white"
     src="data:image/png;base64,{frames[first]}">
<script type="application/json" class="lattn-frames">{json.dumps(frames)}</script>
<script>
(function () {{
  var root = document.getElementById("{uid}");
  var frames = JSON.parse(root.querySelector(".lattn-frames").textContent);
  var options = {options_js};
  var inputs = root.querySelectorAll("input[data-control]");
  function show() {{
    var key = Array.prototype.map.call(inputs, function (input) {{ return input.value; }}).join("-");
    root.querySelector("img").src = "data:image/png;base64," + frames[key];
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
                note.value = f'<span style="color:#8a1c1c">{html.escape(str(reason))}</span>'

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
