"""Replay scenes for trajectory tasks: the task builder's last step, and which pairs it drops (docs/trajectories.md).

Each task built from a trajectory gets the replay scene it runs in closed-loop
(:func:`~spatialact.envs.replay_world.replay_scene_for`). The policy of what is dropped, never clamped: a DROID pair
whose start or goal the simulated Panda cannot reach (:func:`~spatialact.envs.replay_world.check_droid_reachable`,
seeded with the recorded joint positions), a DROID pair whose ground truth the simulated Panda, executing it from the
start as the oracle does, does not follow to the goal, and a camera-path pair whose ground-truth path or straight
start→goal segment its replay scene (the mesh, or the room box) blocks for CameraNav's camera sphere
(:func:`~spatialact.envs.collision.collision_problem`: the walls would stop the oracle short). Poses are the
trajectory's C2W (4, 4), metres.
"""

from __future__ import annotations

from dataclasses import replace

from ..envs.collision import COLLIDES, CollisionChecker
from ..envs.executor import execute_sequence
from ..envs.registry import make_env
from ..envs.replay_world import check_droid_reachable, droid_joint_positions, replay_scene_for

__all__ = ["attach_replay_scenes", "UNREACHABLE", "NOT_FOLLOWED"]

#: The reasons a pair is dropped (the keys of the skipped counts).
UNREACHABLE = "start or goal out of the simulated Panda's reach"
NOT_FOLLOWED = "the simulated Panda does not follow the ground truth to the goal"


def attach_replay_scenes(tasks, traj, *, mesh: str | None = None, extrinsics=None, table: bool = True):
    """The builder's last step (docs/trajectories.md): each task of ``traj`` (from ``pairs_from_trajectory``, whose
    ``meta["keyframes"]`` are the absolute frame indices of its ground-truth keyframes) gets its replay scene
    (:func:`replay_scene_for`), so that it runs closed-loop. DROID tasks whose start or goal the simulated Panda
    cannot reach (:func:`check_droid_reachable`, seeded with the recorded joint positions) are dropped and counted,
    never clamped; so are DROID tasks whose ground truth, executed in the simulated Panda from the start (what the
    oracle does), does not end within the task's success thresholds: each pose reachable on its own is not enough
    when the arm, following IK from its current joints, cannot track the path between them (a gripper pointing up).
    Camera-path tasks whose ground-truth path or straight start→goal segment the replay scene blocks for the camera
    sphere are dropped and counted under :data:`COLLIDES`. Returns (tasks with scenes, {reason: number of tasks
    skipped})."""
    out, skipped = [], {}
    src = traj.meta.get("source")
    seeds = droid_joint_positions(traj) if src == "droid" else None
    env = checker = None
    try:
        for t in tasks:
            kf = (t.meta or {}).get("keyframes")
            if not kf:
                raise ValueError(f"task {t.id!r}: meta.keyframes is missing (build it with pairs_from_trajectory)")
            if src == "droid":
                ends = [kf[0], kf[-1]]
                ok, pe, _ = check_droid_reachable(traj.poses[ends], None if seeds is None else seeds[ends])
                if not ok.all():
                    why = UNREACHABLE
                    skipped[why] = skipped.get(why, 0) + 1
                    continue
            t = replace(t, scene=replay_scene_for(traj, kf, mesh=mesh, extrinsics=extrinsics, table=table))
            if src == "droid":
                if env is None:
                    env = make_env("manip", renderer="tiny", width=32, height=32, wrap=False)
                res = execute_sequence(env, t.gt, t, render=False)
                if not res.success:
                    why = NOT_FOLLOWED
                    skipped[why] = skipped.get(why, 0) + 1
                    continue
            if t.scene.get("source") == "camera_path":
                if checker is None:
                    checker = CollisionChecker()
                if checker.problem(t) is not None:
                    skipped[COLLIDES] = skipped.get(COLLIDES, 0) + 1
                    continue
            out.append(t)
    finally:
        if env is not None:
            env.close()
        if checker is not None:
            checker.close()
    return out, skipped
