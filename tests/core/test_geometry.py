"""spatialact.geometry against hand-computed matrices, scipy's Rotation and transforms3d.

Every check here would fail if a sign, an axis order or a frame convention were wrong.
"""

import math

import numpy as np
import pytest
import transforms3d
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from spatialact import geometry as g

RNG_SEED = 1234


def _random_poses(n, seed=RNG_SEED):
    rng = np.random.default_rng(seed)
    R = Rotation.random(n, random_state=seed).as_matrix()
    t = rng.normal(size=(n, 3))
    return g.make_pose(R, t)


# ----- elementary rotations ---------------------------------------------------------------------------
def test_axis_rotations_hand_computed():
    a = math.pi / 2
    # R_x(90°) sends +Y to +Z; R_y(90°) sends +Z to +X; R_z(90°) sends +X to +Y (right-hand rule).
    np.testing.assert_allclose(g.rot_x(a) @ [0, 1, 0], [0, 0, 1], atol=1e-15)
    np.testing.assert_allclose(g.rot_y(a) @ [0, 0, 1], [1, 0, 0], atol=1e-15)
    np.testing.assert_allclose(g.rot_z(a) @ [1, 0, 0], [0, 1, 0], atol=1e-15)
    c, s = math.cos(0.3), math.sin(0.3)
    np.testing.assert_allclose(g.rot_x(0.3), [[1, 0, 0], [0, c, -s], [0, s, c]], atol=1e-15)
    np.testing.assert_allclose(g.rot_y(0.3), [[c, 0, s], [0, 1, 0], [-s, 0, c]], atol=1e-15)
    np.testing.assert_allclose(g.rot_z(0.3), [[c, -s, 0], [s, c, 0], [0, 0, 1]], atol=1e-15)


def test_axis_rotations_match_scipy_and_are_vectorised():
    a = np.linspace(-3, 3, 7)
    for fn, ax in ((g.rot_x, "x"), (g.rot_y, "y"), (g.rot_z, "z")):
        out = fn(a)
        assert out.shape == (7, 3, 3)
        np.testing.assert_allclose(out, Rotation.from_euler(ax, a[:, None]).as_matrix(), atol=1e-14)
    assert g.rot_x(np.zeros((2, 3))).shape == (2, 3, 3, 3)


# ----- pan / tilt / roll ------------------------------------------------------------------------------
def test_ptr_to_matrix_matches_scipy_yxz_and_transforms3d():
    rng = np.random.default_rng(0)
    ang = rng.uniform(-math.pi, math.pi, size=(200, 3))
    R = g.ptr_to_matrix(ang[:, 0], ang[:, 1], ang[:, 2])
    np.testing.assert_allclose(R, Rotation.from_euler("YXZ", ang).as_matrix(), atol=1e-13)
    for (pan, tilt, roll), Rk in zip(ang[:20], R[:20]):
        # transforms3d: "ryxz" = rotating frame, first about y, then x, then z = Ry Rx Rz.
        np.testing.assert_allclose(Rk, transforms3d.euler.euler2mat(pan, tilt, roll, "ryxz"), atol=1e-13)


def test_matrix_to_ptr_inverts_and_agrees_with_scipy_in_range():
    rng = np.random.default_rng(1)
    n = 500
    ang = np.stack([rng.uniform(-math.pi, math.pi, n), rng.uniform(-1.5, 1.5, n),
                    rng.uniform(-math.pi, math.pi, n)], axis=-1)
    R = Rotation.from_euler("YXZ", ang).as_matrix()
    ptr = g.matrix_to_ptr(R)
    np.testing.assert_allclose(ptr, ang, atol=1e-10)
    # scipy's own decomposition lies in the same ranges away from gimbal lock
    np.testing.assert_allclose(ptr, Rotation.from_matrix(R).as_euler("YXZ"), atol=1e-10)
    # transforms3d's decomposition as a second opinion
    for k in range(20):
        np.testing.assert_allclose(ptr[k], transforms3d.euler.mat2euler(R[k], "ryxz"), atol=1e-10)


def test_matrix_to_ptr_ranges_on_random_rotations():
    R = Rotation.random(2000, random_state=3).as_matrix()
    ptr = g.matrix_to_ptr(R)
    pan, tilt, roll = ptr.T
    assert np.all((pan > -math.pi) & (pan <= math.pi))
    assert np.all((roll > -math.pi) & (roll <= math.pi))
    assert np.all((tilt >= -math.pi / 2) & (tilt <= math.pi / 2))
    np.testing.assert_allclose(g.ptr_to_matrix(pan, tilt, roll), R, atol=1e-12)


def test_matrix_to_ptr_pi_boundary_is_plus_pi():
    # pan = π and roll = π exactly: (−π, π] means +π, never −π.
    ptr = g.matrix_to_ptr(g.rot_y(math.pi))
    assert ptr[0] == pytest.approx(math.pi) and ptr[0] > 0
    ptr = g.matrix_to_ptr(g.rot_z(math.pi))
    assert ptr[2] == pytest.approx(math.pi) and ptr[2] > 0
    ptr = g.matrix_to_ptr(g.rot_z(-math.pi))
    assert ptr[2] > 0


@pytest.mark.parametrize("tilt", [math.pi / 2, -math.pi / 2])
def test_gimbal_lock_gives_roll_zero(tilt):
    for pan, roll in [(0.3, 0.5), (-2.0, 1.0), (1.0, -0.4), (3.0, 0.2)]:
        R = g.ptr_to_matrix(pan, tilt, roll)
        p, t, r = g.matrix_to_ptr(R)
        assert r == 0.0
        assert t == pytest.approx(tilt, abs=1e-7)
        np.testing.assert_allclose(g.ptr_to_matrix(p, t, r), R, atol=1e-7)


def test_motion_to_delta_hand_computed_and_round_trip():
    # Translate then rotate: t is taken as given in the starting frame; the rotation does not move it.
    m = np.array([0.1, -0.2, 0.3, 0.0, math.pi / 2, 0.0])  # pan right 90°
    D = g.motion_to_delta(m)
    np.testing.assert_allclose(D, [[0, 0, 1, 0.1], [0, 1, 0, -0.2], [-1, 0, 0, 0.3], [0, 0, 0, 1]], atol=1e-15)
    rng = np.random.default_rng(4)
    ms = np.concatenate([rng.normal(size=(100, 3)), rng.uniform(-1.4, 1.4, (100, 3))], axis=-1)
    np.testing.assert_allclose(g.delta_to_motion(g.motion_to_delta(ms)), ms, atol=1e-12)
    with pytest.raises(ValueError):
        g.motion_to_delta(np.zeros(5))


# ----- rigid transforms, frame converters ---------------------------------------------------------------
def test_invert_pose_and_c2w_w2c():
    T = _random_poses(50)
    Ti = g.invert_pose(T)
    np.testing.assert_allclose(T @ Ti, np.broadcast_to(np.eye(4), T.shape), atol=1e-12)
    np.testing.assert_allclose(Ti, np.linalg.inv(T), atol=1e-12)
    W2C = g.c2w_to_w2c(T)
    # the camera centre (origin of the camera frame) maps to the camera origin in camera coordinates
    centre = np.concatenate([T[:, :3, 3], np.ones((50, 1))], axis=-1)
    np.testing.assert_allclose(np.einsum("nij,nj->ni", W2C, centre)[:, :3], 0, atol=1e-12)
    np.testing.assert_allclose(g.w2c_to_c2w(W2C), T, atol=1e-12)
    assert Ti[:, 3].tolist() == [[0, 0, 0, 1]] * 50


def test_opengl_to_opencv_flips_y_and_z_axes():
    T = _random_poses(10)
    Tcv = g.opengl_to_opencv(T)
    # columns are the camera axes in world coordinates: X kept, Y and Z negated, position kept
    np.testing.assert_array_equal(Tcv[:, :3, 0], T[:, :3, 0])
    np.testing.assert_array_equal(Tcv[:, :3, 1], -T[:, :3, 1])
    np.testing.assert_array_equal(Tcv[:, :3, 2], -T[:, :3, 2])
    np.testing.assert_array_equal(Tcv[:, :3, 3], T[:, :3, 3])
    np.testing.assert_array_equal(g.opencv_to_opengl(Tcv), T)
    # An OpenGL camera at the origin looking down −Z (world) is an OpenCV camera whose +Z points to −Z.
    cv = g.opengl_to_opencv(np.eye(4))
    np.testing.assert_array_equal(cv[:3, 2], [0, 0, -1])
    np.testing.assert_array_equal(cv[:3, 1], [0, -1, 0])


def test_yup_to_zup_maps_up_to_up():
    # A point 1 m "up" in a Y-up world is 1 m up (+Z) in ours; Y-up's +Z (towards the viewer) becomes −Y.
    T = g.make_pose(np.eye(3), [0.0, 1.0, 2.0])
    Tz = g.yup_to_zup(T)
    np.testing.assert_allclose(Tz[:3, 3], [0.0, -2.0, 1.0], atol=1e-15)
    np.testing.assert_allclose(g.YUP_TO_ZUP[:3, :3], g.rot_x(math.pi / 2), atol=1e-15)
    Ts = _random_poses(20)
    np.testing.assert_allclose(g.zup_to_yup(g.yup_to_zup(Ts)), Ts, atol=1e-15)
    # the whole chain for an ARKit camera: gravity direction in camera coords is unchanged by the chain
    Tcv = g.opengl_to_opencv(g.yup_to_zup(Ts))
    up_y = np.einsum("nji,j->ni", Ts[:, :3, :3], [0, 1, 0])  # world up in ARKit-camera coordinates
    up_z = np.einsum("nji,j->ni", Tcv[:, :3, :3], [0, 0, 1])  # world up in OpenCV-camera coordinates
    np.testing.assert_allclose(up_z, up_y * [1, -1, -1], atol=1e-12)


def test_as_pose_and_make_pose_shapes():
    with pytest.raises(ValueError):
        g.as_pose(np.eye(3))
    T = g.make_pose(np.eye(3), np.zeros((5, 3)))
    assert T.shape == (5, 4, 4) and T.dtype == np.float64
    np.testing.assert_array_equal(T[:, 3], np.tile([0, 0, 0, 1.0], (5, 1)))


# ----- quaternions, DROID Euler -----------------------------------------------------------------------
def test_quaternion_xyzw_matches_scipy():
    q = Rotation.random(300, random_state=5).as_quat()  # scipy is scalar-last (x, y, z, w)
    R = g.quat_to_matrix(q)
    np.testing.assert_allclose(R, Rotation.from_quat(q).as_matrix(), atol=1e-14)
    np.testing.assert_allclose(g.quat_to_matrix(3.0 * q), R, atol=1e-14)  # normalised first
    back = g.matrix_to_quat(R)
    assert np.all(back[:, 3] >= 0)
    np.testing.assert_allclose(np.abs(np.sum(back * q, axis=-1)), 1.0, atol=1e-12)  # same up to sign
    # transforms3d is scalar-first (w, x, y, z): the same rotation after reordering
    np.testing.assert_allclose(R[0], transforms3d.quaternions.quat2mat(q[0, [3, 0, 1, 2]]), atol=1e-14)
    # hand-computed: 90° about +Z
    s = math.sqrt(0.5)
    np.testing.assert_allclose(g.quat_to_matrix([0, 0, s, s]), [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-15)
    with pytest.raises(ValueError):
        g.quat_to_matrix([0, 0, 0, 0])
    with pytest.raises(ValueError):
        g.quat_to_matrix([0, 0, 1])


def test_pose_quat_trans_round_trip():
    T = _random_poses(40)
    q, t = g.pose_to_quat_trans(T)
    np.testing.assert_allclose(g.pose_from_quat_trans(q, t), T, atol=1e-12)


def test_pybullet_pose_pair_matches_pybullet():
    """PyBullet's (position, orientation) pair: the rotation is the one PyBullet's own getMatrixFromQuaternion gives
    (row-major 3×3), batches convert at once, and the round trip gives lists PyBullet's calls take."""
    pybullet = pytest.importorskip("pybullet")
    q = Rotation.random(50, random_state=8).as_quat()
    pos = np.random.default_rng(8).normal(size=(50, 3))
    T = g.pose_from_pybullet(pos, q)
    assert T.shape == (50, 4, 4)
    for k in range(50):
        R = np.array(pybullet.getMatrixFromQuaternion(q[k].tolist())).reshape(3, 3)
        np.testing.assert_allclose(T[k, :3, :3], R, atol=1e-12)
        np.testing.assert_array_equal(T[k, :3, 3], pos[k])
        p_back, q_back = g.pose_to_pybullet(T[k])
        assert isinstance(p_back, list) and isinstance(q_back, list) and len(q_back) == 4 and q_back[3] >= 0
        np.testing.assert_allclose(g.pose_from_pybullet(p_back, q_back), T[k], atol=1e-12)
    with pytest.raises(ValueError):
        g.pose_from_pybullet([0, 0, 0], [0, 0, 0, 0])


def test_droid_euler_matches_scipy_extrinsic_xyz():
    rng = np.random.default_rng(6)
    e = rng.uniform(-math.pi, math.pi, size=(300, 3))
    R = g.droid_euler_to_matrix(e)
    np.testing.assert_allclose(R, Rotation.from_euler("xyz", e).as_matrix(), atol=1e-13)
    # transforms3d "sxyz" = static (extrinsic) axes x, y, z
    np.testing.assert_allclose(R[0], transforms3d.euler.euler2mat(*e[0], "sxyz"), atol=1e-13)
    # and it is NOT the intrinsic order (a wrong reading would pass a test of one axis alone)
    assert not np.allclose(R, Rotation.from_euler("XYZ", e).as_matrix(), atol=1e-3)
    rows = np.concatenate([rng.normal(size=(300, 3)), e], axis=-1)
    T = g.pose_from_droid(rows)
    np.testing.assert_allclose(T[:, :3, 3], rows[:, :3])
    np.testing.assert_allclose(g.droid_euler_to_matrix(g.pose_to_droid(T)[:, 3:]), R, atol=1e-12)
    with pytest.raises(ValueError):
        g.pose_from_droid(np.zeros(5))


# ----- geodesic angle ---------------------------------------------------------------------------------
def test_geodesic_angle_exact_zero_on_identical_rotations():
    R = Rotation.random(1000, random_state=7).as_matrix()
    ang = g.geodesic_angle(R, R)
    assert ang.shape == (1000,)
    assert np.all(ang == 0.0)  # exactly, not approximately
    T = _random_poses(100)
    assert np.all(g.rotation_error(T, T.copy()) == 0.0)


def test_geodesic_angle_pi_on_half_turns_and_vs_scipy():
    axes = Rotation.random(200, random_state=8).as_rotvec()
    axes /= np.linalg.norm(axes, axis=-1, keepdims=True)
    half = Rotation.from_rotvec(math.pi * axes).as_matrix()
    np.testing.assert_allclose(g.geodesic_angle(half), math.pi, atol=1e-7)
    assert g.geodesic_angle(g.rot_x(math.pi)) == pytest.approx(math.pi, abs=1e-15)
    assert g.geodesic_angle(np.eye(3), g.rot_z(math.pi)) == pytest.approx(math.pi, abs=1e-15)
    A = Rotation.random(500, random_state=9)
    B = Rotation.random(500, random_state=10)
    expected = (A * B.inv()).magnitude()
    np.testing.assert_allclose(g.geodesic_angle(A.as_matrix(), B.as_matrix()), expected, atol=1e-10)
    # small angles: the atan2 form stays accurate where arccos would lose digits
    assert g.geodesic_angle(g.rot_y(1e-9)) == pytest.approx(1e-9, rel=1e-6)


def test_geodesic_angle_broadcasts_over_batches():
    R = Rotation.random(12, random_state=11).as_matrix().reshape(3, 4, 3, 3)
    assert g.geodesic_angle(R, np.eye(3)).shape == (3, 4)


def test_orthonormality_and_relative_pose():
    R = Rotation.random(10, random_state=12).as_matrix()
    assert np.all(g.orthonormality_error(R) < 1e-12)
    assert g.orthonormality_error(np.diag([1.0, 1.0, -1.0])) == pytest.approx(2.0)  # a reflection
    assert g.orthonormality_error(1.1 * np.eye(3)) > 0.2
    A, B = _random_poses(10, 1), _random_poses(10, 2)
    D = g.relative_pose(A, B)
    np.testing.assert_allclose(A @ D, B, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.floats(-math.pi, math.pi), st.floats(-math.pi / 2, math.pi / 2), st.floats(-math.pi, math.pi))
def test_ptr_compose_decompose_is_identity_on_rotations(pan, tilt, roll):
    R = g.ptr_to_matrix(pan, tilt, roll)
    p, t, r = g.matrix_to_ptr(R)
    np.testing.assert_allclose(g.ptr_to_matrix(p, t, r), R, atol=1e-7)
