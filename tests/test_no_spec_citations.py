"""No reference to a document users do not have: the spec the project was built from is not shipped, so no `--help`
text, report, doc, notebook, example, script or docstring cites "SPEC §…" or points at ../shared; each cites the
project's own doc (docs/scoring.md, docs/conventions.md, …) that carries the decision."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from spatialact.cli.main import SUBCOMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parents[1]
CITATION = re.compile(r"SPEC\s*§|shared/SPEC|SPEC\.md|§\s*\d")  # a bare "§5.2" cites the spec too


# the commands with actions of their own, whose --help is separate
ACTIONS = {"tasks": ("from-trajectory", "procedural"), "questions": ("build", "score"), "game": ("record",)}


def _help(argv, capsys) -> str:
    with pytest.raises(SystemExit) as e:
        main([*argv, "--help"])
    assert e.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_help_cites_no_spec(command, capsys):
    for argv in ([command], *([command, a] for a in ACTIONS.get(command, ()))):
        text = _help(argv, capsys)
        assert text.strip() and not CITATION.search(text), (argv, CITATION.search(text))
    assert not CITATION.search(build_parser().format_help())


def test_the_report_cites_no_spec(tmp_path, capsys):
    from _fabricate import make_task
    from spatialact.tasks import save_tasks

    rng = np.random.default_rng(0)
    for name in ("s", "g"):
        Image.fromarray(rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)).save(tmp_path / f"{name}.png")
    save_tasks([make_task("t", start_image=str(tmp_path / "s.png"), goal_image=str(tmp_path / "g.png"))],
               tmp_path / "t.jsonl")
    assert main(["eval", "--tasks", str(tmp_path / "t.jsonl"), "--agent", "oracle", "--env", "none",
                 "--out", str(tmp_path / "run"), "--no-progress", "--json"]) == 0
    assert main(["report", str(tmp_path / "run"), "--out", str(tmp_path / "rep"), "--json"]) == 0
    capsys.readouterr()
    for name in ("report.md", "report.html"):
        text = (tmp_path / "rep" / name).read_text()
        assert "Scores are episode step scores (docs/scoring.md)" in text
        assert not CITATION.search(text), name


def test_no_file_users_get_cites_the_spec():
    found = set()
    for top in ("src", "docs", "notebooks", "examples", "scripts", "README.md"):
        base = ROOT / top
        paths = [base] if base.is_file() else [p for p in base.rglob("*") if p.is_file()]
        for p in paths:
            if p.suffix in (".pyc", ".png", ".jpg", ".npz", ".gz", ".wad", ".mp4", ".glb") or "__pycache__" in p.parts:
                continue
            try:
                text = p.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            if CITATION.search(text):
                found.add(p.relative_to(ROOT).as_posix())
    assert not found, sorted(found)
