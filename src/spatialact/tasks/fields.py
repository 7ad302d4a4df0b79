"""The fields of a task file that scoring reads, decoded and checked by a compiled decoder (msgspec): the fast
path of the one task-file reader (:func:`spatialact.tasks.load_task_file` with a ``view``).

``spatialact score`` reads of each task only ``id``, ``kind``, ``source``, ``tags``, ``start_pose``, ``goal_pose``,
``n_steps``, ``sizes``, ``gt`` (its ``sizes``, ``cap`` and each step's ``counts``, ``motion`` and ``gripper``, and
the ``actions`` and ``step_nums`` that name the counts) and ``success`` (``position``, ``rotation``).
:func:`decode_task_fields` decodes every line of a task file straight into typed structs holding only those, with
the types and bounds of the task schema (``schemas/task.schema.json``, docs/tasks.md) checked by the decoder itself
(every bound, length, pattern and name read from the schema when this module is imported: one home), then the
checks the schema cannot state on them, vectorised over the file: poses with last row ``[0, 0, 0, 1]`` and an
orthonormal rotation (``tasks.validation.pose_problems``), ``n_steps`` equal to the number of ground-truth steps,
the ground truth's sizes equal to the task's, no count above the sequence's cap, no continuous motion above cap ×
unit on an axis, exactly one of ``counts`` and ``motion`` per step, named actions agreeing with the counts (and
present in every counts step of a version 2 line), unique ids, at least one task. The other fields (the in-context
example, images, scene, instruction, meta) are skipped unread: most of a task file's bytes, left to ``load_tasks``,
which validates everything.

Every line is first measured against the nesting limit of every JSON reader (``jsonline.MAX_JSON_DEPTH``; msgspec
would recurse once a level): a line nested deeper is not decoded here.

It never refuses on its own: it answers None when anything is not as it accepts, and the reader then loads the
file with the full validator (``spatialact.tasks.load_task_file``'s own path, the reference, which says what is
wrong in one line naming the file, line, task and field, or accepts what this decoder was stricter about, such as
``2.0`` for an integer). So a file is refused by ``score`` exactly when the full validation refuses it for one of these
fields, with the same message; a problem only in a field scoring does not read is not looked for.

Poses are C2W (4, 4) float64 in metres (world +Z up, camera OpenCV axes); sizes in metres and radians per unit
step; motions ``(tx, ty, tz, tilt, pan, roll)`` in metres and radians (docs/conventions.md).
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

import msgspec
import numpy as np
from msgspec import UNSET, Meta, Struct, UnsetType, field

from ..action_space import DEFAULT_CAP
from .validation import task_schema

__all__ = ["TaskFields", "DecodedTasks", "decode_task_fields", "FIELDS_VERSION"]

#: Bumped whenever a rule here changes (cached views of other rules are rebuilt: ``tasks.io.TaskView``).
FIELDS_VERSION = 1

# Every bound, length, pattern and name below is read from the task schema when this module is imported: the
# schema is their one home, and tests/tasks/test_fields.py probes each bound from both sides against jsonschema.
_SCHEMA = task_schema()
_META = {"minimum": "ge", "maximum": "le", "exclusiveMinimum": "gt", "exclusiveMaximum": "lt",
         "minLength": "min_length", "maxLength": "max_length", "minItems": "min_length", "maxItems": "max_length",
         "maxProperties": "max_length"}
_APPLIES = {"number": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"),
            "string": ("minLength", "maxLength"), "array": ("minItems", "maxItems"), "object": ("maxProperties",)}


def _node(*path: str) -> dict:
    """The task schema's node at ``path`` (keys from the root), each ``$ref`` (``#/$defs/<name>``) followed."""
    node = _SCHEMA
    for key in path:
        node = node[key]
        while "$ref" in node:
            node = _SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _typed(node: dict, kind: str, py: type = float):
    """``py`` constrained as the schema ``node`` constrains a value of JSON type ``kind`` (number, integer, string,
    array, object): its bounds, lengths or counts; a string also its ``pattern`` and its forbidden ``not``
    pattern, as one pattern that msgspec searches (two lookaheads at the start: linear in the text)."""
    kw = {_META[k]: (int(node[k]) if kind == "integer" else node[k])
          for k in _APPLIES["number" if kind == "integer" else kind] if k in node}
    if kind == "string" and ("pattern" in node or "not" in node):
        pattern = r"(?s)\A"
        if "pattern" in node:
            pattern += f"(?=.*?(?:{node['pattern']}))"
        if "not" in node:
            if set(node["not"]) != {"type", "pattern"}:
                raise TypeError(f"task schema: a 'not' other than a forbidden pattern in {node}")
            pattern += f"(?!.*?(?:{node['not']['pattern']}))"
        kw["pattern"] = pattern
    return Annotated[py, Meta(**kw)] if kw else py


def _names(node: dict):
    """``Literal`` of the node's ``enum`` (``None`` among them: optional)."""
    names = tuple(v for v in node["enum"] if v is not None)
    return Union[Literal[names], None] if None in node["enum"] else Literal[names]


Coordinate = _typed(_node("$defs", "coordinate"), "number")
Pose = _typed(_node("$defs", "pose"), "array", list[_typed(_node("$defs", "pose", "items"), "array", list[Coordinate])])
TaskId = _typed(_node("$defs", "id"), "string", str)
Label = _typed(_node("$defs", "label"), "string", str)
_TAGS = _node("properties", "tags")
_TAG = _node("properties", "tags", "additionalProperties")
TagValue = Union[_typed(_TAG, "string", str), _typed(_TAG, "integer", int), _typed(_TAG, "number", float), bool, None]
Tags = _typed(_TAGS, "object", dict[_typed(_node("properties", "tags", "propertyNames"), "string", str), TagValue])
_STEP = _node("$defs", "step", "properties")
Counts = _typed(_STEP["counts"], "array", list[_typed(_STEP["counts"]["items"], "integer", int)])
Motion = _typed(_STEP["motion"], "array", list[Coordinate])
Actions = _typed(_STEP["actions"], "array", list[_names(_node("$defs", "step", "properties", "actions", "items"))])
StepNums = _typed(_STEP["step_nums"], "array", list[_typed(_STEP["step_nums"]["items"], "integer", int)])
Gripper = _names(_node("$defs", "step", "properties", "gripper"))
_SIZES = _node("$defs", "sizes", "properties")
UnitTranslation, UnitRotation = _typed(_SIZES["translation"], "number"), _typed(_SIZES["rotation"], "number")
_SEQUENCE = _node("$defs", "sequence", "properties")
Cap = _typed(_SEQUENCE["cap"], "integer", int)
_SUCCESS = _node("properties", "success", "properties")
SuccessPosition, SuccessRotation = _typed(_SUCCESS["position"], "number"), _typed(_SUCCESS["rotation"], "number")
Kind, SchemaVersion = _names(_node("properties", "kind")), _names(_node("properties", "schema_version"))
NSteps = _typed(_node("properties", "n_steps"), "integer", int)


class Sizes(Struct, frozen=True):
    """Unit step sizes: ``translation`` metres, ``rotation`` radians (bounds: the schema's ``$defs.sizes``)."""

    translation: UnitTranslation
    rotation: UnitRotation


class StepFields(Struct, frozen=True):
    """One ground-truth step: ``counts`` or a ``motion`` (metres, radians); ``gripper`` None, 0 or 1; the counts in
    words (``actions``, ``step_nums``), which must agree with them (bounds: the schema's ``$defs.step``)."""

    counts_: Union[Counts, UnsetType] = field(default=UNSET, name="counts")
    motion_: Union[Motion, UnsetType] = field(default=UNSET, name="motion")
    gripper: Gripper = None
    actions: Union[Actions, UnsetType] = UNSET
    step_nums: Union[StepNums, UnsetType] = UNSET

    @property
    def counts(self):
        """The counts as a tuple, or None (a continuous step)."""
        return None if self.counts_ is UNSET else tuple(self.counts_)

    @property
    def motion(self):
        """The motion (metres, radians), or None (a counts step)."""
        return None if self.motion_ is UNSET else self.motion_


Steps = _typed(_SEQUENCE["steps"], "array", list[StepFields])


class SequenceFields(Struct, frozen=True):
    """The ground truth: its sizes, its cap (default ``action_space.DEFAULT_CAP``), its steps (bounds: the
    schema's ``$defs.sequence``)."""

    sizes: Sizes
    steps: Steps
    cap: Cap = DEFAULT_CAP


class Success(Struct, frozen=True):
    """Success thresholds: ``position`` metres, ``rotation`` radians (bounds: the schema's ``success``)."""

    position: SuccessPosition
    rotation: SuccessRotation

    def get(self, key: str, default=None):
        """As the task's ``success`` dict reads."""
        return getattr(self, key, default)


class TaskFields(Struct, frozen=True):
    """What scoring reads of one task line (the rest of the line is skipped unread)."""

    id: TaskId
    kind: Kind
    source: Label
    start_pose: Pose
    goal_pose: Pose
    n_steps: NSteps
    sizes: Sizes
    gt: SequenceFields
    success: Success
    schema_version: SchemaVersion = 1
    tags: Tags = field(default_factory=dict)


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
    from .task import names_agree
    from .validation import pose_problems

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
