"""A Markdown document as a page: HTML rendered on the server, every heading with an anchor, and a
table of contents of its sections.

markdown-it-py's CommonMark with tables; raw HTML in the source is shown as text, never passed
through (html=False), and a table column's alignment becomes a class, since the pages' CSP admits
no inline style.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.token import Token

_MD = MarkdownIt("commonmark", {"html": False}).enable("table")
TOC_LEVELS = ("h2", "h3")


@dataclass(frozen=True)
class Heading:
    level: int
    text: str
    anchor: str


@dataclass(frozen=True)
class Document:
    title: str
    html: str
    toc: list[Heading]


def _slug(text: str, taken: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"
    slug, k = base, 1
    while slug in taken:
        k += 1
        slug = f"{base}-{k}"
    taken.add(slug)
    return slug


def _alignment_as_class(token: Token) -> None:
    style = token.attrGet("style")
    if style and style.startswith("text-align:"):
        del token.attrs["style"]
        token.attrSet("class", "align-" + style.removeprefix("text-align:"))


def render(source: str) -> Document:
    """The document's first heading as its title, the rest as HTML, h2 and h3 in the table of contents."""
    tokens = _MD.parse(source)
    title, toc, taken = "", [], set()
    for i, token in enumerate(tokens):
        if token.type in ("th_open", "td_open"):
            _alignment_as_class(token)
        if token.type != "heading_open":
            continue
        text = "".join(c.content for c in tokens[i + 1].children or [] if c.type in ("text", "code_inline"))
        anchor = _slug(text, taken)
        token.attrSet("id", anchor)
        if token.tag == "h1" and not title:
            title = text
        elif token.tag in TOC_LEVELS:
            toc.append(Heading(int(token.tag[1]), text, anchor))
    if tokens and tokens[0].type == "heading_open" and tokens[0].tag == "h1":
        tokens = tokens[3:]  # the page shows the title itself
    return Document(title, _MD.renderer.render(tokens, _MD.options, {}), toc)
