"""Procedural tasks: random reachable goals in seeded scenes, with an exact integer-count ground truth.

Every task's goal is *defined* as the replay of a random ground-truth sequence of whole unit steps from the start
pose (``goal = gt.to_poses(start)[-1]``), so replaying ``task.gt`` lands on ``task.goal_pose`` exactly. The worlds
draw them (:meth:`World.sample_task <spatialact.envs.world.World.sample_task>`) where they make a fair task: inside
the room / above the table, not inside furniture, looking at something, and (navigation) sharing at least
``min_overlap`` of the view with the start (checked by reprojecting a small depth render, both ways). Navigation
tasks need a net translation of at least 2 unit steps (docs/scoring.md), and their ground-truth path and straight
start→goal segment must be clear of the scene for the camera sphere (the walls of CameraNav,
:func:`spatialact.envs.collision_problem`): a draft that is not is dropped, counted, and another drawn. Poses are C2W
(4, 4), metres, world +Z up.
"""

from __future__ import annotations

import numpy as np

from ..action_space import StepSizes
from ..envs.collision import COLLIDES
from ..envs.registry import make_env
from ..tasks import Task
from ..tasks.tags import motion_tags

__all__ = ["procedural_tasks", "TASK_VARIANTS"]

#: The task variants each kind's world draws (``procedural_tasks(variant=...)``; ``mixed`` takes turns).
TASK_VARIANTS = {"nav": ("reach",), "manip": ("reach", "pick_place", "push"), "hand": ("reach", "grab_move")}


def procedural_tasks(kind: str, n: int, seed: int = 0, *, n_steps=(1, 3), variant: str = "mixed",
                     tasks_per_scene: int = 4, sizes: StepSizes | None = None, generator: str | None = None,
                     renderer: str = "tiny", skipped: dict | None = None) -> list[Task]:
    """``n`` tasks of a kind (``nav``, ``manip``, ``hand``), deterministic in ``seed``.

    ``task.scene = {"generator": ..., "seed": ...}`` rebuilds the exact scene (``make_env``/``reset`` do);
    consecutive groups of ``tasks_per_scene`` tasks share a scene. ``n_steps`` (lo, hi) bounds the ground-truth
    length of reach tasks; ``variant`` is ``reach``, an object task (``pick_place`` or ``push`` for manip,
    ``grab_move`` for hand; success is an object-state test), or ``mixed`` (every third task an object task, the
    object variants taking turns). ``sizes`` defaults to
    ``StepSizes.for_kind(kind)``. ``skipped``: a dict that gets the drafts dropped, by reason (navigation: those
    whose path the scene blocks, under :data:`~spatialact.envs.collision.COLLIDES`); the tasks returned are the
    same whether or not it is given.
    """
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
    world = env.world
    gen = generator or world.default_generator
    rng = np.random.default_rng([int(seed), 7])
    tasks: list[Task] = []
    try:
        for i in range(n):
            if i % tasks_per_scene == 0:
                world.load_scene({"generator": gen, "seed": int(rng.integers(2 ** 31 - 1))})
            else:
                world.reset_scene_state()
            v = variant
            if v == "mixed":
                objects = TASK_VARIANTS[kind][1:]
                v = objects[(i // 3) % len(objects)] if (objects and i % 3 == 2) else "reach"
            task = world.sample_task(rng, n_steps=(lo, hi), sizes=sizes, cap=env.cap, variant=v)
            # the same binned distance / turn categories as trajectory tasks; exact values in meta
            motion, exact = motion_tags(kind, task.start_pose, task.goal_pose)
            tasks.append(task.with_(id=f"{kind}-{seed}-{i:04d}", tags={**task.tags, **motion},
                                    meta={**task.meta, **exact, "index": i}))
    finally:
        drops = getattr(world, "collision_drops", 0)
        env.close()
    if skipped is not None and drops:
        skipped[COLLIDES] = skipped.get(COLLIDES, 0) + int(drops)
    return tasks
