"""The gl renderer: draws the scene a PyBullet world holds with moderngl, K views per call.

One :class:`GLRenderer` per process (:func:`shared_renderer`) holds the programs and render targets; each world gets
a :class:`GLScene` (its geometry in one merged vertex buffer, its textures in one sRGB texture array, a matrix
texture with one row per link, a shadow map). A call renders K views — of one world or of several (the environments
of an in-process vector env) — into tiles of one framebuffer: per view one draw call (colour, depth and body id
from one pass), then the edge smoothing (or the MSAA resolve) and one read back per image kind to numpy.

Each frame the link poses are read from PyBullet (``getBasePositionAndOrientation``, ``getLinkStates``) and those
that changed are converted and uploaded; the shadow map (:mod:`.shadow`) redraws only what moved. Frames: poses
are OpenCV camera-to-world (4, 4), metres, world +Z up; images are row 0 at the top. Passes:

* shadow: a directional light along the scene's light direction (``world.light["lightDirection"]``, towards the
  light), an orthographic depth map over the scene's bounds; geometry within 0.25 m of the scene's top (a ceiling)
  casts no shadow;
* colour: ambient (a sky/ground hemisphere) + diffuse × shadow (4-tap PCF) + Blinn-Phong specular, in linear
  light. At a world's render quality ``"default"`` (:data:`RENDER_QUALITIES`): one sample per pixel, encoded to
  sRGB in the shader, then an edge-smoothing pass over each view's tile; at ``"high"``: 4× MSAA written to an sRGB
  target and resolved in linear light;
* depth and segmentation, from the colour pass (or a plain depth pass when no colour is asked): depth is z along
  the optical axis in metres (``far`` where nothing is hit, like TinyRenderer), segmentation the PyBullet body id
  (−1 background); at ``high`` resolved from the samples (the body covering most of them, at its nearest depth).

``pixel_convention``: ``"opencv"`` (default) samples pixel (u, v) on the ray of :attr:`CameraSpec.K` at (u, v) — as
``BulletBackend``'s tiny and egl renderers do; ``"tinyrenderer"`` reproduces the half-pixel offset of PyBullet's
TinyRenderer when it is given the same projection matrix unshifted (``camera.TINY_SHIFT_PX``), for comparing with
images made by calling ``getCameraImage`` directly.
"""

from __future__ import annotations

import ctypes
import math
import os
from dataclasses import dataclass

import numpy as np

from ...geometry import pose_from_pybullet
from ..camera import TINY_SHIFT_PX, gl_projection, gl_view
from .context import GLUnavailable, current, gl_context, gl_info, gl_proc
from .meshes import MAX_FACES, SceneGeometry, extract_scene
from .shadow import ShadowMap, light_camera
from .shaders import (COLOR_FS, COLOR_FS_SRGB, COLOR_VS, DEPTH_FS, DEPTH_VS, RESOLVE_FS, RESOLVE_VS, SHADOW_FS,
                      SHADOW_VS, SMOOTH_FS)

__all__ = ["GLRenderer", "GLScene", "View", "shared_renderer", "PIXEL_CONVENTIONS", "RENDER_QUALITIES"]

PIXEL_CONVENTIONS = ("opencv", "tinyrenderer")
#: Render qualities: ``"default"`` (every device: one sample per pixel and an edge-smoothing pass) and ``"high"``
#: (4× MSAA resolved in linear light: the default before; several times slower on a CPU).
RENDER_QUALITIES = ("default", "high")
QUALITY_MSAA = {"default": 0, "high": 4}
_MAX_ATLAS = 2048  # pixels per side of one batch of tiles
_GL_SRGB8_ALPHA8 = 0x8C43
_GL_FRAMEBUFFER_SRGB = 0x8DB9
_GL_TEXTURE_2D_ARRAY = 0x8C1A
_GL_COLOR = 0x1800
_GL_NEAREST = 0x2600
_BACKGROUND = (0.72, 0.76, 0.80)  # linear-light clear colour (a pale sky) where nothing is hit


def _srgb(c: float) -> float:
    """Linear light to sRGB (the encoding the shaders and the sRGB targets apply)."""
    return 12.92 * c if c <= 0.0031308 else 1.055 * c ** (1 / 2.4) - 0.055


_BACKGROUND_SRGB = tuple(_srgb(c) for c in _BACKGROUND)
_DEFAULT_LIGHT = (0.4, 0.3, 2.5)


@dataclass(frozen=True)
class View:
    """One view to render: a scene, an OpenCV C2W pose (4, 4) in metres, a camera (``camera.CameraSpec``)."""

    scene: "GLScene"
    pose: np.ndarray
    camera: object


def _set(prog, name: str, value) -> None:
    """Set a uniform (bytes are written raw); a uniform the GLSL compiler optimised away is skipped."""
    u = prog.get(name, None)
    if u is None:
        return
    if isinstance(value, bytes):
        u.write(value)
    else:
        u.value = value


def _mat_bytes(M: np.ndarray) -> bytes:
    """Column-major float32 bytes of a (4, 4) matrix (GLSL's layout)."""
    return np.asarray(M, dtype=np.float32).tobytes(order="F")


def _projection(cam, shift_px) -> np.ndarray:
    """OpenGL projection of ``cam`` (:func:`spatialact.envs.camera.gl_projection`), flipped in y so that buffer row
    0 is the image's top row."""
    return np.diag([1.0, -1.0, 1.0, 1.0]) @ gl_projection(cam, shift_px)


def texture_side(images: list) -> int:
    """The side in texels of a scene's texture array: the largest image side, rounded up to a power of two, from 64
    to 512 (every image is resized to it)."""
    size = max(max(im.shape[0], im.shape[1]) for im in images)
    return int(min(512, max(64, 1 << max(0, math.ceil(math.log2(max(size, 1)))))))


class GLScene:
    """The GPU copy of one world's visual scene; rebuilt when the world's bodies change, matrices every frame.

    ``world``: a ``rendering.BulletBackend`` (its PyBullet client, the meshes and textures its scene builder
    registered, its light); ``quality``: its render quality (:data:`RENDER_QUALITIES`). Created by
    :meth:`GLRenderer.scene`."""

    def __init__(self, renderer: "GLRenderer", world, quality: str = "default"):
        self.renderer = renderer
        self.world = world
        self.quality = quality
        self.ctx = renderer.ctx
        self._res: list = []
        self.geometry: SceneGeometry | None = None
        self._mats_prev = self._pose_prev = None
        self._moving = None  # per slot: moved since the scene was read
        self.shadow: ShadowMap | None = None
        self.shadow_texel = 0.01
        self._levels: dict = {}

    # ----- building ------------------------------------------------------------------------------------
    def invalidate(self) -> None:
        """Forget the geometry: the next render reads the world's visual shapes again (after ``reset_world``)."""
        if os.getpid() == self.renderer.pid:
            with current(self.ctx):
                self._release_buffers()
        self.geometry = None

    def _release_buffers(self) -> None:
        for r in self._res:
            r.release()
        self._res = []
        self._levels = {}
        self._mats_prev = None
        if self.shadow is not None:
            self.shadow.release()
            self.shadow = None

    def release(self) -> None:
        if os.getpid() == self.renderer.pid:  # (in a forked child the objects are the parent's: left alone)
            with current(self.ctx):
                self._release_buffers()
        self.shadow = None
        self.geometry = None

    def read_geometry(self, budget) -> SceneGeometry:
        """The world's visual shapes at face budget ``budget`` (meshes decimated to it), read from PyBullet."""
        w = self.world
        return extract_scene(w.p, w.client, getattr(w, "registered_meshes", None), getattr(w, "textures", None),
                             budget)

    def body_count(self) -> int:
        """How many bodies the world holds now (a change rebuilds the scene)."""
        return self.world.p.getNumBodies(physicsClientId=self.world.client)

    def _build(self, budget) -> None:
        """Read the world's visual shapes (at face budget ``budget``) and set up what all levels share: the link
        slots and their matrix texture, the texture array, the scene bounds, the light and its shadow map."""
        self._release_buffers()
        geo = self.read_geometry(budget)
        self.geometry = geo
        ctx = self.ctx
        # per-frame query plan: bases (body, slot) and links (body, [links], [slots])
        self._bases = [(b, i) for i, (b, link) in enumerate(geo.slots) if link < 0]
        self._base_of = {i: b for b, i in self._bases}
        slot_of = {key: i for i, key in enumerate(geo.slots)}
        self._links = [(b, links, [slot_of[(b, k)] for k in links]) for b, links in geo.links.items()]
        self.mats = ctx.texture((4, max(len(geo.slots), 1)), 4, dtype="f4")
        self.mats.filter = (0x2600, 0x2600)  # GL_NEAREST: matrices are read with texelFetch
        self._res.append(self.mats)
        pos, quat = self.poses()
        mats = self.link_matrices(pos, quat)
        self._upload(mats, pos, quat)
        lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
        for slot, _, part in geo.parts:
            M = mats[slot]
            pw = part.positions.astype(np.float64) @ M[:3, :3].T + M[:3, 3]
            lo, hi = np.minimum(lo, pw.min(0)), np.maximum(hi, pw.max(0))
        if not geo.parts:
            lo, hi = np.zeros(3), np.ones(3)
        self.bounds = (lo - 0.3, hi + 0.3)  # padded for what moves
        self.top_z = float(hi[2])
        # textures: one sRGB array, layers of one size (images resized), deduplicated by content
        self.layer_of, images = {}, []
        for _, _, part in geo.parts:
            if part.texture is not None and part.texture_key not in self.layer_of:
                self.layer_of[part.texture_key] = len(images)
                images.append(part.texture)
        self.texture = self._texture_array(images)
        self._res.append(self.texture)
        self._light()
        self._moving = np.zeros(len(mats), bool)
        self._levels = {}
        self._add_level(budget, geo)

    def _add_level(self, budget, geo: SceneGeometry | None = None) -> dict:
        """The vertex and index buffers of one level of detail (face budget) and their vertex arrays."""
        if geo is None:
            geo = self.read_geometry(budget)
        ctx, r = self.ctx, self.renderer
        mats = self._mats_prev
        # parts small to large (world size now): big surfaces drawn last are mostly rejected by the depth test
        sized = []
        for i, (slot, _, part) in enumerate(geo.parts):
            M = mats[slot]
            pw = part.positions.astype(np.float64) @ M[:3, :3].T + M[:3, 3]
            sized.append((float(np.linalg.norm(pw.max(0) - pw.min(0))), i))
        order = [i for _, i in sorted(sized)]
        # one merged vertex buffer: pos 3f, normal 3f, uv 2f, colour 4 u8, ids 3 i32 (slot, layer, body)
        n = sum(len(p.positions) for _, _, p in geo.parts)
        dt = np.dtype([("pos", "<f4", 3), ("nrm", "<f4", 3), ("uv", "<f4", 2), ("col", "u1", 4), ("ids", "<i4", 3)])
        vb = np.zeros(max(n, 3), dtype=dt)
        idx, off = [], 0
        for i in order:
            slot, body, part = geo.parts[i]
            k = len(part.positions)
            v = vb[off:off + k]
            v["pos"], v["nrm"], v["uv"], v["col"] = part.positions, part.normals, part.uvs, part.colors
            layer = self.layer_of.get(part.texture_key, -1) if part.texture is not None else -1
            v["ids"] = (slot, layer, body)
            f = part.faces.astype(np.uint32) + off
            # back faces are culled: an open shape is drawn two-sided by adding its faces wound the other way
            idx.append(f if part.closed else np.concatenate([f, f[:, ::-1]]))
            off += k
        faces = np.concatenate(idx) if idx else np.zeros((1, 3), np.uint32)
        vbo = ctx.buffer(vb.tobytes())
        ibo = ctx.buffer(np.ascontiguousarray(faces, dtype=np.uint32).tobytes())
        lit = [(vbo, "3f 3f 2f 4f1 3i", "in_pos", "in_nrm", "in_uv", "in_col", "in_ids")]
        level = {"faces": sum(len(p.faces) for _, _, p in geo.parts), "decimated": geo.decimated,
                 "color": ctx.vertex_array(r.prog_color, lit, ibo, skip_errors=True),
                 "color_srgb": ctx.vertex_array(r.prog_color_srgb, lit, ibo, skip_errors=True),
                 "depth": ctx.vertex_array(r.prog_depth, [(vbo, "3f 24x 3i", "in_pos", "in_ids")], ibo),
                 "vbo": vbo, "faces_array": faces, "face_slots": vb["ids"][faces[:, 0], 0], "geometry": geo}
        self._res += [vbo, ibo] + [level[k] for k in ("color", "color_srgb", "depth")]
        self._levels[budget] = level
        return level

    def level(self, budget) -> dict:
        """The level of detail for face budget ``budget`` (built on first use): ``faces`` (drawn), ``decimated``
        (mesh files decimated), the vertex arrays ``color`` (linear light out), ``color_srgb`` (sRGB out) and
        ``depth``, for the shadow map its vertex buffer ``vbo``, ``faces_array`` (F, 3) and ``face_slots``, and
        the ``geometry`` (:class:`~spatialact.envs.gl.meshes.SceneGeometry`) it was made from."""
        lv = self._levels.get(budget)
        return lv if lv is not None else self._add_level(budget)

    @property
    def n_faces(self) -> int:
        """Faces of the most detailed level built (0 before the first render)."""
        if self.geometry is None or not self._levels:
            return 0
        return max(lv["faces"] for lv in self._levels.values())

    def _texture_array(self, images: list):
        ctx = self.ctx
        if not images:
            images = [np.full((4, 4, 4), 255, np.uint8)]
        S = texture_side(images)
        data = np.empty((len(images), S, S, 4), np.uint8)
        for i, im in enumerate(images):
            if im.shape[:2] != (S, S):  # (Pillow only then: a scene dump holds its textures at S already)
                from PIL import Image

                im = np.asarray(Image.fromarray(im).resize((S, S), Image.BILINEAR))
            data[i] = im[::-1]  # GL's t = 0 is the image's bottom row (OBJ / glTF texture coordinates)
        tex = ctx.texture_array((S, S, len(images)), 4)
        tex.use(location=0)
        fn = gl_proc("glTexImage3D", None, ctypes.c_uint, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                     ctypes.c_int, ctypes.c_int, ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p)
        data = np.ascontiguousarray(data)
        fn(_GL_TEXTURE_2D_ARRAY, 0, _GL_SRGB8_ALPHA8, S, S, len(images), 0, 0x1908, 0x1401, data.ctypes.data)
        tex.build_mipmaps()
        tex.repeat_x = tex.repeat_y = True
        return tex

    def _light(self) -> None:
        """The light (direction towards it, colour) and its shadow map over the scene's bounds."""
        light = getattr(self.world, "light", None) or {}
        d = np.asarray(light.get("lightDirection", _DEFAULT_LIGHT), dtype=np.float64)
        d = d / (np.linalg.norm(d) or 1.0)
        self.light_dir = d
        self.light_col = np.asarray(light.get("lightColor", (1.0, 0.97, 0.92)), dtype=np.float64)
        self.light_vp, self._light_extent = light_camera(d, self.bounds)
        self.shadow = ShadowMap(self.ctx, self.renderer.prog_shadow, self.light_vp, self.top_z - 0.25)

    # ----- per frame -----------------------------------------------------------------------------------
    def poses(self) -> tuple[np.ndarray, np.ndarray]:
        """The slots' link frames as PyBullet gives them now: positions (n_slots, 3) in metres, (x, y, z, w)
        quaternions (n_slots, 4) — of a base, its centre of mass."""
        p, cid = self.world.p, self.world.client
        n = max(len(self.geometry.slots), 1)
        pos = np.zeros((n, 3))
        quat = np.zeros((n, 4))
        quat[:, 3] = 1.0
        for body, slot in self._bases:
            q, o = p.getBasePositionAndOrientation(body, physicsClientId=cid)
            pos[slot], quat[slot] = q, o
        for body, links, slots in self._links:
            states = p.getLinkStates(body, links, computeForwardKinematics=1, physicsClientId=cid)
            for s, st in zip(slots, states):
                pos[s], quat[s] = st[4], st[5]
        return pos, quat

    def link_matrices(self, pos: np.ndarray, quat: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """World matrices (n, 4, 4) of the link frames of the slots ``rows`` (default: all) from their poses as
        :meth:`poses` gives them (a base's centre of mass turned into its link frame)."""
        rows = np.arange(len(pos)) if rows is None else rows
        M = pose_from_pybullet(pos[rows], quat[rows])
        for j, slot in enumerate(rows):  # centre of mass -> the base's link frame
            body = self._base_of.get(int(slot))
            if body is not None:
                M[j] = M[j] @ self.geometry.base_inertial_inv[body]
        return M

    def _upload(self, mats: np.ndarray, pos: np.ndarray, quat: np.ndarray) -> None:
        # row s of the texture: the four columns of slot s's matrix
        self.mats.write(np.ascontiguousarray(np.transpose(mats, (0, 2, 1))).astype(np.float32).tobytes())
        self._mats_prev, self._pose_prev = mats, (pos, quat)

    def sync(self, budget) -> dict:
        """Bring the GPU copy up to date for a render at face budget ``budget`` and return that level: rebuild
        when the body count changed, upload the link matrices when one moved, bring the shadow map up to date
        (redrawing what moved)."""
        moved = False
        if self.geometry is None or self.body_count() != self.geometry.n_bodies:
            self._build(budget)
        else:  # only the slots whose pose changed are converted again
            pos, quat = self.poses()
            changed = (pos != self._pose_prev[0]).any(axis=1) | (quat != self._pose_prev[1]).any(axis=1)
            if changed.any():
                rows = np.nonzero(changed)[0]
                mats = self._mats_prev.copy()
                mats[rows] = self.link_matrices(pos, quat, rows)
                self._upload(mats, pos, quat)
                self._moving |= changed
                moved = True
        lv = self.level(budget)
        S = self.renderer.shadow_texels(budget)
        if S:
            self.shadow_texel = self._light_extent / S
            # shadows come from a coarser level: a texel of the map is a centimetre or more anyway
            key = None if budget is None else max(24, budget // 4)
            self.shadow.update(key, self.level(key), S, self.mats, self._moving, moved)
        return lv

    def bind_color(self, prog) -> None:
        self.texture.use(location=0)
        self.mats.use(location=1)
        r = self.renderer
        if self.shadow is not None and self.shadow.tex is not None:
            self.shadow.tex.use(location=2)
        _set(prog, "u_light_vp", _mat_bytes(self.light_vp))
        _set(prog, "u_light_dir", tuple(self.light_dir))
        _set(prog, "u_light_col", tuple(self.light_col))
        _set(prog, "u_texel", float(self.shadow_texel))
        _set(prog, "u_shadows", int(bool(r.shadow_size)))


class GLRenderer:
    """Programs and render targets on the process's GL context; renders :class:`View` lists.

    ``msaa``: None (default) renders each view at its world's render quality (:data:`RENDER_QUALITIES`: ``"default"``
    no multisampling and an edge-smoothing pass, ``"high"`` 4× MSAA); a number fixes the colour samples per pixel for
    every view (0 or 1: none, no smoothing; clamped to what the GL offers), for experiments. ``shadow_size``: shadow
    map side in texels (0: no shadows); ``max_faces``: meshes over this many faces are decimated (None: never);
    ``pixel_convention``: see the module docstring. ``info``: the GL renderer string."""

    def __init__(self, msaa: int | None = None, shadow_size: int = 1024, max_faces: int | None = MAX_FACES,
                 pixel_convention: str = "opencv", ambient: float = 0.42, diffuse: float = 0.85,
                 specular: float = 0.18, shininess: float = 40.0):
        if pixel_convention not in PIXEL_CONVENTIONS:
            raise ValueError(f"pixel_convention must be one of {PIXEL_CONVENTIONS}, got {pixel_convention!r}")
        self.ctx = ctx = gl_context()
        with current(ctx):
            self.info = gl_info()
            self._setup(msaa, shadow_size, max_faces, pixel_convention, ambient, diffuse, specular, shininess)

    def _setup(self, msaa, shadow_size, max_faces, pixel_convention, ambient, diffuse, specular, shininess) -> None:
        ctx = self.ctx
        self.max_samples = int(ctx.info.get("GL_MAX_SAMPLES", 4))
        self.msaa = None if msaa is None else self._samples(int(msaa))
        self.shadow_size = int(shadow_size)
        self.max_faces = max_faces
        self.pixel_convention = pixel_convention
        self.prog_color = ctx.program(vertex_shader=COLOR_VS, fragment_shader=COLOR_FS)
        self.prog_color_srgb = ctx.program(vertex_shader=COLOR_VS, fragment_shader=COLOR_FS_SRGB)
        self.prog_depth = ctx.program(vertex_shader=DEPTH_VS, fragment_shader=DEPTH_FS)
        self.prog_shadow = ctx.program(vertex_shader=SHADOW_VS, fragment_shader=SHADOW_FS)
        self.prog_resolve = ctx.program(vertex_shader=RESOLVE_VS, fragment_shader=RESOLVE_FS)
        self.prog_smooth = ctx.program(vertex_shader=RESOLVE_VS, fragment_shader=SMOOTH_FS)
        _set(self.prog_resolve, "u_ms", 3)
        _set(self.prog_smooth, "u_img", 3)
        self.vao_resolve = ctx.vertex_array(self.prog_resolve, [])
        self.vao_smooth = ctx.vertex_array(self.prog_smooth, [])
        for prog in (self.prog_color, self.prog_color_srgb, self.prog_depth, self.prog_shadow):
            _set(prog, "u_mats", 1)
        for pc in (self.prog_color, self.prog_color_srgb):
            _set(pc, "u_tex", 0)
            _set(pc, "u_shadow", 2)
            for name, value in (("u_ambient", ambient), ("u_diffuse", diffuse), ("u_specular", specular),
                                ("u_shininess", shininess)):
                _set(pc, name, float(value))
            _set(pc, "u_sky", (1.0, 1.0, 1.04))
            _set(pc, "u_ground", (0.72, 0.66, 0.60))
        self._targets: dict = {}
        self._uniform_cache: dict = {}
        self.pid = os.getpid()

    def _samples(self, msaa: int) -> int:
        """Colour samples per pixel the GL gives for ``msaa`` asked (0: one sample, no multisampled targets)."""
        n = min(max(int(msaa), 0), self.max_samples)
        return 0 if n == 1 else n

    def mode(self, quality: str) -> tuple[int, bool]:
        """(colour samples per pixel, edge smoothing) of a view at render quality ``quality``."""
        if quality not in QUALITY_MSAA:
            raise ValueError(f"render_quality must be one of {RENDER_QUALITIES}, got {quality!r}")
        if self.msaa is not None:
            return self.msaa, False
        samples = self._samples(QUALITY_MSAA[quality])
        return samples, samples == 0

    def face_budget(self, width: int, height: int):
        """The face budget of meshes in a ``width`` × ``height`` image: ``max_faces`` from 320 px on, half of it
        from 160 px, a quarter below (a mesh a few dozen pixels tall needs no more); None (never decimate) when
        ``max_faces`` is None."""
        if self.max_faces is None:
            return None
        side = max(int(width), int(height))
        return self.max_faces if side >= 320 else (self.max_faces // 2 if side >= 160 else self.max_faces // 4)

    def shadow_texels(self, budget) -> int:
        """Shadow map side for a level: ``shadow_size`` at the full face budget, half at smaller levels (images
        under 320 px; at least 256)."""
        if not self.shadow_size:
            return 0
        if self.max_faces is None or budget is None or budget >= self.max_faces:
            return self.shadow_size
        return max(256, self.shadow_size // 2)

    def scene(self, world, quality: str = "default") -> GLScene:
        """A new :class:`GLScene` for a world (built lazily, on its first render), drawn at render quality
        ``quality`` (:data:`RENDER_QUALITIES`)."""
        self.mode(quality)  # checked here, in one line
        return GLScene(self, world, quality)

    # ----- targets -------------------------------------------------------------------------------------
    def _target(self, kind: str, size: tuple[int, int], samples: int = 0):
        """Framebuffers of one size, kept for reuse: ``color`` (sRGB colour + depth/body-id attachments,
        multisampled when ``samples``; with their single-sample resolve targets), ``smooth`` (plain RGBA8 colour
        holding sRGB values + depth/body id, and the edge-smoothed colour) or ``depth`` (depth/body id only)."""
        key = (kind, size, samples)
        t = self._targets.get(key)
        if t is not None:
            return t
        if len(self._targets) > 8:  # keep a few sizes; release the oldest
            for res in self._targets.pop(next(iter(self._targets))).values():
                if hasattr(res, "release"):
                    res.release()
        ctx, ms = self.ctx, samples
        t = {}
        if kind == "color":
            t["col"] = ctx.texture(size, 4, samples=ms, internal_format=_GL_SRGB8_ALPHA8)
            t["zs"] = ctx.texture(size, 2, samples=ms, dtype="f4")
            t["d"] = ctx.depth_renderbuffer(size, samples=ms)
            t["fbo"] = ctx.framebuffer([t["col"], t["zs"]], t["d"])
            t["fbo_zs"] = ctx.framebuffer([t["zs"]])  # to clear it to 0 (background) apart from the colour
            if ms:
                t["fbo_col"] = ctx.framebuffer([t["col"]])  # the colour attachment alone, to resolve it
                t["col1"] = ctx.texture(size, 4, internal_format=_GL_SRGB8_ALPHA8)
                t["fbo_col1"] = ctx.framebuffer([t["col1"]])
                t["zs1"] = ctx.renderbuffer(size, 2, dtype="f4")
                t["fbo_zs1"] = ctx.framebuffer([t["zs1"]])
        elif kind == "smooth":
            t["col"] = ctx.texture(size, 4)
            t["col"].filter = (_GL_NEAREST, _GL_NEAREST)
            t["zs"] = ctx.renderbuffer(size, 2, dtype="f4")
            t["d"] = ctx.depth_renderbuffer(size)
            t["fbo"] = ctx.framebuffer([t["col"], t["zs"]], t["d"])
            t["out"] = ctx.renderbuffer(size, 4)
            t["fbo_out"] = ctx.framebuffer([t["out"]])
        else:
            t["zs"] = ctx.renderbuffer(size, 2, dtype="f4")
            t["d"] = ctx.depth_renderbuffer(size)
            t["fbo"] = ctx.framebuffer([t["zs"]], t["d"])
        self._targets[key] = t
        return t

    # ----- rendering -----------------------------------------------------------------------------------
    def render(self, views: list[View], rgb: bool = True, depth: bool = True, segmentation: bool = False,
               pixel_convention: str | None = None):
        """Render views (all of one image size): ``(rgb (K, H, W, 3) uint8 or None, depth (K, H, W) float32
        metres or None, seg (K, H, W) int32 or None)``. With ``rgb`` one lit pass gives all three; without it a
        plain depth pass (cheaper) gives depth and segmentation. Each view is drawn at its scene's render quality
        (views of worlds at different qualities are drawn in one pass per quality). Our context is made current for
        the call and the previous one restored (PyBullet's EGL plugin, in the same process, has a context of its
        own)."""
        if os.getpid() != self.pid:
            raise GLUnavailable("this GL renderer was made in another process (a GL context does not survive fork)")
        with current(self.ctx):
            return self._render(views, rgb, depth, segmentation, pixel_convention)

    def _render(self, views, rgb, depth, segmentation, pixel_convention):
        if not views:
            raise ValueError("render: no views")
        conv = pixel_convention or self.pixel_convention
        if conv not in PIXEL_CONVENTIONS:
            raise ValueError(f"pixel_convention must be one of {PIXEL_CONVENTIONS}, got {conv!r}")
        shift = (0.0, 0.0) if conv == "opencv" else (-TINY_SHIFT_PX[0], -TINY_SHIFT_PX[1])
        W, H = int(views[0].camera.width), int(views[0].camera.height)
        if any((int(v.camera.width), int(v.camera.height)) != (W, H) for v in views):
            raise ValueError("render: all views of one call must have the same image size")
        K = len(views)
        out = (np.empty((K, H, W, 3), np.uint8) if rgb else None, np.empty((K, H, W), np.float32) if depth else None,
               np.empty((K, H, W), np.int32) if segmentation else None)
        modes = [self.mode(v.scene.quality) if rgb else (0, False) for v in views]
        for mode in dict.fromkeys(modes):
            idx = [k for k in range(K) if modes[k] == mode]
            self._render_mode([views[k] for k in idx], idx, mode, shift, out)
        return out

    def _render_mode(self, views, idx, mode, shift, out) -> None:
        """Views of one mode (samples, smoothing) into ``out`` at indices ``idx``, in chunks of one atlas each."""
        rgb, want_zs = out[0] is not None, out[1] is not None or out[2] is not None
        W, H = int(views[0].camera.width), int(views[0].camera.height)
        budget = self.face_budget(W, H)
        levels = {id(sc): sc.sync(budget) for sc in {id(v.scene): v.scene for v in views}.values()}
        K = len(views)
        cols = max(1, min(K, _MAX_ATLAS // W))
        per = cols * max(1, _MAX_ATLAS // H)
        viewproj, view, eye = _view_uniforms(views, shift)
        far = np.array([v.camera.far for v in views], np.float32)
        ctx = self.ctx
        ctx.enable(ctx.DEPTH_TEST | ctx.CULL_FACE)
        ctx.front_face, ctx.cull_face = "cw", "back"  # counter-clockwise in the world, y flipped on screen
        for c0 in range(0, K, per):
            n = min(K, c0 + per) - c0
            ncols = min(cols, n)
            nrows = math.ceil(n / ncols)
            size = (ncols * W, nrows * H)
            t, fbo, prog, vao_of = self._begin(rgb, mode, size)
            u_vp, u_view, u_eye = self._uniforms(prog)
            last = None
            for i in range(n):
                k = c0 + i
                v = views[k]
                if v.scene is not last:
                    if rgb:
                        v.scene.bind_color(prog)
                    else:
                        v.scene.mats.use(location=1)
                    last = v.scene
                u_vp.write(viewproj[k])
                u_view.write(view[k])
                if u_eye is not None:
                    u_eye.write(eye[k])
                fbo.viewport = ((i % ncols) * W, (i // ncols) * H, W, H)
                levels[id(v.scene)][vao_of].render()
            full = (0, 0) + size
            dest = idx[c0:c0 + n]
            if rgb:
                _untile_into(out[0], dest, self._read_color(t, mode, full, (W, H)), nrows, ncols, H, W, 3)
            if not want_zs:
                continue
            zs = np.empty((n, H, W, 2), np.float32)
            _untile_into(zs, range(n), self._read_zs(t, rgb, mode, full), nrows, ncols, H, W, 2)
            hit = zs[..., 1] > 0
            if out[1] is not None:
                out[1][dest] = np.where(hit, zs[..., 0], far[c0:c0 + n, None, None])
            if out[2] is not None:
                out[2][dest] = zs[..., 1].astype(np.int32) - 1

    def _uniforms(self, prog) -> tuple:
        """The per-view uniforms of a program (``u_viewproj``, ``u_view``, ``u_eye`` or None), looked up once."""
        got = self._uniform_cache.get(id(prog))
        if got is None:
            got = self._uniform_cache[id(prog)] = (prog["u_viewproj"], prog["u_view"], prog.get("u_eye", None))
        return got

    def _begin(self, rgb: bool, mode, size):
        """Bind and clear the target of one atlas: (targets, framebuffer, program, vertex-array kind)."""
        ctx = self.ctx
        samples, smooth = mode
        if not rgb:
            t = self._target("depth", size)
            fbo = t["fbo"]
            fbo.use()
            fbo.viewport = (0, 0) + size
            fbo.clear(0.0, 0.0, 0.0, 0.0, depth=1.0)
            return t, fbo, self.prog_depth, "depth"
        if smooth:
            t = self._target("smooth", size)
            fbo = t["fbo"]
            fbo.use()
            fbo.viewport = (0, 0) + size
            ctx.disable_direct(_GL_FRAMEBUFFER_SRGB)  # the shader encodes sRGB: the values are written as they are
            fbo.clear(*_BACKGROUND_SRGB, 1.0, depth=1.0)  # clears every colour attachment, so then:
            _clear_attachment(1, (0.0, 0.0, 0.0, 0.0))  # depth and body id 0: background
            return t, fbo, self.prog_color_srgb, "color_srgb"
        t = self._target("color", size, samples)
        fbo = t["fbo"]
        fbo.use()
        ctx.enable_direct(_GL_FRAMEBUFFER_SRGB)
        fbo.viewport = (0, 0) + size
        fbo.clear(*_BACKGROUND, 1.0, depth=1.0)  # clears every colour attachment, so then:
        t["fbo_zs"].use()
        t["fbo_zs"].viewport = (0, 0) + size
        t["fbo_zs"].clear(0.0, 0.0, 0.0, 0.0)  # depth and body id 0: background
        fbo.use()
        return t, fbo, self.prog_color, "color"

    def _fullscreen_pass(self, fbo, full, texture, prog, vao, uniform: str, value) -> None:
        """Draw one full-screen triangle of ``prog`` into ``fbo`` over the viewport ``full``, reading ``texture``
        (texture unit 3), with ``uniform`` set to ``value``; depth test and culling off for the pass only."""
        ctx = self.ctx
        fbo.use()
        fbo.viewport = full
        ctx.disable(ctx.DEPTH_TEST | ctx.CULL_FACE)
        texture.use(location=3)
        _set(prog, uniform, value)
        vao.render(vertices=3)
        ctx.enable(ctx.DEPTH_TEST | ctx.CULL_FACE)

    def _read_color(self, t, mode, full, tile) -> np.ndarray:
        """The atlas's RGBA, (height, width, 4) uint8 (rows bottom-up in the buffer, i.e. image rows top-down),
        after the resolve (MSAA) or the edge smoothing (default quality); a buffer reused by the next call."""
        ctx = self.ctx
        samples, smooth = mode
        if smooth:
            self._fullscreen_pass(t["fbo_out"], full, t["col"], self.prog_smooth, self.vao_smooth, "u_tile", tile)
            src = t["fbo_out"]
        else:
            ctx.disable_direct(_GL_FRAMEBUFFER_SRGB)
            if samples:
                ctx.copy_framebuffer(t["fbo_col1"], t["fbo_col"])  # resolve (attachment 0) in linear light
                src = t["fbo_col1"]
            else:
                src = t["fbo"]
        buf = _buffer(t, "rgba_buf", full[2] * full[3] * 4)
        src.read_into(buf, viewport=full, components=4, alignment=1)
        return np.frombuffer(buf, np.uint8).reshape(full[3], full[2], 4)

    def _read_zs(self, t, rgb: bool, mode, full) -> np.ndarray:
        """The atlas's (depth, body id + 1) pairs, (height, width, 2) float32: from the one sample of each pixel,
        or (MSAA) resolved from its samples; a buffer reused by the next call."""
        samples = mode[0]
        buf = _buffer(t, "zs_buf", full[2] * full[3] * 8)
        if rgb and samples:  # depth and body id of each pixel from its samples
            self._fullscreen_pass(t["fbo_zs1"], full, t["zs"], self.prog_resolve, self.vao_resolve, "u_samples",
                                  samples)
            t["fbo_zs1"].read_into(buf, viewport=full, components=2, dtype="f4", alignment=1)
        else:
            t["fbo"].read_into(buf, viewport=full, components=2, attachment=1 if rgb else 0, dtype="f4", alignment=1)
        return np.frombuffer(buf, np.float32).reshape(full[3], full[2], 2)

    def release(self) -> None:
        if os.getpid() == self.pid:
            with current(self.ctx):
                for t in self._targets.values():
                    for res in t.values():
                        if hasattr(res, "release"):  # (read-back buffers are bytearrays)
                            res.release()
        self._targets = {}


def _view_uniforms(views, shift) -> tuple[list, list, list]:
    """Per view, the bytes of ``u_viewproj`` (projection × view, column-major float32), ``u_view`` and ``u_eye``
    (the camera centre, world metres)."""
    proj: dict = {}
    vp, vw, eye = [], [], []
    for v in views:
        P = proj.get(v.camera)
        if P is None:
            P = proj[v.camera] = _projection(v.camera, shift)
        Vm = gl_view(v.pose)
        vp.append(_mat_bytes(P @ Vm))
        vw.append(_mat_bytes(Vm))
        eye.append(np.asarray(v.pose, np.float64)[:3, 3].astype(np.float32).tobytes())
    return vp, vw, eye


def _buffer(t: dict, name: str, nbytes: int) -> bytearray:
    """A read-back buffer of ``nbytes`` kept in the target ``t`` (no fresh pages each frame)."""
    buf = t.get(name)
    if buf is None or len(buf) != nbytes:
        buf = t[name] = bytearray(nbytes)
    return buf


def _untile_into(dst: np.ndarray, dest, atlas: np.ndarray, nrows: int, ncols: int, H: int, W: int, c: int) -> None:
    """Copy the views of an atlas of ``nrows`` × ``ncols`` tiles (H × W each, atlas rows top-down, ≥ ``c``
    channels) into ``dst[dest[i]]`` (the first ``c`` channels), view i at row i // ncols, column i % ncols."""
    dest = list(dest)
    tiles = atlas.reshape(nrows, H, ncols, W, atlas.shape[-1])
    contiguous = dest == list(range(dest[0], dest[0] + len(dest))) if dest else True
    for r in range(nrows):
        m = min(ncols, len(dest) - r * ncols)
        block = tiles[r, :, :m, :, :c].transpose(1, 0, 2, 3)
        if contiguous:
            dst[dest[0] + r * ncols:dest[0] + r * ncols + m] = block
        else:
            dst[dest[r * ncols:r * ncols + m]] = block


def _clear_attachment(i: int, value) -> None:
    """Clear colour attachment ``i`` of the bound framebuffer alone (glClearBufferfv)."""
    fn = gl_proc("glClearBufferfv", None, ctypes.c_uint, ctypes.c_int, ctypes.c_void_p)
    v = (ctypes.c_float * 4)(*value)
    fn(_GL_COLOR, i, ctypes.addressof(v))


_SHARED: dict = {}


def shared_renderer() -> GLRenderer:
    """The process's default :class:`GLRenderer` (created on first use; a new one in a forked child): each view at
    its world's render quality."""
    pid = os.getpid()
    r = _SHARED.get(pid)
    if r is None:
        _SHARED.clear()
        r = _SHARED[pid] = GLRenderer()
    return r
