"""Whether the runs of a report compare like for like: the same tasks, run in the same mode, drawn at the same render
quality.

A closed-loop run on 50 tasks beside a one-shot run on the default suite gives two columns whose means measure
different things. :func:`compare_runs` says what differs — the task set (its source: suite or task file with its
hash; the number of tasks), the mode and the render quality (``"default"`` or ``"high"``: the images an agent saw;
a run's configuration without one is ``"default"``) — and which tasks every run has: a task is shared when every
run has an episode of that task id and the runs agree on what the task is (kind, start and goal poses, ground truth:
each field that both records carry, numbers to :data:`TOLERANCE`, so runs made on other machines or by a version
whose records lacked a field still share their tasks). :func:`on_tasks` restricts runs to such a set of tasks, for a
like-for-like table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import numpy as np

from .load import RunData

__all__ = ["RunsDifferWarning", "Comparison", "RunSetup", "compare_runs", "on_tasks", "same_task", "TOLERANCE",
           "TASK_FIELDS", "task_source"]


class RunsDifferWarning(UserWarning):
    """The runs of a report were run on different tasks, in different modes or at different render qualities."""


@dataclass(frozen=True)
class RunSetup:
    """What one run was run on: ``tasks`` (the suite or task file, with its hash when known), its ``modes``, its
    task ids (plain episodes) and its ``render_quality``."""

    label: str
    tasks: str
    modes: tuple[str, ...]
    task_ids: frozenset
    render_quality: str = "default"

    def describe(self, quality: bool = False) -> str:
        """One clause: label, tasks, modes, number of tasks (and with ``quality`` the render quality)."""
        n = len(self.task_ids)
        q = f", render quality {self.render_quality}" if quality else ""
        return f"{self.label}: {self.tasks}, {', '.join(self.modes) or 'mode unknown'}, {n} task{'s' * (n != 1)}{q}"


@dataclass(frozen=True)
class Comparison:
    """The runs' setups, what differs between them (``"tasks"``, ``"mode"``, ``"render quality"``) and the task ids
    all of them share."""

    setups: tuple[RunSetup, ...]
    differs: tuple[str, ...]
    shared: frozenset

    @property
    def like_for_like(self) -> bool:
        return not self.differs

    def note(self) -> str:
        """One paragraph naming the runs and what differs ("" when they compare like for like)."""
        if self.like_for_like:
            return ""
        names = {"tasks": "their tasks", "mode": "their mode", "render quality": "their render quality"}
        what = " and ".join(names[d] for d in self.differs)
        quality = "render quality" in self.differs
        text = f"The runs differ in {what}: " + "; ".join(s.describe(quality) for s in self.setups) + "."
        if "tasks" not in self.differs:
            return text
        if not self.shared:
            return text + " They share no task: no table compares them like for like."
        n = len(self.shared)
        return text + f" They share {n} task{'s' * (n != 1)}: the Overall section also compares them on those only."


#: Two records describe the same task when their numbers (pose entries, step sizes, continuous motions) agree to
#: this (metres, radians, matrix entries); counts, caps, gripper states and the kind must be equal.
TOLERANCE = 1e-6


def _numbers(v, out: list) -> str:
    """``v``'s shape as text with every number taken out into ``out`` (booleans and None stay in the text)."""
    if isinstance(v, bool) or v is None:
        return json.dumps(v)
    if isinstance(v, (int, float)):
        out.append(float(v))
        return "#"
    if isinstance(v, dict):
        return "{" + ",".join(f"{json.dumps(str(k))}:{_numbers(v[k], out)}" for k in sorted(v, key=str)) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_numbers(x, out) for x in v) + "]"
    return json.dumps(str(v))


#: The record fields that say what an episode's task is.
TASK_FIELDS = ("kind", "start_pose", "goal_pose", "gt")


def _content(r: dict) -> dict | None:
    """What the record says its task is: per field of :data:`TASK_FIELDS` it carries, its shape as text and its
    numbers; None when it says nothing (a failure record without poses)."""
    out = {}
    for k in TASK_FIELDS:
        if r.get(k) is not None:
            nums: list = []
            shape = _numbers(r[k], nums)
            out[k] = (shape, np.asarray(nums, dtype=np.float64))
    return out if any(k != "kind" for k in out) else None


def same_task(a: dict | None, b: dict | None) -> bool:
    """Whether two records' task contents (:func:`_content`) name the same task. Each field both records carry is
    compared (a field one record lacks — a run written before records carried ``gt`` — says nothing): the same
    shape, numbers equal to :data:`TOLERANCE`, so poses computed on another machine, whose last bits or the sign of
    a 1e-17 residue differ, still agree. A record that says nothing (None) agrees with anything."""
    if a is None or b is None:
        return True
    for k in a.keys() & b.keys():
        (sa, xa), (sb, xb) = a[k], b[k]
        if sa != sb or xa.shape != xb.shape:
            return False
        if not np.all((np.isnan(xa) & np.isnan(xb)) | (np.abs(xa - xb) <= TOLERANCE)):
            return False
    return True


def _run_config(run: RunData) -> dict:
    cfg = run.config.get("config", run.config) if isinstance(run.config, dict) else {}
    return cfg if isinstance(cfg, dict) else {}


def _render_quality(run: RunData) -> str:
    """The run's render quality: its configuration's, ``"default"`` when it names none."""
    return str(_run_config(run).get("render_quality") or "default")


def task_source(run: RunData) -> str:
    """What the run's tasks came from, as one short text: a frozen suite's name, else the task source of its
    configuration (``suite:default:seed=0``, a task file), with the suite's or task file's SHA-256 (12 digits)."""
    cfg = _run_config(run)
    recs = run.records or run.all_records
    prov = (recs[0].get("provenance") if recs else None) or {}
    prov = prov if isinstance(prov, dict) else {}
    suite = cfg.get("suite") or prov.get("suite")
    if suite:
        sha = cfg.get("suite_sha256") or prov.get("suite_sha256")
    else:
        suite = cfg.get("tasks") or prov.get("task_file") or "tasks of unknown source"
        sha = cfg.get("tasks_sha256") or prov.get("task_file_sha256")
    return f"{suite} (sha256 {str(sha)[:12]})" if sha else str(suite)


def compare_runs(runs: list[RunData]) -> Comparison:
    """The setups of ``runs`` (their plain episodes), what differs between them and the task ids they share."""
    setups, contents = [], []
    for run in runs:
        content: dict[str, dict] = {}
        for r in run.records:
            c = _content(r)
            if c is not None:
                content.setdefault(str(r.get("task_id")), c)
        ids = frozenset(str(r.get("task_id")) for r in run.records)
        modes = tuple(sorted({str(r.get("mode")) for r in run.records if r.get("mode")}))
        setups.append(RunSetup(run.label, task_source(run), modes, ids, _render_quality(run)))
        contents.append(content)
    common = frozenset.intersection(*(s.task_ids for s in setups)) if setups else frozenset()
    # a task id is shared only when the runs that say what the task is agree (to TOLERANCE: not text equality of
    # rounded numbers, which a -0.0 against 0.0 or a last bit across a rounding boundary broke)
    shared = frozenset(t for t in common if _agree([c[t] for c in contents if t in c]))
    differs = []
    if any(s.task_ids != setups[0].task_ids for s in setups) or shared != common:
        differs.append("tasks")
    if any(s.modes != setups[0].modes for s in setups):
        differs.append("mode")
    if any(s.render_quality != setups[0].render_quality for s in setups):
        differs.append("render quality")
    return Comparison(tuple(setups), tuple(differs), shared)


def _agree(contents: list) -> bool:
    """Whether the contents agree pairwise (:func:`same_task`; pairwise, since a record lacking a field agrees with
    two that differ in it)."""
    return all(same_task(a, b) for i, a in enumerate(contents) for b in contents[i + 1:])


def on_tasks(runs: list[RunData], task_ids) -> list[RunData]:
    """The runs with only the plain episodes of ``task_ids``."""
    keep = set(task_ids)
    return [replace(run, records=[r for r in run.records if str(r.get("task_id")) in keep]) for run in runs]
