"""End-to-end smoke checks of the command line (the detailed tests live beside each module's tests)."""

import subprocess
import sys


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "spatialact.cli.main", *args], capture_output=True, text=True)


def test_help_lists_subcommands():
    r = _cli("--help")
    assert r.returncode == 0
    assert "parse" in r.stdout and "demo" in r.stdout


def test_parse_prints_motion_and_repairs():
    r = _cli("parse", '{"actions": ["A", "Q"], "step_nums": [2, -1]}')
    assert r.returncode == 0, r.stderr
    assert "Truck Left×2" in r.stdout and "Pedestal Up×1" in r.stdout
    assert "-0.1252" in r.stdout  # 2 × 0.0626 m to the left
    assert "negative count" in r.stdout


def test_parse_unusable_answer_exits_1():
    r = _cli("parse", "no json at all")
    assert r.returncode == 1
    assert "no usable step" in r.stdout
