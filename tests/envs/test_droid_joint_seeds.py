"""A DROID replay starts the simulated Panda at the recorded ``observation.state.joint_position``.

The fixtures (tests/traj_helpers.py) record the posture the Panda really has at each end-effector pose (IK from the
home posture, then frame to frame), as a real arm does. The replay seeds its IK there: at reset the arm's joints are
the recorded ones, and no IK is ever started from the home posture (the fallback for a missing or poor seed). Both
are checked by watching every IK solve: the joints it starts from are read from the simulator. With the zeros the
fixtures used to write (joint 4 at its limit, no posture the arm has there), every reset fell back to home.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pybullet")
pytest.importorskip("pyarrow")

from spatialact import geometry  # noqa: E402
from spatialact.action_space import StepSizes  # noqa: E402
from spatialact.envs import make_env, replay_scene_for  # noqa: E402
from spatialact.envs import panda as panda_mod  # noqa: E402
from spatialact.envs import panda_world  # noqa: E402
from spatialact.envs.panda import ARM_JOINTS, PANDA_HOME  # noqa: E402
from spatialact.envs.replay_world import DROID_TOOL_OFFSET, droid_joint_positions  # noqa: E402
from spatialact.tasks import Task, extract_actions  # noqa: E402
from spatialact.trajectories import load_trajectory  # noqa: E402

from traj_helpers import droid_down_episode as _droid_down_episode  # noqa: E402
from traj_helpers import panda_joint_positions, write_droid  # noqa: E402


@pytest.fixture(scope="module")
def arm():
    """A bare simulated Panda, base at the origin of DROID's robot-base frame."""
    from spatialact.envs.panda import PandaArm
    from spatialact.envs.rendering import BulletBackend

    world = BulletBackend("tiny")
    yield PandaArm(world, np.eye(4))
    world.close()


def _fk(arm, q) -> np.ndarray:
    """DROID end-effector (flange) pose (C2W, base frame) of the simulated Panda at joints ``q`` (7,) radians."""
    from spatialact.envs.panda import EE_LINK

    for j, qj in zip(ARM_JOINTS, q):
        arm.p.resetJointState(arm.robot, j, float(qj), physicsClientId=arm.cid)
    st = arm.p.getLinkState(arm.robot, EE_LINK, computeForwardKinematics=True, physicsClientId=arm.cid)
    return geometry.pose_from_quat_trans(st[5], st[4]) @ geometry.invert_pose(DROID_TOOL_OFFSET)


@pytest.fixture(scope="module")
def droid(tmp_path_factory):
    root = write_droid(tmp_path_factory.mktemp("seeds") / "d", [_droid_down_episode()], version="v3.0", video=False)
    return load_trajectory(root, episode=0)


def test_recorded_joints_are_a_posture_the_panda_has_there(droid, arm):
    q = droid_joint_positions(droid)  # what the replay reads from the parquet
    assert q is not None and q.shape == (len(droid), 7)
    assert np.allclose(q, panda_joint_positions(geometry.pose_to_droid(droid.poses)), atol=1e-6)  # float32 storage
    lower, upper = np.array(arm.lower[:7]), np.array(arm.upper[:7])  # panda.urdf's joint limits
    assert np.all(q >= lower - 1e-6) and np.all(q <= upper + 1e-6)
    assert np.all(q[:, 3] < -0.5)  # the elbow bent, never the zeros of a posture nobody recorded
    for i in (0, len(droid) // 2, len(droid) - 1):  # forward kinematics lands on the recorded flange pose
        T = _fk(arm, q[i])
        assert np.linalg.norm(T[:3, 3] - droid.poses[i, :3, 3]) < 2e-4
        assert geometry.rotation_error(T, droid.poses[i]) < np.radians(0.05)
    assert np.abs(np.diff(q, axis=0)).max() < 0.2  # one continuous motion: no jumps between frames


class _IKWatch:
    """Wraps ``solve_panda_ik`` (both places it is called from) and records the arm's joints when each solve starts."""

    def __init__(self, monkeypatch):
        self.starts = []
        for mod in (panda_mod, panda_world):
            monkeypatch.setattr(mod, "solve_panda_ik", self._wrap(mod.solve_panda_ik))

    def _wrap(self, fn):
        def solve(p, cid, robot, *args, **kwargs):
            self.starts.append([p.getJointState(robot, j, physicsClientId=cid)[0] for j in ARM_JOINTS])
            return fn(p, cid, robot, *args, **kwargs)

        return solve

    @property
    def from_home(self) -> int:
        """How many solves started from the home posture (the fallback)."""
        return sum(bool(np.allclose(q, PANDA_HOME, atol=1e-9)) for q in self.starts)


def _task(traj, kf):
    kf = [int(k) for k in kf]
    sizes = StepSizes.for_kind("manip")
    sub = traj.select(np.arange(kf[0], kf[-1] + 1))
    seq = extract_actions(sub, sizes=sizes, keyframes=[k - kf[0] for k in kf]).sequence
    return Task(id="seeded", kind="manip", source="droid", start_pose=traj.poses[kf[0]], goal_pose=traj.poses[kf[-1]],
                gt=seq, sizes=sizes, scene=replay_scene_for(traj, kf))


@pytest.mark.parametrize("kf", [[0, 15, 30], [12, 27, 44]])
def test_reset_starts_at_the_recorded_joints_without_the_home_fallback(droid, kf, monkeypatch):
    recorded = droid_joint_positions(droid)
    task = _task(droid, kf)
    watch = _IKWatch(monkeypatch)
    env = make_env("manip", task=task, height=48, renderer="tiny", wrap=False)
    try:
        env.reset(options={"task": task})
        world = env.unwrapped.world
        q = np.array([world.p.getJointState(world.robot, j, physicsClientId=world.client)[0] for j in ARM_JOINTS])
        assert np.abs(q - recorded[kf[0]]).max() < 2e-3, (q, recorded[kf[0]])
        assert np.linalg.norm(world.pose[:3, 3] - droid.poses[kf[0], :3, 3]) < 2e-3
        assert watch.starts, "no IK ran: the watch is not on the solver the replay uses"
        assert watch.from_home == 0, f"{watch.from_home} of {len(watch.starts)} IK solves fell back to home"
        # the reachability check and the goal view start from the recorded postures too
        starts = np.array(watch.starts)
        for k in (kf[0], kf[-1]):
            assert np.any(np.abs(starts - recorded[k]).max(axis=1) < 1e-6), f"no solve started at frame {k}"
    finally:
        env.close()


def test_zero_joints_fall_back_to_home(droid, tmp_path, monkeypatch):
    """The watch can see a fallback: the zeros the old fixtures wrote send every reset back to the home posture."""
    ep = _droid_down_episode()
    ep["joints"] = np.zeros((len(ep["cart"]), 7))
    traj = load_trajectory(write_droid(tmp_path / "zeros", [ep], version="v2.1", video=False), episode=0)
    task = _task(traj, [0, 15, 30])
    watch = _IKWatch(monkeypatch)
    env = make_env("manip", task=task, height=48, renderer="tiny", wrap=False)
    try:
        env.reset(options={"task": task})
    finally:
        env.close()
    assert watch.from_home > 0
