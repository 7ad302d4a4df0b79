"""The camera module (spatialact.envs.camera): one owner of the pinhole model and its matrices, imported by both
renderers; the names stay importable from where they were (rendering, scenes)."""

from __future__ import annotations

import numpy as np
import pytest

from spatialact import geometry
from spatialact.envs import camera, rendering, scenes
from spatialact.envs.camera import CameraSpec, gl_projection, gl_view, look_at, projection_matrix, view_matrix


def test_old_paths_are_the_same_objects():
    for name in ("CameraSpec", "view_matrix", "projection_matrix", "intrinsics_matrix", "TINY_SHIFT_PX"):
        assert getattr(rendering, name) is getattr(camera, name), name
    assert scenes.look_at is camera.look_at


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
