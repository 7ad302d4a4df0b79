"""Whether the runs of a report compare like for like: the same tasks, run in the same mode, drawn at the same render
quality.

A closed-loop run on 50 tasks beside a one-shot run on the default suite gives two columns whose means measure
different things. :func:`compare_runs` says what differs — the task set (its source: suite or task file with its
hash; the number of tasks), the mode and the render quality (``"default"`` or ``"high"``: the images an agent saw;
a run's configuration without one is ``"default"``) — and which tasks every run has: a task is shared when every
run has an episode of that task id and the runs agree on what the task is (kind, start and goal poses, ground truth, where the
records carry them). :func:`on_tasks` restricts runs to such a set of tasks, for a like-for-like table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from .load import RunData

__all__ = ["RunsDifferWarning", "Comparison", "RunSetup", "compare_runs", "on_tasks"]


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


def _rounded(v):
    if isinstance(v, float):
        return round(v, 6)
    if isinstance(v, list):
        return [_rounded(x) for x in v]
    if isinstance(v, dict):
        return {k: _rounded(x) for k, x in v.items()}
    return v


def _content(r: dict) -> str | None:
    """What the record says its task is (kind, start and goal poses, ground truth), as text; None when it does
    not say (a failure record without poses)."""
    if all(r.get(k) is None for k in ("start_pose", "goal_pose", "gt")):
        return None
    return json.dumps(_rounded([r.get(k) for k in ("kind", "start_pose", "goal_pose", "gt")]), sort_keys=True,
                      default=str)


def _run_config(run: RunData) -> dict:
    cfg = run.config.get("config", run.config) if isinstance(run.config, dict) else {}
    return cfg if isinstance(cfg, dict) else {}


def _render_quality(run: RunData) -> str:
    """The run's render quality: its configuration's, ``"default"`` when it names none."""
    return str(_run_config(run).get("render_quality") or "default")


def _task_source(run: RunData) -> str:
    cfg = _run_config(run)
    recs = run.records or run.all_records
    prov = (recs[0].get("provenance") if recs else None) or {}
    prov = prov if isinstance(prov, dict) else {}
    source = cfg.get("tasks") or prov.get("task_file") or "tasks of unknown source"
    sha = cfg.get("tasks_sha256") or prov.get("task_file_sha256")
    return f"{source} (sha256 {str(sha)[:12]})" if sha else str(source)


def compare_runs(runs: list[RunData]) -> Comparison:
    """The setups of ``runs`` (their plain episodes), what differs between them and the task ids they share."""
    setups, contents = [], []
    for run in runs:
        content: dict[str, str] = {}
        for r in run.records:
            c = _content(r)
            if c is not None:
                content.setdefault(str(r.get("task_id")), c)
        ids = frozenset(str(r.get("task_id")) for r in run.records)
        modes = tuple(sorted({str(r.get("mode")) for r in run.records if r.get("mode")}))
        setups.append(RunSetup(run.label, _task_source(run), modes, ids, _render_quality(run)))
        contents.append(content)
    common = frozenset.intersection(*(s.task_ids for s in setups)) if setups else frozenset()
    # a task id is shared only when the runs that say what the task is agree
    shared = frozenset(t for t in common if len({c[t] for c in contents if t in c}) <= 1)
    differs = []
    if any(s.task_ids != setups[0].task_ids for s in setups) or shared != common:
        differs.append("tasks")
    if any(s.modes != setups[0].modes for s in setups):
        differs.append("mode")
    if any(s.render_quality != setups[0].render_quality for s in setups):
        differs.append("render quality")
    return Comparison(tuple(setups), tuple(differs), shared)


def on_tasks(runs: list[RunData], task_ids) -> list[RunData]:
    """The runs with only the plain episodes of ``task_ids``."""
    keep = set(task_ids)
    return [replace(run, records=[r for r in run.records if str(r.get("task_id")) in keep]) for run in runs]
