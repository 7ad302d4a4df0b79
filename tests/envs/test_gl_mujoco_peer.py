"""benchmarks/mujoco_peer.py draws the scene the gl renderer draws: the same triangles, link poses and camera.

MuJoCo shades with its own model, so colours are compared loosely; depth is a property of the geometry and the
camera alone, so it must agree with gl's to a millimetre on (nearly) every pixel — a wrong link frame, axis
convention, field of view or depth linearisation would move it by centimetres to metres."""

import os
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def peer_and_world():
    os.environ.setdefault("MUJOCO_GL", "egl")  # before mujoco is imported: no display here
    pytest.importorskip("mujoco")
    from spatialact.envs.gl import gl_available

    ok, why = gl_available()
    if not ok:
        pytest.skip(f"the gl renderer cannot start here: {why}")
    sys.path.insert(0, str(BENCH))
    try:
        import mujoco_peer
        from bench_render import make_world
    finally:
        sys.path.remove(str(BENCH))
    world, info, robot = make_world("gl")
    r = world.gl.renderer
    try:
        peer = mujoco_peer.MujocoPeer(world, 96, 80, 0, r.shadow_texels(r.face_budget(96, 80)), 60.0)
    except Exception as e:  # noqa: BLE001 - MuJoCo's EGL context may not start on every machine
        world.close()
        pytest.skip(f"MuJoCo cannot render here: {type(e).__name__}: {e}")
    yield peer, world, info, robot
    peer.close()
    world.close()


def test_depth_matches_gl_as_the_arm_moves(peer_and_world):
    from spatialact.envs.camera import CameraSpec

    peer, world, info, robot = peer_and_world
    sys.path.insert(0, str(BENCH))
    try:
        from bench_render import poses
    finally:
        sys.path.remove(str(BENCH))
    views = poses(info, 3, seed=1)
    cam = CameraSpec(96, 80, 60.0)
    for q in (0.0, 0.6):  # the arm moves between calls: the mocap bodies follow PyBullet's link frames
        world.p.resetJointState(robot, 2, q, physicsClientId=world.client)
        rgb, depth = world.render_batch(views, cam, depth=True)[:2]
        mrgb, mdepth = peer.render(views)
        assert mrgb.shape == rgb.shape == (3, 80, 96, 3) and mdepth.shape == depth.shape
        close = np.abs(mdepth - depth) < 1e-3
        assert close.mean() > 0.98, close.mean()
        # the same things where they are: mean colours within a shading difference, not another picture
        assert np.abs(mrgb.astype(float).mean((1, 2)) - rgb.astype(float).mean((1, 2))).max() < 60
    # and the arm really moved in both: depth changed between the two poses somewhere
    world.p.resetJointState(robot, 2, 0.0, physicsClientId=world.client)
    d0 = peer.render(views)[1]
    world.p.resetJointState(robot, 2, 0.6, physicsClientId=world.client)
    d1 = peer.render(views)[1]
    assert (np.abs(d1 - d0) > 0.01).mean() > 0.001
