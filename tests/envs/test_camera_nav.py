"""CameraNav-v0: spaces and modes, exact execution, reward and termination, tasks, determinism, vector env, SB3."""

import math
import warnings

import gymnasium as gym
import numpy as np
import pytest

from spatialact import geometry
from spatialact.action_space import MOTION_PRIMITIVES, ActionSequence, Primitive, Step, StepSizes
from spatialact.envs import ENV_IDS, execute_sequence, make_env
from spatialact.taskgen import procedural_tasks
from spatialact.tasks import Task, validate_task_dict

SCENE = {"generator": "room", "seed": 5}


@pytest.fixture(scope="module")
def tasks():
    return procedural_tasks("nav", 4, seed=3, tasks_per_scene=2)


@pytest.fixture(scope="module")
def env():
    e = make_env("nav", width=48, height=48, action_mode="discrete", wrap=False)
    yield e
    e.close()


def test_registered_on_import():
    for env_id in ENV_IDS:
        assert env_id in gym.registry


@pytest.mark.parametrize("mode", ["discrete", "step", "continuous"])
def test_check_env_every_mode(mode):
    from gymnasium.utils.env_checker import check_env

    env = make_env("nav", action_mode=mode, width=32, height=32, scene=SCENE).unwrapped  # has its spec
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any checker warning fails the test
        check_env(env, skip_render_check=False)
    env.close()


def test_spaces_follow_spec():
    e = make_env("nav", action_mode="discrete", width=32, height=32, scene=SCENE, wrap=False)
    assert e.action_space == gym.spaces.Discrete(13)
    e.close()
    e = make_env("nav", action_mode="step", width=32, height=24, depth=True, scene=SCENE, wrap=False)
    assert list(e.action_space.nvec) == [21] * 6 + [3]
    assert e.observation_space["rgb"].shape == (24, 32, 3)
    assert e.observation_space["depth"].dtype == np.float32
    obs, info = e.reset(seed=0)
    assert obs["depth"].shape == (24, 32) and float(obs["depth"].min()) > 0
    assert set(info) >= {"pose", "goal_pose", "position_error", "rotation_error", "success", "renderer"}
    e.close()
    e = make_env("nav", action_mode="continuous", width=32, height=32, scene=SCENE, wrap=False)
    u = StepSizes.navigation()
    bound = 10 * np.array([u.translation] * 3 + [u.rotation] * 3)
    np.testing.assert_allclose(e.action_space.high[:6], bound, rtol=1e-6)
    e.close()
    with pytest.raises(ValueError, match="action_mode"):
        make_env("nav", action_mode="joystick", wrap=False)


def test_discrete_actions_move_one_unit_of_their_primitive(env, tasks):
    env.reset(options={"task": tasks[0]})
    u = tasks[0].sizes
    for a, prim in enumerate(MOTION_PRIMITIVES, start=1):
        T = env.pose
        env.step(a)
        expected = T @ Step.from_counts({prim: 1}).as_delta(u)
        np.testing.assert_allclose(env.pose, expected, atol=1e-12)
    # known answers: Dolly In moves along the camera's +Z by one unit; Pan Right turns toward +X
    T = env.pose
    env.step(1 + MOTION_PRIMITIVES.index(Primitive.DOLLY_IN))
    np.testing.assert_allclose(env.pose[:3, 3] - T[:3, 3], u.translation * T[:3, 2], atol=1e-12)
    T = env.pose
    env.step(1 + MOTION_PRIMITIVES.index(Primitive.PAN_RIGHT))
    fwd = env.pose[:3, 2]
    assert fwd @ T[:3, 0] == pytest.approx(math.sin(u.rotation), abs=1e-12)  # the view turns to the right
    T = env.pose
    env.step(0)  # Stay
    np.testing.assert_array_equal(env.pose, T)


def test_step_and_continuous_actions(tasks):
    e = make_env("nav", action_mode="step", width=32, height=32, wrap=False)
    e.reset(options={"task": tasks[0]})
    u = tasks[0].sizes
    T = e.pose
    e.step(np.array([10 + 3, 10, 10, 10, 10 - 2, 10, 2]))  # truck +3, pan −2
    np.testing.assert_allclose(e.pose, T @ Step.from_signed([3, 0, 0, 0, -2, 0]).as_delta(u), atol=1e-12)
    T = e.pose
    # outside the MultiDiscrete space (a count beyond the cap, a negative entry, a gripper code 5, a fraction):
    # refused as the discrete mode refuses, never executed as +90 units
    for bad in ([100] * 6 + [0], [-5] * 6 + [2], [10] * 6 + [5], [10.5] + [10] * 5 + [2]):
        with pytest.raises(ValueError, match=r"step action must be 7 whole numbers, six in \[0, 20\]"):
            e.step(np.array(bad))
    np.testing.assert_array_equal(e.pose, T)
    e.close()
    e = make_env("nav", action_mode="continuous", width=32, height=32, wrap=False)
    e.reset(options={"task": tasks[0]})
    T = e.pose
    v = np.array([0.1, -0.05, 0.2, 0.03, -0.1, 0.2, 0.0], dtype=np.float32)  # dx dy dz roll pitch yaw g
    e.step(v)
    motion = np.array([0.1, -0.05, 0.2, -0.1, 0.2, 0.03], dtype=np.float32).astype(float)  # (tx..tz, tilt, pan, roll)
    expected = T @ geometry.motion_to_delta(motion)
    np.testing.assert_allclose(e.pose, expected, atol=1e-7)
    e.close()


def test_execute_sequence_reaches_to_poses_exactly_and_views_match(env, tasks):
    task = tasks[1]
    seq = ActionSequence.from_signed_counts([[2, -1, 3, 1, -2, 1], [0, 0, -4, 0, 3, 0], [5, 0, 0, 0, 0, -1]],
                                            task.sizes)
    res = execute_sequence(env, seq, task)
    np.testing.assert_allclose(res.poses, seq.to_poses(task.start_pose), atol=1e-9, rtol=0)
    assert res.frames.shape == (4, 48, 48, 3)
    for k in (0, 3):
        np.testing.assert_array_equal(res.frames[k], env.render_view(res.poses[k]))
    assert not np.array_equal(res.frames[0], res.frames[3])


def test_execute_ground_truth_succeeds_and_restores_settings(env, tasks):
    env.max_steps = 1
    for task in tasks:
        res = execute_sequence(env, task.gt, task)
        assert res.success and res.position_error < 1e-9 and res.rotation_error < 1e-7
        np.testing.assert_allclose(res.poses[-1], task.goal_pose, atol=1e-9)
        np.testing.assert_array_equal(res.frames[-1], env.render_view(task.goal_pose))
    assert env.max_steps == 1 and env.terminate_on_success is True
    env.max_steps = 20


def test_reward_termination_and_truncation(tasks):
    e = make_env("nav", action_mode="step", width=32, height=32, max_steps=3, wrap=False)
    # a one-step task: its first ground-truth step alone
    gt1 = tasks[0].gt[:1]
    task = tasks[0].with_(gt=gt1, goal_pose=gt1.to_poses(tasks[0].start_pose)[-1])
    obs, info = e.reset(options={"task": task})
    phi0 = info["position_error"] / 0.2 + info["rotation_error"] / math.radians(10)
    assert phi0 > 0 and not info["success"]
    first = task.gt.steps[0].signed_counts()
    _, r, term, trunc, info = e.step(np.append(first + 10, 2))
    assert info["success"] and term and not trunc
    assert r == pytest.approx(phi0 + 10.0, abs=1e-6)
    # three Stay steps: no reward, truncated at max_steps
    e.reset(options={"task": task})
    for k in range(3):
        _, r, term, trunc, info = e.step(np.array([10] * 6 + [2]))
        assert r == 0.0 and not term
    assert trunc and info["step_index"] == 3
    # apply_step does not count toward max_steps
    e.reset(options={"task": task})
    for _ in range(5):
        e.unwrapped.apply_step(Step.stay(), task.sizes)
    _, _, _, trunc, info = e.step(np.array([10] * 6 + [2]))
    assert not trunc and info["step_index"] == 1
    e.close()


def test_procedural_tasks_contract(tasks):
    again = procedural_tasks("nav", 4, seed=3, tasks_per_scene=2)
    assert [t.to_dict() for t in tasks] == [t.to_dict() for t in again]
    other = procedural_tasks("nav", 2, seed=4, tasks_per_scene=2)
    assert other[0].scene != tasks[0].scene
    for t in tasks:
        assert validate_task_dict(t.to_dict()) == []
        assert Task.from_dict(t.to_dict()).to_dict() == t.to_dict()
        assert t.scene["generator"] == "room" and isinstance(t.scene["seed"], int)
        assert 1 <= len(t.gt) <= 3 and not t.gt.has_vectors
        assert t.sizes == StepSizes.for_kind("nav")
        np.testing.assert_allclose(t.gt.to_poses(t.start_pose)[-1], t.goal_pose, atol=1e-12)
        assert np.linalg.norm(t.goal_pose[:3, 3] - t.start_pose[:3, 3]) >= 2 * t.sizes.translation
        assert t.meta["view_overlap"] >= 0.3 and t.tags["view_overlap"] in ("high", "low")
    assert tasks[0].scene == tasks[1].scene and tasks[1].scene != tasks[2].scene


def test_task_views_are_inside_the_room(env, tasks):
    """Start and goal cameras stand inside the rebuilt room and see only scene surfaces (no background)."""
    for t in tasks:
        env.reset(options={"task": t})
        box = env.scene.nav_box
        for T in (t.start_pose, t.goal_pose):
            assert np.all(T[:3, 3] >= box[:, 0] - 0.16) and np.all(T[:3, 3] <= box[:, 1] + 0.16)
            assert (env.render_segmentation(T) >= 0).all()


def test_reset_rebuilds_the_task_scene(tasks):
    """A fresh environment given only the task record renders the same start view as one that sampled it."""
    a = make_env("nav", width=32, height=32, wrap=False)
    b = make_env("nav", width=32, height=32, wrap=False)
    b.reset(seed=99)  # some other scene first
    task = Task.from_dict(tasks[2].to_dict())
    oa, ia = a.reset(options={"task": task})
    ob, ib = b.reset(options={"task": task})
    np.testing.assert_array_equal(oa["rgb"], ob["rgb"])
    np.testing.assert_array_equal(oa["goal_rgb"], ob["goal_rgb"])
    np.testing.assert_array_equal(ia["pose"], task.start_pose)
    oc, _ = b.reset(options={"task": tasks[2].to_dict()})  # a plain record works too
    np.testing.assert_array_equal(oc["rgb"], oa["rgb"])
    bad = {**tasks[2].to_dict(), "kind": "boat"}
    with pytest.raises(ValueError, match="kind"):
        b.reset(options={"task": bad})
    a.close()
    b.close()


def test_same_seed_same_images_different_seed_different_scene():
    def run(seed):
        e = make_env("nav", width=32, height=32, wrap=False)
        obs, info = e.reset(seed=seed)
        frames = [obs["rgb"], obs["goal_rgb"]]
        for a in ([13, 10, 12, 10, 10, 10, 2], [10, 10, 10, 11, 9, 10, 2]):
            frames.append(e.step(np.array(a))[0]["rgb"])
        spec = e.unwrapped.scene.spec
        e.close()
        return np.stack(frames), spec

    f1, s1 = run(7)
    f2, s2 = run(7)
    f3, s3 = run(8)
    np.testing.assert_array_equal(f1, f2)
    assert s1 == s2 and s1 != s3
    assert not np.array_equal(f1[0], f3[0])


def test_make_env_wrapped_and_errors(tasks):
    env = make_env("nav", task=tasks[0], width=32, height=32)
    assert env.spec is not None and env.spec.id == "spatialact/CameraNav-v0"
    obs, info = env.reset()
    np.testing.assert_array_equal(info["pose"], tasks[0].start_pose)
    assert env.unwrapped.intrinsics.shape == (3, 3)
    assert env.render() is None  # no render_mode
    env.close()
    with pytest.raises(ValueError, match="kind"):
        make_env("drone")
    with pytest.raises(ValueError, match="backend"):
        make_env("nav", backend="unreal")
    with pytest.raises(ValueError, match="nav"):
        make_env("manip", task=tasks[0], wrap=False)


def test_render_mode_rgb_array():
    env = make_env("nav", width=32, height=32, render_mode="rgb_array", scene=SCENE)
    obs, _ = env.reset(seed=0)
    np.testing.assert_array_equal(env.render(), obs["rgb"])
    env.close()


def _make_small():
    return make_env("nav", width=32, height=32, scene=SCENE)


def test_async_vector_env_two_workers():
    venv = gym.vector.AsyncVectorEnv([_make_small, _make_small])
    try:
        obs, infos = venv.reset(seed=[1, 2])
        assert obs["rgb"].shape == (2, 32, 32, 3)
        for _ in range(3):
            obs, rew, term, trunc, infos = venv.step(venv.action_space.sample())
        assert rew.shape == (2,) and obs["goal_rgb"].shape == (2, 32, 32, 3)
        assert not np.array_equal(obs["goal_rgb"][0], obs["goal_rgb"][1])  # different seeds → different goals
    finally:
        venv.close()


@pytest.mark.slow
def test_ppo_trains_without_wrappers(tmp_path, monkeypatch):
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path))  # SB3 otherwise leaves an SB3-<date> folder in /tmp
    import torch
    from stable_baselines3 import PPO

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # on a small shared machine extra BLAS threads only contend (7× slower with 2 here)
    try:
        env = make_env("nav", width=64, height=64, action_mode="discrete", scene=SCENE, max_steps=16)
        model = PPO("MultiInputPolicy", env, n_steps=128, batch_size=128, n_epochs=1, seed=0, verbose=0,
                    device="cpu")
        model.learn(total_timesteps=256)
    finally:
        torch.set_num_threads(threads)
    assert model.num_timesteps >= 256
    obs, _ = env.reset(seed=1)
    action, _ = model.predict(obs, deterministic=True)
    assert env.action_space.contains(np.asarray(action).item() if np.ndim(action) == 0 else action)
    env.close()


def test_camera_nav_in_a_mesh_scene(tmp_path):
    """CameraNav on a mesh file the test writes (a closed room with coloured blocks, .glb, +Y up)."""
    import trimesh

    room = trimesh.creation.box(extents=[6.0, 5.0, 2.8])
    room.apply_translation([0, 0, 1.4])
    room.invert()  # faces point inward: the camera stands inside
    room.visual.face_colors = [200, 190, 170, 255]
    parts = [room]
    for (x, y), c in zip([(2, 1.5), (-2, -1.5), (2, -1.5), (-2, 1.5)], [[255, 0, 0], [0, 0, 255], [0, 200, 0],
                                                                    [250, 200, 0]]):
        blk = trimesh.creation.box(extents=[0.6, 0.6, 1.2])
        blk.apply_translation([x, y, 0.6])
        blk.visual.face_colors = c + [255]
        parts.append(blk)
    mesh = trimesh.util.concatenate(parts)
    mesh.apply_transform(geometry.zup_to_yup(np.eye(4)))
    path = tmp_path / "room.glb"
    mesh.export(path)
    scene = {"generator": "mesh", "mesh": str(path), "seed": 0}
    env = make_env("nav", width=32, height=32, scene=scene, wrap=False)
    obs, info = env.reset(seed=0)
    task = env.task
    assert task.scene["mesh"] == str(path)
    res = execute_sequence(env, task.gt, task)
    assert res.success
    np.testing.assert_allclose(res.poses[-1], task.goal_pose, atol=1e-9)
    assert (env.render_segmentation(task.start_pose) >= 0).all()  # inside the closed room
    env.close()
