"""The gl renderer (spatialact.envs.gl): depth against TinyRenderer, pixel conventions, determinism, K views, shadows,
render qualities (edge smoothing, multisampling), decimation and its cache, the hand's visual, ``auto``'s fallback,
and the three environments."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import ndimage

pytest.importorskip("pybullet")
pytest.importorskip("moderngl")

from spatialact import geometry  # noqa: E402
from spatialact.envs.camera import TINY_SHIFT_PX, CameraSpec, look_at, projection_matrix, view_matrix  # noqa: E402
from spatialact.envs.gl import GLRenderer, gl_available  # noqa: E402
from spatialact.envs.rendering import BulletBackend  # noqa: E402
from spatialact.envs.scenes import build_scene  # noqa: E402

_OK, _WHY = gl_available()
pytestmark = pytest.mark.skipif(not _OK, reason=f"the gl renderer cannot start here: {_WHY}")

TABLE_VIEWS = [look_at([1.0, -1.0, 1.3], [0.45, 0.0, 0.78]), look_at([0.2, 0.9, 1.2], [0.5, 0.0, 0.7])]
ROOM_VIEWS = [look_at([1.0, -1.0, 1.5], [0.0, 0.5, 0.8]), look_at([-1.0, 1.0, 1.2], [1.0, -0.5, 0.6])]


def _world(renderer, spec, panda=False, gl=None):
    w = BulletBackend(renderer, gl=gl)
    build_scene(w, spec)
    if panda:
        w.p.loadURDF("franka_panda/panda.urdf", [0, 0, 0.62], useFixedBase=True, physicsClientId=w.client)
    return w


def depth_edges(d: np.ndarray) -> np.ndarray:
    """Pixels within 1 px of a depth discontinuity: a jump or a crease, where inverse depth (affine in the pixel
    coordinates on any plane) has a second difference above 0.1% of its value along a row or a column."""
    w = 1.0 / d.astype(np.float64)
    e = np.zeros(d.shape, bool)
    e[:, 1:-1] |= np.abs(np.diff(w, 2, axis=1)) > 1e-3 * w[:, 1:-1]
    e[1:-1, :] |= np.abs(np.diff(w, 2, axis=0)) > 1e-3 * w[1:-1, :]
    return ndimage.binary_dilation(e, np.ones((3, 3), bool))


def _near_edges(seg: np.ndarray, d: np.ndarray, r: int) -> np.ndarray:
    """Pixels within ``r`` px of a segmentation boundary or a depth discontinuity."""
    e = depth_edges(np.minimum(d, 1e3))
    e[:, 1:] |= seg[:, 1:] != seg[:, :-1]
    e[1:, :] |= seg[1:, :] != seg[:-1, :]
    return ndimage.binary_dilation(e, np.ones((2 * r + 1, 2 * r + 1), bool))


def _compare(d_tiny, d_gl, far):
    bg_t, bg_g = d_tiny >= far * 0.9999, d_gl >= far * 0.9999
    edges = depth_edges(d_tiny) | depth_edges(d_gl)
    hit = ~bg_t & ~bg_g
    dd = np.abs(d_tiny.astype(np.float64) - d_gl)
    return {"median": float(np.median(dd[hit])), "within_1cm": float((dd[hit] <= 0.01).mean()),
            "beyond_1cm_off_edges": int((hit & (dd > 0.01) & ~edges).sum()),
            "background_mismatch_off_edges": int(((bg_t != bg_g) & ~edges).sum()), "edges": float(edges.mean())}


@pytest.fixture(scope="module")
def undecimated():
    r = GLRenderer(max_faces=None)  # no decimated meshes: the same triangles as TinyRenderer draws
    yield r
    r.release()


@pytest.mark.parametrize("spec,panda,views", [({"generator": "tabletop", "seed": 2}, True, TABLE_VIEWS),
                                              ({"generator": "room", "seed": 1}, False, ROOM_VIEWS),
                                              ({"generator": "room", "seed": 5}, False, ROOM_VIEWS)])
def test_depth_matches_tinyrenderer(undecimated, spec, panda, views):
    """Same scene, views, intrinsics and pixel convention: over pixels both hit, median |Δd| < 5 mm and ≥ 95%
    within 1 cm; every pixel beyond 1 cm (and every pixel background in one image only) lies within 1 px of a depth
    discontinuity in either image; background is the far plane in both."""
    cam = CameraSpec(160, 120, 60.0)
    tw, gw = _world("tiny", spec, panda), _world("gl", spec, panda, gl=undecimated)
    try:
        assert gw.gl is not None and gw.renderer == "gl"
        for T in views:
            _, dt, _ = tw.render(T, cam)
            _, dg, _ = gw.render(T, cam)
            assert gw.gl.level(None)["decimated"] == 0
            c = _compare(dt, dg, cam.far)
            print(spec, c)
            assert c["median"] < 0.005 and c["within_1cm"] >= 0.95
            assert c["beyond_1cm_off_edges"] == 0 and c["background_mismatch_off_edges"] == 0
            assert c["edges"] < 0.4  # the exemption is edges, not the image
            assert dt.max() <= cam.far and dg.max() <= cam.far
    finally:
        tw.close()
        gw.close()


def test_background_is_the_far_plane_in_both():
    cam = CameraSpec(32, 24, 60.0)
    T = look_at([0.0, 0.0, 1.0], [0.0, 0.0, 5.0])  # looking up at nothing
    for r in ("tiny", "gl"):
        w = BulletBackend(r)
        try:
            _, d, s = w.render(T, cam, segmentation=True)
            assert np.allclose(d, cam.far, rtol=2e-4) and np.all(s == -1), r
        finally:
            w.close()


def _box(world, pos, half):
    p = world.p
    vis = p.createVisualShape(p.GEOM_BOX, halfExtents=[half] * 3, rgbaColor=[1, 0, 0, 1], physicsClientId=world.client)
    return p.createMultiBody(0, -1, vis, basePosition=list(pos), physicsClientId=world.client)


def test_pixel_conventions():
    """A cube seen face-on along the optical axis (rolled 0.2 rad about it): its silhouette, the front face, is
    centred where K puts the axis, (cx, cy). ``opencv`` renders it there (as BulletBackend's tiny does);
    ``tinyrenderer`` half a pixel right and up — exactly where PyBullet's TinyRenderer puts it when given the
    projection matrix unshifted."""
    target = np.array([0.3, -0.2, 1.1])
    T = look_at(target + [2.0, 0.0, 0.0], target) @ geometry.make_pose(geometry.rot_z(0.2), np.zeros(3))
    cam = CameraSpec(320, 256, 55.0)
    r = GLRenderer()
    w = BulletBackend("gl", gl=r)
    t = BulletBackend("tiny")
    try:
        body = _box(w, target, 0.3)
        _box(t, target, 0.3)
        centres = {}
        for conv in ("opencv", "tinyrenderer"):
            _, _, seg = r.render([_view(w, T, cam)], rgb=False, depth=False, segmentation=True, pixel_convention=conv)
            vs, us = np.nonzero(seg[0] == body)
            centres[conv] = np.array([us.mean(), vs.mean()])
        assert centres["opencv"] == pytest.approx((cam.cx, cam.cy), abs=0.02)
        assert centres["tinyrenderer"] == pytest.approx((cam.cx - TINY_SHIFT_PX[0], cam.cy - TINY_SHIFT_PX[1]), abs=0.02)
        # BulletBackend's tiny (shifted) matches opencv; PyBullet's TinyRenderer unshifted matches tinyrenderer
        _, _, seg = t.render(T, cam, depth=False, segmentation=True)
        vs, us = np.nonzero(seg == 0)
        assert (us.mean(), vs.mean()) == pytest.approx(tuple(centres["opencv"]), abs=0.02)
        p = t.p
        _, _, _, _, sg = p.getCameraImage(cam.width, cam.height, view_matrix(T), projection_matrix(cam),
                                          renderer=p.ER_TINY_RENDERER, physicsClientId=t.client)
        vs, us = np.nonzero(np.asarray(sg).reshape(cam.height, cam.width) == 0)
        assert (us.mean(), vs.mean()) == pytest.approx(tuple(centres["tinyrenderer"]), abs=0.02)
        with pytest.raises(ValueError, match="pixel_convention"):
            r.render([_view(w, T, cam)], pixel_convention="directx")
    finally:
        w.close()
        t.close()


def _view(world, T, cam):
    from spatialact.envs.gl import View

    return View(world.gl, T, cam)


_DET_SCRIPT = r"""
import hashlib, sys
from spatialact.envs.camera import CameraSpec, look_at
from spatialact.envs.rendering import BulletBackend
from spatialact.envs.scenes import build_scene
h = hashlib.sha256()
for quality in ("default", "high"):
    w = BulletBackend("gl", render_quality=quality)
    build_scene(w, {"generator": "tabletop", "seed": 2})
    w.p.loadURDF("franka_panda/panda.urdf", [0, 0, 0.62], useFixedBase=True, physicsClientId=w.client)
    for size in (96, 200):
        rgb, d, s = w.render_batch([look_at([1.0, -1.0, 1.3], [0.45, 0.0, 0.78]),
                                    look_at([0.2, 0.9, 1.2], [0.5, 0, 0.7])], CameraSpec(size, size, 60.0),
                                   segmentation=True)
        for a in (rgb, d, s):
            h.update(a.tobytes())
    w.close()
print(h.hexdigest())
"""


def test_renders_are_bit_identical_across_runs():
    """Two fresh processes render the same scene and views at both render qualities: RGB, depth and segmentation bit
    for bit."""
    digests = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", _DET_SCRIPT], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        assert r.stderr.strip() == ""  # nothing printed from C either
        digests.append(r.stdout.strip())
    assert len(digests[0]) == 64 and digests[0] == digests[1]


@pytest.fixture(scope="module")
def table():
    w = _world("gl", {"generator": "tabletop", "seed": 2}, panda=True)
    yield w
    w.close()


def test_k_views_in_one_call_equal_single_views(table):
    cam = CameraSpec(64, 48, 60.0)
    rng = np.random.default_rng(0)
    poses = [look_at([1.0 + rng.uniform(-0.3, 0.3), -1.0 + rng.uniform(-0.3, 0.3), 1.3], [0.45, 0.0, 0.78])
             for _ in range(9)]
    rgb, d, s = table.render_batch(poses, cam, segmentation=True)
    assert rgb.shape == (9, 48, 64, 3) and d.shape == (9, 48, 64) and s.shape == (9, 48, 64)
    for k, T in enumerate(poses):
        r1, d1, s1 = table.render(T, cam, segmentation=True)
        if k == 0:  # the first tile is where a single view is drawn: identical
            assert np.array_equal(r1, rgb[0]) and np.array_equal(d1, d[0]) and np.array_equal(s1, s[0])
        # other tiles: the same up to rasterisation rounding at their offset
        assert np.abs(d1 - d[k]).max() < 1e-3
        assert (s1 == s[k]).mean() > 0.998
        assert (np.abs(r1.astype(int) - rgb[k]).max(-1) <= 2).mean() > 0.998
    # many goal views across the atlas limit (tiles of 2048² at most): chunks give the same images
    big = table.render_batch([poses[1]] * 3, CameraSpec(1100, 900, 60.0), depth=True)
    assert np.array_equal(big[0][0], big[0][2]) and np.array_equal(big[1][0], big[1][2])


def test_links_follow_pybullet_each_frame(table):
    """Per-link matrices are read every frame: moving a Panda joint moves its pixels, and back restores them."""
    cam = CameraSpec(96, 96, 60.0)
    T = TABLE_VIEWS[0]
    p, cid = table.p, table.client
    robot = [p.getBodyUniqueId(i, physicsClientId=cid) for i in range(p.getNumBodies(physicsClientId=cid))][-1]
    a, _, sa = table.render(T, cam, segmentation=True)
    p.resetJointState(robot, 1, 0.6, physicsClientId=cid)
    b, _, sb = table.render(T, cam, segmentation=True)
    assert ((sa == robot) != (sb == robot)).sum() > 50
    p.resetJointState(robot, 1, 0.0, physicsClientId=cid)
    c, _, sc = table.render(T, cam, segmentation=True)
    assert np.array_equal(a, c) and np.array_equal(sa, sc)


def test_shadow_darkens_the_floor_under_a_box():
    """A box held over a floor in light from straight above: with shadows the floor under it is darker, a floor
    pixel away from it is unchanged."""
    cam = CameraSpec(64, 64, 60.0)
    T = look_at([0.0, -1.2, 1.6], [0.0, 0.0, 0.0])
    out = {}
    for size in (1024, 0):
        w = BulletBackend("gl", gl=GLRenderer(shadow_size=size))
        p = w.p
        floor = p.createVisualShape(p.GEOM_BOX, halfExtents=[2, 2, 0.05], rgbaColor=[0.8, 0.8, 0.8, 1],
                                    physicsClientId=w.client)
        p.createMultiBody(0, -1, floor, basePosition=[0, 0, -0.05], physicsClientId=w.client)
        box = p.createVisualShape(p.GEOM_BOX, halfExtents=[0.2, 0.2, 0.2], rgbaColor=[0.2, 0.4, 0.9, 1],
                                  physicsClientId=w.client)
        p.createMultiBody(0, -1, box, basePosition=[0, 0, 0.8], physicsClientId=w.client)
        w.light = {"lightDirection": [0.0, 0.0, 1.0]}
        out[size] = w.render(T, cam)[0].astype(int)
        under = (cam.project(T, [[0.0, 0.0, 0.0]])[0]).round().astype(int)
        away = (cam.project(T, [[0.9, 0.6, 0.0]])[0]).round().astype(int)
        w.close()
    lit, dark = out[0][under[1], under[0]].sum(), out[1024][under[1], under[0]].sum()
    assert dark < 0.7 * lit
    assert np.abs(out[0][away[1], away[0]] - out[1024][away[1], away[0]]).max() <= 1


def _shadow_texels(world) -> bytes:
    from spatialact.envs.gl.context import current

    with current(world.gl.ctx):
        return world.gl.shadow.tex.read()


def test_shadow_map_redraws_only_what_moved_and_equals_a_full_redraw():
    """Nothing moved: the map is kept (no draw). The arm moves: the static map (everything else) is drawn once,
    then each frame is a copy of it and one draw of the arm. An object that was still moves: the static map is
    drawn again without it. After each change the map equals, texel for texel, the one a fresh world in the same
    state draws in one go, and so do the images."""
    cam = CameraSpec(64, 48, 60.0)
    T = TABLE_VIEWS[0]
    w = _world("gl", {"generator": "tabletop", "seed": 2}, panda=True)
    try:
        p, cid = w.p, w.client
        bodies = [p.getBodyUniqueId(i, physicsClientId=cid) for i in range(p.getNumBodies(physicsClientId=cid))]
        robot, thing = bodies[-1], bodies[-2]
        w.render(T, cam)
        sm = w.gl.shadow
        d0 = sm.draws
        w.render(T, cam)
        assert sm.draws == d0  # nothing moved
        copies = sm.can_copy
        states = [("arm", 1, 0.5), ("arm", 1, 0.9), ("arm", 3, -1.2), ("object", None, None)]
        for what, joint, q in states:
            before = sm.draws
            if what == "arm":
                p.resetJointState(robot, joint, q, physicsClientId=cid)
            else:
                pos, orn = p.getBasePositionAndOrientation(thing, physicsClientId=cid)
                p.resetBasePositionAndOrientation(thing, [pos[0] + 0.05, pos[1], pos[2]], orn, physicsClientId=cid)
            img = w.render(T, cam)
            if copies:  # the first move of a still slot draws the static map and the movers; later moves, the movers
                assert sm.draws - before == (2 if (what, q) in (("arm", 0.5), ("object", None)) else 1)
            fresh = _world("gl", {"generator": "tabletop", "seed": 2}, panda=True)
            try:
                fb = [fresh.p.getBodyUniqueId(i, physicsClientId=fresh.client)
                      for i in range(fresh.p.getNumBodies(physicsClientId=fresh.client))]
                for j in range(p.getNumJoints(robot, physicsClientId=cid)):
                    fresh.p.resetJointState(fb[-1], j, p.getJointState(robot, j, physicsClientId=cid)[0],
                                            physicsClientId=fresh.client)
                pos, orn = p.getBasePositionAndOrientation(thing, physicsClientId=cid)
                fresh.p.resetBasePositionAndOrientation(fb[-2], pos, orn, physicsClientId=fresh.client)
                ref = fresh.render(T, cam)
                assert _shadow_texels(fresh) == _shadow_texels(w)
                assert all(np.array_equal(a, b) for a, b in zip(img[:2], ref[:2]))
            finally:
                fresh.close()
    finally:
        w.close()


def _slanted_box(gl, quality="default", colour=(0.02, 0.02, 0.02)):
    w = BulletBackend("gl", gl=gl, render_quality=quality)
    p = w.p
    vis = p.createVisualShape(p.GEOM_BOX, halfExtents=[0.4, 0.4, 0.4], rgbaColor=list(colour) + [1],
                              physicsClientId=w.client)
    p.createMultiBody(0, -1, vis, physicsClientId=w.client)
    return w


_SLANT = look_at([0.0, -2.0, 0.0], [0.0, 0.0, 0.0]) @ geometry.make_pose(geometry.rot_z(0.3), np.zeros(3))


def test_render_qualities_smooth_edges():
    """A dark box on the pale background, edges slanted. One sample per pixel without smoothing: every pixel is box
    or background. ``high`` (4× MSAA): edge pixels take values in between. ``default``: the edge-smoothing pass puts
    values in between too, on edge pixels only — the box's inside and the background are left as they are."""
    cam = CameraSpec(48, 48, 50.0)
    between, red = {}, {}
    for name, gl, quality in (("none", GLRenderer(msaa=0, shadow_size=0), "default"),
                              ("high", GLRenderer(shadow_size=0), "high"),
                              ("default", GLRenderer(shadow_size=0), "default")):
        w = _slanted_box(gl, quality)
        r = w.render(_SLANT, cam, depth=False)[0][..., 0].astype(int)
        lo, hi = r.min(), r.max()
        between[name] = int(((r > lo + 8) & (r < hi - 8)).sum())
        red[name] = r
        w.close()
    assert between["none"] == 0 and between["high"] >= 40 and between["default"] >= 25, between
    # the smoothing touches pixels on an edge of the unsmoothed image only (a 4-neighbour differs from them)
    r = red["none"]
    pad = np.pad(r, 1, mode="edge")
    edge = np.zeros(r.shape, bool)
    for dy, dx in ((0, 1), (2, 1), (1, 0), (1, 2)):
        edge |= pad[dy:dy + r.shape[0], dx:dx + r.shape[1]] != r
    changed = np.abs(red["default"] - r) > 1  # the shader's own sRGB encoding may round 1 level differently
    assert changed.any() and not (changed & ~edge).any()


def test_high_quality_is_4x_msaa_and_default_has_one_sample():
    """``render_quality="high"`` draws what a renderer fixed at 4 samples draws (the default before), bit for bit;
    ``default`` draws depth and segmentation from one sample per pixel: those of a renderer fixed at one sample."""
    cam = CameraSpec(64, 48, 60.0)
    shared = GLRenderer()
    out = {}
    for name, gl, quality in (("high", shared, "high"), ("msaa4", GLRenderer(msaa=4), "default"),
                              ("default", shared, "default"), ("msaa0", GLRenderer(msaa=0), "default")):
        w = _world("gl", {"generator": "tabletop", "seed": 2}, panda=True, gl=gl)
        w.gl.quality = quality
        out[name] = w.render_batch(TABLE_VIEWS, cam, segmentation=True)
        w.close()
    for a, b in zip(out["high"], out["msaa4"]):
        assert np.array_equal(a, b)
    assert np.array_equal(out["default"][1], out["msaa0"][1]) and np.array_equal(out["default"][2], out["msaa0"][2])
    assert not np.array_equal(out["default"][0], out["high"][0])


def test_views_of_worlds_at_different_qualities_in_one_call():
    """One call with views of a default-quality world and a high-quality world draws each at its own quality: the
    images equal each world's own single render."""
    from spatialact.envs.gl import View

    cam = CameraSpec(40, 32, 60.0)
    r = GLRenderer()
    worlds = [_world("gl", {"generator": "tabletop", "seed": 2}, panda=True, gl=r) for _ in range(2)]
    worlds[1].gl.quality = "high"
    try:
        views = [View(worlds[k % 2].gl, TABLE_VIEWS[0], cam) for k in range(3)]
        rgb, d, _ = r.render(views)
        for k in range(2):
            r1, d1, _ = worlds[k].render(TABLE_VIEWS[0], cam)
            assert np.array_equal(rgb[k], r1) and np.array_equal(d[k], d1)
        assert not np.array_equal(rgb[0], rgb[1])
        with pytest.raises(ValueError, match="render_quality must be one of"):
            r.scene(worlds[0], "ultra")
    finally:
        for w in worlds:
            w.close()


def test_decimation_and_its_disk_cache(tmp_path, monkeypatch):
    """A Panda link of 12 716 faces is decimated to at most 1 500, keeps its volume and bounds, is cached on disk
    (a second process-free load reads the cache file and gives the same arrays)."""
    import pybullet_data

    from spatialact.envs.gl import meshes

    monkeypatch.setenv("SPATIALACT_CACHE", str(tmp_path))
    monkeypatch.setattr(meshes, "_MEM", {})
    path = pybullet_data.getDataPath() + "/franka_panda/meshes/visual/link2.obj"
    parts, dec = meshes.load_mesh_file(path, 1500)
    assert dec and sum(len(p.faces) for p in parts) <= 1500
    full, dec0 = meshes.load_mesh_file(path, None)
    assert not dec0 and sum(len(p.faces) for p in full) == 12716
    vol = [sum(meshes._signed_volume(p.positions.astype(float), p.faces) for p in ps) for ps in (parts, full)]
    assert vol[0] == pytest.approx(vol[1], rel=0.03)
    lo = [np.min([p.positions.min(0) for p in ps], 0) for ps in (parts, full)]
    assert np.abs(lo[0] - lo[1]).max() < 0.003
    files = list((tmp_path / "gl-meshes-v1").glob("*.npz"))
    assert len(files) == 2
    monkeypatch.setattr(meshes, "_MEM", {})
    again, dec2 = meshes.load_mesh_file(path, 1500)
    assert dec2 and all(np.array_equal(a.positions, b.positions) and np.array_equal(a.faces, b.faces)
                        for a, b in zip(parts, again))


def test_face_budget_and_shadow_size_follow_the_image_size():
    r = GLRenderer()
    assert r.face_budget(384, 384) == 1500 and r.face_budget(256, 144) == 750 and r.face_budget(128, 128) == 375
    assert r.shadow_texels(1500) == 1024 and r.shadow_texels(375) == 512
    assert GLRenderer(max_faces=None).face_budget(64, 64) is None


def test_auto_falls_back_to_tiny_saying_why(monkeypatch, capsys):
    from spatialact.envs import gl as glpkg, rendering

    def refuse():
        raise glpkg.GLUnavailable("no EGL OpenGL 3.3 context (test)")

    monkeypatch.setattr(glpkg, "shared_renderer", refuse)
    monkeypatch.setattr(rendering, "_SAID", set())
    w = BulletBackend("auto")
    try:
        assert w.renderer == "tiny" and w.gl is None and "test" in w.fallback_reason
        assert w.render(np.eye(4), CameraSpec(8, 8))[0].shape == (8, 8, 3)
    finally:
        w.close()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "renderer 'auto' uses tiny" in err[0] and "(test)" in err[0]
    with pytest.raises(glpkg.GLUnavailable, match="test"):
        BulletBackend("gl")


def test_hand_visual_reads_as_a_hand_and_collision_is_unchanged():
    from spatialact.envs import make_env

    env = make_env("hand", renderer="gl", width=64, height=64, wrap=False)
    try:
        env.reset(seed=0)
        p, cid, body = env.world.p, env.world.client, env.world.agent_body
        col = {}
        for link in range(-1, p.getNumJoints(body, physicsClientId=cid)):
            data = p.getCollisionShapeData(body, link, physicsClientId=cid)
            col[link] = [(d[2], tuple(np.round(d[3], 4)), tuple(np.round(d[5], 4))) for d in data]
        box = p.GEOM_BOX
        assert col[-1] == [(box, (0.084, 0.024, 0.096), (0.0, 0.0, 0.05))]
        assert all(col[j] == [(box, (0.015, 0.015, 0.072), (0.0, 0.0, 0.036))] for j in range(4))
        assert col[4] == [(box, (0.016, 0.016, 0.06), (0.0, 0.0, 0.03))]
        assert p.getNumJoints(body, physicsClientId=cid) == 6 and col[5] == []  # the sleeve: visual only
        vis = p.getVisualShapeData(body, physicsClientId=cid)
        assert sum(v[2] == p.GEOM_CAPSULE for v in vis) == 5 and sum(v[2] == p.GEOM_CYLINDER for v in vis) == 1
        # seen from above the hand, the sleeve's blue and the skin both show
        T = env.pose @ geometry.make_pose(np.eye(3), [0.0, -0.35, 0.05])
        T = look_at(T[:3, 3], env.pose[:3, 3] + env.pose[:3, 2] * 0.03)
        rgb, _, seg = env.world.render(T, env.camera, segmentation=True)
        hand = rgb[seg == body].astype(int)
        assert len(hand) > 200
        assert (hand[:, 2] > hand[:, 0] + 20).sum() > 20  # sleeve
        assert (hand[:, 0] > hand[:, 2] + 40).sum() > 100  # skin
    finally:
        env.close()


@pytest.mark.parametrize("kind", ["nav", "manip", "hand"])
def test_render_quality_reaches_the_world_from_make_env_and_the_env_keywords(kind):
    """``make_env(..., render_quality=)`` and the environment's own keyword (``gymnasium.make``) reach the world, its
    BulletBackend and its gl scene; the default is ``default``; an unknown quality is one line naming the options."""
    import gymnasium as gym

    from spatialact.envs import make_env
    from spatialact.envs.registry import KIND_TO_ID

    for quality, env in (("default", make_env(kind, renderer="gl", width=32, height=32, wrap=False)),
                         ("high", make_env(kind, renderer="gl", width=32, height=32, render_quality="high")),
                         ("high", gym.make(KIND_TO_ID[kind], renderer="gl", width=32, height=32,
                                           render_quality="high"))):
        try:
            world = env.unwrapped.world
            assert world.render_quality == world.backend.render_quality == world.gl.quality == quality
        finally:
            env.close()
    for bad in (lambda: make_env(kind, render_quality="ultra"),
                lambda: gym.make(KIND_TO_ID[kind], renderer="tiny", render_quality="ultra")):
        with pytest.raises(ValueError, match="render_quality must be one of default, high, got 'ultra'"):
            bad()


@pytest.mark.parametrize("kind", ["nav", "manip", "hand"])
def test_environments_take_gl_and_pass_check_env(kind):
    from gymnasium.utils.env_checker import check_env

    from spatialact.envs import make_env

    env = make_env(kind, renderer="gl", width=48, height=48, depth=True, wrap=False)
    try:
        check_env(env, skip_render_check=True)
        obs, info = env.reset(seed=1)
        assert info["renderer"].startswith("spatialact-gl on ")
        assert obs["rgb"].shape == (48, 48, 3) and obs["rgb"].std() > 5
        assert obs["depth"].dtype == np.float32 and 0 < obs["depth"].min() <= obs["depth"].max() <= 20
        # K goal views in one call equal the goal observation (the first tile is a single view's place)
        views = env.render_views([env.goal_camera_pose, env.camera_pose])
        assert views.shape == (2, 48, 48, 3)
        if kind == "nav":
            assert np.array_equal(views[0], obs["goal_rgb"])
        assert np.abs(views[1].astype(int) - obs["rgb"]).max(-1).mean() < 1
    finally:
        env.close()


def test_vector_env_renders_all_observations_in_one_call():
    from spatialact.envs import make_vector_env

    v = make_vector_env("nav", 3, renderer="gl", width=40, height=32, depth=True)
    try:
        v.reset(seed=[0, 1, 2])
        bases = [e.unwrapped for e in v.envs]
        assert len({id(b.world.gl.renderer) for b in bases}) == 1  # one shared renderer
        assert len({b.scene.spec["seed"] for b in bases}) == 3  # three scenes
        a = np.tile(np.array([v.single_action_space.nvec[0] // 2 + 1] + [10] * 5 + [2]), (3, 1))
        obs, rew, term, trunc, info = v.step(a)
        assert v.batched_renders == 1 and obs["rgb"].shape == (3, 32, 40, 3) and obs["depth"].shape == (3, 32, 40)
        for i, b in enumerate(bases):
            rgb, d, seg = b.world.render(b.camera_pose, b.camera, segmentation=True)
            assert (np.abs(np.minimum(d, 20) - obs["depth"][i]) < 1e-3).mean() > 0.99
            # tiles after the first differ by rasterisation rounding at their offset: edge pixels (and the
            # neighbours the edge smoothing blends them with), never inside a surface
            off = np.abs(rgb.astype(int) - obs["rgb"][i]).max(-1) > 2
            assert off.mean() < 0.03 and not (off & ~_near_edges(seg, d, 2)).any()
            assert np.allclose(info["pose"][i], b.pose)
    finally:
        v.close()


def test_gl_prints_nothing(tmp_path):
    script = ("from spatialact.envs import make_env\n"
              "env = make_env('manip', renderer='gl', width=32, height=32, depth=True)\n"
              "env.reset(seed=0); env.step(env.action_space.sample()); env.close()\n")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout == "" and r.stderr == ""



def test_model_agents_see_384_images_when_gl_renders(tmp_path, capsys, server, monkeypatch):
    """``spatialact eval`` without --size: a model agent gets 384² images from gl (the size is in the run's
    configuration and is what the endpoint receives); baselines and other renderers stay at 128²."""
    import base64
    import io
    import json

    from PIL import Image

    from spatialact.cli.main import main
    from spatialact.envs.rendering import default_image_size

    pytest.importorskip("openai")
    assert default_image_size("gl", True) == 384 and default_image_size("gl", False) == 128
    assert default_image_size("tiny", True) == 128 and default_image_size("auto", True) == 384  # gl starts here
    monkeypatch.setenv("SPATIALACT_TEST_KEY", "sk-test")
    common = ["eval", "--no-progress", "--suite", "nav:1", "--limit", "1", "--renderer", "gl"]
    out = tmp_path / "model"
    code = main(common + ["--agent", "openai", "--agent-arg", "model=test-vlm", "--agent-arg",
                          f"base_url={server.url}", "--agent-arg", "api_key_env=SPATIALACT_TEST_KEY",
                          "--agent-arg", "backoff=0", "--out", str(out)])
    capsys.readouterr()
    assert code == 0
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["config"]["width"] == cfg["config"]["height"] == 384 and cfg["config"]["renderer"] == "gl"
    urls = [part["image_url"]["url"] for m in server.requests[0]["body"]["messages"] if isinstance(m["content"], list)
            for part in m["content"] if part.get("type") == "image_url"]
    assert urls and all(Image.open(io.BytesIO(base64.b64decode(u.split(",", 1)[1]))).size == (384, 384)
                        for u in urls if u.startswith("data:image/png"))
    out2 = tmp_path / "oracle"
    assert main(common + ["--agent", "oracle", "--out", str(out2)]) == 0
    capsys.readouterr()
    assert json.loads((out2 / "config.json").read_text())["config"]["width"] == 128


def test_a_child_forked_after_gl_started_refuses_instead_of_hanging():
    """fork copies Mesa's state without its threads: a context made in such a child waits for ever. The child gets
    GLUnavailable (auto falls back to tiny there, saying why) and finishes; spawn-started workers are unaffected."""
    import os

    from spatialact.envs.gl import gl_context

    gl_context()  # started here, in the parent
    r, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what happens, never run pytest's teardown
        code = 3
        try:
            w = BulletBackend("auto")
            code = 0 if (w.renderer == "tiny" and "spawn" in (w.fallback_reason or "")) else 1
            w.render(np.eye(4), CameraSpec(8, 8))
            w.close()
        except BaseException:  # noqa: BLE001
            code = 2
        os.write(wfd, bytes([code]))
        os._exit(0)
    os.close(wfd)
    import select

    ready, _, _ = select.select([r], [], [], 60)
    assert ready, "the forked child hung"
    got = os.read(r, 1)
    os.waitpid(pid, 0)
    assert got == bytes([0])
