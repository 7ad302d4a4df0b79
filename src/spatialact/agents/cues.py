"""Cue prompting: explicit low-level cues added to an agent's prompt, after SpatialTree's explicit-prompting study
(appendix D: correspondence, distance and size context raised goal-direction accuracy on navigation).

``--agent-arg cues=matches,depth,size`` (any subset, any order) adds, after the views and before the rules:

* ``matches``: an image of the start (current) and goal views side by side with the ORB correspondences between
  them drawn as lines (RANSAC-consistent ones, at most 40), and a text with their number and median displacement
  in pixels — made from the two images alone, so every environment supplies it;
* ``depth``: the current view's depth as a colour image (near red, far blue) and a text with the near, far and
  median depth in metres and the depth at a 3×3 grid of pixels — needs the environment's depth of the current
  view;
* ``size``: scale context from the depth and the camera intrinsics: how many metres the view spans at its median
  depth, how many pixels one translation unit moves a point at that depth, and how many pixels one rotation unit
  shifts the image — needs depth and intrinsics.

Depth and intrinsics come with views the simulator renders; a one-shot trajectory task that shows its recorded
frames, or ``--env none``, has neither, and the run is refused before it starts (:func:`cue_problem`, asked by the
runner through the agent's ``check_task``). The cues are part of the prompt version (:func:`prompt_version`) and so
of every cache key and result's provenance. Pixels are (u, v) = (column, row), pixel centres at integer
coordinates (OpenCV).
"""

from __future__ import annotations

import math

import numpy as np

from .base import AgentConfigError
from .images import PromptImage

__all__ = ["CUES", "CUE_NEEDS", "parse_cues", "cue_problem", "cue_content"]

CUES = ("matches", "depth", "size")
# What the environment must supply (beyond the two views) for each cue.
CUE_NEEDS = {"matches": (), "depth": ("depth",), "size": ("depth", "intrinsics")}
_MAX_LINES = 40


def parse_cues(value) -> tuple[str, ...]:
    """``"matches,depth"`` / ``["depth", "matches"]`` / None → the cues in :data:`CUES` order, each once.
    An unknown cue raises :class:`AgentConfigError` naming ``cues``."""
    if value is None or value == "" or value == () or value == []:
        return ()
    if isinstance(value, str):
        items = [v.strip().lower() for v in value.split(",")]
    elif isinstance(value, (list, tuple)):
        items = [str(v).strip().lower() for v in value]
    else:
        raise AgentConfigError(f"cues must be a comma-separated list such as matches,depth,size, got {value!r:.60}")
    bad = [v for v in items if v not in CUES]
    if bad:
        raise AgentConfigError(f"cues: unknown cue {bad[0][:40]!r} (expected any of {', '.join(CUES)}, e.g. "
                               f"cues=matches,depth)")
    return tuple(c for c in CUES if c in items)


def cue_problem(task, cues, supplies) -> str | None:
    """Why the environment cannot supply ``cues`` for ``task`` (one line naming the task and the cue), or None.

    ``supplies``: what the episode's observation will hold beyond the views (``depth``, ``intrinsics``, …; see
    :func:`spatialact.evaluation.episode.observation_supplies`)."""
    have = set(supplies)
    for cue in parse_cues(cues):
        missing = [n for n in CUE_NEEDS[cue] if n not in have]
        if missing:
            return (f"task {task.id!r}: --agent-arg cues={cue} needs the {' and '.join(missing)} of the current view, "
                    f"which this environment does not supply (a one-shot task showing recorded frames, or --env "
                    f"none); use cues=matches, or run with a simulator that renders the views")
    return None


def _matches_cue(cur, goal, cur_label, goal_label, seed) -> tuple[np.ndarray | None, str]:
    import cv2

    from .tools import match_views

    m = match_views(cur, goal, seed=seed)
    inl = m["inliers"]
    pa, pb = m["pa"][inl], m["pb"][inl]
    if len(pa) < 4:
        return None, (f"Cue (correspondences): no reliable feature correspondences were found between {cur_label} and "
                      f"{goal_label} ({len(m['pa'])} tentative matches).")
    h1, w1 = cur.shape[:2]
    h2, w2 = goal.shape[:2]
    canvas = np.zeros((max(h1, h2), w1 + w2, 3), np.uint8)
    canvas[:h1, :w1] = cur[..., :3]
    canvas[:h2, w1:] = goal[..., :3]
    n = min(_MAX_LINES, len(pa))
    for k in range(n):
        hue = int(180 * k / max(1, n))
        col = cv2.cvtColor(np.uint8([[[hue, 255, 255]]]), cv2.COLOR_HSV2RGB)[0, 0].tolist()
        p = (int(round(pa[k, 0])), int(round(pa[k, 1])))
        q = (int(round(pb[k, 0])) + w1, int(round(pb[k, 1])))
        cv2.line(canvas, p, q, col, 1, cv2.LINE_AA)
        cv2.circle(canvas, p, 2, col, -1)
        cv2.circle(canvas, q, 2, col, -1)
    d = np.median(pb - pa, axis=0)
    lr = "right" if d[0] > 0.05 else ("left" if d[0] < -0.05 else "sideways")
    ud = "down" if d[1] > 0.05 else ("up" if d[1] < -0.05 else "vertically")
    sample = "; ".join(f"({a[0]:.0f}, {a[1]:.0f}) -> ({b[0]:.0f}, {b[1]:.0f})" for a, b in zip(pa[:5], pb[:5]))
    text = (f"Cue (correspondences): {len(pa)} feature correspondences between {cur_label} (left half of the next "
            f"image) and {goal_label} (right half), drawn as coloured lines ({n} shown). From {cur_label} to "
            f"{goal_label} the matched points move by a median of {abs(d[0]):.1f} px {lr} and {abs(d[1]):.1f} px "
            f"{ud} (image {w1}x{h1} px). Examples, (u, v) in {cur_label} -> (u, v) in {goal_label}: {sample}.")
    return canvas, text


def _depth_stats(depth) -> tuple[np.ndarray, np.ndarray]:
    d = np.asarray(depth, dtype=np.float64)
    fin = d[np.isfinite(d) & (d > 0)]
    if fin.size == 0:
        raise ValueError("the depth image has no finite positive value")
    return d, fin


def _depth_cue(depth, cur_label) -> tuple[np.ndarray, str]:
    import cv2

    d, fin = _depth_stats(depth)
    near, far = np.percentile(fin, [2, 98])
    far = max(far, near + 1e-6)
    scaled = np.clip((far - np.nan_to_num(d, nan=far, posinf=far)) / (far - near), 0, 1)
    img = cv2.applyColorMap(np.uint8(np.round(scaled * 255)), cv2.COLORMAP_JET)  # BGR: near red, far blue
    img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
    img[~(np.isfinite(d) & (d > 0))] = 0
    h, w = d.shape[:2]
    grid = []
    for v in (h // 6, h // 2, h - 1 - h // 6):
        for u in (w // 6, w // 2, w - 1 - w // 6):
            z = d[v, u]
            grid.append(f"({u}, {v}): {z:.2f} m" if math.isfinite(z) else f"({u}, {v}): none")
    text = (f"Cue (depth): the depth of {cur_label} in metres along the viewing direction, as the next image (red "
            f"near, about {near:.2f} m; blue far, about {far:.2f} m). Median depth {np.median(fin):.2f} m. Depth at "
            f"pixels (u, v): " + "; ".join(grid) + ".")
    return img, text


def _size_cue(depth, K, sizes, cur_label, kind: str = "nav") -> str:
    _, fin = _depth_stats(depth)
    K = np.asarray(K, dtype=np.float64)
    z = float(np.median(fin))
    fx, fy = K[0, 0], K[1, 1]
    d = np.asarray(depth)
    h, w = d.shape[:2]
    t, r = sizes.translation, sizes.rotation
    span_w, span_h = w * z / fx, h * z / fy
    truck_px = t * fx / z
    pan_px = fx * math.tan(r)
    tilt_px = fy * math.tan(r)
    dolly_pct = (z / max(z - t, 1e-6) - 1.0) * 100.0
    fov = math.degrees(2 * math.atan(w / (2 * fx)))
    head = (f"Cue (size and scale): {cur_label} is {w}x{h} px with a horizontal field of view of {fov:.1f} degrees. "
            f"At its median depth of {z:.2f} m the view spans about {span_w:.2f} m across and {span_h:.2f} m top to "
            f"bottom, so an object 1 m wide there is about {fx / z:.0f} px wide. ")
    if kind != "nav":  # a static camera watches the gripper or hand: the units move it, not the view
        who = "gripper" if kind == "manip" else "hand"
        return head + (f"One translation unit ({t:.6g} m) moves the {who}, at about that depth and seen face-on, by "
                       f"about {truck_px:.1f} px in this image.")
    return head + (f"One translation unit ({t:.6g} m) of Truck or Pedestal moves points at that depth by about "
                   f"{truck_px:.1f} px; one unit of Dolly In makes them about {dolly_pct:.1f}% larger; one rotation "
                   f"unit ({math.degrees(r):.3g} degrees) of Pan shifts the image by about {pan_px:.1f} px sideways, "
                   f"of Tilt by about {tilt_px:.1f} px up or down.")


def cue_content(task, cur, goal, observation: dict, cues, labels: dict, first_label: int, seed: int = 0):
    """The cue images and the prompt parts for ``cues``: ``(images, parts)`` where ``images`` are the
    :class:`~spatialact.agents.images.PromptImage` s added (labelled ``Image <first_label>``, …) and ``parts`` the
    texts and images in prompt order. ``labels`` names the views in the prompt (``{"current": "Image 1",
    "goal": "Image 2"}``). A cue whose input is missing raises ValueError naming it (the runner refuses such runs
    before they start)."""
    cues = parse_cues(cues)
    images, parts = [], []
    cur_label, goal_label = labels.get("current", "the current view"), labels.get("goal", "the goal view")
    n = first_label

    def add(rgb, role, text):
        nonlocal n
        if rgb is None:
            parts.append(text)
            return
        im = PromptImage(f"Image {n}", role, np.ascontiguousarray(rgb))
        n += 1
        images.append(im)
        parts.append(text + f"\n{im.label} ({role} cue):")
        parts.append(im)

    if "matches" in cues:
        rgb, text = _matches_cue(np.asarray(cur), np.asarray(goal), cur_label, goal_label, seed)
        add(rgb, "matches", text)
    depth = observation.get("depth")
    if ("depth" in cues or "size" in cues) and depth is None:
        raise ValueError("cue prompting: the depth and size cues need the current view's depth, and the observation "
                         "has none")
    if "depth" in cues:
        rgb, text = _depth_cue(depth, cur_label)
        add(rgb, "depth", text)
    if "size" in cues:
        K = observation.get("intrinsics")
        if K is None:
            raise ValueError("cue prompting: the size cue needs the camera intrinsics, and the observation has none")
        parts.append(_size_cue(depth, K, task.sizes, cur_label, task.kind))
    return images, parts
