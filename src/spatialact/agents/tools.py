"""Tools for the tool-using agents (``react``, ``plan-execute``), in the manner of SpatialScore's SpatialAgent.

A tool is a function the model calls by name with JSON arguments (OpenAI function calling); its result is a JSON
object sent back to the model. Two sets:

* ``default``: tools that work from what a deployed model would have — the images it is shown, the current
  view's depth where the environment supplies it, the camera intrinsics — and from the action space itself:

  - ``match_features``: ORB correspondences between two views (pixel pairs, median displacement);
  - ``relative_pose``: the camera motion between two views (essential matrix; metric scale from the current
    view's depth when there is one, else a unit direction) in metres, degrees and the task's units;
  - ``depth_at``: the current view's depth (metres along the optical axis) at pixels;
  - ``point_3d``: the 3D point under a pixel of the current view, in its camera frame (metres);
  - ``simulate_answer``: the pose change a candidate answer would produce (per step and net), as the scorer
    reads it — parse errors and repairs included.

* ``privileged`` (opt-in, ``tools=privileged``: the default tools plus these): they read the simulator's truth,
  which no deployed model has, and every record and report of a run that offers them says so:

  - ``true_motion_to_goal``: the exact motion from the current pose to the goal pose;
  - ``goal_error``: how far from the goal a candidate answer would end (position, rotation, success);
  - ``object_at``: the simulator's segmentation (which body) under pixels of the current or goal view.

A tool is offered only where what it needs is there (:func:`offered_tools`): the depth tools where the
observation has ``depth`` (and ``intrinsics`` for ``point_3d``), the pose tools where it has ``pose``,
``object_at`` where it has ``simulator`` (rendered views, not a trajectory's recorded frames).

Conventions: views are ``"current"`` (the start view in one-shot mode; the view the agent is at in closed-loop)
and ``"goal"``; pixels ``[u, v]`` are (column, row) with pixel centres at integer coordinates and (0, 0) the
top-left pixel (OpenCV); camera frames are OpenCV's (+X right, +Y down, +Z forward); motions are body-frame
(in the frame of the pose they start from), translations in metres, rotations as tilt (about +X), pan (about
+Y) and roll (about +Z), ``R = R_y(pan) R_x(tilt) R_z(roll)``; "units" are the task's unit steps (signed:
+truck right, +pedestal down, +dolly forward, +tilt up, +pan right, +roll counter-clockwise).

:func:`run_tool_call` executes one call and never raises: a malformed call (arguments that are not a JSON object,
an unknown tool, a bad argument) and a tool that fails give a record with ``error`` and a result
``{"error": ...}`` that is sent back to the model.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .. import geometry

__all__ = ["TOOL_SETS", "Tool", "ToolContext", "ToolError", "toolbox", "offered_tools", "run_tool_call",
           "observation_supplies", "match_views", "tool_names", "parse_tool_set", "MAX_ARGUMENT_CHARS"]

TOOL_SETS = ("default", "privileged")
MAX_POINTS = 16  # pixels per depth / point / segmentation query
MAX_PAIRS = 20  # correspondences listed by match_features
MAX_STEPS_LISTED = 20  # steps listed by simulate_answer
MAX_ARGUMENT_CHARS = 20_000  # longer arguments are refused without being parsed
VIEWS = ("current", "goal")
_VIEW_ALIASES = {"current": "current", "start": "current", "goal": "goal", "target": "goal"}


class ToolError(ValueError):
    """A tool refused its arguments; the message goes back to the model."""


@dataclass(frozen=True)
class Tool:
    """One tool: its name, description and JSON-schema ``parameters`` (what the model sees), the function that
    runs it (``fn(context, arguments) -> dict``), what it needs from the observation (``needs``: ``depth``,
    ``intrinsics``, ``pose``, ``simulator``) and whether it reads the simulator's truth (``privileged``)."""

    name: str
    description: str
    parameters: dict
    fn: Callable[["ToolContext", dict], dict] = field(repr=False)
    needs: tuple = ()
    privileged: bool = False

    def spec(self) -> dict:
        """The chat-completions ``tools`` entry."""
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}


class ToolContext:
    """What the tools of one turn work on: the task (its step sizes, cap; the goal pose for privileged tools) and
    the observation (views, depth, intrinsics; pose and simulator for privileged tools). ``seed`` seeds OpenCV's
    RNG (RANSAC), so a tool gives the same result for the same call."""

    def __init__(self, task, observation: dict, seed: int = 0):
        self.task = task
        self.observation = observation
        cur = observation.get("rgb")
        if cur is None:
            cur = observation.get("start_rgb")
        self.views = {"current": cur, "goal": observation.get("goal_rgb")}
        self.depth = observation.get("depth")
        self.K = observation.get("intrinsics")
        self.pose = observation.get("pose")
        self.simulator = observation.get("simulator")
        self.seed = int(seed)

    def view(self, name) -> tuple[str, np.ndarray]:
        key = _VIEW_ALIASES.get(str(name).strip().lower()) if isinstance(name, str) else None
        if key is None:
            raise ToolError(f"view must be one of {', '.join(VIEWS)}, got {_short(name)}")
        img = self.views.get(key)
        if img is None:
            raise ToolError(f"the {key} view is not available")
        return key, np.asarray(img)

    def intrinsics(self) -> tuple[np.ndarray, bool]:
        """(K, assumed): the observation's pinhole K (pixels), or a 60° vertical field of view when it has none."""
        if self.K is not None:
            return np.asarray(self.K, dtype=np.float64), False
        from .geometric import default_intrinsics

        h, w = np.asarray(self.views["current"]).shape[:2]
        return default_intrinsics(w, h), True


def observation_supplies(observation: dict) -> frozenset:
    """What an observation offers the tools beyond its views: ``depth``, ``intrinsics``, ``pose``, ``simulator``."""
    return frozenset(k for k in ("depth", "intrinsics", "pose", "simulator") if observation.get(k) is not None)


# ----- helpers ------------------------------------------------------------------------------------------------
def _short(v: Any, n: int = 60) -> str:
    s = repr(v)
    return s if len(s) <= n else s[: n - 3] + "..."


def _r(x: float, nd: int = 4) -> float:
    return float(round(float(x), nd))


def _int_arg(args: dict, key: str, default: int, lo: int, hi: int) -> int:
    v = args.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or int(v) != v:
        raise ToolError(f"{key} must be a whole number from {lo} to {hi}, got {_short(v)}")
    if not lo <= int(v) <= hi:
        raise ToolError(f"{key} must be from {lo} to {hi}, got {int(v)}")
    return int(v)


def _points(args: dict, shape: tuple[int, int]) -> list[tuple[int, int]]:
    """The ``points`` argument ([[u, v], ...], or ``u`` and ``v``) as pixel indices inside an (H, W) image."""
    pts = args.get("points")
    if pts is None and "u" in args and "v" in args:
        pts = [[args["u"], args["v"]]]
    if not isinstance(pts, list) or not pts:
        raise ToolError("points must be a non-empty list of [u, v] pixel coordinates")
    if len(pts) > MAX_POINTS:
        raise ToolError(f"at most {MAX_POINTS} points per call, got {len(pts)}")
    h, w = shape
    out = []
    for p in pts:
        if (not isinstance(p, (list, tuple)) or len(p) != 2
                or not all(isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c) for c in p)):
            raise ToolError(f"each point must be [u, v] (two numbers), got {_short(p)}")
        u, v = int(round(p[0])), int(round(p[1]))
        if not (0 <= u < w and 0 <= v < h):
            raise ToolError(f"point [{p[0]}, {p[1]}] is outside the {w}x{h} image (u in 0..{w - 1}, v in 0..{h - 1})")
        out.append((u, v))
    return out


def _rotation(tilt: float, pan: float, roll: float) -> dict:
    return {"tilt_deg": _r(math.degrees(tilt), 3), "pan_deg": _r(math.degrees(pan), 3),
            "roll_deg": _r(math.degrees(roll), 3)}


def _in_units(motion: np.ndarray, sizes, translation: bool = True) -> dict:
    ut, ur = sizes.translation, sizes.rotation
    out = {}
    if translation:
        out.update(truck=_r(motion[0] / ut, 2), pedestal=_r(motion[1] / ut, 2), dolly=_r(motion[2] / ut, 2))
    out.update(tilt=_r(motion[3] / ur, 2), pan=_r(motion[4] / ur, 2), roll=_r(motion[5] / ur, 2))
    return out


def _motion_summary(delta: np.ndarray, sizes) -> dict:
    m = geometry.delta_to_motion(delta)
    return {"translation_m": [_r(x) for x in m[:3]], "distance_m": _r(np.linalg.norm(m[:3])),
            "rotation": _rotation(m[3], m[4], m[5]),
            "rotation_angle_deg": _r(math.degrees(float(geometry.geodesic_angle(delta[:3, :3]))), 3),
            "in_units": _in_units(m, sizes)}


def _gray(img: np.ndarray) -> np.ndarray:
    import cv2

    a = np.asarray(img)
    return a.astype(np.uint8) if a.ndim == 2 else cv2.cvtColor(a[..., :3].astype(np.uint8), cv2.COLOR_RGB2GRAY)


def match_views(a: np.ndarray, b: np.ndarray, n_features: int = 2000, ratio: float = 0.8, seed: int = 0) -> dict:
    """ORB correspondences between two RGB views (H, W, 3) uint8: ``pa``, ``pb`` (N, 2) float64 pixel
    coordinates (u, v), sorted by descriptor distance; ``inliers`` (N,) bool — consistent with one fundamental
    matrix (RANSAC at 1 px, OpenCV's RNG seeded with ``seed``; all True when fewer than 8 matches) — and
    ``n_keypoints``. Deterministic for the same images and seed."""
    import cv2

    orb = cv2.ORB_create(nfeatures=int(n_features), fastThreshold=5, edgeThreshold=15, patchSize=15)
    k1, d1 = orb.detectAndCompute(_gray(a), None)
    k2, d2 = orb.detectAndCompute(_gray(b), None)
    out = {"pa": np.zeros((0, 2)), "pb": np.zeros((0, 2)), "inliers": np.zeros(0, bool),
           "n_keypoints": [len(k1 or ()), len(k2 or ())]}
    if d1 is None or d2 is None or len(k1) < 2 or len(k2) < 2:
        return out
    pairs = cv2.BFMatcher(cv2.NORM_HAMMING).knnMatch(d1, d2, k=2)
    good = sorted((p[0] for p in pairs if len(p) == 2 and p[0].distance < ratio * p[1].distance),
                  key=lambda m: (m.distance, m.queryIdx))
    if not good:
        return out
    pa = np.float64([k1[m.queryIdx].pt for m in good])
    pb = np.float64([k2[m.trainIdx].pt for m in good])
    inl = np.ones(len(good), bool)
    if len(good) >= 8:
        cv2.setRNGSeed(int(seed))
        F, mask = cv2.findFundamentalMat(pa, pb, cv2.FM_RANSAC, 1.0, 0.999)
        if F is not None and mask is not None and mask.size == len(good):
            inl = mask.reshape(-1) > 0
    out.update(pa=pa, pb=pb, inliers=inl)
    return out


def _parse_answer(ctx: ToolContext, args: dict):
    from ..action_space import parse_response

    ans = args.get("answer")
    if isinstance(ans, (dict, list)):
        ans = json.dumps(ans)
    if not isinstance(ans, str) or not ans.strip():
        raise ToolError("answer must be a candidate answer in the required JSON format (a string or an object)")
    task = ctx.task
    return parse_response(ans, sizes=task.sizes, cap=task.gt.cap)


# ----- default tools -----------------------------------------------------------------------------------------
def _match_features(ctx: ToolContext, args: dict) -> dict:
    na, a = ctx.view(args.get("view_a", "current"))
    nb, b = ctx.view(args.get("view_b", "goal"))
    k = _int_arg(args, "max_pairs", 10, 1, MAX_PAIRS)
    m = match_views(a, b, seed=ctx.seed)
    inl = m["inliers"]
    pa, pb = m["pa"][inl], m["pb"][inl]
    res = {"view_a": na, "view_b": nb, "image_size": [int(a.shape[1]), int(a.shape[0])],
           "n_matches": int(len(m["pa"])), "n_inliers": int(inl.sum())}
    if len(pa):
        d = np.median(pb - pa, axis=0)
        res["median_displacement_px"] = [_r(d[0], 2), _r(d[1], 2)]
        res["pairs"] = [[_r(x, 1) for x in (*p, *q)] for p, q in zip(pa[:k], pb[:k])]
        res["pairs_layout"] = "[u_a, v_a, u_b, v_b]"
    else:
        res["median_displacement_px"] = None
        res["pairs"] = []
    return res


def _relative_pose(ctx: ToolContext, args: dict) -> dict:
    from .geometric import estimate_motion

    na, a = ctx.view(args.get("view_a", "current"))
    nb, b = ctx.view(args.get("view_b", "goal"))
    K, assumed = ctx.intrinsics()
    depth = ctx.depth if na == "current" else None
    delta, info = estimate_motion(a, b, K, depth, seed=ctx.seed)
    res = {"view_a": na, "view_b": nb, "frame": f"the {na} camera's frame (+X right, +Y down, +Z forward)"}
    if assumed:
        res["intrinsics"] = "assumed: 60 degree vertical field of view"
    for k in ("n_matches", "n_inliers", "median_disparity_px"):
        if k in info:
            res[k] = _r(info[k], 2) if isinstance(info[k], float) else info[k]
    if delta is None:
        res.update(ok=False, reason=info.get("reason", "no estimate"))
        return res
    m = geometry.delta_to_motion(delta)
    metric = not info.get("unit_translation", True) or "reason" in info
    res["ok"] = True
    if "reason" in info:
        res["note"] = info["reason"]
    res["rotation"] = _rotation(m[3], m[4], m[5])
    n = float(np.linalg.norm(m[:3]))
    res["translation_direction"] = [_r(x) for x in (m[:3] / n if n > 0 else m[:3])]
    if metric:
        res["translation_m"] = [_r(x) for x in m[:3]]
        res["scale"] = "metric, from the depth of the current view"
    else:
        res["translation_m"] = None
        res["scale"] = "unknown: only the direction of the translation is known"
    res["in_units"] = _in_units(m, ctx.task.sizes, translation=metric)
    return res


def _depth_at(ctx: ToolContext, args: dict) -> dict:
    d = np.asarray(ctx.depth, dtype=np.float64)
    pts = _points(args, d.shape[:2])
    finite = d[np.isfinite(d)]
    return {"view": "current", "units": "metres along the optical axis (+Z)",
            "depths": [{"u": u, "v": v, "depth_m": _r(d[v, u]) if math.isfinite(d[v, u]) else None} for u, v in pts],
            "median_depth_m": _r(np.median(finite)) if finite.size else None,
            "min_depth_m": _r(finite.min()) if finite.size else None,
            "max_depth_m": _r(finite.max()) if finite.size else None}


def _point_3d(ctx: ToolContext, args: dict) -> dict:
    d = np.asarray(ctx.depth, dtype=np.float64)
    K, _ = ctx.intrinsics()
    pts = _points(args, d.shape[:2])
    out = []
    for u, v in pts:
        z = d[v, u]
        if not math.isfinite(z):
            out.append({"u": u, "v": v, "xyz_m": None})
            continue
        x = (u - K[0, 2]) * z / K[0, 0]
        y = (v - K[1, 2]) * z / K[1, 1]
        out.append({"u": u, "v": v, "xyz_m": [_r(x), _r(y), _r(z)]})
    return {"view": "current", "frame": "the current camera's frame: +X right, +Y down, +Z forward (metres)",
            "points": out}


def _simulate_answer(ctx: ToolContext, args: dict) -> dict:
    parse = _parse_answer(ctx, args)
    seq = parse.sequence
    res = {"ok": bool(parse.ok), "error": parse.error, "repairs": list(parse.repairs)[:20], "n_steps": len(seq),
           "frame": "the frame at the start of the motion: +X right, +Y down, +Z forward"}
    if not len(seq):
        return res
    deltas = seq.to_deltas()
    steps = []
    for k, (s, D) in enumerate(zip(seq.steps, deltas)):
        if k >= MAX_STEPS_LISTED:
            break
        m = geometry.delta_to_motion(D)
        steps.append({"step": k + 1, "translation_m": [_r(x) for x in m[:3]], "rotation": _rotation(m[3], m[4], m[5]),
                      "gripper": s.gripper})
    res["steps"] = steps
    res["net"] = _motion_summary(seq.net_delta(), seq.sizes)
    return res


# ----- privileged tools (simulator truth) ----------------------------------------------------------------------
def _true_motion(ctx: ToolContext, args: dict) -> dict:
    delta = geometry.relative_pose(np.asarray(ctx.pose, dtype=np.float64), ctx.task.goal_pose)
    return {"exact": True, "frame": "the current pose's frame: +X right, +Y down, +Z forward",
            **_motion_summary(delta, ctx.task.sizes)}


def _goal_error(ctx: ToolContext, args: dict) -> dict:
    parse = _parse_answer(ctx, args)
    T0 = np.asarray(ctx.pose, dtype=np.float64)
    final = parse.sequence.to_poses(T0)[-1] if len(parse.sequence) else T0
    goal = ctx.task.goal_pose
    pe = float(np.linalg.norm(final[:3, 3] - goal[:3, 3]))
    re = float(geometry.rotation_error(final, goal))
    succ = ctx.task.success or {}
    res = {"exact": True, "ok": bool(parse.ok), "error": parse.error, "position_error_m": _r(pe),
           "rotation_error_deg": _r(math.degrees(re), 3)}
    if "position" in succ and "rotation" in succ:
        res["within_success_thresholds"] = bool(pe <= succ["position"] and re <= succ["rotation"])
    return res


def _object_at(ctx: ToolContext, args: dict) -> dict:
    name, img = ctx.view(args.get("view", "current"))
    pts = _points(args, np.asarray(img).shape[:2])
    sim = ctx.simulator
    T = sim.camera_pose if name == "current" else sim.goal_camera_pose
    seg = np.asarray(sim.render_segmentation(T))
    names = {}
    scene = getattr(sim, "scene", None)
    for src in (getattr(scene, "bodies", None) or {}, getattr(scene, "objects", None) or {}):
        for n, bid in src.items():
            if isinstance(bid, (int, np.integer)):
                names[int(bid)] = str(n)
    out = []
    for u, v in pts:
        bid = int(seg[v, u]) if seg.shape[:2] == img.shape[:2] else None
        label = None if bid is None else ("background" if bid < 0 else names.get(bid & 0xFFFFFF, f"body {bid}"))
        out.append({"u": u, "v": v, "body": bid, "label": label})
    return {"exact": True, "view": name, "points": out}


_VIEW_PARAM = {"type": "string", "enum": list(VIEWS)}
_POINTS_PARAM = {"type": "array", "maxItems": MAX_POINTS,
                 "items": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
                 "description": "pixels [u, v]: u = column (right), v = row (down), (0, 0) the top-left pixel"}
_ANSWER_PARAM = {"type": "string", "description": "a candidate answer in the required JSON output format"}

_DEFAULT = (
    Tool("match_features",
         "Find corresponding points (ORB features, ratio test, RANSAC-consistent) between two views. Returns the "
         "number of matches, the median displacement in pixels from view_a to view_b and up to max_pairs "
         "pairs [u_a, v_a, u_b, v_b].",
         {"type": "object", "properties": {"view_a": _VIEW_PARAM, "view_b": _VIEW_PARAM,
                                           "max_pairs": {"type": "integer", "minimum": 1, "maximum": MAX_PAIRS}},
          "additionalProperties": False},
         _match_features),
    Tool("relative_pose",
         "Estimate the camera motion from view_a to view_b (two-view geometry: essential matrix and pose "
         "recovery): rotation (tilt, pan, roll in degrees), translation direction, and the translation in metres "
         "when the depth of view_a is known (view_a = current), also in the task's unit steps.",
         {"type": "object", "properties": {"view_a": _VIEW_PARAM, "view_b": _VIEW_PARAM},
          "additionalProperties": False},
         _relative_pose),
    Tool("depth_at",
         "Depth of the current view in metres (along the optical axis) at up to 16 pixels, and the view's "
         "median, minimum and maximum depth.",
         {"type": "object", "properties": {"points": _POINTS_PARAM}, "required": ["points"],
          "additionalProperties": False},
         _depth_at, needs=("depth",)),
    Tool("point_3d",
         "The 3D point under pixels of the current view, in the current camera's frame (+X right, +Y down, "
         "+Z forward; metres), from its depth and intrinsics.",
         {"type": "object", "properties": {"points": _POINTS_PARAM}, "required": ["points"],
          "additionalProperties": False},
         _point_3d, needs=("depth", "intrinsics")),
    Tool("simulate_answer",
         "Compose a candidate answer (the JSON you would output) into the motion it produces: each step's "
         "translation (metres) and rotation (degrees), and the net motion from the start, in metres, degrees and "
         "unit steps; also how the answer parses (errors, repairs).",
         {"type": "object", "properties": {"answer": _ANSWER_PARAM}, "required": ["answer"],
          "additionalProperties": False},
         _simulate_answer),
)

_PRIVILEGED = (
    Tool("true_motion_to_goal",
         "PRIVILEGED (simulator truth): the exact motion from the current pose to the goal pose, in metres, "
         "degrees and unit steps.",
         {"type": "object", "properties": {}, "additionalProperties": False},
         _true_motion, needs=("pose",), privileged=True),
    Tool("goal_error",
         "PRIVILEGED (simulator truth): how far from the goal a candidate answer would end: position error "
         "(metres), rotation error (degrees) and whether that is within the task's success thresholds.",
         {"type": "object", "properties": {"answer": _ANSWER_PARAM}, "required": ["answer"],
          "additionalProperties": False},
         _goal_error, needs=("pose",), privileged=True),
    Tool("object_at",
         "PRIVILEGED (simulator truth): which object (the simulator's segmentation) is under pixels of the "
         "current or the goal view.",
         {"type": "object", "properties": {"view": _VIEW_PARAM, "points": _POINTS_PARAM}, "required": ["points"],
          "additionalProperties": False},
         _object_at, needs=("simulator",), privileged=True),
)


def parse_tool_set(value) -> str:
    """``default`` or ``privileged`` (``None`` is ``default``); anything else raises ValueError naming ``tools``."""
    v = "default" if value is None else str(value).strip().lower()
    if v not in TOOL_SETS:
        raise ValueError(f"tools must be one of {', '.join(TOOL_SETS)}, got {_short(value)}")
    return v


def toolbox(tool_set: str = "default") -> tuple[Tool, ...]:
    """Every tool of a set: ``default``, or ``privileged`` (the default tools plus the simulator-truth ones)."""
    tool_set = parse_tool_set(tool_set)
    return _DEFAULT + (_PRIVILEGED if tool_set == "privileged" else ())


def tool_names(tool_set: str = "default") -> list[str]:
    return [t.name for t in toolbox(tool_set)]


def offered_tools(tool_set: str, supplies) -> tuple[Tool, ...]:
    """The tools of a set whose needs ``supplies`` (see :func:`observation_supplies`) meets."""
    have = set(supplies)
    return tuple(t for t in toolbox(tool_set) if all(n in have for n in t.needs))


def _jsonable(x: Any) -> Any:
    from .base import json_safe

    return json_safe(x)


def run_tool_call(tools: dict, ctx: ToolContext, name, arguments) -> dict:
    """Execute one tool call; never raises.

    ``tools``: name → :class:`Tool` (the tools offered); ``arguments``: the call's raw arguments (a JSON text, as
    function calling sends them, or an object). Returns ``{"name", "arguments", "result", "error", "malformed",
    "privileged"}``: ``result`` is the JSON object to send back (``{"error": ...}`` when the call failed);
    ``malformed`` is True when the call itself was at fault (unknown tool, arguments that are not a JSON object,
    a bad argument), False when it ran (or a tool failed on good arguments)."""
    raw = arguments
    rec = {"name": name if isinstance(name, str) else None, "arguments": raw, "result": None, "error": None,
           "malformed": False, "privileged": False}

    def fail(msg: str, malformed: bool = True) -> dict:
        rec.update(error=msg, malformed=malformed, result={"error": msg})
        return rec

    if isinstance(raw, str) and len(raw) > MAX_ARGUMENT_CHARS:
        rec["arguments"] = raw[:200] + "..."
        return fail(f"arguments longer than {MAX_ARGUMENT_CHARS} characters")
    tool = tools.get(name) if isinstance(name, str) else None
    if tool is None:
        return fail(f"unknown tool {_short(name, 40)}; available: {', '.join(sorted(tools))}")
    rec["privileged"] = tool.privileged
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        args = {}
    elif isinstance(raw, str):
        try:
            args = json.loads(raw)
        except ValueError as e:
            return fail(f"arguments are not valid JSON ({str(e)[:120]})")
    else:
        args = raw
    if not isinstance(args, dict):
        return fail(f"arguments must be a JSON object, got {type(args).__name__}")
    props = (tool.parameters or {}).get("properties", {})
    extra = sorted(k for k in args if k not in props and k not in ("u", "v"))
    if extra and (tool.parameters or {}).get("additionalProperties") is False:
        return fail(f"unknown argument(s) {', '.join(map(str, extra))[:80]} for {tool.name} "
                    f"(takes {', '.join(props) or 'no arguments'})")
    missing = [k for k in (tool.parameters or {}).get("required", ()) if k not in args
               and not (k == "points" and "u" in args and "v" in args)]
    if missing:
        return fail(f"{tool.name} needs argument(s) {', '.join(missing)}")
    try:
        rec["result"] = _jsonable(tool.fn(ctx, args))
    except ToolError as e:
        return fail(str(e))
    except Exception as e:  # a tool that fails on good arguments: the model hears why, the episode goes on
        return fail(f"{tool.name} failed: {e.__class__.__name__}: {str(e)[:200]}", malformed=False)
    return rec
