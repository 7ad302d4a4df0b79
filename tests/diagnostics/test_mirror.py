"""FlipEval's premise, rendered: flipping the image rendered at pose T is rendering the mirrored pose M T M in the
mirrored scene — and the Gymnasium MirrorWrapper built on it (docs/diagnostics.md).

Tolerance (128 × 128): the flipped and the mirrored renders may differ only where sampling is not mirror-symmetric.
TinyRenderer: a triangle edge on a pixel centre, where the rasteriser's tie-break goes the other way — mean |Δ| ≤ 0.5
grey levels, at most 0.5 % of the pixels off by more than 8 levels (of 255), at most 1 % of the depth pixels off by
more than 1 cm (measured 0.12, 0.08 %, 0.27 %). The gl renderer adds a shadow map on a fixed texel grid and MSAA
sample positions, neither symmetric: mean ≤ 2 levels, ≤ 5 % of the pixels beyond 8 levels, ≤ 2 % of the depth
pixels beyond 1 cm (measured 0.65, 2.0 %, 0.8 %). The same scene unflipped differs on about half of the pixels (the
control).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("pybullet")
pytest.importorskip("gymnasium")

from spatialact import geometry  # noqa: E402
from spatialact.action_space import MIRROR, ActionSequence, Primitive, Step, mirror  # noqa: E402
from spatialact.diagnostics import MirrorWrapper, mirror_task  # noqa: E402
from spatialact.envs.camera import CameraSpec, look_at  # noqa: E402
from spatialact.envs.rendering import BulletBackend  # noqa: E402
from spatialact.envs.scenes import SceneBuilder  # noqa: E402

EDGE_LEVELS, DEPTH_M = 8, 0.01
# renderer -> (mean |Δ| grey levels, share of pixels beyond EDGE_LEVELS, share of depth pixels beyond DEPTH_M)
TOLERANCE = {"tiny": (0.5, 0.005, 0.01), "gl": (2.0, 0.05, 0.02)}

# (shape, centre, yaw, colour, size): an asymmetric arrangement in front of a back wall
OBJECTS = [("box", (0.9, 2.5, 0.3), 0.4, (0.9, 0.2, 0.2), (0.3, 0.2, 0.3)),
           ("box", (-0.6, 3.2, 0.5), -0.7, (0.2, 0.7, 0.3), (0.25, 0.4, 0.5)),
           ("sphere", (0.2, 1.8, 0.25), 0.0, (0.2, 0.3, 0.9), 0.25),
           ("cylinder", (-1.4, 2.2, 0.4), 0.0, (0.9, 0.8, 0.1), (0.2, 0.8)),
           ("box", (1.6, 3.8, 1.0), 1.1, (0.6, 0.3, 0.8), (0.2, 0.6, 1.0))]


def build(world: BulletBackend, objects, light_x: float) -> None:
    """A floor, a back wall and ``objects``; the TinyRenderer light comes from (light_x, −0.3, 2.5)."""
    b = SceneBuilder(world, np.random.default_rng(0))
    b.box([5, 5, 0.05], [0, 2, -0.05], color=(0.7, 0.7, 0.65))
    b.box([5, 0.05, 1.5], [0, 6, 1.5], color=(0.55, 0.65, 0.8))
    for shape, pos, yaw, colour, size in objects:
        if shape == "box":
            b.box(size, pos, yaw=yaw, color=colour)
        elif shape == "sphere":
            b.sphere(size, pos, colour)
        else:
            b.cylinder(size[0], size[1], pos, colour)
    world.light = {"lightDirection": [light_x, -0.3, 2.5], "lightColor": [1.0, 1.0, 1.0], "lightDistance": 10.0,
                   "lightAmbientCoeff": 0.55, "lightDiffuseCoeff": 0.5, "lightSpecularCoeff": 0.05, "shadow": 0}


def mirrored(objects):
    """The scene reflected in the world's x = 0 plane: centres (−x, y, z), yaws −yaw (the shapes are symmetric)."""
    return [(s, (-p[0], p[1], p[2]), -yaw, c, size) for s, p, yaw, c, size in objects]


def check_close(renderer, flipped, direct, depth_flipped, depth_direct) -> None:
    mean_levels, edge_share, depth_share = TOLERANCE[renderer]
    d = np.abs(flipped.astype(int) - direct.astype(int)).max(axis=-1)
    assert d.mean() <= mean_levels, d.mean()
    assert (d > EDGE_LEVELS).mean() <= edge_share, (d > EDGE_LEVELS).mean()
    assert (np.abs(depth_flipped - depth_direct) > DEPTH_M).mean() <= depth_share


POSE = look_at([0.7, -0.5, 1.4], [-0.2, 2.8, 0.4]) @ geometry.make_pose(geometry.rot_z(0.3), [0, 0, 0])
CAM = CameraSpec(128, 128, 60.0)


@pytest.fixture(params=["tiny", "gl"])
def worlds(request):
    made = []

    def make(objects, light_x):
        try:
            w = BulletBackend(request.param)
        except Exception as e:  # noqa: BLE001 - no OpenGL context here
            pytest.skip(f"renderer {request.param} unavailable: {str(e).splitlines()[0]}")
        build(w, objects, light_x)
        made.append(w)
        return w

    make.renderer = request.param
    yield make
    for w in made:
        w.close()


def test_flipped_render_is_the_mirrored_pose_in_the_mirrored_scene(worlds):
    scene = worlds(OBJECTS, 0.6)
    scene_m = worlds(mirrored(OBJECTS), -0.6)  # the light is reflected too
    rgb, depth, _ = scene.render(POSE, CAM)
    rgb_m, depth_m, _ = scene_m.render(mirror(POSE), CAM)
    check_close(worlds.renderer, rgb[:, ::-1], rgb_m, depth[:, ::-1], depth_m)
    # the control: without the flip the two images disagree almost everywhere the objects are
    assert (np.abs(rgb.astype(int) - rgb_m.astype(int)).max(axis=-1) > EDGE_LEVELS).mean() > 0.2
    # and the mirrored pose is not a trivial one: the camera is off-centre and rolled
    assert abs(POSE[0, 3]) > 0.5 and not np.allclose(mirror(POSE), POSE)


def test_in_a_left_right_symmetric_scene_the_flip_is_the_mirrored_pose(worlds):
    """A scene equal to its own mirror (every object with its reflected twin, the light in the x = 0 plane): the
    flipped view from T is the view from M T M in the same scene."""
    sym = worlds(OBJECTS + mirrored(OBJECTS), 0.0)
    rgb, depth, _ = sym.render(POSE, CAM)
    rgb_m, depth_m, _ = sym.render(mirror(POSE), CAM)
    check_close(worlds.renderer, rgb[:, ::-1], rgb_m, depth[:, ::-1], depth_m)
    assert (np.abs(rgb.astype(int) - rgb_m.astype(int)).max(axis=-1) > EDGE_LEVELS).mean() > 0.2


# ----- MirrorWrapper ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def nav_task():
    from spatialact.taskgen import procedural_tasks

    return procedural_tasks("nav", 1, seed=2, n_steps=(2, 2))[0]


def _env(mode: str, task):
    from spatialact.envs import make_env

    env = make_env("nav", task=task, action_mode=mode, renderer="tiny", width=64, height=64)
    return env, MirrorWrapper(env)


def test_mirror_wrapper_shows_the_flipped_views_and_the_mirrored_task(nav_task):
    env, w = _env("discrete", nav_task)
    try:
        obs, info = w.reset(options={"task": nav_task})
        base = env.unwrapped
        assert np.array_equal(obs["rgb"], base.render_view(nav_task.start_pose)[:, ::-1])
        assert np.array_equal(obs["goal_rgb"], base.render_view(nav_task.goal_pose)[:, ::-1])
        assert np.allclose(info["pose"], MIRROR @ nav_task.start_pose @ MIRROR) and info["mirrored"] is True
        assert np.allclose(w.goal_pose, MIRROR @ nav_task.goal_pose @ MIRROR)
        t = w.task
        assert t.gt == mirror(nav_task.gt) and np.allclose(t.start_pose, info["pose"])
        assert w.intrinsics[0, 2] == pytest.approx(63 - base.intrinsics[0, 2])
        assert w.observation_space is env.observation_space and w.action_space is env.action_space
        assert w.render() is None and env.render() is None  # made without render_mode
    finally:
        w.close()


@pytest.mark.parametrize("mode", ["discrete", "step", "continuous"])
def test_mirror_wrapper_actions_act_in_the_mirrored_world(mode, nav_task):
    """Truck Left and Pan Left given in the mirrored world move the real camera right: the pose the wrapper reports
    is the mirrored start moved left, and the real one is the start moved right."""
    env, w = _env(mode, nav_task)
    try:
        w.reset(options={"task": nav_task})
        base = env.unwrapped
        u = nav_task.sizes
        if mode == "discrete":
            action = 2  # Truck Left (1 is Truck Right)
            given = Step.from_counts({Primitive.TRUCK_LEFT: 1})
        elif mode == "step":
            action = np.array([base.cap - 1, base.cap, base.cap, base.cap, base.cap - 2, base.cap + 1, 2])
            given = Step.from_signed([-1, 0, 0, 0, -2, 1])  # Truck Left 1, Pan Left 2, Roll CCW 1
        else:
            action = np.array([-u.translation, 0.0, 2 * u.translation, 0.0, 0.0, -u.rotation, -1.0], np.float32)
            given = Step.from_motion([-u.translation, 0.0, 2 * u.translation, 0.0, -u.rotation, 0.0])
        obs, reward, terminated, truncated, info = w.step(action)
        seq_given = ActionSequence((given,), u)
        expect_m = seq_given.to_poses(mirror(nav_task.start_pose))[-1]
        assert np.allclose(info["pose"], expect_m, atol=1e-5)
        assert np.allclose(base.pose, mirror(seq_given).to_poses(nav_task.start_pose)[-1], atol=1e-5)
        assert np.array_equal(obs["rgb"], base.render_view(base.pose)[:, ::-1])
        # the reward is the real episode's (mirror-invariant distances)
        assert math.isfinite(reward) and isinstance(terminated, bool)
    finally:
        w.close()


def test_mirror_wrapper_runs_the_mirrored_ground_truth_to_the_goal(nav_task):
    env, w = _env("step", nav_task)
    try:
        w.reset(options={"task": nav_task})
        for step in w.task.gt.steps:  # the answer of the mirrored world, step by step
            obs, info = w.apply_step(step, w.task.sizes)
        assert info["position_error"] < 1e-9 and info["success"]
        assert np.allclose(info["pose"], w.goal_pose, atol=1e-9)
        assert w.answer(w.task.gt) == nav_task.gt
        assert mirror_task(w.task).gt == nav_task.gt
    finally:
        w.close()


def test_mirror_wrapper_refuses_what_is_not_a_spatialact_env():
    import gymnasium as gym

    with pytest.raises(TypeError, match="spatialact environment"):
        MirrorWrapper(gym.make("CartPole-v1"))


def test_a_bad_scene_param_is_refused_before_the_run_in_one_line(nav_task):
    """The ladder's scene params, written wrong in a task file, are refused by check_runnable (naming the field)."""
    from spatialact.evaluation.episode import EpisodeConfig, check_runnable

    cfg = EpisodeConfig(renderer="tiny")
    bad = [({"distractors": 99}, "scene.params.distractors"), ({"distractors": True}, "scene.params.distractors"),
           ({"camera": [[1, 0, 0, 0]]}, "scene.params.camera"),
           ({"camera": (2 * np.eye(4)).tolist()}, "scene.params.camera")]
    for params, field in bad:
        t = nav_task.with_(scene={**nav_task.scene, "params": {**nav_task.scene.get("params", {}), **params}})
        why = check_runnable(t, cfg)
        assert why is not None and field in why and nav_task.id in why and "\n" not in why
    ok = nav_task.with_(scene={**nav_task.scene, "params": {**nav_task.scene.get("params", {}), "distractors": 3}})
    assert check_runnable(ok, cfg) is None
