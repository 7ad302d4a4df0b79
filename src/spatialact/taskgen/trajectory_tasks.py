"""The trajectory → task pipeline in one function (``spatialact tasks from-trajectory``; docs/trajectories.md).

:func:`build_trajectory_tasks` loads the trajectory, builds start/goal pairs with exact ground truth
(:func:`spatialact.tasks.trajectory_pairs.pairs_from_trajectory`, which writes the start / goal / example frames as
PNGs beside the task file), gives every task the replay scene it runs in closed-loop and drops the pairs the
simulator cannot run (:func:`~spatialact.taskgen.replay_scenes.attach_replay_scenes`; a game recording's tasks get
their level instead, and drop what the game does not execute:
:func:`~spatialact.taskgen.game_scenes.attach_game_scenes`), removes the PNGs of dropped pairs, and writes the task
file. A trajectory that gives no task raises :class:`NoTasks`, one line saying why (the
distance range asked for and the path's span, or the reasons every pair was dropped), and leaves no folder it made
behind. Poses are the trajectory's C2W (4, 4), metres.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..action_space import StepSizes
from ..tasks import Task, save_tasks
from ..tasks.trajectory_pairs import motion_range, pairs_from_trajectory, task_kind

__all__ = ["build_trajectory_tasks", "TrajectoryTasks", "NoTasks", "image_dir_for"]


class NoTasks(ValueError):
    """A trajectory that gives no task: the message is one line saying why."""


@dataclass(frozen=True)
class TrajectoryTasks:
    """What :func:`build_trajectory_tasks` wrote: the ``tasks``, the task file ``path``, and ``skipped``
    ({reason: number of pairs dropped})."""

    tasks: list
    path: Path
    skipped: dict = field(default_factory=dict)


def image_dir_for(out) -> Path:
    """The folder the PNGs of a task file go to: ``<out stem>_images/`` beside it."""
    out = Path(out)
    return out.parent / f"{out.stem}_images"


def build_trajectory_tasks(traj_path, out, *, format: str | None = None, episode: int | None = None,
                           entity: str | None = None, camera: str | None = None, n: int = 10, seed: int = 0,
                           min_motion: float | None = None, max_motion: float | None = None,
                           max_seconds: float | None = None, kind: str | None = None,
                           answer_format: str = "stepped", images: bool = True, scene: bool = True,
                           mesh: str | None = None, extrinsics=None, wad=None) -> TrajectoryTasks:
    """Build up to ``n`` tasks from the trajectory at ``traj_path`` and write them to the task file ``out``.

    ``format``, ``episode``, ``entity``, ``camera``: how to read the trajectory (``load_trajectory``). ``n``,
    ``seed``, ``min_motion`` / ``max_motion`` (metres), ``max_seconds``, ``kind``, ``answer_format``: the pairs
    (:func:`~spatialact.tasks.trajectory_pairs.pairs_from_trajectory`). ``images``: write the frames as PNGs
    (:func:`image_dir_for`). ``scene``: give each task its replay scene (needs the simulator) — ``mesh``: a mesh
    file for a camera path (absolute path), ``extrinsics``: DROID's exterior camera [x, y, z, rx, ry, rz] overriding
    the recorded one, ``wad``: a game recording's WAD file (default: the bundled WAD it names; its SHA-256 must be
    the recording's). Deterministic in ``seed``. Raises :class:`NoTasks` when no task is left."""
    from ..trajectories import load_trajectory

    opts = {} if camera is None else {"camera": camera}
    traj = load_trajectory(traj_path, format, episode=episode, entity=entity, **opts)
    game = traj.meta.get("source") == "game"
    if game and scene and (mesh is not None or extrinsics is not None):
        raise ValueError(f"{traj_path}: a game recording's tasks run in their own level; a mesh scene or camera "
                         "extrinsics do not apply")
    if wad is not None and not game:
        raise ValueError(f"{traj_path}: a WAD applies to game recordings only (this is a {traj.meta.get('source')} "
                         "trajectory)")
    if game and scene:  # the recording's WAD, checked before any file is written
        from .game_scenes import recorded_wad

        wad = recorded_wad(traj, wad)
    image_dir = image_dir_for(out) if images else None
    parent = Path(out).parent
    made = [d for d in (parent, *parent.parents) if not d.exists()]  # folders a refusal must not leave
    before = _listing(image_dir)
    try:
        tasks = pairs_from_trajectory(traj, n=n, seed=seed, min_motion=min_motion, max_motion=max_motion,
                                      kind=kind, answer_format=answer_format, image_dir=image_dir,
                                      max_seconds=max_seconds)
    except BaseException:  # a frame that does not decode, an interrupt: no half image folder stays
        _remove_new_images(image_dir, before)
        _remove_made(made)
        raise
    if not tasks:
        raise NoTasks(_no_pair(traj_path, traj, kind, min_motion, max_motion))
    skipped: dict = {}
    if scene:
        built = tasks
        tasks, skipped = _with_game_scenes(tasks, traj, wad) if game else _with_replay_scenes(tasks, traj, mesh,
                                                                                                extrinsics)
        _remove_unused_images(built, tasks, image_dir)
        if not tasks:
            _remove_made(made)
            reasons = "; ".join(f"{k} {why}" for why, k in skipped.items())
            raise NoTasks(f"{traj_path}: no task: each of the {len(built)} built was skipped ({reasons})")
    return TrajectoryTasks(tasks=tasks, path=save_tasks(tasks, out), skipped=skipped)


def _no_pair(traj_path, traj, kind, min_motion, max_motion) -> str:
    """Why no pair qualified: the distance range asked for, against the path's span."""
    k = task_kind(traj, kind)
    lo, hi = motion_range(k, StepSizes.for_kind(k), min_motion, max_motion)
    P = traj.positions
    span = float(np.linalg.norm(P.max(0) - P.min(0))) if len(P) else 0.0
    return (f"{traj_path}: no task: no pair of its {len(P)} frames is {lo:g}–{hi:g} m apart with a ground truth of "
            f"at least one step (the path spans {span:.3g} m; see --min-motion, --max-motion, --max-seconds)")


def _with_replay_scenes(tasks, traj, mesh, extrinsics):
    try:
        from .replay_scenes import attach_replay_scenes
    except ImportError as e:
        raise ValueError(f"replay scenes need the simulator (pip install 'spatialact[sim]'), or pass --no-scene: "
                         f"{e}") from None
    return attach_replay_scenes(tasks, traj, mesh=mesh, extrinsics=extrinsics)


def _with_game_scenes(tasks, traj, wad):
    from ..envs.doom import GameUnavailable

    try:
        from .game_scenes import attach_game_scenes

        return attach_game_scenes(tasks, traj, wad=wad)
    except GameUnavailable as e:
        raise ValueError(f"{e} (or pass --no-scene: the tasks then run one-shot only)") from None


def _images(t: Task) -> set:
    return {p for p in (t.start_image, t.goal_image, (t.example or {}).get("start_image")) if p}


def _remove_unused_images(built: list, kept: list, image_dir) -> None:
    """The PNGs written for tasks that were then skipped, and the image folder when nothing is left in it."""
    keep = set().union(*map(_images, kept)) if kept else set()
    for t in built:
        for p in _images(t) - keep:
            Path(p).unlink(missing_ok=True)
    if image_dir is not None and Path(image_dir).is_dir() and not any(Path(image_dir).iterdir()):
        Path(image_dir).rmdir()


def _listing(image_dir) -> set | None:
    """The names in the image folder now; None when it does not exist."""
    if image_dir is None or not Path(image_dir).is_dir():
        return None
    return {p.name for p in Path(image_dir).iterdir()}


def _remove_new_images(image_dir, before: set | None) -> None:
    """Remove what a failed build wrote into the image folder (the names not in ``before``), and the folder itself
    when the build made it."""
    now = _listing(image_dir)
    if now is None:
        return
    for name in now - (before or set()):
        Path(image_dir, name).unlink(missing_ok=True)
    if before is None and not any(Path(image_dir).iterdir()):
        Path(image_dir).rmdir()


def _remove_made(made: list) -> None:
    """The folders this build made (deepest first), where they are empty."""
    for d in made:
        if d.is_dir() and not any(d.iterdir()):
            d.rmdir()
