"""Depth served to agents comes from the camera that rendered ``rgb``.

In GripperManip / HandManip the ``rgb`` observation is the static exterior camera, while ``pose`` is the end effector
or wrist; a depth image rendered from ``pose`` looks somewhere else entirely. Checked three ways: the table top's
pixels (by segmentation from the exterior camera), unprojected with the environment's K and ``camera_pose``, land
on the table plane; ``observation_depth()`` equals the ``depth`` observation; and the depth an agent receives in
a real closed-loop episode (``run_episode``, environment made without ``depth=True``) matches the exterior view."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pybullet")

from spatialact.envs import make_env  # noqa: E402
from spatialact.taskgen import procedural_tasks  # noqa: E402

SCENE = {"generator": "tabletop", "seed": 3}
W, H = 64, 48


def _unproject(depth, K, T, mask):
    v, u = np.nonzero(mask)
    z = depth[v, u].astype(np.float64)
    x = (u - K[0, 2]) / K[0, 0] * z
    y = (v - K[1, 2]) / K[1, 1] * z
    pts_cam = np.stack([x, y, z, np.ones_like(z)])
    return (T @ pts_cam)[:3].T


@pytest.mark.parametrize("kind", ["manip", "hand", "nav"])
def test_depth_lands_on_the_surface_rgb_shows(kind):
    scene = SCENE if kind != "nav" else {"generator": "room", "seed": 1}
    env = make_env(kind, width=W, height=H, depth=True, scene=scene, wrap=False)
    try:
        obs, info = env.reset(seed=0)
        T = env.camera_pose
        if kind == "nav":
            assert np.array_equal(T, info["pose"])
        else:  # the exterior camera, not the end effector / wrist
            assert np.array_equal(T, env.scene.exterior_camera)
            assert np.linalg.norm(T[:3, 3] - info["pose"][:3, 3]) > 0.3
        assert np.array_equal(env.observation_depth(), obs["depth"])
        assert np.array_equal(env.render_view(T), obs["rgb"])  # rgb is the view from camera_pose
        seg = env.render_segmentation(T)
        if kind == "nav":
            # The room's floor is a slab whose top is the plane z = 0.
            mask = seg == env.scene.bodies["floor"]
            assert mask.sum() > 50
            pts = _unproject(obs["depth"], env.intrinsics, T, mask)
            assert (np.abs(pts[:, 2]) < 0.01).mean() > 0.9, np.percentile(pts[:, 2], [5, 50, 95])
            return
        mask = seg == env.scene.bodies["table"]
        assert mask.sum() > 100
        pts = _unproject(obs["depth"], env.intrinsics, T, mask)
        # The table top is the plane z = table_z (the slab's sides are a few pixels at most).
        on_top = np.abs(pts[:, 2] - env.scene.table_z) < 0.005
        assert on_top.mean() > 0.9, np.percentile(pts[:, 2], [5, 50, 95])
        # A step moves the arm or hand (3 units of truck); the camera, and the table's depth, stay where they were.
        obs2, *_ = env.step(np.array([env.cap + 3] + [env.cap] * 5 + [2]))
        assert np.array_equal(env.camera_pose, T)
        assert (np.abs(obs2["depth"][mask] - obs["depth"][mask]) < 1e-4).mean() > 0.8
    finally:
        env.close()


class _Recorder:
    """An agent that answers like the oracle and keeps every observation it was given."""

    def __init__(self):
        from spatialact.agents import make_agent

        self.inner = make_agent("oracle")
        self.name = "recorder"
        self.seen = []

    def reset(self, task, **kw):
        self.inner.reset(task, **kw)

    def act(self, observation):
        self.seen.append({k: observation.get(k) for k in ("rgb", "depth", "intrinsics", "pose")})
        return self.inner.act(observation)

    def describe(self):
        return {"name": self.name}


@pytest.mark.parametrize("kind", ["manip", "hand"])
def test_agents_get_depth_from_the_rgb_camera_in_an_episode(kind):
    from spatialact.evaluation.episode import EpisodeConfig, run_episode

    task = procedural_tasks(kind, 1, seed=4, n_steps=(2, 2))[0]
    agent = _Recorder()
    cfg = EpisodeConfig(mode="closed-loop", renderer="tiny", width=W, height=H, max_steps=4)
    record, _ = run_episode(task, agent, cfg)
    assert record.get("error") is None, record.get("error")
    assert len(agent.seen) >= 2
    # The same task in a fresh environment: the first observation's depth is exactly the exterior camera's.
    env = make_env(kind, task=task, width=W, height=H, wrap=False)
    try:
        env.reset(seed=0, options={"task": task})
        d0 = env.observation_depth()
        rgb0 = env.render_view(env.camera_pose)
        assert np.array_equal(agent.seen[0]["rgb"], rgb0)
        assert np.abs(agent.seen[0]["depth"] - d0).max() < 1e-4
        # Depth from the end effector / wrist pose (what agents used to get) is another image altogether.
        d_ee = env.render_depth(env.pose)
        assert (np.abs(d_ee - d0) > 0.05).mean() > 0.5
    finally:
        env.close()
    # Later turns: the camera stays put, so most of the view keeps its depth while the arm or hand moves.
    for obs in agent.seen[1:]:
        assert obs["depth"].shape == (H, W)
        assert (np.abs(obs["depth"] - d0) < 1e-3).mean() > 0.7
