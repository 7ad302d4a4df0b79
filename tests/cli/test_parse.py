"""`spatialact parse`, run as a user runs it (a subprocess), plus in-process calls for the quick cases."""

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from spatialact.cli.main import main

VENV_BIN = Path(sys.executable).parent / "spatialact"


def cli(*args, stdin=None, entry="module"):
    cmd = ([str(VENV_BIN)] if entry == "script" else [sys.executable, "-m", "spatialact.cli.main"])
    return subprocess.run([*cmd, "parse", *args], capture_output=True, text=True, input=stdin, timeout=60)


@pytest.mark.skipif(not VENV_BIN.exists() and shutil.which("spatialact") is None, reason="console script absent")
def test_console_script_table_output():
    answer = ('{"step_1": {"actions": ["W", "→"], "step_nums": [5, 2]}, '
              '"step_2": {"actions": ["grab"], "step_nums": [2]}}')
    r = cli(answer, "--kind", "manip", entry="script" if VENV_BIN.exists() else "module")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "format: stepped   steps: 2   sizes: 0.02 m, 0.0872665 rad   cap: 10" in out
    assert "Dolly In×5, Pan Right×2" in out
    # 5 × 0.02 m forward and 2 × 5° pan: the table and the printed Δ agree with the hand-computed values
    assert "0.1000" in out and "0.1745" in out
    assert "0.9848" in out and "0.1736" in out  # cos 10°, sin 10° in Δ step 1
    assert "repairs:" in out and "step_2.actions[0]: Grab sets the gripper; its step_num 2 is ignored" in out
    assert r.stderr == ""


def test_json_output_is_machine_readable():
    r = cli('```json\n{"actions": ["Truck Left", "Pedestal Up"], "step_nums": [1, 4]}\n```', "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["ok"] is True and d["error"] is None and d["format"] == "flat" and d["repairs"] == []
    assert d["steps"] == [{"step": 1, "actions": {"Truck Left": 1, "Pedestal Up": 4}, "gripper": None,
                           "motion": pytest.approx([-0.0626, -4 * 0.0626, 0.0, 0.0, 0.0, 0.0])}]
    D = np.array(d["deltas"])
    assert D.shape == (1, 4, 4)
    np.testing.assert_allclose(D[0, :3, 3], [-0.0626, -0.2504, 0.0])
    np.testing.assert_allclose(D[0, :3, :3], np.eye(3))


def test_file_and_stdin_input(tmp_path):
    f = tmp_path / "answer.txt"
    f.write_text('<think>hmm</think>{"actions": ["Pan Left"], "step_nums": ["2"]}', encoding="utf-8")
    r = cli(str(f), "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["steps"][0]["actions"] == {"Pan Left": 2}
    assert d["steps"][0]["motion"][4] == pytest.approx(-2 * 0.0725)
    assert d["repairs"] == ["answer.actions[0]: numeric string '2' read as 2"]
    r = cli("-", "--json", stdin='[[0.01, 0, 0, 0, 0, 0, 1]]')
    assert r.returncode == 0 and json.loads(r.stdout)["format"] == "vector"


def test_unreadable_file_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "answer.json"
    bad.write_bytes(b"\xff\xfe{\x00")
    r = cli(str(bad))
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("spatialact parse: error: ")
    assert str(bad) in lines[0] and "not UTF-8" in lines[0]
    assert "Traceback" not in r.stderr


def test_bad_paths_and_arguments_exit_2(tmp_path, capsys):
    cases = [
        ([str(tmp_path)], "is a directory"),
        ([str(tmp_path / "missing.json")], "no such answer file"),
        (["answers/run1.txt"], "no such answer file"),
        (["--cap", "-1", "{}"], "--cap must be a non-negative integer"),
        (["--translation", "0", "{}"], "StepSizes.translation must be a positive finite number"),
    ]
    for args, msg in cases:
        assert main(["parse", *args]) == 2, args
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and msg in err[0], (args, err)


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else True, reason="root reads any file")
def test_permission_denied_exits_2(tmp_path, capsys):
    f = tmp_path / "answer.txt"
    f.write_text("{}")
    f.chmod(0)
    try:
        assert main(["parse", str(f)]) == 2
        assert "cannot read" in capsys.readouterr().err
    finally:
        f.chmod(0o600)


def test_prose_that_is_not_a_path_is_parsed_as_an_answer(capsys):
    # no JSON at all: an unusable answer (exit 1), not a missing file (exit 2)
    for text in ("I cannot tell.", "move forward 3.5", "left/right is unclear to me"):
        assert main(["parse", text]) == 1, text
        assert "no usable step" in capsys.readouterr().out


def test_strict_rejection_exits_1_and_names_where(capsys):
    assert main(["parse", "--strict", '{"actions": ["W"], "step_nums": [-2]}']) == 1
    assert capsys.readouterr().out.strip() == (
        "rejected (strict): answer.actions[0]: negative count -2 read as 2 × Dolly Out")
    assert main(["parse", "--strict", "--json", '{"step_1": {"actions": ["fly"]}}']) == 1
    d = json.loads(capsys.readouterr().out)
    assert d == {"ok": False, "error": "step_1.actions[0]: unknown action 'fly' dropped"}
    assert main(["parse", "--strict", '{"actions": ["W"], "step_nums": [2]}']) == 0


def test_unusable_answer_json_exits_1(capsys):
    assert main(["parse", "--json", "no json here"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert d["ok"] is False and d["error"] == "$: no JSON object found in the answer"
    assert d["steps"] == [] and d["deltas"] == []


def test_sizes_and_cap_options(capsys):
    assert main(["parse", "--json", "--translation", "0.5", "--rotation", str(math.pi / 2), "--cap", "3",
                 '{"actions": ["W", "→"], "step_nums": [5, 1]}']) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["steps"][0]["actions"] == {"Dolly In": 3, "Pan Right": 1}
    assert d["repairs"] == ["answer: Dolly In × 5 clamped to the cap 3"]
    D = np.array(d["deltas"][0])
    np.testing.assert_allclose(D, [[0, 0, 1, 0], [0, 1, 0, 0], [-1, 0, 0, 1.5], [0, 0, 0, 1]], atol=1e-15)


def test_help_uses_module_docstring():
    r = subprocess.run([sys.executable, "-m", "spatialact.cli.main", "parse", "--help"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0
    assert "Show what a model answer parses to" in r.stdout and "--strict" in r.stdout
