"""The habitat-sim backend: pose conversions (tested everywhere) and the simulator itself (where it is installed)."""

import math

import numpy as np
import pytest

from spatialact import geometry
from spatialact.envs import make_env
from spatialact.envs.habitat_backend import (INSTALL_HINT, HabitatUnavailable, habitat_available, habitat_hfov,
                                             pose_from_habitat, pose_to_habitat)
from spatialact.envs.camera import look_at


def test_identity_habitat_camera_known_answer():
    """habitat's identity camera at (1, 2, 3) (Y-up world, looking along −Z) looks along world +Y in our Z-up world,
    with the image's down direction along world −Z, and stands at (1, −3, 2)."""
    T = pose_from_habitat([1.0, 2.0, 3.0], [0.0, 0.0, 0.0, 1.0])
    np.testing.assert_allclose(T[:3, 3], [1.0, -3.0, 2.0], atol=1e-12)
    np.testing.assert_allclose(T[:3, 2], [0.0, 1.0, 0.0], atol=1e-12)   # forward
    np.testing.assert_allclose(T[:3, 1], [0.0, 0.0, -1.0], atol=1e-12)  # image down
    np.testing.assert_allclose(T[:3, 0], [1.0, 0.0, 0.0], atol=1e-12)   # image right


def test_round_trip_and_forward_direction():
    rng = np.random.default_rng(0)
    for _ in range(20):
        eye = rng.uniform(-3, 3, 3)
        T = look_at(eye, eye + rng.normal(size=3)) @ geometry.make_pose(geometry.rot_z(rng.uniform(-1, 1)), np.zeros(3))
        pos, q = pose_to_habitat(T)
        np.testing.assert_allclose(pose_from_habitat(pos, q), T, atol=1e-12)
        # habitat's camera looks along its local −Z; in the Z-up world that must be our camera's +Z
        R_h = geometry.quat_to_matrix(q)
        fwd_yup = R_h @ np.array([0.0, 0.0, -1.0])
        np.testing.assert_allclose(geometry.YUP_TO_ZUP[:3, :3] @ fwd_yup, T[:3, 2], atol=1e-12)
        np.testing.assert_allclose(geometry.YUP_TO_ZUP[:3, :3] @ pos, T[:3, 3], atol=1e-12)


def test_horizontal_fov():
    assert habitat_hfov(90.0, 64, 64) == pytest.approx(90.0)
    assert habitat_hfov(60.0, 128, 64) == pytest.approx(math.degrees(2 * math.atan(2 * math.tan(math.radians(30)))))


def test_backend_selection_errors():
    with pytest.raises(ValueError, match="navigation"):
        make_env("manip", backend="habitat")


@pytest.mark.skipif(habitat_available(), reason="habitat-sim is installed: the missing-package message is not shown")
def test_missing_habitat_names_the_install_route():
    with pytest.raises(HabitatUnavailable, match="conda install habitat-sim -c conda-forge -c aihabitat"):
        make_env("nav", backend="habitat", scene={"generator": "mesh", "mesh": "scene.glb"})
    assert "conda install habitat-sim -c conda-forge -c aihabitat" in INSTALL_HINT


def test_habitat_renders_a_mesh_scene(tmp_path):
    if not habitat_available():
        print(f"habitat-sim unavailable: {INSTALL_HINT}")
        pytest.skip(INSTALL_HINT)
    import trimesh

    box = trimesh.creation.box(extents=[0.5, 0.5, 0.5])
    box.apply_translation([0.0, 1.0, -2.0])  # glTF / habitat: +Y up, 2 m in front of an identity camera
    box.visual.face_colors = [255, 0, 0, 255]
    floor = trimesh.creation.box(extents=[8, 0.02, 8])
    path = tmp_path / "scene.glb"
    trimesh.util.concatenate([box, floor]).export(path)
    env = make_env("nav", backend="habitat", width=64, height=64, depth=True,
                   scene={"generator": "mesh", "mesh": str(path)}, wrap=False)
    env.world.load_scene({"generator": "mesh", "mesh": str(path)})
    T = pose_from_habitat([0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0])
    depth = env.render_depth(T)
    assert float(depth[32, 32]) == pytest.approx(1.75, abs=0.05)
    rgb = env.render_view(T)
    assert rgb[28:36, 28:36, 0].mean() > 2 * rgb[28:36, 28:36, 2].mean()
    env.close()
