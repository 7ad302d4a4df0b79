"""The diagnostic task sets: the difficulty ladder (Spatial457's, for actions) and viewpoint pairs (3DSRBench's).

Both draw reach tasks in seeded procedural scenes through the worlds' public task-sampling methods
(:meth:`~spatialact.envs.free_camera.FreeCameraWorld.random_start`, ``view_ok``, ``pose_ok``, ``reachable_goal``,
``make_task``, ...). Poses are C2W (4, 4) float64, metres, world +Z up, OpenCV camera axes; angles in radians
unless a name says degrees. Navigation tasks are drawn with CameraNav's walls on: a draft whose ground-truth path
or straight start→goal segment the scene blocks for the camera sphere (:meth:`FreeCameraWorld.path_problem
<spatialact.envs.free_camera.FreeCameraWorld.path_problem>`; an uncommon start's prefix included) is dropped, counted
(``skipped=``) and another drawn.
"""

from __future__ import annotations

import numpy as np

from .. import geometry
from ..action_space import ActionSequence, StepSizes
from ..envs.collision import COLLIDES
from ..envs.registry import make_env
from ..envs.camera import look_at
from ..envs.views import clear_view, view_overlap
from ..tasks import Task
from ..tasks.tags import camera_attitude, motion_tags, viewpoint_tag
from ..vocab import LEVELS

__all__ = ["ladder_tasks", "viewpoint_pairs", "LEVEL_FACTORS", "LADDER_KINDS", "UNCOMMON_FACTORS"]

#: What each level adds to the one before it (Spatial457's ladder, for actions).
LEVEL_FACTORS = {
    "L1": "one translation axis",
    "L2": "several translation axes",
    "L3": "translation with rotation",
    "L4": "distractor objects and low view overlap",
    "L5": "an uncommon viewpoint",
}
LADDER_KINDS = ("nav", "manip")
#: How an uncommon view differs from a common one: navigation cameras take turns over the four, a manipulation
#: scene's observing camera over the first two.
UNCOMMON_FACTORS = {"nav": ("roll", "pitch", "low", "high"), "manip": ("roll", "pitch")}
# View overlap (min of both ways, view_overlap) of the controlled frame's start and goal views: at least HIGH on
# L1–L3, in [LOW_MIN, LOW_MAX) on L4–L5 (a gap between, so that "low" is clearly lower). The controlled frame's view
# is the camera's for navigation and the wrist camera's for manipulation (the observing camera does not move).
_OVERLAP_HIGH = 0.5
_OVERLAP_LOW = (0.1, 0.4)
_N_DISTRACTORS = {"nav": 4, "manip": 4}
_NAV_ROT_MAX = (4, 6, 3)  # tilt, pan, roll: largest counts of a ladder rotation (as the default tasks)
_MANIP_ROT_MAX = (4, 4, 5)
_ROT_WEIGHTS = (0.35, 1.2, 0.35)


def _split_cap(axis: int, n: int, cap: int) -> np.ndarray:
    """``n`` signed units on one axis as steps of at most ``cap`` each: (m, 6) signed counts."""
    m = max(1, -(-abs(n) // cap))
    rows = np.zeros((m, 6), dtype=np.int64)
    base, rem = divmod(abs(n), m)
    for k in range(m):
        rows[k, axis] = int(np.sign(n)) * (base + (k < rem))
    return rows


def _level_counts(rng: np.random.Generator, level: str, kind: str, cap: int) -> np.ndarray:
    """Signed counts (k, 6) (truck, pedestal, dolly, tilt, pan, roll) of a ladder level's ground truth."""
    sign = lambda: 1 if rng.random() < 0.5 else -1  # noqa: E731
    t_w = np.array([1.0, 0.6, 1.2]) if kind == "nav" else np.array([1.0, 1.0, 1.0])
    t_w = t_w / t_w.sum()
    if level == "L1":
        out = np.zeros((1, 6), dtype=np.int64)
        out[0, int(rng.choice(3, p=t_w))] = sign() * int(rng.integers(2, 9))
        return out
    if level == "L2":
        k = int(rng.integers(1, 3))
        out = np.zeros((k, 6), dtype=np.int64)
        for row in out:
            for a in rng.choice(3, size=int(rng.integers(2, 4)), replace=False, p=t_w):
                row[a] = sign() * int(rng.integers(1, 7))
        return out
    k = int(rng.integers(1, 4))
    rot_max = _NAV_ROT_MAX if kind == "nav" else _MANIP_ROT_MAX
    r_w = np.asarray(_ROT_WEIGHTS) / sum(_ROT_WEIGHTS)
    out = np.zeros((k, 6), dtype=np.int64)
    for row in out:
        for a in rng.choice(3, size=int(rng.integers(1, 3)), replace=False, p=t_w):
            row[a] = sign() * int(rng.integers(1, 7))
        r = int(rng.choice(3, p=r_w))
        row[3 + r] = sign() * int(rng.integers(1, rot_max[r] + 1))
    return out


def _overlap_fits(overlap: float, low: bool) -> bool:
    return _OVERLAP_LOW[0] <= overlap < _OVERLAP_LOW[1] if low else overlap >= _OVERLAP_HIGH


def _common_nav_start(world, rng) -> np.ndarray | None:
    """A common navigation view (tasks.tags.viewpoint_tag): eye 1.25–1.75 m high, level, pitch −12°…8°."""
    box = world.scene.nav_box
    eye = np.array([rng.uniform(*box[0]), rng.uniform(*box[1]), rng.uniform(1.25, 1.75)])
    if world.scene.inside_obstacle(eye, 0.25):
        return None
    yaw = rng.uniform(-np.pi, np.pi)
    T = look_at(eye, eye + np.array([np.cos(yaw), np.sin(yaw), 0.0]))
    T = T @ geometry.make_pose(geometry.rot_x(np.radians(rng.uniform(-12.0, 8.0))), np.zeros(3))
    return T if world.view_ok(T) else None


def _uncommon_nav_start(world, rng, P: np.ndarray, factor: str, sizes: StepSizes, cap: int):
    """A start pose ``S`` from which the view ``P`` is reached by a short prefix of whole units that undoes one
    uncommon factor (``roll``, ``pitch``: with 2–4 units of truck or dolly in each step; ``low``, ``high``: pedestal):
    returns (S, prefix signed counts) with S tagged uncommon, or None. ``S @ Δ(prefix) = P``."""
    u_t, u_r = sizes.translation, sizes.rotation
    pitch0, _, h0 = camera_attitude(P)
    if factor == "roll":
        n = int(rng.integers(int(np.ceil(np.radians(21.0) / u_r)), int(np.radians(33.0) / u_r) + 1))
        n *= 1 if rng.random() < 0.5 else -1
        prefix = _split_cap(5, n, cap)  # Roll n units from S reaches P
    elif factor == "pitch":
        down = rng.random() < 0.6
        target = rng.uniform(42.0, 48.0)
        turn = target + (pitch0 if down else -pitch0)  # degrees to tilt from S back to P
        n = int(np.ceil(np.radians(turn) / u_r))
        prefix = _split_cap(3, n if down else -n, cap)  # looking down at S: Tilt Up to P
    else:
        lo = factor == "low"
        target = rng.uniform(0.30, 0.45) if lo else rng.uniform(2.53, 2.58)
        cos_p = np.cos(np.radians(pitch0))
        n = int(np.ceil(abs(h0 - target) / (u_t * cos_p)))
        prefix = _split_cap(1, -n if lo else n, cap)  # below P: Pedestal Up (−Y) to P; above: Pedestal Down
    if factor in ("roll", "pitch"):
        # Each undoing step also moves 2–4 units (truck or dolly): a step that only turns would let Stay score on it
        # (docs/scoring.md: a step without translation scores ‖p‖ against one unit).
        for row in prefix:
            row[int(rng.choice([0, 2]))] = int(rng.integers(2, 5)) * (1 if rng.random() < 0.5 else -1)
    seq = ActionSequence.from_signed_counts(prefix, sizes, cap=cap)
    S = P @ geometry.invert_pose(seq.net_delta())
    if viewpoint_tag(S) != "uncommon":
        return None
    box = world.scene.nav_box
    for T in seq.to_poses(S):
        x = T[:3, 3]
        if np.any(x[:2] < box[:2, 0] - 0.15) or np.any(x[:2] > box[:2, 1] + 0.15) or not 0.25 <= x[2] <= 2.62:
            return None
        if world.scene.inside_obstacle(x, 0.15):
            return None
    if not clear_view(world, S, world.camera.fov_deg, 0.2, 1.0):
        return None
    return S, prefix


def _nav_level_task(world, rng, level: str, sizes: StepSizes, cap: int, factor: str, max_tries: int = 600):
    """(start, gt, goal, overlap, prefix length) of one navigation ladder task in the current scene."""
    low = level in ("L4", "L5")
    for _ in range(max_tries):
        start = _common_nav_start(world, rng)
        if start is None:
            continue
        signed = _level_counts(rng, level, "nav", cap)
        gt = ActionSequence.from_signed_counts(signed, sizes, cap=cap)
        reached = world.reachable_goal(start, gt)
        if reached is None or not _overlap_fits(reached[1], low):
            continue
        goal, overlap = reached
        n_prefix = 0
        if level == "L5":
            got = _uncommon_nav_start(world, rng, start, factor, sizes, cap)
            if got is None:
                continue
            start, prefix = got
            n_prefix = len(prefix)
            gt = ActionSequence.from_signed_counts(np.concatenate([prefix, signed]), sizes, cap=cap)
            if world.path_problem(gt.to_poses(start)) is not None:  # the prefix from the uncommon start too
                continue
        return start, gt, goal, overlap, n_prefix
    raise RuntimeError(f"no navigation {level} task found in scene {world.scene.spec} after {max_tries} tries")


def _manip_camera(rng, table_z: float, factor: str | None) -> np.ndarray:
    """An observing camera for a tabletop (C2W): common (level, |pitch| ≤ 12°) or uncommon by ``factor``
    (``roll``: rolled 22–35°; ``pitch``: looking down 50–70°), in front-right of the robot like the default one."""
    target = np.array([0.5, 0.0, table_z + 0.14])
    az = np.radians(rng.uniform(-80.0, -40.0))
    if factor == "pitch":
        d, pitch = rng.uniform(0.55, 0.75), np.radians(rng.uniform(50.0, 70.0))
    else:
        d, pitch = rng.uniform(1.1, 1.4), np.radians(rng.uniform(6.0, 12.0))
    eye = target + np.array([d * np.cos(az), d * np.sin(az), d * np.tan(pitch)])
    T = look_at(eye, target)
    if factor == "roll":
        roll = np.radians(rng.uniform(22.0, 35.0)) * (1 if rng.random() < 0.5 else -1)
        T = T @ geometry.make_pose(geometry.rot_z(roll), np.zeros(3))
    return T


def _manip_distractors(rng, world, poses, n: int) -> list[dict]:
    """``n`` look-alike cubes on the table, at least 9 cm (in x–y) from every grasp point of the path and from
    each other, inside the workspace: task objects named ``distractor<i>``."""
    box = world.scene.workspace
    path = np.stack([(T @ np.append(world.GRASP_POINT, 1.0))[:2] for T in poses])
    colour = [float(c) for c in rng.uniform(0.2, 0.9, 3)]
    out: list[dict] = []
    for _ in range(200):
        if len(out) == n:
            break
        xy = np.array([rng.uniform(box[0, 0], box[0, 1]), rng.uniform(box[1, 0], box[1, 1])])
        if np.min(np.linalg.norm(path - xy, axis=1)) < 0.09:
            continue
        if any(np.linalg.norm(np.asarray(o["position"][:2]) - xy) < 0.09 for o in out):
            continue
        jitter = [float(np.clip(c + rng.uniform(-0.05, 0.05), 0, 1)) for c in colour]
        out.append({"name": f"distractor{len(out)}", "shape": "cube", "size": 0.04, "color": jitter,
                    "position": [float(xy[0]), float(xy[1]), float(world.scene.table_z + 0.02)], "mass": 0.1})
    return out


def _manip_level_task(world, rng, level: str, sizes: StepSizes, cap: int, max_tries: int = 300):
    """(start, gt, goal, overlap, objects) of one manipulation ladder task in the current scene."""
    low = level in ("L4", "L5")
    for _ in range(max_tries):
        start = world.random_start(rng)
        if not world.pose_ok(start):
            continue
        signed = _level_counts(rng, level, "manip", cap)
        gt = ActionSequence.from_signed_counts(signed, sizes, cap=cap)
        poses = gt.to_poses(start)
        if np.linalg.norm(poses[-1][:3, 3] - start[:3, 3]) < 2 * sizes.translation:
            continue
        overlap = min(view_overlap(world, world.wrist_pose(start), world.wrist_pose(poses[-1])),
                      view_overlap(world, world.wrist_pose(poses[-1]), world.wrist_pose(start)))
        if not _overlap_fits(overlap, low):
            continue
        if not all(world.pose_ok(T) for T in poses[1:]):
            continue
        objects = _manip_distractors(rng, world, poses, _N_DISTRACTORS["manip"]) if low else []
        if low and len(objects) < _N_DISTRACTORS["manip"]:
            continue
        return start, gt, poses[-1], overlap, objects
    raise RuntimeError(f"no manipulation {level} task found in scene {world.scene.spec} after {max_tries} tries")


def _diagnostic_task(world, kind, task_id, start, goal, gt, tags, scene, meta) -> Task:
    motion, exact = motion_tags(kind, start, goal)
    instruction = ("Move the camera from the start view to the goal view." if kind == "nav"
                   else "Move the gripper from its start pose to the goal pose.")
    task = world.make_task(start, goal, gt, {"variant": "reach", "n_steps": len(gt), **tags, **motion},
                           scene=scene, task_id=task_id, instruction=instruction)
    return task.with_(meta={**task.meta, **exact, **meta})


def _observer(kind: str, start: np.ndarray, camera: np.ndarray | None) -> tuple[str, dict]:
    """The viewpoint tag and exact attitude of a task's observing camera (the start pose for navigation)."""
    T = start if kind == "nav" else camera
    pitch, roll, h = camera_attitude(T)
    return viewpoint_tag(T, height=(kind == "nav")), {"view_pitch_deg": round(pitch, 2),
                                                      "view_roll_deg": round(roll, 2), "view_height_m": round(h, 3)}


def _check_kind(kind: str, n: int, what: str) -> None:
    if kind not in LADDER_KINDS:
        raise ValueError(f"{what}: kind must be one of {LADDER_KINDS}, got {kind!r}")
    if int(n) < 0:
        raise ValueError(f"{what}: n must be ≥ 0, got {n!r}")


def _count_drops(world, skipped: dict | None) -> None:
    """Add the world's collision drops (navigation drafts whose path the scene blocks) to ``skipped``."""
    drops = int(getattr(world, "collision_drops", 0))
    if skipped is not None and drops:
        skipped[COLLIDES] = skipped.get(COLLIDES, 0) + drops


def ladder_tasks(kind: str, n_per_level: int, seed: int = 0, *, levels=LEVELS, renderer: str = "tiny",
                 skipped: dict | None = None) -> list[Task]:
    """The difficulty ladder (Spatial457, for actions): ``n_per_level`` reach tasks of ``kind`` (``nav`` or
    ``manip``) at each of ``levels``, each level adding one factor (:data:`LEVEL_FACTORS`):

    * L1 — one translation axis (one step, 2–8 units); L2 — several translation axes (1–2 steps, 2–3 axes each);
    * L3 — translation with rotation (1–3 steps, each 1–2 translation axes and one rotation);
    * L4 — as L3 with look-alike distractor objects in the scene and a low view overlap between the controlled
      frame's start and goal views (in [0.1, 0.4) instead of ≥ 0.5; the wrist camera's views for manipulation);
    * L5 — as L4 seen from an uncommon viewpoint: a navigation start view with a large roll, a steep pitch, or at
      0.3–0.45 m or 2.53–2.58 m (the ground truth begins with the units that undo it), or a manipulation scene's
      observing camera rolled 22–35° or looking down 50–70°.

    L1–L4 start from common views (navigation: eye 1.25–1.75 m, |pitch| ≤ 12°, level; manipulation: an observing
    camera at |pitch| ≤ 12°, level). Task ``i`` of every level is drawn in the same base scene (scene seed ``i``
    of ``seed``), so levels differ by their factors, not their rooms. Tags: ``level``, ``viewpoint``,
    ``view_overlap`` (``high`` / ``low``), ``distractors`` (``yes`` / ``no``) and the motion tags; exact values in
    ``meta``. Deterministic in ``seed``. ``skipped``: a dict that gets the drafts dropped, by reason (see the
    module docstring); the tasks are the same whether or not it is given."""
    _check_kind(kind, n_per_level, "ladder_tasks")
    bad = [lv for lv in levels if lv not in LEVELS]
    if bad:
        raise ValueError(f"ladder_tasks: unknown level {bad[0]!r} (levels: {', '.join(LEVELS)})")
    sizes = StepSizes.for_kind(kind)
    env = make_env(kind, width=32, height=32, renderer=renderer, sizes=sizes, wrap=False)
    world, cap = env.world, env.cap
    rng = np.random.default_rng([int(seed), 11])
    factors = UNCOMMON_FACTORS[kind]
    tasks: list[Task] = []
    try:
        for i in range(int(n_per_level)):
            scene_seed = int(rng.integers(2 ** 31 - 1))
            common_cam = _manip_camera(rng, 0.62, None) if kind == "manip" else None
            uncommon_cam = _manip_camera(rng, 0.62, factors[i % len(factors)]) if kind == "manip" else None
            for level in levels:
                low = level in ("L4", "L5")
                factor = factors[i % len(factors)]
                params: dict = {}
                if kind == "nav":
                    if low:
                        params["distractors"] = _N_DISTRACTORS["nav"]
                    world.load_scene({"generator": world.default_generator, "seed": scene_seed,
                                        **({"params": params} if params else {})})
                    start, gt, goal, overlap, n_prefix = _nav_level_task(world, rng, level, sizes, cap, factor)
                    scene, camera, extra = world.scene.spec, None, {"prefix_steps": n_prefix}
                else:
                    camera = uncommon_cam if level == "L5" else common_cam
                    world.load_scene({"generator": world.default_generator, "seed": scene_seed,
                                        "params": {"camera": camera.tolist()}})
                    start, gt, goal, overlap, objects = _manip_level_task(world, rng, level, sizes, cap)
                    scene = {**world.scene.spec,
                             "params": {**world.scene.spec.get("params", {}), "objects": objects}} if objects \
                        else world.scene.spec
                    extra = {}
                vp, attitude = _observer(kind, start, camera)
                tags = {"level": level, "viewpoint": vp, "view_overlap": "low" if low else "high",
                        "distractors": "yes" if low else "no"}
                if level == "L5":
                    tags["uncommon"] = factor
                tasks.append(_diagnostic_task(
                    world, kind, f"ladder-{kind}-{seed}-{level}-{i:03d}", start, goal, gt, tags, scene,
                    {"view_overlap": round(float(overlap), 3), "level_factor": LEVEL_FACTORS[level], "index": i,
                     **attitude, **extra}))
    finally:
        _count_drops(world, skipped)
        env.close()
    return tasks


def viewpoint_pairs(kind: str, n_pairs: int, seed: int = 0, *, renderer: str = "tiny",
                    skipped: dict | None = None) -> list[Task]:
    """3DSRBench's viewpoint robustness, for actions: ``n_pairs`` pairs of reach tasks of ``kind`` (``nav`` or
    ``manip``) that share scene and goal, one seen from a common and one from an uncommon viewpoint (tags
    ``viewpoint`` and ``pair``; ``uncommon`` names the factor, the factors taking turns over
    :data:`UNCOMMON_FACTORS`).

    Navigation: the common task starts at a common view ``P`` (eye 1.25–1.75 m, |pitch| ≤ 12°, level) and its
    ground truth is an L3 motion (translation with rotation) to the goal; the uncommon task starts at ``S`` —
    ``P`` rolled, pitched, lowered or raised — and its ground truth is the units that undo that, then the same
    motion. Manipulation: the two tasks are the same reach (start, goal, ground truth) seen by the scene's
    observing camera from a common or an uncommon pose. Deterministic in ``seed``. ``skipped``: a dict that gets
    the drafts dropped, by reason (see the module docstring)."""
    _check_kind(kind, n_pairs, "viewpoint_pairs")
    sizes = StepSizes.for_kind(kind)
    env = make_env(kind, width=32, height=32, renderer=renderer, sizes=sizes, wrap=False)
    world, cap = env.world, env.cap
    rng = np.random.default_rng([int(seed), 13])
    factors = UNCOMMON_FACTORS[kind]
    tasks: list[Task] = []
    try:
        for i in range(int(n_pairs)):
            factor = factors[i % len(factors)]
            scene_seed = int(rng.integers(2 ** 31 - 1))
            pair = f"vp-{kind}-{seed}-{i:03d}"
            if kind == "nav":
                world.load_scene({"generator": world.default_generator, "seed": scene_seed})
                for _ in range(50):
                    start, gt, goal, overlap, _ = _nav_level_task(world, rng, "L3", sizes, cap, factor)
                    got = _uncommon_nav_start(world, rng, start, factor, sizes, cap)
                    if got is None:
                        continue
                    S, prefix = got
                    gt_u = ActionSequence.from_signed_counts(
                        np.concatenate([prefix, [s.signed_counts() for s in gt.steps]]), sizes, cap=cap)
                    if world.path_problem(gt_u.to_poses(S)) is None:
                        break
                else:
                    raise RuntimeError(f"no uncommon {factor} start found in scene {world.scene.spec}")
                views = [("common", start, gt, None, world.scene.spec), ("uncommon", S, gt_u, None, world.scene.spec)]
            else:
                cams = {"common": _manip_camera(rng, 0.62, None), "uncommon": _manip_camera(rng, 0.62, factor)}
                world.load_scene({"generator": world.default_generator, "seed": scene_seed,
                                    "params": {"camera": cams["common"].tolist()}})
                start, gt, goal, overlap, _ = _manip_level_task(world, rng, "L3", sizes, cap)
                spec = world.scene.spec
                views = [(vp, start, gt, cams[vp], {**spec, "params": {**spec["params"], "camera": cams[vp].tolist()}})
                         for vp in ("common", "uncommon")]
            for vp, s0, g, cam, scene in views:
                tag, attitude = _observer(kind, s0, cam)
                if tag != vp:  # the builders above guarantee it; a wrong tag would corrupt δ silently
                    raise AssertionError(f"{pair}: the {vp} view is tagged {tag} ({attitude})")
                tags = {"viewpoint": vp, "pair": pair}
                if vp == "uncommon":
                    tags["uncommon"] = factor
                tasks.append(_diagnostic_task(world, kind, f"{pair}-{vp}", s0, goal, g, tags, scene,
                                              {"view_overlap": round(float(overlap), 3), "index": i, **attitude}))
    finally:
        _count_drops(world, skipped)
        env.close()
    return tasks
