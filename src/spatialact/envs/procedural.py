"""Procedural tasks: random reachable goals in seeded scenes, with an exact integer-count ground truth.

Every task's goal is *defined* as the replay of a random ground-truth sequence of whole unit steps from the start
pose (``goal = gt.to_poses(start)[-1]``), so replaying ``task.gt`` lands on ``task.goal_pose`` exactly. Goals are
kept where they make a fair task: inside the room / above the table, not inside furniture, looking at something,
and (navigation) sharing at least ``min_overlap`` of the view with the start (checked by reprojecting a small depth
render, both ways). Navigation tasks need a net translation of at least 2 unit steps (SPEC §4.1).
"""

from __future__ import annotations

import numpy as np

from ..action_space import StepSizes
from ..tasks import Task
from ..tasks.tags import motion_tags
from .rendering import CameraSpec

__all__ = ["procedural_tasks", "sample_signed_counts", "view_overlap", "TASK_VARIANTS"]

TASK_VARIANTS = {"nav": ("reach",), "manip": ("reach", "pick_place", "push"), "hand": ("reach", "grab_move")}


def sample_signed_counts(rng: np.random.Generator, n_steps: int, axis_weights, max_counts, cap: int = 10,
                         n_axes_p=(0.5, 0.35, 0.15)) -> np.ndarray:
    """(n_steps, 6) signed integer counts (truck, pedestal, dolly, tilt, pan, roll); each step moves 1–3 axes."""
    w = np.asarray(axis_weights, dtype=float)
    w = w / w.sum()
    out = np.zeros((n_steps, 6), dtype=np.int64)
    for k in range(n_steps):
        m = int(rng.choice([1, 2, 3], p=n_axes_p))
        axes = rng.choice(6, size=m, replace=False, p=w)
        for a in axes:
            n = int(rng.integers(1, min(cap, int(max_counts[a])) + 1))
            out[k, a] = n if rng.random() < 0.5 else -n
    return out


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


def procedural_tasks(kind: str, n: int, seed: int = 0, *, n_steps=(1, 3), variant: str = "mixed",
                     tasks_per_scene: int = 4, sizes: StepSizes | None = None, generator: str | None = None,
                     renderer: str = "tiny") -> list[Task]:
    """``n`` tasks of a kind (``nav``, ``manip``, ``hand``), deterministic in ``seed``.

    ``task.scene = {"generator": ..., "seed": ...}`` rebuilds the exact scene (``make_env``/``reset`` do);
    consecutive groups of ``tasks_per_scene`` tasks share a scene. ``n_steps`` (lo, hi) bounds the ground-truth
    length of reach tasks; ``variant`` is ``reach``, an object task (``pick_place`` or ``push`` for manip,
    ``grab_move`` for hand; success is an object-state test), or ``mixed`` (every third task an object task, the
    object variants taking turns). ``sizes`` defaults to
    ``StepSizes.for_kind(kind)``.
    """
    from . import make_env

    if kind not in TASK_VARIANTS:
        raise ValueError(f"kind must be one of {tuple(TASK_VARIANTS)}, got {kind!r}")
    allowed = TASK_VARIANTS[kind] + ("mixed",)
    if variant not in allowed:
        raise ValueError(f"variant for {kind!r} tasks must be one of {allowed}, got {variant!r}")
    if n < 0 or tasks_per_scene < 1:
        raise ValueError("n must be ≥ 0 and tasks_per_scene ≥ 1")
    lo, hi = int(n_steps[0]), int(n_steps[1])
    if not 1 <= lo <= hi:
        raise ValueError(f"n_steps must be (lo, hi) with 1 ≤ lo ≤ hi, got {n_steps!r}")
    sizes = sizes or StepSizes.for_kind(kind)
    env = make_env(kind, width=32, height=32, renderer=renderer, sizes=sizes, wrap=False)
    base = env.unwrapped
    gen = generator or base.default_generator
    rng = np.random.default_rng([int(seed), 7])
    tasks: list[Task] = []
    try:
        for i in range(n):
            if i % tasks_per_scene == 0:
                base._ensure_scene({"generator": gen, "seed": int(rng.integers(2 ** 31 - 1))})
            else:
                base._reset_scene_state()
            v = variant
            if v == "mixed":
                objects = TASK_VARIANTS[kind][1:]
                v = objects[(i // 3) % len(objects)] if (objects and i % 3 == 2) else "reach"
            task = base.sample_task(rng, n_steps=(lo, hi), sizes=sizes, variant=v)
            # the same binned distance / turn categories as trajectory tasks; exact values in meta
            motion, exact = motion_tags(kind, task.start_pose, task.goal_pose)
            tasks.append(task.with_(id=f"{kind}-{seed}-{i:04d}", tags={**task.tags, **motion},
                                    meta={**task.meta, **exact, "index": i}))
    finally:
        env.close()
    return tasks
