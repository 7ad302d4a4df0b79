"""The command line behaves the same way for the same situation: the demo's two forms keep their own reports, a
dangling link given as an output folder is created as that folder by every command, a questions file is refused
a character device up front (its images have nowhere to go), and the demo's tables carry a legend."""

import os
import subprocess
import sys

import pytest


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "spatialact.cli.main", *args], capture_output=True, text=True,
                          cwd=cwd)


def test_plain_demo_keeps_the_full_demos_report(tmp_path):
    out = tmp_path / "demo"
    full = _cli("demo", "--agents", "stay", "--out", str(out), "--no-progress")
    assert full.returncode == 0, full.stderr
    report = out / "report" / "report.md"
    before = report.read_text(encoding="utf-8")
    assert "## Diagnostics" in before
    plain = _cli("demo", "--agents", "stay", "--no-diagnostics", "--out", str(out), "--no-progress")
    assert plain.returncode == 0, plain.stderr
    assert report.read_text(encoding="utf-8") == before  # the full demo's report, Diagnostics and all, stays
    plain_md = (out / "report-plain" / "report.md").read_text(encoding="utf-8")
    assert plain_md != before and "stay" in plain_md
    assert str(out / "report-plain" / "report.html") in plain.stdout
    h = _cli("demo", "--help")
    assert "report-plain" in h.stdout
