"""Cameras: the pinhole model, its view and projection matrices and the pixel convention, for every renderer.

One owner for what a camera is: :class:`CameraSpec` (image size and intrinsics in pixels, clip planes in metres),
:func:`intrinsics_matrix` (the field-of-view form's K), :func:`look_at` (a C2W pose aimed at a point),
:func:`gl_view` / :func:`view_matrix` (world → OpenGL camera) and :func:`gl_projection` / :func:`projection_matrix`
(OpenGL perspective of the intrinsics), :data:`TINY_SHIFT_PX` (TinyRenderer's half-pixel offset), and the pinhole
projection of world points to pixels and back (:func:`project_points`, :func:`unproject_pixels`: the one place for
that formula). The PyBullet renderers (:mod:`spatialact.envs.rendering`), the gl renderer (:mod:`spatialact.envs.gl`)
and the question generators (:mod:`spatialact.questions`) import them from here.

Frames: poses are camera-to-world (C2W) (4, 4) float64, metres, world +Z up, camera axes OpenCV's (+X right, +Y
down, +Z forward); pixels are (u, v) = (column, row) with pixel centres at integer coordinates. OpenGL's camera
looks along −Z with +Y up, so its world-to-camera matrix is ``V = inv(T @ diag(1, −1, −1, 1))``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import geometry

__all__ = ["CameraSpec", "intrinsics_matrix", "look_at", "gl_view", "view_matrix", "gl_projection",
           "projection_matrix", "TINY_SHIFT_PX", "MIN_DEPTH_M", "project_points", "unproject_pixels"]

# TinyRenderer samples each pixel half a pixel away from where OpenGL (EGL) samples it, in x and (flipped) in y;
# this shift of its frustum puts both on the same principal point ((W − 1)/2, (H − 1)/2) of intrinsics_matrix, so
# depth unprojected with `intrinsics` lands on the surface rgb shows with either renderer.
TINY_SHIFT_PX = (-0.5, 0.5)
# A point at most this far in front of the camera plane (metres along the optical axis), or behind it, does not
# project: its pixel is NaN.
MIN_DEPTH_M = 1e-6


@dataclass(frozen=True)
class CameraSpec:
    """A pinhole camera: image size in pixels, full intrinsics in pixels, clip planes in metres.

    ``CameraSpec(width, height, fov_deg)`` (the field-of-view form) is a vertical field of view with square pixels
    and the principal point at the image centre ((W − 1)/2, (H − 1)/2); :meth:`from_intrinsics` (or passing
    ``fx, fy, cx, cy``) gives any pinhole camera (OpenCV convention: pixel centres at integer coordinates, +x right,
    +y down). ``fov_deg`` is then the vertical field of view those intrinsics imply (at the centre, for reference);
    both renderers project with ``fx, fy, cx, cy``.
    """

    width: int = 128
    height: int = 128
    fov_deg: float = 60.0
    near: float = 0.02
    far: float = 20.0
    fx: float | None = None
    fy: float | None = None
    cx: float | None = None
    cy: float | None = None

    def __post_init__(self) -> None:
        if int(self.width) < 1 or int(self.height) < 1:
            raise ValueError(f"camera image size must be positive, got {self.width}x{self.height}")
        given = [v is not None for v in (self.fx, self.fy, self.cx, self.cy)]
        if any(given) and not all(given):
            raise ValueError("camera intrinsics: give all of fx, fy, cx, cy or none")
        if not all(given):
            if not 0.0 < float(self.fov_deg) < 180.0:
                raise ValueError(f"camera fov_deg must be in (0, 180), got {self.fov_deg!r}")
            K = intrinsics_matrix(int(self.width), int(self.height), float(self.fov_deg))
            vals = (K[0, 0], K[1, 1], K[0, 2], K[1, 2])
        else:
            vals = tuple(float(v) for v in (self.fx, self.fy, self.cx, self.cy))
            if not all(math.isfinite(v) for v in vals) or vals[0] <= 0 or vals[1] <= 0:
                raise ValueError(f"camera intrinsics must be finite with fx, fy > 0, got {vals}")
            object.__setattr__(self, "fov_deg", math.degrees(2.0 * math.atan((self.height / 2.0) / vals[1])))
        for name, v in zip(("fx", "fy", "cx", "cy"), vals):
            object.__setattr__(self, name, float(v))

    @classmethod
    def from_intrinsics(cls, width: int, height: int, fx: float, fy: float, cx: float, cy: float,
                        near: float = 0.02, far: float = 20.0) -> "CameraSpec":
        """A camera from pinhole intrinsics in pixels of a ``width`` × ``height`` image."""
        return cls(int(width), int(height), 60.0, near, far, fx, fy, cx, cy)

    @classmethod
    def from_K(cls, K, width: int, height: int, near: float = 0.02, far: float = 20.0) -> "CameraSpec":
        """A camera from a (3, 3) pinhole matrix (zero skew) in pixels of a ``width`` × ``height`` image."""
        K = np.asarray(K, dtype=np.float64)
        return cls.from_intrinsics(width, height, K[0, 0], K[1, 1], K[0, 2], K[1, 2], near, far)

    @property
    def K(self) -> np.ndarray:
        """Pinhole K (3, 3) in pixels."""
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])

    def resized(self, width: int, height: int) -> "CameraSpec":
        """The same camera rendering a ``width`` × ``height`` image (the image stretched, pixel centres kept:
        ``c' = (c + 0.5)·s − 0.5``, ``f' = f·s`` per axis) — how a recorded frame resized to that size maps."""
        sx, sy = width / self.width, height / self.height
        return CameraSpec.from_intrinsics(width, height, self.fx * sx, self.fy * sy, (self.cx + 0.5) * sx - 0.5,
                                          (self.cy + 0.5) * sy - 0.5, self.near, self.far)

    def project(self, T_c2w: np.ndarray, points_world: np.ndarray) -> np.ndarray:
        """Pixel coordinates (N, 2) (x right, y down, pixel centres at integers) of world points (N, 3) or (3,)
        (metres) seen from C2W ``T_c2w`` (metres, OpenCV camera axes): :func:`project_points`; points at most
        :data:`MIN_DEPTH_M` in front of the camera, or behind it, give NaN."""
        u, v, _ = project_points(T_c2w, self, np.atleast_2d(np.asarray(points_world, dtype=np.float64)))
        return np.stack([u, v], axis=1)


def project_points(T_c2w, cam, points_world):
    """The pinhole projection: world points to pixels of the camera at C2W pose ``T_c2w``.

    Frames and units: ``T_c2w`` (4, 4) camera-to-world, metres, world +Z up, camera axes OpenCV's (+X right, +Y down,
    +Z forward; docs/conventions.md); ``cam`` anything with pinhole intrinsics ``fx``, ``fy``, ``cx``, ``cy`` in pixels
    (a :class:`CameraSpec`; pixels need not be square: fx and fy are used apart); ``points_world`` (..., 3) metres in
    the world frame, any leading shape (one point: shape (3,)). The point in the camera frame is
    ``(X, Y, Z) = Rᵀ (p − t)`` of ``T_c2w = [R | t]``; its pixel ``u = fx·X/Z + cx`` (column, to the right),
    ``v = fy·Y/Z + cy`` (row, down), pixel centres at integer coordinates.

    Returns ``(u, v, z)``, each of the points' leading shape (float64 scalars for one point): pixels, NaN where
    ``Z ≤ MIN_DEPTH_M`` (behind or on the camera plane), and ``z = Z``, the z-depth along the optical axis in metres
    (given for every point). ``Rᵀ (p − t)`` is computed as ``(p − t) @ R`` (the question files' known bytes rest on
    this form: tests/questions/test_identity.py).
    """
    T = np.asarray(T_c2w, dtype=np.float64)
    pc = (np.asarray(points_world, dtype=np.float64) - T[:3, 3]) @ T[:3, :3]
    z = pc[..., 2]
    zf = np.where(z > MIN_DEPTH_M, z, np.nan)
    return cam.fx * pc[..., 0] / zf + cam.cx, cam.fy * pc[..., 1] / zf + cam.cy, z


def unproject_pixels(T_c2w, cam, x, y, z):
    """The inverse of :func:`project_points`: world points (..., 3) in metres of pixels (``x`` column, ``y`` row,
    pixel centres at integers) at z-depth ``z`` (metres along the optical axis) of the camera at C2W ``T_c2w``
    ((4, 4), metres, OpenCV camera axes) with pinhole intrinsics ``cam.fx, fy, cx, cy`` (pixels; fx and fy apart).
    ``x``, ``y``, ``z`` broadcast together (numbers give one point, shape (3,)). The camera-frame point is
    ``((x − cx)/fx·z, (y − cy)/fy·z, z)``, the world point ``R p + t``, computed as ``p @ Rᵀ + t``."""
    x, y, z = (np.asarray(a, dtype=np.float64) for a in (x, y, z))
    pc = np.stack(np.broadcast_arrays((x - cam.cx) / cam.fx * z, (y - cam.cy) / cam.fy * z, z), axis=-1)
    T = np.asarray(T_c2w, dtype=np.float64)
    return pc @ T[:3, :3].T + T[:3, 3]


def intrinsics_matrix(width: int, height: int, fov_deg: float) -> np.ndarray:
    """Pinhole K (3, 3) in pixels of the field-of-view form of :class:`CameraSpec`: vertical field of view,
    square pixels, pixel centres at integer coordinates (OpenCV), principal point at the centre."""
    fy = (height / 2.0) / math.tan(math.radians(fov_deg) / 2.0)
    fx = fy  # square pixels: the horizontal field of view follows from the aspect ratio
    return np.array([[fx, 0.0, (width - 1) / 2.0], [0.0, fy, (height - 1) / 2.0], [0.0, 0.0, 1.0]])


def look_at(eye, target, up=(0.0, 0.0, 1.0)) -> np.ndarray:
    """C2W pose (4, 4) float64 (OpenCV axes, metres) of a camera at ``eye`` looking at ``target`` (world points,
    metres) with the image's up near ``up``."""
    eye, target, up = (np.asarray(v, dtype=np.float64) for v in (eye, target, up))
    z = target - eye
    z /= np.linalg.norm(z)
    x = np.cross(z, up)
    if np.linalg.norm(x) < 1e-9:
        x = np.cross(z, [0.0, 1.0, 0.0])
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    T = np.eye(4)
    T[:3, 0], T[:3, 1], T[:3, 2], T[:3, 3] = x, y, z, eye
    return T


def gl_view(T_c2w: np.ndarray) -> np.ndarray:
    """The OpenGL world-to-camera matrix (4, 4) float64 of an OpenCV C2W pose: ``inv(T @ diag(1, −1, −1, 1))``."""
    return geometry.invert_pose(geometry.opencv_to_opengl(np.asarray(T_c2w, dtype=np.float64)))


def view_matrix(T_c2w: np.ndarray) -> list[float]:
    """PyBullet view matrix (column-major 16 floats) of an OpenCV C2W pose: :func:`gl_view`, flattened."""
    return gl_view(T_c2w).flatten(order="F").tolist()


def gl_projection(cam: CameraSpec, shift_px: tuple[float, float] = (0.0, 0.0)) -> np.ndarray:
    """OpenGL perspective projection (4, 4) float64 of the camera's pinhole intrinsics (clip planes in metres).

    With pixel centres at integer coordinates, pixel u spans NDC ``2(u + 0.5)/W − 1`` (x) and
    ``1 − 2(v + 0.5)/H`` (y, NDC up, image down), so ``u = fx·X/Z + cx`` gives ``P00 = 2fx/W``,
    ``P02 = 1 − 2(cx + 0.5)/W``, ``P11 = 2fy/H``, ``P12 = 2(cy + 0.5)/H − 1`` (GL camera looks along −Z).
    ``shift_px``: move the image content by (dx, dy) pixels (+x right, +y down in the image), i.e. render with
    ``cx + dx, cy + dy``; used to make a renderer's pixel-sampling convention match :attr:`CameraSpec.K`.
    """
    W, H = cam.width, cam.height
    cx, cy = cam.cx + shift_px[0], cam.cy + shift_px[1]
    n, fa = cam.near, cam.far
    return np.array([[2.0 * cam.fx / W, 0, 1.0 - 2.0 * (cx + 0.5) / W, 0],
                     [0, 2.0 * cam.fy / H, 2.0 * (cy + 0.5) / H - 1.0, 0],
                     [0, 0, (fa + n) / (n - fa), 2 * fa * n / (n - fa)],
                     [0, 0, -1, 0]], dtype=np.float64)


def projection_matrix(cam: CameraSpec, shift_px: tuple[float, float] = (0.0, 0.0)) -> list[float]:
    """PyBullet projection matrix (column-major 16 floats): :func:`gl_projection`, flattened."""
    return gl_projection(cam, shift_px).flatten(order="F").tolist()
