"""GameNav (spatialact/GameNav-v0) and its world on a real Freedoom level (freedoom2.wad MAP01, shipped with
vizdoom): the CameraNav contract (spaces, modes, check_env, PPO), steps executed through the game (a dolly into a
wall stops at the wall, blocked in info; Tilt as Doom's look within its limits; Roll reported, not executed), the
per-frame camera, scene references checked in one line, routing of game tasks, determinism.

Known answers come from the WAD's own geometry (its line segments) and from the game's documented limits, not from
the world's bookkeeping."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

pytest.importorskip("vizdoom")
pytest.importorskip("pybullet")

import gymnasium as gym  # noqa: E402

from spatialact import geometry  # noqa: E402
from spatialact.action_space import ActionSequence, Step, StepSizes  # noqa: E402
from spatialact.envs import make_env  # noqa: E402
from spatialact.envs.doom.engine import (PIXEL_ASPECT, PLAYER_RADIUS_UNITS, TILT_UP_LIMIT_DEG,  # noqa: E402
                                         level_rotation)
from spatialact.envs.doom.wad import map_lines, resolve_wad  # noqa: E402
from spatialact.envs.game_nav import GameNavEnv  # noqa: E402
from spatialact.envs.game_world import GameWorld, game_scene  # noqa: E402
from spatialact.envs.registry import GAME_NAV_ID  # noqa: E402
from spatialact.tasks import Task  # noqa: E402

SIZES = StepSizes.navigation()
START_XY = np.array([-192.0, -192.0])  # MAP01's player start, map units


def _pose(x_units, y_units, yaw_deg, z_units=41.0):
    return geometry.make_pose(level_rotation(math.radians(yaw_deg)), np.array([x_units, y_units, z_units]) / 32.0)


def _task(start, counts, task_id="game-test", map="MAP01"):
    gt = ActionSequence.from_signed_counts(np.atleast_2d(counts), SIZES, cap=10)
    return Task(id=task_id, kind="nav", source="game", start_pose=start, goal_pose=gt.to_poses(start)[-1], gt=gt,
                sizes=SIZES, scene=game_scene("freedoom2.wad", map, start))


def _wall_south(xy):
    """Distance (map units) due south from ``xy`` to MAP01's first one-sided line, from the WAD."""
    seg, one_sided, _ = map_lines(resolve_wad(None), "MAP01")
    best = math.inf
    for (x1, y1, x2, y2), one in zip(seg, one_sided):
        if one and min(x1, x2) <= xy[0] <= max(x1, x2) and x1 != x2:
            y = y1 + (xy[0] - x1) * (y2 - y1) / (x2 - x1)
            if y < xy[1]:
                best = min(best, xy[1] - y)
    return best


@pytest.fixture(scope="module")
def env():
    e = make_env("nav", task=_task(_pose(*START_XY, 0.0), [0, 0, 4, 0, 0, 0]), action_mode="step", depth=True,
                 wrap=False, max_steps=100)
    yield e
    e.close()


def test_game_tasks_route_to_gamenav_and_the_id_is_registered(env):
    assert isinstance(env, GameNavEnv) and isinstance(env.world, GameWorld) and GAME_NAV_ID in gym.registry
    assert env.world.renders_any_pose is False and env.world.kind == "nav" and not env.world.has_gripper
    assert env.camera.width == 160 and env.camera.height == 120  # the game's smallest screen by default
    wrapped = make_env("nav", task=env.task or _task(_pose(*START_XY, 0.0), [0, 0, 4, 0, 0, 0]))
    try:
        assert wrapped.spec.id == GAME_NAV_ID and isinstance(wrapped.unwrapped, GameNavEnv)
    finally:
        wrapped.close()
    from spatialact.envs.camera_nav import CameraNavEnv

    plain = make_env("nav", width=16, height=16, wrap=False)  # existing behaviour: CameraNav
    assert type(plain) is CameraNavEnv and plain.camera.height == 16
    plain.close()
    with pytest.raises(ValueError, match="navigation tasks only"):
        make_env("manip", backend="game")


def test_the_oracle_reaches_the_goal_through_the_game(env):
    task = _task(_pose(*START_XY, 0.0), [[2, 0, 6, 0, 3, 0], [0, 0, 5, 0, -2, 0]], "oracle-map01")
    obs, info = env.reset(options={"task": task})
    assert info["position_error"] > 0.3 and not info["blocked"]
    for step in task.gt.steps:
        obs, info = env.apply_step(step)
        assert not info["blocked"] and info["reached"] and info["game_tics"] > 0
    assert info["success"] and info["position_error"] < 0.005 and info["rotation_error"] < math.radians(0.01)
    # the goal image is the view at the goal pose: where the oracle ends, the two views agree
    assert np.abs(obs["rgb"].astype(float) - obs["goal_rgb"].astype(float)).mean() < 3.0


def test_a_dolly_into_a_wall_ends_at_the_wall_blocked(env):
    start = _pose(*START_XY, -90.0)  # facing south
    wall = _wall_south(START_XY)
    assert 60 < wall < 200
    env.reset(options={"task": _task(start, [0, 0, 4, 0, 0, 0], "wall")})
    blocked_at = None
    for k in range(6):  # Dolly In 10 units (0.626 m) a step: the wall is nearer than 6 of them
        _, _, _, _, info = env.step(np.array([10, 10, 20, 10, 10, 10, 2]))
        if info["blocked"]:
            blocked_at = k
            break
        assert info["reached"]
    assert blocked_at is not None and not info["reached"]
    travelled = (START_XY[1] / 32 - env.pose[1, 3]) * 32  # map units south
    assert abs(travelled - (wall - PLAYER_RADIUS_UNITS)) <= 1.0  # the player's radius keeps it off the wall
    # a step away from the wall is not blocked
    _, _, _, _, info = env.step(np.array([10, 10, 5, 10, 10, 10, 2]))
    assert not info["blocked"] and info["reached"]


def test_tilt_is_the_engines_look_and_roll_is_reported_not_executed(env):
    env.reset(options={"task": _task(_pose(*START_XY, 0.0), [0, 0, 4, 0, 0, 0], "tilt")})
    K0 = env.intrinsics
    _, _, _, _, info = env.step(np.array([10, 10, 10, 13, 10, 10, 2]))  # Tilt Up 3 units (12.5°)
    tilt = 3 * SIZES.rotation
    K1 = env.intrinsics
    assert not info["tilt_clamped"] and abs(K1[1, 1] / K1[0, 0] - PIXEL_ASPECT) < 1e-9
    assert K1[1, 2] - K0[1, 2] == pytest.approx(K1[1, 1] * math.tan(tilt), abs=0.05)
    # the pose reports the look as a tilt about the camera's +X (what the model's Tilt did)
    assert np.allclose(env.pose[:3, :3], level_rotation(0.0, tilt), atol=1e-4)
    _, _, _, _, info = env.step(np.array([10, 10, 10, 20, 10, 10, 2]))  # 10 more units: beyond 32° up
    assert info["tilt_clamped"]
    assert math.degrees(math.asin(env.pose[2, 2])) == pytest.approx(TILT_UP_LIMIT_DEG, abs=0.01)
    T0 = env.pose
    _, _, _, _, info = env.step(np.array([10, 10, 10, 10, 10, 12, 2]))  # Roll 2 units: the camera cannot roll
    assert info["roll_dropped"] == pytest.approx(2 * SIZES.rotation, abs=1e-9)
    assert np.allclose(env.pose, T0, atol=1e-9) and not info["blocked"]


def test_the_world_renders_only_the_players_view(env):
    env.reset(options={"task": _task(_pose(*START_XY, 0.0), [0, 0, 4, 0, 0, 0], "views")})
    T = env.pose
    rgb = env.render_view(T)
    assert np.array_equal(rgb, env.last_observation["rgb"])
    d = env.render_depth(T)
    assert d.shape == (120, 160) and d.dtype == np.float32 and 0.2 < float(d.min()) and float(d.max()) <= 20.0
    with pytest.raises(ValueError, match="renders only the player's current view"):
        env.render_view(T @ geometry.make_pose(np.eye(3), [0.0, 0.0, 0.5]))
    with pytest.raises(ValueError, match="segmentation"):
        env.render_segmentation(T)


def test_scene_references_are_checked_in_one_line_naming_the_field(env):
    good = game_scene("freedoom2.wad", "MAP01", _pose(*START_XY, 0.0))
    assert GameWorld.check_scene(good) == good
    cases = {"scene.wad": dict(good, wad="nosuch.wad"),
             "scene.wad_sha256": dict(good, wad_sha256="0" * 64),
             "scene.map": dict(good, map="MAP99"),
             "scene.start": dict(good, start={"position": [0, 0], "yaw_deg": 0})}
    for field, spec in cases.items():
        with pytest.raises(ValueError) as e:
            GameWorld.check_scene(spec)
        msg = str(e.value)
        assert msg.startswith(f"scene: {field}:") and "\n" not in msg, msg
    with pytest.raises(ValueError, match="scene.start: is .* from start_pose"):
        far = _task(_pose(0.0, 0.0, 0.0), [0, 0, 4, 0, 0, 0], "mismatch")
        far = far.with_(scene=good)
        env.reset(options={"task": far})
    rolled = _task(_pose(*START_XY, 0.0) @ geometry.make_pose(geometry.rot_z(0.2), np.zeros(3)), [0, 0, 4, 0, 0, 0])
    with pytest.raises(ValueError, match="start_pose: is rolled"):
        env.reset(options={"task": rolled.with_(scene=good)})


@pytest.mark.parametrize("mode", ["discrete", "step", "continuous"])
def test_check_env_every_mode(mode):
    from gymnasium.utils.env_checker import check_env

    task = _task(_pose(*START_XY, 0.0), [0, 0, 4, 0, 2, 0], f"check-{mode}")
    e = make_env("nav", task=task, action_mode=mode, depth=True).unwrapped
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any checker warning fails the test
        check_env(e, skip_render_check=False)
    assert e.action_space.shape == {"discrete": (), "step": (7,), "continuous": (7,)}[mode]
    e.close()


def test_random_tasks_are_executed_by_the_game_and_the_same_seed_gives_the_same_images():
    runs = []
    for _ in range(2):
        e = make_env("nav", backend="game", action_mode="discrete", max_steps=50, wrap=False)
        obs, info = e.reset(seed=11)
        images = [obs["rgb"], obs["goal_rgb"]]
        task = e.task
        for a in (5, 9, 1, 6):
            obs, *_ = e.step(a)
            images.append(obs["rgb"])
        # the random task's ground truth, executed in the game, reaches its goal (built that way)
        _, info = e.reset(options={"task": task})
        for step in task.gt.steps:
            _, info = e.apply_step(step)
        assert info["success"] and not info["blocked"]
        assert task.source == "game" and task.scene["type"] == "game" and task.scene["map"] == "MAP01"
        assert not any(task.gt.steps[i].signed_counts()[k] for i in range(len(task.gt)) for k in (1, 3, 5))
        runs.append((task, images))
        e.close()
    (t1, a), (t2, b) = runs
    assert t1.id == t2.id and np.array_equal(t1.goal_pose, t2.goal_pose)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(a[0], a[-1])  # the steps moved the view


def test_a_start_is_the_same_whatever_came_before(env):
    """start(pose) after different histories (walks, flying, looks, other starts) reaches the same pose and draws the
    same image: the level starts anew, its random numbers too (flickering lights), and the teleport acts before the
    player is read again (a walk planned from before it went astray, farther from the map's start)."""
    from spatialact.taskgen.game_suite import game_suite_tasks

    map01 = [t for t in game_suite_tasks() if t.scene["map"] == "MAP01"]
    far = max(map01, key=lambda t: np.linalg.norm(t.goal_pose[:3, 3] - np.r_[START_XY, 41.0] / 32))
    flicker = _pose(424.68, -4.17, 122.72, z_units=-23.0)  # 13 m from the start, a flickering light in view
    env.reset(options={"task": _task(_pose(*START_XY, 0.0), [0, 0, 4, 0, 0, 0], "history")})
    eng = env.world.engine
    for P in (far.goal_pose, flicker):
        seen = []
        for history in ([], [[0, 0, 10, 0, 3, 0]], [[0, -4, 0, 2, 0, 0], [5, 0, 10, 0, 0, 0]], "start", []):
            eng.start(far.start_pose if history == "start" else None)
            for counts in ([] if history == "start" else history):
                eng.execute(Step.from_signed(counts).as_delta(SIZES))
            eng.start(P)
            seen.append((eng.pose(), eng.render_raw()[0]))
        assert all(np.array_equal(T, seen[0][0]) and np.array_equal(im, seen[0][1]) for T, im in seen)
        assert np.linalg.norm(seen[0][0][:3, 3] - P[:3, 3]) <= 1.0 / 32
    # every start and goal of the suite's MAP01 tasks is reached within a quarter map unit (a far teleport included)
    for t in map01:
        for P in (t.start_pose, t.goal_pose):
            eng.start(P)
            assert np.linalg.norm(eng.pose()[:3, 3] - P[:3, 3]) * 32 <= 0.25, t.id
    # and a task's ground truth, executed again and again from its start, ends at the same pose each time
    task = max(map01, key=lambda t: len(t.gt))
    ends = []
    for _ in range(3):
        eng.start(task.start_pose)
        for step in task.gt.steps:
            eng.execute(step.as_delta(task.gt.sizes))
        ends.append(eng.pose())
    assert all(np.array_equal(T, ends[0]) for T in ends)
    assert np.linalg.norm(ends[0][:3, 3] - task.goal_pose[:3, 3]) <= task.success["position"]


@pytest.mark.slow
def test_ppo_trains_on_gamenav_unchanged(tmp_path, monkeypatch):
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path))
    import torch
    from stable_baselines3 import PPO

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        e = make_env("nav", backend="game", action_mode="discrete", max_steps=16, height=48)  # resized from 160×120
        assert e.observation_space["rgb"].shape == (48, 64, 3)
        model = PPO("MultiInputPolicy", e, n_steps=64, batch_size=64, n_epochs=1, seed=0, verbose=0, device="cpu")
        model.learn(total_timesteps=64)
    finally:
        torch.set_num_threads(threads)
    assert model.num_timesteps >= 64
    obs, _ = e.reset(seed=1)
    action, _ = model.predict(obs, deterministic=True)
    assert e.action_space.contains(np.asarray(action).item())
    e.close()
