"""Record what the build resolved, for the Colab editions (tools/colab_notebooks.py).

Colab renders plain Markdown, so a Colab edition writes out as text what the website's
build resolves from MyST: the number of every labelled equation, the number of every
exercise ("10.3", book/_ext/exercise_numbers.py), the title and anchor of every ``{ref}``
target, every page's title, and each citation as author and year. When an HTML build
finishes, this extension reads them from Sphinx's own data (the math and standard domains,
``env.toc_fignumbers``, sphinxcontrib-bibtex's citations) and writes them, page by page, to
``colab_labels.json`` beside the build's ``html/`` folder. Nothing numbers or formats them a
second time.

Citations: the website shows the configured ``bibtex_reference_style``; a notebook has no
bibliography beside its text, so its citations are author and year, formatted by
sphinxcontrib-bibtex's own ``author_year`` style from the entries the build cited.
"""

from __future__ import annotations

import json
from pathlib import Path

from docutils import nodes
from docutils.nodes import make_id
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinxcontrib.bibtex.plugin import find_plugin
from sphinxcontrib.bibtex.style.referencing import BracketStyle, format_references
from sphinxcontrib.bibtex.style.template import SphinxReferenceInfo

LABELS_FILE = "colab_labels.json"  # in the build folder, beside html/ and jupyter_execute/
PARENTHESES = BracketStyle(left="(", right=")", sep="; ")


def labels_path(outdir: str | Path) -> Path:
    """Where a build whose HTML goes to ``outdir`` records its labels."""
    return Path(outdir).parent / LABELS_FILE


def equation_numbers(env: BuildEnvironment) -> dict[str, dict[str, str]]:
    """page -> {equation label: number as the page shows it, "9"}, as the math domain resolves {eq}."""
    pages: dict[str, dict[str, str]] = {}
    for label, (docname, number) in env.get_domain("math").equations.items():
        if env.config.math_numfig and env.config.numfig:
            numbers = env.toc_fignumbers.get(docname, {}).get("displaymath", {})
            shown = ".".join(map(str, numbers.get(make_id(f"equation-{label}"), ())))
            shown = env.config.math_numsep.join(shown.rsplit(".", 1))
        else:
            shown = str(number)
        pages.setdefault(docname, {})[label] = shown
    return pages


def exercise_numbers(env: BuildEnvironment) -> dict[str, dict[str, str]]:
    """page -> {exercise label: "10.3"}, the numbers the pages show (after exercise_numbers.py)."""
    return {docname: {label: ".".join(map(str, number)) for label, number in by_type["exercise"].items()}
            for docname, by_type in env.toc_fignumbers.items() if by_type.get("exercise")}


def markdown_text(node: nodes.Node) -> str:
    """A title's text as Markdown: its math between dollars and its code between backticks."""
    if isinstance(node, nodes.math):
        return f"${node.astext()}$"
    if isinstance(node, nodes.literal):
        return f"`{node.astext()}`"
    if isinstance(node, nodes.Text):
        return node.astext()
    return "".join(markdown_text(child) for child in node.children)


def reference_targets(env: BuildEnvironment) -> dict[str, dict[str, dict[str, str]]]:
    """page -> {label: {"anchor": id, "title": text}}: what {ref}`label` links to and shows.
    A label on the page's own title has the anchor "" (the link opens the page); a label on
    something without a title (a box, a paragraph) has the title "", and a {ref} to it must
    give its own text, as Sphinx requires."""
    pages: dict[str, dict[str, dict[str, str]]] = {}
    doctrees: dict[str, nodes.document] = {}
    for label, (docname, anchor, title) in sorted(env.get_domain("std").labels.items()):
        if docname not in env.found_docs:
            continue
        if docname not in doctrees:
            doctrees[docname] = env.get_doctree(docname)
        doctree = doctrees[docname]
        section = doctree.ids.get(anchor)
        if isinstance(section, nodes.section) and isinstance(section[0], nodes.title):
            title = markdown_text(section[0])
            if section is doctree.next_node(nodes.section):
                anchor = ""
        pages.setdefault(docname, {})[label] = {"anchor": anchor, "title": title}
    std = env.get_domain("std")
    for label, (docname, anchor) in sorted(std.anonlabels.items()):  # on a box or a paragraph:
        if docname in env.found_docs and label not in std.labels:  # {ref} to it gives its own text
            pages.setdefault(docname, {})[label] = {"anchor": anchor, "title": ""}
    return pages


def citations(app: Sphinx, env: BuildEnvironment) -> dict[str, dict[str, dict[str, str]]]:
    """page -> {key: {"page": the bibliography's page, "parenthetical": "Katharopoulos et al.,
    2020", "textual": "Katharopoulos et al. (2020)"}} for every key the page cites."""
    domain = env.get_domain("cite")
    style = find_plugin("sphinxcontrib.bibtex.style.referencing", "author_year")(
        bracket_parenthetical=PARENTHESES, bracket_textual=PARENTHESES)
    cited = {citation.key: citation for citation in domain.citations
             if domain.bibliographies[citation.bibliography_key].list_ == "citation"}
    pages: dict[str, dict[str, dict[str, str]]] = {}
    for ref in domain.citation_refs:
        for target in ref.targets:
            citation = cited.get(target.key)
            if citation is None:  # the build has already warned about the key
                continue
            info = SphinxReferenceInfo(builder=app.builder, fromdocname=ref.docname,
                                       todocname=citation.bibliography_key.docname,
                                       citation_id=citation.citation_id, title=None,
                                       pre_text="", post_text="")
            reference = (citation.entry, citation.formatted_entry, info)
            parenthetical = _render(domain, format_references(style, "p", [reference]))
            pages.setdefault(ref.docname, {})[target.key] = {
                "page": citation.bibliography_key.docname,
                # the inner text, without the brackets that one key alone would get
                "parenthetical": parenthetical.removeprefix("(").removesuffix(")"),
                "textual": _render(domain, format_references(style, "t", [reference])),
            }
    return pages


def _render(domain, text) -> str:
    """Plain text of a pybtex rich text, rendered to docutils nodes as the website renders it."""
    holder = nodes.inline()
    holder += text.render(domain.backend)
    return holder.astext()


def resolved_labels(app: Sphinx, env: BuildEnvironment) -> dict[str, dict]:
    """Every page's title, equations, exercises, {ref} targets and citations, page by page."""
    parts = {"equations": equation_numbers(env), "exercises": exercise_numbers(env),
             "targets": reference_targets(env), "citations": citations(app, env)}
    return {docname: {"title": markdown_text(env.titles[docname]),
                      **{name: found.get(docname, {}) for name, found in parts.items()}}
            for docname in sorted(env.found_docs) if docname in env.titles}


def _record(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    path = labels_path(app.outdir)
    path.write_text(json.dumps(resolved_labels(app, app.env), indent=1, sort_keys=True,
                               ensure_ascii=False) + "\n", encoding="utf-8")


def setup(app: Sphinx) -> dict:
    app.setup_extension("sphinxcontrib.bibtex")
    app.setup_extension("exercise_numbers")  # the per-chapter numbers this records
    app.connect("build-finished", _record)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
