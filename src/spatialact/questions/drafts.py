"""What every question generator shares: the draft of a question (:class:`Draft`), pixels and markers, options and
their values, the texts that state frames and conventions, and the question record written from a draft.

Frames and units: poses are camera-to-world (C2W) (4, 4) float64, metres, world +Z up, camera axes OpenCV's (+X
right, +Y down, +Z forward); cameras are pinhole intrinsics in pixels (``fx``, ``fy``, ``cx``, ``cy``: pixels need
not be square: the pinhole projection and its inverse, ``spatialact.envs.camera.project_points`` and
``unproject_pixels``, use ``fx`` and ``fy`` separately); pixels are (x, y) = (column, row) with pixel centres at
integer coordinates; depth is z-depth (along the optical axis) in metres; rotations in words are
docs/conventions.md's pan, tilt, roll in degrees (:data:`ROTATION_TEXT`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..envs.camera import unproject_pixels
from .io import SCHEMA_VERSION, option_letters

__all__ = ["Draft", "MIN_OVERLAP", "FRAME_TEXT", "ROTATION_TEXT", "RED", "BLUE", "YELLOW", "FMT_SHORT",
           "camera_intrinsics", "smooth_mask", "draw_marks", "pick_pixels", "pose_text",
           "pose_far", "shuffle_options", "relative_pose_draft", "far_poses", "depth_draft", "four_points_apart",
           "relative_depth_draft", "spread_values", "marked_point", "write_png", "question_dict", "plain_json"]

MIN_OVERLAP = 0.3  # shared view (both ways) of two views a question compares
FMT_SHORT = {"multiple_choice": "mc", "judgment": "yn", "numeric": "num"}
RED, BLUE, YELLOW = (235, 30, 30), (30, 110, 255), (255, 215, 0)

FRAME_TEXT = ("Camera frame: +X points right, +Y points down and +Z points forward (the viewing direction). "
              "Pixel coordinates (x, y): x to the right and y down from the top-left pixel (0, 0).")
ROTATION_TEXT = ("Rotations: pan about +Y (pan right is positive), tilt about +X (tilt up is positive), roll about "
                 "+Z (counter-clockwise is positive: the image turns counter-clockwise, the camera's right side "
                 "dips); the rotation is R = R_y(pan) · R_x(tilt) · R_z(roll).")


def camera_intrinsics(cam) -> dict:
    return {"fx": float(cam.fx), "fy": float(cam.fy), "cx": float(cam.cx), "cy": float(cam.cy)}


def smooth_mask(depth: np.ndarray, far: float, margin: int, rel: float = 0.03, k: int = 2) -> np.ndarray:
    """Pixels where a marker is unambiguous: a surface (not the far plane), depth within ``rel`` over the
    (2k+1)² neighbourhood, at least ``margin`` pixels from the border."""
    from numpy.lib.stride_tricks import sliding_window_view

    d = depth.astype(np.float64)
    pad = np.pad(d, k, mode="edge")
    win = sliding_window_view(pad, (2 * k + 1, 2 * k + 1))
    dev = np.abs(win - d[..., None, None]).max(axis=(-1, -2))
    ok = (d < far * 0.99) & (d > 0) & (dev <= rel * d)
    m = max(0, int(margin))
    if m:
        ok[:m], ok[-m:], ok[:, :m], ok[:, -m:] = False, False, False, False
    return ok


def draw_marks(rgb: np.ndarray, marks) -> np.ndarray:
    """The image with markers: ``marks`` = [(x, y, colour, label or None)]: a filled disc with a white ring and
    a black outline at the pixel, the label in a box beside it."""
    from PIL import Image, ImageDraw, ImageFont

    im = Image.fromarray(np.ascontiguousarray(rgb))
    d = ImageDraw.Draw(im)
    H, W = rgb.shape[:2]
    r = max(3, round(min(W, H) / 64))
    font = ImageFont.load_default()
    for x, y, colour, label in marks:
        x, y = float(x), float(y)
        d.ellipse([x - r - 1, y - r - 1, x + r + 1, y + r + 1], fill=(0, 0, 0))
        d.ellipse([x - r, y - r, x + r, y + r], fill=(255, 255, 255))
        d.ellipse([x - r + 2, y - r + 2, x + r - 2, y + r - 2], fill=colour)
        if label:
            bx, by = x + r + 2, y - r - 12
            bx = min(bx, W - 8 * len(label) - 4)
            by = max(by, 0)
            x0, y0, x1, y1 = d.textbbox((bx + 2, by + 1), label, font=font)
            d.rectangle([x0 - 2, y0 - 1, x1 + 2, y1 + 1], fill=(0, 0, 0))
            d.text((bx + 2, by + 1), label, fill=(255, 255, 255), font=font)
    return np.asarray(im)


def pick_pixels(rng, mask: np.ndarray, n: int = 1, min_dist: float = 0.0, avoid=(), tries: int = 200):
    """``n`` pixels (x, y) of ``mask``, at least ``min_dist`` apart and from ``avoid``; None if not found."""
    ys, xs = np.nonzero(mask)
    if len(xs) < n:
        return None
    got: list[tuple[int, int]] = []
    for _ in range(tries):
        i = int(rng.integers(len(xs)))
        p = (int(xs[i]), int(ys[i]))
        if all(math.dist(p, q) >= min_dist for q in list(got) + list(avoid)):
            got.append(p)
            if len(got) == n:
                return got
    return None


def pose_text(rel: np.ndarray) -> str:
    """A relative pose in words: the position of camera 2 in camera 1's frame (metres) and its rotation as pan,
    tilt, roll (degrees; docs/conventions.md's convention, :data:`ROTATION_TEXT`)."""
    from .. import geometry

    pan, tilt, roll = np.degrees(geometry.matrix_to_ptr(np.asarray(rel)[:3, :3]))
    x, y, z = np.asarray(rel)[:3, 3]
    return (f"position (x, y, z) = ({x:+.2f}, {y:+.2f}, {z:+.2f}) m; "
            f"pan {pan:+.1f}°, tilt {tilt:+.1f}°, roll {roll:+.1f}°")


def pose_far(a: np.ndarray, b: np.ndarray, t_min: float = 0.15, r_min: float = math.radians(8.0)) -> bool:
    from .. import geometry

    return (float(np.linalg.norm(a[:3, 3] - b[:3, 3])) >= t_min
            or float(geometry.rotation_error(a, b)) >= r_min)


def shuffle_options(rng, options: list, values: list, correct: int):
    """Options and values in a random order; the letter of the correct one."""
    order = rng.permutation(len(options))
    opts = [options[i] for i in order]
    vals = [values[i] for i in order]
    return opts, vals, option_letters(len(opts))[int(np.flatnonzero(order == correct)[0])]


def far_poses(candidates, rel: np.ndarray, want: int, max_distance: float = 3.0) -> list:
    """Up to ``want`` distractor poses for the relative pose ``rel`` (4, 4; metres), taken in order from the lazy
    iterable ``candidates``: within ``max_distance`` metres, far from ``rel`` and from each other (:func:`pose_far`)
    and written differently (:func:`pose_text`). Stops drawing candidates once it has ``want``."""
    got: list[np.ndarray] = []
    for R in candidates:
        if float(np.linalg.norm(R[:3, 3])) > max_distance:
            continue
        if all(pose_far(R, Q) and pose_text(R) != pose_text(Q) for Q in got + [rel]):
            got.append(R)
            if len(got) == want:
                break
    return got


def depth_draft(fmt: str, T: np.ndarray, cam, depth: np.ndarray, rgb: np.ndarray, x: int, y: int,
                meta: dict | None = None) -> Draft:
    """The depth question at pixel (``x``, ``y``) of one view: ``T`` its C2W pose (4, 4; metres), ``cam`` its
    intrinsics, ``depth`` (H, W) z-depth in metres; the answer is the z-depth of the marked point (metres)."""
    pt = marked_point(T, cam, depth, "red", 0, x, y)
    q = (f"A red marker is drawn in Image 1 at pixel (x, y) = ({x}, {y}). " + FRAME_TEXT + " What is the depth of the "
         "surface point under the marker: its distance from the camera along the viewing direction (the Z "
         "coordinate in the camera frame, not the distance along the ray), in metres?")
    return Draft(question=q, format=fmt, answer=pt["depth"], unit="m", views=[(T, cam, depth)],
                 images=[(draw_marks(rgb, [(x, y, RED, None)]), 0, "view")], points=[pt], meta=dict(meta or {}))


def four_points_apart(rng, mask: np.ndarray, depth: np.ndarray, min_gap: float | None = None):
    """Four pixels of ``mask`` whose depths (metres) differ pairwise by 12 % or more (and by more than ``min_gap``
    metres when given), in up to 30 draws: ``(pixels, depths)``, or None."""
    W = depth.shape[1]
    for _ in range(30):
        px = pick_pixels(rng, mask, 4, min_dist=max(12.0, 0.12 * W))
        if px is None:
            return None
        z = [float(depth[y, x]) for x, y in px]
        zs = sorted(z)
        if all(b / a >= 1.12 and (min_gap is None or b - a > min_gap) for a, b in zip(zs, zs[1:])):
            return px, z
    return None


def relative_depth_draft(rng, fmt: str, T: np.ndarray, cam, depth: np.ndarray, rgb: np.ndarray, px: list, z: list,
                         meta: dict | None = None) -> Draft:
    """Which of the four marked pixels ``px`` (depths ``z``, metres) is closest to / farthest from the camera (one
    draw of ``rng`` picks which is asked); ``T`` C2W (4, 4; metres), ``cam`` intrinsics, ``depth`` (H, W) metres."""
    closest = bool(rng.random() < 0.5)
    k = int(np.argmin(z) if closest else np.argmax(z))
    points = [marked_point(T, cam, depth, str(i + 1), 0, x, y) for i, (x, y) in enumerate(px)]
    img = draw_marks(rgb, [(x, y, YELLOW, str(i + 1)) for i, (x, y) in enumerate(px)])
    which = "closest to" if closest else "farthest from"
    q = ("Four points are marked in Image 1, labelled 1 to 4. " + FRAME_TEXT + f" Which marked point is {which} "
         "the camera, measured as depth along the viewing direction (the Z coordinate in the camera frame)?")
    return Draft(question=q, format=fmt, answer=option_letters(4)[k], options=[f"Point {i + 1}" for i in range(4)],
                 option_values=z, views=[(T, cam, depth)], images=[(img, 0, "view")], points=points,
                 meta={**(meta or {}), "asks": "closest" if closest else "farthest"})


def relative_pose_draft(rng, fmt: str, intro: str, rel: np.ndarray, wrong: list, views: list, images: list,
                        meta: dict) -> Draft:
    """The relative-pose question on two views: ``rel`` the true pose of camera 2 in camera 1's frame (4, 4; metres,
    camera OpenCV axes), ``wrong`` poses far from it. ``multiple_choice``: the truth among the wrong ones in a random
    order; ``judgment``: the truth or the first wrong pose shown, yes or no (one draw of ``rng`` each)."""
    question = " What is the relative pose of camera 2 with respect to camera 1?"
    if fmt == "multiple_choice":
        opts, vals, letter = shuffle_options(rng, [pose_text(P) for P in [rel] + wrong],
                                             [P.tolist() for P in [rel] + wrong], 0)
        return Draft(question=intro + question, format=fmt, answer=letter, options=opts, option_values=vals,
                     views=views, images=images, meta=meta)
    truth = bool(rng.random() < 0.5)
    shown = rel if truth else wrong[0]
    return Draft(question=intro + " Is the following the relative pose of camera 2 with respect to camera 1? "
                 + pose_text(shown), format=fmt, answer="A" if truth else "B", options=["Yes", "No"],
                 option_values=[True, False], views=views, images=images,
                 meta={**meta, "shown_pose": shown.tolist(), "shown_is_true": truth})


def spread_values(rng, truth: float, factors, lo: float, hi: float, fmt, n: int = 3, min_ratio: float = 1.12):
    """``n`` distractor values truth × a factor, within [lo, hi], pairwise (and from the truth) at least
    ``min_ratio`` apart and written differently by ``fmt``; None if not found."""
    cand = [truth * f for f in rng.permutation(np.asarray(factors, dtype=np.float64))]
    got: list[float] = []
    for v in cand:
        if not lo <= v <= hi:
            continue
        if all(max(v / w, w / v) >= min_ratio and fmt(v) != fmt(w) for w in got + [truth]):
            got.append(float(v))
        if len(got) == n:
            return got
    return None


@dataclass
class Draft:
    """A generated question before its files are written: views are (pose, camera, depth map or None); images are
    (rgb, view index, role)."""

    question: str
    format: str
    answer: object
    views: list
    images: list
    options: list | None = None
    option_values: list | None = None
    unit: str | None = None
    points: list = field(default_factory=list)
    sequence: dict | None = None
    meta: dict = field(default_factory=dict)


def marked_point(T, cam, depth, label: str, view: int, x: int, y: int, obj: str | None = None) -> dict:
    z = float(depth[y, x])
    p = {"label": label, "view": view, "pixel": [int(x), int(y)],
         "world": unproject_pixels(T, cam, x, y, z).tolist(), "depth": z}
    if obj is not None:
        p["object"] = obj
    return p


def write_png(path: Path, rgb: np.ndarray) -> None:
    from ..agents.images import png_bytes

    path.write_bytes(png_bytes(rgb))


def question_dict(draft: Draft, qid: str, typ: str, scene, seed: int, image_dir: Path) -> dict:
    """The question record of a draft (``scene``: anything with ``source``, the record's source, and ``spec``, its
    scene for reference); its images (PNG) and depth maps (.npy, float32 metres) written to ``image_dir`` as
    ``<id>_<k>.png`` and ``<id>_view<k>_depth.npy``."""
    image_dir.mkdir(parents=True, exist_ok=True)
    views = []
    for k, (T, cam, depth) in enumerate(draft.views):
        v = {"pose": np.asarray(T, dtype=np.float64).tolist(), "width": int(cam.width), "height": int(cam.height),
             "intrinsics": camera_intrinsics(cam), "depth": None}
        if depth is not None:
            p = image_dir / f"{qid}_view{k}_depth.npy"
            np.save(p, np.ascontiguousarray(depth, dtype=np.float32), allow_pickle=False)
            v["depth"] = str(p)
        views.append(v)
    images = []
    for k, (rgb, view, role) in enumerate(draft.images):
        p = image_dir / f"{qid}_{k + 1}.png"
        write_png(p, rgb)
        images.append({"path": str(p), "view": int(view), "role": role})
    rec = {"schema_version": SCHEMA_VERSION, "id": qid, "type": typ, "format": draft.format,
           "source": scene.source, "scene": scene.spec, "seed": int(seed), "question": draft.question}
    if draft.options is not None:
        rec["options"] = list(draft.options)
    rec["answer"] = draft.answer if isinstance(draft.answer, str) else float(draft.answer)
    if draft.unit is not None:
        rec["unit"] = draft.unit
    if draft.option_values is not None:
        rec["option_values"] = [plain_json(v) for v in draft.option_values]
    rec["images"] = images
    rec["views"] = views
    if draft.points:
        rec["points"] = [plain_json(p) for p in draft.points]
    if draft.sequence is not None:
        rec["sequence"] = draft.sequence
    rec["meta"] = plain_json(draft.meta)
    return rec


def plain_json(x):
    if isinstance(x, dict):
        return {str(k): plain_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain_json(v) for v in x]
    if isinstance(x, np.ndarray):
        return plain_json(x.tolist())
    if isinstance(x, np.generic):
        return x.item()
    return x
