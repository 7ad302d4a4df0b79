"""The fields of a task file that scoring reads, decoded and checked by a compiled decoder (msgspec).

``spatialact score`` reads of each task only ``id``, ``kind``, ``source``, ``tags``, ``start_pose``, ``goal_pose``,
``n_steps``, ``sizes``, ``gt`` (its ``sizes``, ``cap`` and each step's ``counts``, ``motion`` and ``gripper``, and
the ``actions`` and ``step_nums`` that name the counts) and ``success`` (``position``, ``rotation``).
:func:`decode_task_fields` decodes every line of a task file straight into typed structs holding only those, with
the types and bounds of the task schema (``schemas/task.schema.json``, docs/tasks.md) checked by the decoder itself,
then the checks the schema cannot state on them, vectorised over the file: poses with last row ``[0, 0, 0, 1]`` and
an orthonormal rotation (``tasks.validation.pose_problems``), ``n_steps`` equal to the number of ground-truth steps,
the ground truth's sizes equal to the task's, no count above the sequence's cap, no continuous motion above cap ×
unit on an axis, exactly one of ``counts`` and ``motion`` per step, named actions agreeing with the counts (and
present in every counts step of a version 2 line), unique ids, at least one task. The other fields (the in-context
example, images, scene, instruction, meta) are skipped unread: most of a task file's bytes, left to ``load_tasks``,
which validates everything.

Every line is first measured against the nesting limit of every JSON reader (``jsonline.MAX_JSON_DEPTH``; msgspec
would recurse once a level): a line nested deeper is not decoded here.

It never refuses on its own: it answers None when anything is not as it accepts, and the caller then loads the
file with the full validator (``spatialact.tasks.load_task_file``, the reference, which says what is wrong in one
line naming the file, line, task and field, or accepts what this decoder was stricter about, such as ``2.0`` for
an integer). So a file is refused by ``score`` exactly when the full validation refuses it for one of these
fields, with the same message; a problem only in a field scoring does not read is not looked for.

Poses are C2W (4, 4) float64 in metres (world +Z up, camera OpenCV axes); sizes in metres and radians per unit
step; motions ``(tx, ty, tz, tilt, pan, roll)`` in metres and radians (docs/conventions.md).
"""

from __future__ import annotations

import math
from typing import Annotated, Literal, Union

import msgspec
import numpy as np
from msgspec import UNSET, Meta, Struct, UnsetType, field

__all__ = ["TaskFields", "DecodedTasks", "decode_task_fields", "FIELDS_VERSION"]

#: Bumped whenever a rule here changes (cached scoring tables of other rules are rebuilt).
FIELDS_VERSION = 1

_NO_CONTROL = r"\A[^\x00-\x1f\x7f]*\Z"  # \Z, not $: "$" also matches before a final newline
Coordinate = Annotated[float, Meta(ge=-1e6, le=1e6)]
Pose = Annotated[list[Annotated[list[Coordinate], Meta(min_length=4, max_length=4)]], Meta(min_length=4, max_length=4)]
TaskId = Annotated[str, Meta(min_length=1, max_length=200, pattern=r"\A[A-Za-z0-9][A-Za-z0-9_.:+-]*\Z")]
Label = Annotated[str, Meta(min_length=1, max_length=200, pattern=_NO_CONTROL)]
TagKey = Annotated[str, Meta(min_length=1, max_length=64, pattern=r"\A[A-Za-z0-9_.:+-]*\Z")]
TagValue = Union[Annotated[str, Meta(max_length=200, pattern=_NO_CONTROL)], Annotated[int, Meta(ge=-10**15, le=10**15)],
                 Annotated[float, Meta(ge=-1e15, le=1e15)], bool, None]
Count = Annotated[int, Meta(ge=0, le=100)]
ActionName = Literal["Truck Right", "Truck Left", "Pedestal Down", "Pedestal Up", "Dolly In", "Dolly Out", "Tilt Up",
                     "Tilt Down", "Pan Right", "Pan Left", "Roll CCW", "Roll CW", "Stay"]


class Sizes(Struct, frozen=True):
    """Unit step sizes: ``translation`` metres in (0, 10], ``rotation`` radians in (0, π]."""

    translation: Annotated[float, Meta(gt=0, le=10)]
    rotation: Annotated[float, Meta(gt=0, le=math.pi)]


class StepFields(Struct, frozen=True):
    """One ground-truth step: 12 ``counts`` (0..100) or a ``motion`` (6 coordinates); ``gripper`` None, 0 or 1;
    the counts in words (``actions``, ``step_nums``), which must agree with them."""

    counts_: Union[Annotated[list[Count], Meta(min_length=12, max_length=12)], UnsetType] = field(default=UNSET,
                                                                                                  name="counts")
    motion_: Union[Annotated[list[Coordinate], Meta(min_length=6, max_length=6)], UnsetType] = field(default=UNSET,
                                                                                                    name="motion")
    gripper: Union[Literal[0, 1], None] = None
    actions: Union[Annotated[list[ActionName], Meta(min_length=1, max_length=13)], UnsetType] = UNSET
    step_nums: Union[Annotated[list[Annotated[int, Meta(ge=1, le=100)]], Meta(min_length=1, max_length=13)],
                     UnsetType] = UNSET

    @property
    def counts(self):
        """The counts as a tuple, or None (a continuous step)."""
        return None if self.counts_ is UNSET else tuple(self.counts_)

    @property
    def motion(self):
        """The motion (metres, radians), or None (a counts step)."""
        return None if self.motion_ is UNSET else self.motion_


class SequenceFields(Struct, frozen=True):
    """The ground truth: its sizes, its cap (1..100, default 10), at most 1000 steps."""

    sizes: Sizes
    steps: Annotated[list[StepFields], Meta(max_length=1000)]
    cap: Annotated[int, Meta(ge=1, le=100)] = 10


class Success(Struct, frozen=True):
    """Success thresholds: ``position`` metres in [0, 1000], ``rotation`` radians in [0, π]."""

    position: Annotated[float, Meta(ge=0, le=1000)]
    rotation: Annotated[float, Meta(ge=0, le=math.pi)]

    def get(self, key: str, default=None):
        """As the task's ``success`` dict reads."""
        return getattr(self, key, default)


class TaskFields(Struct, frozen=True):
    """What scoring reads of one task line (the rest of the line is skipped unread)."""

    id: TaskId
    kind: Literal["nav", "manip", "hand"]
    source: Label
    start_pose: Pose
    goal_pose: Pose
    n_steps: Annotated[int, Meta(ge=0, le=1000)]
    sizes: Sizes
    gt: SequenceFields
    success: Success
    schema_version: Literal[1, 2] = 1
    tags: Annotated[dict[TagKey, TagValue], Meta(max_length=64)] = field(default_factory=dict)


_DECODER = msgspec.json.Decoder(TaskFields)


class DecodedTasks(list):
    """The :class:`TaskFields` of a task file in file order, with ``poses``: (T, 2, 4, 4) float64, each task's
    ``start_pose`` and ``goal_pose`` (C2W, metres)."""

    poses: np.ndarray


def decode_task_fields(data: bytes) -> DecodedTasks | None:
    """The tasks of a task file's bytes (JSON Lines), as :class:`TaskFields` in file order, or None when any line
    is not what this decoder accepts (then the full validator is the judge: see the module docstring), a line
    nested deeper than ``jsonline.MAX_JSON_DEPTH`` included (the validator names it)."""
    if not _shallow(data):
        return None
    try:
        tasks = DecodedTasks(_DECODER.decode_lines(data))
    except (msgspec.DecodeError, ValueError, RecursionError):  # malformed JSON, a type or a bound; a BOM, a lone
        return None  # surrogate
    if not tasks:
        return None
    tasks.poses = np.array([(t.start_pose, t.goal_pose) for t in tasks], dtype=np.float64).reshape(-1, 2, 4, 4)
    if _problems(tasks):
        return None
    return tasks


def _shallow(data: bytes) -> bool:
    """No line of ``data`` nests deeper than ``jsonline.MAX_JSON_DEPTH``: the whole file's brackets counted in C
    when they are few, else line by line (a line with few brackets is not measured)."""
    from ..jsonline import MAX_JSON_DEPTH, TooDeep, check_depth

    if data.count(b"[") + data.count(b"{") <= MAX_JSON_DEPTH:
        return True
    try:
        for line in data.split(b"\n"):
            check_depth(line)
    except TooDeep:
        return False
    return True


def _problems(tasks: DecodedTasks) -> bool:
    """True when a check the schema cannot state fails (vectorised over the file where it costs)."""
    from ..tasks.task import names_agree
    from ..tasks.validation import pose_problems

    if len({t.id for t in tasks}) != len(tasks):
        return True
    if pose_problems(tasks.poses.reshape(-1, 4, 4)):
        return True
    t_max: list = []
    r_max: list = []
    motions: list = []
    for t in tasks:
        gt, s = t.gt, t.sizes
        if t.n_steps != len(gt.steps) or gt.sizes != s:
            return True
        cap, named = gt.cap, t.schema_version == 2  # version 2 names the actions of every counts step
        for st in gt.steps:
            c, a = st.counts_, st.actions
            if (a is UNSET) != (st.step_nums is UNSET):
                return True
            if c is UNSET:
                m = st.motion_
                if m is UNSET or a is not UNSET:
                    return True
                motions.append(m)
                t_max.append(cap * s.translation * (1 + 1e-9))
                r_max.append(cap * s.rotation * (1 + 1e-9))
            elif st.motion_ is not UNSET or max(c) > cap:
                return True
            elif a is UNSET:
                if named:
                    return True
            elif len(set(a)) != len(a) or not names_agree(a, st.step_nums, c):
                return True
    if motions:
        m = np.abs(np.array(motions, dtype=np.float64))
        if (m[:, :3].max(axis=1) > t_max).any() or (m[:, 3:].max(axis=1) > r_max).any():
            return True
    return False
