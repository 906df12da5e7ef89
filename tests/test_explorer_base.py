"""The Explorer base class owns drawing: a subclass gives compute, build and update, and the
base builds each figure once, moves its artists per setting, keeps the live figure's
decoration as pixels, and draws the static page from the same class. No source file of the
package touches a private matplotlib name."""

from __future__ import annotations

import ast
import gc
import json
import pathlib
import re
import weakref

import pytest
from matplotlib.artist import Artist
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.figure import Figure

from lattn_edu.explorers.base import Explorer, ImpossibleSetting

SOURCE = pathlib.Path(__file__).resolve().parent.parent / "src" / "lattn_edu"


class Ramp(Explorer):
    """A toy explorer: a line up to a, on axes whose y limit follows ``tall``; a = 4 is impossible."""

    title = "ramp"
    controls = {"a": (1, 2, 3, 4), "tall": (False, True)}
    defaults = {"a": 2, "tall": False}
    figsize = (3, 2)

    def __init__(self) -> None:
        super().__init__()
        self.builds = 0

    def compute(self, a: int, tall: bool) -> dict:
        if a == 4:
            raise ImpossibleSetting("a = 4 is out of reach")
        return {"a": a, "tall": tall}

    def decoration(self, a: int, tall: bool) -> bool:
        return tall

    def build(self, fig: Figure) -> dict:
        self.builds += 1
        ax = fig.subplots()
        ax.set(xlim=(0, 1), title="a line up to a")
        return {"ax": ax, "line": ax.plot([], [])[0], "title": fig.suptitle("")}

    def update(self, artists: dict, result: dict) -> None:
        artists["ax"].set_ylim(0, 10 if result["tall"] else 4)
        artists["line"].set_data([0, 1], [0, result["a"]])
        artists["title"].set_text(f"a = {result['a']}")


def test_each_new_figure_is_built_once_and_then_moved_in_place():
    ramp = Ramp()
    first, second = ramp.render(a=1), ramp.render(a=1)
    assert first is not second and ramp.builds == 2
    line = first.axes[0].lines[0]
    assert ramp.draw(first, a=3, tall=True) is first and ramp.builds == 2
    assert list(first.axes[0].lines) == [line] and list(line.get_ydata()) == [0, 3]
    assert first.get_suptitle() == "a = 3" and first.axes[0].get_ylim() == (0, 10)


def test_an_impossible_setting_changes_nothing_and_a_foreign_figure_is_refused():
    ramp = Ramp()
    fig = ramp.render(a=2)
    with pytest.raises(ImpossibleSetting, match="out of reach"):
        ramp.draw(fig, a=4, tall=True)
    assert fig.get_suptitle() == "a = 2" and fig.axes[0].get_ylim() == (0, 4)
    with pytest.raises(ValueError, match="a figure this"):
        ramp.draw(Figure(), a=1, tall=False)
    with pytest.raises(ValueError, match="unknown"):
        ramp.render(b=1)


def test_the_explorer_keeps_no_figure_but_its_live_one():
    """A static page draws every grid point on a new figure: none may outlive its picture."""
    ramp = Ramp()
    drawn = [weakref.ref(ramp.render(a=a)) for a in (1, 2, 3)]
    gc.collect()
    assert [figure() for figure in drawn] == [None] * 3


def test_the_live_figure_draws_each_decoration_once():
    ramp = Ramp()
    pictures = [ramp.live_png(a=a, tall=tall) for tall in (False, True, False) for a in (1, 2, 3)]
    assert ramp.builds == 1 and ramp._live.full_draws == 2  # one per value of ``decoration``
    assert len(set(pictures)) == 6 and pictures[:3] == pictures[6:]  # same setting, same picture
    with pytest.raises(ImpossibleSetting):
        ramp.live_png(a=4)


def test_the_static_page_has_every_frame_and_says_why_one_is_not_drawn():
    page = Ramp().static_html()
    said = json.loads(re.search(r'class="lattn-descriptions">(.*?)</script>', page, re.S).group(1))
    assert sorted(said) == [f"{a}-{t}" for a in range(4) for t in range(2)]
    assert said["3-0"] == "ramp, a: 4; tall: False. Not drawn: a = 4 is out of reach"
    assert said["1-1"] == "ramp, a: 2; tall: True."


def foreign_private_names(source: pathlib.Path) -> list[str]:
    """'file:line name' for each private name of another library the package's code touches:
    an attribute ``x._name`` whose name the package never defines itself, an import of a
    private matplotlib module or name, and an assignment over a renderer's, canvas's or
    artist's method (monkey-patching)."""
    trees = {path: ast.parse(path.read_text(encoding="utf-8")) for path in sorted(source.rglob("*.py"))}
    own = {path.stem for path in trees}  # private modules such as _checks
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                own.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                own.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                own.add(node.attr)
    patched = {name for cls in (RendererAgg, FigureCanvasAgg, Artist) for name in dir(cls)
               if callable(getattr(cls, name))}
    found = []
    for path, tree in trees.items():
        where = path.relative_to(source.parent)
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.endswith("__"):
                names = [node.attr] if node.attr not in own else []
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("matplotlib"):
                names = [node.module] * ("._" in node.module) + [a.name for a in node.names if a.name.startswith("_")]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names if a.name.startswith("matplotlib") and "._" in a.name]
            elif isinstance(node, ast.Assign):
                names = [target.attr for target in node.targets if isinstance(target, ast.Attribute)
                         and target.attr in patched and getattr(target.value, "id", None) != "self"]
            found += [f"{where}:{node.lineno} {name}" for name in names]
    return found


def test_no_source_file_touches_a_private_matplotlib_name():
    """Any matplotlib release may rename what starts with an underscore, and Colab's
    matplotlib is not ours to pin: the explorers use its public API only."""
    assert foreign_private_names(SOURCE) == []


def test_the_private_name_check_finds_what_it_looks_for(tmp_path):
    package = tmp_path / "lattn_edu"
    package.mkdir()
    (package / "glyphs.py").write_text(
        "from matplotlib.backends.backend_agg import RendererAgg, _BackendAgg\n"
        "def keep(renderer, ax, _own):\n"
        "    _own._fine = ax._left_title\n"
        "    renderer.draw_text = renderer._prepare_font\n")
    assert sorted(foreign_private_names(package)) == [
        "lattn_edu/glyphs.py:1 _BackendAgg", "lattn_edu/glyphs.py:3 _left_title",
        "lattn_edu/glyphs.py:4 _prepare_font", "lattn_edu/glyphs.py:4 draw_text"]
