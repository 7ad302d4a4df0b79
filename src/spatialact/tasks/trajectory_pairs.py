"""Tasks from a trajectory (docs/trajectories.md): start/goal frame pairs with exact ground truth.

A task is two frames ``i < j`` of one trajectory whose positions lie between ``min_motion`` and ``max_motion``
metres apart (as the paper samples image pairs). Its ground truth is :func:`extract_actions` (metric mode) of the
frames ``i..j``; replayed from the start pose it lands on the goal pose within the quantisation bound
``((√3/2)·u_t, 1.5·u_r)``, which the builder checks fits inside the task's success thresholds. The example (the
paper's three-image prompt) is a third frame ``e`` of the same trajectory, with the sequence from ``e`` to the
task's start. When the trajectory has decodable frames and ``image_dir`` is given, the start, goal and example
frames are written there as PNGs; otherwise the image fields are null (rendered on demand or absent).

Navigation tasks also satisfy ``‖g‖ ≥ 2·u_t`` for the whole motion (docs/scoring.md): "Stay" cannot score well on a pure
rotation.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..action_space import ActionSequence, StepSizes
from .task import Task, default_success
from .tags import motion_tags, steps_tag
from .extraction import extract_actions, quantisation_bound, replay
from ..trajectories.trajectory import Trajectory
from ..vocab import ANSWER_FORMATS

__all__ = ["pairs_from_trajectory", "default_motion_range", "motion_range", "task_kind", "check_bound_fits"]


def default_motion_range(kind: str, sizes: StepSizes) -> tuple[float, float]:
    """Default (min, max) start-to-goal distance in metres: nav 0.25–2 m (at least 2·u_t), manip/hand 5–40 cm."""
    if kind == "nav":
        return max(0.25, 2 * sizes.translation), 2.0
    return 0.05, 0.40


def motion_range(kind: str, sizes: StepSizes, min_motion: float | None = None,
                 max_motion: float | None = None) -> tuple[float, float]:
    """The (min, max) start-to-goal distance in metres asked for: :func:`default_motion_range` with ``min_motion`` /
    ``max_motion`` in place of either when given (navigation further keeps at least 2·u_t when sampling)."""
    lo, hi = default_motion_range(kind, sizes)
    return (lo if min_motion is None else float(min_motion)), (hi if max_motion is None else float(max_motion))


def task_kind(traj: Trajectory, kind: str | None = None) -> str:
    """The kind of the tasks built from ``traj``: ``kind`` when given, else the trajectory's (DROID → manip, EgoDex
    hands → hand), else ``nav``."""
    return kind or traj.meta.get("kind") or "nav"


def check_bound_fits(sizes: StepSizes, success: dict) -> None:
    """Raise ValueError when the quantisation bound of ``sizes`` does not fit inside the success thresholds."""
    bt, br = quantisation_bound(sizes)
    if bt > success["position"] or br > success["rotation"]:
        raise ValueError(f"unit steps {sizes.translation:g} m / {sizes.rotation:g} rad are too coarse for the success "
                         f"thresholds {success['position']:g} m / {success['rotation']:g} rad: the ground truth is only "
                         f"exact to {bt:.4g} m / {br:.4g} rad")


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.:+-]+", "_", s).strip("_") or "traj"


def _id_prefix(traj: Trajectory) -> str:
    src = traj.meta.get("source", "traj")
    stem = Path(str(traj.meta.get("path", "traj"))).stem
    ep = traj.meta.get("episode")
    ent = traj.meta.get("entity")
    parts = [src, stem] + ([f"ep{ep}"] if ep is not None else []) + ([ent] if ent and src == "egodex" else [])
    return _slug("-".join(str(p) for p in parts))


def _sample_pairs(P: np.ndarray, lo: float, hi: float, want: int, rng: np.random.Generator,
                  min_gap: int, max_gap: int | None) -> list[tuple[int, int]]:
    """Distinct (i, j), i < j, with ``lo ≤ ‖p_j − p_i‖ ≤ hi``: all pairs for short trajectories, random draws
    (vectorised) for long ones; the order is a seeded shuffle."""
    n = len(P)
    if n < 2:
        return []
    if n <= 2000:
        i, j = np.triu_indices(n, k=max(1, min_gap))
    else:
        m = 400_000
        i = rng.integers(0, n, m)
        j = rng.integers(0, n, m)
        i, j = np.minimum(i, j), np.maximum(i, j)
        keep = j - i >= max(1, min_gap)
        i, j = i[keep], j[keep]
    if max_gap is not None:
        keep = j - i <= max_gap
        i, j = i[keep], j[keep]
    d = np.linalg.norm(P[j] - P[i], axis=1)
    ok = (d >= lo) & (d <= hi)
    i, j = i[ok], j[ok]
    if n > 2000:  # random draws repeat: sort and deduplicate (as one int64 key per pair, the same order)
        key = np.unique(i * n + j)
        i, j = key // n, key % n
    pairs = np.stack([i, j], axis=1)  # triu_indices: already distinct and in lexicographic order
    order = rng.permutation(len(pairs))
    return [(int(a), int(b)) for a, b in pairs[order[: max(want * 4, want + 16)]]]


def pairs_from_trajectory(traj: Trajectory, n: int = 10, seed: int = 0, min_motion: float | None = None,
                          max_motion: float | None = None, *, kind: str | None = None, sizes: StepSizes | None = None,
                          success: dict | None = None, answer_format: str = "stepped",
                          image_dir: str | Path | None = None, example: bool = True, max_seconds: float | None = None,
                          source: str | None = None, id_prefix: str | None = None) -> list[Task]:
    """Sample up to ``n`` tasks from one trajectory; deterministic in ``seed``.

    ``kind``: ``nav`` / ``manip`` / ``hand`` (default: the trajectory's, e.g. DROID → manip, EgoDex hands → hand,
    cameras → nav). ``sizes``: unit steps (default: the kind's). ``min_motion`` / ``max_motion``: start-to-goal
    distance in metres (defaults: :func:`default_motion_range`). ``answer_format="flat"`` keeps only pairs whose
    ground truth is one step. ``max_seconds``: the longest start-to-goal time. ``image_dir``: where to write the
    start / goal / example PNGs (only when the trajectory's frames decode). Ground truth is in the moving body's
    frame (the paper's), so ``Task.gt_poses()`` replays it exactly. Returns fewer than ``n`` tasks when
    the trajectory has fewer qualifying pairs.
    """
    kind = task_kind(traj, kind)
    sizes = sizes or StepSizes.for_kind(kind)
    success = dict(success or default_success(kind))
    check_bound_fits(sizes, success)
    lo, hi = motion_range(kind, sizes, min_motion, max_motion)
    if kind == "nav":
        lo = max(lo, 2 * sizes.translation)  # ‖g‖ ≥ 2·u_t for navigation
    if not 0 <= lo <= hi:
        raise ValueError(f"need 0 ≤ min_motion ≤ max_motion, got {lo:g} and {hi:g}")
    if answer_format not in ANSWER_FORMATS:
        raise ValueError(f"answer_format must be flat, stepped or vector, got {answer_format!r}")
    rng = np.random.default_rng([int(seed), 4])
    P = traj.positions
    max_gap = None if max_seconds is None else max(1, int(round(max_seconds * traj.fps)))
    pairs = _sample_pairs(P, lo, hi, n, rng, 1, max_gap)
    prefix = id_prefix or _id_prefix(traj)
    src = source or str(traj.meta.get("source", "trajectory"))
    bt, _ = quantisation_bound(sizes)
    use_grip = kind != "nav" and traj.gripper is not None

    base = traj if use_grip else traj.without_gripper()

    def sub(a: int, b: int) -> Trajectory:
        return base.select(np.arange(a, b + 1) if a <= b else np.arange(a, b - 1, -1))

    chosen: list[tuple[int, int, ActionSequence, int | None, ActionSequence | None]] = []
    for i, j in pairs:
        if len(chosen) >= n:
            break
        ex = extract_actions(sub(i, j), sizes=sizes, mode="metric")
        if len(ex) == 0 or (answer_format == "flat" and len(ex) != 1):
            continue
        end = replay(ex, traj.poses[i])[-1]
        if kind == "nav" and np.linalg.norm(end[:3, 3] - traj.poses[i, :3, 3]) < 2 * sizes.translation:
            continue
        e_idx, e_seq = None, None
        if example:
            x = P - P[i]
            d = np.sqrt(np.add.reduce(x * x, axis=1))  # np.linalg.norm(x, axis=1), without its overhead
            ok = (d >= lo) & (d <= hi)
            ok[i:j + 1] = False  # not inside the task's own segment
            cand = np.flatnonzero(ok)
            if len(cand):
                e_idx = int(rng.choice(cand))
                e_seq = extract_actions(sub(e_idx, i), sizes=sizes, mode="metric").sequence
        chosen.append((i, j, ex, e_idx, e_seq))

    images: dict[int, str] = {}
    if image_dir is not None and chosen and traj.images is not None and traj.has_frames:
        from ..trajectories.video import write_png

        image_dir = Path(image_dir)
        image_dir.mkdir(parents=True, exist_ok=True)
        need = sorted({k for i, j, _, e, _ in chosen for k in (i, j, e) if k is not None})
        for k, rgb in zip(need, traj.frames(need)):
            images[k] = str((image_dir / f"{prefix}-f{k:06d}.png").resolve())
            write_png(images[k], rgb)

    tasks = []
    for i, j, ex, e_idx, e_seq in chosen:
        seq = ex.sequence
        # tags are categories for the per-tag tables; the exact distance and turn go to meta
        motion, exact = motion_tags(kind, traj.poses[i], traj.poses[j])
        ex_rec = None
        if e_seq is not None:
            ex_rec = {"start_pose": traj.poses[e_idx].tolist(), "start_image": images.get(e_idx),
                      "sequence": e_seq.to_dict()}
        tasks.append(Task(
            id=f"{prefix}-{i:06d}-{j:06d}", kind=kind, source=src, start_pose=traj.poses[i], goal_pose=traj.poses[j],
            gt=seq, sizes=sizes, answer_format=answer_format, success=success, scene=None,
            start_image=images.get(i), goal_image=images.get(j), example=ex_rec, instruction=traj.instruction,
            tags={**motion, "steps": steps_tag(len(seq)), "metric": traj.metric},
            meta={**exact, "trajectory": str(traj.meta.get("path")), "start_frame": i, "goal_frame": j,
                  "example_frame": e_idx, "keyframes": [i + int(k) for k in ex.keyframes],
                  "episode": traj.meta.get("episode"), "entity": traj.meta.get("entity"),
                  "fps": traj.fps, "bound_m": bt,
                  "gt_position_error": float(ex.position_errors[-1]),
                  "gt_rotation_error": float(ex.rotation_errors[-1])},
        ))
    return tasks
