"""The pictures of the README and docs are made by what the pages show beside them.

scripts/make_readme_images.py holds the table (``PICTURES``): for each picture, its files in docs/images, the pages
that show it and the commands it runs (exactly as the pages show them) or the script that draws it. Here the table
and the pages are read and compared: every picture a page shows is in the table; a picture made by commands has
every one of them, word for word (comments aside), in the page's nearest ```bash block before it; a picture drawn
by a script has the script named beside it; and docs/images holds no picture that nothing makes.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import sys

from _doc_commands import ROOT, shell_commands

IMAGE = re.compile(r"!\[[^\]\n]{0,300}\]\(((?:docs/)?images/[\w.-]{1,100}\.png)\)")


def _table():
    spec = importlib.util.spec_from_file_location("make_readme_images", ROOT / "scripts/make_readme_images.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclass looks its module up there
    spec.loader.exec_module(mod)
    return mod.PICTURES


def normal(cmd: str) -> str:
    """A command's words, comments left out, joined as the shell would read them."""
    return shlex.join(shlex.split(cmd, comments=True))


def shown_images(text: str) -> list[tuple[int, str]]:
    """(line index, file name) of every picture (``![..](images/x.png)``) in a Markdown text."""
    return [(i, m.group(1).rsplit("/", 1)[1]) for i, line in enumerate(text.splitlines())
            for m in IMAGE.finditer(line)]


def block_before(lines: list[str], at: int) -> list[str]:
    """The commands of the last shell block that ends before line ``at``."""
    end = None
    fence = [i for i in range(at) if lines[i].strip().startswith("```")]
    for k in range(len(fence) - 1, 0, -1):
        opening = lines[fence[k - 1]].strip()[3:].strip().lower()
        if opening in ("bash", "sh", "shell", "console") and not lines[fence[k]].strip()[3:].strip():
            end = k
            break
    if end is None:
        return []
    return shell_commands("\n".join(lines[fence[end - 1]:fence[end] + 1]))


def test_block_before_and_shown_images():
    text = "```bash\na 1\n```\n![](images/x.png)\n```bash\nb  2   # c\n```\ntext\n![](docs/images/y.png)\n"
    lines = text.splitlines()
    assert shown_images(text) == [(3, "x.png"), (8, "y.png")]
    assert block_before(lines, 3) == ["a 1"] and block_before(lines, 8) == ["b  2   # c"]
    assert normal("b  2   # c") == "b 2"


def test_every_picture_comes_from_what_its_page_shows_beside_it():
    pictures = _table()
    owner = {image: pic for pic in pictures for image in pic.images}
    assert len(owner) == sum(len(p.images) for p in pictures), "a picture is in the table twice"
    pages = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
    seen, problems = set(), []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        lines = text.splitlines()
        name = page.relative_to(ROOT).as_posix()
        for at, image in shown_images(text):
            pic = owner.get(image)
            if pic is None:
                problems.append(f"{name}:{at + 1}: {image} is in no entry of make_readme_images.PICTURES")
                continue
            seen.add((pic.name, name))
            if name not in pic.pages:
                problems.append(f"{name}:{at + 1}: {image} shown, but the table lists it for {pic.pages}")
            if pic.commands:
                near = {normal(c) for c in block_before(lines, at)}
                problems += [f"{name}:{at + 1}: {image}: the script runs {c!r}, the command block before the "
                             f"picture does not hold it" for c in pic.commands if normal(c) not in near]
            if pic.script and pic.script not in "\n".join(lines[max(0, at - 40):at + 25]):
                problems.append(f"{name}:{at + 1}: {image}: drawn by {pic.script}, which the page does not name "
                                "beside it")
    for pic in pictures:
        problems += [f"{page}: listed for {pic.name} but shows none of its pictures" for page in pic.pages
                     if (pic.name, page) not in seen]
    stale = sorted(p.name for p in (ROOT / "docs/images").glob("*.png") if p.name not in owner)
    assert not stale, f"docs/images holds pictures nothing makes: {stale}"
    assert not problems, "\n".join(problems)
