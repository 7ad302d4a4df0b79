"""The geometric baseline on two PyBullet renders of a textured scene with a known camera motion."""

from __future__ import annotations

import math

import numpy as np
import pytest

from _fabricate import look_pose, make_task
from spatialact import geometry
from spatialact.agents import make_agent
from spatialact.agents.geometric import estimate_motion

pb = pytest.importorskip("pybullet")
cv2 = pytest.importorskip("cv2")

W, H, FOV = 192, 144, 60.0
NEAR, FAR = 0.05, 20.0


def _texture(path, seed):
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)
    img = cv2.resize(small, (256, 256), interpolation=cv2.INTER_NEAREST)
    cv2.imwrite(str(path), img)
    return str(path)


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    d = tmp_path_factory.mktemp("tex")
    cid = pb.connect(pb.DIRECT)
    boxes = [((4.0, 0.0, 1.5), (0.05, 3.0, 1.5)),   # back wall
             ((2.2, -0.8, 0.5), (0.3, 0.3, 0.5)),
             ((2.8, 0.9, 0.8), (0.25, 0.4, 0.8)),
             ((1.8, 0.3, 0.2), (0.2, 0.2, 0.2)),
             ((3.0, 0.0, 0.05), (2.5, 3.0, 0.05))]  # floor slab
    for i, (pos, half) in enumerate(boxes):
        vis = pb.createVisualShape(pb.GEOM_BOX, halfExtents=half, physicsClientId=cid)
        body = pb.createMultiBody(baseMass=0, baseVisualShapeIndex=vis, basePosition=pos, physicsClientId=cid)
        tex = pb.loadTexture(_texture(d / f"t{i}.png", i), physicsClientId=cid)
        pb.changeVisualShape(body, -1, textureUniqueId=tex, rgbaColor=[1, 1, 1, 1], physicsClientId=cid)
    yield cid
    pb.disconnect(cid)


def _render(cid, T):
    """RGB (H, W, 3) uint8 and z-depth (H, W) metres from the C2W pose T (OpenCV camera axes)."""
    T_gl = T @ geometry.OPENGL_TO_OPENCV
    view = np.linalg.inv(T_gl).T.reshape(-1).tolist()  # column-major
    proj = pb.computeProjectionMatrixFOV(FOV, W / H, NEAR, FAR)
    _, _, rgba, zbuf, _ = pb.getCameraImage(W, H, view, proj, renderer=pb.ER_TINY_RENDERER, physicsClientId=cid)
    rgb = np.asarray(rgba, dtype=np.uint8).reshape(H, W, 4)[..., :3]
    z = np.asarray(zbuf, dtype=np.float64).reshape(H, W)
    depth = FAR * NEAR / (FAR - (FAR - NEAR) * z)
    return rgb, depth.astype(np.float32)


def _K():
    f = 0.5 * H / math.tan(math.radians(FOV) / 2)
    return np.array([[f, 0, W / 2], [0, f, H / 2], [0, 0, 1.0]])


MOTIONS = [np.array([0.25, 0.0, 0.30, 0.0, math.radians(4), 0.0]),      # truck right + dolly in + pan right
           np.array([-0.30, -0.10, 0.10, math.radians(-3), 0.0, 0.0]),  # truck left, pedestal up, tilt down
           np.array([0.0, 0.0, 0.45, 0.0, math.radians(-6), math.radians(3)])]


@pytest.mark.parametrize("motion", MOTIONS)
def test_estimate_motion_recovers_direction_and_scale(scene, motion):
    T0 = look_pose([0.0, 0.0, 1.0])
    T1 = T0 @ geometry.motion_to_delta(motion)
    rgb0, depth0 = _render(scene, T0)
    rgb1, _ = _render(scene, T1)
    assert rgb0.std() > 20  # textured, not blank
    delta, info = estimate_motion(rgb0, rgb1, _K(), depth0)
    assert delta is not None, info
    est = geometry.delta_to_motion(delta)
    cos = est[:3] @ motion[:3] / (np.linalg.norm(est[:3]) * np.linalg.norm(motion[:3]))
    assert cos > 0.8, (cos, est, info)
    assert 0.5 < np.linalg.norm(est[:3]) / np.linalg.norm(motion[:3]) < 2.0, (est, info)
    assert float(geometry.geodesic_angle(delta[:3, :3], geometry.motion_to_delta(motion)[:3, :3])) < math.radians(2.0)


def test_geometric_agent_answers_counts_toward_the_goal(scene):
    T0 = look_pose([0.0, 0.0, 1.0])
    motion = MOTIONS[0]
    T1 = T0 @ geometry.motion_to_delta(motion)
    rgb0, depth0 = _render(scene, T0)
    rgb1, _ = _render(scene, T1)
    task = make_task(signed=[(4, 0, 5, 0, 1, 0)], start=T0).with_(goal_pose=T1)
    agent = make_agent("geometric")
    agent.reset(task, mode="one-shot")
    turn = agent.act({"rgb": rgb0, "goal_rgb": rgb1, "depth": depth0, "intrinsics": _K(), "mode": "one-shot"})
    assert turn.parse.ok and turn.error is None
    pred = turn.parse.sequence
    pred_t = pred.to_poses(T0)[-1][:3, 3] - T0[:3, 3]
    true_t = T1[:3, 3] - T0[:3, 3]
    cos = pred_t @ true_t / (np.linalg.norm(pred_t) * np.linalg.norm(true_t))
    assert cos > 0.8, (cos, turn.info)
    # integer counts with the task's sizes, truck right and dolly in both positive
    c = pred.steps[0].signed_counts()
    assert c[0] > 0 and c[2] > 0
    # closed loop: one capped step
    turn = agent.act({"rgb": rgb0, "goal_rgb": rgb1, "depth": depth0, "intrinsics": _K(), "mode": "closed-loop"})
    assert len(turn.parse.sequence) == 1


def test_geometric_falls_back_to_stay_on_featureless_images():
    task = make_task()
    agent = make_agent("geometric")
    agent.reset(task)
    flat = np.full((64, 64, 3), 128, np.uint8)
    turn = agent.act({"rgb": flat, "goal_rgb": flat, "mode": "one-shot"})
    assert turn.parse.ok and all(s.is_stay() for s in turn.parse.sequence)
    assert "few" in turn.info["reason"]
