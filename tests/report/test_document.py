"""The report package: its one document writer gives Markdown and HTML that agree (headings, table cells, images,
code), with model text escaped in HTML; a whole report's two files agree the same way; importing the package does not import
matplotlib."""

from __future__ import annotations

import base64
import html
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
from PIL import Image

from _fabricate import fabricate_run
from spatialact.report import make_report
from spatialact.report.document import Document, fence_for, markdown_text

EVIL = '<script>alert("pwned")</script> | {"actions": ["W"]} <img src=x onerror=alert(1)>'
SRC = str(Path(__file__).parents[2] / "src")


class _Page(HTMLParser):
    """The parts of an HTML body the report writes: headings, table cells by table, images, <pre> text, tags."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.headings, self.tables, self.images, self.pres, self.paras, self.tags = [], [], [], [], [], []
        self._text = None
        self._open = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag == "img":
            self.images.append(dict(attrs))
        if tag in ("h1", "h2", "h3", "th", "td", "pre", "p"):
            self._text, self._open = [], self._open + [tag]

    def handle_endtag(self, tag):
        if self._open and tag == self._open[-1]:
            text = "".join(self._text)
            self._open.pop()
            if tag in ("h1", "h2", "h3"):
                self.headings.append((int(tag[1]), text))
            elif tag in ("th", "td"):
                self.tables[-1][-1].append(text)
            elif tag == "pre":
                self.pres.append(text)
            elif tag == "p":
                self.paras.append(text)

    def handle_data(self, data):
        if self._text is not None:
            self._text.append(data)


def _page(path: Path) -> _Page:
    p = _Page()
    body = path.read_text(encoding="utf-8").split("<body>", 1)[1]
    p.feed(body)
    return p


def _md_text(s: str) -> str:
    """Markdown text as written by the document, unescaped (``\\|`` and HTML entities)."""
    return html.unescape(s.replace("\\|", "|"))


def _md_heads(md: str) -> list[tuple[int, str]]:
    return [(len(m.group(1)), _md_text(m.group(2))) for m in re.finditer(r"^(#+) (.*)$", md, flags=re.M)]


def _md_cells(line: str) -> list[str]:
    """The cells of a Markdown table row, unescaped."""
    cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    return [_md_text(c.strip()) for c in cells]


def _md_tables(md: str) -> list[list[list[str]]]:
    tables, cur = [], None
    for line in md.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            if cur is None:
                cur = []
                tables.append(cur)
            cur.append(_md_cells(line))
        elif not line.startswith("|"):
            cur = None
    return tables


def _md_outside_code(md: str) -> str:
    return re.sub(r"^(`{3,})text\n.*?\n\1$", "", md, flags=re.S | re.M)


def _png(path: Path, value: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((6, 9, 3), value, np.uint8)).save(path)
    return path


def test_the_same_calls_give_markdown_and_html_that_agree(tmp_path):
    doc = Document(tmp_path)
    plot = _png(tmp_path / "figures" / "p.png", 40)
    frame = _png(tmp_path / "frames" / "0" / "start.png", 200)
    doc.heading(1, "report <b>one</b>")
    doc.heading(3, EVIL)
    doc.paragraph("a note & " + EVIL)
    doc.note("runs differ: " + EVIL)
    doc.table(["run", "score <i>"], [[EVIL, 0.5], ["a|b", "two\nlines"], ["plain", None]])
    doc.image(plot, "plot of <script>x</script> & y")
    doc.image(None, "nothing to draw")  # a plot with nothing to draw adds nothing
    answer = EVIL + "\n```\nstill the answer"
    with doc.card("best: task " + EVIL):
        doc.frames([("start", frame)])
        doc.code(answer, "Model answer:")
    md_path, html_path = doc.write("title <script>")
    md, page = md_path.read_text(), html_path.read_text()
    p = _page(html_path)

    # headings: the same levels and texts in both
    assert _md_heads(md) == p.headings == [(1, "report <b>one</b>"), (3, EVIL)]
    # table cells: the same text in both (Markdown folds a newline inside a cell into a space)
    assert _md_tables(md) == [[["run", "score <i>"], [EVIL, "0.5"], ["a|b", "two lines"], ["plain", "None"]]]
    assert p.tables == [[["run", "score <i>"], [EVIL, "0.5"], ["a|b", "two\nlines"], ["plain", "None"]]]
    # images: the plot and the frame, in order; Markdown by relative path, HTML inlined with the same bytes
    md_imgs = re.findall(r"!\[([^\]]*)\]\(([^)]+)\)", md)
    alts = ["plot of <script>x</script> & y", "start"]
    assert [_md_text(a) for a, _ in md_imgs] == [img["alt"] for img in p.images] == alts
    for (_, rel), img, src in zip(md_imgs, p.images, (plot, frame)):
        assert (tmp_path / rel).resolve() == src.resolve()
        assert img["src"] == "data:image/png;base64," + base64.b64encode(src.read_bytes()).decode()
    # the answer: verbatim in a fence it cannot close (Markdown), escaped inside <pre> (HTML)
    fence = fence_for(answer)
    assert fence == "````" and f"Model answer:\n\n{fence}text\n{answer}\n{fence}\n" in md
    assert p.pres == [answer]
    # a note: a quoted block in Markdown, a paragraph in HTML, the same text
    assert f"> **Note:** {markdown_text('runs differ: ' + EVIL)}\n" in md and "Note: runs differ: " + EVIL in p.paras
    # the card's title in bold in both
    assert f"**{markdown_text('best: task ' + EVIL)}**" in md and "best: task " + EVIL in p.paras
    # model text never becomes markup: no script or foreign img tag in HTML, none outside code in Markdown
    assert "<script" not in page.lower() and "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;" in page
    assert set(p.tags) <= {"h1", "h3", "p", "table", "thead", "tbody", "tr", "th", "td", "img", "div", "figure",
                           "figcaption", "pre", "b"}
    # the card, its frame strip and the table's sideways-scrolling wrapper
    assert p.tags.count("img") == 2 and p.tags.count("div") == 3
    assert "<script" not in _md_outside_code(md) and "<img" not in _md_outside_code(md)
    assert "<title>title &lt;script&gt;</title>" in page


def test_a_whole_report_agrees_between_markdown_and_html(tmp_path):
    runs = tmp_path / "runs"
    fabricate_run(runs / "oracle", agent="oracle", n=6, scores=[1.0] * 6)
    fabricate_run(runs / "api", agent="openai", model="m<1>", n=6, responses=[EVIL, "Dolly In 2"],
                  scores=np.linspace(0.0, 1.0, 6))
    md_path, html_path = make_report([runs / "oracle", runs / "api"], tmp_path / "rep")
    md, p = md_path.read_text(), _page(html_path)
    md_heads = _md_heads(md)
    assert md_heads == p.headings
    assert [h for _, h in md_heads][:4] == ["spatialact report", "Runs", "Overall", "Per kind"]
    assert ["openai (m<1>)"] in [[h] for lv, h in md_heads if lv == 3]
    assert _md_tables(md) == [[[c.replace("\n", " ") for c in row] for row in t] for t in p.tables]
    overall = next(t for t in p.tables if t[0][:4] == ["run", "episodes", "skill [95% CI]",
                                                        "step score (paper) [95% CI]"])
    assert [row[:2] for row in overall[1:]] == [["oracle", "6"], ["openai (m<1>)", "6"]]
    # fabricated records carry neither s0 nor gt: skill is unknown ("–"), the paper's score is the oracle's 1
    assert overall[1][2:4] == ["–", "1.000 [1.000, 1.000]"]
    assert "oracle: 0 rebuilt, 6 unknown (no readable ground truth: left out of skill)" in md
    assert len(re.findall(r"!\[", md)) == len(p.images) >= 2 + 2 + 3 * 2
    assert any(EVIL in pre for pre in p.pres) and "<script" not in html_path.read_text().lower()


def test_importing_the_report_package_does_not_import_matplotlib():
    code = ("import sys, json, spatialact.report, spatialact.cli.report\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"})
    assert json.loads(out.stdout) == []
