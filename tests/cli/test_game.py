"""`spatialact game record`: --help, a short recording, and refusals in one line (exit 2) before any work,
vizdoom missing included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).parents[2] / "src")


def _cli(*args, cwd=None, pre: str = ""):
    code = pre + "import sys\nfrom spatialact.cli.main import main\nsys.exit(main(sys.argv[1:]))\n"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": SRC})


def _one_line_refusal(r, *needles):
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def test_help_explains_the_game_commands():
    r = _cli("game", "--help")
    assert r.returncode == 0 and "usage: spatialact game" in r.stdout and "record" in r.stdout
    assert "1/32 m" in r.stdout and "pip install 'spatialact[game]'" in r.stdout
    r = _cli("game", "record", "--help")
    assert r.returncode == 0
    for opt in ("--map", "--seconds", "--seed", "--wad", "--out", "--resolution"):
        assert opt in r.stdout


def test_without_vizdoom_every_game_command_says_how_to_install_it(tmp_path):
    block = "import sys\nsys.modules['vizdoom'] = None\n"
    r = _cli("game", "record", "--out", str(tmp_path / "o"), pre=block)
    _one_line_refusal(r, "vizdoom", "pip install 'spatialact[game]'")
    assert not (tmp_path / "o").exists()


def test_bad_options_are_refused_in_one_line_before_any_work(tmp_path):
    pytest.importorskip("vizdoom")
    out = str(tmp_path / "o")
    _one_line_refusal(_cli("game", "record", "--out", out, "--seconds", "0"), "--seconds")
    _one_line_refusal(_cli("game", "record", "--out", out, "--seconds", "nan"), "--seconds")
    _one_line_refusal(_cli("game", "record", "--out", out, "--seconds", "1e9"), "--seconds")
    _one_line_refusal(_cli("game", "record", "--out", out, "--seed", "-1"), "--seed")
    _one_line_refusal(_cli("game", "record", "--out", out, "--resolution", "333x222"), "--resolution")
    _one_line_refusal(_cli("game", "record", "--out", out, "--map", "MAP99"), "no map 'MAP99'", "MAP32")
    _one_line_refusal(_cli("game", "record", "--out", out, "--wad", "freedoom1.wad", "--map", "MAP01"),
                      "no map 'MAP01'", "E1M1")
    _one_line_refusal(_cli("game", "record", "--out", out, "--wad", str(tmp_path / "none.wad")), "no such WAD")
    (tmp_path / "fake.wad").write_bytes(b"PK\x03\x04 not a wad at all")
    _one_line_refusal(_cli("game", "record", "--out", out, "--wad", str(tmp_path / "fake.wad")), "not a WAD file")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x.txt").write_text("keep me")
    _one_line_refusal(_cli("game", "record", "--out", str(tmp_path / "full")), "exists and is not empty")
    _one_line_refusal(_cli("game", "record", "--out", str(tmp_path / "fake.wad")), "is a file")
    _one_line_refusal(_cli("game", "record", "--out", str(tmp_path / "fake.wad" / "sub")), "is a file")
    _one_line_refusal(_cli("game", "record", "--out", "/proc/spatialact-no-such/out"), "cannot write")
    assert (tmp_path / "full" / "x.txt").read_text() == "keep me"
    assert not (tmp_path / "o").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fake.wad", "full"]  # no partial folder left


def test_record_writes_a_loadable_folder_and_nothing_in_the_working_directory(tmp_path):
    pytest.importorskip("vizdoom")
    work = tmp_path / "work"
    work.mkdir()
    out = tmp_path / "rec"
    r = _cli("game", "record", "--map", "map01", "--seconds", "0.5", "--seed", "7", "--resolution", "160x120",
             "--out", str(out), "--json", cwd=work)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["frames"] == 19 and summary["map"] == "MAP01" and summary["wad"] == "freedoom2.wad"
    assert len(summary["wad_sha256"]) == 64 and summary["seed"] == 7
    assert sorted(p.name for p in out.iterdir()) == ["depth", "meta.json", "poses.npz", "rgb.mp4"]
    assert list(work.iterdir()) == []  # vizdoom's ini and folder live in the cache
    from spatialact.trajectories import load_trajectory

    traj = load_trajectory(out)
    assert len(traj) == 19 and traj.meta["image_size"] == [160, 120]
    assert traj.frame(18).shape == (120, 160, 3)
