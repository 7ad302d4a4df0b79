"""The Franka Panda world (GripperManip): pybullet_data's Panda with a parallel gripper at a table.

The controlled frame is the end-effector: PyBullet's ``panda_grasptarget`` link (between the fingertips, 0.105 m
past the hand flange; +Z out of the gripper, +Y along the finger travel). Poses are C2W (4, 4), metres, world +Z up;
the robot base stands on the table at (0, 0, table height), or at the replay scene's ``robot_base``.

Each step composes the commanded pose exactly (``T_cmd ← T_cmd @ Δ``) and drives the arm there by damped-least-
squares inverse kinematics (:func:`~spatialact.envs.panda.solve_panda_ik`, with joint limits and a rest posture,
refined until the measured pose is within 0.1 mm / 0.05°) through interpolated waypoints; the arm is positioned
kinematically and held by its position motors while the physics of the objects runs. ``pose`` is the *measured*
end-effector pose. In a DROID replay the controlled frame is DROID's end effector (the flange:
``DROID_TOOL_OFFSET`` to the grasp frame), IK is seeded from the recorded joint positions, and a start or goal
beyond ``REACH_TOLERANCE`` is refused.
"""

from __future__ import annotations

import numpy as np

from .. import geometry
from .panda import (ARM_JOINTS, EE_LINK, FINGER_JOINTS, FINGER_OPEN, PANDA_HOME, REACH_TOLERANCE, panda_limits,
                    solve_panda_ik)
from .replay_world import check_droid_reachable
from .tabletop import TabletopWorld

__all__ = ["PandaWorld"]


class PandaWorld(TabletopWorld):
    """The Panda at a table; see the module docstring. ``robot`` (= ``agent_body``) is the arm's PyBullet body."""

    kind = "manip"
    GRASP_POINT = np.zeros(3)
    DOWN_AXIS = 2
    LATERAL_AXES = (0, 1)
    GRASP_REGION = np.array([0.02, 0.03, 0.02])
    PUSH_AXES = (0, 1)

    def __init__(self, camera, renderer: str = "tiny", wrist_camera: bool = False):
        super().__init__(camera, renderer, wrist_camera)
        # The controlled frame is the grasp frame; a DROID replay sets ``tool`` so that it is the recorded
        # end-effector frame (DROID's flange): grasp = controlled @ tool. ``home_q``: the posture IK starts from.
        self.tool = np.eye(4)
        self.replaying = False
        self.home_q = PANDA_HOME

    def _load_agent(self) -> None:
        p, cid = self.p, self.client
        base = self.scene.robot_base
        if base is None:
            pos, quat = [0, 0, self.scene.table_z], [0, 0, 0, 1]
        else:
            quat, pos = geometry.pose_to_quat_trans(base)
        self.agent_body = p.loadURDF("franka_panda/panda.urdf", pos, quat,
                                     useFixedBase=True, flags=p.URDF_USE_SELF_COLLISION * 0,
                                     physicsClientId=cid)
        self.robot = self.agent_body
        self._movable, self._lower, self._upper, self._ranges = panda_limits(p, cid, self.robot)
        self._finger_target = FINGER_OPEN
        self._home()

    @property
    def _rest(self):
        return list(self.home_q) + [FINGER_OPEN, FINGER_OPEN]

    def _home(self) -> None:
        p, cid = self.p, self.client
        for j, q in zip(ARM_JOINTS, self.home_q):
            p.resetJointState(self.robot, j, float(q), physicsClientId=cid)
        self._set_fingers(False)

    def _hold_joints(self) -> None:
        """Position motors hold the arm and fingers where they were put (the arm is placed kinematically)."""
        p, cid = self.p, self.client
        joints = list(ARM_JOINTS) + list(FINGER_JOINTS)
        q = [p.getJointState(self.robot, j, physicsClientId=cid)[0] for j in joints]
        p.setJointMotorControlArray(self.robot, joints, p.POSITION_CONTROL, targetPositions=q,
                                    forces=[500.0] * 7 + [40.0, 40.0], physicsClientId=cid)

    def _set_fingers(self, closed: bool, width: float | None = None) -> None:
        p, cid = self.p, self.client
        q = 0.0 if not closed else 0.0
        if closed and width is not None:
            q = min(FINGER_OPEN, width / 2.0)
        if not closed:
            q = FINGER_OPEN
        for j in FINGER_JOINTS:
            p.resetJointState(self.robot, j, q, physicsClientId=cid)
        self._hold_joints()

    def _measured_pose(self) -> np.ndarray:
        """The controlled frame (C2W): the measured grasp frame, or with a tool offset the frame it is carried on."""
        p, cid = self.p, self.client
        st = p.getLinkState(self.robot, EE_LINK, computeForwardKinematics=True, physicsClientId=cid)
        M = geometry.pose_from_quat_trans(st[5], st[4])
        return M @ geometry.invert_pose(self.tool) if self.replaying else M

    def _solve_ik(self, T: np.ndarray, iterations: int = 12) -> tuple[float, float]:
        """Put the arm at controlled-frame pose T by iterated IK (each round seeded by the last); returns the final
        errors of the grasp frame."""
        return solve_panda_ik(self.p, self.client, self.robot, T @ self.tool, self._lower, self._upper, self._ranges,
                              self._rest, iterations, refine=self.replaying and iterations > 2)

    def _drive_to(self, T: np.ndarray, final: bool = True) -> None:
        # intermediate waypoints only need to be close; the pose a step ends at is refined fully
        pe, re = self._solve_ik(T, iterations=12 if final else 2)
        if final and (pe > REACH_TOLERANCE[0] or re > REACH_TOLERANCE[1]) and self.replaying:
            # replay: the posture carried over may be a poor seed; retry from the home posture, keep the better
            p, cid = self.p, self.client
            before = [p.getJointState(self.robot, j, physicsClientId=cid)[0] for j in ARM_JOINTS]
            for j, q in zip(ARM_JOINTS, PANDA_HOME):
                p.resetJointState(self.robot, j, q, physicsClientId=cid)
            pe2, re2 = self._solve_ik(T)
            if pe2 / REACH_TOLERANCE[0] + re2 / REACH_TOLERANCE[1] > pe / REACH_TOLERANCE[0] + re / REACH_TOLERANCE[1]:
                for j, q in zip(ARM_JOINTS, before):
                    p.resetJointState(self.robot, j, q, physicsClientId=cid)
        self._hold_joints()

    def configure_task(self, task, observation: str = "sim") -> None:
        """A DROID replay: the controlled frame becomes DROID's end-effector frame (``DROID_TOOL_OFFSET`` to the grasp
        frame), IK is seeded from the recorded joint positions, and a start or goal the arm cannot reach is refused
        (never clamped)."""
        super().configure_task(task, observation)
        self.tool, self.replaying, self.home_q = np.eye(4), False, PANDA_HOME
        if self.replay is None:
            return
        kf = self.keyframes
        seeds = self.replay.joint_seeds
        ok, pe, re = check_droid_reachable(np.stack([task.start_pose, task.goal_pose]),
                                           None if seeds is None else seeds[[kf[0], kf[-1]]])
        for i, name in enumerate(("start_pose", "goal_pose")):
            if not ok[i]:
                raise ValueError(f"task {task.id}: {name}: out of the simulated Panda's reach (IK error "
                                 f"{pe[i] * 1000:.1f} mm, {np.degrees(re[i]):.1f}°; tolerance 2 mm, 1°)")
        self.tool, self.replaying = self.replay.tool, True
        if seeds is not None:
            self.home_q = tuple(float(q) for q in seeds[kf[0]])

    def _home_for_goal(self) -> None:
        seeds = self.replay.joint_seeds if self.replay is not None else None
        if seeds is None:
            return self._home()
        saved = self.home_q
        self.home_q = tuple(float(q) for q in seeds[self.keyframes[-1]])
        try:
            self._home()
        finally:
            self.home_q = saved

    def _reachable(self, T) -> bool:
        snap = self.snapshot()
        try:
            self._home()
            pe, re = self._solve_ik(T)
        finally:
            self.restore(snap)
        return pe <= REACH_TOLERANCE[0] and re <= REACH_TOLERANCE[1]

    def pose_ok(self, T) -> bool:
        """The tabletop's checks, the hand's flange at least 6 cm above the table and ``T`` reachable by IK within
        ``REACH_TOLERANCE``."""
        if not super().pose_ok(T):
            return False
        # the hand must stay above the table: its flange is 0.105 m behind the grasp point along −Z
        flange = T[:3, 3] - 0.105 * T[:3, 2]
        return bool(flange[2] >= self.scene.table_z + 0.06 and self._reachable(T))

    def _start_rotation(self, yaw: float) -> np.ndarray:
        # gripper pointing down (+Z = world −Z), +X along the yawed world x axis
        return geometry.rot_z(yaw) @ geometry.rot_x(np.pi)
