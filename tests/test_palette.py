"""Every plot draws its colours from Okabe & Ito's palette (lattn_edu.style.PALETTE), whose
colours stay apart under the common colour-vision deficiencies, or from greys.

- Explorers: each one's picture at its defaults and with every control at its last value is
  drawn under matplotlib's own defaults (so an explorer cannot lean on a chapter's style),
  and the colour of every line, marker, patch, collection and text is read back from the
  figure. Colour maps must be among the colour-blind-safe ones (viridis and kin, or a
  diverging blue-red).
- Chapters and the package's plotting code (recall and bench plots): every colour written in
  the code (color=, c=, colors=, facecolor=, ...; a format string's colour letter) and every
  colour map named is checked the same way, and each chapter that draws calls
  ``use_book_style()``, which puts the palette in matplotlib's colour cycle.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import jupytext
import matplotlib
import matplotlib.colors as mcolors
import pytest
from matplotlib.collections import Collection
from matplotlib.image import AxesImage
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.text import Text

from lattn_edu import explorers
from lattn_edu.style import PALETTE
from lattn_edu.explorers.base import ImpossibleSetting

ROOT = Path(__file__).resolve().parent.parent
OKABE_ITO = {mcolors.to_hex(c) for c in PALETTE.values()}
# sequential maps that read in order for every common colour vision, and diverging blue-red
SAFE_COLOUR_MAPS = {"viridis", "cividis", "magma", "inferno", "plasma", "Greys", "gray", "binary",
                    "Blues", "Greens", "RdBu", "RdBu_r", "PuOr", "PuOr_r"}
COLOUR_KEYWORDS = {"color", "colour", "c", "colors", "facecolor", "edgecolor", "facecolors",
                   "edgecolors", "mfc", "mec", "markerfacecolor", "markeredgecolor", "ecolor"}
PLOT_METHODS = {"plot", "loglog", "semilogx", "semilogy", "errorbar", "step"}
PLOTTING_MODULES = [ROOT / "src" / "lattn_edu" / "recall" / "plots.py",
                    ROOT / "src" / "lattn_edu" / "bench" / "plots.py",
                    *sorted((ROOT / "src" / "lattn_edu" / "explorers").glob("*.py"))]
CHAPTERS = sorted((ROOT / "book" / "myst").glob("*.md"))  # MyST notebooks


def allowed_colour(colour) -> bool:
    """An Okabe–Ito colour (any transparency), a grey (black and white included), or none."""
    if isinstance(colour, str) and colour.lower() == "none":
        return True
    r, g, b, a = mcolors.to_rgba(colour)
    if a == 0:
        return True
    grey = max(r, g, b) - min(r, g, b) < 0.02
    return grey or mcolors.to_hex((r, g, b)) in OKABE_ITO


def figure_colours(fig) -> tuple[set[str], set[str]]:
    """(every colour the figure's artists draw with, as hex, the names of their colour maps)."""
    colours, maps = [], set()
    for artist in fig.findobj():
        if not artist.get_visible():
            continue
        if isinstance(artist, Line2D):
            colours += [artist.get_color(), artist.get_markerfacecolor(), artist.get_markeredgecolor()]
        elif isinstance(artist, Patch) and artist not in (fig.patch, *[ax.patch for ax in fig.axes]):
            colours += [artist.get_facecolor(), artist.get_edgecolor()]
        elif isinstance(artist, (AxesImage, Collection)) and artist.get_array() is not None:
            maps.add(artist.get_cmap().name)
        elif isinstance(artist, Collection):
            colours += list(artist.get_facecolors()) + list(artist.get_edgecolors())
        elif isinstance(artist, Text) and artist.get_text():
            colours.append(artist.get_color())
    return {mcolors.to_hex(c, keep_alpha=True) for c in colours
            if not (isinstance(c, str) and c.lower() == "none") and mcolors.to_rgba(c)[3] > 0}, maps


def explorer_settings(explorer) -> list[dict]:
    """The defaults, and every control at its last value."""
    return [dict(explorer.defaults), {n: values[-1] for n, values in explorer.controls.items()}]


def test_the_check_refuses_matplotlib_default_colours():
    assert not allowed_colour("tab:blue") and not allowed_colour("red")
    assert allowed_colour(PALETTE["blue"]) and allowed_colour((0.6, 0.6, 0.6)) and allowed_colour("k")
    # matplotlib's own default cycle (tab:blue first), whatever style another test set
    with matplotlib.rc_context({"axes.prop_cycle": matplotlib.rcParamsDefault["axes.prop_cycle"]}):
        fig = matplotlib.figure.Figure()
        fig.add_subplot().plot([0, 1], [1, 0])
    colours, _ = figure_colours(fig)
    assert not all(allowed_colour(c) for c in colours)


@pytest.mark.parametrize("name", sorted(explorers.CATALOG))
def test_every_explorer_draws_with_the_palette(name):
    explorer = explorers.CATALOG[name]()
    with matplotlib.rc_context(matplotlib.rcParamsDefault):
        for settings in explorer_settings(explorer):
            try:
                fig = explorer.render(**settings)
            except ImpossibleSetting:
                continue
            colours, maps = figure_colours(fig)
            wrong = sorted(c for c in colours if not allowed_colour(c))
            assert not wrong, f"{name} at {settings}: colours outside the palette {wrong}"
            assert maps <= SAFE_COLOUR_MAPS, f"{name} at {settings}: colour maps {maps - SAFE_COLOUR_MAPS}"


def written_colours(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, colour or map) for every colour literal in the code that the palette refuses."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            value = keyword.value
            if keyword.arg == "cmap" and isinstance(value, ast.Constant):
                if value.value not in SAFE_COLOUR_MAPS:
                    found.append((node.lineno, f"cmap={value.value!r}"))
            elif keyword.arg in COLOUR_KEYWORDS:
                literals = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
                found += [(node.lineno, f"{keyword.arg}={item.value!r}") for item in literals
                          if isinstance(item, ast.Constant) and isinstance(item.value, str)
                          and not allowed_colour(item.value)]
        name = node.func.attr if isinstance(node.func, ast.Attribute) else None
        if name in PLOT_METHODS:
            for argument in node.args:  # a format string such as "r--": its colour letter
                if (isinstance(argument, ast.Constant) and isinstance(argument.value, str)
                        and len(argument.value) <= 4 and any(ch in "bgrcmy" for ch in argument.value)):
                    found.append((node.lineno, f"format {argument.value!r}"))
    return found


def chapter_code(path: Path) -> str:
    cells = jupytext.read(path, fmt="md:myst").cells
    return "\n".join(line for cell in cells if cell.cell_type == "code"
                     for line in cell.source.splitlines()
                     if not line.lstrip().startswith(("%", "!")))


def test_the_code_check_finds_written_colours():
    tree = ast.parse('ax.plot(x, y, "r--")\nax.bar(x, y, color="tab:orange")\n'
                     'ax.imshow(w, cmap="jet")\nax.plot(x, y, ":", color=PALETTE["blue"])\n'
                     'ax.axhline(0, color="0.6")\nax.plot(x, y, "o", c=["k", "#E69F00"])\n')
    assert sorted(what for _, what in written_colours(tree)) == ["cmap='jet'", "color='tab:orange'", "format 'r--'"]


@pytest.mark.parametrize("path", PLOTTING_MODULES + CHAPTERS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_code_writes_only_palette_colours(path):
    source = chapter_code(path) if path.suffix == ".md" else path.read_text(encoding="utf-8")
    found = written_colours(ast.parse(source))
    assert not found, f"{path.relative_to(ROOT)}: " + ", ".join(f"line {n}: {what}" for n, what in found)
    draws = any(word in source for word in ("plt.subplots", "plt.figure", ".add_subplot", "explorers.CATALOG"))
    if path.suffix == ".md" and draws:
        assert "use_book_style()" in source, f"{path.name} draws without use_book_style()"
