"""The task (docs/tasks.md): what a model is asked, and the ground truth it is scored against."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .. import geometry
from ..action_space import MOTION_PRIMITIVES, ActionSequence, Primitive, StepSizes
from ..vocab import ANSWER_FORMATS, KINDS
from .scene import Scene, parse_scene

__all__ = ["Task", "SCHEMA_VERSION", "READ_SCHEMA_VERSIONS", "default_success", "sequence_dict", "counts_from_names",
           "names_agree"]

SCHEMA_VERSION = 2  # written by save_tasks / Task.to_dict
READ_SCHEMA_VERSIONS = (1, 2)  # read by load_tasks (a line without schema_version is version 1)

_COLUMN = {p.value: k for k, p in enumerate(MOTION_PRIMITIVES)}  # "Truck Left" -> its column in Step.counts
_STAY = Primitive.STAY.value


def sequence_dict(seq: ActionSequence) -> dict:
    """``seq.to_dict()`` with every counts step also in words, as an answer would name it (schema version 2).

    A step reads ``{"actions": ["Truck Left", "Pedestal Up"], "step_nums": [1, 4], "counts": [...],
    "gripper": null}``: the names and step_nums for a person, the 12 counts for the machine (columns in
    ``MOTION_PRIMITIVES`` order); a step that does not move is ``["Stay"]`` with ``[1]``. Vector steps keep only
    their ``motion``. On load both forms must agree (:func:`counts_from_names`).
    """
    rec = seq.to_dict()
    for step, d in zip(seq.steps, rec["steps"]):
        if step.counts is None:
            continue
        acts = step.as_actions()
        named = {"actions": [p.value for p, _ in acts] or [_STAY], "step_nums": [int(n) for _, n in acts] or [1]}
        d_new = {**named, **d}
        d.clear()
        d.update(d_new)
    return rec


def names_agree(actions: list, step_nums: list, counts: list) -> bool:
    """True when a named step says exactly its counts (the fast test; :func:`counts_from_names` says why not).

    Names are unique within a step (the schema's ``uniqueItems``), so they agree when each names its own column's
    count and no other column is non-zero.
    """
    if len(actions) != len(step_nums):
        return False
    if actions == [_STAY]:
        return step_nums == [1] and not any(counts)
    col = _COLUMN
    for name, n in zip(actions, step_nums):
        k = col.get(name)
        if k is None or counts[k] != n:
            return False
    return len(counts) - counts.count(0) == len(actions)


def counts_from_names(actions: list, step_nums: list) -> list[int]:
    """The 12 counts a named step stands for (the inverse of :func:`sequence_dict`'s names).

    Raises ValueError for an unknown name, lists of different lengths, or "Stay" that is not alone with
    step_num 1. Names are the canonical ones (``Primitive`` values), exactly: a task file is not a model answer.
    """
    if len(actions) != len(step_nums):
        raise ValueError(f"{len(actions)} actions but {len(step_nums)} step_nums")
    counts = [0] * len(MOTION_PRIMITIVES)
    for name, n in zip(actions, step_nums):
        if name == _STAY:
            if len(actions) != 1 or n != 1:
                raise ValueError('"Stay" stands alone with step_num 1')
            continue
        col = _COLUMN.get(name)
        if col is None:
            raise ValueError(f"unknown action {name!r}")
        counts[col] += int(n)
    return counts


def default_success(kind: str) -> dict:
    """docs/scoring.md (closed-loop metrics): navigation 0.20 m and 10°; manipulation and hand 0.05 m and 10°."""
    pos = 0.20 if kind == "nav" else 0.05
    return {"position": pos, "rotation": math.radians(10.0), "object_state": None}


@dataclass(frozen=True)
class Task:
    """One task. Poses are (4, 4) float64 C2W matrices in metres (world +Z up, camera OpenCV axes).

    ``gt`` is the ground-truth ActionSequence from ``start_pose``; replayed, it lands on ``goal_pose`` within the
    quantisation bound of docs/trajectories.md. ``scene`` says how to rebuild the scene: given as the task file's
    object (``{"generator", "seed", ...}``, ``{"mesh": path}``, ``{"type": "replay" | "game", ...}``), it is read
    once, here, into its type (:func:`spatialact.tasks.scene.parse_scene`: ``RoomScene``, ``GameScene``, ...,
    each naming the world that runs it); None for trajectory-only tasks, which are scored one-shot.
    """

    id: str
    kind: str
    source: str
    start_pose: np.ndarray
    goal_pose: np.ndarray
    gt: ActionSequence
    sizes: StepSizes
    answer_format: str = "stepped"
    success: dict = field(default_factory=dict)
    scene: Scene | None = None
    start_image: str | None = None
    goal_image: str | None = None
    example: dict | None = None
    instruction: str | None = None
    tags: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"task {self.id!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.answer_format not in ANSWER_FORMATS:
            raise ValueError(f"task {self.id!r}: answer_format must be one of {ANSWER_FORMATS}")
        object.__setattr__(self, "start_pose", geometry.as_pose(self.start_pose).reshape(4, 4).copy())
        object.__setattr__(self, "goal_pose", geometry.as_pose(self.goal_pose).reshape(4, 4).copy())
        if self.scene is not None and not isinstance(self.scene, Scene):
            try:
                object.__setattr__(self, "scene", parse_scene(self.scene))
            except ValueError as e:
                raise ValueError(f"task {self.id!r}: {e}") from None
        if not self.success:
            object.__setattr__(self, "success", default_success(self.kind))

    @property
    def n_steps(self) -> int:
        return len(self.gt)

    @property
    def closed_loop(self) -> bool:
        """Tasks with a scene can run in a simulator; the others are scored one-shot."""
        return self.scene is not None

    def gt_poses(self) -> np.ndarray:
        """The ground-truth sequence replayed from the start pose: (n_steps + 1, 4, 4) C2W."""
        return self.gt.to_poses(self.start_pose)

    def with_(self, **changes: Any) -> "Task":
        return replace(self, **changes)

    # ----- the task line ----------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The JSON-able task line (schema version 2: the ground truth also in named actions)."""
        rec = {
            "schema_version": SCHEMA_VERSION,
            "id": self.id,
            "kind": self.kind,
            "source": self.source,
            "scene": None if self.scene is None else self.scene.to_dict(),
            "start_pose": self.start_pose.tolist(),
            "goal_pose": self.goal_pose.tolist(),
            "start_image": self.start_image,
            "goal_image": self.goal_image,
            "example": _example_dict(self.example),
            "answer_format": self.answer_format,
            "n_steps": self.n_steps,
            "sizes": self.sizes.to_dict(),
            "gt": sequence_dict(self.gt),
            "success": self.success,
            "instruction": self.instruction,
            "tags": dict(self.tags),
            "meta": dict(self.meta),
        }
        return rec

    @classmethod
    def from_dict(cls, rec: dict) -> "Task":
        """From a task line (schema version 1 or 2) already validated (``spatialact.tasks.validate_task_dict``)."""
        return cls(
            id=rec["id"], kind=rec["kind"], source=rec["source"],
            start_pose=np.asarray(rec["start_pose"], dtype=np.float64),
            goal_pose=np.asarray(rec["goal_pose"], dtype=np.float64),
            gt=ActionSequence.from_dict(rec["gt"]), sizes=StepSizes.from_dict(rec["sizes"]),
            answer_format=rec["answer_format"], success=dict(rec["success"]), scene=rec.get("scene"),
            start_image=rec.get("start_image"), goal_image=rec.get("goal_image"), example=rec.get("example"),
            instruction=rec.get("instruction"), tags=dict(rec.get("tags") or {}), meta=dict(rec.get("meta") or {}),
        )


def _example_dict(example: dict | None) -> dict | None:
    """The example with its sequence's counts steps named too (schema version 2)."""
    if not example or not isinstance(example.get("sequence"), dict):
        return example
    seq = ActionSequence.from_dict(example["sequence"])
    return {**example, "sequence": sequence_dict(seq)}
