"""The report's one document writer: each call adds the same piece to a Markdown and an HTML document.

``Document(out_dir)`` takes headings, paragraphs, notes, tables, images (PNG files under ``out_dir``), code blocks and
example cards (a bold title, a strip of captioned frames, a code block); :meth:`Document.write` writes
``report.md`` (images referred to by their path relative to ``out_dir``) and ``report.html`` (a self-contained page:
images inlined as base64 data URLs, inline CSS, a Content-Security-Policy that allows no scripts or remote loads).

Every string a section passes — model answers, task ids, tags, agent names — is untrusted. In HTML each is escaped
with ``html.escape``; in Markdown text and table cells are escaped the same way (quotes kept) with ``|`` escaped and
newlines folded, and code blocks hold the text verbatim inside a fence longer than any backtick run in it.
"""

from __future__ import annotations

import base64
import html
from contextlib import contextmanager
from pathlib import Path

from ..outputs import write_text

__all__ = ["Document", "markdown_text", "fence_for", "data_url", "CSS"]

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1200px;color:#222;
background:#fff;padding:0 16px}
h1{font-size:26px;border-bottom:3px solid #2b6cb0;padding-bottom:6px}h2{font-size:20px;margin-top:32px;color:#2b6cb0}
h3{font-size:16px}table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}
th,td{border:1px solid #ccd;padding:4px 8px;text-align:left}th{background:#e8eef8}tr:nth-child(even){background:#f7f9fc}
pre{background:#f4f4f4;border:1px solid #ddd;padding:8px;white-space:pre-wrap;word-break:break-word;font-size:12px;
max-height:260px;overflow:auto}
.frames{display:flex;gap:12px;flex-wrap:wrap}.frames figure{margin:0;text-align:center;font-size:12px}
.frames img{width:192px;image-rendering:pixelated;border:1px solid #999;background:#eee}
.plot{max-width:100%;border:1px solid #eee}.meta{color:#555;font-size:13px}
.ep{border-left:4px solid #2b6cb0;padding-left:12px;margin:16px 0}
.tw{overflow-x:auto;max-width:100%}td{white-space:nowrap}
table.wrap td{white-space:normal;max-width:520px;overflow-wrap:anywhere}
"""


# A note's look, inline so that the page's style sheet (and every report without a note) stays as it was.
_NOTE_STYLE = "border-left:4px solid #c53030;background:#fff5f5;padding:6px 12px"


def markdown_text(v) -> str:
    """Any value as one line of Markdown text or one table cell: HTML-escaped (quotes kept), ``|`` escaped,
    newlines folded into spaces."""
    return html.escape(str(v), quote=False).replace("|", "\\|").replace("\n", " ")


def fence_for(text: str) -> str:
    """A code fence that ``text`` cannot close: backticks, one more than its longest run (at least three)."""
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def data_url(path: Path) -> str:
    """The image file as a base64 ``data:`` URL (PNG, else JPEG)."""
    mime = "image/png" if path.suffix.lower() == ".png" else "image/jpeg"
    return f"data:{mime};base64," + base64.b64encode(path.read_bytes()).decode("ascii")


class Document:
    """A report under construction: Markdown blocks and HTML lines, written by :meth:`write`.

    ``out_dir`` is where the documents go; images passed to :meth:`image` and :meth:`frames` must lie under it
    (Markdown refers to them by their relative path).
    """

    def __init__(self, out_dir):
        self.out = Path(out_dir)
        self.md: list[str] = []    # Markdown blocks, joined by newlines
        self.html: list[str] = []  # lines of the HTML body
        self._glue = False         # the next HTML piece continues the last line (inside a card's title line)

    def _emit_html(self, piece: str) -> None:
        if self._glue:
            self.html[-1] += piece
            self._glue = False
        else:
            self.html.append(piece)

    def heading(self, level: int, text: str) -> None:
        self.md.append(f"{'#' * level} {markdown_text(text)}\n")
        self._emit_html(f"<h{level}>{html.escape(text)}</h{level}>")

    def paragraph(self, text: str) -> None:
        self.md.append(markdown_text(text) + "\n")
        self._emit_html(f"<p class='meta'>{html.escape(text)}</p>")

    def note(self, text: str) -> None:
        """A paragraph set apart as a warning to the reader (Markdown: a quoted block)."""
        self.md.append(f"> **Note:** {markdown_text(text)}\n")
        self._emit_html(f"<p class='note' style='{_NOTE_STYLE}'><b>Note:</b> {html.escape(text)}</p>")

    def table(self, headers, rows, wrap: bool = False) -> None:
        """A table: ``headers`` (column names) and ``rows`` (lists of cells, any values, shown as text). In HTML a
        cell stays on one line (a figure with its interval is not broken) unless ``wrap`` (cells of free text: a
        reason, a tool call's arguments); a table wider than the page scrolls sideways."""
        md = ["| " + " | ".join(markdown_text(h) for h in headers) + " |", "|" + "---|" * len(headers)]
        md += ["| " + " | ".join(markdown_text(c) for c in row) + " |" for row in rows]
        self.md.append("\n".join(md) + "\n")
        e = html.escape
        cls = " class='wrap'" if wrap else ""
        out = [f"<div class='tw'><table{cls}><thead><tr>"
               + "".join(f"<th>{e(str(h))}</th>" for h in headers) + "</tr></thead><tbody>"]
        out += ["<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in row) + "</tr>" for row in rows]
        out.append("</tbody></table></div>")
        self._emit_html("\n".join(out))

    def image(self, path: Path | None, alt: str) -> None:
        """A figure (a PNG under the output folder); nothing when ``path`` is None (a plot with nothing to draw)."""
        if path is None:
            return
        self.md.append(f"![{markdown_text(alt)}]({path.relative_to(self.out).as_posix()})\n")
        self._emit_html(f"<img class='plot' alt='{html.escape(alt)}' src='{data_url(path)}'>")

    def code(self, text: str, caption: str) -> None:
        """``text`` verbatim in a code block (Markdown: a fence it cannot close; HTML: escaped inside ``<pre>``),
        under ``caption``."""
        fence = fence_for(text)
        self.md.append(f"{markdown_text(caption)}\n\n{fence}text\n{text}\n{fence}\n")
        self._emit_html(f"<p>{html.escape(caption)}</p><pre>{html.escape(text)}</pre>")

    def frames(self, images: list[tuple[str, Path]]) -> None:
        """A strip of small images side by side, each ``(caption, path under the output folder)``."""
        if images:
            self.md.append(" ".join(f"![{markdown_text(name)}]({p.relative_to(self.out).as_posix()})"
                                    for name, p in images) + "\n")
        self._emit_html("<div class='frames'>")
        for name, p in images:
            self._emit_html(f"<figure><img alt='{html.escape(name)}' src='{data_url(p)}'><figcaption>"
                            f"{html.escape(name)}</figcaption></figure>")
        self._emit_html("</div>")

    @contextmanager
    def card(self, title: str):
        """A framed block opened by ``title`` in bold (an example episode); what is written inside belongs to it."""
        self.md.append(f"**{markdown_text(title)}**\n")
        self._emit_html(f"<div class='ep'><p><b>{html.escape(title)}</b></p>")
        self._glue = True
        try:
            yield self
        finally:
            self._glue = False
            self.html[-1] += "</div>"

    def write(self, title: str, stem: str = "report") -> tuple[Path, Path]:
        """Write ``<stem>.md`` and ``<stem>.html`` (titled ``title``; ``report`` unless named) into the output
        folder, each replaced atomically by the output rule (:mod:`spatialact.outputs`: a link followed, a device
        written through, a FIFO or read-only file refused); returns their paths."""
        md_path, html_path = self.out / f"{stem}.md", self.out / f"{stem}.html"
        write_text(md_path, "\n".join(self.md))
        page = ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
                "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; img-src data:; "
                "style-src 'unsafe-inline'\">"
                f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>\n" + "\n".join(self.html)
                + "\n</body></html>\n")
        write_text(html_path, page)
        return md_path, html_path
