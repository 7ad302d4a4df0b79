"""The camera module (spatialact.envs.camera): one owner of the pinhole model and its matrices, imported by both
renderers."""

from __future__ import annotations

import numpy as np
import pytest

from spatialact import geometry
from spatialact.envs import camera
from spatialact.envs.camera import CameraSpec, gl_projection, gl_view, look_at, projection_matrix, view_matrix


def test_look_at_known_answer():
    """From (2, 0, 1) looking along −X, by hand: forward z = (−1, 0, 0), right x = z × up = (0, 1, 0), down
    y = z × x = (0, 0, −1)."""
    T = look_at([2.0, 0.0, 1.0], [0.0, 0.0, 1.0])
    np.testing.assert_allclose(T[:3, 2], [-1, 0, 0])
    np.testing.assert_allclose(T[:3, 0], [0, 1, 0])
    np.testing.assert_allclose(T[:3, 1], [0, 0, -1])
    np.testing.assert_allclose(T[:3, 3], [2, 0, 1])
    assert geometry.orthonormality_error(T[:3, :3]) < 1e-12


def test_gl_view_puts_the_target_on_the_minus_z_axis():
    rng = np.random.default_rng(3)
    for _ in range(20):
        eye, target = rng.normal(size=3) * 3, rng.normal(size=3)
        V = gl_view(look_at(eye, target))
        p = V @ np.append(target, 1.0)
        np.testing.assert_allclose(p[:2], 0, atol=1e-9)
        assert p[2] == pytest.approx(-np.linalg.norm(target - eye))
        np.testing.assert_allclose(V @ np.append(eye, 1.0), [0, 0, 0, 1], atol=1e-9)
        assert view_matrix(look_at(eye, target)) == V.flatten(order="F").tolist()


@pytest.mark.parametrize("shift", [(0.0, 0.0), (-0.5, 0.5)])
def test_projection_lands_on_the_pixel_k_gives(shift):
    """A camera-frame point through gl_projection lands, in pixels (centres at integers, v down), where K (with the
    principal point moved by ``shift``) puts it; the flattened list is the same matrix column-major."""
    cam = CameraSpec.from_intrinsics(80, 60, 70.0, 72.0, 41.0, 28.5, near=0.05, far=30.0)
    P = gl_projection(cam, shift)
    assert projection_matrix(cam, shift) == P.flatten(order="F").tolist()
    rng = np.random.default_rng(0)
    for X, Y, Z in rng.uniform([-1, -1, 0.5], [1, 1, 8], (50, 3)):
        clip = P @ np.array([X, -Y, -Z, 1.0])  # OpenCV camera point → OpenGL camera axes
        ndc = clip[:3] / clip[3]
        u = (ndc[0] + 1) * cam.width / 2 - 0.5
        v = (1 - ndc[1]) * cam.height / 2 - 0.5
        assert u == pytest.approx(cam.fx * X / Z + cam.cx + shift[0])
        assert v == pytest.approx(cam.fy * Y / Z + cam.cy + shift[1])
        assert -1 < ndc[2] < 1


# ----- the pinhole projection: one formula (project_points, unproject_pixels) -------------------------------------
def _looking_along_x(position):
    """C2W pose at ``position`` looking along world +X, level: camera +X (right) = world −Y, +Y (down) = world −Z."""
    T = np.eye(4)
    T[:3, 0], T[:3, 1], T[:3, 2], T[:3, 3] = (0, -1, 0), (0, 0, -1), (1, 0, 0), position
    return T


def test_project_points_known_answer():
    """By hand: camera at (1, 2, 3) looking along +X; the point (5, 1, 2.5) is 4 m ahead, 1 m to the right (world −Y)
    and 0.5 m below, so (X, Y, Z) = (1, 0.5, 4): u = 100·1/4 + 63.5 = 88.5, v = 120·0.5/4 + 47.5 = 62.5 (fx ≠ fy)."""
    cam = CameraSpec.from_intrinsics(128, 96, 100.0, 120.0, 63.5, 47.5)
    T = _looking_along_x([1.0, 2.0, 3.0])
    u, v, z = camera.project_points(T, cam, [5.0, 1.0, 2.5])
    assert (u, v, z) == (88.5, 62.5, 4.0) and np.ndim(u) == 0
    # vectorised over any leading shape; a point behind the camera (or on its plane) has no pixel, but its depth
    pts = np.array([[[5.0, 1.0, 2.5], [0.0, 2.0, 3.0]], [[1.0, 2.0, 3.0], [3.0, 2.0, 3.0]]])
    u, v, z = camera.project_points(T, cam, pts)
    assert u.shape == v.shape == z.shape == (2, 2)
    assert z.tolist() == [[4.0, -1.0], [0.0, 2.0]]
    assert np.isnan(u[0, 1]) and np.isnan(v[0, 1]) and np.isnan(u[1, 0])
    assert (u[1, 1], v[1, 1]) == (63.5, 47.5)  # straight ahead: the principal point
    assert np.allclose(cam.project(T, pts.reshape(-1, 3)), np.stack([u.ravel(), v.ravel()], 1), equal_nan=True)
    # and back: the pixel at its depth is the point
    assert np.allclose(camera.unproject_pixels(T, cam, 88.5, 62.5, 4.0), [5.0, 1.0, 2.5], atol=1e-12)


def _random_views(n, seed=0):
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(seed)
    for i in range(n):
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = Rotation.random(random_state=seed * 1000 + i).as_matrix(), rng.normal(size=3) * 3
        cam = CameraSpec.from_intrinsics(160, 120, *rng.uniform(80, 200, 2), *rng.uniform(40, 100, 2))
        yield rng, T, cam


def test_the_former_projections_give_the_same_numbers():
    """The three projections this one replaced, written out as they were: the question drafts' (one point) and the
    recorded overlap's (many points) give the same bits; CameraSpec.project's former form (through the inverted
    pose) the same up to rounding; likewise the two unprojections."""
    for rng, T, cam in _random_views(200):
        X = rng.normal(size=(50, 3)) * 3
        # questions/drafts.py: project (one point at a time) and unproject
        for p in X[:5]:
            pc = T[:3, :3].T @ (p - T[:3, 3])
            old = ((np.nan, np.nan, pc[2]) if pc[2] <= 1e-6 else
                   (cam.fx * pc[0] / pc[2] + cam.cx, cam.fy * pc[1] / pc[2] + cam.cy, pc[2]))
            new = camera.project_points(T, cam, p)
            assert np.array_equal(np.array(new, dtype=float), np.array(old, dtype=float), equal_nan=True)
        x, y, z = int(rng.integers(160)), int(rng.integers(120)), float(rng.uniform(0.1, 9))
        old = T[:3, :3] @ np.array([(x - cam.cx) / cam.fx * z, (y - cam.cy) / cam.fy * z, z]) + T[:3, 3]
        assert np.array_equal(camera.unproject_pixels(T, cam, x, y, z), old)
        # questions/recorded.py: the shared view of two recorded frames (unproject a grid, project into the other)
        xs, ys, zs = rng.integers(0, 160, 40), rng.integers(0, 120, 40), rng.uniform(0.1, 9, 40)
        pw = np.stack([(xs - cam.cx) / cam.fx * zs, (ys - cam.cy) / cam.fy * zs, zs], axis=1) @ T[:3, :3].T + T[:3, 3]
        assert np.array_equal(camera.unproject_pixels(T, cam, xs, ys, zs), pw)
        qc = (X - T[:3, 3]) @ T[:3, :3]
        front = qc[:, 2] > 1e-6
        u_old = np.where(front, cam.fx * qc[:, 0] / np.where(front, qc[:, 2], 1) + cam.cx, -1)
        v_old = np.where(front, cam.fy * qc[:, 1] / np.where(front, qc[:, 2], 1) + cam.cy, -1)
        u, v, zb = camera.project_points(T, cam, X)
        assert np.array_equal(zb, qc[:, 2]) and np.array_equal(zb > camera.MIN_DEPTH_M, front)
        assert np.array_equal(np.where(front, u, -1), u_old) and np.array_equal(np.where(front, v, -1), v_old)
        # envs/camera.py: CameraSpec.project through the world-to-camera pose
        W2C = geometry.invert_pose(T)
        pc = X @ W2C[:3, :3].T + W2C[:3, 3]
        zc = np.where(pc[:, 2] > 1e-9, pc[:, 2], np.nan)
        old_uv = np.stack([cam.fx * pc[:, 0] / zc + cam.cx, cam.fy * pc[:, 1] / zc + cam.cy], axis=1)
        assert np.allclose(cam.project(T, X), old_uv, rtol=1e-12, atol=1e-9, equal_nan=True)
