"""Smaller hardening of the command line: `tasks from-trajectory` leaves nothing behind when a frame does
not decode; `extract` refuses unit steps that are not positive (or a rotation step over π) in one line and shows an
instruction's control characters escaped in its table while --json keeps them exact."""

from __future__ import annotations

import json

import numpy as np
import pytest

from spatialact.cli.main import main


def _camera_path(tmp_path, images=None, instruction=None, n=30):
    poses = []
    for k in range(n):
        T = np.eye(4)
        T[0, 3] = 0.05 * k
        poses.append(T.tolist())
    rec = {"c2w": poses, "fps": 10}
    if images is not None:
        rec["images"] = images
    if instruction is not None:
        rec["instruction"] = instruction
    p = tmp_path / "traj.json"
    p.write_text(json.dumps(rec))
    return p


@pytest.mark.parametrize("existing", [False, True])
def test_from_trajectory_with_a_bad_image_leaves_nothing(tmp_path, capsys, existing):
    (tmp_path / "bad.png").write_text("not a png")
    traj = _camera_path(tmp_path, images=["bad.png"] * 30)
    out = tmp_path / "out" / "t.jsonl"
    if existing:  # an image folder that was there keeps what it held, and only that
        (tmp_path / "out" / "t_images").mkdir(parents=True)
        (tmp_path / "out" / "t_images" / "mine.png").write_bytes(b"x")
    rc = main(["tasks", "from-trajectory", str(traj), "--out", str(out), "--no-scene"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "bad.png" in err and "cannot decode" in err
    if existing:
        assert sorted(p.name for p in (tmp_path / "out" / "t_images").iterdir()) == ["mine.png"]
        assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["t_images"]
    else:
        assert not (tmp_path / "out").exists()  # neither the image folder nor the folder made for the task file


@pytest.mark.parametrize("argv, message", [
    (["--translation", "0"], "argument --translation: 0 m is not more than 0 and at most 10 m"),
    (["--translation", "-0.1"], "is not more than 0"),
    (["--translation", "11"], "at most 10 m"),
    (["--translation", "nan"], "is not more than 0"),
    (["--rotation", "0"], "argument --rotation: 0 rad is not more than 0 and at most π rad"),
    (["--rotation", "4"], "at most π rad"),
    (["--rotation", "1e300"], "at most π rad"),
    (["--rotation", "inf"], "at most π rad"),
    (["--rotation", "x"], "'x' is not a number"),
    (["--cap", "0"], "argument --cap: 0 is not between 1 and 100"),
    (["--cap", "101"], "argument --cap: 101 is not between 1 and 100"),
])
def test_extract_refuses_unit_steps_the_schema_does_not_allow(tmp_path, capsys, argv, message):
    traj = _camera_path(tmp_path)
    with pytest.raises(SystemExit) as e:  # a usage error: argparse's one line, exit 2
        main(["extract", str(traj), *argv])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_extract_takes_the_unit_steps_it_is_given(tmp_path, capsys):
    """A given step is used, the other one keeps the kind's default (0 no longer stands for the default)."""
    from spatialact.action_space import StepSizes

    traj = _camera_path(tmp_path)
    assert main(["extract", str(traj), "--translation", "0.1", "--json"]) == 0
    js = json.loads(capsys.readouterr().out)
    nav = StepSizes.navigation()
    assert js["sizes"]["translation"] == 0.1 and js["sizes"]["rotation"] == pytest.approx(nav.rotation)
    assert main(["extract", str(traj), "--rotation", "3.141592653589793", "--json"]) == 0
    js = json.loads(capsys.readouterr().out)
    assert js["sizes"]["rotation"] == pytest.approx(np.pi) and js["sizes"]["translation"] == nav.translation


def test_extract_escapes_control_characters_in_the_table_and_keeps_json_exact(tmp_path, capsys):
    nasty = "pick\x1b[2J\x1b]0;owned\x07 up\nthe\u202ecup\x7f"
    traj = _camera_path(tmp_path, instruction=nasty)
    assert main(["extract", str(traj)]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("instruction: "))
    assert line == "instruction: pick\\x1b[2J\\x1b]0;owned\\x07 up\\nthe\\u202ecup\\x7f"
    assert all(c.isprintable() for x in out.splitlines() for c in x)
    assert main(["extract", str(traj), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["instruction"] == nasty
