"""The World protocol (spatialact.envs.world) on the real worlds: every PyBullet world starts a task, moves by a known
body-frame Δ to ``start @ Δ`` (kinematic worlds exactly, the Panda within its IK tolerance), says it was not
blocked, renders views of the shapes and types it declares with the camera it reports, and its depth, unprojected
with that camera's K and pose, lands on the body its segmentation names. An environment is the Gymnasium side over
a world: a new environment is one class naming a world (a world whose walls stop the camera shows ``info["blocked"]``
without any change to the base class)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pybullet")

from spatialact import geometry  # noqa: E402
from spatialact.action_space import Step, StepSizes  # noqa: E402
from spatialact.envs import make_env  # noqa: E402
from spatialact.envs.base import SpatialActEnv  # noqa: E402
from spatialact.envs.free_camera import FreeCameraWorld  # noqa: E402
from spatialact.envs.hand_world import HandWorld  # noqa: E402
from spatialact.envs.panda import REACH_TOLERANCE  # noqa: E402
from spatialact.envs.panda_world import PandaWorld  # noqa: E402
from spatialact.envs.pybullet_world import PyBulletWorld  # noqa: E402
from spatialact.envs.registry import KIND_TO_ID, env_class  # noqa: E402
from spatialact.envs.camera import CameraSpec  # noqa: E402
from spatialact.envs.world import World  # noqa: E402

W, H = 40, 30
# a known step: Dolly In 3 units, Truck Right 2, Pan Left 1 (translate, then rotate, in the body frame)
KNOWN = Step.from_signed([2, 0, 3, 0, -1, 0])


def test_world_is_an_abstract_protocol():
    with pytest.raises(TypeError, match="abstract"):
        World(CameraSpec(8, 8, 60.0))
    abstract = World.__abstractmethods__
    assert {"load_scene", "set_start", "move", "pose", "render_views", "sample_task", "gl_renderer"} <= abstract
    for cls in (FreeCameraWorld, PandaWorld, HandWorld):  # the real worlds implement every one of them
        assert issubclass(cls, World) and not cls.__abstractmethods__


def test_every_environment_names_a_world_of_its_kind():
    from spatialact.taskgen.procedural import TASK_VARIANTS
    from spatialact.vocab import KINDS

    assert tuple(KIND_TO_ID) == tuple(TASK_VARIANTS) == KINDS  # an environment and task variants for every kind
    assert SpatialActEnv.world_class is None  # the hook is declared on the base class, filled by each env
    for kind in KIND_TO_ID:
        cls = env_class(kind)
        assert issubclass(cls.world_class, PyBulletWorld) and cls.world_class.kind == cls.kind == kind
        assert cls.n_discrete == (15 if cls.world_class.has_gripper else 13)
        assert (kind == "nav") == (not cls.world_class.has_gripper)


@pytest.fixture(scope="module", params=["nav", "manip", "hand"])
def started(request):
    """An environment of each kind, its world started on a random task of a seeded scene."""
    kind = request.param
    env = make_env(kind, width=W, height=H, wrap=False)
    world = env.world
    world.load_scene({"generator": world.default_generator, "seed": 5})
    task = world.sample_task(np.random.default_rng(1), sizes=env.default_sizes, cap=env.cap, n_steps=(2, 2))
    world.configure_task(task)
    world.set_start(task)
    yield kind, env, world, task
    env.close()


def test_start_then_a_known_delta_lands_on_start_at_delta(started):
    kind, env, world, task = started
    world.set_start(task)
    delta = KNOWN.as_delta(task.sizes)
    assert world.move(delta) is False  # nothing blocks a PyBullet world's controlled frame
    expected = task.start_pose @ delta
    if kind == "manip":  # the Panda follows its commanded pose through IK
        np.testing.assert_array_equal(world.commanded_pose, expected)
        assert np.linalg.norm(world.pose[:3, 3] - expected[:3, 3]) <= REACH_TOLERANCE[0]
        assert geometry.rotation_error(world.pose, expected) <= REACH_TOLERANCE[1]
    else:  # kinematic: exactly
        np.testing.assert_allclose(world.pose, expected, atol=1e-12)
    assert world.step_count == 1


def test_gripper_and_extras_follow_the_declared_capabilities(started):
    kind, env, world, task = started
    world.set_start(task)
    assert world.gripper == 0
    world.set_gripper(1)
    assert world.gripper == (1 if world.has_gripper else 0)
    world.set_gripper(0)
    assert world.gripper == 0
    extra = world.extra_info()
    assert set(extra) == (set() if kind == "nav" else {"commanded_pose", "held_object", "objects"})
    assert world.extra_observation_spaces() == {} and world.extra_observations() == {}
    assert world.recording is None and world.camera is world.base_camera  # not a replayed task


def test_views_have_the_declared_shapes_and_match_observe(started):
    kind, env, world, task = started
    world.set_start(task)
    poses = [world.camera_pose, world.goal_camera_pose, task.start_pose]
    rgb, depth, seg = world.render_views(poses, depth=True, segmentation=True)
    assert rgb.shape == (3, H, W, 3) and rgb.dtype == np.uint8
    assert depth.shape == (3, H, W) and depth.dtype == np.float32 and (depth > 0).all()
    assert seg.shape == (3, H, W) and seg.dtype == np.int32
    assert world.render_views(poses)[1] is None and world.render_views(poses)[2] is None
    o_rgb, o_depth = world.observe(depth=True)
    np.testing.assert_array_equal(o_rgb, rgb[0])
    np.testing.assert_array_equal(o_depth, depth[0])
    assert world.observe()[1] is None
    g = world.goal_view()
    assert g.shape == (H, W, 3) and g.dtype == np.uint8
    if kind == "nav":  # the camera is the body; the goal view is the goal pose's view
        np.testing.assert_array_equal(world.camera_pose, world.pose)
        np.testing.assert_array_equal(g, world.render_views([task.goal_pose])[0][0])
    else:  # the observing camera is the scene's exterior camera, fixed
        np.testing.assert_array_equal(world.camera_pose, world.scene.exterior_camera)


def test_camera_intrinsics_are_consistent_with_the_renders(started):
    kind, env, world, task = started
    world.set_start(task)
    K = world.camera.K
    np.testing.assert_array_equal(env.intrinsics, K)
    f = (H / 2) / np.tan(np.radians(60.0) / 2)
    np.testing.assert_allclose(K, [[f, 0, (W - 1) / 2], [0, f, (H - 1) / 2], [0, 0, 1]], atol=1e-9)
    # depth unprojected with K and the camera pose lands on the body the segmentation sees there
    T = world.camera_pose
    _, depth, seg = world.render_views([T], depth=True, segmentation=True)
    hits = 0
    for v, u in [(H // 2, W // 2), (H - 4, W // 3), (4, 2 * W // 3), (H // 3, 5)]:
        d, body = float(depth[0, v, u]), int(seg[0, v, u])
        if body < 0:
            continue
        X = T @ np.array([(u - K[0, 2]) / K[0, 0] * d, (v - K[1, 2]) / K[1, 1] * d, d, 1.0])
        lo, hi = world.p.getAABB(body, physicsClientId=world.client)
        assert np.all(X[:3] >= np.asarray(lo) - 0.02) and np.all(X[:3] <= np.asarray(hi) + 0.02), (u, v, body)
        hits += 1
    assert hits >= 2


def test_replayed_camera_path_is_a_world_with_a_recording(tmp_path):
    from traj_helpers import smooth_poses, write_tum

    from spatialact.envs import replay_scene_for
    from spatialact.tasks import Task
    from spatialact.tasks.extraction import extract_actions
    from spatialact.trajectories import load_trajectory

    P, t = smooth_poses(90, 30.0, 2, scale=0.8)
    write_tum(tmp_path / "cam.txt", t, P)
    traj = load_trajectory(tmp_path / "cam.txt")
    kf = [0, 30, 60]
    sizes = StepSizes.for_kind("nav")
    seq = extract_actions(traj.select(np.arange(0, 61)), sizes=sizes, keyframes=kf).sequence
    task = Task(id="cam", kind="nav", source="tum", start_pose=traj.poses[0], goal_pose=traj.poses[60], gt=seq,
                sizes=sizes, scene=replay_scene_for(traj, kf))
    env = make_env("nav", task=task, width=W, height=H, wrap=False)
    try:
        world = env.world
        assert world.replays_recording(task.scene) and not world.replays_recording({"generator": "room"})
        world.load_scene(task.scene)
        world.configure_task(task)
        rec = world.recording
        assert rec.goal_frame == 60 and rec.nearest(traj.poses[0]) == (0, 0.0) and rec.start_gripper() is None
        assert not rec.has_frames()  # TUM records poses only
        world.set_start(task)
        for step, T in zip(seq.steps, seq.to_poses(task.start_pose)[1:]):
            assert world.move(step.as_delta(seq.sizes)) is False
            np.testing.assert_allclose(world.pose, T, atol=1e-12)
        assert rec.nearest(world.pose)[0] in range(0, 61)
    finally:
        env.close()


class WalledCameraWorld(FreeCameraWorld):
    """The free camera in a room with a wall, the plane ``n·x = c`` (``wall = (n, c)``): a motion that would end on
    its other side is stopped where it started, and says so (what a game world's wall does)."""

    wall = (np.zeros(3), 0.0)

    def move(self, delta):
        n, c = self.wall
        end = self.pose @ delta
        if (n @ self.pose[:3, 3] - c) * (n @ end[:3, 3] - c) < 0:
            self.step_count += 1
            return True
        return super().move(delta)


class WalledNavEnv(SpatialActEnv):
    """An environment that is only a class naming its world."""

    kind = "nav"
    n_discrete = 13
    world_class = WalledCameraWorld


def test_a_new_world_plugs_in_and_reports_blocked_steps():
    from gymnasium.utils.env_checker import check_env

    env = WalledNavEnv(width=W, height=H, action_mode="step")
    try:
        check_env(env, skip_render_check=True)
        obs, info = env.reset(seed=0)
        assert info["blocked"] is False
        T0 = env.pose
        n = T0[:3, 0]  # a wall 0.3 m to the camera's right, facing it
        env.world.wall = (n, float(n @ T0[:3, 3]) + 0.3)
        right = np.full(7, env.cap, dtype=np.int64)
        right[0] += 10  # Truck Right 10 units (≈ 0.6 m): through the wall
        right[6] = 2
        obs, reward, terminated, truncated, info = env.step(right)
        assert info["blocked"] is True
        np.testing.assert_array_equal(env.pose, T0)  # the wall stopped it where it was
        left = right.copy()
        left[0] = env.cap - 2  # Truck Left 2 units: away from the wall
        obs, reward, terminated, truncated, info = env.step(left)
        assert info["blocked"] is False and np.linalg.norm(env.pose[:3, 3] - T0[:3, 3]) > 0.1
    finally:
        env.close()
