"""The floating hand world (HandManip): a hand proxy with 6-DoF wrist motion and push / pull / grab / release.

The controlled frame is the wrist, in EgoDex's hand convention (docs/conventions.md): **+Z from the wrist toward the
middle-finger knuckle, +Y out of the palm**, X = Y × Z; poses are C2W (4, 4), metres, world +Z up. The hand is a static
multibody (a palm and five fingers; capsule fingers of a hand's lengths and a sleeve for the eye, box collision shapes
for grasping) placed kinematically — exactly at the commanded pose — and it pushes dynamic objects it moves into; a
grab carries the object whose centre lies in front of the palm (``GRASP_POINT``). In an EgoDex replay the hand
follows the extracted wrist frame and the observing camera is the recorded head camera.
"""

from __future__ import annotations

import numpy as np

from .. import geometry
from .tabletop import TabletopWorld

__all__ = ["HandWorld"]

_SKIN = (0.92, 0.72, 0.58)
_SLEEVE = (0.16, 0.25, 0.45)
_FINGER_X = (-0.027, -0.009, 0.009, 0.027)  # little, ring, middle, index (the thumb is at +x)
_FINGER_LEN = (0.058, 0.071, 0.076, 0.070)  # visual lengths (m); the collision boxes are 0.072 m each
_FINGER_R = 0.0085
_CLOSED = -1.25  # radians: fingers curl about +X toward the palm side (+Y)


class HandWorld(TabletopWorld):
    """The floating hand at a table; see the module docstring. ``agent_body`` is the hand's PyBullet body."""

    kind = "hand"
    EFFECTOR = "hand (its wrist)"  # not "the gripper": the prompt's hand template moves the wrist
    GRASP_POINT = np.array([0.0, 0.045, 0.1])
    GRASP_REGION = np.array([0.035, 0.03, 0.045])
    DOWN_AXIS = 1
    LATERAL_AXES = (0, 2)

    def _load_agent(self) -> None:
        p, cid = self.p, self.client
        # Collision: a palm box and five finger boxes (what grasping and the ground truths use). The visual shapes
        # only make it read as a hand: rounded fingers of a hand's lengths and a sleeve at the wrist (a visual-only
        # link on a fixed joint, after the five finger joints so their indices 0–4 stay; no collision shape).
        palm_half = [0.042, 0.012, 0.048]
        palm_vis = p.createVisualShape(p.GEOM_BOX, halfExtents=palm_half, visualFramePosition=[0, 0, 0.05],
                                       rgbaColor=list(_SKIN) + [1], physicsClientId=cid)
        palm_col = p.createCollisionShape(p.GEOM_BOX, halfExtents=palm_half, collisionFramePosition=[0, 0, 0.05],
                                          physicsClientId=cid)
        f_half = [0.0075, 0.0075, 0.036]
        f_col = p.createCollisionShape(p.GEOM_BOX, halfExtents=f_half, collisionFramePosition=[0, 0, 0.036],
                                       physicsClientId=cid)
        t_half = [0.008, 0.008, 0.03]
        t_col = p.createCollisionShape(p.GEOM_BOX, halfExtents=t_half, collisionFramePosition=[0, 0, 0.03],
                                       physicsClientId=cid)

        def capsule(radius, length, colour):  # from z = −4 mm (into the palm) to z = length
            return p.createVisualShape(p.GEOM_CAPSULE, radius=radius, length=length + 0.004 - 2 * radius,
                                       visualFramePosition=[0, 0, (length - 0.004) / 2],
                                       rgbaColor=list(colour) + [1], physicsClientId=cid)

        f_vis = [capsule(_FINGER_R, ell, _SKIN) for ell in _FINGER_LEN]
        t_vis = capsule(0.0095, 0.058, [c * 0.97 for c in _SKIN])
        sleeve_vis = p.createVisualShape(p.GEOM_CYLINDER, radius=0.037, length=0.075, visualFramePosition=[0, 0, -0.03],
                                         rgbaColor=list(_SLEEVE) + [1], physicsClientId=cid)
        n = len(_FINGER_X) + 1
        positions = [[x, 0.0, 0.098] for x in _FINGER_X] + [[0.045, 0.006, 0.03]]
        thumb_orn = p.getQuaternionFromEuler([0.0, 0.6, 0.0])
        self.agent_body = p.createMultiBody(
            baseMass=0, baseCollisionShapeIndex=palm_col, baseVisualShapeIndex=palm_vis,
            linkMasses=[0] * (n + 1), linkCollisionShapeIndices=[f_col] * 4 + [t_col, -1],
            linkVisualShapeIndices=f_vis + [t_vis, sleeve_vis], linkPositions=positions + [[0, 0, 0]],
            linkOrientations=[[0, 0, 0, 1]] * 4 + [list(thumb_orn), [0, 0, 0, 1]],
            linkInertialFramePositions=[[0, 0, 0]] * (n + 1),
            linkInertialFrameOrientations=[[0, 0, 0, 1]] * (n + 1), linkParentIndices=[0] * (n + 1),
            linkJointTypes=[p.JOINT_REVOLUTE] * n + [p.JOINT_FIXED],
            linkJointAxis=[[1, 0, 0]] * 4 + [[0, 1, 0], [0, 0, 1]], physicsClientId=cid)
        self._exact = np.eye(4)
        self._home()

    def _home(self) -> None:
        self._set_fingers(False)

    def _set_fingers(self, closed: bool, width: float | None = None) -> None:
        p, cid = self.p, self.client
        a = _CLOSED if closed else 0.0
        if closed and width is not None:  # wrapped around an object: curl less
            a = _CLOSED * 0.6
        for j in range(4):
            p.resetJointState(self.agent_body, j, a, physicsClientId=cid)
        p.resetJointState(self.agent_body, 4, -0.9 if closed else 0.0, physicsClientId=cid)

    def _measured_pose(self) -> np.ndarray:
        p, cid = self.p, self.client
        pos, quat = p.getBasePositionAndOrientation(self.agent_body, physicsClientId=cid)
        return geometry.pose_from_quat_trans(quat, pos)

    def _drive_to(self, T: np.ndarray, final: bool = True) -> None:
        quat, pos = geometry.pose_to_quat_trans(T)
        self.p.resetBasePositionAndOrientation(self.agent_body, pos, quat, physicsClientId=self.client)
        self._exact = np.asarray(T, dtype=np.float64).copy()

    @property
    def pose(self) -> np.ndarray:
        """The hand pose: placed kinematically, so it is exactly the pose it was put at (no quaternion round trip);
        after a whole step that is the commanded pose."""
        return self._exact.copy()

    def restore(self, snap) -> None:
        super().restore(snap)
        self._exact = self._cmd.copy()

    def pose_ok(self, T) -> bool:
        """The tabletop's checks, and the wrist, knuckles and fingertips at least 3 cm above the table."""
        if not super().pose_ok(T):
            return False
        pts = np.array([[0, 0, 0, 1], [0, 0, 0.1, 1], [0, 0, 0.17, 1], [0.04, 0, 0.1, 1], [-0.04, 0, 0.1, 1]]).T
        return bool(np.all((T @ pts)[2] >= self.scene.table_z + 0.03))

    def _start_rotation(self, yaw: float) -> np.ndarray:
        # palm down (+Y = world −Z), fingers forward (+Z = world +X), rotated by yaw about the vertical
        R0 = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
        return geometry.rot_z(yaw) @ R0
