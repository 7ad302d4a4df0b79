"""Output paths a command cannot write are refused in one line naming the option (exit 2), before any work:
a file where a run directory or output folder is wanted, a folder where a file is wanted, a path under a file."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from spatialact.cli.main import main
from spatialact.evaluation.results import RunStore, RunStoreError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SIM = importlib.util.find_spec("pybullet") is not None


@pytest.fixture
def afile(tmp_path):
    f = tmp_path / "afile"
    f.write_text("not a folder\n")
    return f


def _argv(cmd: str, out: Path) -> list[str]:
    return {
        "eval": ["eval", "--suite", "default", "--agent", "oracle", "--out", str(out)],
        "demo": ["demo", "--out", str(out)],
        "tasks": ["tasks", "procedural", "--n", "1", "--out", str(out)],
        "score": ["score", str(EXAMPLES / "answers.jsonl"), str(EXAMPLES / "tasks.jsonl"), "--out", str(out)],
        "questions-build": ["questions", "build", "--n", "1", "--types", "depth", "--out", str(out)],
    }[cmd]


@pytest.mark.parametrize("cmd,under,msg", [
    ("eval", False, "is a file; name a folder"),
    ("eval", True, "is a file, not a folder"),
    ("demo", False, "is a file; name a folder"),
    ("demo", True, "is a file, not a folder"),
    ("tasks", True, "is a file, not a folder"),
    ("score", True, "is a file, not a folder"),
    ("questions-build", True, "is a file, not a folder"),
])
def test_unwritable_out_is_one_line_exit_2(cmd, under, msg, afile, capsys):
    if cmd in ("demo", "eval", "tasks", "questions-build") and not SIM:
        pytest.skip("needs the sim extra")
    out = afile / "sub" / "x.jsonl" if under else afile
    assert main(_argv(cmd, out)) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"--out {out}" in err and msg in err, err
    assert afile.read_text() == "not a folder\n"  # untouched


def test_a_folder_is_refused_where_a_file_is_wanted(tmp_path, capsys):
    d = tmp_path / "scores"
    d.mkdir()
    assert main(_argv("score", d)) == 2
    err = capsys.readouterr().err.strip()
    assert f"--out {d}: is a folder; name a file" in err and "\n" not in err
    assert list(d.iterdir()) == []


def test_run_store_refuses_a_file_and_a_path_under_a_file(afile):
    with pytest.raises(RunStoreError, match="is a file, not a run directory"):
        RunStore(afile, {"a": 1})
    with pytest.raises(RunStoreError, match="a part of the path is a file"):
        RunStore(afile / "run", {"a": 1})
    assert afile.read_text() == "not a folder\n"
