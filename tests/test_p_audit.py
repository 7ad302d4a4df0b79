"""Issue P, audited as a hostile user on the real command line: the cases the audit found still open on main.

``score --out`` (P 1): the scores file goes through the output rule (spatialact.outputs) like every other
command's output: a character device is written through and stays a device, a symbolic link is followed and stays
a link, a FIFO, a read-only file and a folder are refused in one line (exit 2) and left as they were; the default
scores file beside the answers by the same rule. Before, score_file's own temporary was renamed over whatever the
path named: ``--out /dev/null`` (as root) left a regular file of scores where the device was."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from spatialact.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def _score(out, capsys, *extra):
    argv = ["score", str(EXAMPLES / "answers.jsonl"), str(EXAMPLES / "tasks.jsonl"), "--no-progress", "--json",
            *extra]
    if out is not None:
        argv += ["--out", str(out)]
    rc = main(argv)
    return rc, capsys.readouterr()


def _refused(out, capsys, *words):
    rc, cap = _score(out, capsys)
    assert rc == 2 and len(cap.err.strip().splitlines()) == 1 and "Traceback" not in cap.err, cap.err
    assert all(w in cap.err for w in words), cap.err


@pytest.mark.skipif(not ROOT, reason="making a device node needs root")
def test_score_out_writes_through_a_character_device(tmp_path, capsys):
    dev = tmp_path / "null"
    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    rc, cap = _score(dev, capsys)
    assert rc == 0, cap.err
    assert stat.S_ISCHR(os.lstat(dev).st_mode) and os.lstat(dev).st_rdev == os.makedev(1, 3)
    assert os.listdir(tmp_path) == ["null"]  # no temporary left beside it
    (tmp_path / "link").symlink_to("null")
    assert _score(tmp_path / "link", capsys)[0] == 0
    assert (tmp_path / "link").is_symlink() and stat.S_ISCHR(os.lstat(dev).st_mode)


def test_score_out_follows_a_link_and_keeps_it(tmp_path, capsys):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "scores.jsonl"
    target.write_text("old\n")
    link = tmp_path / "scores.jsonl"
    link.symlink_to(target)
    rc, cap = _score(link, capsys)
    assert rc == 0, cap.err
    assert link.is_symlink() and os.readlink(link) == str(target)
    n_answers = sum(1 for line in (EXAMPLES / "answers.jsonl").read_text().splitlines() if line.strip())
    assert len(target.read_text().splitlines()) == n_answers
    assert sorted(os.listdir(tmp_path / "real")) == ["scores.jsonl"] and sorted(os.listdir(tmp_path)) == [
        "real", "scores.jsonl"]
    assert json.loads(cap.out)["out"] == str(link)  # the name given, not the temporary written


def test_score_out_refuses_fifo_read_only_and_folder(tmp_path, capsys):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    _refused(fifo, capsys, "--out", "FIFO")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    ro = tmp_path / "ro.jsonl"
    ro.write_text("keep\n")
    ro.chmod(0o444)
    _refused(ro, capsys, "--out", "read-only")  # by its permission bits, root included
    assert ro.read_text() == "keep\n" and stat.S_IMODE(os.lstat(ro).st_mode) == 0o444
    (tmp_path / "dir").mkdir()
    _refused(tmp_path / "dir", capsys, "--out", "folder")
    assert sorted(os.listdir(tmp_path)) == ["dir", "fifo", "ro.jsonl"]


def test_score_default_scores_file_by_the_rule(tmp_path, capsys):
    answers = tmp_path / "a.jsonl"
    answers.write_bytes((EXAMPLES / "answers.jsonl").read_bytes())
    fifo = tmp_path / "a.scores.jsonl"
    os.mkfifo(fifo)
    rc = main(["score", str(answers), str(EXAMPLES / "tasks.jsonl"), "--no-progress", "--json"])
    err = capsys.readouterr().err
    assert rc == 2 and "scores file" in err and "FIFO" in err and len(err.strip().splitlines()) == 1, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
