"""The gl renderer's shadow map: a directional light's orthographic depth map over a scene, kept between frames.

:func:`light_camera` aims the light's orthographic camera over the scene's bounds. :class:`ShadowMap` draws the depth
map and keeps it while nothing moves; when link matrices change it redraws only what moves: the faces of the slots
that have moved since the scene was read (*moving* slots) are drawn over a copy of a second map that holds
everything else (*static* slots), kept until a static slot moves too. A depth map is the nearest depth per texel
whatever the order the faces are drawn in, so the map is the one a full redraw gives, texel for texel. Copying
needs ``glCopyImageSubData`` (OpenGL 4.3); without it every change redraws the whole map.

Frames: world +Z up, metres; the light direction points towards the light.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .context import gl_proc

__all__ = ["ShadowMap", "light_camera"]

_GL_CLIP_DISTANCE0 = 0x3000
_GL_TEXTURE_2D = 0x0DE1


def light_camera(direction, bounds) -> tuple[np.ndarray, float]:
    """(view-projection (4, 4) of an orthographic camera looking along −``direction`` that sees the box ``bounds``
    = (lo, hi) in world metres, the larger side of its view in metres). ``direction`` is a unit vector towards the
    light."""
    d = np.asarray(direction, dtype=np.float64)
    lo, hi = bounds
    centre = (lo + hi) / 2
    radius = float(np.linalg.norm(hi - lo)) / 2 + 0.1
    f = -d
    up = np.array([0.0, 0.0, 1.0]) if abs(f[2]) < 0.99 else np.array([1.0, 0.0, 0.0])
    x = np.cross(f, up)
    x /= np.linalg.norm(x)
    y = np.cross(x, f)
    V = np.eye(4)
    V[0, :3], V[1, :3], V[2, :3] = x, y, -f
    V[:3, 3] = -V[:3, :3] @ (centre - f * radius)
    corners = np.array([[a, b, c, 1.0] for a in (lo[0], hi[0]) for b in (lo[1], hi[1]) for c in (lo[2], hi[2])])
    pc = corners @ V.T
    l, r = pc[:, 0].min(), pc[:, 0].max()
    bo, t = pc[:, 1].min(), pc[:, 1].max()
    n_, f_ = -pc[:, 2].max() - 0.1, -pc[:, 2].min() + 0.1
    P = np.array([[2 / (r - l), 0, 0, -(r + l) / (r - l)], [0, 2 / (t - bo), 0, -(t + bo) / (t - bo)],
                  [0, 0, -2 / (f_ - n_), -(f_ + n_) / (f_ - n_)], [0, 0, 0, 1]])
    return P @ V, max(r - l, t - bo)


class ShadowMap:
    """The shadow map of one scene (see the module docstring).

    ``ctx``: the moderngl context; ``prog``: the shadow program (uniforms ``u_light_vp``, ``u_clip_z``, the matrix
    texture at unit 1); ``light_vp``: the light's view-projection; ``clip_z``: geometry above this height (world
    metres: a ceiling) casts no shadow. :attr:`tex` is the depth texture to sample (compare mode ``<=``)."""

    def __init__(self, ctx, prog, light_vp: np.ndarray, clip_z: float):
        self.ctx, self.prog = ctx, prog
        self.light_vp = np.asarray(light_vp, dtype=np.float64)
        self.clip_z = float(clip_z)
        self.tex = self.fbo = None
        self._static_tex = self._static_fbo = None
        self._drawn_for = None  # (level key, size) of what the map holds
        self._static_for = None  # (level key, size, moving slots) of what the static map holds
        self._splits: dict = {}  # level key -> (moving-slot key, vertex array, indices of static faces, all)
        self._res: list = []
        self.can_copy = ctx.version_code >= 430
        self.draws = 0  # shadow draw calls made (for tests and benchmarks)

    def release(self) -> None:
        for r in self._res + [self.tex, self.fbo, self._static_tex, self._static_fbo]:
            if r is not None:
                r.release()
        self._res, self._splits = [], {}
        self.tex = self.fbo = self._static_tex = self._static_fbo = None
        self._drawn_for = self._static_for = None

    def _depth_target(self, S: int):
        tex = self.ctx.depth_texture((S, S))
        tex.compare_func = "<="
        tex.repeat_x = tex.repeat_y = False
        return tex, self.ctx.framebuffer(depth_attachment=tex)

    def _allocate(self, S: int) -> None:
        if self.tex is not None and self.tex.size == (S, S):
            return
        for r in (self.tex, self.fbo, self._static_tex, self._static_fbo):
            if r is not None:
                r.release()
        self.tex, self.fbo = self._depth_target(S)
        self._static_tex = self._static_fbo = None
        self._drawn_for = self._static_for = None

    def _split(self, key, level: dict, moving: np.ndarray):
        """The level's faces ordered static slots first: (vertex array, indices of static faces, all indices)."""
        mkey = moving.tobytes()
        got = self._splits.get(key)
        if got is not None and got[0] == mkey:
            return got[1:]
        faces, slots = level["faces_array"], level["face_slots"]
        order = np.argsort(moving[slots], kind="stable")
        ibo = self.ctx.buffer(np.ascontiguousarray(faces[order], dtype=np.uint32).tobytes())
        vao = self.ctx.vertex_array(self.prog, [(level["vbo"], "3f 24x 3i", "in_pos", "in_ids")], ibo)
        if got is not None:
            for r in got[1]:
                r.release()
                self._res.remove(r)
        self._res += [ibo, vao]
        n_static = 3 * int((~moving[slots]).sum())
        self._splits[key] = (mkey, (vao, ibo), n_static, 3 * len(faces))
        return (vao, ibo), n_static, 3 * len(faces)

    def update(self, key, level: dict, S: int, mats_tex, moving: np.ndarray, moved: bool) -> None:
        """Bring the map up to date for ``level`` (its key ``key``) at S × S texels. ``moving``: per slot, whether
        it has moved since the scene was read; ``moved``: whether a slot moved since the last call."""
        self._allocate(S)
        if self._drawn_for == (key, S) and not moved:
            return
        (vao, _), n_static, n_all = self._split(key, level, moving)
        copy = self.can_copy and 0 < n_static < n_all
        if copy and self._static_for != (key, S, moving.tobytes()):
            if self._static_tex is None:
                self._static_tex, self._static_fbo = self._depth_target(S)
            self._draw(vao, self._static_fbo, mats_tex, 0, n_static, clear=True)
            self._static_for = (key, S, moving.tobytes())
        if copy:
            fn = gl_proc("glCopyImageSubData", None, *([ctypes.c_uint, ctypes.c_uint] + [ctypes.c_int] * 4) * 2,
                         ctypes.c_int, ctypes.c_int, ctypes.c_int)
            fn(self._static_tex.glo, _GL_TEXTURE_2D, 0, 0, 0, 0, self.tex.glo, _GL_TEXTURE_2D, 0, 0, 0, 0, S, S, 1)
            self._draw(vao, self.fbo, mats_tex, n_static, n_all - n_static, clear=False)
        else:
            self._draw(vao, self.fbo, mats_tex, 0, n_all, clear=True)
        self._drawn_for = (key, S)

    def _draw(self, vao, fbo, mats_tex, first: int, count: int, clear: bool) -> None:
        ctx = self.ctx
        fbo.use()
        if clear:
            fbo.clear(depth=1.0)
        if count <= 0:
            return
        mats_tex.use(location=1)
        self.prog["u_light_vp"].write(np.asarray(self.light_vp, np.float32).tobytes(order="F"))
        if "u_clip_z" in self.prog:
            self.prog["u_clip_z"].value = self.clip_z
        ctx.enable(ctx.DEPTH_TEST | ctx.CULL_FACE)
        ctx.enable_direct(_GL_CLIP_DISTANCE0)
        # the faces turned away from the light go into the map: lit surfaces never shadow themselves
        ctx.front_face, ctx.cull_face = "ccw", "front"
        vao.render(vertices=count, first=first)
        ctx.cull_face = "back"
        ctx.disable_direct(_GL_CLIP_DISTANCE0)
        self.draws += 1
