"""The task record (SPEC §5.3): what a model is asked, and the ground truth it is scored against."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .. import geometry
from ..action_space import ActionSequence, StepSizes

__all__ = ["Task", "SCHEMA_VERSION", "default_success", "KINDS", "ANSWER_FORMATS"]

SCHEMA_VERSION = 1
KINDS = ("nav", "manip", "hand")
ANSWER_FORMATS = ("flat", "stepped", "vector")


def default_success(kind: str) -> dict:
    """SPEC §4.4: navigation 0.20 m and 10°; manipulation and hand 0.05 m and 10°."""
    pos = 0.20 if kind == "nav" else 0.05
    return {"position": pos, "rotation": math.radians(10.0), "object_state": None}


@dataclass(frozen=True)
class Task:
    """One task. Poses are (4, 4) float64 C2W matrices in metres (world +Z up, camera OpenCV axes).

    ``gt`` is the ground-truth ActionSequence from ``start_pose``; replayed, it lands on ``goal_pose`` within the
    quantisation bound of SPEC §5.2. ``scene`` says how to rebuild the scene (``{"generator", "seed", ...}`` or
    ``{"mesh": path}``), None for trajectory-only tasks, which are scored one-shot.
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
    scene: dict | None = None
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

    # ----- records ------------------------------------------------------------------------------------
    def to_record(self) -> dict:
        """The JSON-able task line (schema version 1)."""
        rec = {
            "schema_version": SCHEMA_VERSION,
            "id": self.id,
            "kind": self.kind,
            "source": self.source,
            "scene": self.scene,
            "start_pose": self.start_pose.tolist(),
            "goal_pose": self.goal_pose.tolist(),
            "start_image": self.start_image,
            "goal_image": self.goal_image,
            "example": self.example,
            "answer_format": self.answer_format,
            "n_steps": self.n_steps,
            "sizes": self.sizes.to_dict(),
            "gt": self.gt.to_dict(),
            "success": self.success,
            "instruction": self.instruction,
            "tags": dict(self.tags),
            "meta": dict(self.meta),
        }
        return rec

    @classmethod
    def from_record(cls, rec: dict) -> "Task":
        """From a task line already checked against the schema (see ``spatialact.tasks.io``)."""
        return cls(
            id=rec["id"], kind=rec["kind"], source=rec["source"],
            start_pose=np.asarray(rec["start_pose"], dtype=np.float64),
            goal_pose=np.asarray(rec["goal_pose"], dtype=np.float64),
            gt=ActionSequence.from_dict(rec["gt"]), sizes=StepSizes.from_dict(rec["sizes"]),
            answer_format=rec["answer_format"], success=dict(rec["success"]), scene=rec.get("scene"),
            start_image=rec.get("start_image"), goal_image=rec.get("goal_image"), example=rec.get("example"),
            instruction=rec.get("instruction"), tags=dict(rec.get("tags") or {}), meta=dict(rec.get("meta") or {}),
        )
