"""The five question types that rendered scenes and recordings both give — relative pose, field of view, depth,
relative depth, tracking — one generator each, over :class:`Views`: what a source of views provides.

Two sources fill :class:`Views`: :class:`spatialact.questions.generate.SceneViews` (views rendered in a simulated
scene: any pose, any camera, exact depth) and :class:`spatialact.questions.recorded.Recording` (a recording's own
frames, poses, intrinsics and depth, quantised in steps of ``depth_step``). A generator asks its views for poses,
cameras (``camera_of``), images, depth maps and pairs, and writes the question the same way for both; where the sources differ
(which pairs share a view, which relative poses serve as distractors, which camera a field-of-view question asks
about, what the question's ``meta`` names) the views say it.

Frames and units: poses are camera-to-world (C2W) (4, 4) float64, metres, world +Z up, camera axes OpenCV's (+X
right, +Y down, +Z forward); cameras are :class:`spatialact.envs.camera.CameraSpec` (pinhole intrinsics in pixels,
fx and fy apart); pixels (x, y) = (column, row) with centres at integers; depth is z-depth (along the optical axis)
in metres. Projection and unprojection: :func:`spatialact.envs.camera.project_points` and ``unproject_pixels``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..envs.camera import project_points, unproject_pixels
from .drafts import (FRAME_TEXT, RED, ROTATION_TEXT, YELLOW, Draft, depth_draft, draw_marks, far_poses,
                     four_points_apart, marked_point, pick_pixels, relative_depth_draft, relative_pose_draft,
                     shuffle_options, smooth_mask, spread_values)
from .io import option_letters

__all__ = ["Views", "FovShot", "DEPTH_TOLERANCE", "EXACT_DEPTH_SLACK_M", "field_of_view_deg", "marked_views",
           "relative_pose_question", "fov_question", "depth_question", "relative_depth_question",
           "tracking_question", "tracked_pixel", "SHARED_GENERATORS"]

DEPTH_TOLERANCE = 0.05       # the finest tolerance a depth answer is scored at (MRA's θ = 0.95: 5 % of the truth)
EXACT_DEPTH_SLACK_M = 0.01   # tracking on exact (rendered) depth: a point is seen within 1 cm + 3 % of its depth


@dataclass
class FovShot:
    """The view a field-of-view question shows: its C2W pose (4, 4; metres), its camera (``CameraSpec``), its image
    (H, W, 3) uint8, the ``axis`` asked (``horizontal``: fx; ``vertical``: fy), how the question describes the
    camera (``said``, after "Image 1 ") and the question's ``meta``."""

    pose: np.ndarray
    camera: object
    rgb: np.ndarray
    axis: str
    said: str
    meta: dict


class Views:
    """What the shared generators need from a source of views (indices ``k`` in ``range(n_views)``).

    Data: ``source`` and ``spec`` (the question record's ``source`` and ``scene``), ``depth_step`` (metres: the
    quantisation of the depth maps; None: exact depth, as rendered), ``far_m`` (depth at or beyond which a depth map
    says only "this far or farther"), ``fov_tries`` (draws of :meth:`fov_shot` before a field-of-view question gives
    up).
    """

    source: str
    spec: dict | None
    depth_step: float | None = None
    fov_tries: int = 1

    @property
    def n_views(self) -> int:
        raise NotImplementedError

    @property
    def far_m(self) -> float:
        raise NotImplementedError

    def pose(self, k: int) -> np.ndarray:
        """View ``k``'s C2W pose (4, 4) float64, metres."""
        raise NotImplementedError

    def camera_of(self, k: int):
        """View ``k``'s camera (``CameraSpec``: intrinsics in pixels of its image)."""
        raise NotImplementedError

    def rgb(self, k: int) -> np.ndarray:
        """View ``k``'s image (H, W, 3) uint8."""
        raise NotImplementedError

    def depth(self, k: int) -> np.ndarray:
        """View ``k``'s z-depth map (H, W) in metres."""
        raise NotImplementedError

    def usable(self, k: int) -> bool:
        """Whether a marker may be placed in view ``k`` (a rendered view: nothing too close, no empty sky)."""
        return True

    def pairs(self, rng, tries: int | None = None):
        """Random pairs (a, b) of views that moved and share their view (``tries`` draws; None: the source's)."""
        raise NotImplementedError

    def relative_poses(self, rng, a: int, b: int):
        """Distractors for the relative pose of the pair (a, b): an iterable of relative poses (4, 4) of other view
        pairs, in an order drawn from ``rng`` when this is called."""
        raise NotImplementedError

    def pair_text(self, a: int, b: int) -> str:
        """The sentence that says where Image 1 and Image 2 come from."""
        raise NotImplementedError

    def view_meta(self, ks) -> dict:
        """What a question's ``meta`` says of the views ``ks`` it shows."""
        return {}

    def depth_meta(self) -> dict:
        """What a question's ``meta`` says of the depth maps it uses."""
        return {}

    def fov_shot(self, rng) -> FovShot | None:
        """One draw of the view a field-of-view question asks about, or None (this draw is not usable)."""
        raise NotImplementedError


def field_of_view_deg(cam, axis: str) -> float:
    """The field of view (degrees) of a pinhole camera along ``axis`` (``horizontal``: from the left edge of the image
    to its right edge through the principal point, with fx; ``vertical``: top to bottom, with fy); the image edges
    are half a pixel beyond the outer pixel centres."""
    if axis == "horizontal":
        f, c, n = cam.fx, cam.cx, cam.width
    else:
        f, c, n = cam.fy, cam.cy, cam.height
    return math.degrees(math.atan((c + 0.5) / f) + math.atan((n - 0.5 - c) / f))


def marked_views(views: Views, rng):
    """Usable views in a random order (one permutation drawn from ``rng``), each ``(k, depth, mask)``: the mask of
    pixels where a marker stands on one surface (depth locally smooth, below the far level, at least 6 % of the
    image's smaller side from the border)."""
    for k in rng.permutation(views.n_views):
        k = int(k)
        if not views.usable(k):
            continue
        depth = views.depth(k)
        margin = max(4, int(0.06 * min(depth.shape)))
        yield k, depth, smooth_mask(depth, views.far_m, margin)


# ----- the five generators -----------------------------------------------------------------------------------------
def relative_pose_question(views: Views, rng, fmt: str) -> Draft | None:
    """The pose of view 2's camera in view 1's frame, ``inv(T1) @ T2`` (metres, camera axes); distractors: the
    relative poses of other view pairs (:meth:`Views.relative_poses`)."""
    from .. import geometry

    for a, b in views.pairs(rng):
        rel = geometry.relative_pose(views.pose(a), views.pose(b))
        want = 3 if fmt == "multiple_choice" else 1
        got = far_poses(views.relative_poses(rng, a, b), rel, want)
        if len(got) < want:
            continue
        intro = (views.pair_text(a, b) + " " + FRAME_TEXT + " " + ROTATION_TEXT + " The relative pose of camera 2 is "
                 "its position in camera 1's frame (metres) and its rotation from camera 1's orientation.")
        shown = [(views.pose(a), views.camera_of(a), None), (views.pose(b), views.camera_of(b), None)]
        images = [(views.rgb(a), 0, "view 1"), (views.rgb(b), 1, "view 2")]
        return relative_pose_draft(rng, fmt, intro, rel, got, shown, images, views.view_meta((a, b)))
    return None


def fov_question(views: Views, rng, fmt: str) -> Draft | None:
    """The field of view (degrees) of the camera of :meth:`Views.fov_shot` along its axis; numeric, or multiple
    choice against three values 0.55–1.7 times it (10°–170°)."""
    for _ in range(views.fov_tries):
        shot = views.fov_shot(rng)
        if shot is None:
            continue
        cam = shot.camera
        fov = field_of_view_deg(cam, shot.axis)
        q = (f"Image 1 {shot.said}. The image is {cam.width} x {cam.height} pixels. What is the camera's {shot.axis} "
             "field of view, in degrees?")
        base = dict(views=[(shot.pose, cam, None)], images=[(shot.rgb, 0, "view")], meta=shot.meta)
        if fmt == "numeric":
            return Draft(question=q, format=fmt, answer=fov, unit="deg", **base)
        fmt_v = lambda v: f"{v:.1f}°"  # noqa: E731
        d = spread_values(rng, fov, (0.55, 0.68, 0.8, 1.25, 1.45, 1.7), 10.0, 170.0, fmt_v)
        if d is None:
            continue
        opts, vals, letter = shuffle_options(rng, [fmt_v(v) for v in [fov] + d], [fov] + d, 0)
        return Draft(question=q, format=fmt, answer=letter, options=opts, option_values=vals, **base)
    return None


def depth_question(views: Views, rng, fmt: str) -> Draft | None:
    """The z-depth (metres) at a marked pixel; with quantised depth, asked only where the finest scoring tolerance
    exceeds the quantisation step: ``DEPTH_TOLERANCE × depth > depth_step``."""
    for k, depth, mask in marked_views(views, rng):
        if views.depth_step is not None:
            mask = mask & (DEPTH_TOLERANCE * depth > views.depth_step)
        px = pick_pixels(rng, mask)
        if px is not None:
            return depth_draft(fmt, views.pose(k), views.camera_of(k), depth, views.rgb(k), *px[0],
                               meta={**views.view_meta((k,)), **views.depth_meta()})
    return None


def relative_depth_question(views: Views, rng, fmt: str) -> Draft | None:
    """Which of four marked points is closest / farthest: their depths differ by 12 % or more, and with quantised
    depth by more than a quantisation step, so the order holds for the true depths too."""
    for k, depth, mask in marked_views(views, rng):
        found = four_points_apart(rng, mask, depth, views.depth_step)
        if found is not None:
            return relative_depth_draft(rng, fmt, views.pose(k), views.camera_of(k), depth, views.rgb(k), *found,
                                        meta={**views.view_meta((k,)), **views.depth_meta()})
    return None


def tracked_pixel(views: Views, a: int, b: int, x: int, y: int, min_dist: float):
    """Where view ``a``'s pixel (x, y) lands in view ``b`` — (u, v), or None when it falls outside ``b``'s image,
    when it is hidden there (``b``'s depth differs from its depth by more than the quantisation step, or
    :data:`EXACT_DEPTH_SLACK_M` for exact depth, plus 3 %), or, with quantised depth, when the quantisation could move
    it by more than a quarter of ``min_dist`` (the spacing of the candidates)."""
    cam_a, cam_b, T_a, T_b = views.camera_of(a), views.camera_of(b), views.pose(a), views.pose(b)
    z = float(views.depth(a)[y, x])
    u, v, zb = (float(w) for w in project_points(T_b, cam_b, unproject_pixels(T_a, cam_a, x, y, z)))
    if not (math.isfinite(u) and math.isfinite(v)):
        return None
    ui, vi = int(round(u)), int(round(v))
    if not (0 <= ui < cam_b.width and 0 <= vi < cam_b.height):
        return None
    step = views.depth_step
    slack = EXACT_DEPTH_SLACK_M if step is None else step
    if abs(float(views.depth(b)[vi, ui]) - zb) > slack + 0.03 * zb:  # hidden, or not what b saw
        return None
    if step is not None:
        for dz in (-step / 2, step / 2):
            u2, v2, _ = (float(w) for w in project_points(T_b, cam_b,
                                                          unproject_pixels(T_a, cam_a, x, y, max(z + dz, 1e-3))))
            if not (math.isfinite(u2) and math.hypot(u2 - u, v2 - v) <= 0.25 * min_dist):
                return None
    return u, v


def tracking_question(views: Views, rng, fmt: str) -> Draft | None:
    """Which of four candidates in image 2 is the point marked in image 1: unprojected with its depth and view 1's
    intrinsics (fx, fy apart), projected with view 2's (:func:`tracked_pixel`)."""
    for a, b in views.pairs(rng, tries=40):
        cam_a, cam_b = views.camera_of(a), views.camera_of(b)
        d_a, d_b = views.depth(a), views.depth(b)
        m_a = smooth_mask(d_a, views.far_m, max(4, int(0.08 * cam_a.width)))
        m_b = smooth_mask(d_b, views.far_m, max(4, int(0.08 * cam_b.width)))
        min_dist = max(16.0, 0.12 * cam_b.width)
        for _ in range(10):
            px = pick_pixels(rng, m_a)
            if px is None:
                break
            x, y = px[0]
            uv = tracked_pixel(views, a, b, x, y, min_dist)
            if uv is None or not m_b[int(round(uv[1])), int(round(uv[0]))]:
                continue
            others = pick_pixels(rng, m_b, 3, min_dist=min_dist, avoid=[uv])
            if others is None:
                continue
            cands = [uv] + [(float(p), float(q)) for p, q in others]
            order = rng.permutation(4)
            shown = [cands[k] for k in order]
            k_true = int(np.flatnonzero(order == 0)[0])
            P = marked_point(views.pose(a), cam_a, d_a, "red", 0, x, y)
            img_a = draw_marks(views.rgb(a), [(x, y, RED, None)])
            img_b = draw_marks(views.rgb(b), [(round(p), round(q), YELLOW, str(n + 1))
                                              for n, (p, q) in enumerate(shown)])
            points = [P] + [{"label": str(n + 1), "view": 1, "pixel": [float(p), float(q)]}
                            for n, (p, q) in enumerate(shown)]
            q = (f"Image 1 shows a red marker at pixel ({x}, {y}). Image 2 shows the same scene from another "
                 "viewpoint, with four candidate points labelled 1 to 4. Which candidate point in Image 2 is the same "
                 "3-D point as the red marker in Image 1?")
            return Draft(question=q, format=fmt, answer=option_letters(4)[k_true],
                         options=[f"Point {n + 1}" for n in range(4)], option_values=[list(c) for c in shown],
                         views=[(views.pose(a), cam_a, d_a), (views.pose(b), cam_b, d_b)],
                         images=[(img_a, 0, "view 1"), (img_b, 1, "view 2")], points=points,
                         meta={**views.view_meta((a, b)), **views.depth_meta()})
    return None


SHARED_GENERATORS = {"relative_pose": relative_pose_question, "fov": fov_question, "depth": depth_question,
                     "relative_depth": relative_depth_question, "tracking": tracking_question}
