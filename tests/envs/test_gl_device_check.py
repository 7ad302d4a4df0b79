"""The GPU check on this CPU: benchmarks/device_check.sh run draws the render benchmark's scene from a dump with gl
(no PyBullet, gymnasium or Pillow imported: the machine it is for lacks them) and runs the torch batch scorer
against numpy — the same code path a GPU machine runs, on llvmpipe and torch's CPU device. And scene dumps:
drawn from a dump, a scene is the world's, pixel for pixel, frame by frame."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _gl_or_skip():
    pytest.importorskip("pybullet")
    from spatialact.envs.gl import gl_available

    ok, why = gl_available()
    if not ok:
        pytest.skip(f"the gl renderer cannot start here: {why}")


@pytest.fixture(scope="module")
def dump_dir(tmp_path_factory):
    _gl_or_skip()
    d = tmp_path_factory.mktemp("device")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "dump_scene.py"), "dump", "--out",
                        str(d / "scene.npz"), "--frames", "4", "--views", "8", "--refs", "3"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    info = json.loads(r.stdout.strip().splitlines()[-1])
    assert info["frames"] == 4 and info["views"] == 8 and info["bytes"] == (d / "scene.npz").stat().st_size
    assert info["bytes"] < 2 * 1024 * 1024  # small enough to carry many times over in 64 MiB
    return d


def test_device_check_runs_the_dump_and_the_scorer_here(dump_dir):
    env = dict(os.environ, DEVICE_DIR=str(dump_dir), DEVICE_CHECK_QUICK="1", PYTHON=sys.executable)
    env.pop("PYTHONPATH", None)  # the script sets its own
    r = subprocess.run(["bash", str(ROOT / "benchmarks" / "device_check.sh"), "run"], capture_output=True,
                       text=True, timeout=600, env=env, cwd="/")
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-2000:])
    lines = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    render = next(x for x in lines if "images_per_s" in x)
    assert render["K"] == 16 and render["images_per_s"] > 0 and render["size"] == "128x128"
    assert render["simulator_modules_loaded"] == []  # drawn without PyBullet, gymnasium or Pillow
    ref = render["against_references"]
    assert ref["views"] == 3 and ref["equal"] is True  # the same GL that made the references: bit for bit
    score = next(x for x in lines if "steps" in x)
    if "torch_steps_per_s" not in score:
        pytest.skip(f"torch: {score.get('torch')}")
    assert score["steps"] == 20000 and score["equal_within_1e-9"] is True
    assert set(score["max_abs_diff"]) >= {"s_d", "s_theta", "s_step", "s_rot", "s_grip", "flag"}


def test_a_dumped_scene_draws_as_its_world_frame_by_frame(tmp_path):
    """Recorded at two arm poses, the dump's frames 0 and 1 are the world's images at those poses, bit for bit
    (RGB, depth, segmentation), and they differ from each other (the arm moved)."""
    _gl_or_skip()
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from bench_render import make_world, poses
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    from spatialact.envs.gl import View
    from spatialact.envs.gl.dump import DumpedScene, SceneRecorder, load_dump
    from spatialact.envs.camera import CameraSpec

    world, info, robot = make_world("gl")
    try:
        cam = CameraSpec(96, 72, 60.0)
        views = poses(info, 3, seed=2)
        rec = SceneRecorder(world, 96, 72)
        want = []
        for q in (0.0, 0.9):
            world.p.resetJointState(robot, 3, -1.5 + q, physicsClientId=world.client)
            rec.frame()
            want.append(world.render_batch(views, cam, depth=True, segmentation=True))
        rec.save(tmp_path / "s.npz", views, 60.0, extra={"note": np.arange(3)})
        d = load_dump(tmp_path / "s.npz")
        assert (d.width, d.height, d.n_frames, len(d.views)) == (96, 72, 2, 3)
        assert np.array_equal(d.extra["note"], np.arange(3)) and np.array_equal(d.views, np.asarray(views))
        r = world.gl.renderer
        scene = DumpedScene(r, d)
        for i in (1, 0, 1):  # back and forth: the matrices and the shadow map follow the frame
            scene.set_frame(i)
            got = r.render([View(scene, T, cam) for T in d.views], rgb=True, depth=True, segmentation=True)
            for a, b in zip(got, want[i]):
                assert np.array_equal(a, b)
        assert not np.array_equal(want[0][0], want[1][0])
        with pytest.raises(IndexError, match="frame 2 is not in the dump"):
            scene.set_frame(2)
        scene.release()
    finally:
        world.close()


def test_a_file_that_is_not_a_dump_is_refused(tmp_path):
    from spatialact.envs.gl.dump import load_dump

    meta = np.frombuffer(json.dumps({"format": "something else"}).encode(), np.uint8)
    np.savez(tmp_path / "x.npz", meta=meta)
    with pytest.raises(ValueError, match="not a gl scene dump"):
        load_dump(tmp_path / "x.npz")
