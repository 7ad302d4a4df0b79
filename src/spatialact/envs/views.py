"""What two views share: the fraction of the surface one camera sees that another sees too (task sampling's check).

Poses are C2W (4, 4) float64, metres, OpenCV camera axes; depth is metres along the optical axis.
"""

from __future__ import annotations

import numpy as np

from .camera import CameraSpec

__all__ = ["view_overlap", "clear_view"]


def view_overlap(world, T_a: np.ndarray, T_b: np.ndarray, cam: CameraSpec | None = None,
                 rel_tol: float = 0.1) -> float:
    """Fraction of the surface seen from ``T_a`` that is also seen (in frame, unoccluded) from ``T_b``.

    Renders depth at low resolution from both poses, lifts A's pixels to 3-D (OpenCV pinhole), projects them into
    B and compares with B's depth (relative tolerance ``rel_tol``).
    """
    cam = cam or CameraSpec(24, 24, 60.0)
    _, da, _ = world.render(T_a, cam, depth=True)
    _, db, _ = world.render(T_b, cam, depth=True)
    K = cam.K
    v, u = np.mgrid[0:cam.height, 0:cam.width]
    z = da.astype(np.float64)
    valid = z < cam.far * 0.99
    if not valid.any():
        return 0.0
    pts = np.stack([(u - K[0, 2]) / K[0, 0] * z, (v - K[1, 2]) / K[1, 1] * z, z, np.ones_like(z)], -1)[valid]
    world_pts = pts @ T_a.T
    cam_b = world_pts @ np.linalg.inv(T_b).T
    zb = cam_b[:, 2]
    front = zb > cam.near
    ub = np.full(zb.shape, -1.0)
    vb = np.full(zb.shape, -1.0)
    ub[front] = K[0, 0] * cam_b[front, 0] / zb[front] + K[0, 2]
    vb[front] = K[1, 1] * cam_b[front, 1] / zb[front] + K[1, 2]
    inside = front & (ub >= -0.5) & (ub < cam.width - 0.5) & (vb >= -0.5) & (vb < cam.height - 0.5)
    ok = np.zeros(zb.shape, bool)
    iu = np.clip(np.round(ub).astype(int), 0, cam.width - 1)
    iv = np.clip(np.round(vb).astype(int), 0, cam.height - 1)
    ok[inside] = np.abs(db[iv[inside], iu[inside]] - zb[inside]) <= rel_tol * zb[inside] + 0.02
    return float(ok.sum() / valid.sum())


def clear_view(world, T, fov_deg: float, nearest: float, median: float) -> bool:
    """Whether the view from C2W pose ``T`` is clear: a 16 × 16 depth render (vertical field of view ``fov_deg``)
    whose nearest surface is at least ``nearest`` and whose median depth is at least ``median`` metres."""
    _, d, _ = world.render(T, CameraSpec(16, 16, fov_deg), depth=True)
    return float(d.min()) >= nearest and float(np.median(d)) >= median
