"""The Franka Panda (pybullet_data's ``franka_panda/panda.urdf``) as a robot model: joints, limits, inverse kinematics.

The grasp frame is PyBullet's ``panda_grasptarget`` link (``EE_LINK``: between the fingertips, 0.105 m past the
hand flange; +Z out of the gripper, +Y along the finger travel). Poses are C2W (4, 4) float64, metres, radians, in
the world of the PyBullet client the robot is loaded in. :func:`solve_panda_ik` puts the arm at a grasp-frame pose
by damped-least-squares IK; :class:`PandaArm` is a bare arm (no scene) for reachability checks.
"""

from __future__ import annotations

import numpy as np

from .. import geometry

__all__ = ["PANDA_HOME", "ARM_JOINTS", "FINGER_JOINTS", "EE_LINK", "FINGER_OPEN", "IK_TOLERANCE", "REACH_TOLERANCE",
           "panda_limits", "grasp_errors", "solve_panda_ik", "PandaArm"]

# A comfortable posture with the gripper pointing down over the table.
PANDA_HOME = (0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.785)
ARM_JOINTS = tuple(range(7))
FINGER_JOINTS = (9, 10)
EE_LINK = 11
FINGER_OPEN = 0.04
IK_TOLERANCE = (1e-4, np.radians(0.05))  # metres, radians: what the refinement loop aims for
REACH_TOLERANCE = (2e-3, np.radians(1.0))  # what a pose must meet to count as reachable when sampling tasks


def panda_limits(p, cid, robot):
    """(movable joint indices, lower limits, upper limits, ranges) of a loaded Panda."""
    info = [p.getJointInfo(robot, j, physicsClientId=cid) for j in range(p.getNumJoints(robot, physicsClientId=cid))]
    movable = [i for i in info if i[2] != p.JOINT_FIXED]
    lower = [i[8] for i in movable]
    upper = [i[9] for i in movable]
    return [i[0] for i in movable], lower, upper, [u - l for l, u in zip(lower, upper)]


def grasp_errors(p, cid, robot, T_grasp):
    """(position error m, rotation error rad) of the measured grasp frame against C2W pose ``T_grasp``."""
    st = p.getLinkState(robot, EE_LINK, computeForwardKinematics=True, physicsClientId=cid)
    M = geometry.pose_from_quat_trans(st[5], st[4])
    return float(np.linalg.norm(M[:3, 3] - T_grasp[:3, 3])), float(geometry.rotation_error(M, T_grasp))


def solve_panda_ik(p, cid, robot, T_grasp: np.ndarray, lower, upper, ranges, rest, iterations: int = 12,
                   refine: bool = False):
    """Put the Panda's arm joints at grasp-frame pose ``T_grasp`` (C2W, world) by iterated damped-least-squares IK
    (each round seeded by the last, starting from the joints as they are); returns (position error m, rotation
    error rad) of the measured grasp frame.

    The null-space form (joint limits, rest posture) can stall a few millimetres short; ``refine=True`` (replay
    scenes) then polishes with plain damped least squares from there and keeps the result when every joint stays
    within its limits and the error shrank."""
    quat, pos = geometry.pose_to_quat_trans(T_grasp)
    pe = re = np.inf
    for _ in range(iterations):
        q = p.calculateInverseKinematics(robot, EE_LINK, pos, quat, lowerLimits=lower, upperLimits=upper,
                                         jointRanges=ranges, restPoses=rest, maxNumIterations=100,
                                         residualThreshold=1e-7, physicsClientId=cid)
        for j, qj in zip(ARM_JOINTS, q[:7]):
            p.resetJointState(robot, j, qj, physicsClientId=cid)
        last = pe + re
        pe, re = grasp_errors(p, cid, robot, T_grasp)
        if pe <= IK_TOLERANCE[0] and re <= IK_TOLERANCE[1]:
            break
        if last - (pe + re) < 1e-6:  # no longer improving: out of reach, stop here
            break
    if refine and (pe > IK_TOLERANCE[0] or re > IK_TOLERANCE[1]):
        before = [p.getJointState(robot, j, physicsClientId=cid)[0] for j in ARM_JOINTS]
        for _ in range(6):
            q = p.calculateInverseKinematics(robot, EE_LINK, pos, quat, maxNumIterations=200,
                                             residualThreshold=1e-9, physicsClientId=cid)
            for j, qj in zip(ARM_JOINTS, q[:7]):
                p.resetJointState(robot, j, qj, physicsClientId=cid)
        pe2, re2 = grasp_errors(p, cid, robot, T_grasp)
        inside = all(lower[j] - 1e-6 <= q[j] <= upper[j] + 1e-6 for j in range(7))
        if inside and pe2 / IK_TOLERANCE[0] + re2 / IK_TOLERANCE[1] < pe / IK_TOLERANCE[0] + re / IK_TOLERANCE[1]:
            pe, re = pe2, re2
        else:
            for j, qj in zip(ARM_JOINTS, before):
                p.resetJointState(robot, j, qj, physicsClientId=cid)
    return pe, re


class PandaArm:
    """A bare Panda (no scene) in a world, for reachability checks: base at C2W ``base``."""

    def __init__(self, world, base: np.ndarray):
        p, cid = world.p, world.client
        self.world, self.p, self.cid = world, p, cid
        quat, pos = geometry.pose_to_quat_trans(base)
        self.robot = p.loadURDF("franka_panda/panda.urdf", pos, quat, useFixedBase=True, physicsClientId=cid)
        _, self.lower, self.upper, self.ranges = panda_limits(p, cid, self.robot)

    def reach(self, T_grasp: np.ndarray, seed=None) -> tuple[float, float]:
        """(position, rotation) error of the best IK solution for grasp pose ``T_grasp`` from joint seed ``seed``
        (7,) (when given) and from the home posture."""
        best = (np.inf, np.inf)
        for q0 in ([seed] if seed is not None else []) + [PANDA_HOME]:
            for j, qj in zip(ARM_JOINTS, q0):
                self.p.resetJointState(self.robot, j, float(qj), physicsClientId=self.cid)
            rest = list(q0) + [FINGER_OPEN, FINGER_OPEN]
            e = solve_panda_ik(self.p, self.cid, self.robot, T_grasp, self.lower, self.upper, self.ranges, rest,
                               refine=True)
            if e[0] / REACH_TOLERANCE[0] + e[1] / REACH_TOLERANCE[1] < best[0] / REACH_TOLERANCE[0] + \
                    best[1] / REACH_TOLERANCE[1]:
                best = e
            if best[0] <= REACH_TOLERANCE[0] and best[1] <= REACH_TOLERANCE[1]:
                break
        return best
