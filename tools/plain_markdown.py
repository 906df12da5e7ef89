"""Turn the chapters' MyST Markdown into the plain Jupyter Markdown that Colab renders.

Colab shows Markdown and MathJax only: MyST roles, directives and labels would show as
raw source. Every construct the chapters use gets a plain form here:

- ``(label)=`` lines disappear;
- a labelled equation ``$$ ... $$ (eq-label)`` keeps the number the website gives it, as
  ``\\tag{9}``, and ``{eq}`eq-label``` becomes "(9)": the website numbers equations
  through the whole book in reading order, and exercises per chapter, "10.3" being chapter
  10's third (book/_ext/exercise_numbers.py);
- ``{ref}`ch-label``` becomes a link to that chapter's page on the website;
- ``{doc}`text <../references>``` becomes a link to that page on the website;
- ``{cite:p}``/``{cite:t}`` become "(Katharopoulos et al., 2020)" / "Katharopoulos et al.
  (2020)", linked to the website's references page;
- ``{glue:text}`name``` becomes the value recorded when the website was built;
- an admonition or an exercise becomes a quoted block with a bold title
  ("**Exercise 10.3**");
- a solution becomes a :class:`Solution` (the notebook folds it into a Colab form cell),
  with a ``{literalinclude}`` of a ``:pyobject:`` replaced by that function's source.

Anything else that looks like MyST raises :class:`UnsupportedMyST`, so a new construct in a
chapter is noticed here instead of reaching a student as raw source.
"""

from __future__ import annotations

import ast
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import jupytext
from pybtex.database import parse_file
from pybtex.richtext import Text

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


@dataclass
class Chapter:
    """What other chapters may refer to in one MyST source."""

    stem: str
    number: int
    title: str
    labels: list[str] = field(default_factory=list)
    equations: dict[str, str] = field(default_factory=dict)  # label -> "9"
    exercises: dict[str, str] = field(default_factory=dict)  # label -> "10.3"


def read_chapter(source: Path, equations_before: int = 0) -> Chapter:
    """Number the chapter (from its file name), its labelled equations (counting on from
    those of the chapters before it) and its exercises ("10.3": chapter, then position)."""
    text = source.read_text(encoding="utf-8")
    number = int(source.stem.split("-")[0])
    title = next(line[2:].strip() for line in text.splitlines() if line.startswith("# "))
    chapter = Chapter(source.stem, number, title)
    pending_label = False
    for line in text.splitlines():
        if (match := LABEL_LINE.match(line)):
            chapter.labels.append(match.group(1))
        elif (match := EQUATION_END.match(line)):
            chapter.equations[match.group(1)] = str(equations_before + len(chapter.equations) + 1)
        elif line.startswith(":::{exercise}"):
            pending_label = True
        elif pending_label and line.startswith(":label:"):
            label = line.split(":label:")[1].strip()
            chapter.exercises[label] = f"{number}.{len(chapter.exercises) + 1}"
            pending_label = False
    return chapter


@dataclass
class Book:
    """Every chapter's labels, the bibliography and the website, for resolving references."""

    chapters: list[Chapter]
    bibliography: dict[str, tuple[str, str]]  # key -> (authors as cited, year)
    site: str

    @classmethod
    def read(cls, sources: list[Path], bibfile: Path, site: str) -> "Book":
        """The chapters in reading order (``sources``), numbered as the website numbers them."""
        chapters: list[Chapter] = []
        for source in sources:
            chapters.append(read_chapter(source, sum(len(c.equations) for c in chapters)))
        return cls(chapters, read_bibliography(bibfile), site)

    def page(self, stem: str) -> str:
        return f"{self.site}book/chapters/{stem}.html"

    def references_page(self) -> str:
        return f"{self.site}book/references.html"

    def chapter_of(self, label: str) -> Chapter:
        for chapter in self.chapters:
            if label in chapter.labels:
                return chapter
        raise KeyError(label)

    def exercise(self, label: str) -> tuple[Chapter, str] | None:
        """(chapter, "10.3") for an exercise label, or None."""
        for chapter in self.chapters:
            if label in chapter.exercises:
                return chapter, chapter.exercises[label]
        return None

    def equation(self, label: str) -> str:
        for chapter in self.chapters:
            if label in chapter.equations:
                return chapter.equations[label]
        raise KeyError(label)


def read_bibliography(bibfile: Path) -> dict[str, tuple[str, str]]:
    """key -> ("Katharopoulos et al.", "2020"): surnames as an author-year citation gives them."""
    entries = {}
    for key, entry in parse_file(str(bibfile)).entries.items():
        surnames = [Text.from_latex(" ".join(p.last_names)).render_as("text")
                    for p in entry.persons.get("author", [])]
        if len(surnames) == 1:
            authors = surnames[0]
        elif len(surnames) == 2:
            authors = f"{surnames[0]} and {surnames[1]}"
        else:
            authors = f"{surnames[0]} et al."
        entries[key] = (authors, entry.fields["year"])
    return entries


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
    """Translates the Markdown cells of one chapter, given the book and the glued values."""

    def __init__(self, book: Book, chapter: Chapter, glue: dict[str, str], source_dir: Path):
        self.book, self.chapter, self.glue, self.source_dir = book, chapter, glue, source_dir
        self.glue_used: set[str] = set()

    def fail(self, what: str) -> UnsupportedMyST:
        return UnsupportedMyST(f"{self.chapter.stem}: {what}")

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
                return f"({self.book.equation(target)})"
            except KeyError:
                raise self.fail(f"unknown equation {target}") from None
        if name == "ref":
            exercise = self.book.exercise(target)
            if exercise is not None:  # an exercise label: "Exercise 10.3", on its chapter's page
                chapter, number = exercise
                return f"[{text or f'Exercise {number}'}]({self.book.page(chapter.stem)}#{target})"
            try:
                chapter = self.book.chapter_of(target)
            except KeyError:
                raise self.fail(f"unknown reference target {target}") from None
            return f"[{text or chapter.title}]({self.book.page(chapter.stem)})"
        if name == "doc":
            page = posixpath.normpath(posixpath.join("book/chapters", target))
            if not (ROOT / f"{page}.md").is_file():
                raise self.fail(f"{{doc}} to {target}: no page {page}.md")
            return f"[{text or Path(page).name}]({self.book.site}{page}.html)"
        keys = [key.strip() for key in target.split(",")]
        missing = [key for key in keys if key not in self.book.bibliography]
        if missing:
            raise self.fail(f"citation keys not in the bibliography: {missing}")
        url = self.book.references_page()
        if name == "cite:t":
            return "; ".join(f"[{authors} ({year})]({url})"
                             for authors, year in map(self.book.bibliography.get, keys))
        return "(" + "; ".join(f"[{authors}, {year}]({url})"
                               for authors, year in map(self.book.bibliography.get, keys)) + ")"

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
                out += [f"\\tag{{{self.chapter.equations[match.group(1)]}}}", "$$"]
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
                    title = f"Exercise {self.chapter.exercises[options['label']]}"
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
        if label not in self.chapter.exercises:
            raise self.fail(f"solution to unknown exercise {label}")
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
        return Solution(self.chapter.exercises[label], "\n".join(prose), "\n\n".join(code))


def read_cells(source: Path):
    """The chapter's cells as jupytext reads them (MyST notebook format)."""
    return jupytext.read(source, fmt="md:myst").cells
