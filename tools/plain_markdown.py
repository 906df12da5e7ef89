"""Turn the chapters' MyST Markdown into the plain Jupyter Markdown that Colab renders.

Colab shows Markdown and MathJax only: MyST roles, directives and labels would show as
raw source. Every construct the chapters use gets a plain form here:

- ``(label)=`` lines disappear;
- a labelled equation ``$$ ... $$ (eq-label)`` keeps the number the website gives it, as
  ``\\tag{9}``, and ``{eq}`eq-label``` becomes "(9)";
- ``{ref}`label``` becomes a link to that section (its title) or exercise ("Exercise 10.3")
  on the website;
- ``{doc}`text <../references>``` becomes a link to that page on the website;
- ``{cite:p}``/``{cite:t}`` become "(Katharopoulos et al., 2020)" / "Katharopoulos et al.
  (2020)", linked to the website's references page;
- ``{glue:text}`name``` becomes the value recorded when the website was built;
- an admonition or an exercise becomes a quoted block with a bold title
  ("**Exercise 10.3**");
- a solution becomes a :class:`Solution` (the notebook folds it into a Colab form cell),
  with a ``{literalinclude}`` of a ``:pyobject:`` replaced by that function's source.

Numbers, titles and citations are not worked out here: they are what the website's build
resolved, as book/_ext/colab_labels.py recorded it (:class:`Resolved`). Anything else that
looks like MyST raises :class:`UnsupportedMyST`, so a new construct in a chapter is noticed
here instead of reaching a student as raw source.
"""

from __future__ import annotations

import ast
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import jupytext

ROOT = Path(__file__).resolve().parent.parent

LABEL_LINE = re.compile(r"^\(([\w-]+)\)=\s*$")
EQUATION_END = re.compile(r"^\$\$\s*\(([\w-]+)\)\s*$")
ROLE = re.compile(r"\{(glue:text|ref|eq|doc|cite:p|cite:t)\}`([^`]*)`")
EXPLICIT_TARGET = re.compile(r"^(.*?)\s*<([^<>]+)>$")
FENCE_OPEN = re.compile(r"^:::\{(admonition|exercise|solution)\}\s*(.*)$")
LEFTOVER_MYST = re.compile(r"\{[\w:-]+\}`|^:::|^```\{|^\([\w-]+\)=\s*$", re.M)


class UnsupportedMyST(ValueError):
    """A MyST construct this translation does not know; the message names the chapter and line."""


def website_url(config: dict) -> str:
    """The website's address: ``html.baseurl`` when set, else the GitHub Pages address of
    ``repository.url`` (the one place the repository is written)."""
    base = (config.get("html") or {}).get("baseurl")
    if base:
        return base.rstrip("/") + "/"
    owner, name = urlsplit(config["repository"]["url"]).path.strip("/").split("/")[:2]
    return f"https://{owner}.github.io/{name}/"


def chapter_number(docname: str) -> int:
    """The chapter a page is, from its file name: ``book/myst/10-delta-rule`` is 10."""
    return int(posixpath.basename(docname).split("-")[0])


@dataclass
class Resolved:
    """What the website's build resolved, page by page (book/_ext/colab_labels.py writes it:
    ``{page: {"title", "equations", "exercises", "targets", "citations"}}``), and in ``used``
    the part of it that a translation looked up, in the same shape."""

    pages: dict[str, dict]
    site: str
    used: dict[str, dict] = field(default_factory=dict)

    def _look_up(self, kind: str, key: str, page: str | None = None) -> tuple[str, object]:
        """(page, value) of ``key`` among the pages' ``kind``, on ``page`` first where given."""
        order = ([page] if page in self.pages else []) + list(self.pages)
        for name in order:
            found = self.pages[name].get(kind, {})
            if key in found:
                self.used.setdefault(name, {}).setdefault(kind, {})[key] = found[key]
                return name, found[key]
        raise KeyError(key)

    def url(self, page: str, anchor: str = "") -> str:
        return f"{self.site}{page}.html" + (f"#{anchor}" if anchor else "")

    def title(self, page: str) -> str:
        if page not in self.pages:
            raise KeyError(page)
        self.used.setdefault(page, {})["title"] = self.pages[page]["title"]
        return self.pages[page]["title"]

    def equation(self, label: str) -> str:
        """ "9": the number the website shows for equation ``label``."""
        return self._look_up("equations", label)[1]

    def exercise(self, label: str) -> tuple[str, str]:
        """(page, "10.3") for an exercise label; KeyError where ``label`` is no exercise."""
        return self._look_up("exercises", label)

    def target(self, label: str) -> tuple[str, dict[str, str]]:
        """(page, {"anchor", "title"}) of a {ref} target."""
        return self._look_up("targets", label)

    def citation(self, key: str, page: str) -> dict[str, str]:
        """{"page", "parenthetical", "textual"}: citation ``key`` as ``page`` cites it."""
        return self._look_up("citations", key, page)[1]


@dataclass(frozen=True)
class Solution:
    """A folded solution: the exercise it answers, its prose and its code."""

    exercise: str  # "10.3"
    prose: str
    code: str


def _quote(title: str, body: list[str]) -> str:
    lines = [f"> **{title}**", ">"] + [f"> {line}".rstrip() for line in body]
    while lines[-1] == ">":
        lines.pop()
    return "\n".join(lines)


def _pyobject(path: Path, name: str) -> str:
    """The source of the top-level function or class ``name`` in ``path``."""
    text = path.read_text(encoding="utf-8")
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            return "\n".join(text.splitlines()[start - 1:node.end_lineno])
    raise KeyError(f"{name} not found in {path}")


class ChapterTranslator:
    """Translates the Markdown cells of one chapter (the page ``docname``), given what the
    build resolved and the glued values."""

    def __init__(self, resolved: Resolved, docname: str, glue: dict[str, str], source_dir: Path):
        self.resolved, self.docname, self.glue, self.source_dir = resolved, docname, glue, source_dir
        self.glue_used: set[str] = set()

    def fail(self, what: str) -> UnsupportedMyST:
        return UnsupportedMyST(f"{posixpath.basename(self.docname)}: {what}")

    def exercise_number(self, label: str) -> str:
        """ "10.3" for an exercise of this chapter."""
        try:
            page, number = self.resolved.exercise(label)
        except KeyError:
            raise self.fail(f"unknown exercise {label} (build the site, then run "
                            f"python tools/colab_notebooks.py)") from None
        if page != self.docname:
            raise self.fail(f"exercise {label} is on {page}")
        return number

    def inline(self, text: str) -> str:
        """Replace every role in ``text``."""
        return ROLE.sub(lambda m: self.role(m.group(1), m.group(2)), text)

    def role(self, name: str, content: str) -> str:
        explicit = EXPLICIT_TARGET.match(content)
        text, target = (explicit.group(1), explicit.group(2)) if explicit else (None, content)
        if name == "glue:text":
            if target not in self.glue:
                raise self.fail(f"no recorded value for {{glue:text}}`{target}` (build the site, "
                                f"then run python tools/colab_notebooks.py)")
            self.glue_used.add(target)
            return self.glue[target]
        if name == "eq":
            try:
                return f"({self.resolved.equation(target)})"
            except KeyError:
                raise self.fail(f"unknown equation {target}") from None
        if name == "ref":
            return self.reference(text, target)
        if name == "doc":
            page = posixpath.normpath(posixpath.join(posixpath.dirname(self.docname), target))
            try:
                title = self.resolved.title(page)
            except KeyError:
                raise self.fail(f"{{doc}} to {target}: the build has no page {page}") from None
            return f"[{text or title}]({self.resolved.url(page)})"
        keys = [key.strip() for key in target.split(",")]
        try:
            cited = [self.resolved.citation(key, self.docname) for key in keys]
        except KeyError as missing:
            raise self.fail(f"citation key {missing} was not cited by the build") from None
        if name == "cite:t":
            return "; ".join(f"[{c['textual']}]({self.resolved.url(c['page'])})" for c in cited)
        return "(" + "; ".join(f"[{c['parenthetical']}]({self.resolved.url(c['page'])})"
                               for c in cited) + ")"

    def reference(self, text: str | None, label: str) -> str:
        """{ref}: an exercise shows "Exercise 10.3", a section its title, as on the website."""
        try:
            page, number = self.resolved.exercise(label)
            return f"[{text or f'Exercise {number}'}]({self.resolved.url(page, label)})"
        except KeyError:
            pass  # not an exercise: a section
        try:
            page, found = self.resolved.target(label)
        except KeyError:
            raise self.fail(f"unknown reference target {label}") from None
        if not (text or found["title"]):
            raise self.fail(f"{{ref}} to {label}, which has no title, needs its own text")
        return f"[{text or found['title']}]({self.resolved.url(page, found['anchor'])})"

    def markdown(self, text: str) -> list[str | Solution]:
        """One MyST Markdown cell as plain Markdown cells, with any solution split out."""
        pieces: list[str | Solution] = []
        lines, out, index = text.splitlines(), [], 0
        while index < len(lines):
            line = lines[index]
            if LABEL_LINE.match(line):
                index += 1
                continue
            if (match := EQUATION_END.match(line)):
                try:
                    number = self.resolved.equation(match.group(1))
                except KeyError:
                    raise self.fail(f"equation {match.group(1)} has no number in the build") from None
                out += [f"\\tag{{{number}}}", "$$"]
                index += 1
                continue
            if (match := FENCE_OPEN.match(line)):
                kind, argument = match.groups()
                options, body, index = self.fenced_block(lines, index + 1)
                if kind == "solution":
                    if out:
                        pieces.append("\n".join(out))
                        out = []
                    pieces.append(self.solution(argument, body))
                    continue
                if kind == "exercise":
                    title = f"Exercise {self.exercise_number(options['label'])}"
                    title += f": {self.inline(argument)}" if argument else ""
                else:
                    title = self.inline(argument)
                out.append(_quote(title, [self.inline(b) for b in body]))
                continue
            out.append(self.inline(line))
            index += 1
        if out:
            pieces.append("\n".join(out))
        pieces = [p.strip("\n") if isinstance(p, str) else p for p in pieces]
        pieces = [p for p in pieces if p]
        for piece in pieces:
            text_part = piece if isinstance(piece, str) else piece.prose
            if (leftover := LEFTOVER_MYST.search(text_part)):
                raise self.fail(f"untranslated MyST {leftover.group(0)!r} in: {text_part[:120]!r}")
        return pieces

    def fenced_block(self, lines: list[str], index: int) -> tuple[dict[str, str], list[str], int]:
        """Options and body lines of a ``:::`` block starting at ``index``; the index after it."""
        options: dict[str, str] = {}
        while index < len(lines) and (match := re.match(r"^:([\w-]+):\s*(.*)$", lines[index])):
            options[match.group(1)] = match.group(2)
            index += 1
        body, in_code = [], False
        while index < len(lines):
            line = lines[index]
            if line.startswith("```"):
                in_code = not in_code
            if not in_code and line.strip() == ":::":
                break
            body.append(line)
            index += 1
        else:
            raise self.fail(f"unclosed ::: block before line {index}")
        while body and not body[0].strip():
            body.pop(0)
        while body and not body[-1].strip():
            body.pop()
        return options, body, index + 1

    def solution(self, label: str, body: list[str]) -> Solution:
        """The prose of a solution and the code of its literalinclude (if any)."""
        number = self.exercise_number(label)
        prose, code, index = [], [], 0
        while index < len(body):
            line = body[index]
            if line.startswith("```{literalinclude}"):
                path = (self.source_dir / line.split("}", 1)[1].strip()).resolve()
                index += 1
                options = {}
                while not body[index].startswith("```"):
                    key, _, value = body[index].strip(":").partition(":")
                    options[key.strip()] = value.strip()
                    index += 1
                if set(options) != {"pyobject"}:
                    raise self.fail(f"literalinclude options {sorted(options)}: only :pyobject: is known")
                code.append(_pyobject(path, options["pyobject"]))
            else:
                prose.append(self.inline(line))
            index += 1
        while prose and not prose[-1].strip():
            prose.pop()
        return Solution(number, "\n".join(prose), "\n\n".join(code))


def read_cells(source: Path):
    """The chapter's cells as jupytext reads them (MyST notebook format)."""
    return jupytext.read(source, fmt="md:myst").cells
