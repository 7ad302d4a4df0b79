"""Frames and rotations: the one module every other part of spatialact uses for them.

Conventions (docs/conventions.md), fixed here and nowhere else:

* units are metres and radians; poses are 4×4 float64 homogeneous matrices;
* the world is right-handed with **+Z up**;
* camera / end-effector frames are OpenCV's: **+X right, +Y down, +Z forward**;
* a pose is camera-to-world (C2W): ``p_world = T @ p_cam``;
* a motion Δ is expressed in the frame of the pose it starts from: the next pose is ``T @ Δ``;
* pan is a rotation about +Y, tilt about +X, roll about +Z, composed as
  ``R = R_y(pan) @ R_x(tilt) @ R_z(roll)`` (scipy: ``Rotation.from_euler("YXZ", [pan, tilt, roll])``).

Every function is vectorised: it takes arrays with any number of leading batch dimensions
(``(..., 4, 4)``, ``(..., 3, 3)``, ``(..., 3)``) and returns arrays of the same batch shape.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "OPENGL_TO_OPENCV",
    "YUP_TO_ZUP",
    "as_pose",
    "make_pose",
    "invert_pose",
    "c2w_to_w2c",
    "w2c_to_c2w",
    "opengl_to_opencv",
    "opencv_to_opengl",
    "yup_to_zup",
    "zup_to_yup",
    "rot_x",
    "rot_y",
    "rot_z",
    "ptr_to_matrix",
    "matrix_to_ptr",
    "motion_to_delta",
    "delta_to_motion",
    "quat_to_matrix",
    "matrix_to_quat",
    "pose_from_quat_trans",
    "pose_to_quat_trans",
    "pose_from_pybullet",
    "pose_to_pybullet",
    "droid_euler_to_matrix",
    "matrix_to_droid_euler",
    "pose_from_droid",
    "pose_to_droid",
    "geodesic_angle",
    "rotation_error",
    "orthonormality_error",
    "relative_pose",
]

# Right-multiplying an OpenGL-style camera pose (+X right, +Y up, -Z forward: OpenGL, Habitat, ARKit)
# by this matrix gives the OpenCV-style pose of the same camera; it is its own inverse.
OPENGL_TO_OPENCV = np.diag([1.0, -1.0, -1.0, 1.0])

# Left-multiplying a pose in a +Y-up world (ARKit, Habitat) by R_x(+90°) expresses it in a +Z-up world:
# the old +Y (up) becomes +Z, the old +Z becomes -Y.
YUP_TO_ZUP = np.array(
    [[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, -1.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]]
)


def _f64(x: ArrayLike) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def as_pose(T: ArrayLike) -> np.ndarray:
    """Return ``T`` as a float64 array of shape (..., 4, 4), raising ValueError on any other shape."""
    T = _f64(T)
    if T.shape[-2:] != (4, 4):
        raise ValueError(f"expected pose(s) of shape (..., 4, 4), got {T.shape}")
    return T


def make_pose(R: ArrayLike, t: ArrayLike) -> np.ndarray:
    """Build (..., 4, 4) homogeneous poses from rotations (..., 3, 3) and translations (..., 3) in metres."""
    R, t = _f64(R), _f64(t)
    batch = np.broadcast_shapes(R.shape[:-2], t.shape[:-1])
    T = np.zeros(batch + (4, 4))
    T[..., :3, :3] = R
    T[..., :3, 3] = t
    T[..., 3, 3] = 1.0
    return T


def invert_pose(T: ArrayLike) -> np.ndarray:
    """Invert rigid transforms (..., 4, 4) exactly: ``[R|t]⁻¹ = [Rᵀ | -Rᵀt]`` (no general matrix inverse)."""
    T = as_pose(T)
    Rt = np.swapaxes(T[..., :3, :3], -1, -2)
    return make_pose(Rt, -np.einsum("...ij,...j->...i", Rt, T[..., :3, 3]))


def c2w_to_w2c(T_c2w: ArrayLike) -> np.ndarray:
    """Camera-to-world poses → world-to-camera extrinsics (e.g. RealEstate10K's)."""
    return invert_pose(T_c2w)


def w2c_to_c2w(T_w2c: ArrayLike) -> np.ndarray:
    """World-to-camera extrinsics → camera-to-world poses."""
    return invert_pose(T_w2c)


def opengl_to_opencv(T: ArrayLike) -> np.ndarray:
    """C2W poses of an OpenGL/Habitat/ARKit camera (+Y up, −Z forward) → the OpenCV camera (+Y down, +Z forward)."""
    return as_pose(T) @ OPENGL_TO_OPENCV


def opencv_to_opengl(T: ArrayLike) -> np.ndarray:
    """C2W poses of an OpenCV camera → the OpenGL/Habitat/ARKit camera axes (the same flip: it is an involution)."""
    return as_pose(T) @ OPENGL_TO_OPENCV


def yup_to_zup(T: ArrayLike) -> np.ndarray:
    """Poses given in a +Y-up world (ARKit, Habitat) → the same poses in spatialact's +Z-up world."""
    return YUP_TO_ZUP @ as_pose(T)


def zup_to_yup(T: ArrayLike) -> np.ndarray:
    """Poses in the +Z-up world → a +Y-up world (inverse of :func:`yup_to_zup`)."""
    return YUP_TO_ZUP.T @ as_pose(T)


def _axis_rotation(angle: ArrayLike, axis: int) -> np.ndarray:
    a = _f64(angle)
    c, s = np.cos(a), np.sin(a)
    R = np.zeros(a.shape + (3, 3))
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    R[..., axis, axis] = 1.0
    R[..., i, i] = c
    R[..., j, j] = c
    R[..., i, j] = -s
    R[..., j, i] = s
    return R


def rot_x(angle: ArrayLike) -> np.ndarray:
    """Rotation matrices (..., 3, 3) about +X by ``angle`` radians (right-hand rule)."""
    return _axis_rotation(angle, 0)


def rot_y(angle: ArrayLike) -> np.ndarray:
    """Rotation matrices (..., 3, 3) about +Y by ``angle`` radians."""
    return _axis_rotation(angle, 1)


def rot_z(angle: ArrayLike) -> np.ndarray:
    """Rotation matrices (..., 3, 3) about +Z by ``angle`` radians."""
    return _axis_rotation(angle, 2)


def ptr_to_matrix(pan: ArrayLike, tilt: ArrayLike, roll: ArrayLike) -> np.ndarray:
    """``R = R_y(pan) @ R_x(tilt) @ R_z(roll)`` in the camera frame (radians; Pan Right, Tilt Up, Roll CCW > 0)."""
    pan, tilt, roll = np.broadcast_arrays(_f64(pan), _f64(tilt), _f64(roll))
    return rot_y(pan) @ rot_x(tilt) @ rot_z(roll)


def matrix_to_ptr(R: ArrayLike) -> np.ndarray:
    """Inverse of :func:`ptr_to_matrix`: (..., 3, 3) → (..., 3) as ``[pan, tilt, roll]`` radians.

    pan and roll lie in (−π, π], tilt in [−π/2, π/2]. At gimbal lock (|tilt| = π/2) roll is 0 and the
    whole in-plane angle goes to pan.
    """
    R = _f64(R)
    if R.shape[-2:] != (3, 3):
        raise ValueError(f"expected rotation(s) of shape (..., 3, 3), got {R.shape}")
    # For R = Ry(p) Rx(t) Rz(r): R[1,2] = -sin t, R[0,2] = sin p cos t, R[2,2] = cos p cos t,
    # R[1,0] = cos t sin r, R[1,1] = cos t cos r.
    sin_t = np.clip(-R[..., 1, 2], -1.0, 1.0)
    cos_t = np.hypot(R[..., 1, 0], R[..., 1, 1])
    tilt = np.arctan2(sin_t, cos_t)
    locked = cos_t < 1e-12
    pan = np.arctan2(R[..., 0, 2], R[..., 2, 2])
    roll = np.arctan2(R[..., 1, 0], R[..., 1, 1])
    # Gimbal lock: with roll = 0, R[0,0] = cos p and R[2,0] = -sin p whatever the sign of tilt.
    pan = np.where(locked, np.arctan2(-R[..., 2, 0], R[..., 0, 0]), pan)
    roll = np.where(locked, 0.0, roll)
    # arctan2 returns [-π, π]; the convention is (−π, π].
    pan = np.where(pan <= -np.pi, np.pi, pan)
    roll = np.where(roll <= -np.pi, np.pi, roll)
    return np.stack([pan, tilt, roll], axis=-1)


def motion_to_delta(motion: ArrayLike) -> np.ndarray:
    """Body-frame motions (..., 6) → rigid transforms Δ (..., 4, 4).

    ``motion = [tx, ty, tz, tilt, pan, roll]``: translation in metres along the camera's +X (right), +Y (down),
    +Z (forward), then rotation in radians about +X, +Y, +Z; ``Δ = [R_y(pan) R_x(tilt) R_z(roll) | t]``
    (translate, then rotate about the new origin).
    """
    m = _f64(motion)
    if m.shape[-1] != 6:
        raise ValueError(f"expected motion(s) of shape (..., 6), got {m.shape}")
    return make_pose(ptr_to_matrix(m[..., 4], m[..., 3], m[..., 5]), m[..., :3])


def delta_to_motion(delta: ArrayLike) -> np.ndarray:
    """Inverse of :func:`motion_to_delta`: Δ (..., 4, 4) → ``[tx, ty, tz, tilt, pan, roll]`` (..., 6)."""
    d = as_pose(delta)
    ptr = matrix_to_ptr(d[..., :3, :3])
    return np.concatenate([d[..., :3, 3], ptr[..., 1:2], ptr[..., 0:1], ptr[..., 2:3]], axis=-1)


def quat_to_matrix(q_xyzw: ArrayLike) -> np.ndarray:
    """Unit quaternions (..., 4) in scalar-last (x, y, z, w) order → rotation matrices (..., 3, 3).

    The quaternion is normalised first; a zero quaternion raises ValueError.
    """
    q = _f64(q_xyzw)
    if q.shape[-1] != 4:
        raise ValueError(f"expected quaternion(s) of shape (..., 4), got {q.shape}")
    n = np.linalg.norm(q, axis=-1, keepdims=True)
    if np.any(n < 1e-12):
        raise ValueError("zero-norm quaternion")
    x, y, z, w = np.moveaxis(q / n, -1, 0)
    R = np.empty(q.shape[:-1] + (3, 3))
    R[..., 0, 0] = 1 - 2 * (y * y + z * z)
    R[..., 0, 1] = 2 * (x * y - z * w)
    R[..., 0, 2] = 2 * (x * z + y * w)
    R[..., 1, 0] = 2 * (x * y + z * w)
    R[..., 1, 1] = 1 - 2 * (x * x + z * z)
    R[..., 1, 2] = 2 * (y * z - x * w)
    R[..., 2, 0] = 2 * (x * z - y * w)
    R[..., 2, 1] = 2 * (y * z + x * w)
    R[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return R


def matrix_to_quat(R: ArrayLike) -> np.ndarray:
    """Rotation matrices (..., 3, 3) → unit quaternions (..., 4), (x, y, z, w), with w ≥ 0."""
    from scipy.spatial.transform import Rotation

    R = _f64(R)
    batch = R.shape[:-2]
    q = Rotation.from_matrix(R.reshape(-1, 3, 3)).as_quat().reshape(batch + (4,))
    return np.where(q[..., 3:4] < 0, -q, q)


def pose_from_quat_trans(q_xyzw: ArrayLike, t: ArrayLike) -> np.ndarray:
    """(x, y, z, w) quaternions (..., 4) and translations (..., 3) in metres → poses (..., 4, 4) (TUM's layout)."""
    return make_pose(quat_to_matrix(q_xyzw), t)


def pose_to_quat_trans(T: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Poses (..., 4, 4) → ((x, y, z, w) quaternions (..., 4), translations (..., 3))."""
    T = as_pose(T)
    return matrix_to_quat(T[..., :3, :3]), T[..., :3, 3].copy()


def pose_from_pybullet(position: ArrayLike, orientation: ArrayLike) -> np.ndarray:
    """PyBullet's ``(position, orientation)`` pair, as ``getBasePositionAndOrientation`` and ``getLinkState``
    return it: positions (..., 3) in metres and (x, y, z, w) quaternions (..., 4) → poses (..., 4, 4)."""
    return pose_from_quat_trans(orientation, position)


def pose_to_pybullet(T: ArrayLike) -> tuple[list, list]:
    """A pose (4, 4) → PyBullet's ``(position, orientation)`` as lists (``[x, y, z]`` metres, ``[qx, qy, qz, qw]``
    with qw ≥ 0), what ``resetBasePositionAndOrientation`` takes."""
    q, t = pose_to_quat_trans(T)
    return t.tolist(), q.tolist()


def droid_euler_to_matrix(euler: ArrayLike) -> np.ndarray:
    """DROID's extrinsic "xyz" Euler angles (..., 3), radians → rotations (..., 3, 3).

    Extrinsic x-y-z (rotate about the fixed X, then fixed Y, then fixed Z) is ``R = R_z(c) R_y(b) R_x(a)``,
    scipy's ``Rotation.from_euler("xyz", [a, b, c])`` (lower case = extrinsic).
    """
    e = _f64(euler)
    if e.shape[-1] != 3:
        raise ValueError(f"expected Euler angles of shape (..., 3), got {e.shape}")
    return rot_z(e[..., 2]) @ rot_y(e[..., 1]) @ rot_x(e[..., 0])


def matrix_to_droid_euler(R: ArrayLike) -> np.ndarray:
    """Rotations (..., 3, 3) → DROID's extrinsic "xyz" Euler angles (..., 3), radians."""
    from scipy.spatial.transform import Rotation

    R = _f64(R)
    batch = R.shape[:-2]
    return Rotation.from_matrix(R.reshape(-1, 3, 3)).as_euler("xyz").reshape(batch + (3,))


def pose_from_droid(cartesian_position: ArrayLike) -> np.ndarray:
    """DROID ``cartesian_position`` rows (..., 6) = xyz (m) + extrinsic "xyz" Euler (rad) → poses (..., 4, 4)."""
    c = _f64(cartesian_position)
    if c.shape[-1] != 6:
        raise ValueError(f"expected cartesian_position of shape (..., 6), got {c.shape}")
    return make_pose(droid_euler_to_matrix(c[..., 3:]), c[..., :3])


def pose_to_droid(T: ArrayLike) -> np.ndarray:
    """Poses (..., 4, 4) → DROID ``cartesian_position`` rows (..., 6)."""
    T = as_pose(T)
    return np.concatenate([T[..., :3, 3], matrix_to_droid_euler(T[..., :3, :3])], axis=-1)


def _matmul_bt(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    # A @ Bᵀ with one fixed summation order for every element, so that A @ Aᵀ comes out exactly
    # symmetric and the geodesic angle of a perfect match is exactly 0 (BLAS gives no such promise).
    return (A[..., :, None, :] * B[..., None, :, :]).sum(axis=-1)


def geodesic_angle(R1: ArrayLike, R2: ArrayLike | None = None) -> np.ndarray:
    """Angle (radians, in [0, π]) of the rotation ``R1 @ R2ᵀ`` (or of ``R1`` when ``R2`` is None).

    The atan2 form ``θ = atan2(‖vee(M − Mᵀ)‖ / 2, (tr M − 1) / 2)`` is accurate near 0 and near π (unlike
    ``arccos``), and gives exactly 0 for identical inputs.
    """
    R1 = _f64(R1)
    M = R1 if R2 is None else _matmul_bt(R1, _f64(R2))
    vx = M[..., 2, 1] - M[..., 1, 2]
    vy = M[..., 0, 2] - M[..., 2, 0]
    vz = M[..., 1, 0] - M[..., 0, 1]
    sin_theta = 0.5 * np.sqrt(vx * vx + vy * vy + vz * vz)
    cos_theta = 0.5 * (M[..., 0, 0] + M[..., 1, 1] + M[..., 2, 2] - 1.0)
    return np.arctan2(sin_theta, cos_theta)


def rotation_error(T1: ArrayLike, T2: ArrayLike) -> np.ndarray:
    """Geodesic angle (radians) between the rotation parts of poses (..., 4, 4)."""
    return geodesic_angle(as_pose(T1)[..., :3, :3], as_pose(T2)[..., :3, :3])


def orthonormality_error(R: ArrayLike) -> np.ndarray:
    """max |RᵀR − I| per rotation, plus |det R − 1|: 0 for a proper rotation; readers reject large values."""
    R = _f64(R)
    RtR = np.swapaxes(R, -1, -2) @ R
    off = np.abs(RtR - np.eye(3)).max(axis=(-1, -2))
    return off + np.abs(np.linalg.det(R) - 1.0)


def relative_pose(T_from: ArrayLike, T_to: ArrayLike) -> np.ndarray:
    """The body-frame motion Δ taking ``T_from`` to ``T_to`` (both C2W): ``T_to = T_from @ Δ``."""
    return invert_pose(T_from) @ as_pose(T_to)
