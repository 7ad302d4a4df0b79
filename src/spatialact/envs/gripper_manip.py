"""``spatialact/GripperManip-v0``: a Franka Panda (pybullet_data) with a parallel gripper at a table.

The controlled frame is the end-effector: PyBullet's ``panda_grasptarget`` link (between the fingertips, 0.105 m
past the hand flange). Its axes already follow the OpenCV convention the action space uses: **+Z points out of the
gripper** (the approach direction), +Y runs along the finger travel, +X = Y × Z. Poses are C2W (4, 4), metres, world
+Z up; the robot base stands on the table at (0, 0, table height).

Each step composes the commanded pose exactly (``T_cmd ← T_cmd @ Δ``) and drives the arm there by damped-least-
squares inverse kinematics (PyBullet's, with joint limits and a rest posture, refined until the measured pose is
within 0.1 mm / 0.05°) through interpolated waypoints; the arm is positioned kinematically and held by its
position motors while the physics of the objects runs. ``info["pose"]`` is the *measured* end-effector pose.
Observation ``rgb``: an exterior camera looking at the workspace; ``wrist_camera=True`` adds ``wrist_rgb``.
Tasks: reach a goal pose, or pick and place (success from the object's state).
"""

from __future__ import annotations

import numpy as np

from .. import geometry
from .tabletop import TabletopEnv, _pose_from_pq, _pq_from_pose

__all__ = ["GripperManipEnv", "PANDA_HOME", "IK_TOLERANCE"]

# A comfortable posture with the gripper pointing down over the table.
PANDA_HOME = (0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.785)
ARM_JOINTS = tuple(range(7))
FINGER_JOINTS = (9, 10)
EE_LINK = 11
FINGER_OPEN = 0.04
IK_TOLERANCE = (1e-4, np.radians(0.05))  # metres, radians: what the refinement loop aims for
REACH_TOLERANCE = (2e-3, np.radians(1.0))  # what a pose must meet to count as reachable when sampling tasks


class GripperManipEnv(TabletopEnv):
    """Franka Panda manipulation; see the module docstring."""

    kind = "manip"
    GRASP_POINT = np.zeros(3)
    DOWN_AXIS = 2
    LATERAL_AXES = (0, 1)
    GRASP_REGION = np.array([0.02, 0.03, 0.02])
    PUSH_AXES = (0, 1)

    def _load_agent(self) -> None:
        p, cid = self.world.p, self.world.client
        self._agent_body = p.loadURDF("franka_panda/panda.urdf", [0, 0, self.scene.table_z], [0, 0, 0, 1],
                                      useFixedBase=True, flags=p.URDF_USE_SELF_COLLISION * 0,
                                      physicsClientId=cid)
        self._robot = self._agent_body
        info = [p.getJointInfo(self._robot, j, physicsClientId=cid)
                for j in range(p.getNumJoints(self._robot, physicsClientId=cid))]
        movable = [i for i in info if i[2] != p.JOINT_FIXED]
        self._movable = [i[0] for i in movable]
        self._lower = [i[8] for i in movable]
        self._upper = [i[9] for i in movable]
        self._ranges = [u - l for l, u in zip(self._lower, self._upper)]
        self._rest = list(PANDA_HOME) + [FINGER_OPEN, FINGER_OPEN]
        self._finger_target = FINGER_OPEN
        self._home()

    def _home(self) -> None:
        p, cid = self.world.p, self.world.client
        for j, q in zip(ARM_JOINTS, PANDA_HOME):
            p.resetJointState(self._robot, j, q, physicsClientId=cid)
        self._set_fingers(False)

    def _hold_joints(self) -> None:
        """Position motors hold the arm and fingers where they were put (the arm is placed kinematically)."""
        p, cid = self.world.p, self.world.client
        joints = list(ARM_JOINTS) + list(FINGER_JOINTS)
        q = [p.getJointState(self._robot, j, physicsClientId=cid)[0] for j in joints]
        p.setJointMotorControlArray(self._robot, joints, p.POSITION_CONTROL, targetPositions=q,
                                    forces=[500.0] * 7 + [40.0, 40.0], physicsClientId=cid)

    def _set_fingers(self, closed: bool, width: float | None = None) -> None:
        p, cid = self.world.p, self.world.client
        q = 0.0 if not closed else 0.0
        if closed and width is not None:
            q = min(FINGER_OPEN, width / 2.0)
        if not closed:
            q = FINGER_OPEN
        for j in FINGER_JOINTS:
            p.resetJointState(self._robot, j, q, physicsClientId=cid)
        self._hold_joints()

    def _measured_pose(self) -> np.ndarray:
        p, cid = self.world.p, self.world.client
        st = p.getLinkState(self._robot, EE_LINK, computeForwardKinematics=True, physicsClientId=cid)
        return _pose_from_pq(st[4], st[5])

    def _solve_ik(self, T: np.ndarray, iterations: int = 12) -> tuple[float, float]:
        """Put the arm at pose T by iterated IK (each round seeded by the last); returns the final errors."""
        p, cid = self.world.p, self.world.client
        pos, quat = _pq_from_pose(T)
        pe = re = np.inf
        for _ in range(iterations):
            q = p.calculateInverseKinematics(self._robot, EE_LINK, pos, quat, lowerLimits=self._lower,
                                             upperLimits=self._upper, jointRanges=self._ranges,
                                             restPoses=self._rest, maxNumIterations=100, residualThreshold=1e-7,
                                             physicsClientId=cid)
            for j, qj in zip(ARM_JOINTS, q[:7]):
                p.resetJointState(self._robot, j, qj, physicsClientId=cid)
            M = self._measured_pose()
            last = pe + re
            pe = float(np.linalg.norm(M[:3, 3] - T[:3, 3]))
            re = float(geometry.rotation_error(M, T))
            if pe <= IK_TOLERANCE[0] and re <= IK_TOLERANCE[1]:
                break
            if last - (pe + re) < 1e-6:  # no longer improving: out of reach, stop here
                break
        return pe, re

    def _drive_to(self, T: np.ndarray, final: bool = True) -> None:
        # intermediate waypoints only need to be close; the pose a step ends at is refined fully
        self._solve_ik(T, iterations=12 if final else 2)
        self._hold_joints()

    def _reachable(self, T) -> bool:
        snap = self._snapshot()
        try:
            self._home()
            pe, re = self._solve_ik(T)
        finally:
            self._restore(snap)
        return pe <= REACH_TOLERANCE[0] and re <= REACH_TOLERANCE[1]

    def _pose_ok(self, T) -> bool:
        if not super()._pose_ok(T):
            return False
        # the hand must stay above the table: its flange is 0.105 m behind the grasp point along −Z
        flange = T[:3, 3] - 0.105 * T[:3, 2]
        return bool(flange[2] >= self.scene.table_z + 0.06 and self._reachable(T))

    def _start_rotation(self, yaw: float) -> np.ndarray:
        # gripper pointing down (+Z = world −Z), +X along the yawed world x axis
        return geometry.rot_z(yaw) @ geometry.rot_x(np.pi)
