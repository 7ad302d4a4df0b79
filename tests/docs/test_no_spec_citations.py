"""No reference to a document users do not have. The specification the project was built from, the folder of papers
beside the checkout and the requests that asked for each change are not shipped, so no `--help` text, report, doc,
notebook, example, script, benchmark, changelog or test docstring or comment cites a section of the specification,
points at that folder or at a paper's file in it, or names a request by its letter or number. Each cites the
project's own doc that carries the decision (docs/scoring.md, docs/conventions.md, …), and a paper by its title and
link."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from spatialact.cli.main import SUBCOMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parents[2]
CITATION = re.compile(r"SPEC\s*§|shared/SPEC|SPEC\.md|§\s*\d")  # a bare section sign and number cites it too
# The folder beside the checkout and its papers (a paper's file name: three digits, an underscore and 16 hex digits,
# or the three digits, an underscore and a star), and a request named by its letter or number after the word (or its
# plural, capitalised or not) or as where a figure came from (that word after "this" or "the", then "'s" or
# "measured"); test_the_pattern_finds_each_form lists the forms. Linear: alternatives of fixed text, one repetition
# each, none nested.
INTERNAL = re.compile(r"\.\./shared\b|/work/shared\b|shared/papers|\b\d{3}_(?:\*|[0-9a-f]{16}\b)"
                      r"|\b[Ii]ssues?[ \t]+(?:[A-Z]\b|\d+\b|#\d)|\b[Tt](?:his|he) issue(?:'s\b| measured\b)")
# What users get: every file under these (the package, its docs, notebooks, examples, scripts, benchmarks), and the
# docstrings and comments of the tests.
USER_FILES = ("src", "docs", "notebooks", "examples", "scripts", "benchmarks", "README.md", "CHANGELOG.md", "Makefile")
BINARY = (".pyc", ".png", ".jpg", ".npz", ".gz", ".wad", ".mp4", ".glb", ".hdf5", ".parquet", ".so")


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
        assert not INTERNAL.search(text), (argv, INTERNAL.search(text))
    assert not CITATION.search(build_parser().format_help())
    assert not INTERNAL.search(build_parser().format_help())


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
        assert not CITATION.search(text) and not INTERNAL.search(text), name


def _user_texts():
    """(path, text) of every file users get (:data:`USER_FILES`; binary files skipped), then of each test module's
    docstrings and comments (the code of a test may hold any text it checks)."""
    for top in USER_FILES:
        base = ROOT / top
        if not base.exists():
            continue
        paths = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
        for p in paths:
            if p.suffix in BINARY or "__pycache__" in p.parts or any(s.endswith(".egg-info") for s in p.parts):
                continue
            try:
                yield p.relative_to(ROOT).as_posix(), p.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
    for p in sorted((ROOT / "tests").rglob("*.py")):
        yield p.relative_to(ROOT).as_posix(), prose_of(p.read_text(encoding="utf-8"))


def prose_of(source: str) -> str:
    """The docstrings (module, classes, functions) and comments of a Python source, one a line."""
    tree = ast.parse(source)
    docs = [ast.get_docstring(n, clean=False) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
    comments = [tok.string for tok in tokenize.generate_tokens(io.StringIO(source).readline)
                if tok.type == tokenize.COMMENT]
    return "\n".join([d for d in docs if d] + comments)


def test_no_file_users_get_cites_the_spec():
    found = sorted({path for path, text in _user_texts() if CITATION.search(text)})
    assert not found, found


def test_no_file_users_get_points_at_the_papers_folder_or_a_request():
    found = sorted(f"{path}: {m.group(0)!r}" for path, text in _user_texts() for m in [INTERNAL.search(text)] if m)
    assert not found, found


@pytest.mark.parametrize("text", [
    "see ../shared/papers/000_*, appendix D.2", "(`001_*`)", "in 002_f2d2edebb65534ae.txt", "/work/shared/SPEC.md",
    "hardening of the command line (issue P)", "issues J, Q", "Issue K: every notebook runs", "before issue 12",
    "issue #3", "Issue J's targets are not all met", "this issue's final run", "the issue measured 3 300 tics/s",
    "the issue's run: 20 episodes"])
def test_the_pattern_finds_each_form(text):
    assert INTERNAL.search(text), text


@pytest.mark.parametrize("text", [
    "the runner issues a warning", "an issue with the GL driver", "frames/step_000_*.png", "seed 000_1",
    "Issues are welcome", "issue tracker", "the shared cache", "0001_abcdef0123456789abcd"])
def test_the_pattern_leaves_plain_text(text):
    assert not INTERNAL.search(text), text


def test_prose_of_reads_docstrings_and_comments_only():
    source = '''"""Module (issue P)."""
X = "issue Q"  # a comment on issue R
def f():
    """Function, issue S."""
    return "issue T"
'''
    prose = prose_of(source)
    assert all(w in prose for w in ("issue P", "issue R", "issue S")) and "issue Q" not in prose
    assert "issue T" not in prose
