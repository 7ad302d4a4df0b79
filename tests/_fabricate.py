"""Test helpers: small tasks and fabricated run directories in the exact real layout (written with RunStore).

Poses are (4, 4) float64 C2W (metres; world +Z up; camera OpenCV axes).
"""

from __future__ import annotations

import math

import numpy as np

from spatialact import geometry
from spatialact.action_space import ActionSequence, StepSizes
from spatialact.tasks import Task


def look_pose(position, yaw: float = 0.0) -> np.ndarray:
    """A camera at ``position`` looking horizontally along world +X rotated by ``yaw`` about +Z (level, no roll).

    Camera +Z (forward) = (cos yaw, sin yaw, 0), +X (right) = (sin yaw, −cos yaw, 0), +Y (down) = (0, 0, −1).
    """
    fwd = np.array([math.cos(yaw), math.sin(yaw), 0.0])
    right = np.array([math.sin(yaw), -math.cos(yaw), 0.0])
    down = np.array([0.0, 0.0, -1.0])
    return geometry.make_pose(np.stack([right, down, fwd], axis=1), np.asarray(position, dtype=np.float64))


def make_task(task_id: str = "t0", kind: str = "nav", signed=((-1, -4, 3, 0, -1, 0),), answer_format: str = "stepped",
              grippers=None, tags=None, scene=None, start=None, **kw) -> Task:
    """A task whose ground truth is the given signed counts (K, 6) from ``start`` (default: at (0, 0, 1.5))."""
    sizes = StepSizes.for_kind(kind)
    gt = ActionSequence.from_signed_counts(np.asarray(signed), sizes, gripper=grippers)
    T0 = look_pose([0.0, 0.0, 1.5]) if start is None else start
    goal = gt.to_poses(T0)[-1]
    return Task(id=task_id, kind=kind, source="test", start_pose=T0, goal_pose=goal, gt=gt, sizes=sizes,
                answer_format=answer_format, tags=dict(tags or {"difficulty": "easy"}), scene=scene, **kw)


def checker_image(h: int = 32, w: int = 48, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)


def image_tasks(folder, n: int, goal_seed: int = 100, **kw) -> list:
    """``n`` scene-less navigation tasks (:func:`make_task`, ``kw`` passed on) whose start and goal images are random
    PNGs written into ``folder`` (``start{i}.png`` / ``goal{i}.png``, seeds ``i`` and ``goal_seed + i``)."""
    from pathlib import Path

    from PIL import Image

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tasks = []
    for i in range(n):
        s, g = folder / f"start{i}.png", folder / f"goal{i}.png"
        Image.fromarray(checker_image(seed=i)).save(s)
        Image.fromarray(checker_image(seed=goal_seed + i)).save(g)
        tasks.append(make_task(f"t{i}", start_image=str(s), goal_image=str(g), **kw))
    return tasks


def fake_record(task: Task, agent: str = "oracle", model=None, score: float = 1.0, response: str = "{}",
                mode: str = "one-shot", env: str = "pybullet", seed: int = 0, error=None, rng=None) -> dict:
    """One result record in the layout of docs/interfaces (what the runner writes)."""
    rng = rng or np.random.default_rng(0)
    gt_poses = task.gt_poses()
    pred_poses = gt_poses.copy()
    pred_poses[1:, :3, 3] += rng.normal(0, 0.05 * (1 - score) + 1e-3, size=(len(gt_poses) - 1, 3))
    fpe = float(np.linalg.norm(pred_poses[-1, :3, 3] - task.goal_pose[:3, 3]))
    d0 = float(np.linalg.norm(task.goal_pose[:3, 3] - task.start_pose[:3, 3]))
    return {
        "key": "|".join([task.id, agent, env, mode, str(seed)]),
        "task_id": task.id, "kind": task.kind, "source": task.source, "tags": dict(task.tags),
        "agent": agent, "model": model, "env": env, "mode": mode, "seed": seed,
        "score": float(score), "s_d": float(score), "s_theta": float(score), "s_step": float(score),
        "s_rot": 1.0, "s_grip": None, "per_step": [{"s_step": float(score)}], "ok": True, "reason": None,
        "repairs": [], "n_repairs": 0, "response": response, "pred": task.gt.to_dict(),
        "gt_poses": gt_poses.tolist(), "pred_poses": pred_poses.tolist(),
        "final_position_error": fpe, "final_rotation_error": 0.01, "success": fpe <= 0.2,
        "path_length": d0, "spl": 1.0 if fpe <= 0.2 else 0.0, "d0": d0, "n_steps": len(task.gt),
        "latency_s": 0.5, "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "cost_usd": 0.002} if model else
        {"prompt_tokens": 0, "completion_tokens": 0},
        "frames": {}, "provenance": {}, "error": error,
    }


def fabricate_run(run_dir, agent: str = "oracle", model=None, n: int = 6, seed: int = 0, responses=None,
                  with_frames: bool = True, scores=None):
    """A run directory with ``n`` episodes written through RunStore (config.json, results.jsonl, frames/)."""
    from spatialact.evaluation.results import RunStore, provenance

    rng = np.random.default_rng(seed)
    config = {"agent": agent, "model": model, "mode": "one-shot", "env": "pybullet", "seed": seed,
              "tasks": "fabricated.jsonl"}
    store = RunStore(run_dir, config, provenance(agent={"agent": agent, "model": model}, seed=seed))
    kinds = ["nav", "manip", "hand"]
    for i in range(n):
        kind = kinds[i % 3]
        signed = rng.integers(-4, 5, size=(1 + i % 2, 6))
        signed[:, 2] = 3  # always some forward motion
        grip = [i % 2] * len(signed) if kind != "nav" else None
        task = make_task(f"task-{i:03d}", kind=kind, signed=signed, grippers=grip,
                         tags={"difficulty": ["easy", "hard"][i % 2], "viewpoint": "common"})
        score = float(scores[i]) if scores is not None else float(np.clip(rng.uniform(0.2, 1.0), 0, 1))
        resp = responses[i % len(responses)] if responses else task.gt.to_text("stepped")
        rec = fake_record(task, agent=agent, model=model, score=score, response=resp, seed=seed, rng=rng)
        if with_frames:
            frames = {}
            for name, s in (("start", 1), ("goal", 2), ("final", 3)):
                frames[name] = store.write_frame(rec["key"], name, checker_image(24, 32, seed=i * 10 + s))
            rec["frames"] = frames
        store.append(rec)
    store.close()
    return store
