"""The method page (/method), the API reference (/api) and the model pages, served by `voxwatch serve`
from a Postgres store seeded with test_web's rows; their layout read in headless Chromium at a phone's
width (390 px) and a laptop's (1366 px), screenshots in var/test-artifacts/.
"""

from __future__ import annotations

import re
from html import unescape
from typing import Iterator

import httpx
import pytest

from voxwatch.metrics import METHOD_VERSION
from voxwatch.web.markdown_doc import render
from voxwatch.web.openapi import document

from conftest import REPO
from test_web import ROWS, seeded_store, serving

METHOD_MD = REPO / "docs" / "METHOD.md"


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[str]:
    with seeded_store() as url:
        with serving(url, tmp_path_factory.mktemp("pages") / "serve.log") as base:
            yield base


def _text(html: str) -> str:
    return unescape(re.sub(r"<[^>]+>", "", html))


def test_the_method_page_is_method_md_with_contents_and_version(server):
    page = httpx.get(f"{server}/method")
    assert page.status_code == 200
    source = METHOD_MD.read_text(encoding="utf-8")
    headings = [line.lstrip("#").strip().replace("`", "") for line in source.splitlines() if re.match(r"##+ ", line)]
    shown = {_text(h): anchor for anchor, h in re.findall(r'<h[23] id="([^"]+)">(.*?)</h[23]>', page.text)}
    assert list(shown) == headings and len(headings) >= 10
    toc = re.search(r'<nav class="toc".*?</nav>', page.text, re.S).group()
    assert [unescape(t) for t in re.findall(r'<a href="#[^"]+">([^<]+)</a>', toc)] == headings
    assert all(f'href="#{anchor}"' in toc for anchor in shown.values())
    assert f'data-field="method-version">{METHOD_VERSION}</strong>' in page.text
    assert f"method version {METHOD_VERSION}" in _text(page.text)  # the document's own title says it too
    assert "<script" not in page.text


def test_markdown_renders_tables_and_never_raw_html():
    doc = render("# Title\n\n## Figures\n\n| metric | p50 |\n|:--|--:|\n| ttfs_ms | 420 |\n\n<script>x()</script>\n")
    assert doc.title == "Title" and [h.anchor for h in doc.toc] == ["figures"]
    assert '<th class="align-left">metric</th>' in doc.html and '<td class="align-right">420</td>' in doc.html
    assert "<script>" not in doc.html and "&lt;script&gt;" in doc.html and "style=" not in doc.html


def test_every_page_links_the_method_and_the_api(server):
    for path in ("/", "/board/stt", "/model/deepgram/nova-3", "/alerts", "/method", "/api"):
        page = httpx.get(server + path).text
        assert '<a href="/method">' in page and '<a href="/api">API</a>' in page, path
        assert 'href="/api/v1/openapi.json">API<' not in page, path
    assert httpx.get(f"{server}/api/v1/openapi.json").json()["openapi"] == "3.1.0"  # still served


def test_the_api_page_lists_every_path_parameter_and_field(server):
    page = httpx.get(f"{server}/api").text
    spec = document()
    sections = dict(re.findall(r'<section class="endpoint" id="[^"]+" data-path="([^"]+)">(.*?)</section>', page, re.S))
    assert list(sections) == list(spec["paths"])
    for path, item in spec["paths"].items():
        section = sections[path]
        for p in item["get"]["parameters"]:
            assert f'data-parameter="{p["name"]}"' in section, (path, p["name"])
        for status in item["get"]["responses"]:
            assert f'data-status="{status}"' in section, (path, status)
        assert re.search(r'<pre class="curl"><code>curl -s &#34;\$SITE/api/v1/', section), path
    schemas = dict(re.findall(r'<section class="schema" id="schema-[^"]+" data-schema="([^"]+)">(.*?)</section>', page, re.S))
    assert list(schemas) == list(spec["components"]["schemas"])
    for name, schema in spec["components"]["schemas"].items():
        for field in schema.get("properties", {}):
            assert f'data-field-name="{field}"' in schemas[name], (name, field)
    history = sections["/api/v1/models/{model_id}/history"]
    assert "curl -s &#34;$SITE/api/v1/models/deepgram/nova-3/history" in history
