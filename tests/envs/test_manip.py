"""GripperManip-v0 and HandManip-v0: spaces, IK tracking, pick-and-place / grab-and-move, object-state success."""

import warnings

import numpy as np
import pytest

from spatialact import geometry
from spatialact.action_space import ActionSequence, Step
from spatialact.envs import execute_sequence, make_env
from spatialact.taskgen import procedural_tasks
from spatialact.envs.panda import REACH_TOLERANCE
from spatialact.tasks import validate_task_dict

SCENE = {"generator": "tabletop", "seed": 2}


@pytest.fixture(scope="module")
def manip_env():
    e = make_env("manip", width=48, height=48, wrap=False)
    yield e
    e.close()


@pytest.fixture(scope="module")
def hand_env():
    e = make_env("hand", width=48, height=48, wrap=False)
    yield e
    e.close()


@pytest.mark.parametrize("kind", ["manip", "hand"])
@pytest.mark.parametrize("mode", ["discrete", "step", "continuous"])
def test_check_env_every_mode(kind, mode):
    from gymnasium.utils.env_checker import check_env

    env = make_env(kind, action_mode=mode, width=32, height=32, scene=SCENE).unwrapped
    assert env.action_space.n == 15 if mode == "discrete" else True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env, skip_render_check=False)
    env.close()


def test_gripper_reaches_commanded_poses_within_tolerance(manip_env):
    tasks = procedural_tasks("manip", 2, seed=1, variant="reach", tasks_per_scene=2)
    for task in tasks:
        assert validate_task_dict(task.to_dict()) == []
        np.testing.assert_allclose(task.gt.to_poses(task.start_pose)[-1], task.goal_pose, atol=1e-12)
        res = execute_sequence(manip_env, task.gt, task)
        cmd = task.gt.to_poses(task.start_pose)
        pos_err = np.linalg.norm(res.poses[:, :3, 3] - cmd[:, :3, 3], axis=1)
        rot_err = geometry.rotation_error(res.poses, cmd)
        assert pos_err.max() <= REACH_TOLERANCE[0] and rot_err.max() <= REACH_TOLERANCE[1]
        assert res.success
        np.testing.assert_allclose(res.infos[-1]["commanded_pose"], task.goal_pose, atol=1e-12)


def test_end_effector_frame_is_opencv_with_z_out_of_the_gripper(manip_env):
    """Dolly In moves the end-effector toward the fingertips (its +Z), which point down in the start posture."""
    task = procedural_tasks("manip", 1, seed=5, variant="reach")[0]
    manip_env.reset(options={"task": task})
    T = manip_env.pose
    assert T[2, 2] < -0.99  # +Z points down at the start
    hand = manip_env.world.p.getLinkState(manip_env.world.robot, 8, physicsClientId=manip_env.world.client)[4]
    # the hand flange is behind the grasp point, i.e. along −Z
    assert np.dot(np.asarray(hand) - T[:3, 3], T[:3, 2]) < -0.09
    manip_env.apply_step(Step.from_counts({"Dolly In": 3}), task.sizes)
    d = manip_env.pose[:3, 3] - T[:3, 3]
    np.testing.assert_allclose(d, 3 * task.sizes.translation * T[:3, 2], atol=REACH_TOLERANCE[0])


def test_pick_and_place_scripted_policy_succeeds(manip_env):
    task = procedural_tasks("manip", 1, seed=2, variant="pick_place")[0]
    test = task.success["object_state"]
    assert test["type"] == "object_at" and task.tags["variant"] == "pick_place"
    assert validate_task_dict(task.to_dict()) == []
    obs, info = manip_env.reset(options={"task": task})
    assert not info["success"]
    start_obj = info["objects"]["target"]
    res = execute_sequence(manip_env, task.gt, task)
    held = [i["held_object"] for i in res.infos]
    assert held == [None, None, "target", "target", "target", None]
    assert res.success
    final = res.infos[-1]["objects"]["target"]
    assert np.linalg.norm(final - np.asarray(test["position"])) < 0.01
    assert np.linalg.norm(final[:2] - start_obj[:2]) > 0.07  # it really moved
    # the goal view shows the cube at its target: the start and goal images differ
    assert not np.array_equal(obs["rgb"], obs["goal_rgb"])


def test_pick_and_place_fails_when_the_answer_is_wrong(manip_env):
    task = procedural_tasks("manip", 1, seed=2, variant="pick_place")[0]
    steps = list(task.gt.steps)
    never_close = ActionSequence(tuple(s.with_gripper(0) for s in steps), task.sizes)
    res = execute_sequence(manip_env, never_close, task)
    assert not res.success and all(i["held_object"] is None for i in res.infos)
    # carry it but skip the transfer step: the cube goes down where it was picked
    no_carry = ActionSequence(tuple(steps[:3] + steps[4:]), task.sizes)
    res = execute_sequence(manip_env, no_carry, task)
    assert not res.success


def test_push_task_succeeds_reproducibly_and_fails_without_the_push(manip_env):
    task = procedural_tasks("manip", 1, seed=0, variant="push")[0]
    test = task.success["object_state"]
    assert task.tags["variant"] == "push" and all(s.gripper == 1 for s in task.gt.steps)
    assert validate_task_dict(task.to_dict()) == []
    start_obj = np.asarray(task.scene["params"]["objects"][0]["position"])
    assert np.linalg.norm(np.asarray(test["position"])[:2] - start_obj[:2]) >= 0.04
    res = execute_sequence(manip_env, task.gt, task)
    assert res.success
    np.testing.assert_allclose(res.infos[-1]["objects"]["target"], test["position"], atol=1e-6)  # deterministic
    skip_push = ActionSequence(task.gt.steps[:2] + task.gt.steps[3:], task.sizes)
    res = execute_sequence(manip_env, skip_push, task)
    assert not res.success
    np.testing.assert_allclose(res.infos[-1]["objects"]["target"], start_obj, atol=0.005)


def test_hand_grab_and_move_and_exact_wrist_poses(hand_env):
    tasks = procedural_tasks("hand", 3, seed=4, variant="mixed", tasks_per_scene=3)
    assert [t.tags["variant"] for t in tasks] == ["reach", "reach", "grab_move"]
    for task in tasks:
        assert validate_task_dict(task.to_dict()) == []
        res = execute_sequence(hand_env, task.gt, task)
        np.testing.assert_allclose(res.poses, task.gt.to_poses(task.start_pose), atol=1e-9)
        assert res.success, task.tags
    grab = tasks[2]
    assert grab.gt.steps[1].gripper == 1 and grab.gt.steps[-1].gripper == 0
    # the hand frame: +Y out of the palm points down at the start, Push moves along the fingers (+Z)
    hand_env.reset(options={"task": grab})
    T = hand_env.pose
    assert T[2, 1] < -0.99
    hand_env.apply_step(Step.from_counts({"Push": 2}), grab.sizes)
    np.testing.assert_allclose(hand_env.pose[:3, 3] - T[:3, 3], 2 * grab.sizes.translation * T[:3, 2], atol=1e-12)


def test_discrete_gripper_actions(hand_env):
    task = procedural_tasks("hand", 1, seed=6, variant="reach")[0]
    e = make_env("hand", action_mode="discrete", width=32, height=32, wrap=False)
    e.reset(options={"task": task})
    _, _, _, _, info = e.step(14)
    assert info["gripper"] == 1
    _, _, _, _, info = e.step(13)
    assert info["gripper"] == 0
    e.close()


def test_wrist_camera_observation():
    e = make_env("manip", width=32, height=32, wrist_camera=True, scene=SCENE, wrap=False)
    obs, _ = e.reset(seed=0)
    assert obs["wrist_rgb"].shape == (32, 32, 3)
    assert e.observation_space.contains(obs)
    e.close()


def test_object_success_errors_name_the_field(manip_env):
    task = procedural_tasks("manip", 1, seed=2, variant="pick_place")[0]
    bad = task.with_(success={**task.success, "object_state": {"type": "object_at", "object": "ghost",
                                                                "position": [0, 0, 0]}})
    with pytest.raises(ValueError, match="object_state.object"):
        manip_env.reset(options={"task": bad})
