"""Question generators (docs/questions.md): camera-geometry questions after SpatialScore's VGBench and task-flow
questions after SpaCE-10's spatial planning, from simulator renders with exact answers.

Views come from procedural rooms (:func:`spatialact.taskgen.procedural_tasks`: seeded scenes, the start, intermediate
and goal poses of their replayed ground truths) or from a recorded camera path replayed in its scene
(:func:`spatialact.envs.replay_trajectory`: the poses its metric ground truth reaches); recordings with frames (game,
DROID, EgoDex) are asked on those frames by :mod:`spatialact.questions.recorded`. Every answer is computed
from what the record stores — camera poses (C2W, metres, world +Z up, camera +X right, +Y down, +Z forward),
pinhole intrinsics in pixels, the depth map of the render (z-depth, metres), marked pixels (x right, y down, pixel
centres at integers) — so it can be recomputed from the record alone (tests/questions/test_generate.py does, by another
route). Types (``TYPE_FORMATS``):

* ``relative_pose``: the pose of camera 2 in camera 1's frame; multiple choice (distractors: relative poses of other
  view pairs of the same scene) and judgment (is this the relative pose? yes / no);
* ``primitive``: which motion primitive (a few units of one) links two frames;
* ``fov``: the horizontal field of view of a camera with random intrinsics; numeric and multiple choice;
* ``depth``: the z-depth at a marked pixel (numeric); ``relative_depth``: which of four marked points is closest
  / farthest;
* ``distance``: the 3-D distance between marked points on two different objects; numeric and multiple choice;
* ``tracking``: which of four candidate points in image 2 is the point marked in image 1;
* ``task_flow``: which step-by-step description of primitives moves the camera from image 1 to image 2 — the
  replayed ground truth, or one of three single-step corruptions (a primitive reversed, moved to another axis, or
  its count changed).

Options are shuffled with the seed (answer letters are balanced); the same seed, renderer and device give the same
questions and images. Decisions are written down in docs/questions.md.

The five types a recording gives too (relative pose, field of view, depth, relative depth, tracking) have one
generator each in :mod:`spatialact.questions.shared`, over the views interface :class:`SceneViews` fills here; the
primitive, distance and task-flow generators are rendered only and live here.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .drafts import (BLUE, FMT_SHORT, FRAME_TEXT, MIN_OVERLAP, RED, Draft, draw_marks, marked_point, pick_pixels,
                     question_dict, shuffle_options, smooth_mask, spread_values)
from .io import QUESTION_TYPES, TYPE_FORMATS, save_questions
from .shared import SHARED_GENERATORS, FovShot, Views, field_of_view_deg

__all__ = ["build_questions", "BuildResult", "SceneViews", "procedural_scenes", "trajectory_scenes",
           "generate_in_scene", "sequence_text", "QUESTIONS_PER_SCENE", "TASKS_PER_SCENE"]

QUESTIONS_PER_SCENE = 6   # procedural: one room for about this many questions
TASKS_PER_SCENE = 4       # procedural tasks (start → goal) per room: their poses are the room's views
PAIR_TRIES = 60           # draws of a pair of views (a relative-pose question; tracking draws 40)
CACHED_RENDERS = 8        # rendered views (image and depth) a scene keeps while questions are generated
_STRUCTURAL = ("floor", "ceiling", "wall", "door", "window", "painting", "rug")



@dataclass
class SceneViews(Views):
    """What questions are generated from: a world to render (a :class:`~spatialact.envs.rendering.BulletBackend`), its
    camera (:class:`~spatialact.envs.rendering.CameraSpec`), camera poses inside it (C2W), the replayed ground truths
    ``flows`` ((start pose, ActionSequence), the camera being the moving body), the object bodies (body id → object
    name; walls, floor and the like excluded), where a camera may be (``bounds`` (3, 2) world box, or None) and the
    furniture boxes ``obstacles`` [(lo, hi)].

    As :class:`~spatialact.questions.shared.Views` (the five types recordings give too): view ``k`` is ``views[k]``
    seen by ``camera``, its image and exact depth rendered (the last :data:`CACHED_RENDERS` kept); a marker goes only
    into a clear view (:func:`_clear`); a field-of-view question renders a view with a camera of its own."""

    world: object
    spec: dict | None
    source: str
    camera: object
    views: list
    flows: list
    objects: dict = field(default_factory=dict)
    bounds: np.ndarray | None = None
    obstacles: list = field(default_factory=list)
    _renders: dict = field(default_factory=dict, repr=False)

    depth_step = None   # rendered depth is exact
    fov_tries = 30      # draws of a view and a camera for a field-of-view question

    @property
    def n_views(self) -> int:
        return len(self.views)

    @property
    def far_m(self) -> float:
        return float(self.camera.far)

    def pose(self, k: int) -> np.ndarray:
        return self.views[k]

    def camera_of(self, k: int):
        return self.camera

    def _rendered(self, k: int):
        if k not in self._renders:
            self._renders[k] = _render(self, self.views[k])
        value = self._renders.pop(k)
        self._renders[k] = value
        while len(self._renders) > CACHED_RENDERS:
            self._renders.pop(next(iter(self._renders)))
        return value

    def rgb(self, k: int) -> np.ndarray:
        return self._rendered(k)[0]

    def depth(self, k: int) -> np.ndarray:
        return self._rendered(k)[1]

    def usable(self, k: int) -> bool:
        return _clear(self, self.views[k])

    def pairs(self, rng, tries: int | None = None):
        return _view_pairs(self, rng, tries=PAIR_TRIES if tries is None else tries)

    def relative_poses(self, rng, a: int, b: int):
        """The relative poses of the other ordered view pairs of the scene (the reversed pair among them), in the order
        of one permutation of them."""
        from .. import geometry

        n = len(self.views)
        pairs = [(i, j) for i in range(n) for j in range(n) if i != j and (i, j) != (a, b)]
        order = rng.permutation(len(pairs))
        return (geometry.relative_pose(self.views[i], self.views[j]) for i, j in (pairs[int(k)] for k in order))

    def pair_text(self, a: int, b: int) -> str:
        return "Image 1 and Image 2 were taken by the same camera in the same scene."

    def view_meta(self, ks) -> dict:
        """A pair of rendered views is named by its indices (``pair``); a single view is not named."""
        return {"pair": [int(k) for k in ks]} if len(ks) == 2 else {}

    def fov_shot(self, rng) -> FovShot | None:
        """A random view rendered with a camera of random intrinsics: the scene camera's width, an aspect ratio of
        1, 4:3, 3:2 or 16:9, a vertical field of view in [35°, 95°], square pixels, centred; None when its horizontal
        field of view is outside [20°, 150°] or the view is not clear."""
        from ..envs.camera import CameraSpec

        W = int(self.camera.width)
        T = self.views[int(rng.integers(len(self.views)))]
        aspect = float(rng.choice([1.0, 4 / 3, 3 / 2, 16 / 9]))
        H = max(8, int(round(W / aspect)))
        cam = CameraSpec(W, H, float(rng.uniform(35.0, 95.0)))
        if not 20.0 <= field_of_view_deg(cam, "horizontal") <= 150.0 or not _clear(self, T):
            return None
        return FovShot(T, cam, _render(self, T, cam)[0], "horizontal", "was taken by a pinhole camera with square "
                       "pixels and the principal point at the image centre", {"vertical_fov_deg": cam.fov_deg})


@dataclass
class BuildResult:
    """What :func:`build_questions` wrote: the file, the question records, and how many of each (type, format)
    could not be generated (``skipped``, with the reason)."""

    path: Path
    questions: list
    skipped: dict


# ----- scene sources -------------------------------------------------------------------------------------------------
def _object_name(name: str) -> str | None:
    """A scene body's object (``table2_1`` → ``table2``: a piece of furniture and what stands on it), None for the
    room itself (walls, floor, ceiling, door, window, paintings, rug)."""
    if name.startswith(_STRUCTURAL):
        return None
    return name.split("_")[0]


def procedural_scenes(n_scenes: int, seed: int, *, renderer: str = "tiny", size: int = 384):
    """Yield ``n_scenes`` procedural rooms (:class:`SceneViews`), deterministic in ``seed``: each the scene of
    :data:`TASKS_PER_SCENE` procedural navigation tasks, whose replayed poses are its views and whose ground truths
    are its flows. One environment renders them in turn (the world of a yielded scene lives until the next)."""
    from ..envs import make_env
    from ..taskgen.procedural import procedural_tasks

    tasks = procedural_tasks("nav", TASKS_PER_SCENE * n_scenes, seed, n_steps=(2, 3), tasks_per_scene=TASKS_PER_SCENE,
                             renderer=renderer)
    env = make_env("nav", width=size, height=size, renderer=renderer, wrap=False)
    try:
        for s in range(n_scenes):
            group = tasks[s * TASKS_PER_SCENE:(s + 1) * TASKS_PER_SCENE]
            env.reset(options={"task": group[0]})
            info = env.scene
            views = [T for t in group for T in t.gt.to_poses(t.start_pose)]
            objects = {int(b): o for name, b in info.bodies.items() if (o := _object_name(name)) is not None}
            yield SceneViews(world=env.world, spec=dict(group[0].scene), source="procedural", camera=env.camera,
                             views=views, flows=[(t.start_pose, t.gt) for t in group], objects=objects,
                             bounds=np.asarray(info.nav_box), obstacles=list(info.obstacles))
    finally:
        env.close()


def trajectory_scenes(traj, *, renderer: str = "tiny", size: int = 384, mesh: str | None = None,
                      max_keyframes: int | None = None):
    """Yield the one scene of a recorded camera path (TUM, KITTI, RealEstate10K, generic, EgoDex's head camera)
    replayed in its replay scene (a procedural room around the path, or the mesh ``mesh``): the views are the poses
    its metric ground truth reaches at each step (docs/trajectories.md), the flows its windows of two and three steps.
    Recordings with frames (game, DROID, EgoDex) go to :mod:`.recorded`; an EgoDex hand without its video is refused
    (ValueError)."""
    from ..envs import make_env, replay_trajectory
    from ..envs.replay_world import replay_scene_for, scene_aspect
    from ..tasks.extraction import keyframe_indices

    src = traj.meta.get("source")
    if src == "droid" or (src == "egodex" and traj.meta.get("entity") != "camera"):
        # recordings with their frames are asked on them (spatialact.questions.recorded); what reaches here has none
        raise ValueError(f"{traj.meta.get('path')}: this {src} trajectory has no recorded frames (its video is "
                         "missing), and its moving body is not a camera path to replay")
    scene = None
    if mesh is not None:
        kf = keyframe_indices(len(traj), traj.fps, None)
        if max_keyframes is not None:
            kf = kf[:max(2, int(max_keyframes))]
        scene = replay_scene_for(traj, kf, mesh=mesh)
    # the replay's own renders are not used (small); its task carries the scene and the metric ground truth
    result = replay_trajectory(traj, scene=scene, height=32, renderer=renderer, max_keyframes=max_keyframes)
    task = result.task
    aspect = scene_aspect(task.scene)  # the recorded camera's, when the trajectory has intrinsics
    width = int(round(size * aspect)) if aspect else int(size)
    env = make_env("nav", task=task, width=width, height=int(size), renderer=renderer, wrap=False,
                   max_steps=max(1, len(task.gt)), terminate_on_success=False)
    try:
        env.reset(options={"task": task})
        views = list(task.gt.to_poses(task.start_pose))
        flows = []
        for k in (2, 3):
            for i in range(0, len(task.gt) - k + 1):
                flows.append((views[i], task.gt[i:i + k]))
        info = env.scene
        objects = {int(b): o for name, b in info.bodies.items() if (o := _object_name(name)) is not None
                   and name.startswith(("distractor", "table", "sofa", "lamp", "plant", "bookshelf", "counter"))}
        yield SceneViews(world=env.world, spec=dict(task.scene), source=str(src or "trajectory"), camera=env.camera,
                         views=views, flows=flows, objects=objects,
                         bounds=None if info.nav_box is None else np.asarray(info.nav_box),
                         obstacles=list(info.obstacles))
    finally:
        env.close()


# ----- geometry and drawing helpers ---------------------------------------------------------------------------------


def _render(scene: SceneViews, T, cam=None, seg: bool = False):
    cam = cam or scene.camera
    return scene.world.render(np.asarray(T, dtype=np.float64), cam, depth=True, segmentation=seg)


def _clear(scene: SceneViews, T) -> bool:
    """A usable view: nothing within 0.3 m, half of it at least 0.8 m away, nothing at the far plane."""
    from ..envs.camera import CameraSpec

    cam = CameraSpec(16, 16, scene.camera.fov_deg)
    _, d, _ = scene.world.render(np.asarray(T, dtype=np.float64), cam, depth=True)
    return float(d.min()) >= 0.3 and float(np.median(d)) >= 0.8 and float(d.max()) < cam.far * 0.99


def _overlap(scene: SceneViews, A, B) -> float:
    from ..envs.views import view_overlap

    return min(view_overlap(scene.world, A, B), view_overlap(scene.world, B, A))


def _inside(scene: SceneViews, T) -> bool:
    x = np.asarray(T)[:3, 3]
    if scene.bounds is not None and (np.any(x < scene.bounds[:, 0] - 0.15) or np.any(x > scene.bounds[:, 1] + 0.15)):
        return False
    return not any(np.all(x >= lo - 0.15) and np.all(x <= hi + 0.15) for lo, hi in scene.obstacles)














def sequence_text(seq) -> str:
    """An action sequence in words: ``Step 1: Truck Left ×3, Dolly In ×5. Step 2: Pan Right ×2.``"""
    parts = []
    for k, st in enumerate(seq.steps, 1):
        acts = ", ".join(f"{p.value} ×{n}" for p, n in st.as_actions()) or "Stay"
        parts.append(f"Step {k}: {acts}.")
    return " ".join(parts)








# ----- one question of each type ----------------------------------------------------------------------------------


def _view_pairs(scene: SceneViews, rng, min_t: float = 0.1, min_r: float = math.radians(5.0), tries: int = 60):
    """Random pairs (i, j) of clear views that moved (≥ ``min_t`` or ``min_r``) and share at least
    :data:`MIN_OVERLAP` of their views."""
    from .. import geometry

    n = len(scene.views)
    for _ in range(tries):
        i, j = (int(v) for v in rng.choice(n, size=2, replace=False))
        A, B = scene.views[i], scene.views[j]
        t = float(np.linalg.norm(A[:3, 3] - B[:3, 3]))
        r = float(geometry.rotation_error(A, B))
        if (t < min_t and r < min_r) or t > 3.0 or r > math.radians(75.0):
            continue
        if not (_clear(scene, A) and _clear(scene, B)):
            continue
        if _overlap(scene, A, B) < MIN_OVERLAP:
            continue
        yield i, j


def _primitives():
    from ..action_space import MOTION_PRIMITIVES

    return MOTION_PRIMITIVES


def gen_primitive(scene: SceneViews, rng, fmt: str) -> Draft | None:
    from ..action_space import PRIMITIVE_TABLE, ActionSequence, Step

    prims = _primitives()
    sizes = scene.flows[0][1].sizes if scene.flows else None
    if sizes is None:
        from ..action_space import StepSizes

        sizes = StepSizes.navigation()
    for _ in range(60):
        T = scene.views[int(rng.integers(len(scene.views)))]
        p = int(rng.integers(len(prims)))
        axis = p // 2
        n = int(rng.integers(3, 9)) if axis < 3 else int(rng.integers(3, 7))
        step = Step.from_counts({prims[p]: n})
        seq = ActionSequence((step,), sizes)
        T2 = seq.to_poses(T)[-1]
        if not (_inside(scene, T2) and _clear(scene, T) and _clear(scene, T2)):
            continue
        if _overlap(scene, T, T2) < MIN_OVERLAP:
            continue
        opposite = p ^ 1
        others = [k for k in rng.permutation(len(prims)) if k not in (p, opposite)][:2]
        names = [prims[k] for k in [p, opposite] + others]
        texts = [f"{q.value}: {PRIMITIVE_TABLE[q].description}" for q in names]
        opts, vals, letter = shuffle_options(rng, texts, [q.value for q in names], 0)
        rgb = [_render(scene, X)[0] for X in (T, T2)]
        units = (f"one unit is {sizes.translation:g} m" if axis < 3
                 else f"one unit is {math.degrees(sizes.rotation):.2f}°")
        q = ("Image 2 was taken after the camera that took Image 1 made a single motion: a few units of one motion "
             "primitive, in its own frame. " + FRAME_TEXT + " Truck moves along X, Pedestal along Y (Pedestal Up is "
             "-Y), Dolly along Z; Tilt, Pan and Roll turn about X, Y and Z (Tilt Up, Pan Right and Roll CCW are "
             "positive). Which primitive links Image 1 to Image 2?")
        return Draft(question=q, format=fmt, answer=letter, options=opts, option_values=vals,
                      views=[(T, scene.camera, None), (T2, scene.camera, None)],
                      images=[(rgb[0], 0, "before"), (rgb[1], 1, "after")], sequence=seq.to_dict(),
                      meta={"primitive": prims[p].value, "count": n, "unit": units})
    return None


def _marked_views(scene: SceneViews, rng, seg: bool = False, extra=()):
    """The clear views of the scene in a random order (then ``extra`` poses), each with its render (rgb, depth, seg)
    and the mask of pixels where a marker is unambiguous."""
    poses = [scene.views[int(i)] for i in rng.permutation(len(scene.views))] + list(extra)
    for V in poses:
        if not _clear(scene, V):
            continue
        rgb, depth, s = _render(scene, V, seg=seg)
        margin = max(4, int(0.06 * min(depth.shape)))
        yield V, rgb, depth, s, smooth_mask(depth, scene.camera.far, margin)


def _object_views(scene: SceneViews, rng, n: int = 12):
    """Views aimed between two objects of the scene: from the eye of a random view, looking at the midpoint of
    the centres of two objects (their bounding boxes) at most 4 m apart."""
    from ..envs.camera import look_at

    w = scene.world
    boxes: dict = {}
    for bid, obj in scene.objects.items():
        lo, hi = w.p.getAABB(int(bid), physicsClientId=w.client)
        b = boxes.setdefault(obj, [np.full(3, np.inf), np.full(3, -np.inf)])
        b[0], b[1] = np.minimum(b[0], lo), np.maximum(b[1], hi)
    names = sorted(boxes)
    if len(names) < 2:
        return []
    centres = {o: (boxes[o][0] + boxes[o][1]) / 2 for o in names}
    out = []
    for _ in range(4 * n):
        a, b = (names[int(i)] for i in rng.choice(len(names), size=2, replace=False))
        if np.linalg.norm(centres[a] - centres[b]) > 4.0:
            continue
        eye = scene.views[int(rng.integers(len(scene.views)))][:3, 3]
        target = (centres[a] + centres[b]) / 2
        if np.linalg.norm(target - eye) < 1.0:
            continue
        T = look_at(eye, target)
        if _inside(scene, T):
            out.append(T)
        if len(out) == n:
            break
    return out




def gen_distance(scene: SceneViews, rng, fmt: str) -> Draft | None:
    if not scene.objects:
        return None
    cam = scene.camera
    for T, rgb, depth, seg, mask in _marked_views(scene, rng, seg=True, extra=_object_views(scene, rng)):
        names = np.full(seg.shape, "", dtype=object)
        for bid, obj in scene.objects.items():
            names[seg == bid] = obj
        min_px = max(6, int(0.001 * seg.size))
        visible = sorted({str(o) for o in np.unique(names[mask]) if o})
        visible = [o for o in visible if int(((names == o) & mask).sum()) >= min_px]
        if len(visible) < 2:
            continue
        oa, ob = (visible[int(i)] for i in rng.choice(len(visible), size=2, replace=False))
        pa = pick_pixels(rng, (names == oa) & mask)
        pb = pick_pixels(rng, (names == ob) & mask, avoid=pa, min_dist=10.0)
        if pa is None or pb is None:
            continue
        (xa, ya), (xb, yb) = pa[0], pb[0]
        A = marked_point(T, cam, depth, "red", 0, xa, ya, oa)
        B = marked_point(T, cam, depth, "blue", 0, xb, yb, ob)
        dist = float(np.linalg.norm(np.asarray(A["world"]) - np.asarray(B["world"])))
        if dist < 0.2:
            continue
        img = draw_marks(rgb, [(xa, ya, RED, None), (xb, yb, BLUE, None)])
        q = (f"Image 1 shows two marked points on two different objects: a red marker at pixel ({xa}, {ya}) and a "
             f"blue marker at pixel ({xb}, {yb}). What is the straight-line distance in 3-D between the two marked "
             "surface points, in metres?")
        base = dict(views=[(T, cam, depth)], images=[(img, 0, "view")], points=[A, B],
                    meta={"objects": [oa, ob]})
        if fmt == "numeric":
            return Draft(question=q, format=fmt, answer=dist, unit="m", **base)
        fmt_v = lambda v: f"{v:.2f} m"  # noqa: E731
        d = spread_values(rng, dist, (0.45, 0.6, 0.75, 1.3, 1.55, 1.9), 0.02, 100.0, fmt_v, min_ratio=1.15)
        if d is None:
            continue
        opts, vals, letter = shuffle_options(rng, [fmt_v(v) for v in [dist] + d], [dist] + d, 0)
        return Draft(question=q, format=fmt, answer=letter, options=opts, option_values=vals, **base)
    return None


def _corruptions(rng, seq, cap: int):
    """Single-step corruptions of ``seq`` (a counts sequence): (kind, sequence), each differing from it in exactly
    one step — a primitive reversed, moved to another axis, or its count changed."""
    from ..action_space import ActionSequence, Step

    out = []
    steps = list(seq.steps)
    for k in rng.permutation(len(steps)):
        k = int(k)
        signed = steps[k].signed_counts()
        moving = [int(a) for a in np.flatnonzero(signed)]
        for a in rng.permutation(moving) if moving else []:
            a = int(a)
            for kind in rng.permutation(["reverse", "axis", "count"]):
                new = signed.copy()
                if kind == "reverse":
                    new[a] = -new[a]
                elif kind == "axis":
                    free = [b for b in range(6) if new[b] == 0 and (b < 3) == (a < 3)]
                    if not free:
                        free = [b for b in range(6) if new[b] == 0]
                    if not free:
                        continue
                    b = int(rng.choice(free))
                    new[b], new[a] = new[a], 0
                else:
                    c = abs(int(new[a]))
                    choices = [v for v in (c - 3, c - 2, c + 2, c + 3, 2 * c) if 1 <= v <= cap and v != c]
                    if not choices:
                        continue
                    new[a] = int(np.sign(new[a])) * int(rng.choice(choices))
                st = Step.from_signed(new.tolist(), gripper=steps[k].gripper)
                out.append((f"{kind} in step {k + 1}", ActionSequence(tuple(steps[:k] + [st] + steps[k + 1:]),
                                                                      seq.sizes, seq.cap)))
    return out


def gen_task_flow(scene: SceneViews, rng, fmt: str) -> Draft | None:
    from .. import geometry

    flows = [f for f in scene.flows if len(f[1]) >= 1 and not f[1].has_vectors]
    if not flows:
        return None
    for n in rng.permutation(len(flows)):
        T0, seq = flows[int(n)]
        poses = seq.to_poses(T0)
        end = poses[-1]
        if not (_clear(scene, T0) and _clear(scene, end)):
            continue
        u_t, u_r = seq.sizes.translation, seq.sizes.rotation
        chosen: list = []
        finals = [end]
        for kind, alt in _corruptions(rng, seq, seq.cap):
            F = alt.to_poses(T0)[-1]
            if all(float(np.linalg.norm(F[:3, 3] - G[:3, 3])) >= 1.5 * u_t
                   or float(geometry.rotation_error(F, G)) >= 1.5 * u_r for G in finals):
                if sequence_text(alt) not in [sequence_text(s) for _, s in chosen]:
                    chosen.append((kind, alt))
                    finals.append(F)
            if len(chosen) == 3:
                break
        if len(chosen) < 3:
            continue
        rgb = [_render(scene, T)[0] for T in (T0, end)]
        seqs = [seq] + [s for _, s in chosen]
        opts, vals, letter = shuffle_options(rng, [sequence_text(s) for s in seqs], [s.to_dict() for s in seqs], 0)
        q = ("The camera moved from the view in Image 1 to the view in Image 2 by executing a sequence of steps. "
             "Each step names motion primitives and how many units of each; within a step the camera first "
             "translates, then rotates, in its own frame at the start of the step. " + FRAME_TEXT + " Truck Right "
             "moves along +X, Pedestal Down along +Y (Pedestal Up along -Y), Dolly In along +Z; Tilt Up, Pan Right "
             "and Roll CCW turn positively about X, Y and Z. One unit is "
             f"{u_t:g} m for Truck, Pedestal and Dolly and {math.degrees(u_r):.2f}° for Tilt, Pan and Roll. Which "
             "sequence did the camera execute?")
        return Draft(question=q, format=fmt, answer=letter, options=opts, option_values=vals,
                      views=[(T0, scene.camera, None), (end, scene.camera, None)],
                      images=[(rgb[0], 0, "start"), (rgb[1], 1, "end")], sequence=seq.to_dict(),
                      meta={"corruptions": [k for k, _ in chosen], "n_steps": len(seq)})
    return None


# the five types recordings give too have one generator each (spatialact.questions.shared); the rest are rendered only
GENERATORS = {**SHARED_GENERATORS, "primitive": gen_primitive, "distance": gen_distance, "task_flow": gen_task_flow}
GENERATORS = {t: GENERATORS[t] for t in QUESTION_TYPES}
assert set(GENERATORS) == set(QUESTION_TYPES)


# ----- records and files ---------------------------------------------------------------------------------------------






def generate_in_scene(scene: SceneViews, typ: str, fmt: str, rng) -> Draft | None:
    """One question of ``typ`` in ``fmt`` from ``scene`` (a draft: its images not yet written), or None when the
    scene cannot give one (no two objects in view for ``distance``, no replayed flow for ``task_flow``, …)."""
    if typ not in GENERATORS:
        raise ValueError(f"unknown question type {typ!r} (expected one of {', '.join(QUESTION_TYPES)})")
    if fmt not in TYPE_FORMATS[typ]:
        raise ValueError(f"{typ!r} questions come as {', '.join(TYPE_FORMATS[typ])}, not {fmt!r}")
    if not scene.views:
        return None
    return GENERATORS[typ](scene, rng, fmt)


def parse_types(text: str | None) -> tuple[str, ...]:
    """``"depth,tracking"`` → the types (all of them for None or ``all``); an unknown name raises ValueError."""
    if text is None or text.strip() in ("", "all"):
        return QUESTION_TYPES
    out = []
    for t in text.split(","):
        t = t.strip()
        if t not in QUESTION_TYPES:
            raise ValueError(f"--types: unknown question type {t[:40]!r} (expected {', '.join(QUESTION_TYPES)})")
        if t not in out:
            out.append(t)
    return tuple(out)


def _sources(n_items, types, *, seed, trajectory, mesh, max_keyframes, renderer, size, camera):
    """(scenes, how many, the generator of one draft, the types asked) for :func:`build_questions`: a recording's
    own frames (:mod:`.recorded`), a camera path replayed in its scene, or procedural rooms."""
    if trajectory is not None:
        from .recorded import generate_in_recording, is_recording, recording_from, recording_types

        if is_recording(trajectory):
            if mesh is not None:
                raise ValueError(f"{trajectory.meta.get('path')}: a {trajectory.meta.get('source')} recording is "
                                 "asked on its own frames: no --scene (a mesh scene is for camera paths)")
            rec = recording_from(trajectory, camera=camera, max_keyframes=max_keyframes)
            return [rec], 1, generate_in_recording, recording_types(rec, types)
        if camera is not None:
            raise ValueError(f"{trajectory.meta.get('path')}: camera {camera!r}: only a DROID episode has cameras "
                             "to choose")
        scenes = trajectory_scenes(trajectory, renderer=renderer, size=size, mesh=mesh, max_keyframes=max_keyframes)
        return scenes, 1, generate_in_scene, QUESTION_TYPES if types is None else types
    types = QUESTION_TYPES if types is None else types
    n_scenes = max(1, math.ceil(n_items(types) / QUESTIONS_PER_SCENE))
    return procedural_scenes(n_scenes, seed, renderer=renderer, size=size), n_scenes, generate_in_scene, types


def build_questions(out, *, n: int = 4, seed: int = 0, types=None, trajectory=None, mesh: str | None = None,
                    max_keyframes: int | None = None, renderer: str = "tiny", size: int = 384,
                    progress: bool = False, camera: str | None = None) -> BuildResult:
    """Generate ``n`` questions of every (type, format) pair of ``types`` (default all, :data:`TYPE_FORMATS`) and
    write them to the question file ``out`` (JSONL), their images and depth maps to ``<out stem>_images/``.

    Views come from procedural rooms (seeded by ``seed``; about :data:`QUESTIONS_PER_SCENE` questions a room), or,
    with ``trajectory`` (a :class:`~spatialact.trajectories.Trajectory`), from its camera path replayed in its scene
    (``mesh``: a mesh scene instead of a room around the path; ``max_keyframes``: replay only the first keyframes).
    A recording — a game trajectory, a DROID episode (``camera``: one camera instead of all), an EgoDex episode with
    its video — is asked on its own frames, poses, intrinsics and depth (:mod:`spatialact.questions.recorded`):
    ``types`` None means every type it can give, a type it cannot give is refused; frames keep their recorded size.
    ``renderer``: tiny (default: CPU, the same images everywhere), egl, gl or auto; ``size``: image width in pixels.
    A question a scene cannot give is tried in the next scene; those no scene gives are counted in
    ``BuildResult.skipped``. Deterministic: the same arguments give the same file and images (same renderer and
    device).
    """
    if n < 1:
        raise ValueError(f"--n must be at least 1, got {n}")
    if not 16 <= int(size) <= 4096:
        raise ValueError(f"--size must be between 16 and 4096 pixels, got {size}")
    if seed < 0:
        raise ValueError(f"--seed must be ≥ 0, got {seed}")
    types = tuple(types) if types is not None else None
    for t in types or ():
        if t not in QUESTION_TYPES:
            raise ValueError(f"unknown question type {t!r} (expected one of {', '.join(QUESTION_TYPES)})")
    out = Path(out)
    image_dir = out.parent / f"{out.stem}_images"
    scenes, n_scenes, generate, types = _sources(lambda ts: n * sum(len(TYPE_FORMATS[t]) for t in ts), types,
                                                 seed=seed, trajectory=trajectory, mesh=mesh,
                                                 max_keyframes=max_keyframes, renderer=renderer, size=size,
                                                 camera=camera)
    variants = [(t, f) for t in types for f in TYPE_FORMATS[t]]
    items = [(t, f, k) for k in range(n) for t, f in variants]
    queues: list[list[int]] = [[] for _ in range(n_scenes)]
    for i in range(len(items)):
        queues[i % n_scenes].append(i)
    done: dict[int, dict] = {}
    skipped: dict[str, int] = {}
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(items), desc="questions", unit="q", file=sys.stderr)
    try:
        for s, scene in enumerate(scenes):
            for i in queues[s]:
                typ, fmt, k = items[i]
                rng = np.random.default_rng([int(seed), QUESTION_TYPES.index(typ), TYPE_FORMATS[typ].index(fmt),
                                             int(k), s])
                draft = generate(scene, typ, fmt, rng)
                if draft is None:
                    if s + 1 < n_scenes:
                        queues[s + 1].append(i)
                    else:
                        key = f"{typ}/{fmt}"
                        skipped[key] = skipped.get(key, 0) + 1
                        if bar is not None:
                            bar.update(1)
                    continue
                qid = f"q-{seed}-{typ}-{FMT_SHORT[fmt]}-{k:03d}"
                done[i] = question_dict(draft, qid, typ, scene, seed, image_dir)
                if bar is not None:
                    bar.update(1)
    finally:
        if bar is not None:
            bar.close()
        close = getattr(scenes, "close", None)
        if close is not None:
            close()
    records = [done[i] for i in sorted(done)]
    if not records:
        hint = ("try other --types or a scene with objects" if generate is generate_in_scene else
                "no two recorded frames moved (0.1 m or 5°, at most 3 m and 75°) and share their view, or no pixel "
                "was fit to mark")
        raise ValueError("no question could be generated (" + ", ".join(f"{k}: {v}" for k, v in skipped.items())
                         + f"); {hint}")
    path = save_questions(records, out)
    from .io import load_questions

    return BuildResult(path=path, questions=load_questions(path), skipped=skipped)
