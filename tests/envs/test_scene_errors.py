"""Mesh scenes a user names that cannot be loaded (a missing file, a folder, an .fbx, a garbage .glb, a truncated
.ply, a file without triangles) are refused in one line starting ``scene.mesh:``: from ``make_env`` and through the
CLI (``spatialact prompt`` renders a task's scene on demand): exit 2, one line on stderr, no traceback."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("pybullet")
pytest.importorskip("trimesh")

from spatialact.envs import make_env  # noqa: E402
from spatialact.envs.scenes import normalise_scene_spec  # noqa: E402


def _fbx(tmp):
    p = tmp / "scene.fbx"
    p.write_bytes(b"Kaydara FBX Binary  \x00\x1a\x00" + bytes(64))
    return p, r"scene\.fbx': format \.fbx is not supported \(use \.glb, \.gltf, \.obj, \.ply, \.stl, \.off"


def _garbage_glb(tmp):
    p = tmp / "scene.glb"
    p.write_bytes(b"garbage, not glTF")
    return p, r"scene\.glb' is not a readable \.glb file \("


def _truncated_ply(tmp):
    p = tmp / "scene.ply"
    p.write_text("ply\nformat ascii 1.0\nelement vertex 3\n")
    return p, r"scene\.ply' is not a readable \.ply file \("


def _no_faces_obj(tmp):
    p = tmp / "scene.obj"
    p.write_text("v 0 0 0\nv 1 0 0\n")
    return p, r"scene\.obj' holds no triangle mesh"


def _missing(tmp):
    return tmp / "nope.glb", r"scene\.mesh: no such file '.*nope\.glb'"


def _folder(tmp):
    p = tmp / "rooms.glb"
    p.mkdir()
    return p, r"rooms\.glb' is not a file"


CASES = [_fbx, _garbage_glb, _truncated_ply, _no_faces_obj, _missing, _folder]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__.lstrip("_") for c in CASES])
def test_make_env_refuses_unloadable_mesh_in_one_line(tmp_path, case):
    path, message = case(tmp_path)
    env = None
    with pytest.raises((ValueError, FileNotFoundError), match=message) as ei:
        env = make_env("nav", scene={"generator": "mesh", "mesh": str(path)}, renderer="tiny", width=32, height=32)
        env.reset(seed=0)
    if env is not None:
        env.close()
    text = str(ei.value)
    assert text.startswith("scene.mesh:") and "\n" not in text


def test_spec_errors_are_named():
    with pytest.raises(ValueError, match=r"scene\.mesh: 'a\.fbx': format \.fbx is not supported"):
        normalise_scene_spec({"generator": "mesh", "mesh": "a.fbx"})
    with pytest.raises(ValueError, match=r"scene\.seed must be an integer, got 'abc'"):
        normalise_scene_spec({"generator": "room", "seed": "abc"})
    with pytest.raises(ValueError, match=r"scene\.params must be an object, got list"):
        normalise_scene_spec({"generator": "room", "params": [1, 2]})


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "spatialact.cli.main", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def _task_file_with_mesh(tmp_path, case):
    """m.jsonl: a task written by `spatialact tasks procedural`, its scene pointed at the mesh a user names;
    returns (the task record, the message the mesh's refusal matches)."""
    r = _cli("tasks", "procedural", "--kind", "nav", "--n", "1", "--out", "t.jsonl", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    path, message = case(tmp_path)
    rec = json.loads((tmp_path / "t.jsonl").read_text().splitlines()[0])
    rec["scene"] = {"generator": "mesh", "mesh": str(path), "seed": 0}
    (tmp_path / "m.jsonl").write_text(json.dumps(rec) + "\n")
    return rec, message


@pytest.mark.parametrize("case", [_fbx, _garbage_glb, _truncated_ply])
def test_prompt_cli_on_a_task_with_an_unloadable_mesh(tmp_path, case):
    rec, message = _task_file_with_mesh(tmp_path, case)
    r = _cli("prompt", "--tasks", "m.jsonl", rec["id"], "--renderer", "tiny", "--out", "p", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("spatialact prompt: error: scene.mesh:")
    import re

    assert re.search(message, lines[0]), lines[0]


@pytest.mark.parametrize("case", [_garbage_glb, _truncated_ply, _no_faces_obj])
def test_eval_refuses_a_task_with_an_unloadable_mesh_before_the_run(tmp_path, case):
    """Not a failed episode in a new run directory (exit 1): refused like a missing mesh, in one line, nothing
    written."""
    rec, message = _task_file_with_mesh(tmp_path, case)
    r = _cli("eval", "--tasks", "m.jsonl", "--agent", "oracle", "--renderer", "tiny", "--out", "run", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"spatialact eval: error: task {rec['id']!r}: scene.mesh:")
    import re

    assert re.search(message, lines[0]), lines[0]
    assert not (tmp_path / "run").exists()
