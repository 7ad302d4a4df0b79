"""Smaller hardening of the command line (issue P): `tasks from-trajectory` leaves nothing behind when a frame does
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
