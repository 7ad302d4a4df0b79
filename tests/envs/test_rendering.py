"""Rendering and scenes: projection geometry, metric depth, segmentation, determinism, mesh files, EGL."""

import numpy as np
import pytest

from spatialact import geometry
from spatialact.envs.camera import CameraSpec, intrinsics_matrix, look_at
from spatialact.envs.rendering import BulletBackend, EGLUnavailable
from spatialact.envs.scenes import build_scene, normalise_scene_spec


@pytest.fixture(scope="module")
def world():
    w = BulletBackend("tiny")
    yield w
    w.close()


def _sphere(world, pos, r=0.05, colour=(1, 0, 0)):
    p = world.p
    vis = p.createVisualShape(p.GEOM_SPHERE, radius=r, rgbaColor=list(colour) + [1], physicsClientId=world.client)
    return p.createMultiBody(0, -1, vis, basePosition=list(pos), physicsClientId=world.client)


def test_intrinsics_known_answer():
    K = intrinsics_matrix(64, 48, 90.0)
    # tan(45°) = 1: fy = half the height; square pixels; centre between the middle pixels
    assert K[1, 1] == pytest.approx(24.0)
    assert K[0, 0] == pytest.approx(24.0)
    assert (K[0, 2], K[1, 2]) == (31.5, 23.5)


def test_projection_matches_pinhole_model(world):
    """A small sphere at a known world point appears where K and the OpenCV C2W pose say it should."""
    world.reset_world()
    target = np.array([0.3, -0.2, 1.1])
    body = _sphere(world, target, 0.08)
    # camera 2 m away along world +X looking back, tilted and rolled a little
    T = look_at([2.3, 0.4, 1.6], [0.0, 0.0, 1.0]) @ geometry.make_pose(geometry.rot_z(0.2), np.zeros(3))
    cam = CameraSpec(96, 80, 55.0)
    _, _, seg = world.render(T, cam, depth=False, segmentation=True)
    vs, us = np.nonzero(seg == body)
    assert len(us) > 5
    x = geometry.invert_pose(T) @ np.append(target, 1.0)
    K = cam.K
    u_exp, v_exp = K[0, 0] * x[0] / x[2] + K[0, 2], K[1, 1] * x[1] / x[2] + K[1, 2]
    assert us.mean() == pytest.approx(u_exp, abs=0.75)
    assert vs.mean() == pytest.approx(v_exp, abs=0.75)


def test_depth_is_metric_z(world):
    """A wall 1.7 m in front: depth is 1.7 m along the optical axis at every pixel (z-depth, not ray length)."""
    world.reset_world()
    p = world.p
    vis = p.createVisualShape(p.GEOM_BOX, halfExtents=[0.01, 5, 5], physicsClientId=world.client)
    p.createMultiBody(0, -1, vis, basePosition=[2.0, 0, 1], physicsClientId=world.client)
    T = look_at([0.3 - 0.0, 0.0, 1.0], [5.0, 0.0, 1.0])  # wall face at x = 1.99 → 1.69 m
    rgb, depth, _ = world.render(T, CameraSpec(32, 32, 70.0))
    assert depth.dtype == np.float32 and depth.shape == (32, 32)
    np.testing.assert_allclose(depth, 1.69, atol=2e-3)
    assert rgb.dtype == np.uint8 and rgb.shape == (32, 32, 3)


def test_room_is_deterministic_and_seed_dependent(world):
    cam = CameraSpec(48, 48, 70.0)
    T = look_at([1.0, -1.0, 1.5], [0.0, 0.0, 0.8])

    def shot(seed):
        world.reset_world()
        info = build_scene(world, {"generator": "room", "seed": seed})
        return info, world.render(T, cam)[0]

    i1, a = shot(11)
    i2, b = shot(11)
    _, c = shot(12)
    assert np.array_equal(a, b)
    assert i1.spec == i2.spec and len(i1.bodies) == len(i2.bodies)
    assert not np.array_equal(a, c)
    assert a.std() > 10  # textured walls and furniture, not a flat colour


@pytest.mark.parametrize("generator", ["room", "tabletop"])
def test_scene_rebuilds_from_its_own_returned_spec(world, generator):
    """Tasks store ``SceneInfo.spec`` (with the defaults the builder filled in): it must rebuild the same scene."""
    cam = CameraSpec(40, 40, 70.0)
    T = look_at([1.2, -0.9, 1.4], [0.0, 0.3, 0.7])
    world.reset_world()
    info = build_scene(world, {"generator": generator, "seed": 6})
    a = world.render(T, cam)[0]
    world.reset_world()
    info2 = build_scene(world, info.spec)
    assert info2.spec == info.spec
    np.testing.assert_array_equal(world.render(T, cam)[0], a)


def test_room_layouts_and_spec_errors(world):
    layouts = set()
    for seed in range(4):
        world.reset_world()
        layout = ["living", "kitchen", "office", "playroom"][seed]
        info = build_scene(world, {"generator": "room", "seed": seed, "params": {"layout": layout}})
        layouts.add(info.spec["params"]["layout"])
        lo, hi = info.nav_box[:, 0], info.nav_box[:, 1]
        assert np.all(hi > lo)
        assert len(info.obstacles) >= 2
    assert len(layouts) == 4
    with pytest.raises(ValueError, match="generator"):
        normalise_scene_spec({"generator": "castle"})
    with pytest.raises(ValueError, match="mesh"):
        normalise_scene_spec({"generator": "mesh"})
    world.reset_world()
    with pytest.raises(ValueError, match="layout"):
        build_scene(world, {"generator": "room", "seed": 0, "params": {"layout": "garage"}})


def _two_box_mesh():
    import trimesh

    red = trimesh.creation.box(extents=[0.4, 0.4, 0.4])
    red.apply_translation([2.0, 0.0, 1.0])
    red.visual.face_colors = [255, 0, 0, 255]
    blue = trimesh.creation.box(extents=[0.4, 0.4, 0.4])
    blue.apply_translation([-2.0, 0.0, 1.0])
    blue.visual.face_colors = [0, 0, 255, 255]
    floor = trimesh.creation.box(extents=[6, 6, 0.02])
    floor.apply_translation([0, 0, -0.01])
    floor.visual.face_colors = [128, 128, 128, 255]
    return trimesh.util.concatenate([red, blue, floor])


@pytest.mark.parametrize("ext", ["ply", "obj", "glb"])
def test_mesh_scene_from_file(world, tmp_path, ext):
    """A mesh scene (Habitat's formats) loads with its colours and its up axis: .glb is +Y up and is turned to +Z."""
    mesh = _two_box_mesh()
    if ext == "glb":
        mesh.apply_transform(geometry.zup_to_yup(np.eye(4)))  # write it the way glTF / Habitat store scenes
    path = tmp_path / f"scene.{ext}"
    mesh.export(path)
    world.reset_world()
    info = build_scene(world, {"generator": "mesh", "mesh": str(path), "seed": 0})
    assert info.nav_box.shape == (3, 2)
    cam = CameraSpec(32, 32, 40.0)
    eye = np.array([0.0, 0.0, 1.0])
    rgb_px, _, _ = world.render(look_at(eye, [2.0, 0.0, 1.0]), cam)
    rgb_nx, d_nx, _ = world.render(look_at(eye, [-2.0, 0.0, 1.0]), cam)
    c = rgb_px[12:20, 12:20].reshape(-1, 3).mean(0)
    assert c[0] > 2 * c[2] and c[0] > 60  # red ahead along +x
    c = rgb_nx[12:20, 12:20].reshape(-1, 3).mean(0)
    assert c[2] > 2 * c[0] and c[2] > 60  # blue along −x
    assert float(d_nx[16, 16]) == pytest.approx(1.8, abs=0.01)  # its near face is 1.8 m away


def test_mesh_scene_missing_file(world):
    with pytest.raises(FileNotFoundError, match="scene.mesh"):
        build_scene(world, {"generator": "mesh", "mesh": "/nonexistent/scene.glb"})


def test_egl_renderer_loads_before_bodies_and_renders():
    """EGL (GPU, or Mesa's llvmpipe on a CPU): the plugin loads first, reports its GL renderer and draws the scene."""
    try:
        w = BulletBackend("egl")
    except EGLUnavailable as e:
        print(f"EGL unavailable: {e}")
        pytest.skip(f"EGL renderer unavailable here: {e} (needs libegl1 libgl1-mesa-dri libegl-mesa0)")
    try:
        assert w.gl_renderer and w.gl_renderer != "unknown EGL renderer"
        print("GL renderer:", w.gl_renderer)
        build_scene(w, {"generator": "room", "seed": 3})
        T = look_at([1.0, -1.0, 1.5], [0.0, 0.0, 0.8])
        cam = CameraSpec(48, 48, 70.0)
        rgb, depth, _ = w.render(T, cam)
        assert rgb.std() > 10  # not an empty (uniform) frame
        t = BulletBackend("tiny")
        try:
            build_scene(t, {"generator": "room", "seed": 3})
            _, depth_tiny, _ = t.render(T, cam)
        finally:
            t.close()
        # the same geometry: depths agree on most pixels (rasterisers differ at edges)
        close = np.abs(depth - depth_tiny) < 0.05 * depth_tiny
        assert close.mean() > 0.9
    finally:
        w.close()


def test_auto_renderer_picks_gl_when_it_starts():
    """``auto`` is the project's gl renderer when its EGL context starts (a GPU, or Mesa's llvmpipe), else tiny with
    the reason kept in ``fallback_reason``."""
    from spatialact.envs.gl import gl_available
    from spatialact.envs.rendering import gpu_present

    ok, why = gl_available()
    w = BulletBackend("auto")
    try:
        if ok:
            assert w.renderer == "gl" and w.gl_renderer.startswith("spatialact-gl on ")
            print("GL renderer:", w.gl_renderer)
            if gpu_present():
                assert "llvmpipe" not in w.gl_renderer  # on a GPU machine EGL must not fall back to Mesa
        else:
            assert w.renderer == "tiny" and w.gl_renderer == "TinyRenderer (CPU)" and w.fallback_reason == why
    finally:
        w.close()
    with pytest.raises(ValueError, match="renderer"):
        BulletBackend("vulkan")


def test_tiny_draws_the_same_at_either_render_quality():
    """``render_quality`` is the gl renderer's: TinyRenderer draws the same images at both; an unknown quality is
    refused in one line."""
    out = []
    for quality in ("default", "high"):
        w = BulletBackend("tiny", render_quality=quality)
        try:
            assert w.render_quality == quality
            build_scene(w, {"generator": "tabletop", "seed": 2})
            out.append(w.render(look_at([1.0, -1.0, 1.3], [0.45, 0.0, 0.78]), CameraSpec(48, 40, 60.0)))
        finally:
            w.close()
    assert all(np.array_equal(a, b) for a, b in zip(out[0], out[1]))
    with pytest.raises(ValueError, match="render_quality must be one of default, high, got 'best'"):
        BulletBackend("tiny", render_quality="best")
